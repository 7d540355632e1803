import CSndFile
import Foundation
import SpeechGraphCore

/// The `tap.level` node: signal levels for meters, passing the audio through unchanged.
///
/// Put it straight after an input (`mic -> meter -> asr`): it sees exactly the samples the input
/// delivered. It is computed on the graph thread, so the JACK thread's work stays a copy.
public final class LevelTapNode: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "tap.level",
        summary: "Emits RMS and peak levels (dBFS, per channel) at a set rate; passes the audio on unchanged.",
        category: .analysis,
        ports: [
            .audioInput("in", .any, doc: "Any audio."),
            .audioOutput("out", format: .input("in"), doc: "The same audio, unchanged."),
            .eventOutput("events", emits: .only([.level]), doc: "level events, one every 'interval' of audio."),
        ],
        parameters: [
            .quantity("interval", default: 100, .milliseconds, range: 1...10_000, doc: "Audio time per level event.")
        ])

    public static let type = NodeType(
        descriptor,
        make: { LevelTapNode($0) })

    private let name: String
    private let interval: Double
    private var sumSquares: [Double] = []
    private var peaks: [Float] = []
    private var frames = 0
    private var intervalFrames = 0

    init(_ context: NodeContext) {
        name = context.config.name
        interval = context.config.number(of: "interval")
        let channels = context.inputFormats["in"]?.channelCount ?? 1
        sumSquares = Array(repeating: 0, count: channels)
        peaks = Array(repeating: 0, count: channels)
        intervalFrames = max(1, Int((interval * Double(context.inputFormats["in"]?.sampleRate ?? 16000)).rounded()))
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        try output.emit(block)
        let channels = block.format.channelCount
        var i = 0
        let n = block.frameCount
        while i < n {
            let take = min(intervalFrames - frames, n - i)
            for f in i..<(i + take) {
                for c in 0..<channels {
                    let v = block.samples[f * channels + c]
                    sumSquares[c] += Double(v * v)
                    peaks[c] = max(peaks[c], abs(v))
                }
            }
            frames += take
            i += take
            if frames == intervalFrames {
                let end = Double(block.startFrame + Int64(i)) / Double(block.format.sampleRate)
                try report(at: end, output: output)
            }
        }
    }

    private func report(at time: Double, output: NodeOutput) throws {
        func dB(_ v: Double) -> Double { v > 0 ? 20 * log10(v) : -.infinity }
        let rms = sumSquares.map { dB(($0 / Double(frames)).squareRoot()) }
        let peak = peaks.map { dB(Double($0)) }
        try output.emit(.level(node: name, time: time, rms: rms, peak: peak), port: 1)
        for c in sumSquares.indices {
            sumSquares[c] = 0
            peaks[c] = 0
        }
        frames = 0
    }
}

/// The `tap.record` node: writes the audio it sees to a WAV or FLAC file, passing it on unchanged.
/// Writing happens on the graph thread, never on the JACK thread.
public final class RecordTapNode: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "tap.record",
        summary: "Records the audio passing through to a WAV (32-bit float) or FLAC (24-bit) file.",
        category: .sink,
        ports: [
            .audioInput("in", .any, doc: "Any audio."),
            .audioOutput("out", format: .input("in"), doc: "The same audio, unchanged."),
        ],
        parameters: [
            .path(
                "path", required: true, writes: true,
                doc: "The file to write (its folders are made if need be); .flac writes FLAC, anything else WAV.")
        ])

    public static let type = NodeType(
        descriptor,
        make: { try RecordTapNode($0) })

    private var file: OpaquePointer?
    private let path: String
    private var info = SF_INFO()

    init(_ context: NodeContext) throws {
        path = context.config.string(of: "path")
        guard let format = context.inputFormats["in"] else { throw SpeechGraphError("tap.record has no input") }
        info.samplerate = Int32(format.sampleRate)
        info.channels = Int32(format.channelCount)
        info.format =
            path.lowercased().hasSuffix(".flac")
            ? Int32(SF_FORMAT_FLAC | SF_FORMAT_PCM_24) : Int32(SF_FORMAT_WAV | SF_FORMAT_FLOAT)
        // Opened (and an existing file replaced) with the first audio: a graph that fails before it runs leaves the
        // user's file as it was. Where it can be written, the planner checked (a path parameter that `writes`).
    }

    deinit { close() }

    private func open() throws -> OpaquePointer {
        if let file { return file }
        try OutputPath.makeFolders(for: path)
        guard let f = sf_open(path, Int32(SFM_WRITE), &info) else {
            throw SpeechGraphError("cannot write \(path): \(String(cString: sf_strerror(nil)))", parameter: "path")
        }
        file = f
        return f
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        let file = try open()
        if sf_writef_float(file, block.samples.baseAddress, sf_count_t(block.frameCount)) != block.frameCount {
            throw SpeechGraphError("writing \(path) failed: \(String(cString: sf_strerror(file)))")
        }
        try output.emit(block)
    }

    public func finish(output: NodeOutput) throws {
        // A run with no audio writes an empty recording.
        sf_write_sync(try open())
    }

    public func close() {
        if let file { sf_close(file) }
        file = nil
    }
}
