import CSndFile
import Foundation
import SpeechGraphCore

/// An audio file opened with libsndfile (WAV, FLAC, Ogg/Vorbis, AIFF, ... at any rate and channel count), or
/// with libmpg123 for MPEG audio (MP3: `MPEGFile`), read as float32. Every way a file can be unreadable becomes a
/// `SpeechGraphError` naming the file.
public final class AudioFile {
    public let path: String
    public let sampleRate: Int
    public let channelCount: Int
    /// Frames the header promises.
    public let frameCount: Int64
    /// Set when the file holds less audio than its header says.
    public let truncation: String?
    private var handle: OpaquePointer?
    /// Set for MPEG audio, read with libmpg123 (`handle` is then nil).
    private var mpeg: MPEGFile?

    public init(path: String) throws {
        self.path = path
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else {
            // A directory on the way that cannot be searched hides the file: say so, not "no such file".
            var info = stat()
            let reason = stat(path, &info) != 0 && errno != ENOENT ? String(cString: strerror(errno)) : "no such file"
            throw SpeechGraphError("\(path): \(reason.prefix(1).lowercased() + reason.dropFirst())", parameter: "path")
        }
        if isDir.boolValue { throw SpeechGraphError("\(path): is a directory, not an audio file", parameter: "path") }
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw SpeechGraphError("\(path): permission denied", parameter: "path")
        }
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        // A pipe, a FIFO, /dev/stdin: no size to check, no frame count to trust.
        let isStream = (attributes?[.type] as? FileAttributeType) != .typeRegular
        if !isStream && (attributes?[.size] as? Int) == 0 {
            throw SpeechGraphError("\(path): empty file, no audio in it", parameter: "path")
        }
        var info = SF_INFO()
        var opened: OpaquePointer?
        var m: MPEGFile?
        let start = isStream ? .other : MPEGFile.start(of: path)
        if start == .frame || start == .header {
            // Read by libmpg123 itself, quiet: libsndfile would take it by its frame sync and let libmpg123 print its
            // notes on standard error ("Illegal Audio-MPEG-Header ... Trying to resync...").
            do { m = try MPEGFile(path: path) } catch let error as MPEGFile.NoAudio { throw error.error }
        } else if !isStream && MPEGFile.isNamedMPEG(path) {
            // Named as MPEG, not starting as MPEG: libsndfile opens it by its contents only (a WAV called .mp3; by
            // its name, libsndfile would hand it to libmpg123, which prints its notes on standard error), and
            // libmpg123 what libsndfile does not know (an MP3 with junk before its first frame; a tag alone).
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                throw SpeechGraphError("\(path): \(String(cString: strerror(errno)).lowercased())", parameter: "path")
            }
            opened = sf_open_fd(fd, Int32(SFM_READ), &info, 1)
            if opened == nil {
                do {
                    m = try MPEGFile(path: path)
                } catch let error as MPEGFile.NoAudio where start == .tag {
                    throw error.error
                } catch {}
            }
        } else {
            opened = sf_open(path, Int32(SFM_READ), &info)
        }
        if let m {
            if let problem = AudioFormat.rateProblem(m.sampleRate) {
                throw SpeechGraphError("\(path): \(problem)", parameter: "path")
            }
            if m.frameCount == 0 { throw SpeechGraphError("\(path): no audio in it", parameter: "path") }
            mpeg = m
            sampleRate = m.sampleRate
            channelCount = m.channelCount
            frameCount = m.frameCount
            truncation = m.truncation
            return
        }
        guard let h = opened else {
            var reason = String(cString: sf_strerror(nil))
            // libsndfile says this of a regular file whose format it does not recognise (a damaged MP3, say).
            if !isStream && reason.hasPrefix("File does not exist") { reason = "a format it does not know, or damaged" }
            // Its words for a header that gives no sample rate or no channels (a WAV that says 0 Hz).
            if reason.contains("SF_INFO struct incomplete") { reason = "its header gives no sample rate or channels" }
            throw SpeechGraphError("\(path): not an audio file libsndfile can read (\(reason))", parameter: "path")
        }
        handle = h
        guard info.samplerate > 0, info.channels > 0 else {
            sf_close(h)
            handle = nil
            throw SpeechGraphError(
                "\(path): invalid header (rate \(info.samplerate), \(info.channels) channels)", parameter: "path")
        }
        if let problem = AudioFormat.rateProblem(Int(info.samplerate)) {
            sf_close(h)
            handle = nil
            throw SpeechGraphError("\(path): \(problem)", parameter: "path")
        }
        if info.frames == 0 && !isStream {
            sf_close(h)
            handle = nil
            throw SpeechGraphError("\(path): no audio in it (a header without samples)", parameter: "path")
        }
        sampleRate = Int(info.samplerate)
        channelCount = Int(info.channels)
        frameCount = info.frames
        // libsndfile notes a header that promises more data than the file holds in its log.
        var log = [CChar](repeating: 0, count: 4096)
        _ = sf_command(h, Int32(SFC_GET_LOG_INFO), &log, Int32(log.count))
        let text = String(cString: log)
        if text.contains("should be") || text.lowercased().contains("truncated") || text.contains("too big") {
            let seconds = String(format: "%.2f", Double(frameCount) / Double(sampleRate))
            truncation =
                "\(path): file is truncated (its header promises more audio than it holds); reading the \(seconds) s "
                + "that are there"
        } else {
            truncation = nil
        }
    }

    deinit { close() }

    /// Reads up to `frames` interleaved frames into `buffer`; returns the frames read, 0 at the end.
    public func read(into buffer: UnsafeMutablePointer<Float>, frames: Int) throws -> Int {
        if let mpeg { return try mpeg.read(into: buffer, frames: frames) }
        guard let handle else { return 0 }
        let n = sf_readf_float(handle, buffer, sf_count_t(frames))
        if n < 0 || (n == 0 && sf_error(handle) != 0) {
            // libsndfile's words, without its "Error : " and full stop: "flac decoder lost sync".
            var reason = String(cString: sf_strerror(handle))
            if reason.hasPrefix("Error : ") { reason.removeFirst("Error : ".count) }
            if reason.hasSuffix(".") { reason.removeLast() }
            throw SpeechGraphError("\(path): read error (\(reason))")
        }
        return Int(n)
    }

    /// The rest of the file's samples (all of them, from the start), interleaved.
    public func readAll() throws -> [Float] {
        var samples = [Float](repeating: 0, count: Int(frameCount) * channelCount)
        let n = try samples.withUnsafeMutableBufferPointer { try read(into: $0.baseAddress!, frames: Int(frameCount)) }
        samples.removeLast(samples.count - n * channelCount)
        return samples
    }

    public func rewind() {
        if let handle { _ = sf_seek(handle, 0, SEEK_SET) }
        mpeg?.rewind()
    }

    public func close() {
        if let handle { sf_close(handle) }
        handle = nil
        mpeg?.close()
    }
}
