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
            + "result's JSON Lines form, docs/events.md, with \"audio\": the WAV's file name). The last 'keep' "
            + "of audio is held in memory for the results still to come.",
        category: .sink,
        ports: [
            .audioInput("in", .any, doc: "The audio the results come from."),
            .eventInput("results", accepts: .only([.result]), doc: "Results (volatile ones are ignored)."),
        ],
        parameters: [
            .path("path", required: true, doc: "The folder to write into (made when missing)."),
            .quantity(
                "pad", default: 200, .milliseconds, range: 0...2000, doc: "Audio kept before and after each utterance."),
            .quantity("keep", default: 120, .seconds, range: 10...3600, doc: "Audio held in memory."),
            .boolean("empty", default: false, doc: "Also write results with no text."),
        ])

    public static let type = NodeType(descriptor, make: { try ClipsSink($0) })

    private let folder: String
    private let name: String
    private let pad: Double
    private let keepFrames: Int64
    private let writeEmpty: Bool
    private var format: AudioFormat?
    /// Blocks held: start frame and interleaved samples, oldest first.
    private var blocks: [(start: Int64, samples: [Float])] = []
    private var problem: String?
    private var written = 0

    init(_ context: NodeContext) throws {
        let c = context.config
        folder = c.string(of: "path")
        name = c.name
        pad = c.number(of: "pad")
        writeEmpty = c.bool(of: "empty")
        format = context.inputFormats["in"]
        keepFrames = Int64(c.number(of: "keep") * Double(format?.sampleRate ?? 16000))
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw SpeechGraphError(
                "clips node '\(name)': cannot make the folder \(folder): \(error.localizedDescription)",
                parameter: "path")
        }
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        format = block.format
        blocks.append((block.startFrame, Array(block.samples)))
        let newest = block.startFrame + Int64(block.frameCount)
        while let first = blocks.first,
            first.start + Int64(first.samples.count / block.format.channelCount) < newest - keepFrames
        {
            blocks.removeFirst()
        }
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard case .result(let t) = event, t.isFinal, writeEmpty || !t.text.isEmpty, let format else { return }
        let rate = Double(format.sampleRate)
        let channels = format.channelCount
        let from = Int64(max(0, (t.range.start - pad) * rate))
        let to = Int64((t.range.end + pad) * rate)
        var samples: [Float] = []
        for b in blocks {
            let frames = Int64(b.samples.count / channels)
            let lo = max(from, b.start)
            let hi = min(to, b.start + frames)
            guard lo < hi else { continue }
            samples += b.samples[Int(lo - b.start) * channels..<Int(hi - b.start) * channels]
        }
        let base = String(format: "%@-%05d", name, t.utterance)
        let wav = (folder as NSString).appendingPathComponent(base + ".wav")
        let json = (folder as NSString).appendingPathComponent(base + ".json")
        var line = JSONLines.line(for: event)
        line.removeLast()
        line += ",\"audio\":\(JSONLines.quote(base + ".wav"))}\n"
        guard FileManager.default.createFile(atPath: wav, contents: Self.wav(samples, format)),
            FileManager.default.createFile(atPath: json, contents: Data(line.utf8))
        else {
            if problem == nil { problem = "clips node '\(name)': cannot write into \(folder)" }
            return
        }
        written += 1
    }

    /// A 16-bit PCM WAV file.
    static func wav(_ samples: [Float], _ format: AudioFormat) -> Data {
        var data = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { data.append(contentsOf: $0) } }
        let channels = UInt16(format.channelCount)
        let bytes = UInt32(samples.count * 2)
        data.append(contentsOf: Array("RIFF".utf8))
        u32(36 + bytes)
        data.append(contentsOf: Array("WAVEfmt ".utf8))
        u32(16)
        u16(1)
        u16(channels)
        u32(UInt32(format.sampleRate))
        u32(UInt32(format.sampleRate) * UInt32(channels) * 2)
        u16(channels * 2)
        u16(16)
        data.append(contentsOf: Array("data".utf8))
        u32(bytes)
        for s in samples {
            let v = Int16(max(-32768, min(32767, (s.isFinite ? s : 0) * 32767)))
            u16(UInt16(bitPattern: v))
        }
        return data
    }

    public var warnings: [String] { problem.map { [$0] } ?? [] }
}
