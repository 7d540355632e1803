import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// The runtime seam as the CLI shows it: standard input through push.input, resource checks at plan time.
@Suite(.tags(.model)) struct RuntimeCLITests {
    let dir = TemporaryDirectory()

    func speech() throws -> String {
        let a = dir.path("a.wav")
        let b = dir.path("b.wav")
        let both = dir.path("both.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: a)
        try TestSpeech.synthesize("the weather today is cold and windy with a chance of rain", to: b)
        // 44.1 kHz stereo, so that standard input also goes through the converters.
        try TestSpeech.sox([a, b, "-r", "44100", "-c", "2", both])
        return both
    }

    @Test("sox FILE -t wav - | speechgraph transcribe - gives what speechgraph transcribe FILE gives")
    func standardInputWAV() throws {
        let wav = try speech()
        for format in ["text", "jsonl"] {
            let file = try Run.speechgraph(["transcribe", "--format", format, wav])
            let bin = TestPaths.binary.path
            let piped = try Run.process(
                "/bin/bash", ["-c", "sox '\(wav)' -t wav - | '\(bin)' transcribe --format \(format) -"])
            #expect(file.status == 0 && piped.status == 0, "\(file.stderr) \(piped.stderr)")
            #expect(!file.stdout.isEmpty)
            // JSON Lines name their source: the path, or "-".
            #expect(
                piped.stdout == file.stdout.replacingOccurrences(of: #""source":"\#(wav)""#, with: #""source":"-""#))
        }
    }

    @Test("speechgraph run feeds standard input to a graph's push.input, at the stream's rate and channels")
    func runReadsStandardInputIntoPushInput() throws {
        let wav = try speech()
        let graph = dir.path("pushed.graph")
        try """
        node mic = push.input
        node asr = recognizer { mode: utterance }
        node out = jsonl { path: "-", volatile: false }
        mic -> asr -> out
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let bin = TestPaths.binary.path
        let piped = try Run.process("/bin/bash", ["-c", "sox '\(wav)' -t wav - | '\(bin)' run '\(graph)'"])
        #expect(piped.status == 0, "\(piped.stderr)")
        let file = try Run.speechgraph(["transcribe", "--format", "text", wav])
        let finals = piped.stdout.split(separator: "\n").compactMap { line -> String? in
            let o = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            return o?["isFinal"] as? Bool == true ? o?["text"] as? String : nil
        }
        #expect(finals.joined(separator: " ") == file.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
        // Two push.input nodes: which one standard input feeds is not known.
        try """
        node a = push.input
        node b = push.input
        node la = tap.level
        node lb = tap.level
        a -> la
        b -> lb
        """.write(toFile: dir.path("two.graph"), atomically: true, encoding: .utf8)
        let two = try Run.speechgraph(["run", dir.path("two.graph")])
        #expect(two.status == 2)
        #expect(two.stderr.contains("one push.input node; this graph has 2 (a, b)"), "\(two.stderr)")
    }

    @Test("transcribe - on a stream that sends nothing: SIGTERM ends it at once, exit 0, not when the stream closes")
    func signalBeforeAnyAudio() throws {
        let fed = try FedSpeechgraph(["transcribe", "-"], stderrPath: dir.path("idle.err"))
        defer { fed.stop() }
        let process = fed.process
        // Once its main thread waits in read(0, ...) for the WAV header: read is system call 0 on x86-64, 63 on
        // arm64; its first argument is the descriptor.
        let syscall = "/proc/\(process.processIdentifier)/syscall"
        Run.wait(for: process, seconds: 60) {
            let call = (try? String(contentsOfFile: syscall, encoding: .utf8)) ?? ""
            return call.hasPrefix("0 0x0 ") || call.hasPrefix("63 0x0 ")
        }
        kill(process.processIdentifier, SIGTERM)
        // The write end stays open: without the fix, it would wait here until the stream closes.
        Run.wait(for: process, seconds: 60) { false }
        #expect(!process.isRunning)
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        let stderr = fed.stderr
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(stderr)")
        #expect(stderr == "speechgraph: stopped before any audio came\n", "\(stderr)")
    }

    @Test("one file three times in streaming mode: three times the text of the first (no file learns from another)")
    func streamingFilesDoNotLearnFromEachOther() throws {
        let once = try speech()
        // 20 s: the live cepstral mean moves within the file, so a decoder that kept it would decode the next
        // file otherwise.
        let long = dir.path("long.wav")
        try TestSpeech.sox([once, once, once, long])
        let r = try Run.speechgraph(["transcribe", "--mode", "streaming", "--format", "tsv", long, long, long])
        #expect(r.status == 0, "\(r.stderr)")
        let texts = r.stdout.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 1).last ?? "" }
        #expect(texts.count == 3)
        #expect(Set(texts).count == 1, "\(texts)")
        let reference = Array(
            repeating: "please call my mother at seven in the evening "
                + "the weather today is cold and windy with a chance of rain", count: 3
        ).joined(separator: " ")
        #expect(wordErrorRate(reference: reference, hypothesis: String(texts.first ?? "")) <= 0.2)
    }

    @Test("raw s16le on standard input with --rate, and a clear error without it")
    func standardInputRaw() throws {
        let wav = try speech()
        let bin = TestPaths.binary.path
        let file = try Run.speechgraph(["transcribe", wav])
        let raw = try Run.process(
            "/bin/bash",
            [
                "-c",
                "sox '\(wav)' -t raw -e signed -b 16 -c 1 -r 16000 - "
                    + "| '\(bin)' transcribe --rate 16000 -",
            ])
        #expect(raw.status == 0, "\(raw.stderr)")
        #expect(wordErrorRate(reference: file.stdout, hypothesis: raw.stdout) <= 0.1)
        // sox's own stderr is left out: speechgraph stops reading at once, and sox may then report the closed pipe.
        let noRate = try Run.process(
            "/bin/bash", ["-c", "sox '\(wav)' -t raw -e signed -b 16 - 2>/dev/null | '\(bin)' transcribe -"])
        #expect(noRate.status == 1)
        #expect(
            noRate.stderr.contains("neither a WAV nor an MP3 stream") && noRate.stderr.contains("--rate"),
            "\(noRate.stderr)")
        #expect(noRate.stderr.split(separator: "\n").count == 1, "\(noRate.stderr)")
    }

    /// A preset asked for is a VAD asked for: it was ignored, without a word, for a file of 30 s or less (which
    /// `--vad auto` leaves whole). With the VAD, the utterance starts where the speech does, after the silence.
    @Test func vadPresetTurnsTheVADOn() throws {
        let padded = dir.path("padded.wav")
        try TestSpeech.sox([try speech(), padded, "pad", "1", "1"])
        let start = { (r: ProcessResult) in
            r.stdout.split(separator: "\n").first.flatMap { line in
                line.range(of: #""range":\{"start":([0-9.]+)"#, options: .regularExpression).map {
                    Double(line[$0].split(separator: ":").last ?? "") ?? -1
                }
            }
        }
        let whole = try Run.speechgraph(["transcribe", "--format", "jsonl", padded])
        let cut = try Run.speechgraph(["transcribe", "--format", "jsonl", "--vad-preset", "normal", padded])
        #expect(whole.status == 0 && cut.status == 0, "\(whole.stderr) \(cut.stderr)")
        #expect(start(whole) == 0, "\(whole.stdout)")
        #expect((start(cut) ?? 0) > 0.5, "\(cut.stdout)")
    }

    /// `transcribe -` on a terminal waited in silence (and, reading its header in pieces, for several Ctrl-D);
    /// `run` told raw samples to give `--rate`, an option only `transcribe` has.
    @Test("standard input that is a terminal is a usage error; run's hint for raw samples is one run can follow")
    func standardInputMistakes() throws {
        let bin = TestPaths.binary.path
        // script(1) runs the command on a pseudo-terminal of its own: its standard input is a terminal.
        let tty = try Run.process("/usr/bin/script", ["-qec", "'\(bin)' transcribe -", "/dev/null"], timeout: 60)
        #expect(tty.status == 2, "\(tty.stdout)")
        #expect(tty.stdout.contains("speechgraph: error: standard input is a terminal"), "\(tty.stdout)")
        let graph = dir.path("push.graph")
        try "node mic = push.input\nnode out = console\nmic -> out\n".write(
            toFile: graph, atomically: true, encoding: .utf8)
        let raw = try Run.process(
            "/bin/bash", ["-c", "head -c 20000 /dev/zero | tr '\\0' '\\1' | '\(bin)' run '\(graph)'"], timeout: 60)
        #expect(raw.status == 1, "\(raw.stderr)")
        #expect(raw.stderr.contains("neither a WAV nor an MP3 stream"), "\(raw.stderr)")
        #expect(raw.stderr.contains("sox -t raw") && !raw.stderr.contains("--rate"), "\(raw.stderr)")
        // A WAV stream cut short, into a graph whose push.input events go nowhere: its warning is said once,
        // when it happens (it was said again at the end).
        let cut = try Run.process(
            "/bin/bash", ["-c", "head -c 30000 '\(try speech())' | '\(bin)' run '\(graph)'"], timeout: 60)
        #expect(cut.status == 1, "\(cut.stderr)")
        let said = cut.stderr.components(separatedBy: "standard input: the stream is truncated").count - 1
        #expect(said == 1, "\(cut.stderr)")
        // A graph for the Wyoming server, run: said before standard input is read (it said 'standard input is
        // empty').
        let wyoming = TestPaths.packageRoot.appendingPathComponent("graphs/wyoming.graph").path
        let served = try Run.process("/bin/bash", ["-c", "'\(bin)' run '\(wyoming)' < /dev/null"], timeout: 60)
        #expect(served.status == 2, "\(served.stderr)")
        #expect(served.stderr.contains("serve --graph"), "\(served.stderr)")
    }

    @Test("--rate reads one raw file by name as it reads standard input; options misused are usage errors")
    func rawFileAndOptionChecks() throws {
        let wav = try speech()
        let raw = dir.path("both.raw")
        try TestSpeech.sox([wav, "-t", "raw", "-e", "signed", "-b", "16", "-c", "1", "-r", "16000", raw])
        let file = try Run.speechgraph(["transcribe", wav])
        let named = try Run.speechgraph(["transcribe", "--rate", "16000", raw])
        #expect(file.status == 0 && named.status == 0, "\(file.stderr) \(named.stderr)")
        #expect(!file.stdout.isEmpty)
        #expect(wordErrorRate(reference: file.stdout, hypothesis: named.stdout) <= 0.1)
        // Nothing at all on standard input is an error in raw as in WAV, not an empty transcript.
        let bin = TestPaths.binary.path
        let empty = try Run.process("/bin/bash", ["-c", "'\(bin)' transcribe --rate 16000 - < /dev/null"])
        #expect(empty.status == 1 && empty.stderr.contains("standard input is empty"), "\(empty.stderr)")
        // A WAV given as raw (arecord writes WAV unless told otherwise) is refused, not read as noise.
        for (command, what) in [
            ("'\(bin)' transcribe --rate 16000 - < '\(wav)'", "standard input"),
            ("'\(bin)' transcribe --rate 8000 '\(wav)'", wav),
        ] {
            let asRaw = try Run.process("/bin/bash", ["-c", command])
            #expect(asRaw.status == 1 && asRaw.stdout.isEmpty)
            #expect(
                asRaw.stderr
                    == "speechgraph: error: \(what) is WAV audio, not raw samples: leave out --rate (its header "
                    + "gives the rate), or send raw audio ('arecord -t raw')\n", "\(asRaw.stderr)")
        }
        for misuse in [
            ["--rate", "16000", raw, raw], ["--channels", "2", wav], ["--vad-preset", "bogus", wav],
            ["--confidence", "posterior", wav], ["--confidence", "calibrated", wav],
            // What the recognizer refuses together (it was exit 1, as if the run had failed).
            ["--phrases", "go forward", "--grammar", dir.path("g.jsgf"), wav],
            ["--lm", dir.path("my.lmspec"), "--grammar", dir.path("g.jsgf"), wav],
            // A phrase of no words would be dropped without a word (said once, not for each file).
            ["--phrases", "!!!", wav, wav], ["--phrases", "go||stop", wav], ["--phrases", " ", wav],
            ["--phrases", "go to <room>", wav],
        ] {
            let r = try Run.speechgraph(["transcribe"] + misuse)
            #expect(r.status == 2 && r.stdout.isEmpty, "\(misuse): \(r.stderr)")
            #expect(r.stderr.contains(misuse[0]), "\(misuse): \(r.stderr)")
            if misuse[0] == "--phrases" && !misuse.contains("--grammar") {
                #expect(r.stderr.components(separatedBy: misuse[0]).count == 2, "said once: \(r.stderr)")
            }
        }
        // An empty file name (a variable that is not set): nothing runs, not even the files before it.
        let unset = try Run.speechgraph(["transcribe", wav, "", wav])
        #expect(unset.status == 2 && unset.stdout.isEmpty, "\(unset.stderr)")
        #expect(unset.stderr.hasPrefix("Error: an empty file name"), "\(unset.stderr)")
        // Nothing before the first '|' or after the last is no phrase.
        let ends = try Run.speechgraph(["check", "graphs/demo.graph", "--set", "asr.phrases=|go forward|"])
        #expect(ends.status == 0, "\(ends.stderr)")
        // Every bad item of a list is said, in one error at the first bad item ('"!!!"', not the '[').
        let list = dir.path("phrases.graph")
        try """
        node src = push.input
        node asr = recognizer { phrases: ["call my mother", "!!!", "turn <device> on", "?", "", "open the door"] }
        node out = console
        src -> asr -> out
        """.write(toFile: list, atomically: true, encoding: .utf8)
        let bad = try Run.speechgraph(["check", list])
        #expect(bad.status == 2)
        #expect(
            bad.stderr.hasPrefix(
                "\(list):2:53: error: an empty phrase (nothing between two '|'); the phrases "
                    + "'!!!', '?' have no words; the phrase 'turn <device> on' names a class: phrases are plain text"),
            "\(bad.stderr)")
        #expect(bad.stderr.components(separatedBy: "error:").count == 2, "one error: \(bad.stderr)")
        // A weight for a model that is not there: a warning that it is not used.
        let weight = try Run.speechgraph([
            "check", "graphs/demo.graph", "--set", "asr.phrases=go", "--set", "asr.weight=0.3",
        ])
        #expect(weight.status == 0)
        #expect(
            weight.stderr.contains(
                "warning: --set asr.weight: 'weight' is the weight of an 'lm': without one it is not used"),
            "\(weight.stderr)")
    }

    @Test("check --plan: a recognizer's missing dictionary is a located error, exit 1; check alone does not look")
    func checkPlanFindsMissingDictionary() throws {
        let graph = dir.path("g.graph")
        try """
        node src = push.input
        node asr = recognizer {
            dict: "\(dir.path("missing.dict"))"
        }
        node out = console
        src -> asr -> out
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let planned = try Run.speechgraph(["check", "--plan", graph])
        #expect(planned.status == 1)
        #expect(planned.stderr.hasPrefix("\(graph):3:11: error: "), "\(planned.stderr)")
        #expect(planned.stderr.contains("dictionary not found"))
        let checked = try Run.speechgraph(["check", graph])
        #expect(checked.status == 0, "\(checked.stderr)")
        // The same missing file given with --set: the error names the override, not a place in the file.
        let overridden = try Run.speechgraph([
            "check", "--plan", graph, "--set", "asr.dict=\(dir.path("other.dict"))",
        ])
        #expect(overridden.status == 1)
        #expect(
            overridden.stderr.hasPrefix("speechgraph: error: --set asr.dict: node 'asr' (recognizer): "),
            "\(overridden.stderr)")
        // Settings that do not go together are found by plain check, at the value, with nothing read.
        let both = dir.path("both.graph")
        try """
        node src = push.input
        node asr = recognizer { phrases: "call my mother", grammar: "commands.jsgf" }
        node out = console
        src -> asr -> out
        """.write(toFile: both, atomically: true, encoding: .utf8)
        let clash = try Run.speechgraph(["check", both])
        #expect(clash.status == 2)
        #expect(
            clash.stderr.hasPrefix("\(both):2:34: error: 'phrases' and a grammar do not go together"), "\(clash.stderr)"
        )
        // Everything the graph names that is missing is found in one go, in the file's order: an input file (the
        // nodes after it have no format to work out, their own files are still checked), two files of one
        // recognizer, a sink's folder that is a file, another recognizer's model.
        let many = dir.path("many.graph")
        let file = dir.path("file")
        FileManager.default.createFile(atPath: file, contents: nil)
        try """
        node s = file.input { path: "\(dir.path("nothere.wav"))" }
        node a = recognizer { dict: "\(dir.path("my.dict"))", lm: "\(dir.path("my.lm"))", mode: utterance }
        node log = jsonl { path: "\(file)/log.jsonl" }
        node b = recognizer { hmm: "\(dir.path("nohmm"))", mode: utterance }
        s -> a -> log
        s -> b -> log
        """.write(toFile: many, atomically: true, encoding: .utf8)
        let all = try Run.speechgraph(["check", "--plan", many])
        #expect(all.status == 1)
        let lines = all.stderr.split(separator: "\n").map(String.init)
        let expected = [
            (1, "node 's' (file.input): \(dir.path("nothere.wav")): no such file"),
            (2, "node 'a' (recognizer): dictionary not found: \(dir.path("my.dict"))"),
            (2, "node 'a' (recognizer): language model not found: \(dir.path("my.lm"))"),
            (3, "node 'log' (jsonl): cannot write \(file)/log.jsonl"),
            (4, "node 'b' (recognizer): acoustic model directory not found: \(dir.path("nohmm"))"),
        ]
        #expect(lines.count == expected.count, "\(all.stderr)")
        for (line, (number, message)) in zip(lines, expected) {
            #expect(line.hasPrefix("\(many):\(number):") && line.contains("error: \(message)"), "\(line)")
        }
    }

    @Test("check --plan of a JACK graph opens no JACK client: with no server at all it plans, assuming 48 kHz")
    func checkPlanOpensNoJackClient() throws {
        // A server name nobody runs: any attempt to open a client would fail and make check exit 1.
        let server = "sgt-none-\(ProcessInfo.processInfo.processIdentifier)-\(UInt32.random(in: 0...UInt32.max))"
        let planned = try Run.speechgraph(
            ["check", "--plan", "graphs/live.graph"],
            environment: ["JACK_DEFAULT_SERVER": server])
        #expect(planned.status == 0, "\(planned.stderr)")
        #expect(planned.stderr.contains("48 kHz assumed"), "\(planned.stderr)")
        #expect(planned.stdout.contains("vad.in~resample  resample"), "\(planned.stdout)")
        // Running it does need the server, and says so once: JackTests.withoutAServerRunFailsWithOneClearMessage,
        // in the jack tier, whose process alone opens JACK clients (scripts/test.sh: on a /dev/shm of its own).
    }
}
