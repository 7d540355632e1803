import CSndFile
import Foundation
import SpeechGraphCore

/// The `clips` sink: each final result's audio as a WAV file in a folder, with a JSON sidecar holding the
/// result, for building data sets.
public final class ClipsSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "clips",
        summary: "Writes each utterance's audio as a WAV file with a JSON sidecar holding its final result.",
        doc: "Connect 'in' to the audio the recognizer hears (the input, or the vad's speech) and 'results' to the "
            + "recognizer. For each final result with text it writes FOLDER/NODE-NNNNN.wav (16-bit PCM, the "
            + "audio's rate and channels, the utterance's range widened by 'pad') and FOLDER/NODE-NNNNN.json (the "
            + "result's JSON Lines form, docs/events.md, with \"audio\": the WAV's file name), once the audio of "
            + "the trailing 'pad' has come (with a vad's speech as 'in', when the next speech starts; at the end "
            + "of the stream, whatever there is). The last 'keep' of audio is held in memory for the results "
            + "still to come.",
        category: .sink,
        ports: [
            .audioInput("in", .any, doc: "The audio the results come from."),
            .eventInput("results", accepts: .only([.result]), doc: "Results (volatile ones are ignored)."),
        ],
        parameters: [
            .path("path", required: true, doc: "The folder to write into (made when missing)."),
            .quantity(
                "pad", default: 200, .milliseconds, range: 0...2000,
                doc: "Audio kept before and after each utterance."),
            .quantity("keep", default: 120, .seconds, range: 10...3600, doc: "Audio held in memory."),
            .boolean("empty", default: false, doc: "Also write results with no text."),
        ])

    public static let type = NodeType(descriptor, make: { try ClipsSink($0) })

    private let folder: String
    private let name: String
    private let pad: Double
    private let keepFrames: Int64
    private let writeEmpty: Bool
    private let format: AudioFormat
    /// Blocks held: start frame and interleaved samples, oldest first from `first` on (the ones before it are
    /// dropped, and compacted away now and then, so dropping one costs nothing per block).
    private var blocks: [(start: Int64, samples: [Float])] = []
    private var first = 0
    private var problem: String?
    /// Final results whose clip waits for the audio of its trailing `pad`, in order: written once that audio
    /// has come (or the stream has moved past it: a vad's gated speech), at the end, or before the audio it
    /// needs would be dropped.
    private var waiting: [(event: GraphEvent, from: Int64, to: Int64)] = []

    init(_ context: NodeContext) throws {
        let c = context.config
        folder = c.string(of: "path")
        name = c.name
        pad = c.number(of: "pad")
        writeEmpty = c.bool(of: "empty")
        guard let format = context.inputFormats["in"] else { throw SpeechGraphError("clips has no input") }
        self.format = format
        keepFrames = Int64(c.number(of: "keep") * Double(format.sampleRate))
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw SpeechGraphError(
                "clips node '\(name)': cannot make the folder \(folder): \(PathNames.reason(error))",
                parameter: "path")
        }
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks.append((block.startFrame, Array(block.samples)))
        let newest = block.startFrame + Int64(block.frameCount)
        writeReady(streamAt: block.startFrame)
        if let problem { try output.warn(problem, time: Double(block.startFrame) / Double(format.sampleRate)) }
        while first < blocks.count,
            blocks[first].start + Int64(blocks[first].samples.count / format.channelCount) < newest - keepFrames
        {
            first += 1
        }
        if first > 64 && first * 2 > blocks.count {
            blocks.removeFirst(first)
            first = 0
        }
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard case .result(let t) = event, t.isFinal, writeEmpty || !t.text.isEmpty else { return }
        let rate = Double(format.sampleRate)
        let from = Int64(max(0, (t.range.start - pad) * rate))
        let to = Int64((t.range.end + pad) * rate)
        waiting.append((event, from, to))
        writeReady(streamAt: nil)
        // Said when it happens (`warn` tells it once), and at the end in `warnings`.
        if let problem { try output.warn(problem, time: t.range.end) }
    }

    /// Writes the waiting clips, in order, whose trailing audio has come, or which the stream (now at the block
    /// starting at `streamAt`) has moved past, or whose first audio is about to be dropped.
    private func writeReady(streamAt: Int64?) {
        let newest = blocks.last.map { $0.start + Int64($0.samples.count / format.channelCount) } ?? 0
        while let w = waiting.first, newest >= w.to || (streamAt ?? .min) >= w.to || w.from < newest - keepFrames {
            writeClip(w.event, from: w.from, to: w.to)
            waiting.removeFirst()
        }
    }

    /// The stream has ended: the clips still waiting get the audio there is.
    public func finish(output: NodeOutput) throws {
        for w in waiting { writeClip(w.event, from: w.from, to: w.to) }
        waiting.removeAll()
    }

    private func writeClip(_ event: GraphEvent, from: Int64, to: Int64) {
        guard case .result(let t) = event else { return }
        let channels = format.channelCount
        var samples: [Float] = []
        for b in blocks[first...] {
            let frames = Int64(b.samples.count / channels)
            let lo = max(from, b.start)
            let hi = min(to, b.start + frames)
            guard lo < hi else { continue }
            samples += b.samples[Int(lo - b.start) * channels..<Int(hi - b.start) * channels]
        }
        let base = String(format: "%@-%05d", name, t.utterance)
        let wav = (folder as NSString).appendingPathComponent(base + ".wav")
        let json = (folder as NSString).appendingPathComponent(base + ".json")
        let line = JSONLines.line(for: event, extra: [("audio", JSONLines.quote(base + ".wav"))]) + "\n"
        guard write(samples, to: wav), FileManager.default.createFile(atPath: json, contents: Data(line.utf8)) else {
            if problem == nil { problem = "cannot write into \(folder)" }
            return
        }
    }

    /// A 16-bit PCM WAV file, through libsndfile (as tap.record writes), samples beyond full scale clipped.
    private func write(_ samples: [Float], to path: String) -> Bool {
        var info = SF_INFO()
        info.samplerate = Int32(format.sampleRate)
        info.channels = Int32(format.channelCount)
        info.format = Int32(SF_FORMAT_WAV | SF_FORMAT_PCM_16)
        guard let file = sf_open(path, Int32(SFM_WRITE), &info) else { return false }
        sf_command(file, Int32(SFC_SET_CLIPPING), nil, Int32(SF_TRUE))
        let frames = sf_count_t(samples.count / format.channelCount)
        let done = samples.withUnsafeBufferPointer { sf_writef_float(file, $0.baseAddress, frames) }
        return sf_close(file) == 0 && done == frames
    }

    public var warnings: [String] { problem.map { [$0] } ?? [] }
}
