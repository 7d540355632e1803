import Foundation
import SpeechGraphCore

/// Turns PocketSphinx's word posteriors into confidences that mean what they say: the probability that the
/// word is right. A logistic regression on three features of each word: the logit of its posterior, the
/// logit of its utterance's mean posterior (how sure the recognizer is of the whole utterance: in noise, or on
/// a voice the model knows badly, every posterior drops, and low ones mean more errors), and the log of its
/// duration.
///
/// Fitted by `scripts/fit-calibration.py` on a development set of synthesised speech, clean and noisy
/// (`scripts/make-calibration-set.sh`: 96 sentences, 8 voices of flite and espeak-ng, clean, white noise at
/// 15 dB and pink noise at 14 dB SNR; 4,492 words), never on ../shared, which stays the test. The features were
/// chosen by cross-validation on that set (two folds, one per voice): log loss 0.530 against 0.559 for the
/// posterior alone. `make bench` prints the reliability tables on the test sets (docs/events.md).
public struct ConfidenceCalibration: Sendable, Equatable {
    public var intercept: Double
    public var posterior: Double
    public var utterance: Double
    public var duration: Double

    /// The fitted coefficients.
    public static let standard = ConfidenceCalibration(
        intercept: -0.5729, posterior: 0.2499, utterance: 0.6640, duration: -0.4900)

    public init(intercept: Double, posterior: Double, utterance: Double, duration: Double) {
        self.intercept = intercept
        self.posterior = posterior
        self.utterance = utterance
        self.duration = duration
    }

    static func logit(_ p: Double) -> Double {
        let q = min(max(p, 1e-4), 1 - 1e-4)
        return log(q / (1 - q))
    }

    /// The probability that a word is right, from its posterior, its utterance's mean posterior and its
    /// duration in seconds.
    public func confidence(posterior p: Double, utteranceMean m: Double, duration d: Double) -> Double {
        let z =
            intercept + posterior * Self.logit(p) + utterance * Self.logit(m) + duration * log(max(d, 0.01))
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
