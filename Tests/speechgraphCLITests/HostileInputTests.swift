import Foundation
import SpeechGraphTestSupport
import Testing

/// Input that other programs made, broken or hostile (issue 11): never a trap, never a skewed result.
@Suite struct HostileInputTests {
    let dir = TemporaryDirectory()

    /// Two sentences with a second of silence between them, as a 32-bit float WAV, and the same file with a
    /// NaN, +infinity and -infinity written into its speech.
    func floatFiles() throws -> (clean: String, poisoned: String) {
        let a = dir.path("a.wav")
        let b = dir.path("b.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: a)
        try TestSpeech.synthesize("the weather today is cold and windy", to: b)
        let clean = dir.path("clean.wav")
        try TestSpeech.sox([a, b, "-e", "floating-point", "-b", "32", clean, "pad", "0.5", "1"])
        var data = try Data(contentsOf: URL(fileURLWithPath: clean))
        let marker = try #require(data.range(of: Data("data".utf8)))
        let first = marker.upperBound + 4
        let count = (data.count - first) / 4
        #expect(count > 16000)
        for (k, value) in [(count / 4, Float.nan), (count / 3, .infinity), (count / 3 + 7, -.infinity)] {
            withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes in
                data.replaceSubrange((first + 4 * k)..<(first + 4 * k + 4), with: bytes)
            }
        }
        let poisoned = dir.path("poisoned.wav")
        try data.write(to: URL(fileURLWithPath: poisoned))
        return (clean, poisoned)
    }

    @Test("a float WAV with NaN and infinite samples: transcribed as the clean one, one warning, exit 1, no trap")
    func nonFiniteSamplesBecomeSilence() throws {
        let (clean, poisoned) = try floatFiles()
        for vad in ["off", "on"] {
            let ok = try Run.speechgraph(["transcribe", "--vad", vad, clean])
            #expect(ok.status == 0, "\(ok.stderr)")
            #expect(ok.stdout.contains("mother"))
            // The poisoned file between two clean ones: all three transcribed.
            let r = try Run.speechgraph(["transcribe", "--vad", vad, "--format", "tsv", clean, poisoned, clean])
            #expect(!r.signaled)
            #expect(r.status == 1, "\(r.stderr)")
            let texts = r.stdout.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 1).last ?? "" }
            #expect(texts.count == 3, "\(r.stdout)")
            #expect(Set(texts).count == 1, "the poisoned file reads as the clean one: \(r.stdout)")
            let warnings = r.stderr.split(separator: "\n")
            #expect(warnings.count == 1, "\(r.stderr)")
            #expect(r.stderr.contains("3 samples were not a number (NaN or infinite) and were faded out to silence"))
        }
    }

    @Test("a NaN does not skew the vad: the same speech regions as the clean file")
    func nonFiniteSamplesLeaveTheVADRegionsIntact() throws {
        let (clean, poisoned) = try floatFiles()
        let ok = try Run.speechgraph(["vad", "--format", "tsv", clean])
        let r = try Run.speechgraph(["vad", "--format", "tsv", poisoned])
        #expect(ok.status == 0 && r.status == 1, "\(ok.stderr) \(r.stderr)")
        #expect(ok.stdout.split(separator: "\n").count == 2, "\(ok.stdout)")
        #expect(r.stdout == ok.stdout)
    }
}
