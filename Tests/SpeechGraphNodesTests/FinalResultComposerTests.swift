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

/// The seam between the recognizer and an engine (`RecognitionEngine`), with an engine made up for the test: the
/// whole-utterance strategy hands each phase's engine the utterance from its own shift, once, on up to as many
/// threads as it is given, and reads what each engine read.
@Suite(.tags(.fast)) struct RecognitionEngineSeamTests {
    /// Reads the number of samples it was given, and the first one.
    final class CountingEngine: RecognitionEngine, @unchecked Sendable {
        var calls: [String] = []
        var samples: [Int16] = []
        func startUtterance(newStream: Bool) throws { calls.append("start \(newStream)") }
        func process(_ samples: UnsafeBufferPointer<Int16>, wholeUtterance: Bool) throws {
            calls.append("process \(samples.count) \(wholeUtterance)")
            self.samples += samples
        }
        func endUtterance() throws { calls.append("end") }
        func reading(from start: Double, words: Bool, alternatives: Int) -> Reading {
            Reading(text: "\(samples.count) from \(samples.first ?? -1)", words: [], nbest: [], score: (-1, 10))
        }
    }

    struct Refused: Error {}
    final class FailingEngine: RecognitionEngine, @unchecked Sendable {
        func startUtterance(newStream: Bool) throws {}
        func process(_ samples: UnsafeBufferPointer<Int16>, wholeUtterance: Bool) throws { throw Refused() }
        func endUtterance() throws {}
        func reading(from start: Double, words: Bool, alternatives: Int) -> Reading {
            Reading(text: "", words: [], nbest: [])
        }
    }

    @Test("each phase's engine decodes the utterance whole from its shift, once, on one thread or several")
    func phasesThroughTheSeam() throws {
        let utterance = (0..<1000).map { Int16($0) }
        for threads in [1, 2, 3] {
            let engines = (0..<3).map { _ in CountingEngine() }
            try utterance.withUnsafeBufferPointer {
                try RecognizerNode.decodeAtOnce(engines, $0, skips: [0, 53, 106], newStream: true, threads: threads)
            }
            #expect(engines.map(\.calls) == [0, 53, 106].map { ["start true", "process \(1000 - $0) true", "end"] })
            #expect(
                engines.map { $0.reading(from: 0, words: false, alternatives: 0).text }
                    == ["1000 from 0", "947 from 53", "894 from 106"])
        }
    }

    @Test("an engine that fails fails the decoding, whichever thread ran it")
    func aFailingEngineIsThrown() {
        let utterance = [Int16](repeating: 1, count: 100)
        #expect(throws: Refused.self) {
            try utterance.withUnsafeBufferPointer {
                try RecognizerNode.decodeAtOnce(
                    [CountingEngine(), FailingEngine()], $0, skips: [0, 10], newStream: false, threads: 2)
            }
        }
    }
}

/// The energies a long utterance is split by: each whole 10 ms chunk's sum of squares, however the audio came.
@Suite(.tags(.fast)) struct ChunkEnergiesTests {
    @Test func chunksAreWholeWhateverTheBlocksAndTheQuietestIsTheFirstOfThem() {
        let samples: [Int16] = [3, 4, 0, 0, 1, 1, 0, 0, 2, 2, 9]
        var energies = ChunkEnergies(chunkSamples: 2)
        // In blocks of 3, 5 and 3: the chunks cross them.
        samples.withUnsafeBufferPointer { all in
            for range in [0..<3, 3..<8, 8..<11] { energies.add(UnsafeBufferPointer(rebasing: all[range])) }
        }
        #expect(energies.chunks == [25, 0, 2, 0, 8])  // the last sample waits for its chunk
        #expect(energies.quietest(in: 0...4) == 1)
        #expect(energies.quietest(in: 2...4) == 3)
        energies.removeFirst(3)
        #expect(energies.chunks == [0, 8])
        [Int16(1)].withUnsafeBufferPointer { energies.add($0) }  // completes the chunk begun before
        #expect(energies.chunks == [0, 8, 82])
        energies.reset()
        #expect(energies.chunks.isEmpty)
        [Int16(5)].withUnsafeBufferPointer { energies.add($0) }
        #expect(energies.chunks.isEmpty)
    }
}
