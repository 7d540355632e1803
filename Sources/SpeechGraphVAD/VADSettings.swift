/// How eager the detector is. A preset fills in every setting; settings written explicitly override it.
public enum VADPreset: String, Sendable, CaseIterable {
    /// Misses less: lower threshold, shorter minimum speech, longer pauses held. More false alarms in noise.
    case sensitive
    /// The tuned setting (see docs/vad.md for its scores).
    case normal
    /// False-alarms less: higher threshold, longer minimum speech, pauses held less. Clips weak speech more.
    case strict
}

/// The settings of a `VoiceActivityDetector`. Durations are in seconds, the threshold in dB.
public struct VADSettings: Sendable, Equatable {
    /// Shift of the decision thresholds, in dB: positive is stricter, negative more sensitive. The thresholds
    /// are on the mean log-likelihood ratio of speech over noise; in steady noise the `normal` threshold sits
    /// about 4 standard deviations above the noise-only mean, so going below -1 dB brings false alarms.
    public var threshold: Double
    /// A burst of speech shorter than this never starts a region (clicks, knocks).
    public var minSpeech: Double
    /// In clean audio (long-term SNR of 20 dB or more), a pause this long ends a region.
    public var minSilence: Double
    /// In noisy audio (long-term SNR of 8 dB or less), a pause this long ends a region. Between the two the
    /// pause needed slides from `minSilence` to `hangover`: the hangover lengthens with the noise.
    public var hangover: Double
    /// Audio kept before each detected onset and handed on with the region (the node's `out`), so the first
    /// phoneme is never clipped. Does not move the event times.
    public var preRoll: Double
    /// A pause this long inside a region is reported (`paused`, then `resumed` if the speech goes on) when
    /// the pause that ends the region is longer: an early end-of-turn hint, on which a recognizer with
    /// `results: fast` ends its utterance. 0 reports no pauses.
    public var pause: Double

    public init(
        threshold: Double, minSpeech: Double, minSilence: Double, hangover: Double, preRoll: Double,
        pause: Double = 0.15
    ) {
        self.threshold = threshold
        self.minSpeech = minSpeech
        self.minSilence = minSilence
        self.hangover = hangover
        self.preRoll = preRoll
        self.pause = pause
    }

    /// The settings of a preset.
    public init(preset: VADPreset) {
        switch preset {
        case .sensitive:
            self.init(threshold: -0.3, minSpeech: 0.05, minSilence: 0.15, hangover: 0.5, preRoll: 0.4)
        case .normal:
            self.init(threshold: 0, minSpeech: 0.08, minSilence: 0.08, hangover: 0.4, preRoll: 0.3)
        case .strict:
            self.init(threshold: 1, minSpeech: 0.12, minSilence: 0.06, hangover: 0.25, preRoll: 0.2)
        }
    }

    public static let normal = VADSettings(preset: .normal)

    /// Why these settings cannot be used, or `nil`.
    public var problem: String? {
        if !threshold.isFinite || threshold < -6 || threshold > 20 { return "threshold must be within -6 dB to 20 dB" }
        for (name, value) in [
            ("min-speech", minSpeech), ("min-silence", minSilence), ("hangover", hangover),
            ("pre-roll", preRoll), ("pause", pause),
        ] where !value.isFinite || value < 0 || value > 5 {
            return "\(name) must be within 0 s to 5 s"
        }
        return nil
    }
}
