import CSoxr
import SpeechGraphCore

/// A rate converter for code that holds its audio in arrays (the Swift API's analyzer, when a buffer comes at
/// another rate than the first): libsoxr's high quality recipe, interleaved float samples, its state kept from one
/// call to the next. Graphs convert with the `resample` node instead.
public final class StreamResampler {
    public let inputRate: Double
    public let outputRate: Double
    public let channels: Int
    private let soxr: soxr_t

    public init(from inputRate: Double, to outputRate: Double, channels: Int) throws {
        (self.inputRate, self.outputRate, self.channels) = (inputRate, outputRate, channels)
        soxr = try makeSoxr(from: inputRate, to: outputRate, channels: channels, recipe: UInt(SOXR_HQ))
    }

    deinit { soxr_delete(soxr) }

    /// The samples (interleaved, `channels` a frame) at the output rate, as far as the filter's delay lets out.
    public func process(_ samples: [Float]) throws -> [Float] {
        let frames = samples.count / channels
        var out: [Float] = []
        out.reserveCapacity(Int((Double(frames) * outputRate / inputRate).rounded(.up) + 64) * channels)
        var chunk = [Float](repeating: 0, count: 4096 * channels)
        var consumed = 0
        while consumed < frames {
            var done = 0
            var made = 0
            let error = samples.withUnsafeBufferPointer { input in
                chunk.withUnsafeMutableBufferPointer { output in
                    soxr_process(
                        soxr, input.baseAddress! + consumed * channels, frames - consumed, &done, output.baseAddress,
                        4096, &made)
                }
            }
            if let error { throw SpeechGraphError("libsoxr: \(String(cString: error))") }
            consumed += done
            out += chunk[0..<(made * channels)]
            if done == 0 && made == 0 { break }
        }
        return out
    }

    /// What the filter still holds (its delay's worth), at the end of the input.
    public func flush() throws -> [Float] {
        var out: [Float] = []
        var chunk = [Float](repeating: 0, count: 4096 * channels)
        while true {
            var made = 0
            let error = chunk.withUnsafeMutableBufferPointer { output in
                soxr_process(soxr, nil, 0, nil, output.baseAddress, 4096, &made)
            }
            if let error { throw SpeechGraphError("libsoxr: \(String(cString: error))") }
            if made == 0 { break }
            out += chunk[0..<(made * channels)]
        }
        return out
    }
}

/// A libsoxr resampler of interleaved float samples with this quality recipe (`SOXR_HQ`...): the `resample` node's and
/// `StreamResampler`'s.
func makeSoxr(from inputRate: Double, to outputRate: Double, channels: Int, recipe: UInt) throws -> soxr_t {
    var quality = soxr_quality_spec(recipe, 0)
    var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
    var error: soxr_error_t?
    guard let s = soxr_create(inputRate, outputRate, UInt32(channels), &error, &io, &quality, nil), error == nil else {
        throw SpeechGraphError("libsoxr: \(error.map { String(cString: $0) } ?? "cannot create a resampler")")
    }
    return s
}
