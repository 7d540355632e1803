import Foundation
import SpeechGraphCore

/// Turns PocketSphinx's word posteriors into confidences that mean what they say: the probability that the
/// word is right. A logistic regression on three features of each word: the logit of its posterior, the
/// logit of its utterance's mean posterior (how sure the recognizer is of the whole utterance: in noise, or on
/// a voice the model knows badly, every posterior drops, and low ones mean more errors), both piecewise linear
/// (hinges at -2, 0 and 2, and at -1 and 1), and the log of its duration.
///
/// Fitted by `scripts/fit-calibration.py` on a development set, never on ../shared, which stays the test:
/// synthesised speech (`scripts/make-calibration-set.sh`: 96 sentences, 8 voices of flite and espeak-ng) and
/// the real read speech of AN4's training partition (`scripts/make-an4-dev-set.sh`: 948 utterances by 74
/// speakers, none of them the test's), each clean, in white noise at 15 dB and in pink noise at 14 dB SNR;
/// 20,025 words. The features were chosen by held-out log loss on that set, within it and across its two
/// parts (docs/events.md). `make bench` prints the reliability tables on the test sets.
public struct ConfidenceCalibration: Sendable, Equatable {
    public var intercept: Double
    public var posterior: Double
    public var utterance: Double
    public var duration: Double
    /// The slope added above each of ``posteriorKnots`` (logit of the posterior).
    public var posteriorHinges: [Double]
    /// The slope added above each of ``utteranceKnots`` (logit of the utterance's mean posterior).
    public var utteranceHinges: [Double]

    public static let posteriorKnots = [-2.0, 0, 2]
    public static let utteranceKnots = [-1.0, 1]

    /// The fitted coefficients.
    public static let standard = ConfidenceCalibration(
        intercept: -0.5999, posterior: 0.0862, utterance: -0.0279, duration: 0.1434,
        posteriorHinges: [0.1143, -0.1604, 0.2903], utteranceHinges: [0.8222, -0.3512])

    /// Whisper's word probabilities calibrated (`engine: whisper`): the logit of the probability alone, scaled
    /// and shifted (Platt's scaling). Whisper is too sure at both ends and unsure in the middle: 0.02 becomes
    /// 0.17, 0.5 becomes 0.65, 0.99 becomes 0.96. Fitted by `scripts/fit-calibration.py --spoken` (words read in
    /// spoken form, as wer.py reads them) on the same development sets as ``standard`` (the 576 synthesised
    /// files and every sixth utterance of AN4's training part, clean and noisy: 7,313 words). The posterior
    /// alone had the best held-out log loss across the two sets (0.451; the three features, hinged or not,
    /// 0.54-0.55) and lowered the pooled folds' from Whisper's own 0.467 to 0.430 (docs/whisper.md).
    public static let whisper = ConfidenceCalibration(intercept: 0.6040, posterior: 0.5628, utterance: 0, duration: 0)

    public init(
        intercept: Double, posterior: Double, utterance: Double, duration: Double, posteriorHinges: [Double] = [],
        utteranceHinges: [Double] = []
    ) {
        self.intercept = intercept
        self.posterior = posterior
        self.utterance = utterance
        self.duration = duration
        self.posteriorHinges = posteriorHinges
        self.utteranceHinges = utteranceHinges
    }

    static func logit(_ p: Double) -> Double {
        let q = min(max(p, 1e-4), 1 - 1e-4)
        return log(q / (1 - q))
    }

    /// The probability that a word is right, from its posterior, its utterance's mean posterior and its
    /// duration in seconds.
    public func confidence(posterior p: Double, utteranceMean m: Double, duration d: Double) -> Double {
        let lp = Self.logit(p)
        let lm = Self.logit(m)
        var z = intercept + posterior * lp + utterance * lm + duration * log(max(d, 0.01))
        for (k, w) in zip(Self.posteriorKnots, posteriorHinges) { z += w * max(0, lp - k) }
        for (k, w) in zip(Self.utteranceKnots, utteranceHinges) { z += w * max(0, lm - k) }
        return 1 / (1 + exp(-z))
    }

    /// The words with calibrated confidences (their posteriors replaced).
    public func calibrate(_ words: [Word]) -> [Word] {
        guard !words.isEmpty else { return words }
        let mean = words.map(\.confidence).reduce(0, +) / Double(words.count)
        return words.map { w in
            var c = w
            c.confidence = confidence(posterior: w.confidence, utteranceMean: mean, duration: w.range.duration)
            return c
        }
    }
}
