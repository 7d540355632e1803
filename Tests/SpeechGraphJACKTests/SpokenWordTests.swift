import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// Apple's classic API over JACK: `AVAudioEngine`'s input node is a JACK client (in JackTests' suite: one server at
/// a time).
extension JackTests {
    /// Sentences said one after another with pauses, about 30 s in all, and what was said.
    func thirtySecondsOfSpeech() throws -> (file: String, said: String) {
        let sentences = [
            "please call my mother at seven in the evening", "the weather today is sunny and warm",
            "open the door to the kitchen", "turn off the lights in the living room",
            "what time does the train leave tomorrow", "send a message to my brother",
            "the meeting starts at nine in the morning", "remind me to buy milk and bread",
        ]
        let file = dir.path("thirty.wav")
        try TestSpeech.sentences(sentences, pause: 1.5, to: file)
        return (file, sentences.joined(separator: " "))
    }

    /// The lines a running program has written to `path` so far.
    func lines(_ path: String) -> [Substring] { contents(path).split(separator: "\n") }

    @Test func theSpokenWordSampleHearsSpeechPlayedIntoItsJACKPort() throws {
        try server.start(period: Self.speechPeriod)
        let (file, said) = try thirtySecondsOfSpeech()
        #expect(try TestSpeech.duration(file) >= 28)
        // transcribe's reading of the same audio at four alignments within one 10 ms frame: where the JACK
        // period falls in the audio is arbitrary, and PocketSphinx reads a phrase on the edge of two readings one
        // way or the other by it ("send a message", "send 'em essential", "central message").
        var shifted: [String] = []
        for offset in [0, 40, 80, 120] {
            let path = dir.path("thirty-\(offset).wav")
            try TestSpeech.sox([file, path, "pad", "\(offset)s", "0"])
            shifted.append(path)
        }
        let transcribed = try Run.speechgraph(["transcribe", "--format", "jsonl"] + shifted)
        #expect(transcribed.status == 0, "\(transcribed.stderr)")
        let offline = TestSpeech.finalTexts(jsonl: transcribed.stdout)
        let offlineWER = shifted.map {
            wordErrorRate(reference: said, hypothesis: (offline[$0] ?? []).joined(separator: " "))
        }
        #expect(offlineWER.count == 4 && offlineWER.allSatisfy { $0 < 0.2 }, "\(offline)")

        let client = "spokenword-\(getpid())"
        let program = Process()
        program.executableURL = TestPaths.binary.deletingLastPathComponent()
            .appendingPathComponent("SpeechGraphExampleSpokenWord")
        // Its custom model is built under TMPDIR: this test's own.
        program.environment = ProcessInfo.processInfo.environment.merging(
            env.merging([
                "SPEECHGRAPH_CAPTURE": "player-\(getpid()):play_1", "SPEECHGRAPH_CLIENT_NAME": client,
                "TMPDIR": dir.path(""),
            ]) { $1 }
        ) { $1 }
        let stopButton = Pipe()
        program.standardInput = stopButton
        let out = dir.path("spokenword.out")
        FileManager.default.createFile(atPath: out, contents: nil)
        FileManager.default.createFile(atPath: out + ".err", contents: nil)
        program.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: out))
        program.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: out + ".err"))
        try program.run()
        defer {
            if program.isRunning { kill(program.processIdentifier, SIGKILL) }
            program.waitUntilExit()
        }
        // Deadlines only bound a hang: each wait is for something the program or the server shows.
        let deadline = Date().addingTimeInterval(240)
        while program.isRunning && Date() < deadline && !((try? server.lsp()) ?? "").contains("\(client):in_1") {
            usleep(20_000)
        }
        try #require(try server.lsp().contains("\(client):in_1"), "\(contents(out + ".err"))")

        try """
        node player = file.input { path: "\(file)", realtime: true }
        node speak = jack.output { port: "play", connect: "\(client):in_1" }
        player -> speak
        """.write(toFile: dir.path("player.graph"), atomically: true, encoding: .utf8)
        let player = try Run.speechgraph(
            ["run", "--name", "player-\(getpid())", dir.path("player.graph")], environment: env)
        #expect(player.status == 0, "\(player.stderr)")
        // Partial results came while it played.
        let partialsWhilePlaying = lines(out).filter { $0.hasPrefix("partial: ") }.count
        #expect(partialsWhilePlaying >= 4, "\(contents(out))")
        #expect(!lines(out).contains { $0.hasPrefix("final: ") })

        // The server goes away: the recognizer's delegate hears that recognition is unavailable; it comes back:
        // available again.
        server.stop(keepingLock: true)
        while program.isRunning && Date() < deadline && !lines(out).contains("available: false") { usleep(20_000) }
        #expect(lines(out).contains("available: false"), "\(contents(out)) \(contents(out + ".err"))")
        try server.start(period: Self.speechPeriod)
        while program.isRunning && Date() < deadline && !lines(out).contains("available: true") { usleep(20_000) }
        #expect(lines(out).contains("available: true"), "\(contents(out)) \(contents(out + ".err"))")

        // Stop Recording: endAudio, then one final result covering all the speech.
        stopButton.fileHandleForWriting.write(Data("\n".utf8))
        while program.isRunning && Date() < deadline { usleep(20_000) }
        #expect(program.terminationStatus == 0, "\(contents(out + ".err"))")
        let finals = lines(out).filter { $0.hasPrefix("final: ") }
        #expect(finals.count == 1, "\(contents(out))")
        let final = String(finals.first?.dropFirst("final: ".count) ?? "")
        let live = wordErrorRate(reference: said, hypothesis: final)
        // Within 2 points of transcribe at the alignment that reads worst: a live reading is one draw of where the
        // periods fall (and, on a loaded machine, of late periods): 1.7% to 13.8% here, against the alignments'
        // 1.7% to 17.2% (mean 9.1-9.9%).
        #expect(live <= offlineWER.max()! + 0.02, "live \(live): \(final); transcribe \(offlineWER): \(offline)")
        #expect(!lines(out).contains { $0.hasPrefix("error: ") }, "\(contents(out))")
    }

    @Test func anAudioEngineWithoutAServerDoesNotStartAndSaysWhy() throws {
        server.stop()
        setenv("JACK_DEFAULT_SERVER", "speechgraph-absent-\(getpid())", 1)
        defer { setenv("JACK_DEFAULT_SERVER", server.name, 1) }
        let engine = AVAudioEngine()
        #expect(engine.inputNode.outputFormat(forBus: 0).sampleRate == 48000)
        engine.inputNode.installTap(onBus: 0, bufferSize: 1024, format: nil) { _, _ in }
        engine.prepare()
        #expect {
            try engine.start()
        } throws: { error in
            "\(error)".contains("could not open its JACK client") && "\(error)".contains("speechgraph-absent")
        }
        #expect(!engine.isRunning)
    }
}
