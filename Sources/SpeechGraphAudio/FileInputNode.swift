import Foundation
import SpeechGraphCore

/// The `file.input` node: plays an audio file into the graph.
public final class FileInputNode: SourceNode {
    public static let descriptor = NodeDescriptor(
        typeName: "file.input",
        summary: "Reads an audio file (WAV, FLAC, Ogg/Vorbis, ...) with libsndfile, MP3 with libmpg123.",
        doc: """
            Any sample rate and channel count libsndfile reads. By default every channel is mixed down to \
            mono; 'channel' picks one instead. With 'realtime' the file plays at the pace of live audio. A file \
            damaged partway ends at the damage: the audio before it goes through the graph as at the end of the \
            file, and a warning names the file and the time.
            """,
        category: .input,
        ports: [.audioOutput("out", format: .computed, doc: "The file's audio, float32 at the file's rate.")],
        parameters: [
            .path("path", required: true, doc: "The audio file to read."),
            .integer(
                "channel", default: 0, range: 0...256,
                doc: "0 mixes every channel down to mono; N takes channel N only (1 is the first)."),
            .integer("block", default: 1024, range: 16...65536, doc: "Frames read per block."),
            .boolean("realtime", default: false, doc: "Play at the pace of live audio instead of as fast as possible."),
            .integer("loop", default: 1, range: 1...100_000, doc: "Play the file this many times, one after another."),
        ])

    public static let type = NodeType(
        descriptor,
        formats: { context in
            let path = context.config.string(of: "path")
            // A pipe would be opened twice (here, and by the node): the second open waits for a writer that has
            // gone, or reads the stream from its middle.
            if PathNames.isPipeOrDevice(path) {
                throw SpeechGraphError(
                    "\(path) is a pipe or a device, not a file: file.input reads files; a stream goes to "
                        + "'speechgraph transcribe \(path)' (or '-' for standard input), or to a push.input node",
                    parameter: "path")
            }
            let file = try AudioFile(path: path)
            let channel = context.config.integer(of: "channel")
            if channel > file.channelCount {
                throw SpeechGraphError(
                    "\(file.path) has \(file.channelCount) channel(s); there is no channel \(channel)",
                    parameter: "channel")
            }
            return ["out": AudioFormat(sampleRate: file.sampleRate, channelCount: 1)]
        },
        maxOutputFrames: { config, _, _ in config.integer(of: "block") },
        make: { try FileInputNode($0) })

    private let file: AudioFile
    private let format: AudioFormat
    private let channel: Int
    private let block: Int
    private let realtime: Bool
    private let loops: Int
    private var loopsDone = 0
    private var interleaved: UnsafeMutableBufferPointer<Float>
    private var mono: UnsafeMutableBufferPointer<Float>
    private var framesEmitted: Int64 = 0
    private var wallStart: Double?
    private let resources: GraphResources
    private var truncation: String?
    /// A read that failed partway (a damaged file): the file ends there, for this node, and the audio before it
    /// is finished as at the end of the file; the failure is a warning, so the run still fails (exit 1).
    private var damage: String?
    /// Frames read from the file in this loop, for where a damage lies.
    private var framesInLoop: Int64 = 0
    private var sampleGuard = SampleGuard()

    public var warnings: [String] { [truncation, damage, sampleGuard.warning].compactMap { $0 } }

    public init(_ context: NodeContext) throws {
        let c = context.config
        file = try AudioFile(path: c.string(of: "path"))
        channel = c.integer(of: "channel")
        block = c.integer(of: "block")
        realtime = c.bool(of: "realtime")
        loops = c.integer(of: "loop")
        resources = context.resources
        format = context.outputFormats["out"] ?? AudioFormat(sampleRate: file.sampleRate, channelCount: 1)
        interleaved = .allocate(capacity: block * file.channelCount)
        interleaved.initialize(repeating: 0)
        mono = .allocate(capacity: block)
        mono.initialize(repeating: 0)
        truncation = file.truncation
    }

    deinit {
        interleaved.deallocate()
        mono.deallocate()
    }

    public var position: Double { Double(framesEmitted) / Double(format.sampleRate) }

    public var progress: Double? {
        guard file.frameCount > 0 else { return nil }
        return min(1, Double(framesEmitted) / Double(file.frameCount * Int64(loops)))
    }

    /// The next block's frames, 0 at the end of the file or at damage (said once, in `damage`).
    private func readBlock() -> Int {
        guard damage == nil else { return 0 }
        do {
            let n = try file.read(into: interleaved.baseAddress!, frames: block)
            framesInLoop += Int64(n)
            return n
        } catch {
            let at = String(format: "%.2f", Double(framesInLoop) / Double(file.sampleRate))
            damage = "\(error) \(at) s into the audio: the audio before it was read, none after it"
            return 0
        }
    }

    public func pull(output: NodeOutput) throws -> Bool {
        var n = readBlock()
        while n == 0 {
            loopsDone += 1
            guard loopsDone < loops, damage == nil else { return false }
            file.rewind()
            framesInLoop = 0
            n = readBlock()
            if n == 0 { return false }
        }
        let channels = file.channelCount
        sampleGuard.clean(UnsafeMutableBufferPointer(rebasing: interleaved[0..<(n * channels)]), channels: channels)
        let samples: UnsafeBufferPointer<Float>
        if channels == 1 {
            samples = UnsafeBufferPointer(rebasing: interleaved[0..<n])
        } else {
            if channel > 0 {
                for i in 0..<n { mono[i] = interleaved[i * channels + channel - 1] }
            } else {
                let scale = 1 / Float(channels)
                for i in 0..<n {
                    var sum: Float = 0
                    for c in 0..<channels { sum += interleaved[i * channels + c] }
                    mono[i] = sum * scale
                }
            }
            samples = UnsafeBufferPointer(rebasing: mono[0..<n])
        }
        try output.emit(AudioBlock(samples: samples, format: format, startFrame: framesEmitted))
        framesEmitted += Int64(n)
        if realtime {
            let now = Date().timeIntervalSinceReferenceDate
            if wallStart == nil {
                wallStart = now - Double(n) / Double(format.sampleRate)
                resources.setAudioEpochIfUnset(heard: Double(n) / Double(format.sampleRate))
            }
            let due = wallStart! + position
            if due > now { Thread.sleep(forTimeInterval: due - now) }
        }
        return true
    }

    public func close() { file.close() }
}
