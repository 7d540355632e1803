import SpeechGraphCore

/// The `downmix` node: the mean of every channel, as mono. The planner inserts one where a
/// multi-channel stream meets a mono input.
public final class DownmixNode: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "downmix",
        summary: "Mixes every channel down to mono (inserted automatically where needed).",
        category: .converter,
        ports: [
            .audioInput("in", .any, doc: "Audio with any number of channels."),
            .audioOutput("out", format: .input("in", channels: 1), doc: "The mean of the channels, mono."),
        ],
        parameters: [])

    public static let type = NodeType(
        descriptor,
        make: { DownmixNode($0) })

    private let format: AudioFormat
    private let buffer: UnsafeMutableBufferPointer<Float>

    init(_ context: NodeContext) {
        format = context.outputFormats["out"] ?? AudioFormat(sampleRate: 16000, channelCount: 1)
        buffer = .allocate(capacity: max(context.maxBlockFrames, 1))
        buffer.initialize(repeating: 0)
    }

    deinit { buffer.deallocate() }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        let channels = block.format.channelCount
        let frames = block.frameCount
        let scale = 1 / Float(channels)
        for i in 0..<frames {
            var sum: Float = 0
            for c in 0..<channels { sum += block.samples[i * channels + c] }
            buffer[i] = sum * scale
        }
        try output.emit(
            AudioBlock(
                samples: UnsafeBufferPointer(rebasing: buffer[0..<frames]), format: format,
                startFrame: block.startFrame))
    }
}
