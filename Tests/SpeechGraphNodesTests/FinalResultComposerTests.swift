import SpeechGraphCore
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphSphinx

/// The final-result composer, with readings made up on the spot (no decoder, no model).
@Suite(.tags(.fast)) struct FinalResultComposerTests {
    static func word(_ text: String, _ start: Double, _ end: Double, _ confidence: Double = 0.5) -> Word {
        Word(text: text, range: TimeRange(start: start, end: end), confidence: confidence)
    }
    static func reading(_ text: String, score: Double = -1000, frames: Int = 100, noEnd: Bool = false) -> Reading {
        let words = text.split(separator: " ").enumerated().map { i, w in
            word(String(w), Double(i) * 0.3, Double(i) * 0.3 + 0.3)
        }
        return Reading(text: text, words: words, nbest: [], score: (score, frames), reachedNoEnd: noEnd)
    }
    let range = TimeRange(start: 1, end: 2.5)
    func composer(mixture: Double? = nil, rejects: Bool = false) -> FinalResultComposer {
        FinalResultComposer(node: "asr", mixtureWeight: mixture, rejects: rejects, calibration: nil)
    }

    @Test("the phases' medoid reading is the result, with its words, their mean confidence, the utterance's range")
    func medoidOfThePhases() {
        let result = composer().compose(
            phases: [Self.reading("call my brother"), Self.reading("call my mother"), Self.reading("call my mother")],
            peak: 3000, utterance: 4, range: range)
        #expect(result.text == "call my mother")
        #expect(result.isFinal && result.utterance == 4 && result.range == range && result.node == "asr")
        #expect(result.words.map(\.text) == ["call", "my", "mother"])
        #expect(result.confidence == 0.5)
        #expect(!result.rejected)
    }

    @Test("rejection: a domain reading that explains the audio by less than 0.35 nats a frame more is rejected")
    func rejectionByMargin() {
        let general = Self.reading("the weather is cold", score: -1000)
        let close = composer(rejects: true).compose(
            phases: [Self.reading("knight to e4", score: -990)], general: general, peak: 3000, utterance: 1,
            range: range)
        #expect(close.rejected, "0.10 nats a frame")
        let clear = composer(rejects: true).compose(
            phases: [Self.reading("knight to e4", score: -950)], general: general, peak: 3000, utterance: 1,
            range: range)
        #expect(!clear.rejected, "0.50 nats a frame")
        // The domain-only model's score, when there is one, is the domain's, not the phase's.
        let scored = composer(rejects: true).compose(
            phases: [Self.reading("knight to e4", score: -950)], general: general, domainScore: (-990, 100), peak: 3000,
            utterance: 1, range: range)
        #expect(scored.rejected)
        // A grammar search that reached no end explains nothing the general model heard words in.
        let noEnd = composer(rejects: true).compose(
            phases: [Self.reading("", score: 0, noEnd: true)], general: general, peak: 3000, utterance: 1,
            range: range)
        #expect(noEnd.rejected)
    }

    @Test("a mixture keeps the domain reading only when it beats the general one by ln((1 - w) / w) a frame")
    func mixture() {
        let general = Self.reading("the weather is cold", score: -1000)
        // w = 0.25: the domain must win by ln 3 = 1.10 nats a frame.
        let weak = composer(mixture: 0.25).compose(
            phases: [Self.reading("knight to e4", score: -950)], general: general, peak: 3000, utterance: 1,
            range: range)
        #expect(weak.text == "the weather is cold")
        let strong = composer(mixture: 0.25).compose(
            phases: [Self.reading("knight to e4", score: -850)], general: general, peak: 3000, utterance: 1,
            range: range)
        #expect(strong.text == "knight to e4")
        #expect(!weak.rejected && !strong.rejected, "a mixture does not reject")
    }

    @Test("dead air gives no words, whatever the decoder read into it")
    func deadAir() {
        let result = composer().compose(phases: [Self.reading("dog")], peak: 1, utterance: 1, range: range)
        #expect(result.text.isEmpty && result.words.isEmpty && result.confidence == nil)
    }

    @Test("alternatives: the result's own reading first, scores relative to the best, words get the others' words")
    func alternatives() {
        var phase = Self.reading("call my mother")
        phase.nbest = [
            (
                "call my brother", -5,
                [Self.word("call", 0, 0.3), Self.word("my", 0.3, 0.6), Self.word("brother", 0.6, 0.9)]
            ),
            ("call my mother", -6, phase.words),
        ]
        let result = composer().compose(phases: [phase], peak: 3000, utterance: 1, range: range)
        #expect(result.alternatives.map(\.text) == ["call my mother", "call my brother"])
        #expect(result.alternatives.map(\.score) == [-1, 0])
        #expect(result.words.last?.alternatives == ["brother"])
    }
}
