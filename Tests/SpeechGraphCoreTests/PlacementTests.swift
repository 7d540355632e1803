import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

/// The placement pass (`GraphPlanner.place`): where each node runs, decided once from the descriptors' threading
/// domains and the graph's shape. One test a rule.
@Suite("GraphPlanner: placement", .tags(.fast))
struct PlacementTests {
    /// The fakes and four more: a live source on the audio server (as jack.input), a real-time safe processor (as a
    /// plugin that says so), a worker recognizer (as `recognizer`), a live source off the audio server (push.input).
    static func registry() throws -> NodeRegistry {
        var registry = Fake.registry()
        // Two live sources, alike but for their domain: on the audio server, and off it.
        for (name, threading) in [("fake.port", ThreadingDomain.realtime), ("fake.pushed", .any)] {
            try registry.register(
                NodeType(
                    NodeDescriptor(
                        typeName: name, summary: "", category: .input,
                        ports: [.audioOutput("out", format: .parameters(rate: "rate", channels: "channels"), doc: "")],
                        parameters: [
                            .quantity("rate", default: 16, .kilohertz, range: 8...192, doc: ""),
                            .integer("channels", default: 1, range: 1...8, doc: ""),
                        ], threading: threading, isLive: true),
                    make: { _ in EventCollector() }))
        }
        try registry.register(
            NodeType(
                NodeDescriptor(
                    typeName: "fake.rtgate", summary: "", category: .analysis,
                    ports: [.audioInput("in", .any, doc: ""), .audioOutput("out", format: .input("in"), doc: "")],
                    parameters: [], threading: .realtime),
                make: { _ in EventCollector() }))
        try registry.register(
            NodeType(
                NodeDescriptor(
                    typeName: "fake.heavy", summary: "", category: .recognizer,
                    ports: [
                        .audioInput("in", AudioRequirement(rate: .fixed(16000), channelCount: 1), doc: ""),
                        .eventOutput("results", emits: .only([.result]), doc: ""),
                    ],
                    parameters: [], threading: .worker),
                make: { _ in EventCollector() }))
        return registry
    }

    func places(_ text: String) throws -> [String: NodePlacement] {
        let plan = try negotiatedPlan(text, registry: try Self.registry())
        return Dictionary(uniqueKeysWithValues: plan.nodes.map { ($0.name, $0.placement) })
    }

    @Test("a real-time safe processor fed by an audio server's source alone runs in that source's callback")
    func processorAloneBehindThePort() throws {
        let p = try places(
            """
            node mic = fake.port
            node g   = fake.rtgate
            node asr = fake.heavy
            node out = fake.sink
            mic -> g -> asr -> out
            """)
        #expect(p["mic"] == .audioServer)
        #expect(p["g"] == .inCallback(of: "mic"))
    }

    @Test(
        "a processor whose source feeds another node too, or that is fed through a converter, runs on the graph thread")
    func processorNotAlone() throws {
        let shared = try places(
            """
            node mic = fake.port
            node g   = fake.rtgate
            node asr = fake.heavy
            node tap = fake.heavy
            node out = fake.sink
            mic -> g -> asr -> out
            mic -> tap -> out
            """)
        #expect(shared["g"] == .graphThread)
        let converted = try places(
            """
            node mic = fake.port { rate: 48 kHz, channels: 2 }
            node g   = fake.rtgate
            node asr = fake.heavy
            node out = fake.sink
            mic -> g -> asr -> out
            """)
        #expect(converted["g"] == .inCallback(of: "mic"), "the converters come after the processor")
        let late = try places(
            """
            node src = fake.source { path: "a.wav" }
            node g   = fake.rtgate
            node asr = fake.heavy
            node out = fake.sink
            src -> g -> asr -> out
            """)
        #expect(late["g"] == .graphThread, "no audio server's source feeds it")
    }

    @Test("one worker recognizer: on a worker thread with live input, on the graph thread offline")
    func oneWorker() throws {
        let live = try places(
            """
            node mic = fake.pushed
            node asr = fake.heavy
            node out = fake.sink
            mic -> asr -> out
            """)
        #expect(live["asr"] == .worker)
        #expect(live["mic"] == .graphThread)
        let offline = try places(
            """
            node src = fake.source { path: "a.wav" }
            node asr = fake.heavy
            node out = fake.sink
            src -> asr -> out
            """)
        #expect(offline["asr"] == .graphThread)
    }

    @Test("two worker recognizers: each on a worker thread, offline too")
    func twoWorkers() throws {
        let p = try places(
            """
            node src = fake.source { path: "a.wav" }
            node a   = fake.heavy
            node b   = fake.heavy
            node out = fake.sink
            src -> a -> out
            src -> b -> out
            """)
        #expect(p["a"] == .worker)
        #expect(p["b"] == .worker)
    }

    @Test("event-only nodes and converters run on the graph thread, live or not")
    func eventOnlyNodes() throws {
        let p = try places(
            """
            node mic = fake.port { rate: 48 kHz }
            node asr = fake.heavy
            node out = fake.sink
            mic -> asr -> out
            """)
        #expect(p["out"] == .graphThread)
        #expect(p["asr"] == .worker)
        let inserted = p.filter { $0.key.contains("~") }
        #expect(!inserted.isEmpty, "a resampler was inserted")
        #expect(inserted.values.allSatisfy { $0 == .graphThread })
    }

    @Test("check --plan prints each node's place")
    func renderedPlaces() throws {
        let registry = try Self.registry()
        let plan = try negotiatedPlan(
            """
            node mic = fake.port
            node g   = fake.rtgate
            node asr = fake.heavy
            node out = fake.sink
            mic -> g -> asr -> out
            """, registry: registry)
        let text = plan.render(registry: registry)
        #expect(text.contains("runs on: the JACK process callback of mic, over its audio"), "\(text)")
        #expect(text.contains("runs on: a worker thread of its own"), "\(text)")
        #expect(text.contains("runs on: the graph thread"), "\(text)")
        #expect(text.contains("asr on a worker thread"), "\(text)")
        #expect(text.contains("runs g (in mic's) in its process callback."), "\(text)")
    }
}
