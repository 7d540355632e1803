import Foundation
import SpeechGraphNodes
import SpeechGraphSphinx
import SpeechGraphTestSupport
import Testing

/// Runs graph text offline with every built-in node type plus `collect`, and hands back the collector.
enum Harness {
    static let registry: NodeRegistry = {
        var r = BuiltinNodes.registry()
        try! r.register(EventCollector.type)
        return r
    }()

    static func plan(_ text: String, environment: [String: String] = [:]) throws -> GraphPlan {
        let spec = try GraphParser.parse(text, file: "test.graph", environment: environment)
        return try GraphPlanner(registry: registry).plan(spec)
    }

    /// The decoder pool of the graphs `run` runs, as `transcribe` hands one to the graph of each file: a decoder
    /// loaded for one test is reset and handed to the next (the pool's tests, RecognizerTests, show that it then
    /// decodes as a newly loaded one), not loaded again (0.3 s of CPU each). At most 2 idle decoders per model and
    /// use, 6 in all.
    static let decoders = SphinxDecoderPool(maxIdle: 2, maxIdleInAll: 6)

    /// Runs the graph on the inline executor (this thread, deterministic: `InlineGraph`); returns the events the
    /// node named `collector` received. A run that leaves audio unconsumed is a failure of the test.
    static func run(
        _ text: String, collector: String = "out", environment: [String: String] = [:],
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws -> (events: [GraphEvent], runner: InlineGraph) {
        let graph = try InlineGraph(
            plan: plan(text, environment: environment), registry: registry,
            resources: GraphResources(providing: [decoders]))
        let report = try graph.run()
        #expect(report.leftUnconsumed.isEmpty, "\(report.leftUnconsumed)", sourceLocation: sourceLocation)
        let c = try #require(graph.node(named: collector) as? EventCollector, sourceLocation: sourceLocation)
        return (c.events, graph)
    }

    static func transcript(_ events: [GraphEvent]) -> String {
        events.compactMap { if case .result(let t) = $0, t.isFinal { t.text } else { nil } }.joined(separator: " ")
    }
}

/// Sentences flite's rms voice says and PocketSphinx's en-us model understands.
enum Sentences {
    static let call = "please call my mother at seven in the evening"
    static let weather = "the weather today is cold and windy with a chance of rain"

    /// A WAV in `dir`: 1 s of silence, `call`, `gap` seconds of silence, `weather`, `trailing` seconds of silence.
    static func both(in dir: TemporaryDirectory, gap: Double, trailing: Double) throws -> String {
        let a = dir.path("call.wav")
        let b = dir.path("weather.wav")
        let padded = dir.path("call-\(gap).wav")
        let both = dir.path("both-\(gap)-\(trailing).wav")
        if !FileManager.default.fileExists(atPath: a) { try TestSpeech.synthesize(call, to: a) }
        if !FileManager.default.fileExists(atPath: b) { try TestSpeech.synthesize(weather, to: b) }
        try TestSpeech.sox([a, padded, "pad", "1.0", "\(gap)"])
        try TestSpeech.sox([padded, b, both, "pad", "0", "\(trailing)"])
        return both
    }
}
