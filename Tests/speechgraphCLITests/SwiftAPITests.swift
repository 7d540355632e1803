import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// The Swift API of docs/api.md, as an app uses it.
@Suite struct SwiftAPITests {
    let dir = TemporaryDirectory()

    @Test("a graph file's results as an AsyncSequence: volatile then final, runs with times and confidences")
    func resultsOfAGraphFile() async throws {
        let wav = dir.path("call.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let file = dir.url.appendingPathComponent("call.graph")
        try """
        node speech = file.input { path: "\(wav)" }
        node asr    = recognizer { mode: streaming, volatile: 100 ms, alternatives: 3 }
        speech -> asr
        """.write(to: file, atomically: true, encoding: .utf8)
        let graph = try SpeechGraph(contentsOf: file)
        try graph.start()
        var volatile = 0
        var finals: [SpeechResult] = []
        for try await result in graph.results(of: "asr") {
            if result.isFinal { finals.append(result) } else { volatile += 1 }
        }
        #expect(volatile >= 1)
        let final = try #require(finals.first)
        #expect(finals.count == 1)
        #expect(final.plainText.contains("mother"))
        #expect(String(final.text.characters) == final.plainText)
        var words = 0
        for run in final.text.runs where run.transcriptionConfidence != nil {
            let range = try #require(run.audioTimeRange)
            #expect(range.start >= final.range.start && range.end <= final.range.end + 0.01)
            #expect((0...1).contains(run.transcriptionConfidence!))
            words += 1
        }
        #expect(words == final.words.count && words >= 5)
        #expect(final.matches(["call my mother"]) && !final.matches(["open the door"]))
        #expect(final.alternatives.count >= 2)
    }

    @Test("matches() looks in the alternatives when the best reading does not match")
    func matchesLooksInAlternatives() {
        let t = Transcription(
            utterance: 1, isFinal: true, range: TimeRange(start: 0, end: 1), text: "finding memo",
            alternatives: [
                Alternative(text: "finding memo", score: 0), Alternative(text: "finding nemo", score: -0.2),
            ],
            node: "asr")
        let r = SpeechResult(t)
        #expect(r.matches(["Nemo", "dory"]))
        #expect(!r.matches(["dory"]))
    }

    @Test("pushed audio, a graph built in code, settings, and typed errors")
    func pushedAudioAndBuilder() async throws {
        let wav = dir.path("w.wav")
        try TestSpeech.synthesize("the weather today is cold and windy", to: wav)
        let file = try AudioFile(path: wav)
        var samples = [Float](repeating: 0, count: Int(file.frameCount))
        let read = try samples.withUnsafeMutableBufferPointer { try file.read(into: $0.baseAddress!, frames: $0.count) }
        samples.removeLast(samples.count - read)
        let audio = samples
        var builder = GraphBuilder()
        builder.node("mic", "push.input", ["rate": "16 kHz"])
        builder.node("asr", "recognizer", ["mode": "streaming"])
        builder.connect("mic", "asr")
        let graph = try SpeechGraph(builder)
        let mic = try graph.input("mic")
        try graph.start()
        let results = graph.results(of: "asr")
        Thread.detachNewThread {
            var at = 0
            while at < audio.count {
                let n = min(1000, audio.count - at)
                mic.push(Array(audio[at..<at + n]))
                at += n
            }
            mic.end()
        }
        var text = ""
        for try await r in results where r.isFinal { text += r.plainText }
        #expect(text.contains("weather"), "\(text)")

        #expect(throws: SpeechGraph.Error.self) { try SpeechGraph(source: "node a = nonsense") }
        do {
            _ = try SpeechGraph(
                source: "node a = file.input { path: \"x.wav\" }\nnode b = console\na -> b", name: "bad.graph",
                settings: ["a.blocksize": "3"])
            Issue.record("an unknown setting must fail")
        } catch SpeechGraph.Error.invalidGraph(let lines) {
            #expect(lines.contains { $0.contains("unknown parameter 'blocksize'") }, "\(lines)")
        }
        #expect(throws: SpeechGraph.Error.self) { try graph.input("asr") }
    }
}

/// docs/api.md's complete program, built as a separate package that depends on this one by path, run on a
/// synthesised file.
@Suite struct APIExampleTests {
    let dir = TemporaryDirectory()

    @Test("the docs/api.md program builds as a separate package and sees volatile and final results")
    func documentedProgramRuns() throws {
        let doc = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let after = try #require(doc.range(of: "## A complete program"))
        let rest = doc[after.upperBound...]
        let open = try #require(rest.range(of: "```swift\n"))
        let close = try #require(rest[open.upperBound...].range(of: "```"))
        let program = String(rest[open.upperBound..<close.lowerBound])
        let package = dir.url.appendingPathComponent("hello")
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Sources/Hello"), withIntermediateDirectories: true)
        try program.write(
            to: package.appendingPathComponent("Sources/Hello/main.swift"), atomically: true, encoding: .utf8)
        let root = TestPaths.packageRoot.standardizedFileURL
        try """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(
            name: "Hello",
            dependencies: [.package(path: "\(root.path)")],
            targets: [
                .executableTarget(
                    name: "Hello",
                    dependencies: [.product(name: "SpeechGraph", package: "\(root.lastPathComponent.lowercased())")]),
                .executableTarget(
                    name: "Seven",
                    dependencies: [.product(name: "SpeechGraph", package: "\(root.lastPathComponent.lowercased())")]),
                .executableTarget(
                    name: "Dictation",
                    dependencies: [.product(name: "SpeechGraph", package: "\(root.lastPathComponent.lowercased())")]),
            ]
        )
        """.write(to: package.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        // Apple's seven steps, as docs/api.md writes them out, beside it in the same package.
        let apple = try #require(doc.range(of: "## Apple's shape"))
        let appleOpen = try #require(doc[apple.upperBound...].range(of: "```swift\n"))
        let appleClose = try #require(doc[appleOpen.upperBound...].range(of: "```"))
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Sources/Seven"), withIntermediateDirectories: true)
        try String(doc[appleOpen.upperBound..<appleClose.lowerBound]).write(
            to: package.appendingPathComponent("Sources/Seven/main.swift"), atomically: true, encoding: .utf8)
        // The SpokenWord-shaped DictationTranscriber program, the next block.
        let dictation = try #require(doc[appleClose.upperBound...].range(of: "```swift\n"))
        let dictationClose = try #require(doc[dictation.upperBound...].range(of: "```"))
        try FileManager.default.createDirectory(
            at: package.appendingPathComponent("Sources/Dictation"), withIntermediateDirectories: true)
        try String(doc[dictation.upperBound..<dictationClose.lowerBound]).write(
            to: package.appendingPathComponent("Sources/Dictation/main.swift"), atomically: true, encoding: .utf8)
        let build = try Run.process("/usr/bin/env", ["swift", "build"], currentDirectory: package, timeout: 900)
        try #require(build.status == 0, "\(build.stdout.suffix(3000)) \(build.stderr.suffix(3000))")
        let wav = dir.path("call.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let run = try Run.process(package.appendingPathComponent(".build/debug/Hello").path, [wav])
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.contains { $0.hasPrefix("…") }, "volatile results: \(run.stdout)")
        // Final words: 'start-end confidence word', times and confidences from the AttributedString's runs.
        let words = lines.compactMap { $0.wholeMatch(of: /\s*(\d+\.\d\d)-\s*(\d+\.\d\d) (\d\.\d\d) (\S+)/) }
        #expect(words.count >= 5, "\(run.stdout)")
        #expect(words.contains { $0.4 == "mother" })
        #expect(lines.contains("heard it"))

        // Apple's seven steps give what `speechgraph transcribe` gives, for 16 kHz mono and 44.1 kHz stereo.
        let stereo = dir.path("call44.wav")
        try TestSpeech.sox([wav, "-r", "44100", "-c", "2", stereo])
        for file in [wav, stereo] {
            let seven = try Run.process(package.appendingPathComponent(".build/debug/Seven").path, [file])
            let transcribe = try Run.speechgraph(["transcribe", file])
            #expect(seven.status == 0 && transcribe.status == 0, "\(seven.stderr) \(transcribe.stderr)")
            let text = seven.stdout.split(separator: "\n").joined(separator: " ")
            #expect(text == transcribe.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\(seven.stdout)")
            #expect(text.contains("mother"))
        }
        let dictated = try Run.process(package.appendingPathComponent(".build/debug/Dictation").path, [wav])
        #expect(dictated.status == 0, "\(dictated.stderr)")
        let out = dictated.stdout.split(separator: "\n")
        #expect(out.contains { $0.hasPrefix("volatile: ") }, "\(dictated.stdout)")
        #expect(out.contains { $0.hasPrefix("final: ") && $0.contains("mother") }, "\(dictated.stdout)")
    }
}
