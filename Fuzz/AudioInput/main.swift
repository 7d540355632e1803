// libFuzzer target over the audio that programs hand speechgraph: any bytes as an audio file (libsndfile
// through AudioFile, as file.input reads it) and as a WAV or MP3 stream on standard input (AudioStreamReader, as
// `speechgraph transcribe -` reads it). Either gives samples or a clear error, never a trap; what reaches
// the graph is cleaned of samples that are not numbers. `make fuzz` runs it.
import Foundation
import FuzzSupport
import SpeechGraph

#if canImport(Glibc)
    import Glibc
#endif

private let path = FileManager.default.temporaryDirectory
    .appendingPathComponent("speechgraph-fuzz-\(getpid()).bin").path

func fuzzAudioInput(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    guard let data else { return 0 }
    let fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0o600)
    guard fd >= 0 else { return 0 }
    defer { close(fd) }
    guard write(fd, data, size) == size else { return 0 }

    // As a file.
    if let file = try? AudioFile(path: path) {
        var guard_ = SampleGuard()
        let frames = 4096
        let buffer = UnsafeMutableBufferPointer<Float>.allocate(capacity: frames * file.channelCount)
        defer { buffer.deallocate() }
        var total = 0
        // At most a minute of audio: a header may promise far more than the bytes hold.
        while total < 60 * file.sampleRate, let n = try? file.read(into: buffer.baseAddress!, frames: frames), n > 0 {
            let samples = UnsafeMutableBufferPointer(rebasing: buffer[0..<(n * file.channelCount)])
            guard_.clean(samples, channels: file.channelCount)
            precondition(samples.allSatisfy { $0.isFinite }, "a sample that is not a number got through")
            total += n
        }
    }

    // As a stream, WAV and raw.
    for rate in [nil, 16000] as [Int?] {
        lseek(fd, 0, SEEK_SET)
        if let stream = try? AudioStreamReader(rate: rate, channels: 2, fd: fd) {
            precondition(AudioFormat.supportedRates.contains(stream.sampleRate), "a rate outside the range")
            var samples = stream.readAll(limit: 1 << 20)
            var guard_ = SampleGuard()
            samples.withUnsafeMutableBufferPointer { _ = guard_.clean($0, channels: stream.channelCount) }
            precondition(samples.allSatisfy { $0.isFinite })
        }
    }
    return 0
}

runFuzzer { fuzzAudioInput($0, $1) }
