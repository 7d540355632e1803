import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

/// Sustained tones told from speech by how still their spectrum holds (what a packed window reads alone).
@Suite(.tags(.fast)) struct SustainedTonesTests {
    let dir = TemporaryDirectory()

    func samples(_ path: String) throws -> [Int16] {
        try AudioFile(path: path).readAll().map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) }
    }

    /// Chords of three sines, one a second, each fading in and out (music a vad lets through).
    @Test func chordsAreHeldTones() throws {
        let chords = dir.path("chords.wav")
        try TestSpeech.chords([[220, 277, 330], [262, 330, 392], [330, 415, 494]], to: chords)
        let share = try #require(SustainedTones.share(try samples(chords)))
        #expect(share >= SustainedTones.heldShare, "\(share)")
        #expect(SustainedTones.hold(try samples(chords)))
    }

    /// Speech, clean and in noise, and noise alone change their spectra too often to be held tones.
    @Test func speechAndNoiseAreNot() throws {
        let speech = dir.path("call.wav")
        try TestSpeech.synthesize(Sentences.call, to: speech)
        let noisy = dir.path("noisy.wav")
        let noise = dir.path("noise.wav")
        let seconds = try TestSpeech.duration(speech)
        try TestSpeech.sox([
            "-n", "-r", "16000", "-b", "16", "-c", "1", noise, "synth", "\(seconds)", "pinknoise",
            "norm", "-30",
        ])
        try TestSpeech.sox(["-m", speech, noise, noisy])
        for file in [speech, noisy, noise] {
            let share = try #require(SustainedTones.share(try samples(file)))
            #expect(share < 0.5, "\(file): \(share)")
            #expect(!SustainedTones.hold(try samples(file)))
        }
        // Too short to compare: not tones.
        #expect(SustainedTones.share([Int16](repeating: 100, count: 1000)) == nil)
        #expect(!SustainedTones.hold([]))
    }
}
