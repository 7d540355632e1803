import CMallocCounter
import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

/// The detector on its own (no graph), on signals whose answer is known.
@Suite(.tags(.fast)) struct DetectorTests {
    static func text(_ regions: [(start: Double, end: Double)]) -> String {
        regions.map { String(format: "%.3f-%.3f", $0.start, $0.end) }.joined(separator: " ")
    }

    @Test func digitalSilenceIsNeverSpeech() {
        let silence = [Float](repeating: 0, count: 16000 * 5)
        #expect(DetectorRun(silence).events.isEmpty)
        #expect(DetectorRun(silence, block: 1021).events.isEmpty)
    }

    /// Steady noise alone, quiet or loud, starts nothing.
    @Test(arguments: [0.001, 0.01, 0.1])
    func steadyNoiseIsNotSpeech(rms: Double) {
        let run = DetectorRun(Signals.whiteNoise(seconds: 30, rms: rms, seed: 3))
        #expect(run.regions.isEmpty, "false alarms in noise of RMS \(rms): \(Self.text(run.regions))")
    }

    /// Tone bursts of 0.2 to 0.5 s in white noise: one region per burst, onset within 40 ms of the burst's
    /// start, end from 30 ms before to 120 ms after the burst's end (the end is held a little in noise).
    @Test(arguments: [20.0, 10.0, 5.0, 0.0])
    func toneBurstsInWhiteNoise(snr: Double) {
        let sigma = 0.01
        var x = Signals.whiteNoise(seconds: 8, rms: sigma, seed: 7)
        let amplitude = sigma * pow(10, snr / 20) * 2.0.squareRoot()  // tone RMS / noise RMS = snr
        let bursts: [(start: Double, duration: Double, frequency: Double)] =
            [(1.0, 0.3, 300), (2.5, 0.5, 800), (4.0, 0.2, 1500), (5.5, 0.4, 500)]
        for b in bursts {
            Signals.addTone(to: &x, start: b.start, duration: b.duration, frequency: b.frequency, amplitude: amplitude)
        }
        let run = DetectorRun(x)
        try? #require(run.regions.count == bursts.count, "at \(snr) dB: \(Self.text(run.regions))")
        guard run.regions.count == bursts.count else { return }
        for (r, b) in zip(run.regions, bursts) {
            #expect(abs(r.start - b.start) <= 0.04, "onset at \(snr) dB: \(r.start) for a burst at \(b.start)")
            let endError = r.end - (b.start + b.duration)
            #expect(
                endError >= -0.03 && endError <= 0.12,
                "end at \(snr) dB: \(r.end) for a burst ending at \(b.start + b.duration)")
        }
    }

    /// Pauses inside speech: with a 0.5 s pause needed to end a region and `pause` at 0.15 s, two bursts 0.3 s
    /// apart make one region with a pause reported between them (paused at the first burst's end, resumed at the
    /// second's onset), and the region's end is reported as a pause first, at the same sample. A pause shorter
    /// than `pause` reports nothing, and so does `pause` 0. The same events whatever the block size.
    @Test func pausesInsideSpeechAreReported() {
        let sigma = 0.01
        var x = Signals.whiteNoise(seconds: 5, rms: sigma, seed: 11)
        let amplitude = sigma * pow(10, 20.0 / 20) * 2.0.squareRoot()
        for (start, duration) in [(1.0, 0.5), (1.8, 0.4), (2.3, 0.4)] {
            Signals.addTone(to: &x, start: start, duration: duration, frequency: 600, amplitude: amplitude)
        }
        var settings = VADSettings.normal
        settings.minSilence = 0.5
        settings.hangover = 0.5
        settings.pause = 0.15
        let run = DetectorRun(x, settings: settings)
        func seconds(_ s: Int64) -> Double { Double(s) / 16000 }
        let kinds = run.events.map { e -> String in
            switch e {
            case .started: return "started"
            case .ended: return "ended"
            case .paused: return "paused"
            case .resumed: return "resumed"
            case .frame: return "frame"
            }
        }
        // The 0.1 s gap between the second and third bursts is shorter than the pause: nothing reported there.
        #expect(kinds == ["started", "paused", "resumed", "paused", "ended"], "\(run.events)")
        guard kinds.count == 5, case .paused(let p1) = run.events[1], case .resumed(let r1) = run.events[2],
            case .paused(let p2) = run.events[3], case .ended(let e) = run.events[4]
        else { return }
        #expect(abs(seconds(p1) - 1.5) <= 0.08, "paused at \(seconds(p1)) for a burst ending at 1.5")
        #expect(abs(seconds(r1) - 1.8) <= 0.04, "resumed at \(seconds(r1)) for a burst starting at 1.8")
        #expect(abs(seconds(p2) - 2.7) <= 0.08, "paused at \(seconds(p2)) for a burst ending at 2.7")
        #expect(p2 == e, "the region ends where its last pause began")
        // The stream ending inside that pause (0.3 s after the last burst) ends the region there too.
        let cut = DetectorRun(Array(x[..<Int(3.0 * 16000)]), settings: settings)
        #expect(cut.events.suffix(2) == [.paused(sample: p2), .ended(sample: p2)], "\(cut.events)")
        for block in [32, 64, 256, 1021] {
            #expect(DetectorRun(x, settings: settings, block: block).events == run.events, "block \(block)")
        }
        settings.pause = 0
        #expect(
            DetectorRun(x, settings: settings).events.map { if case .paused = $0 { 1 } else { 0 } }.reduce(0, +) == 0)
    }

    /// A tone too weak to hear in the noise (-15 dB) is not detected.
    @Test func buriedToneIsNotSpeech() {
        let sigma = 0.01
        var x = Signals.whiteNoise(seconds: 6, rms: sigma, seed: 9)
        Signals.addTone(
            to: &x, start: 2, duration: 0.4, frequency: 700, amplitude: sigma * pow(10, -15.0 / 20) * 2.0.squareRoot())
        #expect(DetectorRun(x).regions.isEmpty)
    }

    /// Synthesised speech in white noise: the region starts within 60 ms before to 100 ms after the first
    /// spoken frame (-50 dBFS in the clean signal; weak onsets drown in noise), ends within 200 ms of the last,
    /// and nothing is detected away from the speech.
    @Test(arguments: [20.0, 10.0, 5.0])
    func speechInWhiteNoise(snr: Double) throws {
        let fixture = try SpeechFixture([Sentences.call])
        let mixed = try Signals.readWAV(try fixture.noisy(snr: snr))
        let run = DetectorRun(mixed)
        let truth = fixture.spans[0]
        let regions = run.regions
        try #require(!regions.isEmpty, "nothing detected at \(snr) dB")
        #expect(
            regions.allSatisfy { $0.start >= truth.start - 0.1 && $0.end <= truth.end + 0.3 },
            "regions away from the speech (\(truth)) at \(snr) dB: \(Self.text(regions))")
        #expect(
            regions[0].start - truth.start >= -0.06 && regions[0].start - truth.start <= 0.1,
            "onset \(regions[0].start) for speech from \(truth.start) at \(snr) dB")
        #expect(
            abs(regions.last!.end - truth.end) <= 0.2,
            "end \(regions.last!.end) for speech to \(truth.end) at \(snr) dB")
        let covered = regions.map { min($0.end, truth.end) - max($0.start, truth.start) }.reduce(0, +)
        #expect(
            covered >= 0.85 * (truth.end - truth.start),
            "only \(covered) s of \(truth.end - truth.start) s found at \(snr) dB")
    }

    /// In clean audio the detector is tight: the pause between sentences splits them, the first region starts
    /// within 40 ms of the first spoken frame (-50 dBFS) and the last ends within 100 ms of the last one (the
    /// decaying tail under -50 dBFS still stands well above digital silence).
    @Test func cleanSpeechIsTight() throws {
        let fixture = try SpeechFixture([Sentences.call, Sentences.weather], gap: 0.8)
        let run = DetectorRun(fixture.clean)
        try #require(run.regions.count >= 2, Comment(rawValue: Self.text(run.regions)))
        #expect(
            abs(run.regions.first!.start - fixture.spans[0].start) <= 0.04, Comment(rawValue: Self.text(run.regions)))
        #expect(abs(run.regions.last!.end - fixture.spans[1].end) <= 0.1, Comment(rawValue: Self.text(run.regions)))
        // Nothing spans the 0.8 s pause between the sentences.
        #expect(!run.regions.contains { $0.start < fixture.spans[0].end && $0.end > fixture.spans[1].start })
    }

    /// After speech at 5 dB the detector is in its noisy setting; a minute of the same steady noise then gives
    /// at most one false alarm.
    @Test func fewFalseAlarmsInNoiseAfterSpeech() throws {
        let fixture = try SpeechFixture([Sentences.call, Sentences.weather])
        let mixed = try Signals.readWAV(try fixture.noisy(snr: 5, extraSeconds: 60))
        let run = DetectorRun(mixed)
        let after = run.regions.filter { $0.start > fixture.spans[1].end + 0.5 }
        #expect(after.count <= 1, "false alarms in 60 s of noise: \(Self.text(after))")
        #expect(run.regions.contains { $0.start < fixture.spans[1].end && $0.end > fixture.spans[1].start })
    }

    /// The detector gives the same events whatever the block sizes it is fed.
    @Test func sameEventsWhateverTheBlocks() throws {
        let fixture = try SpeechFixture([Sentences.call, Sentences.door])
        let mixed = try Signals.readWAV(try fixture.noisy(snr: 10))
        let reference = DetectorRun(mixed, block: 4096).events
        #expect(reference.count >= 2)
        for block in [1, 7, 160, 333] {
            #expect(DetectorRun(mixed, block: block).events == reference, "block \(block)")
        }
    }

    /// `reset` forgets the past: the same signal afterwards gives the same events as a fresh detector.
    @Test func resetStartsAfresh() throws {
        var x = Signals.whiteNoise(seconds: 4, rms: 0.01, seed: 5)
        Signals.addTone(to: &x, start: 1.5, duration: 0.4, frequency: 600, amplitude: 0.1)
        let fresh = DetectorRun(x).events
        let vad = VoiceActivityDetector()
        var events: [VADEvent] = []
        let collect: (VADEvent) -> Void = { if case .frame = $0 {} else { events.append($0) } }
        x.withUnsafeBufferPointer { vad.process(UnsafeBufferPointer(rebasing: $0[0..<30000]), collect) }
        vad.reset()
        events = []
        x.withUnsafeBufferPointer { vad.process($0, collect) }
        vad.finish(collect)
        #expect(events == fresh)
        // One region (its end may be announced by a pause first).
        #expect(fresh.filter { if case .paused = $0 { false } else { true } }.count == 2)
    }

    /// The detector allocates in `init` only: 19 s of audio with speech-like regions in it, fed in blocks,
    /// make no allocation on the thread that feeds it (it runs on the graph thread beside the real-time rings).
    /// The counter watches one thread for the whole process: the JACK suite, which uses it too, runs in a process
    /// of its own (scripts/test.sh).
    @Test func processingAllocatesNothing() {
        var x = Signals.whiteNoise(seconds: 19, rms: 0.005, seed: 9)
        for k in 0..<6 {
            Signals.addTone(to: &x, start: 1 + 3 * Double(k), duration: 1.2, frequency: 500, amplitude: 0.1)
        }
        // The runtime's one-time work (type metadata, statics) is done by a first detector: what is counted is
        // the second's, which any later detector's is.
        let warm = VoiceActivityDetector()
        x.withUnsafeBufferPointer { warm.process(UnsafeBufferPointer(rebasing: $0[0..<48000])) { _ in } }
        warm.finish { _ in }
        let vad = VoiceActivityDetector()
        var events = 0
        var counted: UInt64 = 0
        let before = sg_malloc_counter_total()
        x.withUnsafeBufferPointer { all in
            sg_malloc_counter_watch(pthread_self())
            var start = 0
            while start < all.count {
                let end = min(start + 1024, all.count)
                vad.process(UnsafeBufferPointer(rebasing: all[start..<end])) {
                    if case .frame = $0 {} else { events += 1 }
                }
                start = end
            }
            vad.finish { if case .frame = $0 {} else { events += 1 } }
            counted = sg_malloc_counter_count()
            sg_malloc_counter_unwatch()
        }
        #expect(counted == 0)
        #expect(events >= 12, "speech regions began and ended: \(events) events")
        // The counter is in place: an allocation here is seen.
        let probe = [Int](repeating: events, count: 1000 + events)
        #expect(sg_malloc_counter_total() > before && probe.count > 1000)
    }

    /// Every 10 ms frame is reported once, in order.
    @Test func framesAreReportedInOrder() {
        let vad = VoiceActivityDetector()
        var starts: [Int64] = []
        let x = Signals.whiteNoise(seconds: 1, rms: 0.01, seed: 1)
        let collect: (VADEvent) -> Void = { if case .frame(let f) = $0 { starts.append(f.start) } }
        x.withUnsafeBufferPointer { vad.process($0, collect) }
        vad.finish(collect)
        #expect(starts.count == 100)
        #expect(zip(starts, starts.dropFirst()).allSatisfy { $1 - $0 == 160 })
    }

    @Test func presetsOrderTheirSettings() {
        let s = VADSettings(preset: .sensitive)
        let n = VADSettings(preset: .normal)
        let t = VADSettings(preset: .strict)
        #expect(s.threshold < n.threshold && n.threshold < t.threshold)
        #expect(s.minSpeech < n.minSpeech && n.minSpeech < t.minSpeech)
        #expect(s.hangover > n.hangover && n.hangover > t.hangover)
        #expect(n == .normal)
        #expect(VADSettings(threshold: 30, minSpeech: 0, minSilence: 0, hangover: 0, preRoll: 0).problem != nil)
        #expect(VADSettings(threshold: 0, minSpeech: -1, minSilence: 0, hangover: 0, preRoll: 0).problem != nil)
        #expect(n.problem == nil)
    }
}
