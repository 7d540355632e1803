import Foundation
import Synchronization

@testable import SpeechGraphCore

// Fake node types for the core tests. They stand in for the real nodes (which live in targets with C
// libraries) and record every call the runner makes, so tests can check order and counts.
//
//   fake.source      input       out (audio)                       path* rate channels duration block loop
//   fake.gate        analysis    in (audio), control (events, optional) -> out (audio), events (events)
//                                                                  threshold hangover ratio mode fail-at
//   fake.recognizer  recognizer  in (audio, mono, at 'rate') -> results (events)
//                                                                  rate model mode words beam fail-in-finish
//   fake.sink        sink        in (events)                       path label timestamps stop-after
//   downmix, resample converters that behave like the real ones (formats and block sizes)
//
// Between them the parameters use every ParameterKind: quantity (frequency, time, level), number,
// integer, boolean, string, path and choice.

/// Every call made to a fake node, in order, as "node.call" or "node.call:detail". Shared by all
/// nodes of one graph; safe to read from the test while nothing runs.
final class CallLog: Sendable {
    private let storage = Mutex<[String]>([])

    func record(_ entry: String) { storage.withLock { $0.append(entry) } }

    var entries: [String] { storage.withLock { $0 } }

    /// The calls one node received, without the node prefix: ["prepare", "process", ...].
    func calls(of node: String) -> [String] {
        entries.compactMap { $0.hasPrefix(node + ".") ? String($0.dropFirst(node.count + 1)) : nil }
    }

    func count(_ entry: String) -> Int { entries.filter { $0 == entry }.count }

    func firstIndex(of entry: String) -> Int? { entries.firstIndex(of: entry) }
}

/// What a fake node throws when told to fail.
struct FakeFailure: Error, Equatable, CustomStringConvertible {
    var node: String
    var reason: String
    var description: String { "\(node): \(reason)" }
}

/// How a test reads an event: "result(volatile):partial 1", "speech-started@0.0", ...
func describe(_ event: GraphEvent) -> String {
    switch event {
    case .result(let t): return "result(\(t.isFinal ? "final" : "volatile")):\(t.text)"
    case .speechStarted(_, let time): return "speech-started@\(time)"
    case .speechEnded(_, let time): return "speech-ended@\(time)"
    case .speechPaused(_, let time): return "speech-paused@\(time)"
    case .speechResumed(_, let time): return "speech-resumed@\(time)"
    case .gap(_, let range, let reason): return "gap@\(range.start):\(reason)"
    case .availability(_, let available, _): return "availability:\(available)"
    case .level(_, let time, _, _): return "level@\(time)"
    case .noSpeech(_, let time): return "noSpeech@\(time)"
    case .warning(_, let time, _): return "warning@\(time ?? -1)"
    case .custom(let e): return "\(e.kind)@\(e.time ?? -1)"
    }
}

enum Fake {
    // MARK: Descriptors

    static let sourceDescriptor = NodeDescriptor(
        typeName: "fake.source",
        summary: "Emits 'duration' of a 440 Hz tone in blocks of 'block'.",
        category: .input,
        ports: [.audioOutput("out", format: .parameters(rate: "rate", channels: "channels"), doc: "The tone.")],
        parameters: [
            .path("path", required: true, doc: "Where the audio would come from (not read)."),
            .quantity("rate", default: 16, .kilohertz, range: 8...192, doc: "Sample rate."),
            .integer("channels", default: 1, range: 1...8, doc: "Channel count."),
            .quantity("duration", default: 0.2, .seconds, range: 0...3600, doc: "Length of the stream."),
            .quantity("block", default: 50, .milliseconds, range: 1...1000, doc: "Length of one block."),
            .boolean("loop", default: false, doc: "Unused; a boolean for the tests."),
        ])

    static let gateDescriptor = NodeDescriptor(
        typeName: "fake.gate",
        summary: "Passes audio through; emits speech-started on the first block and speech-ended on finish.",
        category: .analysis,
        ports: [
            .audioInput("in", .any, doc: "Any audio."),
            .eventInput("control", accepts: .only(EventKind.speechActivity), required: false, doc: "Optional events."),
            .audioOutput("out", format: .input("in"), doc: "The same audio."),
            .eventOutput("events", emits: .only([.speechStarted, .speechEnded]), doc: "Speech activity."),
        ],
        parameters: [
            .quantity("threshold", default: -40, .decibels, range: -120...0, doc: "Level."),
            .quantity("hangover", default: 300, .milliseconds, range: 0...3000, doc: "Time."),
            .number("ratio", default: 0.5, range: 0...1, doc: "A plain number."),
            .choice("mode", ["normal", "aggressive", "very-aggressive"], default: "normal", doc: "A choice."),
            .integer(
                "fail-at", default: 0, range: 0...1000, doc: "Throws while processing this block (from 1); 0: never."),
        ])

    static let recognizerDescriptor = NodeDescriptor(
        typeName: "fake.recognizer",
        summary: "Emits a volatile result per block and a final result when it finishes.",
        category: .recognizer,
        ports: [
            .audioInput("in", AudioRequirement(rate: .parameter("rate"), channelCount: 1), doc: "Mono at 'rate'."),
            .eventOutput("results", emits: .only([.result]), doc: "Results."),
        ],
        parameters: [
            ParameterDescriptor(
                "rate", kind: .quantity(.frequency), default: .number(16000), range: 8000...48000,
                displayUnit: .kilohertz, doc: "Model rate."),
            .string("model", default: "en-us", doc: "A string."),
            .choice("mode", ["streaming", "utterance"], default: "streaming", doc: "A choice."),
            .boolean("words", default: true, doc: "A boolean."),
            .number("beam", default: 0.5, range: 0...1, doc: "A plain number."),
            .boolean("fail-in-finish", default: false, doc: "Throws from finish, after emitting its final result."),
        ])

    static let sinkDescriptor = NodeDescriptor(
        typeName: "fake.sink",
        summary: "Records every event it gets.",
        category: .sink,
        ports: [.eventInput("in", accepts: .any, doc: "Any events.")],
        parameters: [
            .path("path", doc: "Optional path (not written)."),
            .string("label", default: nil, doc: "Optional string."),
            .boolean("timestamps", default: false, doc: "A boolean."),
            .integer(
                "stop-after", default: 0, range: 0...1_000_000,
                doc: "Requests a stop once it has this many events; 0: never."),
        ])

    static let downmixDescriptor = NodeDescriptor(
        typeName: "downmix", summary: "Mean of the channels.", category: .converter,
        ports: [
            .audioInput("in", .any, doc: "Any channels."),
            .audioOutput("out", format: .input("in", channels: 1), doc: "Mono."),
        ],
        parameters: [])

    static let resampleDescriptor = NodeDescriptor(
        typeName: "resample", summary: "Naive sample-rate conversion.", category: .converter,
        ports: [
            .audioInput("in", .any, doc: "Any rate."),
            .audioOutput("out", format: .input("in", rate: .parameter("rate")), doc: "At 'rate'."),
        ],
        parameters: [
            .quantity("rate", default: 16, .kilohertz, range: 1...384, doc: "Output rate."),
            .choice("quality", ["quick", "low", "medium", "high", "very-high"], default: "high", doc: "Quality."),
        ])

    // MARK: Registry

    /// A registry of the fake types. Nodes made from it record into `log`; a sink with `stop-after`
    /// requests `stop`. Without `converters`, `downmix` and `resample` are left out.
    static func registry(log: CallLog = CallLog(), stop: StopSignal? = nil, converters: Bool = true) -> NodeRegistry {
        var registry = NodeRegistry()
        var types = [
            NodeType(
                sourceDescriptor,
                maxOutputFrames: { config, _, _ in sourceBlockFrames(config) },
                make: { FakeSourceNode($0, log: log) }),
            NodeType(
                gateDescriptor,
                make: { FakeGateNode($0, log: log) }),
            NodeType(recognizerDescriptor, make: { FakeRecognizerNode($0, log: log) }),
            NodeType(sinkDescriptor, make: { FakeSinkNode($0, log: log, stop: stop) }),
        ]
        if converters {
            types.append(
                NodeType(
                    downmixDescriptor,
                    make: { FakeDownmixNode($0, log: log) }))
            types.append(
                NodeType(
                    resampleDescriptor,
                    maxOutputFrames: { config, inputs, maxIn in
                        guard let input = inputs["in"] else { return maxIn }
                        let ratio = config.number(of: "rate") / Double(input.sampleRate)
                        return Int((Double(maxIn) * ratio).rounded(.up)) + 16
                    },
                    make: { FakeResampleNode($0, log: log) }))
        }
        for type in types { try! registry.register(type) }
        return registry
    }

    static func sourceFormat(_ config: NodeConfig) -> AudioFormat {
        AudioFormat(sampleRate: Int(config.number(of: "rate").rounded()), channelCount: config.integer(of: "channels"))
    }

    static func sourceBlockFrames(_ config: NodeConfig) -> Int {
        max(1, Int((config.number(of: "block") * config.number(of: "rate")).rounded()))
    }
}

// MARK: Nodes

/// Emits `duration` of audio in blocks of `block`, then ends.
final class FakeSourceNode: SourceNode {
    let name: String
    let log: CallLog
    let format: AudioFormat
    let blockFrames: Int
    let totalFrames: Int
    private(set) var framesEmitted = 0

    init(_ context: NodeContext, log: CallLog) {
        name = context.config.name
        self.log = log
        format = context.outputFormats["out"] ?? Fake.sourceFormat(context.config)
        blockFrames = Fake.sourceBlockFrames(context.config)
        totalFrames = Int(((context.config.number("duration") ?? 0.2) * Double(format.sampleRate)).rounded())
    }

    func prepare() throws { log.record("\(name).prepare") }

    func pull(output: NodeOutput) throws -> Bool {
        guard framesEmitted < totalFrames else {
            log.record("\(name).pull:end")
            return false
        }
        log.record("\(name).pull")
        let frames = min(blockFrames, totalFrames - framesEmitted)
        var samples = [Float](repeating: 0, count: frames * format.channelCount)
        for i in 0..<frames {
            let v = Float(sin(2 * Double.pi * 440 * Double(framesEmitted + i) / Double(format.sampleRate)))
            for c in 0..<format.channelCount { samples[i * format.channelCount + c] = v }
        }
        let start = Int64(framesEmitted)
        framesEmitted += frames
        try samples.withUnsafeBufferPointer {
            try output.emit(AudioBlock(samples: $0, format: format, startFrame: start))
        }
        return true
    }

    var position: Double { Double(framesEmitted) / Double(format.sampleRate) }
    var progress: Double? { totalFrames == 0 ? 1 : Double(framesEmitted) / Double(totalFrames) }

    func finish(output: NodeOutput) throws { log.record("\(name).finish") }
    func close() { log.record("\(name).close") }
}

/// Passes audio through; speech-started on the first block, speech-ended when it finishes.
final class FakeGateNode: GraphNode {
    let name: String
    let log: CallLog
    let failAt: Int
    private var blocks = 0
    private var lastEnd = 0.0

    init(_ context: NodeContext, log: CallLog) {
        name = context.config.name
        self.log = log
        failAt = context.config.integer("fail-at") ?? 0
    }

    func prepare() throws { log.record("\(name).prepare") }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks += 1
        log.record("\(name).process")
        if blocks == failAt { throw FakeFailure(node: name, reason: "failed on block \(blocks)") }
        if blocks == 1 { try output.emit(.speechStarted(node: name, time: block.startTime), port: 1) }
        lastEnd = block.endTime
        try output.emit(block, port: 0)
    }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        log.record("\(name).handle:\(describe(event))")
    }

    func finish(output: NodeOutput) throws {
        log.record("\(name).finish")
        try output.emit(.speechEnded(node: name, time: lastEnd), port: 1)
    }

    func close() { log.record("\(name).close") }
}

/// A volatile result per block ("partial N"); its final result ("N blocks") only when it finishes.
final class FakeRecognizerNode: GraphNode {
    let name: String
    let log: CallLog
    let expected: AudioFormat?
    let failInFinish: Bool
    private var blocks = 0
    private var frames = 0
    private(set) var formatsSeen: [AudioFormat] = []

    init(_ context: NodeContext, log: CallLog) {
        name = context.config.name
        self.log = log
        expected = context.inputFormats["in"]
        failInFinish = context.config.bool("fail-in-finish") ?? false
    }

    func prepare() throws { log.record("\(name).prepare") }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks += 1
        frames += block.frameCount
        formatsSeen.append(block.format)
        log.record("\(name).process:\(block.format)")
        try output.emit(
            .result(
                Transcription(
                    utterance: 1, isFinal: false, range: TimeRange(start: 0, end: block.endTime),
                    text: "partial \(blocks)", node: name)))
    }

    func finish(output: NodeOutput) throws {
        log.record("\(name).finish")
        try output.emit(
            .result(
                Transcription(
                    utterance: 1, isFinal: true, range: TimeRange(start: 0, end: 0),
                    text: "\(blocks) blocks", node: name)))
        if failInFinish { throw FakeFailure(node: name, reason: "failed in finish") }
    }

    func close() { log.record("\(name).close") }
}

/// Keeps every event; requests a stop after `stop-after` of them.
final class FakeSinkNode: GraphNode {
    let name: String
    let log: CallLog
    let stop: StopSignal?
    let stopAfter: Int
    private(set) var events: [GraphEvent] = []

    init(_ context: NodeContext, log: CallLog, stop: StopSignal?) {
        name = context.config.name
        self.log = log
        self.stop = stop
        stopAfter = context.config.integer("stop-after") ?? 0
    }

    func prepare() throws { log.record("\(name).prepare") }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        events.append(event)
        log.record("\(name).handle:\(describe(event))")
        if stopAfter > 0, events.count == stopAfter { stop?.request() }
    }

    func finish(output: NodeOutput) throws { log.record("\(name).finish") }
    func close() { log.record("\(name).close") }
}

final class FakeDownmixNode: GraphNode {
    let name: String
    let log: CallLog
    let format: AudioFormat

    init(_ context: NodeContext, log: CallLog) {
        name = context.config.name
        self.log = log
        format = context.outputFormats["out"]!
    }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        log.record("\(name).process:\(block.format)")
        let channels = block.format.channelCount
        var mono = [Float](repeating: 0, count: block.frameCount)
        for i in mono.indices {
            var sum: Float = 0
            for c in 0..<channels { sum += block.samples[i * channels + c] }
            mono[i] = sum / Float(channels)
        }
        try mono.withUnsafeBufferPointer {
            try output.emit(AudioBlock(samples: $0, format: format, startFrame: block.startFrame))
        }
    }

    func finish(output: NodeOutput) throws { log.record("\(name).finish") }
    func close() { log.record("\(name).close") }
}

/// Nearest-sample rate conversion: good enough to check formats and block flow.
final class FakeResampleNode: GraphNode {
    let name: String
    let log: CallLog
    let format: AudioFormat
    private var framesOut: Int64 = 0

    init(_ context: NodeContext, log: CallLog) {
        name = context.config.name
        self.log = log
        format = context.outputFormats["out"]!
    }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        log.record("\(name).process:\(block.format)")
        let channels = block.format.channelCount
        let outFrames = block.frameCount * format.sampleRate / block.format.sampleRate
        var out = [Float](repeating: 0, count: outFrames * channels)
        for j in 0..<outFrames {
            let i = j * block.format.sampleRate / format.sampleRate
            for c in 0..<channels { out[j * channels + c] = block.samples[i * channels + c] }
        }
        let start = framesOut
        framesOut += Int64(outFrames)
        try out.withUnsafeBufferPointer {
            try output.emit(AudioBlock(samples: $0, format: format, startFrame: start))
        }
    }

    func finish(output: NodeOutput) throws { log.record("\(name).finish") }
    func close() { log.record("\(name).close") }
}

// MARK: Helpers

/// The environment every test parses with, so results never depend on the machine.
let testEnvironment: [String: String] = [
    "INPUT": "speech.wav",
    "RATE": "16 kHz",
    "MODE": "utterance",
    "LABEL": "screen",
    "EMPTY": "",
]

/// Parses and validates `text` with the fake registry.
func validatePlan(
    _ text: String, registry: NodeRegistry = Fake.registry(),
    overrides: [GraphPlanner.Override] = []
) throws -> GraphPlan {
    let spec = try GraphParser.parse(text, file: "test.graph", environment: testEnvironment)
    return try GraphPlanner(registry: registry).validate(spec, overrides: overrides)
}

/// Parses, validates and negotiates `text` with the fake registry.
func negotiatedPlan(
    _ text: String, registry: NodeRegistry = Fake.registry(),
    overrides: [GraphPlanner.Override] = []
) throws -> GraphPlan {
    let planner = GraphPlanner(registry: registry)
    return try planner.negotiate(validatePlan(text, registry: registry, overrides: overrides))
}

/// The diagnostics a graph produces, as `file:line:col: severity: message` lines; [] when it is valid.
func diagnostics(
    of text: String, file: String = "test.graph", registry: NodeRegistry = Fake.registry(),
    overrides: [GraphPlanner.Override] = []
) -> [String] {
    do {
        let spec = try GraphParser.parse(text, file: file, environment: testEnvironment)
        return try GraphPlanner(registry: registry).validate(spec, overrides: overrides).warnings.map(\.description)
    } catch let error as GraphError {
        return error.diagnostics.map(\.description)
    } catch {
        return ["unexpected error: \(error)"]
    }
}
