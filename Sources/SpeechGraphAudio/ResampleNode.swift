import CSoxr
import SpeechGraphCore

/// The `resample` node: sample-rate conversion with libsoxr. The planner inserts one wherever a
/// connection's rates differ.
public final class ResampleNode: GraphNode {
    public static let qualities = ["quick", "low", "medium", "high", "very-high"]

    public static let descriptor = NodeDescriptor(
        typeName: "resample",
        summary: "Converts the sample rate with libsoxr (inserted automatically where rates differ).",
        category: .converter,
        ports: [
            .audioInput("in", .any, doc: "Audio at any rate."),
            .audioOutput("out", format: .input("in", rate: .parameter("rate")), doc: "The same audio at 'rate'."),
        ],
        parameters: [
            .quantity("rate", default: 16, .kilohertz, range: 1...384, doc: "Output sample rate."),
            .choice("quality", qualities, default: "high", doc: "libsoxr quality recipe."),
        ])

    public static let type = NodeType(
        descriptor,
        maxOutputFrames: { config, inputs, maxIn in
            guard let input = inputs["in"] else { return maxIn }
            let ratio = config.number(of: "rate") / Double(input.sampleRate)
            return Int((Double(maxIn) * ratio).rounded(.up)) + 16
        },
        make: { try ResampleNode($0) })

    private let soxr: soxr_t
    private let inFormat: AudioFormat
    private let outFormat: AudioFormat
    private let output: UnsafeMutableBufferPointer<Float>
    private let capacityFrames: Int
    private var framesOut: Int64 = 0
    private var startFrameIn: Int64?

    public init(_ context: NodeContext) throws {
        guard let input = context.inputFormats["in"], let out = context.outputFormats["out"] else {
            throw SpeechGraphError("resample has no input format")
        }
        inFormat = input
        outFormat = out
        let recipe: UInt =
            switch context.config.string(of: "quality") {
            case "quick": UInt(SOXR_QQ)
            case "low": UInt(SOXR_LQ)
            case "medium": UInt(SOXR_MQ)
            case "very-high": UInt(SOXR_VHQ)
            default: UInt(SOXR_HQ)
            }
        soxr = try makeSoxr(
            from: Double(input.sampleRate), to: Double(out.sampleRate), channels: input.channelCount, recipe: recipe)
        let ratio = Double(out.sampleRate) / Double(input.sampleRate)
        capacityFrames = Int((Double(context.maxBlockFrames) * ratio).rounded(.up)) + 16
        output = .allocate(capacity: capacityFrames * out.channelCount)
        output.initialize(repeating: 0)
    }

    deinit {
        soxr_delete(soxr)
        output.deallocate()
    }

    public func process(_ block: AudioBlock, port: Int, output next: NodeOutput) throws {
        if startFrameIn == nil {
            startFrameIn = block.startFrame
            framesOut = Int64(
                (Double(block.startFrame) * Double(outFormat.sampleRate) / Double(inFormat.sampleRate)).rounded())
        }
        var consumed = 0
        let total = block.frameCount
        let channels = inFormat.channelCount
        while consumed < total {
            var done = 0
            var made = 0
            let error = soxr_process(
                soxr, block.samples.baseAddress! + consumed * channels, total - consumed, &done,
                output.baseAddress, capacityFrames, &made)
            if let error { throw SpeechGraphError("libsoxr: \(String(cString: error))") }
            consumed += done
            try emit(made, next)
            if done == 0 && made == 0 { break }
        }
    }

    public func finish(output next: NodeOutput) throws {
        // Drain the filter's delay line.
        while true {
            var made = 0
            let error = soxr_process(soxr, nil, 0, nil, output.baseAddress, capacityFrames, &made)
            if let error { throw SpeechGraphError("libsoxr: \(String(cString: error))") }
            if made == 0 { break }
            try emit(made, next)
        }
    }

    /// The input is interrupted: drain the filter, start afresh on the next block, pass it on.
    public func discontinuity(port: Int, output next: NodeOutput) throws {
        try finish(output: next)
        soxr_clear(soxr)
        startFrameIn = nil
        try next.emitDiscontinuity()
    }

    private func emit(_ frames: Int, _ next: NodeOutput) throws {
        guard frames > 0 else { return }
        let block = AudioBlock(
            samples: UnsafeBufferPointer(rebasing: output[0..<(frames * outFormat.channelCount)]),
            format: outFormat, startFrame: framesOut)
        framesOut += Int64(frames)
        try next.emit(block)
    }
}
