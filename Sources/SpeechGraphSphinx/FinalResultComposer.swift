import Foundation
import SpeechGraphCore

/// The final result of an utterance from what the decoders read in it: pure, with no decoder in it (the recognizer
/// decodes, this decides). The choices:
/// - among the phases (the utterance decoded with its frames shifted), the medoid reading;
/// - with a domain model and the general one beside it (`general`), a sentence-level mixture at `mixtureWeight`, or
///   rejection by the score margin;
/// - dead air (a peak within one 16-bit step of zero) gives no words;
/// - calibrated word confidences, the n-best list best first, each word's alternatives, the mean confidence.
struct FinalResultComposer: Sendable {
    var node: String
    /// A sentence-level mixture of the domain and general readings at this prior weight (`weight`, with `lm`).
    var mixtureWeight: Double?
    /// Rejection: a grammar's or domain-only model's result is marked rejected when the general model explains
    /// the utterance nearly as well.
    var rejects: Bool
    var calibration: ConfidenceCalibration?

    /// Rejection: a result is rejected unless the grammar's (or the domain-only model's) path score beats the
    /// general model's by at least this, in nats per 10 ms frame. Chosen on the chess development set
    /// (scripts/make-chess-set.sh; docs/lm.md): its general sentences reach at most 0.27, its moves at least 0.42.
    static let rejectionMargin = 0.35

    /// `phases`: one reading each, the first unshifted (non-empty). `general`: the general model's reading of the
    /// first phase's audio, when a domain model is weighed against it; `domainScore`: the domain-only model's score
    /// of it, when rejection scores with one (else the first phase's). `peak`: the utterance's largest sample in
    /// 16-bit steps.
    func compose(
        phases: [Reading], general: Reading? = nil, domainScore: (score: Double, frames: Int)? = nil, peak: Float,
        utterance: Int, range: TimeRange
    ) -> Transcription {
        let chosen = Self.medoid(phases.map(\.text))
        var reading = phases[chosen]
        var rejected = false
        if let general {
            let domain = domainScore ?? phases[0].score
            // A grammar search that reached no end, in the phase whose reading is the result (speech that no
            // sentence fits), has no reading and no score (0, which beat every real score): it explains nothing
            // the general model heard words in.
            let noEnd = domainScore == nil && phases[chosen].reachedNoEnd
            // How much better the domain reading explains the utterance, in nats per 10 ms frame.
            let margin =
                noEnd && !general.text.isEmpty
                ? -Double.infinity
                : domain.frames > 0 ? (domain.score - general.score.score) / Double(domain.frames) : 0
            if let w = mixtureWeight {
                // A sentence-level mixture, its prior odds counted per frame as the acoustic evidence is: the domain
                // reading is kept when it beats the general one by more than ln((1 - w) / w) per frame.
                if margin <= log((1 - w) / w) { reading = general }
            } else if rejects {
                rejected = margin < Self.rejectionMargin
            }
        }
        if peak <= 1 {
            // Dead air (every sample within one 16-bit step of zero: a muted input, digital silence) holds no
            // speech; decoded with its frames kept (word timings), PocketSphinx reads a word into it ("dog" over
            // 10 s of zeros).
            reading = Reading(text: "", words: [], nbest: [])
        }
        var words = reading.words
        if let calibration { words = calibration.calibrate(words) }
        let nbest = Self.bestFirst(reading.nbest, text: reading.text)
        if !nbest.isEmpty { words = Self.wordAlternatives(words, nbest.dropFirst().map(\.words)) }
        var result = Transcription(
            utterance: utterance, isFinal: true, range: range, text: reading.text, words: words,
            alternatives: nbest.map { Alternative(text: $0.text, score: $0.score) },
            confidence: words.isEmpty ? nil : words.map(\.confidence).reduce(0, +) / Double(words.count), node: node)
        result.rejected = rejected
        return result
    }

    /// The n-best list with the result's own text first (the search over the lattice can rank another reading
    /// a little higher than the best path it came from), then the others by falling score; scores relative to
    /// the best one's, so none is above 0.
    static func bestFirst(_ list: [(text: String, score: Double, words: [Word])], text: String)
        -> [(text: String, score: Double, words: [Word])]
    {
        guard !list.isEmpty else { return [] }
        let top = list.map(\.score).max() ?? 0
        var rest = list.filter { $0.text != text }.map { ($0.text, $0.score - top, $0.words) }
        rest.sort { $0.1 > $1.1 }
        let own = list.first { $0.text == text }.map { ($0.text, $0.score - top, $0.words) } ?? (text, 0, [])
        return Array(([own] + rest).prefix(list.count))
    }

    /// Each word with the words other readings have over most of its time span (half of the shorter of the
    /// two), in the readings' order, without repeats or itself.
    static func wordAlternatives(_ words: [Word], _ readings: [[Word]]) -> [Word] {
        words.map { word in
            var w = word
            for reading in readings {
                for other in reading where other.text != word.text && !w.alternatives.contains(other.text) {
                    let overlap =
                        min(word.range.end, other.range.end) - max(word.range.start, other.range.start)
                    if overlap >= 0.5 * min(word.range.duration, other.range.duration) && overlap > 0 {
                        w.alternatives.append(other.text)
                    }
                }
            }
            return w
        }
    }

    /// The index of the text whose words differ least from the others' (summed word edit distance, the core's
    /// `editDistance` over words); the first of equals.
    static func medoid(_ texts: [String]) -> Int {
        guard texts.count > 2 else { return 0 }
        let words = texts.map { $0.split(separator: " ") }
        var best = 0
        var bestSum = Int.max
        for i in words.indices {
            var sum = 0
            for j in words.indices where j != i { sum += editDistance(words[i], words[j]) }
            if sum < bestSum { (best, bestSum) = (i, sum) }
        }
        return best
    }
}
