import Foundation
import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphCore

/// Counts the frames and blocks of its audio input, and the thread each came on (tests only).
final class FrameCounter: GraphNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.frames", summary: "", category: .sink, ports: [.audioInput("in", .any, doc: "")],
            parameters: []),
        make: { _ in FrameCounter() })
    var frames = 0
    var starts: [Int64] = []
    var threads = Set<UInt>()
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        starts.append(block.startFrame)
        frames += block.frameCount
        threads.insert(UInt(pthread_self()))
    }
}

/// The inline executor (`InlineGraph`): a plan run to its end on the test's thread, deterministically.
@Suite(.tags(.fast)) struct InlineGraphTests {
    /// The fakes, a recognizer in the worker domain, push.input and the frame counter.
    static func registry(log: CallLog) throws -> NodeRegistry {
        var registry = Fake.registry(log: log)
        var worker = Fake.recognizerDescriptor
        worker.typeName = "fake.worker"
        worker.threading = .worker
        try registry.register(NodeType(worker, make: { FakeRecognizerNode($0, log: log) }))
        try registry.register(PushInputNode.type)
        try registry.register(FrameCounter.type)
        return registry
    }

    static let twoWorkers = """
        node mic = fake.source { path: "a.wav", duration: 0.5 s, block: 50 ms }
        node a   = fake.worker
        node b   = fake.worker
        node out = fake.sink
        mic -> a -> out
        mic -> b -> out
        """

    @Test("two recognizers the plan puts on workers run in place, in order: two runs give the same calls and events")
    func workersRunInPlace() throws {
        func run() throws -> (calls: [String], events: [String]) {
            let log = CallLog()
            let registry = try Self.registry(log: log)
            let plan = try negotiatedPlan(Self.twoWorkers, registry: registry)
            #expect(plan.nodes.filter { $0.placement == .worker }.map(\.name) == ["a", "b"])
            let graph = try InlineGraph(plan: plan, registry: registry)
            let report = try graph.run()
            #expect(report.leftUnconsumed.isEmpty && report.unrouted.isEmpty)
            let sink = try #require(graph.node(named: "out") as? FakeSinkNode)
            return (log.entries, sink.events.map(describe))
        }
        let first = try run()
        #expect(first == (try run()))
        // In place: each block goes through a, then b, before the next block is pulled.
        let processes = first.calls.filter { $0.hasSuffix(".process:float32 16000 Hz mono") }
        #expect(processes.count == 20)
        #expect(
            processes
                == Array(repeating: ["a", "b"], count: 10).flatMap { $0 }.map { "\($0).process:float32 16000 Hz mono" })
        // Ten volatile results from each, then each one's final.
        #expect(first.events.filter { $0.hasPrefix("result(volatile)") }.count == 20)
        #expect(first.events.filter { $0.hasPrefix("result(final)") }.count == 2)
    }

    @Test("pushed audio fed through a small ring arrives whole, in order, on this thread; nothing is left")
    func pushedAudioArrivesWhole() throws {
        let registry = try Self.registry(log: CallLog())
        let plan = try negotiatedPlan(
            """
            node mic = push.input { rate: 16 kHz, block: 256, buffer: 50 ms }
            node n   = test.frames
            mic -> n
            """, registry: registry)
        let graph = try InlineGraph(plan: plan, registry: registry)
        let samples = (0..<48_000).map { Float(sin(Double($0) / 20)) * 0.5 }
        try graph.feed("mic", samples, chunkFrames: 700)
        let report = try graph.run()
        #expect(report.leftUnconsumed.isEmpty, "\(report.leftUnconsumed)")
        let counter = try #require(graph.node(named: "n") as? FrameCounter)
        #expect(counter.frames == 48_000)
        #expect(counter.threads.count == 1)
        // Contiguous: each block starts where the one before ended.
        #expect(zip(counter.starts, counter.starts.dropFirst()).allSatisfy { $0 < $1 })
        #expect(throws: SpeechGraphError.self) { try graph.feed("nobody", [0]) }
    }

    @Test("events no node takes are in the report, with the node that emitted them")
    func unroutedEventsAreReported() throws {
        let log = CallLog()
        let registry = try Self.registry(log: log)
        let plan = try negotiatedPlan(
            """
            node mic = fake.source { path: "a.wav", duration: 0.2 s, block: 50 ms }
            node vad = fake.gate
            node asr = fake.recognizer
            node out = fake.sink
            mic -> vad -> asr -> out
            """, registry: registry)
        let report = try InlineGraph(plan: plan, registry: registry).run()
        #expect(report.unrouted.map(\.node) == ["vad", "vad"])
        #expect(report.unrouted.map { describe($0.event) } == ["speech-started@0.0", "speech-ended@0.2"])
    }

    @Test("a plan with a node in the audio server's thread is refused, with the reason")
    func audioServerNodesAreRefused() throws {
        let registry = try PlacementTests.registry()
        let plan = try negotiatedPlan(
            """
            node mic = fake.port
            node asr = fake.heavy
            node out = fake.sink
            mic -> asr -> out
            """, registry: registry)
        #expect {
            _ = try InlineGraph(plan: plan, registry: registry)
        } throws: { error in
            "\(error)".contains("node 'mic' runs in the audio server's real-time thread")
        }
    }
}
