/// Keeps samples that are not numbers out of the graph. Any program can hand speechgraph such samples: a
/// float WAV file holding NaN or infinity, any JACK client connected to our port, an app pushing audio.
/// One NaN would trap the conversion to 16-bit samples, spread through a resampler's filter, and stall a
/// voice activity detector's noise estimate for seconds. The sources (file.input, jack.input, push.input)
/// clean what they read before any node sees it: a NaN or infinite sample is concealed (it fades to silence)
/// and counted, a finite one larger than `limit` is clamped, and the first time a source replaces samples it
/// says so once (a `warning` event where it has an event port, and a warning when the run ends).
public struct SampleGuard: Sendable {
    /// The largest magnitude passed on: far above full scale (1.0), low enough that energies stay finite.
    public static let limit: Float = 65536

    /// How many samples were not numbers, since the start.
    public private(set) var replaced = 0
    private var warned = false
    /// The frame, within the block being cleaned, of the first sample ever replaced (in the block that had it).
    private var firstBadFrame = 0
    /// The last sample cleaned (mono streams conceal a bad first sample with it).
    private var last: Float = 0

    public init() {}

    /// A sample as the graph may carry it: 0 for NaN or infinity, clamped to ±`limit`.
    @inline(__always)
    public static func clean(_ x: Float) -> Float {
        guard x.isFinite else { return 0 }
        return x > limit ? limit : x < -limit ? -limit : x
    }

    /// Cleans `samples` (interleaved, `channels` per frame) in place; returns how many were not numbers.
    /// A sample that is not a number takes the value of the one before it on its channel, times 0.99: a
    /// lone bad sample is concealed (a zero, or even half the value before, in the middle of speech is a
    /// click that changes what the recognizer hears), and a run of them fades out to silence (1% within
    /// 460 samples). Allocates nothing.
    @discardableResult
    public mutating func clean(_ samples: UnsafeMutableBufferPointer<Float>, channels: Int = 1) -> Int {
        var bad = 0
        for i in samples.indices {
            let x = samples[i]
            if !x.isFinite {
                if replaced == 0 && bad == 0 { firstBadFrame = i / max(channels, 1) }
                let before = i >= channels ? samples[i - channels] : channels == 1 ? last : 0
                samples[i] = before * 0.99
                bad += 1
            } else if x > Self.limit || x < -Self.limit {
                samples[i] = x > 0 ? Self.limit : -Self.limit
            }
        }
        if let final = samples.last { last = final }
        replaced += bad
        return bad
    }

    /// What happened, for the warnings at the end of a run; `nil` when every sample was a number.
    public var warning: String? {
        guard replaced > 0 else { return nil }
        let was = replaced == 1 ? "was" : "were"
        return
            "\(replaced) sample\(replaced == 1 ? "" : "s") \(was) not a number (NaN or infinite) and \(was) faded out "
            + "to silence"
    }

    /// The `warning` event, the first time samples were replaced; `nil` after that. Called after `clean` with the
    /// block that had them: `time` gives the audio time of a frame of that block (the first replaced is where the
    /// event is).
    public mutating func firstWarning(node: String, time: (_ frame: Int) -> Double) -> GraphEvent? {
        guard replaced > 0, !warned else { return nil }
        warned = true
        return .warning(
            node: node, time: time(firstBadFrame),
            reason: "samples that are not numbers (NaN or infinite), faded out to silence")
    }
}
