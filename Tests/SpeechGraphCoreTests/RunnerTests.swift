import Foundation
import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphCore

/// A negotiated plan of `text` and a runner for it; the nodes record into `log`.
private func makeRunner(
    _ text: String, log: CallLog, stop: StopSignal? = nil,
    options: RunningGraph.Options = .init()
) throws -> RunningGraph {
    let registry = Fake.registry(log: log, stop: stop)
    let plan = try negotiatedPlan(text, registry: registry)
    var options = options
    options.stop = stop ?? options.stop
    return try RunningGraph(plan: plan, registry: registry, options: options)
}

private func sinkEvents(_ runner: RunningGraph, _ name: String) throws -> [String] {
    let sink = try #require(runner.node(named: name) as? FakeSinkNode, "no sink '\(name)'")
    return sink.events.map(describe)
}

/// Every node of the plan was finished exactly once and closed exactly once.
private func expectFinishedAndClosedOnce(
    _ plan: GraphPlan, _ log: CallLog, sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    for node in plan.nodes {
        #expect(
            log.count("\(node.name).finish") == 1, "\(node.name) finished \(log.count("\(node.name).finish")) times",
            sourceLocation: sourceLocation)
        #expect(
            log.count("\(node.name).close") == 1, "\(node.name) closed \(log.count("\(node.name).close")) times",
            sourceLocation: sourceLocation)
    }
}

/// Every node finished after all its upstream nodes.
private func expectUpstreamFinishedFirst(
    _ plan: GraphPlan, _ log: CallLog, sourceLocation: Testing.SourceLocation = #_sourceLocation
) {
    for e in plan.edges {
        let from = plan.nodes[e.fromNode].name
        let to = plan.nodes[e.toNode].name
        let a = log.firstIndex(of: "\(from).finish")
        let b = log.firstIndex(of: "\(to).finish")
        #expect(a != nil && b != nil && a! < b!, "\(from) must finish before \(to)", sourceLocation: sourceLocation)
    }
}

/// 0.2 s at 16 kHz mono in 50 ms blocks: four blocks, no converters.
private let chain = """
    node mic = fake.source { path: "a.wav", duration: 0.2 s, block: 50 ms }
    node vad = fake.gate
    node asr = fake.recognizer
    node out = fake.sink
    mic -> vad -> asr -> out
    vad.events -> out
    """

@Suite("RunningGraph", .tags(.fast))
struct RunnerTests {
    @Test("events reach the sink in the order they were emitted, finish results included")
    func eventOrder() throws {
        let log = CallLog()
        let runner = try makeRunner(chain, log: log)
        try runner.run()
        #expect(
            try sinkEvents(runner, "out") == [
                "speech-started@0.0",
                "result(volatile):partial 1",
                "result(volatile):partial 2",
                "result(volatile):partial 3",
                "result(volatile):partial 4",
                "speech-ended@0.2",  // vad.finish
                "result(final):4 blocks",  // asr.finish, after vad's
            ])
        #expect(log.count("mic.pull") == 4)
        #expect(log.count("mic.pull:end") == 1)
        #expect(log.calls(of: "out").last == "close")
        #expect(log.calls(of: "out").suffix(2) == ["finish", "close"])
    }

    @Test("prepare runs for every node, in order, before any audio")
    func prepareFirst() throws {
        let log = CallLog()
        let runner = try makeRunner(chain, log: log)
        try runner.run()
        #expect(Array(log.entries.prefix(4)) == ["mic.prepare", "vad.prepare", "asr.prepare", "out.prepare"])
    }

    @Test("fan-out delivers every event and every block to every target")
    func fanOut() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 0.1 s }
            node a1 = fake.recognizer
            node a2 = fake.recognizer
            node o1 = fake.sink
            node o2 = fake.sink
            node o3 = fake.sink
            mic -> a1, a2
            a1 -> o1, o2
            a2 -> o3
            """, log: log)
        try runner.run()
        let expected = ["result(volatile):partial 1", "result(volatile):partial 2", "result(final):2 blocks"]
        #expect(try sinkEvents(runner, "o1") == expected)
        #expect(try sinkEvents(runner, "o2") == expected)
        #expect(try sinkEvents(runner, "o3") == expected)
        #expect(log.calls(of: "a1").filter { $0.hasPrefix("process") }.count == 2)
        #expect(log.calls(of: "a2").filter { $0.hasPrefix("process") }.count == 2)
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test("finish is called once per node, upstream before downstream, and close once after it")
    func finishOrder() throws {
        let log = CallLog()
        let runner = try makeRunner(chain, log: log)
        try runner.run()
        let finishes = log.entries.filter { $0.hasSuffix(".finish") }
        #expect(finishes == ["mic.finish", "vad.finish", "asr.finish", "out.finish"])
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
        // Every close after every finish.
        let lastFinish = try #require(log.entries.lastIndex { $0.hasSuffix(".finish") })
        let firstClose = try #require(log.entries.firstIndex { $0.hasSuffix(".close") })
        #expect(lastFinish < firstClose)
    }

    @Test("a sink fed by two sources finishes only after both have ended")
    func twoSources() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node short = fake.source { path: "a.wav", duration: 0.1 s }
            node long  = fake.source { path: "b.wav", duration: 0.3 s }
            node a1 = fake.recognizer
            node a2 = fake.recognizer
            node out = fake.sink
            short -> a1 -> out
            long -> a2 -> out
            """, log: log)
        try runner.run()
        let events = try sinkEvents(runner, "out")
        #expect(events.contains("result(final):2 blocks"))
        #expect(events.last == "result(final):6 blocks")
        #expect(events.filter { $0.hasPrefix("result(volatile)") }.count == 8)
        // a1 finished while `long` still ran; out waited for a2.
        let a1Finish = try #require(log.firstIndex(of: "a1.finish"))
        #expect(log.entries[a1Finish...].contains("long.pull"))
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test("a stop requested before running pulls nothing but still finishes every node")
    func stopBeforeRun() throws {
        let log = CallLog()
        let stop = StopSignal()
        let runner = try makeRunner(chain, log: log, options: .init(stop: stop))
        stop.request()
        try runner.run()
        #expect(log.count("mic.pull") == 0)
        #expect(try sinkEvents(runner, "out") == ["speech-ended@0.0", "result(final):0 blocks"])
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test("a stop requested while running stops pulling, and results are still flushed")
    func stopWhileRunning() throws {
        let log = CallLog()
        let stop = StopSignal()
        // 20 blocks; the sink asks to stop on its second event (partial 1, during the first pull).
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 1 s, block: 50 ms }
            node vad = fake.gate
            node asr = fake.recognizer
            node out = fake.sink { stop-after: 2 }
            mic -> vad -> asr -> out
            vad.events -> out
            """, log: log, stop: stop)
        try runner.run()
        #expect(stop.isRequested)
        #expect(log.count("mic.pull") == 1)
        #expect(
            try sinkEvents(runner, "out") == [
                "speech-started@0.0", "result(volatile):partial 1", "speech-ended@0.05", "result(final):1 blocks",
            ])
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test("a stop from another thread ends a realtime run early")
    func stopFromAnotherThread() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 30 s, block: 20 ms }
            node asr = fake.recognizer
            node out = fake.sink
            mic -> asr -> out
            """, log: log, options: .init(realtime: true))
        // A plain thread (not a task: the cooperative pool may be busy with other tests) stops the graph
        // once it is seen running, when its source has been pulled a few times.
        let stopper = Thread {
            let deadline = Date().addingTimeInterval(60)
            while log.count("mic.pull") < 3 && Date() < deadline { usleep(1_000) }
            runner.stop()
        }
        runner.start()
        stopper.start()
        try runner.wait()
        #expect(log.count("mic.pull") < 1500, "the stop was not seen")
        #expect(try sinkEvents(runner, "out").last?.hasPrefix("result(final):") == true)
        expectFinishedAndClosedOnce(runner.plan, log)
    }

    @Test("an error in process stops the run and propagates; every node is still finished and closed")
    func errorInProcess() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 1 s, block: 50 ms }
            node vad = fake.gate { fail-at: 2 }
            node asr = fake.recognizer
            node out = fake.sink
            mic -> vad -> asr -> out
            vad.events -> out
            """, log: log)
        #expect(throws: FakeFailure(node: "vad", reason: "failed on block 2")) { try runner.run() }
        #expect(log.count("mic.pull") == 2, "no pull after the failure")
        #expect(log.calls(of: "asr").filter { $0.hasPrefix("process") }.count == 1)
        // What was already produced is delivered.
        #expect(
            try sinkEvents(runner, "out") == [
                "speech-started@0.0", "result(volatile):partial 1", "speech-ended@0.05", "result(final):1 blocks",
            ])
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test(
        """
        an error in finish propagates; what the node emitted first and the nodes after it are still delivered \
        and finished
        """
    )
    func errorInFinish() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 0.1 s }
            node asr = fake.recognizer { fail-in-finish: true }
            node out = fake.sink
            mic -> asr -> out
            """, log: log)
        #expect(throws: FakeFailure(node: "asr", reason: "failed in finish")) { try runner.run() }
        #expect(try sinkEvents(runner, "out").last == "result(final):2 blocks")
        expectFinishedAndClosedOnce(runner.plan, log)
    }

    @Test("close is called exactly once per node, also when the runner goes away")
    func closeOnce() throws {
        let log = CallLog()
        var names: [String] = []
        do {
            let runner = try makeRunner(chain, log: log)
            names = runner.plan.nodes.map(\.name)
            try runner.run()
        }
        #expect(names.count == 4)
        for name in names { #expect(log.count("\(name).close") == 1, "\(name)") }
    }

    @Test("a runner that never runs still closes its nodes once, without finishing them")
    func closeWithoutRun() throws {
        let log = CallLog()
        do { _ = try makeRunner(chain, log: log) }
        for name in ["mic", "vad", "asr", "out"] {
            #expect(log.count("\(name).close") == 1)
            #expect(log.count("\(name).finish") == 0)
        }
    }

    @Test("inserted converters run: the recognizer only ever sees its own format")
    func convertersRun() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", rate: 48 kHz, channels: 2, duration: 0.2 s }
            node asr = fake.recognizer
            node out = fake.sink
            mic -> asr -> out
            """, log: log)
        try runner.run()
        let asr = try #require(runner.node(named: "asr") as? FakeRecognizerNode)
        #expect(asr.formatsSeen.count == 4)
        #expect(asr.formatsSeen.allSatisfy { $0 == AudioFormat(sampleRate: 16000, channelCount: 1) })
        #expect(
            log.calls(of: "asr.in~downmix").filter { $0.hasPrefix("process") }
                == Array(repeating: "process:float32 48000 Hz stereo", count: 4))
        #expect(try sinkEvents(runner, "out").last == "result(final):4 blocks")
        expectFinishedAndClosedOnce(runner.plan, log)
        expectUpstreamFinishedFirst(runner.plan, log)
    }

    @Test("progress rises to 1")
    func progress() throws {
        let log = CallLog()
        let seenBox = Mutex<[Double]>([])
        let runner = try makeRunner(
            chain, log: log, options: .init(progress: { p in seenBox.withLock { $0.append(p) } }))
        try runner.run()
        let seen = seenBox.withLock { $0 }
        #expect(!seen.isEmpty)
        #expect(seen == seen.sorted())
        #expect(seen.last == 1)
    }

    @Test("realtime: 0.2 s of audio takes about 0.2 s of wall time")
    func realtime() throws {
        let log = CallLog()
        let runner = try makeRunner(chain, log: log, options: .init(realtime: true))
        let start = ContinuousClock.now
        try runner.run()
        let elapsed = ContinuousClock.now - start
        #expect(elapsed >= .milliseconds(150), "took \(elapsed)")
        #expect(log.count("mic.pull") == 4)
    }

    @Test("without realtime, a 5 s source is read whole, block by block")
    func notRealtime() throws {
        let log = CallLog()
        let runner = try makeRunner(
            """
            node mic = fake.source { path: "a.wav", duration: 5 s }
            node asr = fake.recognizer
            node out = fake.sink
            mic -> asr -> out
            """, log: log)
        try runner.run()
        #expect(log.count("mic.pull") == 100)
    }
}

/// Emits a level event for every block and speechStarted for the first, on one event port.
private final class MixedEventsNode: GraphNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.mixed", summary: "", category: .analysis,
            ports: [
                .audioInput("in", doc: ""),
                .eventOutput("events", emits: .only([.speechStarted, .level]), doc: ""),
            ],
            parameters: []),
        make: { MixedEventsNode(name: $0.config.name) })
    let name: String
    var blocks = 0
    init(name: String) { self.name = name }
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks += 1
        if blocks == 1 { try output.emit(.speechStarted(node: name, time: block.startTime)) }
        try output.emit(.level(node: name, time: block.endTime, rms: [-20], peak: [-10]))
    }
}

@Suite("RunningGraph: event kinds", .tags(.fast))
struct EventKindDeliveryTests {
    @Test("an input gets only the kinds it accepts; an input that accepts any kind gets all")
    func inputsGetTheirKinds() throws {
        let log = CallLog()
        var registry = Fake.registry(log: log)
        try registry.register(MixedEventsNode.type)
        let plan = try negotiatedPlan(
            """
            node mic  = fake.source { path: "a.wav", duration: 0.2 s, block: 50 ms }
            node mix  = test.mixed
            node gate = fake.gate
            node out  = fake.sink
            mic -> mix
            mic -> gate.in
            mix.events -> gate.control, out
            gate.events -> out
            """, registry: registry)
        let graph = try RunningGraph(plan: plan, registry: registry)
        try graph.run()
        let gateGot = log.calls(of: "gate").filter { $0.hasPrefix("handle:") }
        #expect(gateGot == ["handle:speech-started@0.0"])
        let sink = try #require(graph.node(named: "out") as? FakeSinkNode)
        #expect(sink.events.filter { $0.kind == .level }.count == 4)
        #expect(sink.events.contains(.speechStarted(node: "mix", time: 0)))
    }
}
