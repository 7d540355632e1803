import SpeechGraphCore

/// The `vad` node: voice activity detection. Emits `speechStarted` / `speechEnded` on `events` and passes only
/// the speech (with its pre-roll) on `out`, each block with its true `startFrame`.
///
/// Presets and parameters: `preset` fills in every setting; `threshold`, `min-speech`, `min-silence`,
/// `hangover` and `pre-roll` have no default of their own (they are optional parameters), so a value is
/// present in the node's configuration exactly when it was written, in the graph file or with `--set`, and
/// then it overrides the preset's.
public final class VADNode: GraphNode {
    static func presetText(_ value: (VADSettings) -> Double, _ format: (Double) -> String) -> String {
        VADPreset.allCases.map { "\($0.rawValue) \(format(value(VADSettings(preset: $0))))" }.joined(separator: ", ")
    }
    static func ms(_ seconds: Double) -> String { formatQuantity(seconds, in: .milliseconds) }
    static func dB(_ v: Double) -> String { formatQuantity(v, in: .decibels) }

    public static let descriptor = NodeDescriptor(
        typeName: "vad",
        summary: "Detects speech: speechStarted/speechEnded events, and the speech alone as audio.",
        doc: "A statistical-model voice activity detector on FFTW: the likelihood ratio of speech over noise in "
            + "each 10 ms frame, against a noise spectrum that adapts while nobody speaks. Thresholds and the "
            + "hangover adapt to the long-term signal-to-noise ratio. Event times are on the input's audio clock, "
            + "in seconds. 'out' carries only the audio of the detected regions, each with 'pre-roll' of audio "
            + "before its onset, so a recognizer never misses the first phoneme. The parameters other than "
            + "'preset' default to the preset's values; a value written in the graph (or with --set) overrides "
            + "it. See docs/vad.md.",
        category: .analysis,
        ports: [
            .audioInput(
                "in", AudioRequirement(rate: .fixed(VoiceActivityDetector.sampleRate), channelCount: 1),
                doc: "Mono audio at 16 kHz (the planner converts what it gets)."),
            .audioOutput(
                "out", format: .input("in"),
                doc: "The speech: the audio of each region, from 'pre-roll' before its onset to "
                    + "its end, on the input's clock."),
            .eventOutput(
                "events", emits: .only(EventKind.speechActivity + [.noSpeech]),
                doc: "speechStarted and speechEnded, with the node's name and the time in seconds; "
                    + "speechPaused and speechResumed for pauses inside speech (see 'pause'); noSpeech when "
                    + "nobody spoke in the stream's first 'no-speech'."),
        ],
        parameters: [
            .choice(
                "preset", VADPreset.allCases.map(\.rawValue), default: VADPreset.normal.rawValue,
                doc: "Fills in the other parameters: sensitive misses less, strict false-alarms less."),
            .quantity(
                "threshold", default: nil, .decibels, range: -6...20,
                doc: "Shift of the decision threshold: positive is stricter, negative more sensitive "
                    + "(below -1 dB, steady noise starts to trigger). Default: the preset's ("
                    + presetText(\.threshold, dB) + ")."),
            .quantity(
                "min-speech", default: nil, .milliseconds, range: 0...5000,
                doc: "Shorter bursts never start speech. Default: the preset's (" + presetText(\.minSpeech, ms) + ")."),
            .quantity(
                "min-silence", default: nil, .milliseconds, range: 0...5000,
                doc: "The pause that ends speech in clean audio. Default: the preset's ("
                    + presetText(\.minSilence, ms) + ")."),
            .quantity(
                "hangover", default: nil, .milliseconds, range: 0...5000,
                doc: "The pause that ends speech in noisy audio (SNR 8 dB or less); between clean and "
                    + "noisy the pause needed slides from 'min-silence' to this. Default: the preset's ("
                    + presetText(\.hangover, ms) + ")."),
            .quantity(
                "pause", default: VADSettings.normal.pause * 1000, .milliseconds, range: 0...5000,
                doc: "A pause this long inside speech emits speechPaused (then speechResumed if the speech goes "
                    + "on), when the pause that ends speech is longer: an early end-of-turn hint. A recognizer "
                    + "with 'results: fast' ends its utterance there. 0: no pause events."),
            .quantity(
                "pre-roll", default: nil, .milliseconds, range: 0...5000,
                doc: "Audio kept before each onset on 'out' (event times do not move). Default: the preset's ("
                    + presetText(\.preRoll, ms) + ")."),
            .quantity(
                "no-speech", default: 0, .seconds, range: 0...3600,
                doc: "When no speech has started this far into the stream, emit noSpeech (once, at that time; "
                    + "after a break in the audio, counted again from its end): a listener can stop waiting. "
                    + "The Wyoming server's graph answers such a request with an empty transcript. 0: never."),
        ])

    public static let type = NodeType(
        descriptor,
        resourceCheck: { config in _ = try settings(from: config) },
        make: { try VADNode($0) })

    /// The settings a configuration asks for: the preset's, overridden by every parameter present.
    public static func settings(from config: NodeConfig) throws -> VADSettings {
        let presetName = config.string(of: "preset")
        guard let preset = VADPreset(rawValue: presetName) else {
            throw SpeechGraphError("unknown preset '\(presetName)'", parameter: "preset")
        }
        var s = VADSettings(preset: preset)
        if let v = config.number("threshold") { s.threshold = v }
        if let v = config.number("min-speech") { s.minSpeech = v }
        if let v = config.number("min-silence") { s.minSilence = v }
        if let v = config.number("hangover") { s.hangover = v }
        if let v = config.number("pre-roll") { s.preRoll = v }
        if let v = config.number("pause") { s.pause = v }
        if let problem = s.problem { throw SpeechGraphError(problem) }
        return s
    }

    public let settings: VADSettings
    private let name: String
    private let detector: VoiceActivityDetector
    private let format = AudioFormat(sampleRate: VoiceActivityDetector.sampleRate, channelCount: 1)
    private let maxBlock: Int

    // Audio kept for the pre-roll and for the pause that may still turn out to be speech: a circular buffer,
    // detector sample s at index s % ring.count. Samples from `keepFloor` to `detector.samplesConsumed` are held.
    private let ring: UnsafeMutableBufferPointer<Float>
    /// The input's startFrame of the detector's sample 0 (set by the first block).
    private var origin: Int64?
    /// Next sample of the open region still to be emitted on `out`.
    private var emitCursor: Int64 = 0
    private var lastSampleEmitted: Int64 = 0
    /// `no-speech` in samples (0: off), and whether it is still to be decided: no speech has started since the
    /// stream's start and noSpeech has not been emitted.
    private let noSpeechSamples: Int64
    private var noSpeechPending: Bool

    public init(_ context: NodeContext) throws {
        settings = try Self.settings(from: context.config)
        name = context.config.name
        detector = VoiceActivityDetector(settings: settings)
        maxBlock = max(context.maxBlockFrames, 1)
        // Any time above 0 is at least a sample (1 µs rounded to none turned the timeout off).
        let noSpeech = context.config.number(of: "no-speech")
        noSpeechSamples =
            noSpeech > 0 ? max(1, Int64((noSpeech * Double(VoiceActivityDetector.sampleRate)).rounded())) : 0
        noSpeechPending = noSpeechSamples > 0
        // Pre-roll, the longest pause held, how far an onset may reach back, look-ahead, and one block.
        let seconds =
            settings.preRoll + max(settings.hangover, settings.minSilence) + settings.minSpeech
            + Double(VoiceActivityDetector.maxBacktrack + 16) / 100
        let capacity = Int((seconds * Double(VoiceActivityDetector.sampleRate)).rounded(.up)) + 2 * maxBlock + 1024
        ring = .allocate(capacity: capacity)
        ring.initialize(repeating: 0)
    }

    deinit { ring.deallocate() }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        if origin == nil { origin = block.startFrame }
        let samples = block.samples
        // Keep the block, over audio no region can need any more.
        let consumed = detector.samplesConsumed
        precondition(consumed + Int64(samples.count) - Int64(ring.count) <= keepFloor, "vad: ring too small")
        var written = 0
        while written < samples.count {
            let at = Int((consumed + Int64(written)) % Int64(ring.count))
            let n = min(samples.count - written, ring.count - at)
            (ring.baseAddress! + at).update(from: samples.baseAddress! + written, count: n)
            written += n
        }
        try detector.process(samples) { event in try self.report(event, output) }
        try flushKnownSpeech(output)
        try reportNoSpeech(when: detector.onsetFloor >= noSpeechSamples, output)
    }

    /// `noSpeech`, once, when `decided`: no onset can be found before the timeout any more, and none was. Checked
    /// at every frame and before an onset, so the same audio gives the same events whatever the block size.
    private func reportNoSpeech(when decided: @autoclosure () -> Bool, _ output: NodeOutput) throws {
        guard noSpeechPending, decided(), let origin else { return }
        noSpeechPending = false
        let time = Double(origin + noSpeechSamples) / Double(VoiceActivityDetector.sampleRate)
        try output.emit(.noSpeech(node: name, time: time), port: 1)
    }

    public func finish(output: NodeOutput) throws {
        try detector.finish { event in try self.report(event, output) }
    }

    public func discontinuity(port: Int, output: NodeOutput) throws {
        // What comes next does not continue this audio: end the region in flight and start afresh.
        try detector.finish { event in try self.report(event, output) }
        detector.reset()
        origin = nil
        emitCursor = 0
        lastSampleEmitted = 0
        noSpeechPending = noSpeechSamples > 0
        try output.emitDiscontinuity()
    }

    /// The oldest sample that may still be emitted.
    private var keepFloor: Int64 {
        let preRoll = Int64((settings.preRoll * Double(VoiceActivityDetector.sampleRate)).rounded())
        if detector.isSpeech { return emitCursor }
        return max(0, detector.minimumRetainedSample - preRoll, lastSampleEmitted)
    }

    private func report(_ event: VADEvent, _ output: NodeOutput) throws {
        guard let origin else { return }
        let rate = Double(VoiceActivityDetector.sampleRate)
        switch event {
        case .started(let sample):
            // Speech that starts after the timeout comes after the noSpeech it missed.
            try reportNoSpeech(when: sample >= noSpeechSamples, output)
            noSpeechPending = false
            try output.emit(.speechStarted(node: name, time: Double(origin + sample) / rate), port: 1)
            let preRoll = Int64((settings.preRoll * rate).rounded())
            emitCursor = max(sample - preRoll, lastSampleEmitted, detector.samplesConsumed - Int64(ring.count), 0)
        case .ended(let sample):
            try emitAudio(upTo: sample, output)
            lastSampleEmitted = max(lastSampleEmitted, sample)
            try output.emit(.speechEnded(node: name, time: Double(origin + sample) / rate), port: 1)
        case .paused(let sample):
            try emitAudio(upTo: sample, output)
            try output.emit(.speechPaused(node: name, time: Double(origin + sample) / rate), port: 1)
        case .resumed(let sample):
            try output.emit(.speechResumed(node: name, time: Double(origin + sample) / rate), port: 1)
        case .frame:
            try reportNoSpeech(when: detector.onsetFloor >= noSpeechSamples, output)
        }
    }

    private func flushKnownSpeech(_ output: NodeOutput) throws {
        guard let known = detector.speechKnownUntil else { return }
        try emitAudio(upTo: known, output)
    }

    /// Emits the ring's samples from `emitCursor` to `end`, in blocks no longer than the input's.
    private func emitAudio(upTo end: Int64, _ output: NodeOutput) throws {
        guard let origin else { return }
        precondition(
            end <= detector.samplesConsumed && emitCursor >= detector.samplesConsumed - Int64(ring.count),
            "vad: audio to emit is no longer held")
        while emitCursor < end {
            let at = Int(emitCursor % Int64(ring.count))
            let n = min(Int(min(end - emitCursor, Int64(maxBlock))), ring.count - at)
            let view = UnsafeBufferPointer(rebasing: ring[at..<(at + n)])
            try output.emit(AudioBlock(samples: view, format: format, startFrame: origin + emitCursor), port: 0)
            emitCursor += Int64(n)
            lastSampleEmitted = emitCursor
        }
    }
}
