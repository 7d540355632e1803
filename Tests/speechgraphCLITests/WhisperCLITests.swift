import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// `speechgraph transcribe --engine whisper` and `check` of a whisper graph, end to end: the binary, the real
/// faster-whisper with tiny.en from the clone's .venv (make installs it).
@Suite(.tags(.model)) struct WhisperCLITests {
    let dir = TemporaryDirectory()

    @Test func transcribeWithWhisper() throws {
        let wav = dir.path("weather.wav")
        try TestSpeech.synthesize("the weather today is cold and windy with a chance of rain", to: wav)
        let r = try Run.speechgraph(["transcribe", "--engine", "whisper", "--format", "jsonl", wav])
        #expect(r.status == 0, "\(r.stderr)")
        let finals = r.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                o["type"] as? String == "result", o["isFinal"] as? Bool == true
            else { return nil }
            return o
        }
        #expect(finals.count == 1, "\(r.stdout)")
        let text = finals.first?["text"] as? String ?? ""
        let wer = wordErrorRate(
            reference: "the weather today is cold and windy with a chance of rain", hypothesis: text)
        #expect(wer <= 0.2, "'\(text)' (WER \(wer))")
        #expect(text.first?.isUppercase == true && text.last == ".", "'\(text)'")
        #expect((finals.first?["words"] as? [Any])?.isEmpty == false)
        // The words' confidences are Whisper's probabilities calibrated (ConfidenceCalibration.whisper): with
        // --confidence posterior, the probabilities themselves.
        let raw = try Run.speechgraph(
            ["transcribe", "--engine", "whisper", "--format", "jsonl", "--confidence", "posterior", wav])
        #expect(raw.status == 0, "\(raw.stderr)")
        func confidences(_ jsonl: String) -> [Double] {
            jsonl.split(separator: "\n").flatMap { line -> [Double] in
                guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                    o["isFinal"] as? Bool == true, let words = o["words"] as? [[String: Any]]
                else { return [] }
                return words.compactMap { $0["confidence"] as? Double }
            }
        }
        let (calibrated, probabilities) = (confidences(r.stdout), confidences(raw.stdout))
        try #require(calibrated.count == probabilities.count && !calibrated.isEmpty, "\(r.stdout) \(raw.stdout)")
        for (c, p) in zip(calibrated, probabilities) {
            let expected = ConfidenceCalibration.whisper.confidence(posterior: p, utteranceMean: p, duration: 1)
            #expect(abs(c - expected) < 0.002, "\(c) for a probability of \(p): \(expected) expected")
        }
        #expect(calibrated != probabilities)
    }

    /// A minute of pink noise (sox's repeatable generator) in which the vad hears speech once, at 23.5 s: Whisper
    /// reads "You" there (no-speech probability 0.92, the word's probability 0.014), which its own rule keeps. No
    /// word comes out; the utterance's final result does, empty (make bench counts an hour of noise:
    /// whisper_noise_words_per_hour).
    @Test func noiseTheVadLetsThroughGivesNoWords() throws {
        let noise = dir.path("pink.wav")
        try TestSpeech.sox([
            "-R", "-n", "-r", "16000", "-c", "1", "-b", "16", noise, "synth", "60", "pinknoise", "norm", "-20",
        ])
        let r = try Run.speechgraph(["transcribe", "--engine", "whisper", "--format", "jsonl", noise])
        #expect(r.status == 0, "\(r.stderr)")
        let finals = r.stdout.split(separator: "\n").compactMap { line -> [String: Any]? in
            guard let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                o["isFinal"] as? Bool == true
            else { return nil }
            return o
        }
        // Whisper was asked (the vad let noise through), and wrote nothing.
        #expect(!finals.isEmpty, "\(r.stdout)")
        for f in finals {
            #expect(f["text"] as? String == "", "\(f)")
            #expect((f["words"] as? [Any])?.isEmpty ?? true, "\(f)")
        }
    }

    /// A model that is not there is a located `check --plan` error naming where it was looked for.
    @Test func aMissingModelIsALocatedCheckError() throws {
        let graph = dir.path("whisper.graph")
        try """
        node src = file.input { path: "in.wav" }
        node asr = recognizer { engine: whisper, model: "medium.en" }
        node out = console
        src -> asr -> out
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(
            ["check", "--plan", graph],
            environment: ProcessInfo.processInfo.environment.merging(
                ["HF_HUB_CACHE": dir.path("empty-cache")]) { $1 })
        #expect(r.status != 0)
        #expect(r.stderr.contains("\(graph):2:"), "\(r.stderr)")
        #expect(r.stderr.contains("Whisper model 'medium.en' not found"), "\(r.stderr)")
        #expect(r.stderr.contains(dir.path("empty-cache/models--Systran--faster-whisper-medium.en")), "\(r.stderr)")
        // A grammar is PocketSphinx's: said at its parameter.
        try """
        node src = file.input { path: "in.wav" }
        node asr = recognizer { engine: whisper, grammar: "commands.gram" }
        node out = console
        src -> asr -> out
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let g = try Run.speechgraph(["check", graph])
        #expect(g.status != 0)
        #expect(g.stderr.contains("\(graph):2:") && g.stderr.contains("without a grammar"), "\(g.stderr)")
    }

    /// Three sentences with silence between, as one WAV, and a graph that writes their results to a JSON Lines file.
    func threeSentences() throws -> (graph: String, jsonl: String, count: Int) {
        let sentences = [
            "please call my mother at seven in the evening", "the weather today is cold and windy",
            "open the door to the garden",
        ]
        var parts: [String] = []
        for (k, text) in sentences.enumerated() {
            let wav = dir.path("s\(k).wav")
            try TestSpeech.synthesize(text, to: wav)
            let padded = dir.path("p\(k).wav")
            try TestSpeech.sox([wav, padded, "pad", "0.5", "2.5"])
            parts.append(padded)
        }
        let audio = dir.path("three.wav")
        try TestSpeech.sox(parts + [audio])
        let jsonl = dir.path("out.jsonl")
        let graph = dir.path("engine.graph")
        try """
        node src = file.input { path: "\(audio)" }
        node vad = vad
        node asr = recognizer { engine: whisper, mode: utterance }
        node out = jsonl { path: "\(jsonl)" }
        src -> vad -> asr -> out
        vad.events -> asr.control
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        return (graph, jsonl, sentences.count)
    }

    /// The final results in a JSON Lines file so far.
    func finals(in jsonl: String) -> [String] {
        ((try? String(contentsOfFile: jsonl, encoding: .utf8)) ?? "").split(separator: "\n").filter {
            $0.contains("\"isFinal\":true")
        }.map(String.init)
    }

    /// Once the first final result is written, `signal` to the engine's process (speechgraph's faster_whisper child,
    /// started by whichever of its threads first needed it); returns its pid, 0 when none was found.
    func signalEngine(of process: Process, jsonl: String, _ signal: Int32) -> Int32 {
        let deadline = Date().addingTimeInterval(120)
        while finals(in: jsonl).isEmpty && process.isRunning && Date() < deadline { usleep(20_000) }
        let tasks = "/proc/\(process.processIdentifier)/task"
        let children = ((try? FileManager.default.contentsOfDirectory(atPath: tasks)) ?? []).flatMap {
            ((try? String(contentsOfFile: "\(tasks)/\($0)/children", encoding: .utf8)) ?? "").split(separator: " ")
        }
        for child in children.compactMap({ Int32($0) }) {
            let command = (try? String(contentsOfFile: "/proc/\(child)/cmdline", encoding: .utf8)) ?? ""
            if command.contains("faster_whisper") {
                kill(child, signal)
                return child
            }
        }
        return 0
    }

    /// The engine's process killed mid-run: one error, exit status 1, and every final result made before it in the
    /// JSON Lines file.
    @Test func aKilledEngineEndsTheRunWithOneError() throws {
        let (graph, jsonl, count) = try threeSentences()
        var killed: Int32 = 0
        let r = try Run.speechgraph(["run", "--realtime", graph]) { process in
            killed = signalEngine(of: process, jsonl: jsonl, SIGKILL)
        }
        #expect(killed != 0, "no engine process was found to kill")
        #expect(r.status == 1, "\(r.stderr)")
        let errors = r.stderr.split(separator: "\n").filter { $0.contains("error:") }
        #expect(errors.count == 1, "\(r.stderr)")
        #expect(
            errors.first?.contains("whisper engine (pid \(killed)) ended: it was killed by signal 9") == true,
            "\(r.stderr)")
        let written = finals(in: jsonl)
        #expect(!written.isEmpty && written.count < count, "\(written)")
        #expect(written.first?.contains("mother") == true, "\(written)")
    }

    /// The engine's process hung mid-run (stopped with SIGSTOP): past its patience (here 5 s, from
    /// $SPEECHGRAPH_WHISPER_PATIENCE) it is stopped for good; one error, exit status 1, and every final result made
    /// before it in the JSON Lines file.
    @Test(.tags(.realtime)) func aHungEngineEndsTheRunWithOneError() throws {
        let (graph, jsonl, count) = try threeSentences()
        var hung: Int32 = 0
        let environment = ProcessInfo.processInfo.environment.merging(["SPEECHGRAPH_WHISPER_PATIENCE": "5"]) { $1 }
        let r = try Run.speechgraph(["run", "--realtime", graph], environment: environment) { process in
            hung = signalEngine(of: process, jsonl: jsonl, SIGSTOP)
        }
        // Gone, not left stopped (one that outlived the run is killed here; a zombie waits for init to reap it).
        let stat = (try? String(contentsOfFile: "/proc/\(hung)/stat", encoding: .utf8)) ?? ""
        if hung != 0, let state = stat.split(separator: ")").last?.split(separator: " ").first, state != "Z" {
            kill(hung, SIGKILL)
            Issue.record("the hung engine (pid \(hung)) outlived the run, in state \(state)")
        }
        #expect(hung != 0, "no engine process was found to stop")
        #expect(r.status == 1, "\(r.stderr)")
        let errors = r.stderr.split(separator: "\n").filter { $0.contains("error:") }
        #expect(errors.count == 1, "\(r.stderr)")
        #expect(errors.first?.contains("whisper engine (pid \(hung)) did not answer in 5 s") == true, "\(r.stderr)")
        let written = finals(in: jsonl)
        #expect(!written.isEmpty && written.count < count, "\(written)")
        #expect(written.first?.contains("mother") == true, "\(written)")
    }
}
