import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

/// Records every audio block it receives (copies the samples).
final class AudioRecorder: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "test.record", summary: "", category: .sink,
        ports: [.audioInput("in", .any, doc: "")], parameters: [])
    nonisolated(unsafe) static var last: AudioRecorder?
    static let type = NodeType(
        descriptor,
        make: { _ in
            let r = AudioRecorder()
            last = r
            return r
        })
    var samples: [Float] = []
    var starts: [Int64] = []
    var counts: [Int] = []
    var format: AudioFormat?
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        samples.append(contentsOf: block.samples)
        starts.append(block.startFrame)
        counts.append(block.frameCount)
        format = block.format
    }
}

@Suite(.serialized, .tags(.model)) struct AudioNodeTests {
    let dir = TemporaryDirectory()

    /// Plans and runs `text` with the recorder available; returns what it recorded.
    func record(_ text: String) throws -> AudioRecorder {
        var registry = Harness.registry
        try registry.register(AudioRecorder.type)
        let plan = try GraphPlanner(registry: registry).plan(GraphParser.parse(text, file: "t.graph", environment: [:]))
        try InlineGraph(plan: plan, registry: registry).run()
        return AudioRecorder.last!
    }

    func makeSine(_ path: String, rate: Int, channels: Int, seconds: Double, frequency: Double = 440) throws {
        try TestSpeech.sox([
            "-n", "-r", "\(rate)", "-c", "\(channels)", "-b", "16", path,
            "synth", "\(seconds)", "sine", "\(frequency)", "vol", "0.5",
        ])
    }

    @Test func fileInputDeliversEveryFrameInOrder() throws {
        let wav = dir.path("a.wav")
        try makeSine(wav, rate: 16000, channels: 1, seconds: 1.0)
        let r = try record(
            """
            node src = file.input { path: "\(wav)", block: 300 }
            node rec = test.record
            src -> rec
            """)
        #expect(r.samples.count == 16000)
        #expect(r.counts.allSatisfy { $0 <= 300 })
        var expected: Int64 = 0
        for (start, count) in zip(r.starts, r.counts) {
            #expect(start == expected)
            expected += Int64(count)
        }
        // 0.5 amplitude sine: RMS 0.354.
        let rms = (r.samples.map { Double($0 * $0) }.reduce(0, +) / Double(r.samples.count)).squareRoot()
        #expect(abs(rms - 0.3536) < 0.005)
    }

    @Test func loopPlaysTheFileAgainWithContinuousTime() throws {
        let wav = dir.path("a.wav")
        try makeSine(wav, rate: 8000, channels: 1, seconds: 0.5)
        let r = try record(
            """
            node src = file.input { path: "\(wav)", loop: 3 }
            node rec = test.record { }
            src -> rec
            """)
        #expect(r.samples.count == 12000)
        #expect(r.starts.last! + Int64(r.counts.last!) == 12000)
    }

    @Test func channelSelectAndMixDown() throws {
        // Left: a sine. Right: silence.
        let left = dir.path("l.wav")
        let right = dir.path("r.wav")
        let stereo = dir.path("s.wav")
        try makeSine(left, rate: 16000, channels: 1, seconds: 0.5)
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", right, "trim", "0", "0.5"])
        try TestSpeech.sox(["-M", left, right, stereo])
        func rms(_ channel: Int) throws -> Double {
            let r = try record(
                """
                node src = file.input { path: "\(stereo)", channel: \(channel) }
                node rec = test.record
                src -> rec
                """)
            #expect(r.format?.channelCount == 1)
            return (r.samples.map { Double($0 * $0) }.reduce(0, +) / Double(r.samples.count)).squareRoot()
        }
        #expect(abs(try rms(1) - 0.3536) < 0.005)
        #expect(try rms(2) < 0.0001)
        #expect(abs(try rms(0) - 0.3536 / 2) < 0.005)
        #expect(throws: SpeechGraphError.self) {
            _ = try Harness.plan(
                """
                node src = file.input { path: "\(stereo)", channel: 3 }
                node out = collect
                node asr = recognizer
                src -> asr -> out
                """)
        }
    }

    @Test(arguments: [48000, 44100, 22050, 8000])
    func resampleKeepsFrequencyLevelAndLength(rate: Int) throws {
        let wav = dir.path("s\(rate).wav")
        try makeSine(wav, rate: rate, channels: 1, seconds: 1.0, frequency: 1000)
        let r = try record(
            """
            node src = file.input { path: "\(wav)" }
            node rs = resample { rate: 16 kHz }
            node rec = test.record
            src -> rs -> rec
            """)
        #expect(r.format == AudioFormat(sampleRate: 16000, channelCount: 1))
        #expect(abs(r.samples.count - 16000) <= 2)
        var expected: Int64 = 0
        for (start, count) in zip(r.starts, r.counts) {
            #expect(start == expected)
            expected += Int64(count)
        }
        // Away from the edges: level and frequency unchanged (1 kHz: 2000 zero crossings a second).
        let middle = Array(r.samples[1600..<14400])
        let rms = (middle.map { Double($0 * $0) }.reduce(0, +) / Double(middle.count)).squareRoot()
        #expect(abs(rms - 0.3536) < 0.01)
        let crossings = zip(middle, middle.dropFirst()).filter { ($0 < 0) != ($1 < 0) }.count
        #expect(abs(crossings - 1600) <= 4)
    }

    @Test func plannerInsertsTheConvertersTheRecognizerNeeds() throws {
        let wav = dir.path("s.wav")
        try makeSine(wav, rate: 48000, channels: 2, seconds: 0.2)
        let plan = try Harness.plan(
            """
            node src = file.input { path: "\(wav)" }
            node asr = recognizer
            node out = collect
            src -> asr -> out
            """)
        #expect(plan.nodes.map(\.typeName) == ["file.input", "resample", "recognizer", "collect"])
        #expect(plan.nodes[1].isInserted)
        #expect(plan.nodes[2].inputFormats["in"] == AudioFormat(sampleRate: 16000, channelCount: 1))
    }

    @Test func downmixAveragesChannels() throws {
        var registry = Harness.registry
        try registry.register(AudioRecorder.type)
        try registry.register(StereoSource.type)
        let spec = try GraphParser.parse(
            """
            node src = test.stereo
            node mix = downmix
            node rec = test.record
            src -> mix -> rec
            """, file: "t.graph", environment: [:])
        try InlineGraph(plan: GraphPlanner(registry: registry).plan(spec), registry: registry).run()
        let r = AudioRecorder.last!
        #expect(r.samples == [0.5, 0.5, 0, -0.25])
        #expect(r.format == AudioFormat(sampleRate: 16000, channelCount: 1))
    }
}

/// Emits one fixed stereo block.
final class StereoSource: SourceNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.stereo", summary: "", category: .input,
            ports: [.audioOutput("out", format: .computed, doc: "")], parameters: []),
        formats: { _ in ["out": AudioFormat(sampleRate: 16000, channelCount: 2)] },
        maxOutputFrames: { _, _, _ in 4 },
        make: { _ in StereoSource() })
    var done = false
    let samples: [Float] = [1, 0, 0.5, 0.5, -1, 1, 0.25, -0.75]
    var position: Double { done ? 4.0 / 16000 : 0 }
    func pull(output: NodeOutput) throws -> Bool {
        if done { return false }
        done = true
        try samples.withUnsafeBufferPointer {
            try output.emit(
                AudioBlock(samples: $0, format: AudioFormat(sampleRate: 16000, channelCount: 2), startFrame: 0))
        }
        return true
    }
}

/// WAV streams as `speechgraph transcribe -` reads them.
@Suite(.tags(.model)) struct WAVStreamTests {
    /// Telephony audio (`arecord -f MU_LAW`, `sox -e u-law`): every one of the 256 codes decodes as sox decodes it.
    @Test("G.711 u-law and A-law WAV streams decode every code as sox does", arguments: ["u-law", "a-law"])
    func g711(encoding: String) throws {
        let dir = TemporaryDirectory()
        let codes = dir.path("codes.raw")
        try Data((0...255).map { UInt8($0) }).write(to: URL(fileURLWithPath: codes))
        let raw = ["-t", encoding == "u-law" ? "ul" : "al", "-r", "8000", "-c", "1", codes]
        let wav = dir.path("codes.wav")
        let linear = dir.path("linear.raw")
        try TestSpeech.sox(raw + ["-e", encoding, wav])
        try TestSpeech.sox(raw + ["-t", "s16", linear])
        let expected = try Data(contentsOf: URL(fileURLWithPath: linear)).withUnsafeBytes {
            Array($0.bindMemory(to: Int16.self))
        }
        let file = try #require(FileHandle(forReadingAtPath: wav))
        defer { try? file.close() }
        let reader = try AudioStreamReader(rate: nil, channels: 1, fd: file.fileDescriptor, name: "codes.wav")
        #expect(reader.sampleRate == 8000)
        let decoded = reader.readAll().map { Int16(($0 * 32768).rounded()) }
        #expect(expected.count == 256)
        #expect(decoded == expected)
    }

    /// An MPEG frame header is 32 bits that raw samples hold by chance (-1 then a quiet sample is 0xFF 0xFF ...):
    /// a stream is taken for MPEG audio only when a second header stands where the first frame ends.
    @Test func oneFrameHeaderByChanceIsNotAnMP3Stream() throws {
        let dir = TemporaryDirectory()
        // A header of an MPEG-1 Layer III frame at 128 kbit/s and 44.1 kHz, 417 bytes long.
        let header: [UInt8] = [0xFF, 0xFB, 0x90, 0x00]
        let noise = (0..<8000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        for (name, bytes, mpeg) in [
            ("one header", header + noise, false),
            ("two headers in their places", header + noise.prefix(413) + header + noise, true),
            ("a second header one byte off", header + noise.prefix(414) + header + noise, false),
        ] {
            let path = dir.path("stream.bin")
            try Data(bytes).write(to: URL(fileURLWithPath: path))
            let file = try #require(FileHandle(forReadingAtPath: path))
            defer { try? file.close() }
            do {
                _ = try AudioStreamReader(rate: nil, channels: 1, fd: file.fileDescriptor, name: "in")
                #expect(mpeg, "\(name): taken for audio")
            } catch let error as AudioStreamReader.Failure {
                // Two headers with junk between them: MPEG, which libmpg123 then finds no audio in.
                #expect(
                    error.description.contains(mpeg ? "no MPEG audio libmpg123 can read" : "neither a WAV nor an MP3"),
                    "\(name): \(error.description)")
            }
        }
    }

    @Test("a WAV stream whose header says more than 64 channels: said as the header's, not as a parameter's")
    func tooManyChannelsInAStream() throws {
        let dir = TemporaryDirectory()
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let channels = 255
        let fmt =
            le(1, 2) + le(channels, 2) + le(16000, 4) + le(16000 * 2 * channels, 4) + le(2 * channels, 2) + le(16, 2)
        let bytes =
            Array("RIFF".utf8) + le(36 + 510, 4) + Array("WAVEfmt ".utf8) + le(16, 4) + fmt
            + Array("data".utf8) + le(510, 4) + [UInt8](repeating: 0, count: 510)
        let path = dir.path("many.wav")
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let file = try #require(FileHandle(forReadingAtPath: path))
        defer { try? file.close() }
        #expect(throws: AudioStreamReader.Failure.self) {
            do {
                _ = try AudioStreamReader(rate: nil, channels: 1, fd: file.fileDescriptor, name: "in")
            } catch let error as AudioStreamReader.Failure {
                #expect(error.description == "in: the WAV header says 255 channels: at most 64 are taken")
                throw error
            }
        }
    }
}
