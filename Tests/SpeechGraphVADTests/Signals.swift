import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport

/// Test signals with known answers, all at 16 kHz.
enum Signals {
    static let rate = 16000

    /// Deterministic Gaussian noise (xorshift64* and Box-Muller).
    struct Noise {
        private var state: UInt64
        init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
        mutating func uniform() -> Double {
            state ^= state >> 12
            state ^= state << 25
            state ^= state >> 27
            return Double((state &* 0x2545_F491_4F6C_DD1D) >> 11) / Double(1 << 53)
        }
        mutating func gaussian() -> Double {
            let u1 = max(uniform(), 1e-300)
            let u2 = uniform()
            return (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
        }
    }

    static func rms(_ x: [Float]) -> Double {
        (x.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(x.count, 1))).squareRoot()
    }

    /// White Gaussian noise of the given RMS.
    static func whiteNoise(seconds: Double, rms: Double, seed: UInt64) -> [Float] {
        var g = Noise(seed: seed)
        return (0..<Int(seconds * Double(rate))).map { _ in Float(g.gaussian() * rms) }
    }

    /// A tone burst: `frequency` Hz, amplitude `amplitude`, from `start` for `duration` seconds, with 5 ms
    /// raised-cosine ramps (the burst is "on" from `start` to `start + duration`).
    static func addTone(to x: inout [Float], start: Double, duration: Double, frequency: Double, amplitude: Double) {
        let s = Int(start * Double(rate))
        let n = Int(duration * Double(rate))
        let ramp = rate / 200
        for i in 0..<n where s + i < x.count {
            var g = 1.0
            if i < ramp { g = 0.5 - 0.5 * cos(.pi * Double(i) / Double(ramp)) }
            if n - 1 - i < ramp { g = 0.5 - 0.5 * cos(.pi * Double(n - 1 - i) / Double(ramp)) }
            x[s + i] += Float(amplitude * g * sin(2 * .pi * frequency * Double(i) / Double(rate)))
        }
    }

    /// Writes mono float32 samples as a 16 kHz WAV file (IEEE float), for file.input.
    static func writeWAV(_ samples: [Float], to path: String, rate: Int = rate) throws {
        var d = Data()
        func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
        let bytes = UInt32(samples.count * 4)
        d.append(contentsOf: Array("RIFF".utf8))
        u32(36 + bytes)
        d.append(contentsOf: Array("WAVE".utf8))
        d.append(contentsOf: Array("fmt ".utf8))
        u32(16)
        u16(3)
        u16(1)
        u32(UInt32(rate))
        u32(UInt32(rate * 4))
        u16(4)
        u16(32)
        d.append(contentsOf: Array("data".utf8))
        u32(bytes)
        samples.withUnsafeBytes { d.append(contentsOf: $0) }
        try d.write(to: URL(fileURLWithPath: path))
    }

    /// Reads a 16-bit or float mono WAV written by sox or `writeWAV` (enough for test files).
    static func readWAV(_ path: String) throws -> [Float] {
        let d = try Data(contentsOf: URL(fileURLWithPath: path))
        func u16(_ o: Int) -> Int { Int(d[o]) | Int(d[o + 1]) << 8 }
        func u32(_ o: Int) -> Int { u16(o) | u16(o + 2) << 16 }
        var o = 12
        var format = 1
        var bits = 16
        while o + 8 <= d.count {
            let id = String(decoding: d[o..<(o + 4)], as: UTF8.self)
            let size = u32(o + 4)
            if id == "fmt " {
                format = u16(o + 8)
                bits = u16(o + 22)
            }
            if id == "data" {
                let body = d[(o + 8)..<min(d.count, o + 8 + size)]
                return body.withUnsafeBytes { raw -> [Float] in
                    if format == 3 && bits == 32 { return Array(raw.bindMemory(to: Float.self)) }
                    return raw.bindMemory(to: Int16.self).map { Float(Int16(littleEndian: $0)) / 32768 }
                }
            }
            o += 8 + size + (size & 1)
        }
        throw SignalError.noData(path)
    }

    /// Time (s) of the first and last 10 ms frame whose RMS is above `level` (a clean signal's speech span).
    static func activeSpan(_ x: [Float], level: Double = 0.003) -> (start: Double, end: Double)? {
        let hop = rate / 100
        var first: Int?
        var last: Int?
        for f in 0..<(x.count / hop) where rms(Array(x[(f * hop)..<((f + 1) * hop)])) > level {
            if first == nil { first = f }
            last = f
        }
        guard let first, let last else { return nil }
        return (Double(first) / 100, Double(last + 1) / 100)
    }
}

enum SignalError: Error { case noData(String) }

/// Regions (seconds) from a detector run over samples, fed in blocks of `block`.
struct DetectorRun {
    var regions: [(start: Double, end: Double)] = []
    var events: [VADEvent] = []

    init(_ samples: [Float], settings: VADSettings = .normal, block: Int = 512) {
        let vad = VoiceActivityDetector(settings: settings)
        var start: Int64?
        var regions: [(Double, Double)] = []
        var events: [VADEvent] = []
        let handler: (VADEvent) -> Void = { event in
            switch event {
            case .started(let s):
                start = s
                events.append(event)
            case .ended(let e):
                regions.append((Double(start ?? 0) / 16000, Double(e) / 16000))
                events.append(event)
            case .paused, .resumed:
                events.append(event)
            case .frame: break
            }
        }
        samples.withUnsafeBufferPointer { all in
            var i = 0
            while i < all.count {
                let n = min(block, all.count - i)
                vad.process(UnsafeBufferPointer(rebasing: all[i..<(i + n)]), handler)
                i += n
            }
        }
        vad.finish(handler)
        self.regions = regions
        self.events = events
    }
}

/// Records every audio block it receives (copies the samples), for the gated output of `vad`.
final class GatedAudio: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "test.gated", summary: "", category: .sink,
        ports: [.audioInput("in", .any, doc: "")], parameters: [])
    static let type = NodeType(descriptor, make: { _ in GatedAudio() })
    var blocks: [(start: Int64, samples: [Float])] = []
    var format: AudioFormat?
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks.append((block.startFrame, Array(block.samples)))
        format = block.format
    }
}

/// A 16 kHz file read in blocks of 256 that is interrupted once, as a live input whose server went away:
/// at sample `at` it emits a discontinuity, and the audio after it comes `gap` samples later on the clock.
final class InterruptedSource: SourceNode {
    static let descriptor = NodeDescriptor(
        typeName: "test.interrupted", summary: "", category: .input,
        ports: [.audioOutput("out", format: .computed, doc: "")],
        parameters: [
            .path("path", required: true, doc: ""),
            .integer("at", default: 0, range: 0...100_000_000, doc: ""),
            .integer("gap", default: 0, range: 0...100_000_000, doc: ""),
        ])
    static let type = NodeType(
        descriptor, formats: { _ in ["out": AudioFormat(sampleRate: 16000, channelCount: 1)] },
        maxOutputFrames: { _, _, _ in 256 }, make: { try InterruptedSource($0.config) })
    let samples: [Float]
    let at: Int, gap: Int
    var pos = 0
    var interrupted = false

    init(_ config: NodeConfig) throws {
        samples = try Signals.readWAV(config.string("path") ?? "")
        at = config.integer("at") ?? 0
        gap = config.integer("gap") ?? 0
    }

    func pull(output: NodeOutput) throws -> Bool {
        guard pos < samples.count else { return false }
        if !interrupted && pos >= at {
            interrupted = true
            try output.emitDiscontinuity()
        }
        let n = min(256, samples.count - pos, interrupted ? Int.max : at - pos)
        try samples.withUnsafeBufferPointer { b in
            try output.emit(
                AudioBlock(
                    samples: UnsafeBufferPointer(rebasing: b[pos..<(pos + n)]),
                    format: AudioFormat(sampleRate: 16000, channelCount: 1),
                    startFrame: Int64(pos + (interrupted ? gap : 0))))
        }
        pos += n
        return true
    }

    var position: Double { Double(pos) / 16000 }
}

/// Runs graph text with the built-in types, `collect` and `test.gated`.
enum VADHarness {
    static let registry: NodeRegistry = {
        var r = BuiltinNodes.registry()
        try! r.register(EventCollector.type)
        try! r.register(GatedAudio.type)
        try! r.register(InterruptedSource.type)
        return r
    }()

    static func plan(_ text: String) throws -> GraphPlan {
        try GraphPlanner(registry: registry).plan(GraphParser.parse(text, file: "vad-test.graph", environment: [:]))
    }

    /// file.input { block } -> vad { parameters } -> events to `collect` (and audio to `test.gated`).
    static func run(file: String, block: Int = 1024, parameters: String = "") throws
        -> (events: [GraphEvent], audio: GatedAudio, runner: InlineGraph)
    {
        let text = """
            node src = file.input { path: "\(file)", block: \(block) }
            node v = vad { \(parameters) }
            node ev = collect
            node au = test.gated
            src -> v
            v.events -> ev
            v.out -> au
            """
        // The inline executor: this thread, the sample clock, the same events every time.
        let runner = try InlineGraph(plan: plan(text), registry: registry)
        let report = try runner.run()
        guard report.leftUnconsumed.isEmpty else {
            throw SpeechGraphError("left unconsumed: \(report.leftUnconsumed.joined(separator: "; "))")
        }
        let events = (runner.node(named: "ev") as! EventCollector).events
        return (events, runner.node(named: "au") as! GatedAudio, runner)
    }

    /// speechStarted/speechEnded pairs as (start, end) seconds.
    static func regions(_ events: [GraphEvent]) -> [(start: Double, end: Double)] {
        var out: [(Double, Double)] = []
        var start: Double?
        for e in events {
            switch e {
            case .speechStarted(_, let t): start = t
            case .speechEnded(_, let t):
                if let s = start {
                    out.append((s, t))
                    start = nil
                }
            default: break
            }
        }
        return out
    }
}

/// Speech made with flite, padded with silence and mixed with sox-made noise at a set SNR (the SNR is speech
/// RMS over the spoken span against noise RMS, as the corpus README defines it).
struct SpeechFixture: Sendable {
    let dir = TemporaryDirectory()
    /// The padded clean speech and where, in seconds, each sentence is spoken (frames above -50 dBFS).
    let clean: [Float]
    let spans: [(start: Double, end: Double)]
    let cleanPath: String

    /// `sentences` spoken one after the other, `lead` s of silence before, `gap` s between, `tail` s after.
    init(_ sentences: [String], lead: Double = 1.5, gap: Double = 1.2, tail: Double = 1.5) throws {
        var parts: [String] = []
        var spans: [(Double, Double)] = []
        var t = lead
        for (i, s) in sentences.enumerated() {
            let raw = dir.path("s\(i).wav")
            let padded = dir.path("p\(i).wav")
            try TestSpeech.synthesize(s, to: raw)
            let samples = try Signals.readWAV(raw)
            let span = Signals.activeSpan(samples)!
            spans.append((t + span.start, t + span.end))
            let before = i == 0 ? lead : 0
            let after = i == sentences.count - 1 ? tail : gap
            try TestSpeech.sox([raw, "-e", "floating-point", "-b", "32", padded, "pad", "\(before)", "\(after)"])
            parts.append(padded)
            t += Double(samples.count) / 16000 + after
        }
        cleanPath = dir.path("clean.wav")
        try TestSpeech.sox(parts + ["-e", "floating-point", "-b", "32", cleanPath])
        clean = try Signals.readWAV(cleanPath)
        self.spans = spans
    }

    var duration: Double { Double(clean.count) / 16000 }

    /// The speech mixed with sox `whitenoise` or `pinknoise` at `snr` dB; returns the file's path.
    func noisy(snr: Double, noise: String = "whitenoise", extraSeconds: Double = 0) throws -> String {
        let noisePath = dir.path("\(noise).wav")
        let out = dir.path("mix-\(noise)-\(snr)-\(extraSeconds).wav")
        var speechPath = cleanPath
        if extraSeconds > 0 {
            speechPath = dir.path("clean+\(extraSeconds).wav")
            try TestSpeech.sox([
                cleanPath, "-e", "floating-point", "-b", "32", speechPath, "pad", "0", "\(extraSeconds)",
            ])
        }
        try TestSpeech.sox([
            "-R", "-n", "-r", "16000", "-c", "1", "-e", "floating-point", "-b", "32", noisePath,
            "synth", "\(duration + extraSeconds)", noise,
        ])
        let noiseRMS = Signals.rms(try Signals.readWAV(noisePath))
        let speech = spans.flatMap { clean[Int($0.start * 16000)..<Int($0.end * 16000)] }
        let gain = Signals.rms(speech) / noiseRMS / pow(10, snr / 20)
        try TestSpeech.sox([
            "-m", "-v", "1", speechPath, "-v", String(format: "%.6f", gain), noisePath,
            "-e", "floating-point", "-b", "32", out,
        ])
        return out
    }
}

enum Sentences {
    static let call = "please call my mother at seven in the evening"
    static let weather = "the weather today is cold and windy with a chance of rain"
    static let door = "open the door and turn on the light in the kitchen"
}
