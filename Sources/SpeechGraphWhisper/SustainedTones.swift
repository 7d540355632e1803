import Foundation

/// Sustained tones (music, a chord, a beep, a hum) that a vad took for speech, told from speech by how still their
/// spectrum holds: speech changes its spectrum every few tens of milliseconds (each phone, each pitch glide), a held
/// tone keeps it for hundreds. Whisper packs (`window: packed`) leave such an utterance out and read it alone, where
/// Whisper's own no-speech signals keep it silent: in a pack of tones, each tone the context of the next, Whisper
/// writes words (docs/whisper.md).
///
/// The measure: the audio in 32 ms frames every 20 ms, each frame's magnitude spectrum from 62.5 Hz to 4 kHz; of
/// the frames within 30 dB of the loudest, the share whose spectrum 60 ms later is nearly the same (cosine
/// similarity above 0.9). On our development sets (AN4's training part, clean, white noise at 15 dB, pink at 14 dB,
/// cut by the vad) no utterance's share was above 0.68 (the median 0.15); on the noise set's tones
/// (scripts/make-noise-set.sh) none was below 0.94.
public enum SustainedTones {
    /// Whisper's rate.
    static let sampleRate = 16000
    /// A frame (32 ms), the hop between frames (20 ms), and the frames between the two compared (60 ms).
    static let frame = 512
    static let hop = 320
    static let lag = 3
    /// The spectrum's bins compared: 62.5 Hz to 4 kHz.
    static let bins = 2..<128
    /// Frames quieter than the loudest by more than this (30 dB) are not compared.
    static let floor: Float = 1e-3
    /// Two spectra this similar (cosine) are the same sound held.
    static let similar: Float = 0.9
    /// An utterance with at least this share of its frames held is tones.
    public static let heldShare = 0.8

    /// Whether the audio (16 kHz) is sustained tones rather than speech: too short to tell is not.
    public static func hold(_ samples: [Int16]) -> Bool { (share(samples) ?? 0) >= heldShare }

    /// The share of the audio's frames (those within 30 dB of the loudest) whose spectrum holds 60 ms later; nil
    /// when the audio is too short to compare any (under 0.1 s).
    public static func share(_ samples: [Int16]) -> Double? {
        let count = samples.count < frame ? 0 : (samples.count - frame) / hop + 1
        guard count > lag else { return nil }
        let width = bins.count
        var spectra = [Float](repeating: 0, count: count * width)
        var energy = [Float](repeating: 0, count: count)
        var fft = FFT512()
        samples.withUnsafeBufferPointer { audio in
            for f in 0..<count {
                let e = fft.magnitudes(of: audio, from: f * hop, bins: bins) { bin, magnitude in
                    spectra[f * width + bin] = magnitude
                }
                energy[f] = e
            }
        }
        let loudest = energy.max() ?? 0
        guard loudest > 0 else { return nil }
        // Each frame's spectrum to unit length, so that the dot product of two is their cosine.
        for f in 0..<count where energy[f] > 0 {
            let scale = 1 / energy[f].squareRoot()
            for b in 0..<width { spectra[f * width + b] *= scale }
        }
        var compared = 0
        var held = 0
        for f in 0..<(count - lag) where energy[f] > loudest * floor && energy[f + lag] > loudest * floor {
            var dot: Float = 0
            for b in 0..<width { dot += spectra[f * width + b] * spectra[(f + lag) * width + b] }
            compared += 1
            if dot > similar { held += 1 }
        }
        return compared == 0 ? nil : Double(held) / Double(compared)
    }
}

/// A 512-point FFT of Hann-windowed real frames (radix 2, in place), with its tables made once per measure.
struct FFT512 {
    static let size = 512
    private var re = [Float](repeating: 0, count: size)
    private var im = [Float](repeating: 0, count: size)
    private let window: [Float]
    private let cosines: [Float]
    private let sines: [Float]
    private let reversed: [Int]

    init() {
        let n = Self.size
        window = (0..<n).map { 0.5 - 0.5 * Float(cos(2 * Double.pi * Double($0) / Double(n))) }
        cosines = (0..<(n / 2)).map { Float(cos(-2 * Double.pi * Double($0) / Double(n))) }
        sines = (0..<(n / 2)).map { Float(sin(-2 * Double.pi * Double($0) / Double(n))) }
        let bits = n.trailingZeroBitCount
        reversed = (0..<n).map { i in
            var r = 0
            for b in 0..<bits where i & (1 << b) != 0 { r |= 1 << (bits - 1 - b) }
            return r
        }
    }

    /// The magnitudes of `bins` of the frame at `start`, each to `store(bin - bins.lowerBound, magnitude)`; returns
    /// the frame's energy in those bins (the sum of the squared magnitudes).
    mutating func magnitudes(
        of audio: UnsafeBufferPointer<Int16>, from start: Int, bins: Range<Int>, store: (Int, Float) -> Void
    ) -> Float {
        let n = Self.size
        for i in 0..<n {
            re[reversed[i]] = Float(audio[start + i]) * window[i] / 32768
            im[reversed[i]] = 0
        }
        var length = 2
        while length <= n {
            let half = length / 2
            let step = n / length
            var base = 0
            while base < n {
                for k in 0..<half {
                    let (c, s) = (cosines[k * step], sines[k * step])
                    let (a, b) = (base + k, base + k + half)
                    let tr = re[b] * c - im[b] * s
                    let ti = re[b] * s + im[b] * c
                    re[b] = re[a] - tr
                    im[b] = im[a] - ti
                    re[a] += tr
                    im[a] += ti
                }
                base += length
            }
            length *= 2
        }
        var energy: Float = 0
        for bin in bins {
            let power = re[bin] * re[bin] + im[bin] * im[bin]
            energy += power
            store(bin - bins.lowerBound, power.squareRoot())
        }
        return energy
    }
}
