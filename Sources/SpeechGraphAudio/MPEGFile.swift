import CMpg123
import Foundation
import SpeechGraphCore

/// An MPEG audio file (MP3, MP2) read with libmpg123 itself. libsndfile reads MP3 with libmpg123 too, but lets it
/// print its notes on standard error ("Note: Illegal Audio-MPEG-Header ...", "Warning: Xing stream size off ...")
/// around speechgraph's one message. The same decoding as libsndfile's (float samples, gapless, one stream: a
/// change of format mid-file ends it), quiet, and a file that holds less audio than its Info header promises
/// (cut short, or damaged partway: the decoder stops there) is said to be truncated, as a WAV file is.
final class MPEGFile {
    let sampleRate: Int
    let channelCount: Int
    /// Frames there are to read (libmpg123 scans the file for them).
    let frameCount: Int64
    /// Set when the Info header promises more frames than the file holds.
    let truncation: String?
    private var handle: OpaquePointer?
    private let path: String

    /// A name ending .mp3, .mp2 or .mpga.
    static func isNamedMPEG(_ path: String) -> Bool {
        ["mp3", "mp2", "mpga"].contains((path as NSString).pathExtension.lowercased())
    }

    /// How a file starts, as MPEG audio or not.
    enum Start { case frame, header, tag, other }

    /// `frame`: an MPEG frame header, after an ID3v2 tag if there is one; `tag`: an ID3v2 tag and no frame header
    /// after it (a tag can stand before other formats too, a FLAC or a WAV, which libsndfile reads past it);
    /// `header`: a frame header that no frame follows in its place (damaged, or not MPEG by chance: no other format
    /// libsndfile reads starts with an MPEG frame sync).
    static func start(of path: String) -> Start {
        guard let file = FileHandle(forReadingAtPath: path) else { return .other }
        defer { try? file.close() }
        var head = [UInt8]((try? file.read(upToCount: 10)) ?? Data())
        let tag = tagSize(head[...])
        if let tag {
            guard (try? file.seek(toOffset: UInt64(tag))) != nil else { return .tag }
            head = []
        }
        let bytes = head + [UInt8]((try? file.read(upToCount: framesCheckBytes - head.count)) ?? Data())
        if startsWithFrames(bytes[...], complete: bytes.count < framesCheckBytes) { return .frame }
        return tag != nil ? .tag : frameLength(bytes[...]) != nil ? .header : .other
    }

    /// The length of the ID3v2 tag `head` starts with (its 10-byte header, the tag and any footer), nil if it
    /// does not start with one (or has fewer than 10 bytes).
    static func tagSize(_ head: ArraySlice<UInt8>) -> Int? {
        let h = Array(head.prefix(10))
        guard h.count == 10, h[0] == 0x49, h[1] == 0x44, h[2] == 0x33 else { return nil }  // "ID3"
        // The tag's size: four 7-bit bytes; a footer (flag 0x10) adds 10 bytes.
        return h[6...9].reduce(0) { $0 << 7 | Int($1 & 0x7F) } + 10 + (h[5] & 0x10 != 0 ? 10 : 0)
    }

    /// The length in bytes of the MPEG audio frame whose header `bytes` start with, nil if they do not start with
    /// one: frame sync (11 bits), a version (not the reserved 01), a layer (not 00), a bit rate (not free format,
    /// not 1111) and a sample rate (not 11).
    static func frameLength(_ bytes: ArraySlice<UInt8>) -> Int? {
        let b = Array(bytes.prefix(4))
        guard b.count == 4, b[0] == 0xFF, b[1] & 0xE0 == 0xE0 else { return nil }
        let version = Int(b[1] >> 3 & 3)  // 3: MPEG-1, 2: MPEG-2, 0: MPEG-2.5
        let layer = 4 - Int(b[1] >> 1 & 3)  // 1, 2 or 3 (4: reserved)
        let bitrateIndex = Int(b[2] >> 4)
        let rateIndex = Int(b[2] >> 2 & 3)
        guard version != 1, layer != 4, (1...14).contains(bitrateIndex), rateIndex != 3 else { return nil }
        let kbps: [Int]
        switch (version == 3, layer) {
        case (true, 1): kbps = [32, 64, 96, 128, 160, 192, 224, 256, 288, 320, 352, 384, 416, 448]
        case (true, 2): kbps = [32, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384]
        case (true, _): kbps = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320]
        case (false, 1): kbps = [32, 48, 56, 64, 80, 96, 112, 128, 144, 160, 176, 192, 224, 256]
        case (false, _): kbps = [8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160]
        }
        let rate = [44100, 48000, 32000][rateIndex] >> (version == 3 ? 0 : version == 2 ? 1 : 2)
        let bitrate = kbps[bitrateIndex - 1] * 1000
        let padding = Int(b[2] >> 1 & 1)
        if layer == 1 { return (12 * bitrate / rate + padding) * 4 }
        return (layer == 3 && version != 3 ? 72 : 144) * bitrate / rate + padding
    }

    /// Whether `bytes` start with MPEG audio: a frame header, and after the frame it announces, the header of a
    /// next frame of the same version, layer and sample rate (or the end of `bytes`, when `complete`: a file of
    /// one frame). One header alone is 32 bits that raw samples or junk can hold by chance; two in their places
    /// are not.
    static func startsWithFrames(_ bytes: ArraySlice<UInt8>, complete: Bool) -> Bool {
        guard let length = frameLength(bytes) else { return false }
        let next = bytes.dropFirst(length)
        if next.isEmpty { return complete && bytes.count == length }
        guard frameLength(next) != nil else { return false }
        let first = Array(bytes.prefix(3))
        let second = Array(next.prefix(3))
        // The same version and layer, the same sample rate.
        return first[1] & 0xFE == second[1] & 0xFE && first[2] & 0x0C == second[2] & 0x0C
    }

    /// The bytes `startsWithFrames` needs: two frames' headers, the longest frame between them.
    static let framesCheckBytes = 2 * 2881 + 4

    /// A new decoder with the settings libsndfile uses: float samples, gapless, quiet, one stream (a change of
    /// format ends it), no resampling.
    static func decoder(for name: String) throws -> OpaquePointer {
        var status: Int32 = 0
        guard let h = mpg123_new(nil, &status) else {
            throw SpeechGraphError("\(name): libmpg123: \(words(mpg123_plain_strerror(status)))")
        }
        let flags =
            MPG123_QUIET.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_GAPLESS.rawValue
            | MPG123_NO_FRANKENSTEIN.rawValue
        _ = sg_mpg123_param(h, MPG123_ADD_FLAGS, Int(flags))
        _ = sg_mpg123_param(h, MPG123_REMOVE_FLAGS, Int(MPG123_AUTO_RESAMPLE.rawValue))
        return h
    }

    init(path: String) throws {
        self.path = path
        let h = try Self.decoder(for: path)
        handle = h
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        let opened = sg_mpg123_open(h, path)
        let format = opened == MPG123_OK.rawValue ? mpg123_getformat(h, &rate, &channels, &encoding) : opened
        guard format == MPG123_OK.rawValue, rate > 0, channels > 0 else {
            let reason = Self.words(mpg123_strerror(h))
            mpg123_delete(h)
            handle = nil
            // The end before any frame: a tag and nothing else.
            if format == MPG123_DONE.rawValue {
                throw NoAudio(error: SpeechGraphError("\(path): no audio in it", parameter: "path"))
            }
            throw SpeechGraphError("\(path): not an MPEG audio file libmpg123 can read (\(reason))", parameter: "path")
        }
        // One format from start to end, float32 as libsndfile asks for.
        mpg123_format_none(h)
        _ = mpg123_format(h, rate, channels, Int32(MPG123_ENC_FLOAT_32.rawValue))
        let promised = sg_mpg123_encoder_delay(h) >= 0 ? sg_mpg123_length(h) : -1
        // The scan reads every frame header to the end, or to where the decoding will stop too (a resync that
        // fails, a frame cut short): its error code says which.
        _ = mpg123_scan(h)
        let stopped = mpg123_errcode(h)
        let frames = sg_mpg123_length(h)
        sampleRate = rate
        channelCount = Int(channels)
        frameCount = Int64(max(0, frames))
        let seconds = { (n: Int) in String(format: "%.2f", Double(n) / Double(rate)) }
        // The Info header's count is exact (gapless); a frame's worth of difference is rounding, not loss.
        if promised > frames + 1152 {
            truncation =
                "\(path): file is truncated or damaged after \(seconds(frames)) s of audio (its Info header promises "
                + "\(seconds(promised)) s); reading what can be read"
        } else if stopped != MPG123_OK.rawValue {
            truncation =
                "\(path): file is truncated or damaged after \(seconds(frames)) s of audio (libmpg123: "
                + "\(Self.words(mpg123_plain_strerror(stopped)))); reading what can be read"
        } else {
            truncation = nil
        }
        // Read from the start as opened, not sought back to it: a seek leaves the decoder's state a little
        // different (samples differ in their last bits), and the same MP3 from a pipe must give the same samples.
        reopen()
    }

    deinit { close() }

    /// libmpg123's message without its " (code 18)" and full stop: "Error reading the stream".
    static func words(_ message: UnsafePointer<CChar>) -> String {
        var text = String(cString: message)
        if let code = text.range(of: " (code ", options: .backwards) { text = String(text[..<code.lowerBound]) }
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }

    /// MPEG audio without a frame in it (a tag and nothing else): said as it is, not as a format libsndfile does
    /// not know.
    struct NoAudio: Error { var error: SpeechGraphError }

    /// A read that failed after some frames came: thrown by the next read, so that those frames are not lost.
    private var failure: SpeechGraphError?
    /// Decoding errors in a row, without a sample between them; at `errorLimit`, the rest of the file is taken
    /// for junk (`exhausted`).
    private var errors = 0
    private var exhausted = false
    static let errorLimit = 1000

    /// Reads up to `frames` interleaved frames into `buffer`; returns the frames read, 0 at the end.
    func read(into buffer: UnsafeMutablePointer<Float>, frames: Int) throws -> Int {
        guard let handle, !exhausted else { return 0 }
        if let failure { throw failure }
        let frameBytes = channelCount * MemoryLayout<Float>.size
        let wanted = frames * frameBytes
        var got = 0
        while got < wanted {
            var done = 0
            let status = mpg123_read(handle, UnsafeMutableRawPointer(buffer) + got, wanted - got, &done)
            got += done
            if done > 0 { errors = 0 }
            if status == MPG123_DONE.rawValue { break }
            // The damage the scan found, and said in `truncation`: libmpg123 goes on from the next frame it finds
            // after it, so that the audio after the damage is read too.
            if status != MPG123_OK.rawValue && truncation != nil {
                errors += 1
                if errors < Self.errorLimit { continue }
                exhausted = true
                break
            }
            if status != MPG123_OK.rawValue {
                let error = SpeechGraphError("\(path): read error (\(Self.words(mpg123_strerror(handle))))")
                guard got >= frameBytes else { throw error }
                failure = error
                break
            }
        }
        return got / frameBytes
    }

    func rewind() {
        reopen()
        failure = nil
        errors = 0
        exhausted = false
    }

    /// Opens the file again from its start (the format settings stay).
    private func reopen() {
        guard let handle else { return }
        mpg123_close(handle)
        var rate = 0
        var channels: Int32 = 0
        var encoding: Int32 = 0
        if sg_mpg123_open(handle, path) == MPG123_OK.rawValue {
            _ = mpg123_getformat(handle, &rate, &channels, &encoding)
        }
    }

    func close() {
        if let handle { mpg123_delete(handle) }
        handle = nil
    }
}
