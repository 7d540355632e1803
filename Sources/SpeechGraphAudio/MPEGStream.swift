import CMpg123
import Foundation
import SpeechGraphCore

#if canImport(Glibc)
    import Glibc
#endif

/// MPEG audio (MP3, MP2) read as a stream from a file descriptor (`curl ... | speechgraph transcribe -`), with
/// libmpg123's feed mode: bytes go in as they come, nothing is sought. The settings are `MPEGFile`'s (float
/// samples, gapless, quiet, one stream: a change of format ends it).
final class MPEGStream {
    let sampleRate: Int
    let channelCount: Int
    /// Frames the stream's Info (LAME) header announces, when it has one.
    let announcedFrames: Int?
    /// Damage in the stream (a decoding error), with where; set by `forEachChunk`.
    private(set) var failure: String?
    /// `forEachChunk` stopped because its body said so (the graph stopped, a limit was reached), not at the end.
    private(set) var stopped = false
    private var handle: OpaquePointer?
    private let fd: Int32
    private let name: String
    /// The end of the stream was read: nothing more is (a terminal would wait for another Ctrl-D).
    private var atEnd: Bool
    /// Bytes read, after the first ones (the tag and the first frames), before the first frame's format is known:
    /// a stream that holds no MPEG audio within this many more bytes is not taken for one.
    static let searchLimit = 1 << 20

    /// Starts decoding `head` (the bytes already read, from the first frame header or the ID3 tag before it),
    /// reading more from `fd` until the format is known (unless the stream's end was read already: `atEnd`).
    init(fd: Int32, head: ArraySlice<UInt8>, name: String, atEnd: Bool) throws {
        self.fd = fd
        self.name = name
        var ended = atEnd
        let h = try MPEGFile.decoder(for: name)
        handle = h
        guard mpg123_open_feed(h) == MPG123_OK.rawValue else {
            defer { mpg123_delete(h) }
            throw SpeechGraphError("\(name): libmpg123: \(MPEGFile.words(mpg123_strerror(h)))")
        }
        // Bytes fed after `head` (which holds the tag, however large, and the first frames).
        var fed = 0
        var pending = Array(head)
        _ = mpg123_feed(h, pending, pending.count)
        pending = []
        while true {
            if !pending.isEmpty {
                _ = mpg123_feed(h, pending, pending.count)
                fed += pending.count
                pending = []
            }
            var done = 0
            let status = mpg123_read(h, nil, 0, &done)
            if status == MPG123_NEW_FORMAT.rawValue { break }
            let bytes = status == MPG123_NEED_MORE.rawValue && fed < Self.searchLimit ? Self.read(fd, &ended) : nil
            guard let bytes, !bytes.isEmpty else {
                let reason =
                    status == MPG123_NEED_MORE.rawValue
                    ? fed < Self.searchLimit ? "it ends before its first frame" : "no frame in its first MiB"
                    : MPEGFile.words(mpg123_strerror(h))
                mpg123_delete(h)
                handle = nil
                throw SpeechGraphError("\(name): no MPEG audio libmpg123 can read (\(reason))")
            }
            pending = bytes
        }
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        guard mpg123_getformat(h, &rate, &channels, &encoding) == MPG123_OK.rawValue, rate > 0, channels > 0 else {
            mpg123_delete(h)
            handle = nil
            throw SpeechGraphError("\(name): no MPEG audio libmpg123 can read (a frame without a format)")
        }
        sampleRate = rate
        channelCount = Int(channels)
        let length = sg_mpg123_length(h)
        announcedFrames = sg_mpg123_encoder_delay(h) >= 0 && length > 0 ? length : nil
        self.atEnd = ended
    }

    deinit { if let handle { mpg123_delete(handle) } }

    /// Up to 64 KiB from `fd`; empty at the end or on an error (and from then on: `atEnd`).
    private static func read(_ fd: Int32, _ atEnd: inout Bool) -> [UInt8] {
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while !atEnd {
            let n = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n > 0 { return Array(chunk[0..<n]) }
            atEnd = true
        }
        return []
    }

    /// Hands the decoded samples on, interleaved, in chunks while `body` returns true, to the end of the stream or
    /// a change of format (past damage: `failure`); returns the frames handed on.
    @discardableResult
    func forEachChunk(_ body: ([Float]) -> Bool) -> Int {
        guard let handle else { return 0 }
        var out = [Float](repeating: 0, count: 16 * 1024)
        var frames = 0
        // The first damage (where, and libmpg123's reason), and the errors since the last sample.
        var damage: (frames: Int, reason: String)?
        var errors = 0
        defer {
            if let damage {
                let at = String(format: "%.2f", Double(damage.frames) / Double(sampleRate))
                failure =
                    "\(name): the stream is damaged \(at) s into the audio (libmpg123: \(damage.reason)); the audio "
                    + (frames > damage.frames ? "before and after it was read" : "before it was read, none after it")
            }
        }
        while true {
            var done = 0
            let status = out.withUnsafeMutableBytes { mpg123_read(handle, $0.baseAddress, $0.count, &done) }
            let samples = done / MemoryLayout<Float>.size
            if samples > 0 {
                errors = 0
                frames += samples / channelCount
                if !body(Array(out[0..<samples])) {
                    stopped = true
                    return frames
                }
            }
            switch status {
            case MPG123_OK.rawValue: continue
            case MPG123_NEED_MORE.rawValue:
                let bytes = Self.read(fd, &atEnd)
                if bytes.isEmpty { return frames }
                _ = mpg123_feed(handle, bytes, bytes.count)
            case MPG123_NEW_FORMAT.rawValue, MPG123_DONE.rawValue: return frames
            default:
                // Damage: libmpg123 goes on from the next frame it finds after it (as for a file), unless what
                // follows is junk to the end.
                if damage == nil { damage = (frames, MPEGFile.words(mpg123_strerror(handle))) }
                errors += 1
                if errors >= MPEGFile.errorLimit { return frames }
            }
        }
    }
}
