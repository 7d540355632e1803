import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Every input `make fuzz` kept (Tests/Fuzz/: inputs that reached new code, and any that crashed once) goes
/// through the same paths as in the fuzzer, here without its sanitizers: a trap fails the whole test run.
@Suite(.tags(.model)) struct FuzzRegressionTests {
    static func inputs(_ target: String) throws -> [URL] {
        let dir = TestPaths.packageRoot.appendingPathComponent("Tests/Fuzz/\(target)")
        return try FileManager.default.contentsOfDirectory(at: dir, includingPropertiesForKeys: nil)
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    @Test func graphParserInputs() throws {
        let files = try Self.inputs("graph-parser")
        #expect(files.count >= 10)
        let planner = GraphPlanner(registry: BuiltinNodes.registry())
        var parsed = 0
        for file in files {
            let text = String(decoding: try Data(contentsOf: file), as: UTF8.self)
            do {
                let spec = try GraphParser.parse(text, file: file.lastPathComponent, environment: ["SET": "1"])
                _ = try planner.validate(spec, overrides: [])
                parsed += 1
            } catch let error as GraphError {
                #expect(!error.diagnostics.isEmpty)
                #expect(error.diagnostics.allSatisfy { !$0.description.contains("\n") }, "\(file.lastPathComponent)")
            } catch {}
        }
        #expect(parsed < files.count, "most kept inputs are broken graphs")
    }

    @Test func audioInputs() throws {
        let files = try Self.inputs("audio-input")
        #expect(files.count >= 10)
        var opened = 0
        for file in files {
            if let audio = try? AudioFile(path: file.path) {
                opened += 1
                var guard_ = SampleGuard()
                var buffer = [Float](repeating: 0, count: 4096 * audio.channelCount)
                var total = 0
                while total < 60 * audio.sampleRate,
                    let n = try? buffer.withUnsafeMutableBufferPointer({
                        try audio.read(into: $0.baseAddress!, frames: 4096)
                    }), n > 0
                {
                    buffer.withUnsafeMutableBufferPointer { guard_.clean($0, channels: audio.channelCount) }
                    #expect(buffer.allSatisfy { $0.isFinite })
                    total += n
                }
            }
            let fd = open(file.path, O_RDONLY)
            try #require(fd >= 0)
            defer { close(fd) }
            for rate in [nil, 16000] as [Int?] {
                lseek(fd, 0, SEEK_SET)
                if let stream = try? AudioStreamReader(rate: rate, channels: 2, fd: fd) {
                    #expect(AudioFormat.supportedRates.contains(stream.sampleRate))
                    _ = stream.readAll(limit: 1 << 20)
                }
            }
        }
        #expect(opened > 0, "some kept inputs are audio files libsndfile reads")
    }
}
