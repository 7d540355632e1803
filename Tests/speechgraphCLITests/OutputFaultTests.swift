import Foundation
import SpeechGraphTestSupport
import Testing

/// Output that goes away: a full disk, a closed pipe. Every write error is reported once, the other sinks
/// finish, and the exit status is 1 (issue 11).
@Suite struct OutputFaultTests {
    let dir = TemporaryDirectory()

    /// Three sentences with 1.5 s of silence between them: three utterances for a vad.
    func sentences() throws -> String {
        let parts = [
            "please call my mother at seven in the evening",
            "the weather today is cold and windy",
            "turn the kitchen lights off now",
        ]
        var files: [String] = []
        for (i, text) in parts.enumerated() {
            let f = dir.path("s\(i).wav")
            try TestSpeech.synthesize(text, to: f)
            files.append(f)
        }
        let out = dir.path("three.wav")
        try TestSpeech.sox(files + [out, "pad", "0.5", "1.5"])
        return out
    }

    /// A graph that cuts `wav` with a vad and writes each final result to the console and to `log`.
    func graph(_ wav: String, log: String) throws -> String {
        let path = dir.path("g-\(UUID().uuidString).graph")
        try """
        node src    = file.input { path: "\(wav)" }
        node vad    = vad
        node asr    = recognizer
        node screen = console
        node log    = jsonl { path: "\(log)", volatile: false }
        src -> vad
        vad.out -> asr.in
        vad.events -> asr.control
        asr -> screen
        asr -> log
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// The graph over `wav` with nothing going wrong: what it prints, and its three final results.
    func referenceRun(_ wav: String) throws -> (run: ProcessResult, finals: [String]) {
        let reference = dir.path("reference.jsonl")
        let ok = try Run.speechgraph(["run", try graph(wav, log: reference)])
        #expect(ok.status == 0, "\(ok.stderr)")
        let texts = try finalTexts(reference)
        #expect(texts.count == 3, "\(texts)")
        return (ok, texts)
    }

    func finalTexts(_ jsonl: String) throws -> [String] {
        try String(contentsOfFile: jsonl, encoding: .utf8).split(separator: "\n").compactMap { line in
            let o = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return o?["isFinal"] as? Bool == true ? o?["text"] as? String : nil
        }
    }

    @Test(
        "transcribe FILE FILE > /dev/full: exit 1 and one message, in every format",
        arguments: ["text", "tsv", "jsonl"])
    func fullDiskOnStandardOutput(format: String) throws {
        let wav = dir.path("call.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let bin = TestPaths.binary.path
        let r = try Run.process(
            "/bin/bash", ["-c", "'\(bin)' transcribe --format \(format) '\(wav)' '\(wav)' > /dev/full"])
        #expect(r.status == 1, "\(r.stderr)")
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("cannot write standard output: No space left on device"), "\(r.stderr)")
    }

    @Test("a jsonl sink writing to /dev/full: exit 1, one message naming it, the console transcript complete")
    func fullDiskInAFileSink() throws {
        let wav = try sentences()
        let (ok, _) = try referenceRun(wav)

        let r = try Run.speechgraph(["run", try graph(wav, log: "/dev/full")])
        #expect(r.status == 1, "\(r.stderr)")
        let messages = r.stderr.split(separator: "\n").filter { $0.contains("/dev/full") }
        #expect(messages.count == 1, "\(r.stderr)")
        #expect(r.stderr.contains("node 'log': cannot write /dev/full: No space left on device"), "\(r.stderr)")
        #expect(r.stdout == ok.stdout)
    }

    @Test("run … | head -n 1: the reader goes away, the file sink still gets every result, exit 1")
    func closedPipeOnStandardOutput() throws {
        let wav = try sentences()
        let (_, expected) = try referenceRun(wav)

        // Played in real time, so that results come after head has read its line and gone.
        let log = dir.path("piped.jsonl")
        let bin = TestPaths.binary.path
        let r = try Run.process(
            "/bin/bash",
            ["-o", "pipefail", "-c", "'\(bin)' run --realtime '\(try graph(wav, log: log))' | head -n 1"],
            currentDirectory: TestPaths.packageRoot)
        #expect(r.status == 1, "\(r.stderr)")
        #expect(!r.signaled)
        #expect(r.stdout.split(separator: "\n").count == 1)
        #expect(r.stderr.contains("cannot write standard output: Broken pipe"), "\(r.stderr)")
        #expect(try finalTexts(log) == expected)
    }

    @Test(
        "SIGTERM after 25 s of long_clean in real time: exit 0, every final made so far in the file, whole lines",
        .enabled(if: TestPaths.corpusTestsWanted, "SPEECHGRAPH_NO_CORPUS=1: corpus tests off"))
    func signalAfter25Seconds() throws {
        let shared = try TestPaths.requireShared()
        let long = shared.appendingPathComponent("corpus/long/long_clean.wav").path
        let log = dir.path("long.jsonl")
        let graph = dir.path("long.graph")
        try """
        node src = file.input { path: "\(long)", realtime: true }
        node vad = vad
        node asr = recognizer { mode: streaming, final-pass: true }
        node log = jsonl { path: "\(log)" }
        src -> vad
        vad.out -> asr.in
        vad.events -> asr.control
        asr -> log
        vad.events -> log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        func events() throws -> [[String: Any]] {
            let text = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
            return try text.split(separator: "\n").map {
                try #require(try JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)")
            }
        }
        var stoppedAt = 0.0
        let r = try Run.speechgraph(["run", graph], timeout: 180) { process in
            // 25 s of audio heard: the vad's events carry the audio clock (a deadline only bounds a hang).
            let deadline = Date().addingTimeInterval(120)
            while Date() < deadline && process.isRunning {
                let times = ((try? events()) ?? []).compactMap { $0["time"] as? Double }
                if let last = times.max(), last >= 25 {
                    stoppedAt = last
                    break
                }
                usleep(50_000)
            }
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(stoppedAt >= 25)
        let text = try String(contentsOfFile: log, encoding: .utf8)
        #expect(text.hasSuffix("\n"), "whole lines only")
        let all = try events()
        let starts = all.filter { $0["type"] as? String == "speechStarted" }.count
        let finals = all.filter { $0["type"] as? String == "result" && $0["isFinal"] as? Bool == true }
        // Each utterance begun has its final result, the one in flight at the stop too.
        #expect(starts >= 3)
        #expect(finals.count == starts, "\(starts) utterances, \(finals.count) finals")
        // (The one in flight may have begun just before the stop, with no word yet.)
        #expect(finals.dropLast().allSatisfy { !(($0["text"] as? String) ?? "").isEmpty })
    }
}
