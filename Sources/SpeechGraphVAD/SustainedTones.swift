import CFFTW
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
        // FFTW, as the detector uses it (its plans made and destroyed under the same lock).
        let input = fftwf_alloc_real(frame)!
        let output = fftwf_alloc_complex(frame / 2 + 1)!
        let plan = VoiceActivityDetector.makePlan(frame, input, output)
        defer {
            let address = UInt(bitPattern: plan)
            fftwPlanner.withLock { _ in fftwf_destroy_plan(OpaquePointer(bitPattern: address)) }
            fftwf_free(input)
            fftwf_free(output)
        }
        let window = (0..<frame).map { 0.5 - 0.5 * Float(cos(2 * Double.pi * Double($0) / Double(frame))) }
        for f in 0..<count {
            for i in 0..<frame { input[i] = Float(samples[f * hop + i]) * window[i] / 32768 }
            fftwf_execute(plan)
            var e: Float = 0
            for (b, bin) in bins.enumerated() {
                let (re, im) = (output[bin].0, output[bin].1)
                let power = re * re + im * im
                e += power
                spectra[f * width + b] = power.squareRoot()
            }
            energy[f] = e
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
