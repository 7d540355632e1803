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
    enum Start { case frame, tag, other }

    /// `frame`: an MPEG frame header, after an ID3v2 tag if there is one; `tag`: an ID3v2 tag and no frame header
    /// after it (a tag can stand before other formats too, a FLAC or a WAV, which libsndfile reads past it).
    static func start(of path: String) -> Start {
        guard let file = FileHandle(forReadingAtPath: path) else { return .other }
        defer { try? file.close() }
        var head = [UInt8]((try? file.read(upToCount: 10)) ?? Data())
        var tagged = false
        if head.count == 10 && head[0] == 0x49 && head[1] == 0x44 && head[2] == 0x33 {  // "ID3"
            // The tag's size: four 7-bit bytes, after its 10-byte header; a footer (flag 0x10) adds 10 more.
            let size = head[6...9].reduce(0) { $0 << 7 | UInt64($1 & 0x7F) } + 10 + (head[5] & 0x10 != 0 ? 10 : 0)
            tagged = true
            head = (try? file.seek(toOffset: size)) != nil ? [UInt8]((try? file.read(upToCount: 4)) ?? Data()) : []
        }
        // Frame sync (11 bits), a layer (not 00), a bit rate (not 1111) and a sample rate (not 11).
        let frame =
            head.count >= 4 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0 && head[1] & 0x06 != 0
            && head[2] & 0xF0 != 0xF0 && head[2] & 0x0C != 0x0C
        return frame ? .frame : tagged ? .tag : .other
    }

    init(path: String) throws {
        self.path = path
        var status: Int32 = 0
        guard let h = mpg123_new(nil, &status) else {
            throw SpeechGraphError("\(path): libmpg123: \(String(cString: mpg123_plain_strerror(status)))")
        }
        handle = h
        let flags =
            MPG123_QUIET.rawValue | MPG123_FORCE_FLOAT.rawValue | MPG123_GAPLESS.rawValue
            | MPG123_NO_FRANKENSTEIN.rawValue
        _ = sg_mpg123_param(h, MPG123_ADD_FLAGS, Int(flags))
        _ = sg_mpg123_param(h, MPG123_REMOVE_FLAGS, Int(MPG123_AUTO_RESAMPLE.rawValue))
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
                "\(path): file is truncated or damaged (its Info header promises \(seconds(promised)) s of audio, "
                + "\(seconds(frames)) s can be read); reading the \(seconds(frames)) s that are there"
        } else if stopped != MPG123_OK.rawValue {
            truncation =
                "\(path): file is truncated or damaged (libmpg123: \(Self.words(mpg123_plain_strerror(stopped))));"
                + " reading the \(seconds(frames)) s of audio it holds"
        } else {
            truncation = nil
        }
    }

    deinit { close() }

    /// libmpg123's message without its " (code 18)" and full stop: "Error reading the stream".
    private static func words(_ message: UnsafePointer<CChar>) -> String {
        var text = String(cString: message)
        if let code = text.range(of: " (code ", options: .backwards) { text = String(text[..<code.lowerBound]) }
        return text.hasSuffix(".") ? String(text.dropLast()) : text
    }

    /// MPEG audio without a frame in it (a tag and nothing else): said as it is, not as a format libsndfile does
    /// not know.
    struct NoAudio: Error { var error: SpeechGraphError }

    /// A read that failed after some frames came: thrown by the next read, so that those frames are not lost.
    private var failure: SpeechGraphError?

    /// Reads up to `frames` interleaved frames into `buffer`; returns the frames read, 0 at the end.
    func read(into buffer: UnsafeMutablePointer<Float>, frames: Int) throws -> Int {
        guard let handle else { return 0 }
        if let failure { throw failure }
        let frameBytes = channelCount * MemoryLayout<Float>.size
        let wanted = frames * frameBytes
        var got = 0
        while got < wanted {
            var done = 0
            let status = mpg123_read(handle, UnsafeMutableRawPointer(buffer) + got, wanted - got, &done)
            got += done
            if status == MPG123_DONE.rawValue { break }
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
        if let handle { _ = sg_mpg123_seek(handle, 0) }
        failure = nil
    }

    func close() {
        if let handle { mpg123_delete(handle) }
        handle = nil
    }
}
