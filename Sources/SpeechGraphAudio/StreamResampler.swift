import CSoxr

/// A rate converter for code that holds its audio in arrays (the Swift API's analyzer, when a buffer comes at
/// another rate than the first): libsoxr's high quality recipe, interleaved float samples, its state kept from one
/// call to the next. Graphs convert with the `resample` node instead.
public final class StreamResampler {
    public let inputRate: Double
    public let outputRate: Double
    public let channels: Int
    private let soxr: soxr_t

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    public init(from inputRate: Double, to outputRate: Double, channels: Int) throws {
        (self.inputRate, self.outputRate, self.channels) = (inputRate, outputRate, channels)
        var quality = soxr_quality_spec(UInt(SOXR_HQ), 0)
        var io = soxr_io_spec(SOXR_FLOAT32_I, SOXR_FLOAT32_I)
        var error: soxr_error_t?
        guard let s = soxr_create(inputRate, outputRate, UInt32(channels), &error, &io, &quality, nil), error == nil
        else {
            throw Failure(description: "libsoxr: \(error.map { String(cString: $0) } ?? "cannot create a resampler")")
        }
        soxr = s
    }

    deinit { soxr_delete(soxr) }

    /// The samples (interleaved, `channels` a frame) at the output rate, as far as the filter's delay lets out.
    public func process(_ samples: [Float]) throws -> [Float] {
        let frames = samples.count / channels
        let capacity = Int((Double(frames) * outputRate / inputRate).rounded(.up)) + 64
        var out = [Float](repeating: 0, count: capacity * channels)
        var consumed = 0
        var made = 0
        while consumed < frames {
            var done = 0
            var got = 0
            let error = samples.withUnsafeBufferPointer { input in
                out.withUnsafeMutableBufferPointer { output in
                    soxr_process(
                        soxr, input.baseAddress! + consumed * channels, frames - consumed, &done,
                        output.baseAddress! + made * channels, capacity - made, &got)
                }
            }
            if let error { throw Failure(description: "libsoxr: \(String(cString: error))") }
            consumed += done
            made += got
            if done == 0 && got == 0 { break }
        }
        return Array(out[0..<(made * channels)])
    }
}
