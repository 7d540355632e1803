import Foundation
import SpeechGraphCore

#if canImport(Glibc)
    import Glibc
#endif

/// Audio read as a stream from a file descriptor (`speechgraph transcribe -`, a FIFO): a WAV stream (any
/// length, also one whose header gives no length, as `arecord` and `sox ... -t wav -` write to a pipe), an MP3
/// or MP2 stream (`curl -s URL | speechgraph transcribe -`, decoded by libmpg123), or raw signed 16-bit
/// little-endian samples when a rate is given.
public final class AudioStreamReader: @unchecked Sendable {
    // @unchecked: the header and the first buffered bytes are read on the calling thread before the feeder
    // thread starts; from then on only the feeder thread reads the stream and `pending`.
    enum Encoding {
        case int(bits: Int)
        case float32
        /// G.711, 8 bits a sample (telephony: `arecord -f MU_LAW`, `sox -e u-law`).
        case muLaw, aLaw
    }

    public let sampleRate: Int
    public let channelCount: Int
    private let encoding: Encoding
    /// Bytes of audio the header announces, when it does (not 0 and not the 0xFFFFFFFF of a stream).
    let dataBytes: Int?
    /// Bytes read past the header.
    private var pending: [UInt8]
    /// Set for MPEG audio, which libmpg123 decodes (`encoding` and `pending` are then unused).
    private let mpeg: MPEGStream?
    /// Why the stream ended early (a decoding error), once it has been read.
    private(set) var failure: String?

    public struct Failure: Error, CustomStringConvertible { public var description: String }

    /// Where the stream is read: standard input (0), or a FIFO or device named on the command line.
    private let fd: Int32
    /// What errors and warnings call the stream.
    private let name: String
    /// The end of the stream was read while reading its header: nothing more is read (a terminal would wait for
    /// another Ctrl-D).
    private var atEnd = false

    /// Reads the WAV header (or takes `rate` and `channels` for raw samples) from `fd`; errors name the stream
    /// `name`, and a stream that is neither WAV nor MPEG says `rawHint` (how raw samples are given to the program).
    public init(
        rate: Int?, channels: Int, fd: Int32 = 0, name: String = "standard input",
        rawHint: String = "for raw signed 16-bit samples give --rate"
    ) throws {
        self.fd = fd
        self.name = name
        var buffer = [UInt8]()
        var ended = false
        func fill(_ count: Int) -> Bool {
            while buffer.count < count {
                if ended { return false }
                // At most 1 MiB a read: a large tag from a pipe that gives 4 KiB at a time is not zeroed over and
                // over.
                var chunk = [UInt8](repeating: 0, count: min(max(4096, count - buffer.count), 1 << 20))
                let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
                if n < 0 && errno == EINTR { continue }
                if n <= 0 {
                    ended = true
                    return false
                }
                buffer += chunk[0..<n]
            }
            return true
        }
        func u32(_ at: Int) -> Int {
            Int(buffer[at]) | Int(buffer[at + 1]) << 8 | Int(buffer[at + 2]) << 16 | Int(buffer[at + 3]) << 24
        }
        func u16(_ at: Int) -> Int { Int(buffer[at]) | Int(buffer[at + 1]) << 8 }

        if let rate {
            mpeg = nil
            sampleRate = rate
            channelCount = channels
            encoding = .int(bits: 16)
            // A regular file's size is known: its duration too (a pipe's is not).
            var info = stat()
            let size = fstat(fd, &info) == 0 && info.st_mode & S_IFMT == S_IFREG ? Int(info.st_size) : nil
            dataBytes = size.map { $0 - Int(lseek(fd, 0, SEEK_CUR)) }.flatMap { $0 > 0 ? $0 : nil }
            // As a WAV stream: nothing at all is an error, not an empty transcript.
            guard fill(1) else { throw Failure(description: "\(name) is empty") }
            // A WAV read as raw samples would be noise at the wrong rate, with no word of it (arecord writes WAV
            // unless told '-t raw').
            if fill(12), buffer[0..<4] == [0x52, 0x49, 0x46, 0x46], buffer[8..<12] == [0x57, 0x41, 0x56, 0x45] {
                throw Failure(
                    description: "\(name) is WAV audio, not raw samples: leave out --rate (its header gives the "
                        + "rate), or send raw audio ('arecord -t raw')")
            }
            pending = buffer
            atEnd = ended
            return
        }
        // An ID3 tag (MP3 files start with one; one may stand before a WAV too), then the first frame of MPEG
        // audio, or a WAV header.
        var tag = 0
        if fill(10), let size = MPEGFile.tagSize(buffer[...]) {
            guard size <= 64 << 20, fill(size) else {
                throw Failure(description: "\(name): an ID3 tag and no audio after it")
            }
            tag = size
        }
        // A frame header, then (only then: a live WAV stream is not held back) the next frame's, in the bytes read
        // for it (the slice is taken after the read).
        var isMPEG = false
        if fill(tag + 4) && MPEGFile.frameLength(buffer[tag...]) != nil {
            let complete = !fill(tag + MPEGFile.framesCheckBytes)
            isMPEG = MPEGFile.startsWithFrames(buffer[tag...], complete: complete)
        }
        if isMPEG {
            let stream: MPEGStream
            do {
                stream = try MPEGStream(fd: fd, head: buffer[...], name: name, atEnd: ended)
            } catch let error as SpeechGraphError {
                throw Failure(description: error.message)
            }
            mpeg = stream
            sampleRate = stream.sampleRate
            channelCount = stream.channelCount
            encoding = .float32
            dataBytes = stream.announcedFrames.map { $0 * stream.channelCount * MemoryLayout<Float>.size }
            pending = []
            return
        }
        mpeg = nil
        buffer.removeFirst(tag)
        guard fill(12), buffer[0..<4] == [0x52, 0x49, 0x46, 0x46], buffer[8..<12] == [0x57, 0x41, 0x56, 0x45] else {
            throw Failure(
                description: buffer.isEmpty && tag == 0
                    ? "\(name) is empty"
                    : tag > 0 && buffer.isEmpty
                        ? "\(name): an ID3 tag and no audio after it"
                        : "\(name) is neither a WAV nor an MP3 stream (\(rawHint))")
        }
        var offset = 12
        var format: (tag: Int, channels: Int, rate: Int, bits: Int)?
        while true {
            guard fill(offset + 8) else {
                throw Failure(description: "\(name): the WAV stream ends in its header")
            }
            let id = String(decoding: buffer[offset..<offset + 4], as: UTF8.self)
            let size = u32(offset + 4)
            if id == "data" {
                offset += 8
                break
            }
            guard size < 1 << 20, fill(offset + 8 + size + (size & 1)) else {
                throw Failure(description: "\(name): a damaged WAV header (chunk '\(id)')")
            }
            if id == "fmt " && size >= 16 {
                var tag = u16(offset + 8)
                if tag == 0xFFFE && size >= 26 { tag = u16(offset + 8 + 24) }  // WAVE_FORMAT_EXTENSIBLE: its subformat
                format = (tag, u16(offset + 10), u32(offset + 12), u16(offset + 22))
            }
            offset += 8 + size + (size & 1)
        }
        guard let format else { throw Failure(description: "\(name): the WAV stream has no 'fmt ' chunk") }
        switch (format.tag, format.bits) {
        case (1, 8), (1, 16), (1, 24), (1, 32): encoding = .int(bits: format.bits)
        case (3, 32): encoding = .float32
        case (6, 8): encoding = .aLaw
        case (7, 8): encoding = .muLaw
        default:
            throw Failure(
                description: "\(name): WAV encoding \(format.tag) with \(format.bits) bits is not "
                    + "supported (16-, 24- or 32-bit PCM, 8-bit PCM, 32-bit float, 8-bit A-law or u-law)")
        }
        if let problem = AudioFormat.rateProblem(format.rate) {
            throw Failure(description: "\(name): \(problem)")
        }
        guard format.channels >= 1 else {
            throw Failure(
                description: "\(name): the WAV header says \(format.channels) channels at \(format.rate) Hz")
        }
        guard format.channels <= 64 else {
            throw Failure(
                description: "\(name): the WAV header says \(format.channels) channels: at most 64 are taken")
        }
        sampleRate = format.rate
        channelCount = format.channels
        let size = u32(offset - 4)
        dataBytes = size == 0 || size >= 0x7FFF_F000 ? nil : size
        pending = Array(buffer[offset...])
        atEnd = ended
    }

    /// Seconds of audio the header announces, when it does.
    public var duration: Double? {
        dataBytes.map { Double($0) / Double(bytesPerSample * channelCount * sampleRate) }
    }

    private var bytesPerSample: Int {
        switch encoding {
        case .int(let bits): return bits / 8
        case .float32: return 4
        case .muLaw, .aLaw: return 1
        }
    }

    /// Feeds the rest of the stream into `pusher` on a thread of its own, then ends its stream.
    public func feed(_ pusher: AudioPusher) {
        let job = self
        let thread = Thread { job.pump(into: pusher) }
        thread.name = "speechgraph stdin"
        thread.start()
    }

    private func pump(into pusher: AudioPusher) {
        defer { pusher.end(warning: failure) }
        // Stops when the graph has stopped (it takes nothing more).
        forEachChunk { pusher.write($0, waitForRoom: true) > 0 }
    }

    /// Reads the rest of the stream here, at most `limit` samples: for tests and the fuzzer.
    public func readAll(limit: Int = .max) -> [Float] {
        var all: [Float] = []
        forEachChunk { chunk in
            all += chunk.prefix(limit - all.count)
            return all.count < limit
        }
        return all
    }

    /// Hands the stream's samples on in chunks while `body` returns true.
    private func forEachChunk(_ body: ([Float]) -> Bool) {
        if let mpeg {
            let frames = mpeg.forEachChunk(body)
            failure = mpeg.failure
            // The Info header's count is exact (gapless); a frame's worth of difference is rounding, not loss.
            if failure == nil, !mpeg.stopped, let announced = mpeg.announcedFrames, announced > frames + 1152 {
                failure = Self.truncation(name, announced: Double(announced), came: Double(frames), rate: sampleRate)
            }
            return
        }
        let frameBytes = bytesPerSample * channelCount
        var remaining = dataBytes ?? Int.max
        var bytes = pending
        var samples = [Float]()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let whole = min(bytes.count - bytes.count % frameBytes, remaining - remaining % frameBytes)
            if whole > 0 {
                convert(bytes[0..<whole], into: &samples)
                if !body(samples) { return }
                bytes.removeFirst(whole)
                remaining -= whole
            }
            if remaining < frameBytes { return }
            let n = atEnd ? 0 : chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                atEnd = true
                if let dataBytes {
                    failure = Self.truncation(
                        name, announced: Double(dataBytes / frameBytes),
                        came: Double((dataBytes - remaining) / frameBytes),
                        rate: sampleRate)
                }
                return
            }
            bytes += chunk[0..<n]
        }
    }

    /// A stream that ended before the end its header announced.
    private static func truncation(_ name: String, announced: Double, came: Double, rate: Int) -> String {
        let seconds = { (frames: Double) in String(format: "%.2f", frames / Double(rate)) }
        return "\(name): the stream is truncated (its header announces \(seconds(announced)) s of audio, "
            + "\(seconds(came)) s came); the \(seconds(came)) s that came were read"
    }

    /// G.711 u-law to 16-bit linear (ITU-T G.711: the byte is stored inverted).
    static func muLaw(_ byte: UInt8) -> Int16 {
        let u = ~byte
        let magnitude = ((Int(u & 0x0F) << 3) + 0x84) << Int((u & 0x70) >> 4)
        return Int16(u & 0x80 != 0 ? 0x84 - magnitude : magnitude - 0x84)
    }

    /// G.711 A-law to 16-bit linear (ITU-T G.711: even bits stored inverted).
    static func aLaw(_ byte: UInt8) -> Int16 {
        let a = byte ^ 0x55
        let exponent = Int((a & 0x70) >> 4)
        var magnitude = Int(a & 0x0F) << 4 + 8
        if exponent > 0 { magnitude = (magnitude + 0x100) << (exponent - 1) }
        return Int16(a & 0x80 != 0 ? magnitude : -magnitude)
    }

    private func convert(_ bytes: ArraySlice<UInt8>, into samples: inout [Float]) {
        samples.removeAll(keepingCapacity: true)
        bytes.withUnsafeBytes { raw in
            switch encoding {
            case .int(8):
                for b in raw { samples.append((Float(b) - 128) / 128) }
            case .int(16):
                for i in stride(from: 0, to: raw.count, by: 2) {
                    samples.append(Float(Int16(bitPattern: UInt16(raw[i]) | UInt16(raw[i + 1]) << 8)) / 32768)
                }
            case .int(24):
                for i in stride(from: 0, to: raw.count, by: 3) {
                    let v = Int32(bitPattern: UInt32(raw[i]) << 8 | UInt32(raw[i + 1]) << 16 | UInt32(raw[i + 2]) << 24)
                    samples.append(Float(v >> 8) / 8_388_608)
                }
            case .int(_):
                for i in stride(from: 0, to: raw.count, by: 4) {
                    samples.append(
                        Float(Int32(bitPattern: raw.loadUnaligned(fromByteOffset: i, as: UInt32.self))) / 2_147_483_648)
                }
            case .float32:
                for i in stride(from: 0, to: raw.count, by: 4) {
                    samples.append(raw.loadUnaligned(fromByteOffset: i, as: Float.self))
                }
            case .muLaw:
                for b in raw { samples.append(Float(Self.muLaw(b)) / 32768) }
            case .aLaw:
                for b in raw { samples.append(Float(Self.aLaw(b)) / 32768) }
            }
        }
    }
}
