import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Synchronization
import Testing

/// RunningGraph with the real recognizer: no state shared between graphs, several graphs at once,
/// audio pushed from outside, events read as an AsyncSequence.
@Suite(.tags(.model)) struct RunningGraphTests {
    let dir = TemporaryDirectory()

    /// A recognizer graph over `path` (mode and extra parameters as given) into a collector.
    static func graph(_ path: String, source: String = "file.input", asr: String = "mode: streaming") -> String {
        let src = source == "file.input" ? #"file.input { path: "\#(path)" }"# : source
        return """
            node src = \(src)
            node asr = recognizer { \(asr) }
            node out = collect
            src -> asr -> out
            """
    }

    static func finals(_ graph: RunningGraph) throws -> [String] {
        let collector = try #require(graph.node(named: "out") as? EventCollector)
        return collector.finalResults.map(\.text)
    }

    static func run(_ text: String, resources: GraphResources = GraphResources()) throws -> [String] {
        let graph = try RunningGraph(plan: Harness.plan(text), registry: Harness.registry, resources: resources)
        try graph.run()
        return try finals(graph)
    }

    /// Three sentences, and a copy with its spectrum tilted and its level lowered: a decoder that kept what
    /// it learnt from one (its cepstral mean) would decode the other differently.
    func speech() throws -> (plain: String, tilted: String, other: String) {
        let a = dir.path("a.wav")
        let b = dir.path("b.wav")
        let plain = dir.path("plain.wav")
        try TestSpeech.synthesize(Sentences.call, to: a)
        try TestSpeech.synthesize(Sentences.weather, to: b)
        try TestSpeech.sox([a, b, plain])
        let tilted = dir.path("tilted.wav")
        let other = dir.path("other.wav")
        try TestSpeech.sox([plain, tilted, "highpass", "800", "gain", "-12"])
        try TestSpeech.synthesize("seven windy evenings with my mother", to: other)
        return (plain, tilted, other)
    }

    @Test("a graph after three others in the same process gets exactly the text of a fresh process")
    func freshGraphAfterOthers() throws {
        let (plain, tilted, other) = try speech()
        // Three graphs first: other files, other settings.
        _ = try Self.run(Self.graph(tilted))
        _ = try Self.run(Self.graph(other, asr: "mode: utterance"))
        _ = try Self.run(Self.graph(tilted, asr: "mode: streaming, words: false, results: fast"))
        let inProcess = try Self.run(Self.graph(plain, asr: "mode: streaming, words: false"))
        // The same graph, alone in a process of its own: speechgraph transcribe builds exactly this graph.
        let fresh = try Run.speechgraph(["transcribe", "--mode", "streaming", "--vad", "off", "--format", "tsv", plain])
        #expect(fresh.status == 0, "\(fresh.stderr)")
        let freshText = try #require(fresh.stdout.split(separator: "\t", maxSplits: 1).last)
        #expect(inProcess.joined(separator: " ") == freshText.trimmingCharacters(in: .newlines))
        #expect(
            wordErrorRate(reference: Sentences.call + " " + Sentences.weather, hypothesis: String(freshText)) <= 0.3)
    }

    @Test("a decoder pool handed to several graphs resets each decoder: the text is that of a fresh pool")
    func sharedPoolResets() throws {
        let (plain, tilted, _) = try speech()
        let pool = SphinxDecoderPool()
        for _ in 0..<2 { _ = try Self.run(Self.graph(tilted), resources: GraphResources(providing: [pool])) }
        let reused = try Self.run(Self.graph(plain), resources: GraphResources(providing: [pool]))
        let fresh = try Self.run(Self.graph(plain))
        #expect(reused == fresh)
        #expect(!fresh.joined().isEmpty)
    }

    @Test("two graphs with recognizers run at once in one process, each with the text it has alone")
    func concurrentGraphs() throws {
        let (plain, _, other) = try speech()
        let aloneA = try Self.run(Self.graph(plain))
        let aloneB = try Self.run(Self.graph(other))
        let a = try RunningGraph(plan: Harness.plan(Self.graph(plain)), registry: Harness.registry)
        let b = try RunningGraph(plan: Harness.plan(Self.graph(other)), registry: Harness.registry)
        a.start()
        b.start()
        try a.wait()
        try b.wait()
        #expect(try Self.finals(a) == aloneA)
        #expect(try Self.finals(b) == aloneB)
        #expect(!aloneA.joined().isEmpty && !aloneB.joined().isEmpty)
    }

    @Test("audio pushed from another thread in random chunk sizes gives the text file.input gives")
    func pushedAudio() async throws {
        let (plain, _, _) = try speech()
        let expected = try Self.run(Self.graph(plain))
        let file = try AudioFile(path: plain)
        let audio = try file.readAll()
        #expect(audio.count == Int(file.frameCount) && file.channelCount == 1)
        let graph = try RunningGraph(
            plan: Harness.plan(Self.graph(plain, source: "push.input { rate: \(file.sampleRate) Hz }")),
            registry: Harness.registry)
        let results = graph.events(of: "asr")
        let pusher = try #require(graph.input(named: "src"))
        graph.start()
        let feeder = Thread {
            var offset = 0
            while offset < audio.count {
                let n = min(Int.random(in: 1...4096), audio.count - offset)
                audio[offset..<(offset + n)].withUnsafeBufferPointer { _ = pusher.write($0, waitForRoom: true) }
                offset += n
            }
            pusher.end()
        }
        feeder.start()
        var streamed: [String] = []
        for await event in results {
            if case .result(let t) = event, t.isFinal { streamed.append(t.text) }
        }
        try await graph.wait()
        #expect(try Self.finals(graph) == expected)
        #expect(streamed == expected, "the event stream carries the same finals as the collector")
        #expect(pusher.droppedFrames == 0)
    }

    /// The jsonl sink's `latency` counts from the graph's audio epoch, which a live input sets from the first audio
    /// it takes. Audio dropped before that (a full ring) was heard too: left out, the epoch came late by as much and
    /// every latency read low.
    @Test("a live writer that outruns a small ring loses whole chunks: gap events on the audio clock, heard audio")
    func pushedOverrunBecomesGaps() throws {
        let resources = GraphResources()
        let graph = try RunningGraph(
            plan: Harness.plan(
                """
                node src = push.input { rate: 16 kHz, buffer: 50 ms }
                node out = collect
                src.events -> out
                """), registry: Harness.registry, resources: resources)
        let pusher = try #require(graph.input(named: "src"))
        // Before the graph starts nothing is read: 2.5 s written, the first 800 frames fit, the rest are dropped.
        let chunk = [Float](repeating: 0.1, count: 400)
        var accepted = 0
        for _ in 0..<100 { accepted += pusher.write(chunk) }
        pusher.end()
        let before = Date().timeIntervalSince1970
        try graph.run()
        let after = Date().timeIntervalSince1970
        // The first read came between `before` and `after`; audio time 0 was 2.5 s before it.
        let epoch = try #require(resources.audioEpoch)
        #expect(epoch >= before - 2.5 - 0.001 && epoch <= after - 2.5 + 0.001, "\(epoch - before)")
        let gaps = try #require(graph.node(named: "out") as? EventCollector).events.compactMap { e -> TimeRange? in
            if case .gap(_, let range, _) = e { return range }
            return nil
        }
        #expect(accepted + pusher.droppedFrames == 40000)
        #expect(pusher.droppedFrames > 0)
        let lost = gaps.map { $0.duration * 16000 }.reduce(0, +)
        #expect(abs(lost - Double(pusher.droppedFrames)) < 1)
        #expect(gaps.first.map { abs($0.start * 16000 - Double(accepted)) < 1 } == true)
    }

    @Test("events no node takes go to Options.unrouted, with their node's name; routed ones do not")
    func unroutedEvents() throws {
        func gaps(routed: Bool) throws -> (unrouted: [(String, GraphEvent)], collected: Int) {
            let seen = Mutex<[(String, GraphEvent)]>([])
            let graph = try RunningGraph(
                plan: Harness.plan(
                    """
                    node src = push.input { rate: 16 kHz, buffer: 50 ms }
                    node vad = vad
                    node out = collect
                    src -> vad
                    vad.events -> out
                    \(routed ? "src.events -> out" : "")
                    """), registry: Harness.registry,
                options: RunningGraph.Options(unrouted: { node, event in seen.withLock { $0.append((node, event)) } }))
            let pusher = try #require(graph.input(named: "src"))
            // Before the graph starts nothing is read: the first 800 frames fit, the rest are dropped (gaps).
            let chunk = [Float](repeating: 0.1, count: 400)
            for _ in 0..<10 { _ = pusher.write(chunk) }
            pusher.end()
            try graph.run()
            #expect(pusher.droppedFrames > 0)
            let collected = try #require(graph.node(named: "out") as? EventCollector).events.filter {
                $0.kind == .gap
            }
            return (seen.withLock { $0 }, collected.count)
        }
        let nowhere = try gaps(routed: false)
        #expect(nowhere.collected == 0)
        #expect(!nowhere.unrouted.isEmpty)
        #expect(nowhere.unrouted.allSatisfy { $0.0 == "src" && $0.1.kind == .gap })
        let routed = try gaps(routed: true)
        #expect(routed.collected == nowhere.unrouted.count)
        #expect(routed.unrouted.isEmpty, "\(routed.unrouted)")
    }

    @Test("a sink that cannot write: one warning event from it, in events() and to unrouted, and in warnings")
    func sinkWriteFailureIsAnEvent() async throws {
        let wav = dir.path("tone.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", "2", "sine", "440"])
        let seen = Mutex<[(String, GraphEvent)]>([])
        let graph = try RunningGraph(
            plan: Harness.plan(
                """
                node src = file.input { path: "\(wav)" }
                node levels = tap.level
                node log = jsonl { path: "/dev/full" }
                src -> levels
                levels.events -> log
                """), registry: Harness.registry,
            options: RunningGraph.Options(unrouted: { node, event in seen.withLock { $0.append((node, event)) } }))
        let events = graph.events(of: "log")
        graph.start()
        var warnings: [(node: String, time: Double?, reason: String)] = []
        for await event in events {
            if case .warning(let node, let time, let reason) = event { warnings.append((node, time, reason)) }
        }
        try await graph.wait()
        let reason = "cannot write /dev/full: No space left on device"
        #expect(warnings.count == 1)
        #expect(warnings.first?.node == "log")
        #expect(warnings.first?.reason == reason)
        #expect(warnings.first?.time.map { $0 > 0 && $0 <= 2 } == true)
        #expect(seen.withLock { $0.map(\.0) } == ["log"])
        #expect(graph.warnings == ["node 'log': \(reason)"])
    }

    @Test("audio pushed as a microphone gives it: the jsonl sink's latency is there, and small")
    func pushedAudioHasLatency() throws {
        let log = dir.path("latency.jsonl")
        let graph = try RunningGraph(
            plan: Harness.plan(
                """
                node src = push.input { rate: 16 kHz }
                node levels = tap.level
                node log = jsonl { path: "\(log)", latency: true }
                src -> levels
                levels.events -> log
                """), registry: Harness.registry)
        let pusher = try #require(graph.input(named: "src"))
        graph.start()
        // 1 s of a tone, 100 ms at a time, as a capture device hands it over (the pacing is the simulated
        // microphone's, not a wait for the graph).
        let chunk = (0..<1600).map { Float(sin(Double($0) * 0.2) * 0.3) }
        for _ in 0..<10 {
            _ = pusher.write(chunk, waitForRoom: true)
            Thread.sleep(forTimeInterval: 0.1)
        }
        pusher.end()
        try graph.run()
        let latencies = try Run.lines(of: log).map { line in
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            return try #require(o["latency"] as? Double, "\(line)")
        }
        #expect(latencies.count >= 5)
        // From the end of each level's 100 ms to its line: a moment, not the seconds since the graph was made.
        #expect(latencies.allSatisfy { $0 > -0.5 && $0 < 5 }, "\(latencies)")
    }

    @Test("audio dropped before the graph first drains its input counts as heard: the epoch is that much earlier")
    func audioDroppedBeforeTheFirstDrain() async throws {
        let graph = try RunningGraph(
            plan: Harness.plan(
                """
                node src = push.input { rate: 16 kHz, buffer: 200 ms }
                node levels = tap.level
                node out = collect
                src -> levels
                levels.events -> out
                """), registry: Harness.registry)
        let pusher = try #require(graph.input(named: "src"))
        let before = Date().timeIntervalSince1970
        // 10 s of a tone, written before the graph runs: the ring takes its first 200 ms, the rest is dropped.
        let chunk = (0..<1600).map { Float(sin(Double($0) * 0.2) * 0.3) }
        var taken = 0
        for _ in 0..<100 { taken += pusher.write(chunk) }
        #expect(taken > 0 && pusher.droppedFrames > 0)
        // What the level tap emits: its first level comes from the first drain's audio.
        let events = graph.events(of: "levels")
        graph.start()
        var iterator = events.makeAsyncIterator()
        _ = await iterator.next()
        let after = Date().timeIntervalSince1970
        pusher.end()
        try await graph.wait()
        // The first drain, between `before` and `after`, heard all 10 s, the dropped audio too.
        let heard = Double(taken + pusher.droppedFrames) / 16000
        #expect(heard == 10)
        let epoch = try #require(graph.resources.audioEpoch)
        #expect(
            epoch >= before - heard && epoch <= after - heard, "\(before - heard) ... \(epoch) ... \(after - heard)")
    }

    @Test("pushed NaN and infinite samples: no trap, the text of the clean audio, one warning event")
    func pushedNonFiniteSamples() throws {
        let (plain, _, _) = try speech()
        let file = try AudioFile(path: plain)
        let samples = try file.readAll()
        func run(_ audio: [Float]) throws -> (finals: [String], warnings: [GraphEvent], graph: RunningGraph) {
            let graph = try RunningGraph(
                plan: Harness.plan(
                    """
                    node src = push.input { rate: \(file.sampleRate) Hz, buffer: 60 s }
                    node asr = recognizer
                    node out = collect
                    src -> asr -> out
                    src.events -> out
                    """), registry: Harness.registry)
            let pusher = try #require(graph.input(named: "src"))
            audio.withUnsafeBufferPointer { _ = pusher.write($0) }
            pusher.end()
            try graph.run()
            let events = try #require(graph.node(named: "out") as? EventCollector).events
            return (try Self.finals(graph), events.filter { $0.kind == .warning }, graph)
        }
        let clean = try run(samples)
        var poisoned = samples
        for k in [samples.count / 4, samples.count / 3, samples.count / 2] { poisoned[k] = .nan }
        poisoned[samples.count / 2 + 3] = .infinity
        let dirty = try run(poisoned)
        #expect(clean.warnings.isEmpty && clean.graph.warnings.isEmpty)
        #expect(dirty.finals == clean.finals)
        #expect(!clean.finals.joined().isEmpty)
        #expect(dirty.warnings.count == 1)
        #expect(dirty.warnings.first?.node == "src")
        #expect(
            dirty.graph.warnings == [
                "node 'src': 4 samples were not a number (NaN or infinite) and were faded out to silence"
            ])
    }

    @Test("stop() before the end finishes the utterance in flight and ends the event stream")
    func stopEndsStreams() async throws {
        let graph = try RunningGraph(
            plan: Harness.plan(
                """
                node src = push.input { rate: 16 kHz }
                node asr = recognizer
                node out = collect
                src -> asr -> out
                """), registry: Harness.registry)
        let all = graph.events()
        graph.start()
        graph.stop()
        for await _ in all {}
        try await graph.wait()
        #expect(try #require(graph.node(named: "out") as? EventCollector).isFinished)
    }
}
