import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

@Suite(.tags(.model)) struct TapTests {
    let dir = TemporaryDirectory()

    /// A 0.5-amplitude sine: peak -6.02 dBFS, RMS -9.03 dBFS, ten events a second at the default interval.
    @Test(arguments: [64, 1000, 1021])
    func levelsOfASineAreKnown(block: Int) throws {
        let wav = dir.path("sine.wav")
        try TestSpeech.sox([
            "-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", "1.0", "sine", "1000", "vol", "0.5",
        ])
        let (events, _) = try Harness.run(
            """
            node src = file.input { path: "\(wav)", block: \(block) }
            node meter = tap.level
            node out = collect
            src -> meter
            meter.events -> out
            """)
        let levels = events.compactMap { e -> (Double, Double, Double)? in
            if case .level(_, let t, let rms, let peak) = e { return (t, rms[0], peak[0]) }
            return nil
        }
        #expect(levels.count == 10)
        for (i, level) in levels.enumerated() {
            #expect(abs(level.0 - Double(i + 1) * 0.1) < 1e-9, "event \(i) at \(level.0)")
            #expect(abs(level.1 - -9.03) < 0.1, "rms \(level.1)")
            #expect(abs(level.2 - -6.02) < 0.1, "peak \(level.2)")
        }
    }

    @Test func silenceIsMinusInfinityAndTheAudioPassesThrough() throws {
        let wav = dir.path("silence.wav")
        // -D: no dither
        try TestSpeech.sox(["-D", "-n", "-r", "16000", "-c", "1", "-b", "16", wav, "trim", "0", "0.2"])
        let (events, _) = try Harness.run(
            """
            node src = file.input { path: "\(wav)" }
            node meter = tap.level { interval: 50 ms }
            node out = collect
            src -> meter.in
            meter.events -> out
            """)
        #expect(events.count == 4)
        if case .level(_, _, let rms, let peak) = try #require(events.first) {
            #expect(rms[0] == -.infinity && peak[0] == -.infinity)
        }
        #expect(JSONLines.line(for: events[0]).contains(#""rms":[-200.00]"#))
    }

    @Test(arguments: ["rec.wav", "rec.flac"])
    func recordWritesWhatPasses(name: String) throws {
        let wav = dir.path("speech.wav")
        let rec = dir.path(name)
        try TestSpeech.synthesize("good morning", to: wav)
        _ = try Harness.run(
            """
            node src = file.input { path: "\(wav)" }
            node tape = tap.record { path: "\(rec)" }
            node asr = recognizer
            node out = collect
            src -> tape -> asr -> out
            """)
        let a = try AudioFile(path: wav)
        let b = try AudioFile(path: rec)
        #expect(b.sampleRate == a.sampleRate && b.frameCount == a.frameCount)
        let x = try a.readAll()
        let y = try b.readAll()
        let maxDifference = zip(x, y).map { abs($0 - $1) }.max() ?? 1
        // WAV holds the floats exactly; FLAC 24-bit holds 16-bit audio exactly too.
        #expect(maxDifference < 1e-6, "\(maxDifference)")
    }
}
