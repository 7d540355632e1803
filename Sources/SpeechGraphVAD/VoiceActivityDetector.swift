import CFFTW
import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// What the detector reports, in sample time (samples at 16 kHz from the first sample it was fed).
public enum VADEvent: Sendable, Equatable {
    /// A region of speech begins at `sample` (the onset, not the moment it was confirmed).
    case started(sample: Int64)
    /// The region ends at `sample` (exclusive).
    case ended(sample: Int64)
    /// Inside an open region, a pause of `VADSettings.pause` has begun at `sample` (where a region ending
    /// there would end). The region may still continue (`resumed`) or end (`ended`, at the same sample
    /// unless the speech resumed first). Reported only when the pause needed to end the region is longer.
    case paused(sample: Int64)
    /// After `paused`, speech continues the region: its onset is at `sample`.
    case resumed(sample: Int64)
    /// One analysis frame (10 ms) was decided: its span, the smoothed log-likelihood ratio it was judged on
    /// (`score`), the threshold in force, and the detector's estimate of the long-term SNR in dB.
    case frame(VADFrame)
}

public struct VADFrame: Sendable, Equatable {
    /// The 10 ms the frame stands for: `start..<start + 160` samples.
    public var start: Int64
    public var score: Double
    public var threshold: Double
    public var isAboveThreshold: Bool
    public var longTermSNR: Double
}

/// FFTW's planner is not thread-safe: plans are made and destroyed under this lock.
let fftwPlanner = Mutex<Void>(())

/// A voice activity detector for 16 kHz mono audio, usable without the graph: feed samples in blocks of any
/// size with `process`, call `finish` at the end, and get region boundaries (and per-frame decisions) in
/// sample time through the handler. The same samples give the same events whatever the block sizes.
///
/// The algorithm (docs/vad.md): a 512-point FFT (FFTW, Hann window) every 10 ms; a noise spectrum tracked
/// per bin with speech-presence-probability weighting (Gerkmann & Hendriks), restarted after digital silence;
/// the statistical-model likelihood ratio of Sohn et al. with a decision-directed a priori SNR, averaged over
/// the bins from 94 Hz to 7 kHz and over 5 frames; hysteresis thresholds and a hold time that adapt to the
/// long-term SNR; minimum speech and the hold turn frame decisions into regions.
///
/// Memory is allocated in `init`; `process` allocates nothing.
public final class VoiceActivityDetector {
    public static let sampleRate = 16000
    /// Samples per analysis frame step (10 ms).
    public static let hop = 160
    static let window = 512
    static let bins = window / 2 + 1
    /// Bins of the decision band: 94 Hz to 6.97 kHz. Below, mains hum and rumble; above, the anti-alias
    /// roll-off of most recordings, where the noise estimate means little.
    static let band = 3...223
    /// Smoothing of the frame statistic: a centred mean of this many frames (so 2 frames of look-ahead).
    static let smoothing = 5
    /// A hop whose samples all stay below this is digital silence ("dead air").
    static let deadLevel: Float = 1.5 / 32768
    /// After this many hops of digital silence the noise estimate starts again from scratch.
    static let deadReset = 10
    /// Frames averaged to start the noise estimate (they are taken as noise).
    static let initFrames = 10
    /// Decision-directed smoothing and floor of the a priori SNR.
    static let ddAlpha = 0.98
    static let xiMin = 0.0031622776601683794  // -25 dB
    /// Speech presence probability noise tracker: fixed a priori SNR under speech (15 dB), smoothing.
    static let xiH1 = 31.622776601683793
    static let noiseAlpha = 0.8
    static let noiseFloor = 1e-13
    /// Thresholds on the smoothed mean log-likelihood ratio at low and high long-term SNR; the lower
    /// (continuation) threshold is this fraction of the upper one.
    static let thresholdLow = 0.12
    static let thresholdHigh = 1.0
    static let continuationRatio = 0.5
    /// The long-term SNR (dB) below which the detector is in its noisy setting and above which it is in its
    /// clean setting; the estimate's starting value and its update rate per speech frame (after a running
    /// mean over the first frames).
    static let snrNoisy = 8.0
    static let snrClean = 20.0
    static let snrStart = 10.0
    static let snrRate = 0.003
    /// Where a region ends relative to its last speech frame, in frames: later in noise (weak word endings
    /// drown), earlier in clean audio (the smoothing spreads each frame by two).
    static let endOffsetNoisy = 6.0
    static let endOffsetClean = -2.0
    /// A burst becomes speech only once this many of its frames are over the threshold (a lone peak of the
    /// noise is not enough).
    static let confirmFrames = 4
    /// How far back (frames) a region's onset may reach from the frame that confirmed it.
    static let maxBacktrack = 100

    public let settings: VADSettings
    private let thresholdScale: Double

    // FFT
    private let plan: fftwf_plan
    private let fftIn: UnsafeMutablePointer<Float>
    private let fftOut: UnsafeMutablePointer<fftwf_complex>
    private let hann: UnsafeMutableBufferPointer<Float>
    // The last `window` samples, circular; `historyPos` is where the next sample goes.
    private let history: UnsafeMutableBufferPointer<Float>
    private var historyPos = 0
    private var hopFill = 0
    private var hopPeak: Float = 0
    /// Bit i set: the hop i steps back was digital silence (bit 0: the newest).
    private var deadHops: UInt32 = 0xF
    private var deadRun = Int.max / 2

    // Per-bin state.
    private let power: UnsafeMutableBufferPointer<Double>
    private let noise: UnsafeMutableBufferPointer<Double>
    private let previousSpeech: UnsafeMutableBufferPointer<Double>
    private let presence: UnsafeMutableBufferPointer<Double>
    private var primed = false
    private var initCount = 0

    // Frame statistics awaiting smoothing (ring of `smoothing`), and their SNRs.
    private let rawScores: UnsafeMutableBufferPointer<Double>
    private let rawSNRs: UnsafeMutableBufferPointer<Double>
    /// Frames analysed so far.
    private var frameCount = 0
    private var longTermSNR = snrStart
    private var snrUpdates = 0

    // Region state (frame indices).
    private var runStart: Int?
    private var runFramesOver = 0
    private var runAccepted = false
    private var regionOpen = false
    /// A `paused` was reported for the open region, and no `resumed` since.
    private var pauseReported = false
    private var regionStartSample: Int64 = 0
    private var regionEnd = 0
    private var lastRegionEndSample: Int64 = 0
    /// Where the last reported pause began.
    private var lastPauseSample: Int64 = 0
    private var currentEndOffset = endOffsetNoisy

    /// Samples fed so far.
    public private(set) var samplesConsumed: Int64 = 0
    public private(set) var isFinished = false

    public init(settings: VADSettings = .normal) {
        self.settings = settings
        thresholdScale = pow(10, settings.threshold / 10)
        let n = Self.window
        let input = fftwf_alloc_real(n)!
        let output = fftwf_alloc_complex(n / 2 + 1)!
        input.initialize(repeating: 0, count: n)
        fftIn = input
        fftOut = output
        plan = Self.makePlan(n, input, output)
        hann = .allocate(capacity: n)
        var sum = 0.0
        for i in 0..<n {
            let w = 0.5 - 0.5 * cos(2 * Double.pi * Double(i) / Double(n))
            hann[i] = Float(w)
            sum += w * w
        }
        // Power normalised so that white noise of variance s^2 gives s^2 in every bin.
        let scale = Float(1 / sum.squareRoot())
        for i in 0..<n { hann[i] *= scale }
        history = .allocate(capacity: n)
        history.initialize(repeating: 0)
        power = .allocate(capacity: Self.bins)
        noise = .allocate(capacity: Self.bins)
        previousSpeech = .allocate(capacity: Self.bins)
        presence = .allocate(capacity: Self.bins)
        rawScores = .allocate(capacity: Self.smoothing)
        rawSNRs = .allocate(capacity: Self.smoothing)
        for b in [power, noise, previousSpeech, presence, rawScores, rawSNRs] { b.initialize(repeating: 0) }
    }

    static func makePlan(
        _ n: Int, _ input: UnsafeMutablePointer<Float>,
        _ output: UnsafeMutablePointer<fftwf_complex>
    ) -> fftwf_plan {
        let address = (UInt(bitPattern: input), UInt(bitPattern: output))
        let made: UInt = fftwPlanner.withLock { _ in
            let plan = fftwf_plan_dft_r2c_1d(
                Int32(n), UnsafeMutablePointer(bitPattern: address.0),
                UnsafeMutablePointer(bitPattern: address.1), UInt32(FFTW_ESTIMATE))!
            return UInt(bitPattern: plan)
        }
        return OpaquePointer(bitPattern: made)!
    }

    deinit {
        let address = UInt(bitPattern: plan)
        fftwPlanner.withLock { _ in fftwf_destroy_plan(OpaquePointer(bitPattern: address)) }
        fftwf_free(fftIn)
        fftwf_free(fftOut)
        for b in [power, noise, previousSpeech, presence, rawScores, rawSNRs] { b.deallocate() }
        hann.deallocate()
        history.deallocate()
    }

    /// Forgets everything heard (the noise estimate, an open region without closing it) and starts a new
    /// stream at sample 0. Allocates nothing.
    public func reset() {
        history.update(repeating: 0)
        historyPos = 0
        hopFill = 0
        hopPeak = 0
        deadHops = 0xF
        deadRun = Int.max / 2
        primed = false
        initCount = 0
        for i in 0..<Self.smoothing {
            rawScores[i] = 0
            rawSNRs[i] = 0
        }
        frameCount = 0
        longTermSNR = Self.snrStart
        snrUpdates = 0
        runStart = nil
        runFramesOver = 0
        runAccepted = false
        regionOpen = false
        pauseReported = false
        lastPauseSample = 0
        regionStartSample = 0
        regionEnd = 0
        lastRegionEndSample = 0
        currentEndOffset = Self.endOffsetNoisy
        samplesConsumed = 0
        isFinished = false
    }

    /// Whether a region is open (speech started and not yet ended).
    public var isSpeech: Bool { regionOpen }

    /// While a region is open: every sample before this one is certain to belong to it (later samples may
    /// still turn out to be the pause after it). `nil` when no region is open.
    public var speechKnownUntil: Int64? {
        guard regionOpen else { return nil }
        let known = Int64(Self.hop * regionEnd) - 16 + Int64(Self.endOffsetClean) * Int64(Self.hop)
        return min(max(known, regionStartSample), samplesConsumed)
    }

    /// The earliest sample a region still to be reported could start at (for callers that keep audio).
    public var minimumRetainedSample: Int64 {
        if regionOpen { return regionStartSample }
        let frame = max(0, frameCount - Self.maxBacktrack - Self.smoothing - 4)
        return max(0, Self.firstSample(ofFrame: frame))
    }

    /// The earliest sample at which speech not reported yet could still be found to start: the onset of the open
    /// region, else the start of the burst being confirmed, else the first frame not decided yet. Speech that
    /// started before it would have been reported by now.
    public var onsetFloor: Int64 {
        if regionOpen { return regionStartSample }
        let undecided = max(0, frameCount - Self.smoothing - 4)
        // A burst's onset reaches back at most `maxBacktrack` frames from the frame that confirms it: noise that
        // hovers between the thresholds does not hold the floor back for ever.
        let burst = runStart.map { max($0, undecided - Self.maxBacktrack) } ?? undecided
        return Self.firstSample(ofFrame: max(0, min(burst, undecided)))
    }

    /// Feeds samples (16 kHz, mono, -1...1). Events are handed to `handler` as they are decided.
    public func process(_ samples: UnsafeBufferPointer<Float>, _ handler: (VADEvent) throws -> Void) rethrows {
        precondition(!isFinished, "VoiceActivityDetector.process after finish")
        var i = 0
        let count = samples.count
        while i < count {
            let take = min(Self.hop - hopFill, count - i)
            for j in 0..<take {
                // The graph's sources clean their input; a sample that is still not a number (from a plugin,
                // say) must not stall the noise estimate.
                let x = SampleGuard.clean(samples[i + j])
                history[historyPos] = x
                historyPos = historyPos + 1 == Self.window ? 0 : historyPos + 1
                let a = abs(x)
                if a > hopPeak { hopPeak = a }
            }
            hopFill += take
            i += take
            samplesConsumed += Int64(take)
            if hopFill == Self.hop {
                let dead = hopPeak < Self.deadLevel
                hopFill = 0
                hopPeak = 0
                try analyseFrame(dead: dead, handler)
            }
        }
    }

    /// Ends the stream: decides the last frames and closes a region still open at the last sample, or, when a
    /// pause was reported and the speech has not resumed, where that pause began (as the pause going on would
    /// have closed it: a recognizer may already have finished the region there).
    public func finish(_ handler: (VADEvent) throws -> Void) rethrows {
        guard !isFinished else { return }
        isFinished = true
        let h = Self.smoothing / 2
        for _ in 0..<h { try pushFrame(score: 0, snr: 0, handler) }
        if regionOpen { try closeRegion(at: pauseReported ? nil : samplesConsumed, handler) }
    }

    // MARK: - Analysis

    private func analyseFrame(dead: Bool, _ handler: (VADEvent) throws -> Void) rethrows {
        deadHops = ((deadHops << 1) | (dead ? 1 : 0)) & 0xF
        if dead {
            deadRun += 1
            if deadRun >= Self.deadReset { primed = false }
            try pushFrame(score: 0, snr: 0, handler)
            return
        }
        deadRun = 0
        // Until the noise estimate runs, only frames whose whole window is live audio are used.
        if !primed && deadHops != 0 {
            try pushFrame(score: 0, snr: 0, handler)
            return
        }
        spectrum()
        let bins = Self.bins
        if !primed {
            primed = true
            initCount = 0
            for k in 0..<bins {
                noise[k] = 0
                previousSpeech[k] = 0
                presence[k] = 0
            }
        }
        if initCount < Self.initFrames {
            initCount += 1
            let m = Double(initCount)
            for k in 0..<bins { noise[k] = max(noise[k] + (power[k] - noise[k]) / m, Self.noiseFloor) }
            try pushFrame(score: 0, snr: 0, handler)
            return
        }
        var llrSum = 0.0
        var powerSum = 0.0
        var noiseSum = 0.0
        let qRatio = Self.xiH1 / (1 + Self.xiH1)
        let logQ = log(1 + Self.xiH1)
        for k in 0..<bins {
            let p = power[k]
            let lambda = noise[k]
            let gamma = p / lambda
            var xi = Self.ddAlpha * previousSpeech[k] / lambda + (1 - Self.ddAlpha) * max(gamma - 1, 0)
            if xi < Self.xiMin { xi = Self.xiMin }
            if Self.band.contains(k) {
                llrSum += gamma * xi / (1 + xi) - log1p(xi)
                powerSum += p
                noiseSum += lambda
            }
            let g = xi / (1 + xi)
            previousSpeech[k] = g * g * p
            // Speech presence probability under a fixed 15 dB a priori SNR, guarded against stagnation.
            var ph1 = 1 / (1 + exp(logQ - gamma * qRatio))
            presence[k] = 0.9 * presence[k] + 0.1 * ph1
            if presence[k] > 0.99 { ph1 = min(ph1, 0.99) }
            let expected = (1 - ph1) * p + ph1 * lambda
            noise[k] = max(Self.noiseAlpha * lambda + (1 - Self.noiseAlpha) * expected, Self.noiseFloor)
        }
        let score = llrSum / Double(Self.band.count)
        let snr = 10 * log10((powerSum + 1e-30) / (noiseSum + 1e-30))
        try pushFrame(score: score, snr: snr, handler)
    }

    /// Windows the last 512 samples and leaves their power spectrum in `power`.
    private func spectrum() {
        let n = Self.window
        // history[historyPos] is the oldest sample.
        var src = historyPos
        for i in 0..<n {
            fftIn[i] = history[src] * hann[i]
            src = src + 1 == n ? 0 : src + 1
        }
        fftwf_execute(plan)
        for k in 0..<Self.bins {
            let c = fftOut[k]
            let re = Double(c.0)
            let im = Double(c.1)
            power[k] = re * re + im * im
        }
    }

    // MARK: - Decision

    /// Takes one frame's raw statistic; decides the frame `smoothing / 2` back, whose look-ahead is now there.
    private func pushFrame(score: Double, snr: Double, _ handler: (VADEvent) throws -> Void) rethrows {
        let k = Self.smoothing
        let h = k / 2
        let t = frameCount
        rawScores[t % k] = score
        rawSNRs[t % k] = snr
        frameCount += 1
        let c = t - h
        guard c >= 0 else { return }
        var sum = 0.0
        for i in 0..<k { sum += rawScores[i] }
        // Frames before the first are zeros, as are the look-ahead frames `finish` adds.
        let x = sum / Double(k)
        let frameSNR = rawSNRs[c % k]
        let onLow = Self.thresholdLow * thresholdScale
        if x > onLow {
            // A running mean at first, so that a short stream gets a fair estimate, then a slow average.
            snrUpdates += 1
            longTermSNR += (frameSNR - longTermSNR) * max(Self.snrRate, 1 / Double(snrUpdates + 10))
        }
        let a = min(1, max(0, (longTermSNR - Self.snrNoisy) / (Self.snrClean - Self.snrNoisy)))
        let on = onLow + (Self.thresholdHigh * thresholdScale - onLow) * a
        let off = on * Self.continuationRatio
        let hold = (settings.hangover + (settings.minSilence - settings.hangover) * a) * 100
        let pauseFrames = settings.pause * 100
        currentEndOffset = Self.endOffsetNoisy + (Self.endOffsetClean - Self.endOffsetNoisy) * a
        let minSpeechFrames = max(1, Int((settings.minSpeech * 100).rounded()))
        let above = x > off
        try handler(
            .frame(
                VADFrame(
                    start: Self.firstSample(ofFrame: c), score: x, threshold: on,
                    isAboveThreshold: x > on, longTermSNR: longTermSNR)))
        if above {
            if runStart == nil {
                runStart = c
                runFramesOver = 0
                runAccepted = false
            }
            if x > on { runFramesOver += 1 }
            if !runAccepted && runFramesOver >= Self.confirmFrames && c + 1 - runStart! >= minSpeechFrames {
                let start = max(runStart!, c + 1 - Self.maxBacktrack)
                runStart = start
                if regionOpen && Double(start - regionEnd) < hold {
                    regionEnd = c + 1
                    if pauseReported {
                        pauseReported = false
                        try handler(.resumed(sample: max(Self.firstSample(ofFrame: start), lastPauseSample)))
                    }
                } else {
                    if regionOpen { try closeRegion(at: nil, handler) }
                    try openRegion(startFrame: start, handler)
                }
                runAccepted = true
            }
            if runAccepted { regionEnd = c + 1 }
        } else {
            runStart = nil
        }
        // The pause is long enough: the region ends, unless a burst that began inside the pause may still
        // prove to be speech (it then continues the region); that wait is bounded.
        let pause = Double(c + 1 - regionEnd)
        // The same test for the shorter pause that is only reported (`paused`), and for the one that ends the region.
        func long(_ needed: Double) -> Bool {
            pause >= needed
                && (runStart == nil || Double(runStart! - regionEnd) >= needed
                    || pause >= needed + Double(Self.maxBacktrack))
        }
        if regionOpen && long(hold) {
            try closeRegion(at: nil, handler)
        } else if regionOpen && !pauseReported && pauseFrames > 0 && long(pauseFrames) {
            pauseReported = true
            lastPauseSample = min(naturalEnd, samplesConsumed)
            try handler(.paused(sample: lastPauseSample))
        }
    }

    /// The first sample of the 10 ms that frame `f` stands for: the middle 160 samples of its 512-sample
    /// window, which ends at sample `hop * (f + 1)`.
    static func firstSample(ofFrame f: Int) -> Int64 { Int64(hop * f) - 176 }

    /// Where the open region would end if it ended now: its last speech frame plus the end offset.
    private var naturalEnd: Int64 {
        Int64(Self.hop * regionEnd) - 16 + Int64((currentEndOffset * Double(Self.hop)).rounded())
    }

    private func openRegion(startFrame: Int, _ handler: (VADEvent) throws -> Void) rethrows {
        let onset = Self.firstSample(ofFrame: startFrame)
        regionStartSample = min(max(onset, lastRegionEndSample, 0), samplesConsumed)
        regionOpen = true
        pauseReported = false
        regionEnd = startFrame
        try handler(.started(sample: regionStartSample))
    }

    /// Closes the open region at `sample`, or where its speech ended: where its pause was reported to begin,
    /// or else the last speech frame plus the end offset.
    private func closeRegion(at sample: Int64?, _ handler: (VADEvent) throws -> Void) rethrows {
        var end = sample ?? (pauseReported ? lastPauseSample : naturalEnd)
        end = min(end, samplesConsumed)
        end = max(end, regionStartSample + 1)
        regionOpen = false
        runAccepted = false
        pauseReported = false
        lastRegionEndSample = end
        try handler(.ended(sample: end))
    }
}
