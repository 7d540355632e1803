import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// The Swift API of docs/api.md, as an app uses it.
@Suite(.tags(.model)) struct SwiftAPITests {
    let dir = TemporaryDirectory()

    /// `text` synthesised into `file`, read whole into one buffer, as an app reads a file with AVFAudio.
    func synthesizedBuffer(_ text: String, file: String) throws -> AVAudioPCMBuffer {
        let wav = dir.path(file)
        try TestSpeech.synthesize(text, to: wav)
        let audio = try AVAudioFile(forReading: URL(fileURLWithPath: wav))
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: audio.processingFormat, frameCapacity: 1 << 20))
        try audio.read(into: buffer)
        return buffer
    }

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
            #expect(range.start.seconds >= final.range.start && range.end.seconds <= final.range.end + 0.01)
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
        let audio = try AudioFile(path: wav).readAll()
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

    @Test("what an app stumbled on: pushing before start, odd stereo chunks, a misspelled node, a setting's error")
    func pushingAsAppsDo() async throws {
        let wav = dir.path("p.wav")
        try TestSpeech.synthesize("open the door and turn on the light", to: wav)
        let mono = try AudioFile(path: wav).readAll()
        // Stereo, both channels the speech, pushed in chunks of an odd number of samples, all before start():
        // more than the node's 0.5 s buffer, so a push must start the graph to make room (it used to wait forever).
        let stereo = mono.flatMap { [$0, $0] }
        var builder = GraphBuilder()
        builder.node("mic", "push.input", ["rate": "16 kHz", "channels": "2", "buffer": "0.5 s"])
        builder.node("asr", "recognizer", ["mode": "utterance"])
        builder.connect("mic", "asr")
        let graph = try SpeechGraph(builder)
        let mic = try graph.input("mic")
        var at = 0
        while at < stereo.count {
            let n = min(1001, stereo.count - at)
            #expect(mic.push(Array(stereo[at..<at + n])))
            at += n
        }
        mic.end()
        try graph.start()
        var text = ""
        for try await r in graph.results(of: "asr") where r.isFinal { text += r.plainText }
        #expect(text.contains("door"), "\(text)")
        #expect(graph.warnings.isEmpty, "\(graph.warnings)")

        // A node that is not there: the sequence says so instead of staying empty.
        do {
            for try await _ in graph.results(of: "ASR") {}
            Issue.record("results(of:) a node that is not there must throw")
        } catch SpeechGraph.Error.noSuchNode(let message) {
            #expect(message.contains("'ASR'"))
        }
        // A node that gives no results: said, not an empty sequence.
        do {
            for try await _ in graph.results(of: "mic") {}
            Issue.record("results(of:) a push.input must throw")
        } catch SpeechGraph.Error.noSuchNode(let message) {
            #expect(message == "node 'mic' is a push.input, which gives no results")
        }
        // A setting's error names the setting, not a command-line option.
        do {
            _ = try SpeechGraph(
                source: "node a = file.input { path: \"\(wav)\" }\nnode b = recognizer\na -> b",
                settings: ["b.mode": "bogus"])
            Issue.record("a bad setting must fail")
        } catch SpeechGraph.Error.invalidGraph(let lines) {
            #expect(lines.contains { $0.contains("setting 'b.mode': ") } && !lines.contains { $0.contains("--set") })
        }
        // What went wrong without stopping the graph is there to read after it: a truncated file.
        let data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let cut = dir.path("cut.wav")
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: cut))
        let truncated = try SpeechGraph(
            source: "node a = file.input { path: \"\(cut)\" }\nnode b = recognizer { mode: utterance }\na -> b")
        try truncated.start()
        try await truncated.finish()
        #expect(truncated.warnings.contains { $0.contains("file is truncated") }, "\(truncated.warnings)")
    }

    @Test(
        "stop() before start(): the sequences end empty, finish() returns, start() does nothing",
        // Only a hang fails it: the limit counts the turns this async test waits for behind the tests queued
        // before it (as many run at once as there are cores), which take minutes on a busy machine.
        .timeLimit(.minutes(5)))
    func stopBeforeStart() async throws {
        let wav = dir.path("s.wav")
        try TestSpeech.synthesize("open the door", to: wav)
        let log = dir.path("log.jsonl")
        try "kept\n".write(toFile: log, atomically: true, encoding: .utf8)
        let graph = try SpeechGraph(
            source: """
                node speech = file.input { path: "\(wav)" }
                node asr    = recognizer { mode: utterance }
                node log    = jsonl { path: "\(log)" }
                speech -> asr -> log
                """)
        // A task already waits for results when the app cancels before starting (it used to wait forever).
        let waiting = Task {
            var n = 0
            for try await _ in graph.results(of: "asr") { n += 1 }
            return n
        }
        graph.stop()
        #expect(try await waiting.value == 0)
        var events = 0
        for await _ in graph.events() { events += 1 }
        #expect(events == 0)
        try graph.start()
        try await graph.finish()
        // Nothing ran: the file its sink would rewrite is as it was.
        #expect(try String(contentsOfFile: log, encoding: .utf8) == "kept\n")
    }

    @Test("Apple's shape: an analyzer made with its input sequence analyses it; a locale with no model is an error")
    func appleShapeAutonomousAndLocale() async throws {
        let buffer = try synthesizedBuffer("good morning", file: "a.wav")
        let transcriber = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .offlineTranscription)
        let (sequence, builder) = AsyncStream.makeStream(of: AnalyzerInput.self)
        let analyzer = SpeechAnalyzer(inputSequence: sequence, modules: [transcriber])
        builder.yield(AnalyzerInput(buffer: buffer))
        builder.finish()
        // No analyzeSequence(_:): the analyzer reads the sequence it was made with.
        try await analyzer.finalizeAndFinishThroughEndOfInput()
        var text = ""
        for try await r in transcriber.results where r.isFinal { text += String(r.text.characters) }
        #expect(text.contains("good morning"), "\(text)")

        // A live sequence that never ends: finalizeAndFinish(through:) stops reading it and finishes.
        let live = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .progressiveTranscription)
        let (stream, mic) = AsyncStream.makeStream(of: AnalyzerInput.self)
        let listening = SpeechAnalyzer(inputSequence: stream, modules: [live])
        mic.yield(AnalyzerInput(buffer: buffer))
        let (firstResult, seen) = AsyncStream.makeStream(of: Void.self)
        let reading = Task {
            var heard = ""
            for try await r in live.results {
                seen.yield()
                if r.isFinal { heard += String(r.text.characters) }
            }
            return heard
        }
        // Once the analyzer has the audio (a volatile result shows it), finish through its time.
        for await _ in firstResult { break }
        try await listening.finalizeAndFinish(through: CMTime(seconds: 1))
        #expect(try await reading.value.contains("good morning"))
        mic.finish()

        let french = SpeechTranscriber(locale: Locale(identifier: "fr_FR"), preset: .offlineTranscription)
        let other = SpeechAnalyzer(modules: [french])
        let (input, feed) = AsyncStream.makeStream(of: AnalyzerInput.self)
        feed.yield(AnalyzerInput(buffer: buffer))
        feed.finish()
        await #expect {
            _ = try await other.analyzeSequence(input)
        } throws: { error in
            guard case .unsupportedLocale(let locale, let installed)? = error as? SpeechGraph.Error else {
                return false
            }
            return locale.identifier == "fr_FR" && installed.contains { $0.identifier == "en_US" }
        }
        await #expect(throws: SpeechGraph.Error.self) { for try await _ in french.results {} }
    }

    @Test("Apple's shape: SpeechTranscriber's options (alternatives), and a transcript's span for a time range")
    func appleShapeOptionsAndTimeRanges() async throws {
        let buffer = try synthesizedBuffer("please call my mother", file: "o.wav")
        let transcriber = SpeechTranscriber(
            locale: Locale(identifier: "en_US"), transcriptionOptions: [],
            reportingOptions: [.volatileResults, .alternativeTranscriptions], attributeOptions: [.audioTimeRange])
        let (sequence, builder) = AsyncStream.makeStream(of: AnalyzerInput.self)
        let analyzer = SpeechAnalyzer(modules: [transcriber])
        builder.yield(AnalyzerInput(buffer: buffer))
        builder.finish()
        let reading = Task {
            var all: [SpeechTranscriptionResult] = []
            for try await r in transcriber.results { all.append(r) }
            return all
        }
        _ = try await analyzer.analyzeSequence(sequence)
        try await analyzer.finalizeAndFinishThroughEndOfInput()
        let results = try await reading.value
        #expect(results.contains { !$0.isFinal }, "volatile results were asked for")
        let final = try #require(results.last { $0.isFinal })
        #expect(!final.alternatives.isEmpty, "alternatives were asked for")
        #expect(String(final.text.characters).contains("mother"))

        // The SpokenWord sample's transcript: a result replaces the text of the audio it covers.
        var transcript = AttributedString("before ") + final.text + AttributedString(" after")
        let words = final.text.runs.compactMap { run in run.audioTimeRange.map { (run.range, $0) } }
        let last = try #require(words.last)
        let span = try #require(
            transcript.rangeOfAudioTimeRangeAttributes(intersecting: last.1))
        #expect(String(transcript[span].characters) == String(final.text[last.0].characters))
        #expect(transcript.rangeOfAudioTimeRangeAttributes(intersecting: CMTimeRange(start: .zero, end: .zero)) == nil)
        let whole = try #require(transcript.rangeOfAudioTimeRangeAttributes(intersecting: final.range))
        transcript.replaceSubrange(whole, with: AttributedString("again"))
        #expect(String(transcript.characters) == "before again after")
    }
}

/// The SpeechAnalyzer side's gaps against Apple's API, closed (issue 55).
@Suite(.tags(.model)) struct AppleAnalyzerTests {
    let dir = TemporaryDirectory()

    /// Speech with `before` and `after` seconds of silence around it, in a file.
    func speech(_ text: String, _ name: String, before: Double = 0, after: Double = 0) throws -> String {
        let said = dir.path("\(name)-said.wav")
        try TestSpeech.synthesize(text, to: said)
        let file = dir.path("\(name).wav")
        try TestSpeech.sox([said, file, "pad", "\(before)", "\(after)"])
        return file
    }

    func buffer(_ path: String) throws -> AVAudioPCMBuffer {
        let audio = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        let buffer = try #require(AVAudioPCMBuffer(pcmFormat: audio.processingFormat, frameCapacity: 1 << 21))
        try audio.read(into: buffer)
        return buffer
    }

    func finals(_ t: SpeechTranscriber) async throws -> [SpeechTranscriber.Result] {
        var out: [SpeechTranscriber.Result] = []
        for try await r in t.results where r.isFinal { out.append(r) }
        return out
    }

    @Test("AssetInventory: the installed model is installed, a language with none unsupported")
    func assetInventory() async throws {
        let english = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .transcription)
        #expect(await AssetInventory.status(forModules: [english]) == .installed)
        #expect(try await AssetInventory.assetInstallationRequest(supporting: [english]) == nil)
        #expect(await AssetInventory.status(forModules: [SpeechDetector()]) == .installed)
        let klingon = DictationTranscriber(locale: Locale(identifier: "tlh"), preset: .longDictation)
        #expect(await AssetInventory.status(forModules: [english, klingon]) == .unsupported)
        await #expect(throws: SpeechGraph.Error.self) {
            _ = try await AssetInventory.assetInstallationRequest(supporting: [klingon])
        }
        #expect(try await AssetInventory.reserve(locale: Locale(identifier: "en_US")))
    }

    @Test("a file: analyzeSequence(from:), the file initialiser that finishes after it, and start(inputSequence:)")
    func files() async throws {
        let path = try speech("good morning", "morning")
        let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        let one = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .transcription)
        let analyzer = SpeechAnalyzer(modules: [one])
        let reading = Task { try await finals(one) }
        let last = try #require(try await analyzer.analyzeSequence(from: file))
        #expect(abs(last.seconds - Double(file.length) / file.processingFormat.sampleRate) < 0.01)
        try await analyzer.finalizeAndFinish(through: last)
        #expect(try await reading.value.map { String($0.text.characters) }.joined().contains("good morning"))

        let two = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .transcription)
        let again = try AVAudioFile(forReading: URL(fileURLWithPath: path))
        _ = try await SpeechAnalyzer(inputAudioFile: again, modules: [two], finishAfterFile: true)
        // Its results end by themselves: the analysis finished after the file.
        #expect(try await finals(two).map { String($0.text.characters) }.joined().contains("good morning"))

        let three = SpeechTranscriber(locale: Locale(identifier: "en_US"), preset: .transcription)
        let started = SpeechAnalyzer(modules: [three])
        let (sequence, feed) = AsyncStream.makeStream(of: AnalyzerInput.self)
        try await started.start(inputSequence: sequence)
        feed.yield(AnalyzerInput(buffer: try buffer(path)))
        feed.finish()
        try await started.finalizeAndFinishThroughEndOfInput()
        #expect(try await finals(three).map { String($0.text.characters) }.joined().contains("good morning"))
    }

    @Test("buffers at their start times (a gap is silence), a later buffer in another format converted")
    func startTimesAndFormats() async throws {
        let first = try buffer(try speech("good morning", "first", after: 0.3))
        let second48 = dir.path("second48.wav")
        try TestSpeech.sox([
            try speech("please call my mother", "second", after: 0.5), "-r", "48000", "-c", "2", second48,
        ])
        let second = try buffer(second48)
        #expect(second.format.sampleRate == 48000 && second.format.channelCount == 2)
        let transcriber = SpeechTranscriber(
            locale: Locale(identifier: "en_US"), transcriptionOptions: [], reportingOptions: [],
            attributeOptions: [.audioTimeRange])
        let analyzer = SpeechAnalyzer(modules: [transcriber])
        let reading = Task { try await finals(transcriber) }
        let firstSeconds = Double(first.frameLength) / 16000
        let (sequence, feed) = AsyncStream.makeStream(of: AnalyzerInput.self)
        feed.yield(AnalyzerInput(buffer: first, bufferStartTime: .zero))
        feed.yield(AnalyzerInput(buffer: second, bufferStartTime: CMTime(seconds: firstSeconds + 3)))
        feed.finish()
        let last = try #require(try await analyzer.analyzeSequence(sequence))
        // The gap and the second buffer (converted to 16 kHz) are counted.
        #expect(abs(last.seconds - (firstSeconds + 3 + Double(second.frameLength) / 48000)) < 0.05)
        try await analyzer.finalizeAndFinish(through: last)
        let results = try await reading.value
        let texts = results.map { String($0.text.characters) }
        #expect(texts.contains { $0.contains("morning") } && texts.contains { $0.contains("mother") }, "\(texts)")
        let mother = try #require(results.first { String($0.text.characters).contains("mother") })
        #expect(mother.range.start.seconds >= firstSeconds + 2.5, "\(mother.range)")
        let word = try #require(mother.text.runs.compactMap(\.audioTimeRange).first)
        #expect(word.start.seconds >= firstSeconds + 2.8)
    }

    @Test("attributeOptions: only the attributes asked for; SpeechTranscriber.Result and DictationTranscriber.Result")
    func attributeOptions() async throws {
        let path = try speech("please call my mother", "attributes")
        for options: Set<SpeechTranscriber.ResultAttributeOption> in [
            [], [.transcriptionConfidence], [.audioTimeRange],
        ] {
            let transcriber = SpeechTranscriber(
                locale: Locale(identifier: "en_US"), transcriptionOptions: [], reportingOptions: [],
                attributeOptions: options)
            let analyzer = SpeechAnalyzer(modules: [transcriber])
            let reading = Task { try await finals(transcriber) }
            let last = try await analyzer.analyzeSequence(from: try AVAudioFile(forReading: URL(fileURLWithPath: path)))
            try await analyzer.finalizeAndFinish(through: try #require(last))
            let final = try #require(try await reading.value.first)
            let runs = final.text.runs.filter {
                !String(final.text[$0.range].characters).trimmingCharacters(in: .whitespaces).isEmpty
            }
            #expect(!runs.isEmpty)
            #expect(runs.allSatisfy { ($0.audioTimeRange != nil) == options.contains(.audioTimeRange) })
            #expect(
                runs.allSatisfy { ($0.transcriptionConfidence != nil) == options.contains(.transcriptionConfidence) })
        }
        let _: DictationTranscriber.Result.Type = SpeechTranscriber.Result.self
    }

    @Test("SpeechDetector: spans of the audio without speech and with it, in order, covering it")
    func speechDetector() async throws {
        let path = try speech("please call my mother at seven in the evening", "detected", before: 1.5, after: 1.5)
        let detector = SpeechDetector(detectionOptions: .init(sensitivityLevel: .medium), reportResults: true)
        let analyzer = SpeechAnalyzer(modules: [detector])
        let reading = Task {
            var spans: [SpeechDetector.Result] = []
            for try await r in detector.results { spans.append(r) }
            return spans
        }
        let last = try #require(
            try await analyzer.analyzeSequence(from: try AVAudioFile(forReading: URL(fileURLWithPath: path))))
        try await analyzer.finalizeAndFinish(through: last)
        let spans = try await reading.value
        #expect(spans.map(\.speechDetected) == [false, true, false], "\(spans.map { ($0.range, $0.speechDetected) })")
        #expect(spans.first?.range.start == .zero && abs((spans.last?.range.end.seconds ?? 0) - last.seconds) < 0.01)
        for (a, b) in zip(spans, spans.dropFirst()) { #expect(a.range.end == b.range.start) }
        let speech = try #require(spans.first { $0.speechDetected })
        #expect(abs(speech.range.start.seconds - 1.5) < 0.3 && speech.range.end.seconds < last.seconds - 0.8)
    }
}

/// docs/api.md's programs, as Examples/ holds them: executable targets that depend on the SpeechGraph library
/// alone, built with the package (`swift build --build-tests`), run on a synthesised file. (Building them as a
/// separate package compiled the whole package and SwiftNIO a second time: over two minutes of CPU per run.)
@Suite(.tags(.model)) struct APIExampleTests {
    let dir = TemporaryDirectory()

    /// The code block after `heading` (or after the end of the previous block) in docs/api.md.
    static func block(_ doc: String, after heading: String?, from start: String.Index) throws -> (String, String.Index)
    {
        var from = start
        if let heading { from = try #require(doc[start...].range(of: heading)).upperBound }
        let open = try #require(doc[from...].range(of: "```swift\n"))
        let close = try #require(doc[open.upperBound...].range(of: "```"))
        return (String(doc[open.upperBound..<close.lowerBound]), close.upperBound)
    }

    @Test("the SpeechGraph product holds the runtime and the nodes, not the CLI; the examples depend on it alone")
    func libraryProductLeavesOutTheCLI() throws {
        // The manifest as SwiftPM reads it (a scratch path of its own: `swift test` holds .build's lock). SwiftPM
        // puts that path's lock files in TMPDIR: this test's directory, so that they go with it.
        try FileManager.default.createDirectory(atPath: dir.path("tmp"), withIntermediateDirectories: true)
        let dump = try Run.process(
            "/usr/bin/env",
            ["swift", "package", "--scratch-path", dir.path("scratch"), "dump-package"],
            environment: ["TMPDIR": dir.path("tmp")], currentDirectory: TestPaths.packageRoot, timeout: 300)
        try #require(dump.status == 0, "\(dump.stderr)")
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(dump.stdout.utf8)) as? [String: Any])
        let products = try #require(manifest["products"] as? [[String: Any]])
        let product = try #require(products.first { $0["name"] as? String == "SpeechGraph" })
        #expect(product["targets"] as? [String] == ["SpeechGraph"])
        #expect((product["type"] as? [String: Any])?["library"] != nil, "\(product)")
        // Each target's dependencies: other targets by name, products as "package:name".
        var dependencies: [String: [String]] = [:]
        for target in try #require(manifest["targets"] as? [[String: Any]]) {
            let name = try #require(target["name"] as? String)
            dependencies[name] = (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency in
                if let byName = dependency["byName"] as? [Any] { return byName.first as? String }
                if let target = dependency["target"] as? [Any] { return target.first as? String }
                if let product = dependency["product"] as? [Any] {
                    return "\(product.count > 1 ? product[1] as? String ?? "" : ""):\(product.first as? String ?? "")"
                }
                return nil
            }
        }
        var closure: Set<String> = []
        var next = ["SpeechGraph"]
        while let name = next.popLast() {
            if closure.insert(name).inserted { next += dependencies[name] ?? [] }
        }
        #expect(closure.contains("SpeechGraphNodes") && closure.contains("SpeechGraphSphinx"), "\(closure.sorted())")
        #expect(!closure.contains("speechgraph"), "\(closure.sorted())")
        #expect(!closure.contains { $0.contains("ArgumentParser") }, "\(closure.sorted())")
        for example in ["Hello", "Seven", "Dictation"] {
            #expect(dependencies["SpeechGraphExample\(example)"] == ["SpeechGraph"])
        }
    }

    @Test("the docs/api.md programs are Examples/ word for word, and see volatile and final results")
    func documentedProgramRuns() throws {
        let doc = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/api.md"), encoding: .utf8)
        let (hello, _) = try Self.block(doc, after: "## A complete program", from: doc.startIndex)
        let (seven, sevenEnd) = try Self.block(doc, after: "## Apple's shape", from: doc.startIndex)
        let (dictation, _) = try Self.block(doc, after: nil, from: sevenEnd)
        var programs: [String: String] = [:]
        for (name, text) in [("Hello", hello), ("Seven", seven), ("Dictation", dictation)] {
            let file = TestPaths.packageRoot.appendingPathComponent("Examples/\(name)/main.swift")
            #expect(try String(contentsOf: file, encoding: .utf8) == text, "docs/api.md and \(file.path) differ")
            let binary = TestPaths.binary.deletingLastPathComponent().appendingPathComponent(
                "SpeechGraphExample\(name)")
            try #require(
                FileManager.default.isExecutableFile(atPath: binary.path),
                "\(binary.path): built by swift build --build-tests")
            programs[name] = binary.path
        }
        let wav = dir.path("call.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let run = try Run.process(try #require(programs["Hello"]), [wav])
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
            let seven = try Run.process(try #require(programs["Seven"]), [file])
            let transcribe = try Run.speechgraph(["transcribe", file])
            #expect(seven.status == 0 && transcribe.status == 0, "\(seven.stderr) \(transcribe.stderr)")
            let text = seven.stdout.split(separator: "\n").joined(separator: " ")
            #expect(text == transcribe.stdout.trimmingCharacters(in: .whitespacesAndNewlines), "\(seven.stdout)")
            #expect(text.contains("mother"))
        }
        let dictated = try Run.process(try #require(programs["Dictation"]), [wav])
        #expect(dictated.status == 0, "\(dictated.stderr)")
        let out = dictated.stdout.split(separator: "\n")
        #expect(out.contains { $0.hasPrefix("volatile: ") }, "\(dictated.stdout)")
        #expect(out.contains { $0.hasPrefix("final: ") && $0.contains("mother") }, "\(dictated.stdout)")
    }
}
