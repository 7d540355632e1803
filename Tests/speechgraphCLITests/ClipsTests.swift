import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// The clips sink: each utterance's audio and its result, for building data sets.
@Suite(.tags(.model)) struct ClipsTests {
    let dir = TemporaryDirectory()

    @Test("two utterances give two WAV files that sox reads, each with its result beside it")
    func clipsOfTwoUtterances() throws {
        let a = dir.path("a.wav")
        let b = dir.path("b.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: a)
        try TestSpeech.synthesize("the weather today is cold and windy", to: b)
        let both = dir.path("both.wav")
        try TestSpeech.sox([a, b, both, "pad", "1.0", "1.5"])
        try TestSpeech.sox([both, dir.path("both2.wav"), "pad", "0", "1"])
        let graph = dir.path("clips.graph")
        let folder = dir.path("clips")
        try """
        node speech = file.input { path: "\(dir.path("both2.wav"))" }
        node vad    = vad
        node asr    = recognizer { mode: utterance }
        node keep   = clips { path: "\(folder)", pad: 400 ms }
        speech.out -> vad.in, keep.in
        vad.out    -> asr.in
        vad.events -> asr.control
        asr        -> keep.results
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(["run", graph])
        #expect(run.status == 0, "\(run.stderr)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder).sorted()
        #expect(files == ["keep-00001.json", "keep-00001.wav", "keep-00002.json", "keep-00002.wav"], "\(files)")
        for n in 1...2 {
            let base = "\(folder)/keep-0000\(n)"
            let line = try String(contentsOfFile: base + ".json", encoding: .utf8)
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(o["audio"] as? String == "keep-0000\(n).wav")
            let range = try #require(o["range"] as? [String: Double])
            let seconds = try TestSpeech.duration(base + ".wav")
            // The trailing pad too: the clip waits for its audio, which comes after the result.
            #expect(abs(seconds - (range["end"]! - range["start"]! + 0.8)) < 0.05, "\(seconds) \(range)")
            #expect((o["text"] as? String)?.isEmpty == false)
        }
        let first = try String(contentsOfFile: "\(folder)/keep-00001.json", encoding: .utf8)
        #expect(first.contains("mother"))
    }

    @Test("the console colours unsure words when asked")
    func consoleColours() {
        let t = Transcription(
            utterance: 1, isFinal: true, range: TimeRange(start: 0, end: 1), text: "call my mother",
            words: [
                Word(text: "call", range: TimeRange(start: 0, end: 0.3), confidence: 0.95),
                Word(text: "my", range: TimeRange(start: 0.3, end: 0.5), confidence: 0.6),
                Word(text: "mother", range: TimeRange(start: 0.5, end: 1), confidence: 0.2),
            ], node: "asr")
        #expect(ConsoleSink.coloured(t, below: 0.8) == "call \u{1B}[33mmy\u{1B}[0m \u{1B}[31mmother\u{1B}[0m")
        #expect(ConsoleSink.coloured(t, below: 0) == "call my mother")
    }

    @Test("on a terminal the console dims volatile text and colours unsure words; NO_COLOR turns both off")
    func consoleOnATerminalAndNoColor() throws {
        let wav = dir.path("call.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        let graph = dir.path("console.graph")
        // Every word below a confidence of 1: each final word coloured.
        try """
        node src = file.input { path: "\(wav)" }
        node asr = recognizer { mode: streaming }
        node screen = console { colour-below: 1 }
        src -> asr -> screen
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        // script(1) runs speechgraph on a pseudo-terminal and copies what it writes to standard output.
        let command = "'\(TestPaths.binary.path)' run '\(graph)' 2>/dev/null"
        // NO_COLOR empty counts as not set (no-color.org): the test runner may have set it for this process.
        let styled = try Run.process("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["NO_COLOR": ""])
        let plain = try Run.process("/usr/bin/script", ["-qec", command, "/dev/null"], environment: ["NO_COLOR": "1"])
        #expect(styled.status == 0 && plain.status == 0, "\(styled.stderr) \(plain.stderr)")
        #expect(styled.stdout.contains("\u{1B}[2m") && styled.stdout.contains("\u{1B}[3"), "\(styled.stdout)")
        #expect(plain.stdout.contains("mother"), "\(plain.stdout)")
        #expect(!plain.stdout.contains("\u{1B}[2m") && !plain.stdout.contains("\u{1B}[3"), "\(plain.stdout)")
    }
}
