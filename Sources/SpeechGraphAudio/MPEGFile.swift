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

    /// Whether the file starts as MPEG audio does, as libsndfile takes it: an ID3v2 tag or an MPEG frame header.
    static func startsLikeMPEG(_ path: String) -> Bool {
        guard let file = FileHandle(forReadingAtPath: path) else { return false }
        defer { try? file.close() }
        let head = [UInt8]((try? file.read(upToCount: 4)) ?? Data())
        guard head.count == 4 else { return false }
        if head[0] == 0x49 && head[1] == 0x44 && head[2] == 0x33 { return true }  // "ID3"
        // Frame sync (11 bits), a layer (not 00), a bit rate (not 1111) and a sample rate (not 11).
        return head[0] == 0xFF && head[1] & 0xE0 == 0xE0 && head[1] & 0x06 != 0 && head[2] & 0xF0 != 0xF0
            && head[2] & 0x0C != 0x0C
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
        guard sg_mpg123_open(h, path) == MPG123_OK.rawValue,
            mpg123_getformat(h, &rate, &channels, &encoding) == MPG123_OK.rawValue, rate > 0, channels > 0
        else {
            let reason = String(cString: mpg123_strerror(h))
            mpg123_delete(h)
            handle = nil
            throw SpeechGraphError("\(path): not an MPEG audio file libmpg123 can read (\(reason))", parameter: "path")
        }
        // One format from start to end, float32 as libsndfile asks for.
        mpg123_format_none(h)
        _ = mpg123_format(h, rate, channels, Int32(MPG123_ENC_FLOAT_32.rawValue))
        let promised = sg_mpg123_encoder_delay(h) >= 0 ? sg_mpg123_length(h) : -1
        _ = mpg123_scan(h)
        let frames = sg_mpg123_length(h)
        sampleRate = rate
        channelCount = Int(channels)
        frameCount = Int64(max(0, frames))
        // The Info header's count is exact (gapless); a frame's worth of difference is rounding, not loss.
        if promised > frames + 1152 {
            let seconds = { (n: Int) in String(format: "%.2f", Double(n) / Double(rate)) }
            truncation =
                "\(path): file is truncated or damaged (its Info header promises \(seconds(promised)) s of audio, "
                + "\(seconds(frames)) s can be read); reading the \(seconds(frames)) s that are there"
        } else {
            truncation = nil
        }
    }

    deinit { close() }

    /// Reads up to `frames` interleaved frames into `buffer`; returns the frames read, 0 at the end.
    func read(into buffer: UnsafeMutablePointer<Float>, frames: Int) throws -> Int {
        guard let handle else { return 0 }
        let wanted = frames * channelCount * MemoryLayout<Float>.size
        var got = 0
        while got < wanted {
            var done = 0
            let status = mpg123_read(handle, UnsafeMutableRawPointer(buffer) + got, wanted - got, &done)
            got += done
            if status == MPG123_DONE.rawValue { break }
            if status != MPG123_OK.rawValue {
                throw SpeechGraphError("\(path): read error (\(String(cString: mpg123_strerror(handle))))")
            }
        }
        return got / (channelCount * MemoryLayout<Float>.size)
    }

    func rewind() {
        if let handle { _ = sg_mpg123_seek(handle, 0) }
    }

    func close() {
        if let handle { mpg123_delete(handle) }
        handle = nil
    }
}
