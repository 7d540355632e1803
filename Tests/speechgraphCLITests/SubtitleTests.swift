import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// long_clean.wav decoded once in the test process for the tests that read it whole (SubtitleTests, and
/// LongFormTests' long_clean case): the graph `transcribe` builds for a file (file.input -> vad -> recognizer in
/// utterance mode, a jsonl sink naming the file as its source), with an srt and a vtt sink beside the jsonl one.
/// 148 s of speech decoded once, not twice; nothing in it depends on which test asked first.
enum LongCleanDecoding {
    struct Output: Sendable {
        var status: Int32
        var stderr: String
        var srt: String
        var vtt: String
        var jsonl: String
    }
    static let output = ComputedOnce {
        let wav = try TestPaths.requireShared().appendingPathComponent("corpus/long/long_clean.wav").path
        let dir = TemporaryDirectory()
        let graph = dir.path("long.graph")
        try """
        node speech = file.input { path: "\(wav)" }
        node vad    = vad
        node asr    = recognizer { mode: utterance }
        node s      = srt   { path: "\(dir.path("long.srt"))" }
        node v      = vtt   { path: "\(dir.path("long.vtt"))" }
        node j      = jsonl { path: "\(dir.path("long.jsonl"))", source: "\(wav)" }
        speech.out -> vad.in
        vad.out    -> asr.in
        vad.events -> asr.control
        asr        -> s, v, j
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(["run", graph], timeout: 900)
        func read(_ name: String) -> String { (try? String(contentsOfFile: dir.path(name), encoding: .utf8)) ?? "" }
        return Output(
            status: run.status, stderr: run.stderr, srt: read("long.srt"), vtt: read("long.vtt"),
            jsonl: read("long.jsonl"))
    }
}

/// Subtitles and word times on the long-form corpus, checked by real parsers (PyPI's srt and webvtt-py, in
/// the .venv that `make test` makes).
@Suite(.tags(.model)) struct SubtitleTests {
    let dir = TemporaryDirectory()

    static var python: String {
        get throws {
            let path = TestPaths.packageRoot.appendingPathComponent(".venv/bin/python").path
            guard FileManager.default.isExecutableFile(atPath: path) else {
                throw TestSpeech.Failure(description: "\(path) is missing: `make venv` makes it (make test does)")
            }
            return path
        }
    }

    @Test("long_clean.wav as SRT and WebVTT: real parsers read them, every cue within the limits")
    func longCleanSubtitles() async throws {
        let shared = try TestPaths.requireShared()
        let wav = shared.appendingPathComponent("corpus/long/long_clean.wav").path
        let decoded = try await LongCleanDecoding.output.get()
        #expect(decoded.status == 0, "\(decoded.stderr)")
        for (name, text) in [("long.srt", decoded.srt), ("long.vtt", decoded.vtt), ("long.jsonl", decoded.jsonl)] {
            try text.write(toFile: dir.path(name), atomically: true, encoding: .utf8)
        }
        let duration = try TestSpeech.duration(wav)
        let check = try Run.process(
            try Self.python,
            [
                TestPaths.packageRoot.appendingPathComponent("Tests/Peers/check_subtitles.py").path,
                dir.path("long.srt"), dir.path("long.vtt"), String(duration),
            ])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let counts = check.stdout.split(separator: " ").dropFirst().compactMap {
            Int($0.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        #expect(counts.count == 2 && counts[0] >= 20, "\(check.stdout)")

        // Word times: inside the labelled utterances (0.1 s slack), in order; each labelled utterance's first
        // word within 0.3 s of its labelled onset: the speech onset of long.vad-labels.tsv (segments.tsv starts
        // where each source recording starts, 0.2 to 0.35 s of silence before its first word).
        let segments = try String(
            contentsOf: shared.appendingPathComponent("corpus/long/long_clean.segments.tsv"), encoding: .utf8
        ).split(separator: "\n").dropFirst().map { line -> (start: Double, end: Double) in
            let f = line.split(separator: "\t")
            return (Double(f[0])!, Double(f[1])!)
        }
        var words: [(start: Double, end: Double)] = []
        for line in Run.lines(of: dir.path("long.jsonl")) {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard o["type"] as? String == "result", o["isFinal"] as? Bool == true else { continue }
            for w in o["words"] as? [[String: Any]] ?? [] {
                words.append((try #require(w["start"] as? Double), try #require(w["end"] as? Double)))
            }
        }
        // 239 words in the reference.
        #expect(words.count >= 200, "\(words.count) words")
        for (a, b) in zip(words, words.dropFirst()) { #expect(a.end <= b.start + 0.0001) }
        for w in words {
            #expect(
                segments.contains { w.start >= $0.start - 0.1 && w.end <= $0.end + 0.1 },
                "a word at \(w.start)-\(w.end) lies outside every labelled utterance")
        }
        let onsets = try String(
            contentsOf: shared.appendingPathComponent("corpus/long/long.vad-labels.tsv"), encoding: .utf8
        ).split(separator: "\n").dropFirst().map { line -> (start: Double, end: Double) in
            let f = line.split(separator: "\t")
            return (Double(f[0])!, Double(f[1])!)
        }
        for s in segments {
            let onset = try #require(onsets.first { $0.end > s.start && $0.start < s.end }).start
            let first = try #require(words.first { $0.end > s.start - 0.1 && $0.start < s.end + 0.1 })
            #expect(
                abs(first.start - onset) <= 0.3, "utterance at \(s.start), onset \(onset): first word at \(first.start)"
            )
        }
    }

    @Test("digital silence has no words: no cue, and an empty final result, though word timings are on")
    func silenceHasNoCue() throws {
        let silence = dir.path("silence.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-b", "16", "-c", "1", silence, "trim", "0", "10"])
        let srt = try Run.speechgraph(["transcribe", "--format", "srt", silence])
        #expect(srt.status == 0, "\(srt.stderr)")
        #expect(srt.stdout.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty, "\(srt.stdout)")
        let jsonl = try Run.speechgraph(["transcribe", "--format", "jsonl", silence])
        #expect(jsonl.stdout.contains("\"isFinal\":true") && jsonl.stdout.contains("\"text\":\"\""), "\(jsonl.stdout)")
        #expect(!jsonl.stdout.contains("\"words\""), "\(jsonl.stdout)")
    }

    @Test("transcribe --format srt and vtt write the same cues; several files are refused")
    func transcribeFormats() throws {
        let wav = dir.path("s.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let srt = try Run.speechgraph(["transcribe", "--format", "srt", wav])
        let vtt = try Run.speechgraph(["transcribe", "--format", "vtt", wav])
        #expect(srt.status == 0 && vtt.status == 0, "\(srt.stderr) \(vtt.stderr)")
        #expect(srt.stdout.hasPrefix("1\n00:00:00,"), "\(srt.stdout)")
        #expect(vtt.stdout.hasPrefix("WEBVTT\n\n00:00:00."), "\(vtt.stdout)")
        #expect(srt.stdout.contains("mother"))
        try srt.stdout.write(toFile: dir.path("s.srt"), atomically: true, encoding: .utf8)
        try vtt.stdout.write(toFile: dir.path("s.vtt"), atomically: true, encoding: .utf8)
        let check = try Run.process(
            try Self.python,
            [
                TestPaths.packageRoot.appendingPathComponent("Tests/Peers/check_subtitles.py").path,
                dir.path("s.srt"), dir.path("s.vtt"), String(try TestSpeech.duration(wav)),
            ])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let two = try Run.speechgraph(["transcribe", "--format", "srt", wav, wav])
        #expect(two.status == 2 && two.stderr.contains("one file at a time"), "\(two.stderr)")
        #expect(two.stderr.contains("Usage: speechgraph transcribe"), "\(two.stderr)")
        // An unknown option's value is not counted as a second file: the option is what is wrong.
        let unknown = try Run.speechgraph(["transcribe", "--format", "srt", "-o", dir.path("out.srt"), wav])
        #expect(unknown.status == 2 && unknown.stderr.contains("Unknown option '-o'"), "\(unknown.stderr)")
        #expect(!unknown.stderr.contains("one file at a time"), "\(unknown.stderr)")
    }
}
