import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

nonisolated(unsafe) private var sharedFixtureFolder: String?

/// The `vad` node in a graph: events, gated audio, parameters.
@Suite(.tags(.model)) struct NodeTests {
    /// Two sentences with a pause, in white noise at 10 dB: the file every graph test reads. Made once and
    /// kept for the whole run (a static keeps its folder alive).
    static let made: Result<(fixture: SpeechFixture, path: String), any Error> = Result {
        let fixture = try SpeechFixture([Sentences.call, Sentences.weather], gap: 1.0)
        // A static is never deinitialised: remove its folder when the test process exits.
        sharedFixtureFolder = fixture.dir.url.path
        atexit { if let folder = sharedFixtureFolder { try? FileManager.default.removeItem(atPath: folder) } }
        return (fixture, try fixture.noisy(snr: 10))
    }
    static func speechFile() throws -> (fixture: SpeechFixture, path: String) { try made.get() }

    @Test func isABuiltinAnalysisNode() throws {
        let type = try #require(BuiltinNodes.registry()["vad"])
        #expect(type.descriptor.category == .analysis)
        #expect(type.descriptor.inputs.map(\.name) == ["in"])
        #expect(type.descriptor.outputs.map(\.name) == ["out", "events"])
        #expect(type.descriptor.inputs[0].requirement == AudioRequirement(rate: .fixed(16000), channelCount: 1))
        #expect(
            type.descriptor.parameters.map(\.name) == [
                "preset", "threshold", "min-speech", "min-silence", "hangover", "pause", "pre-roll", "no-speech",
            ])
    }

    /// The same events, and the same gated audio, whatever the block size file.input reads.
    @Test func sameEventsWhateverTheBlockSize() throws {
        let (_, path) = try Self.speechFile()
        var reference: (events: [GraphEvent], audio: [Float], starts: Set<Int64>)?
        for block in [32, 64, 256, 1021] {
            let run = try VADHarness.run(file: path, block: block)
            let audio = run.audio.blocks.flatMap(\.samples)
            // Where each stretch of gated audio starts: a block that does not follow the previous one.
            var starts: Set<Int64> = []
            var next: Int64 = -1
            for b in run.audio.blocks {
                if b.start != next { starts.insert(b.start) }
                next = b.start + Int64(b.samples.count)
            }
            #expect(run.audio.blocks.allSatisfy { $0.samples.count <= block }, "blocks longer than the input's")
            if let reference {
                #expect(run.events == reference.events, "events differ with blocks of \(block)")
                #expect(audio == reference.audio, "gated audio differs with blocks of \(block)")
                #expect(starts == reference.starts, "gated audio starts differ with blocks of \(block)")
            } else {
                #expect(VADHarness.regions(run.events).count >= 2)
                reference = (run.events, audio, starts)
            }
        }
    }

    /// Events name the node and come in started/ended pairs at increasing times, around the spoken sentences.
    @Test func eventsAreOrderedPairsAroundTheSpeech() throws {
        let (fixture, path) = try Self.speechFile()
        let run = try VADHarness.run(file: path)
        var open = false
        var last = -1.0
        for e in run.events {
            switch e {
            case .speechStarted(let node, let t):
                #expect(node == "v" && !open && t >= last)
                open = true
                last = t
            case .speechEnded(let node, let t):
                // At the sample its last pause began, or later.
                #expect(node == "v" && open && t >= last)
                open = false
                last = t
            case .speechPaused(let node, let t), .speechResumed(let node, let t):
                // Pauses are reported inside speech only.
                #expect(node == "v" && open && t >= last)
                last = t
            default: Issue.record("unexpected event \(e)")
            }
        }
        #expect(!open)
        let regions = VADHarness.regions(run.events)
        for span in fixture.spans {
            #expect(
                regions.contains { $0.start <= span.start + 0.1 && $0.end >= span.end - 0.2 }
                    || regions.contains {
                        $0.start < span.end && $0.end > span.start
                    }, "no region over \(span)")
        }
        #expect(abs(try #require(regions.first).start - fixture.spans[0].start) <= 0.1)
        #expect(
            !regions.contains { $0.start > fixture.spans[0].end + 0.3 && $0.end < fixture.spans[1].start - 0.1 },
            "a region inside the pause")
    }

    /// The gated audio is the input's own samples, each block at its true startFrame, covering exactly each
    /// region from pre-roll before its onset to its end, and nothing else.
    @Test func gatedAudioKeepsItsTimestamps() throws {
        let (_, path) = try Self.speechFile()
        let input = try Signals.readWAV(path)
        let run = try VADHarness.run(file: path, block: 200)
        #expect(run.audio.format == AudioFormat(sampleRate: 16000, channelCount: 1))
        var next: Int64 = 0
        var covered: [(Int64, Int64)] = []
        for b in run.audio.blocks {
            #expect(b.start >= next, "blocks overlap or go back in time")
            let start = Int(b.start)
            #expect(
                Array(input[start..<(start + b.samples.count)]) == b.samples,
                "samples at \(b.start) are not the input's")
            if let last = covered.last, last.1 == b.start {
                covered[covered.count - 1].1 += Int64(b.samples.count)
            } else {
                covered.append((b.start, b.start + Int64(b.samples.count)))
            }
            next = b.start + Int64(b.samples.count)
        }
        let preRoll = 0.3
        let expected = VADHarness.regions(run.events).map { r in
            (Int64((max(0, r.start - preRoll) * 16000).rounded()), Int64((r.end * 16000).rounded()))
        }
        #expect(covered.count == expected.count)
        for (c, e) in zip(covered, expected) {
            #expect(c.0 == e.0 && c.1 == e.1, "gated audio \(c) for region \(e)")
        }
    }

    /// With pre-roll the audio starts that long before the onset; without, at the onset.
    @Test(arguments: [0.0, 0.3, 0.6])
    func preRollIsKept(preRoll: Double) throws {
        let (_, path) = try Self.speechFile()
        let run = try VADHarness.run(file: path, parameters: "pre-roll: \(Int(preRoll * 1000)) ms")
        let first = try #require(VADHarness.regions(run.events).first)
        let audioStart = try #require(run.audio.blocks.first?.start)
        #expect(first.start > preRoll)
        #expect(audioStart == Int64(((first.start - preRoll) * 16000).rounded()))
    }

    /// `no-speech`: when nobody has spoken that far into the stream, one noSpeech event at that time, before any
    /// speech event; none when the speech began sooner, and none by default.
    @Test func noSpeechWhenNobodySpokeInTime() throws {
        let (fixture, path) = try Self.speechFile()
        func noSpeech(_ events: [GraphEvent]) -> [(index: Int, time: Double?)] {
            events.enumerated().compactMap { i, e in
                guard case .noSpeech(let node, let time) = e else { return nil }
                #expect(node == "v")
                return (i, time)
            }
        }
        let onset = fixture.spans[0].start
        #expect(onset > 1.3, "the fixture's speech starts at \(onset) s")
        let early = try VADHarness.run(file: path, block: 333, parameters: "no-speech: 1 s").events
        let found = noSpeech(early)
        #expect(found.map(\.time) == [1.0], "\(early)")
        let firstSpeech = early.firstIndex { if case .speechStarted = $0 { true } else { false } }
        #expect(found.first.map(\.index) ?? .max < firstSpeech ?? -1, "\(early)")
        // The speech events are the same as without the timeout.
        let plain = try VADHarness.run(file: path, block: 333).events
        #expect(early.filter { $0.kind != .noSpeech } == plain)
        #expect(noSpeech(plain).isEmpty)
        let late = try VADHarness.run(file: path, block: 333, parameters: "no-speech: \(onset + 1) s").events
        #expect(noSpeech(late).isEmpty, "\(late)")
        // Less than a sample is still a timeout (1 µs rounded to no samples turned it off).
        let tiny = try VADHarness.run(file: path, block: 333, parameters: "no-speech: 1 us").events
        #expect(noSpeech(tiny).count == 1, "\(tiny)")
        // Around the vad's own onset: just after it, no noSpeech; just before it, noSpeech and then the speech.
        // The same whatever the block size (a block that holds both used to lose the noSpeech).
        guard case .speechStarted(_, let start)? = plain.first(where: { $0.kind == .speechStarted }) else {
            Issue.record("no speech in \(plain)")
            return
        }
        for block in [32, 333, 4096] {
            let after = try VADHarness.run(file: path, block: block, parameters: "no-speech: \(start + 0.02) s").events
            #expect(noSpeech(after).isEmpty, "block \(block): \(after)")
            let before = try VADHarness.run(file: path, block: block, parameters: "no-speech: \(start - 0.02) s")
                .events
            let said = noSpeech(before)
            #expect(said.count == 1, "block \(block): \(before)")
            let first = before.firstIndex { $0.kind == .speechStarted }
            #expect(said.first.map(\.index) ?? .max < first ?? -1, "block \(block): \(before)")
            #expect(before.filter { $0.kind != .noSpeech } == plain)
        }
    }

    /// A stream that ends in the middle of speech closes its region at the last sample.
    @Test func endOfStreamClosesTheRegionAtTheLastSample() throws {
        let (fixture, path) = try Self.speechFile()
        let input = try Signals.readWAV(path)
        let cutAt = (fixture.spans[1].start + fixture.spans[1].end) / 2
        let cut = Array(input[0..<Int(cutAt * 16000)])
        let dir = TemporaryDirectory()
        try Signals.writeWAV(cut, to: dir.path("cut.wav"))
        let run = try VADHarness.run(file: dir.path("cut.wav"), block: 333)
        guard case .speechEnded(_, let t)? = run.events.last else {
            Issue.record("the last event is not speechEnded: \(run.events)")
            return
        }
        #expect(t == Double(cut.count) / 16000)
        #expect(run.audio.blocks.last.map { $0.start + Int64($0.samples.count) } == Int64(cut.count))
    }

    /// An interruption (a discontinuity, as when a live input's server goes away) ends the region in flight at
    /// the last sample before it; detection starts afresh after it, on the input's clock.
    @Test func discontinuityEndsTheRegionAndStartsAfresh() throws {
        let (fixture, path) = try Self.speechFile()
        let cut = Int((fixture.spans[0].start + fixture.spans[0].end) / 2 * 16000)
        let gap = 16000 * 5
        let text = """
            node src = test.interrupted { path: "\(path)", at: \(cut), gap: \(gap) }
            node v = vad
            node ev = collect
            node au = test.gated
            src -> v
            v.events -> ev
            v.out -> au
            """
        let runner = try InlineGraph(plan: VADHarness.plan(text), registry: VADHarness.registry)
        try runner.run()
        let events = (runner.node(named: "ev") as! EventCollector).events
        let audio = runner.node(named: "au") as! GatedAudio
        let regions = VADHarness.regions(events)
        let before = regions.filter { $0.start < Double(cut) / 16000 }
        try #require(before.count == 1, "\(regions)")
        #expect(before[0].end == Double(cut) / 16000)
        let after = regions.filter { $0.start >= Double(cut) / 16000 }
        #expect(after.count == regions.count - 1 && !after.isEmpty)
        #expect(after.allSatisfy { $0.start >= Double(cut + gap) / 16000 }, "\(after)")
        // The second sentence is found where it is, shifted by the gap.
        #expect(after.contains { abs($0.start - (fixture.spans[1].start + Double(gap) / 16000)) < 0.1 }, "\(after)")
        // No gated audio crosses the interruption.
        #expect(
            audio.blocks.allSatisfy { $0.start + Int64($0.samples.count) <= Int64(cut) || $0.start >= Int64(cut + gap) }
        )
    }

    /// Audio at 44.1 kHz stereo gets a resampler and a downmix; times stay on the file's clock.
    @Test func convertedInputKeepsTheClock() throws {
        let (_, path) = try Self.speechFile()
        let dir = TemporaryDirectory()
        let converted = dir.path("44k.wav")
        try TestSpeech.sox([path, "-r", "44100", "-c", "2", "-b", "16", converted])
        let plan = try VADHarness.plan(
            """
            node src = file.input { path: "\(converted)" }
            node v = vad
            node ev = collect
            src -> v
            v.events -> ev
            """)
        #expect(plan.nodes.map(\.typeName).contains("resample"))
        let original = VADHarness.regions(try VADHarness.run(file: path).events)
        let regions = VADHarness.regions(try VADHarness.run(file: converted).events)
        try #require(regions.count == original.count, "\(regions) vs \(original)")
        for (a, b) in zip(regions, original) {
            #expect(abs(a.start - b.start) <= 0.03 && abs(a.end - b.end) <= 0.03, "\(a) vs \(b)")
        }
    }

    // MARK: Parameters

    static func settings(_ parameters: String, overrides: [String] = []) throws -> VADSettings {
        let spec = try GraphParser.parse(
            """
            node src = file.input { path: "x.wav" }
            node v = vad { \(parameters) }
            node ev = collect
            src -> v
            v.events -> ev
            """, file: "p.graph", environment: [:])
        let plan = try GraphPlanner(registry: VADHarness.registry)
            .validate(spec, overrides: overrides.compactMap { GraphPlanner.Override.parse($0) })
        return try VADNode.settings(from: plan.nodes[plan.index(of: "v")!].config)
    }

    @Test func presetGivesDefaultsAndWrittenParametersOverrideIt() throws {
        #expect(try Self.settings("") == VADSettings(preset: .normal))
        #expect(try Self.settings("preset: strict") == VADSettings(preset: .strict))
        var expected = VADSettings(preset: .strict)
        expected.hangover = 0.5
        expected.threshold = -1
        #expect(try Self.settings("preset: strict, hangover: 500 ms, threshold: -1 dB") == expected)
        // A value equal to the normal preset's still overrides another preset: written means written.
        var sensitive = VADSettings(preset: .sensitive)
        sensitive.minSpeech = VADSettings.normal.minSpeech
        #expect(try Self.settings("preset: sensitive, min-speech: 80 ms") == sensitive)
        // --set counts as written too.
        var set = VADSettings(preset: .sensitive)
        set.preRoll = 1.5
        #expect(try Self.settings("preset: sensitive", overrides: ["v.pre-roll=1.5s"]) == set)
    }

    @Test(arguments: [
        ("threshold: 3", "missing unit for 'threshold'"),
        ("hangover: 9 s", "out of range for 'hangover'"),
        ("preset: loud", "'loud' is not one of sensitive, normal, strict"),
        ("min-speech: 2 dB", "wrong unit 'dB' for 'min-speech'"),
        ("pre-roll: -10 ms", "out of range for 'pre-roll'"),
        ("hangovr: 300 ms", "unknown parameter 'hangovr'"),
    ])
    func badParametersAreRefused(parameters: String, message: String) throws {
        do {
            _ = try Self.settings(parameters)
            Issue.record("'\(parameters)' was accepted")
        } catch let error as GraphError {
            #expect(
                error.diagnostics.contains { $0.message.contains(message) },
                "\(error.diagnostics.map(\.message)) lacks \(message)")
        }
    }
}
