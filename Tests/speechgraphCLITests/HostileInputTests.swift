import Foundation
import SpeechGraphTestSupport
import Testing

/// Input that other programs made, broken or hostile (issue 11): never a trap, never a skewed result.
@Suite(.tags(.model)) struct HostileInputTests {
    let dir = TemporaryDirectory()

    /// Two sentences with a second of silence between them, as a 32-bit float WAV, and the same file with a
    /// NaN, +infinity and -infinity written into its speech.
    func floatFiles() throws -> (clean: String, poisoned: String) {
        let a = dir.path("a.wav")
        let b = dir.path("b.wav")
        try TestSpeech.synthesize("please call my mother at seven in the evening", to: a)
        try TestSpeech.synthesize("the weather today is cold and windy", to: b)
        let clean = dir.path("clean.wav")
        try TestSpeech.sox([a, b, "-e", "floating-point", "-b", "32", clean, "pad", "0.5", "1"])
        var data = try Data(contentsOf: URL(fileURLWithPath: clean))
        let marker = try #require(data.range(of: Data("data".utf8)))
        let first = marker.upperBound + 4
        let count = (data.count - first) / 4
        #expect(count > 16000)
        for (k, value) in [(count / 4, Float.nan), (count / 3, .infinity), (count / 3 + 7, -.infinity)] {
            withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes in
                data.replaceSubrange((first + 4 * k)..<(first + 4 * k + 4), with: bytes)
            }
        }
        let poisoned = dir.path("poisoned.wav")
        try data.write(to: URL(fileURLWithPath: poisoned))
        return (clean, poisoned)
    }

    @Test("a float WAV with NaN and infinite samples: transcribed as the clean one, one warning, exit 1, no trap")
    func nonFiniteSamplesBecomeSilence() throws {
        let (clean, poisoned) = try floatFiles()
        for vad in ["off", "on"] {
            // The poisoned file between two clean ones: all three transcribed, alike.
            let r = try Run.speechgraph(["transcribe", "--vad", vad, "--format", "tsv", clean, poisoned, clean])
            #expect(!r.signaled)
            #expect(r.status == 1, "\(r.stderr)")
            let texts = r.stdout.split(separator: "\n").map { $0.split(separator: "\t", maxSplits: 1).last ?? "" }
            #expect(texts.count == 3, "\(r.stdout)")
            #expect(Set(texts).count == 1, "the poisoned file reads as the clean one: \(r.stdout)")
            #expect(texts.first?.contains("mother") == true, "\(r.stdout)")
            let warnings = r.stderr.split(separator: "\n")
            #expect(warnings.count == 1, "\(r.stderr)")
            // Named by its file: which of the three had them.
            #expect(
                r.stderr.contains(
                    "speechgraph: warning: \(poisoned): 3 samples were not a number (NaN or infinite) and were faded "
                        + "out to silence"), "\(r.stderr)")
        }
    }

    @Test("run: an input's warning that the graph routes to no sink is said on standard error when it happens")
    func unroutedWarningGoesToStandardError() throws {
        let (_, poisoned) = try floatFiles()
        let bin = TestPaths.binary.path
        func run(routed: Bool) throws -> ProcessResult {
            let graph = dir.path(routed ? "routed.graph" : "nowhere.graph")
            try """
            node in  = push.input
            node vad = vad
            in.out -> vad.in
            \(routed ? "node c = console\nin.events -> c" : "")
            """.write(toFile: graph, atomically: true, encoding: .utf8)
            return try Run.process("/bin/bash", ["-c", "'\(bin)' run '\(graph)' < '\(poisoned)'"], timeout: 60)
        }
        let live = "warning: samples that are not numbers (NaN or infinite), faded out to silence at 00:0"
        let summary = "speechgraph: warning: node 'in': 3 samples were not a number (NaN or infinite) and were faded"
        let nowhere = try run(routed: false)
        #expect(nowhere.status == 1, "\(nowhere.stderr)")
        #expect(nowhere.stdout.isEmpty, "\(nowhere.stdout)")
        #expect(
            nowhere.stderr.contains("speechgraph: warning: node 'in': " + live.dropFirst("warning: ".count)),
            "\(nowhere.stderr)")
        #expect(nowhere.stderr.contains(summary), "\(nowhere.stderr)")
        // Routed to the console, the warning is part of the transcript, and only the summary is on stderr.
        let routed = try run(routed: true)
        #expect(routed.status == 1, "\(routed.stderr)")
        #expect(routed.stdout.contains("-- " + live), "\(routed.stdout)")
        #expect(!routed.stderr.contains(live), "\(routed.stderr)")
        #expect(routed.stderr.contains(summary), "\(routed.stderr)")
    }

    @Test("a NaN does not skew the vad: the same speech regions as the clean file")
    func nonFiniteSamplesLeaveTheVADRegionsIntact() throws {
        let (clean, poisoned) = try floatFiles()
        let ok = try Run.speechgraph(["vad", "--format", "tsv", clean])
        let r = try Run.speechgraph(["vad", "--format", "tsv", poisoned])
        #expect(ok.status == 0 && r.status == 1, "\(ok.stderr) \(r.stderr)")
        #expect(ok.stdout.split(separator: "\n").count == 2, "\(ok.stdout)")
        #expect(r.stdout == ok.stdout)
    }

    func sentence() throws -> String {
        let wav = dir.path("call.wav")
        if !FileManager.default.fileExists(atPath: wav) {
            try TestSpeech.synthesize("please call my mother at seven in the evening", to: wav)
        }
        return wav
    }

    @Test("file.input on a FIFO: said at once (check --plan waited forever for a writer), not opened twice")
    func fifoIsNotAFile() throws {
        let fifo = dir.path("in.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let graph = dir.path("fifo.graph")
        try "node f = file.input { path: \"\(fifo)\" }\nnode v = vad\nf -> v\n".write(
            toFile: graph, atomically: true, encoding: .utf8)
        for command in [["check", "--plan"], ["run"]] {
            let r = try Run.speechgraph(command + [graph], timeout: 60)
            #expect(r.status == 1, "\(command): \(r.stderr)")  // an input that cannot be read, as for a missing file
            #expect(
                r.stderr.contains(
                    "fifo.graph:1:29: error: node 'f' (file.input): \(fifo) is a pipe or a device, not a file: "
                        + "file.input reads files; a stream goes to 'speechgraph transcribe \(fifo)'"),
                "\(r.stderr)")
        }
    }

    @Test("a file name that starts with a dash is not a group of flags: exit 2; -- and ./ name it")
    func fileNamesWithADash() throws {
        let wav = try sentence()
        try FileManager.default.copyItem(atPath: wav, toPath: dir.path("-dash.wav"))
        let bin = TestPaths.binary.path
        func run(_ args: String) throws -> ProcessResult {
            try Run.process("/bin/bash", ["-c", "cd '\(dir.url.path)' && '\(bin)' \(args)"])
        }
        let bad = try run("transcribe -dash.wav")
        #expect(bad.status == 2, "\(bad.stdout) \(bad.stderr)")
        #expect(bad.stdout.isEmpty, "no help on standard output")
        #expect(
            bad.stderr.contains("unknown option '-dash.wav'") && bad.stderr.contains("./-dash.wav"), "\(bad.stderr)")
        let among = try run("transcribe call.wav -dash.wav")
        #expect(among.status == 2 && among.stdout.isEmpty)
        for args in ["transcribe -- -dash.wav", "transcribe ./-dash.wav", "transcribe call.wav -- -dash.wav"] {
            let ok = try run(args)
            #expect(ok.status == 0, "\(args): \(ok.stderr)")
            #expect(ok.stdout.contains("mother"), "\(args)")
        }
    }

    @Test("--duration must be a number of seconds above 0", arguments: ["-1", "nan", "0", "inf", "--", "abc"])
    func durationIsChecked(value: String) throws {
        let r = try Run.speechgraph(["run", "--duration", value, "graphs/demo.graph"], timeout: 30)
        #expect(r.status == 2, "\(r.stderr)")
        #expect(r.stdout.isEmpty)
        #expect(!r.signaled)
    }

    /// A WAV header that says `rate` (the samples of an 8 kHz file).
    func wav(withRate rate: UInt32) throws -> String {
        let wav = try sentence()
        let eight = dir.path("eight.wav")
        try TestSpeech.sox([wav, "-r", "8000", eight])
        var data = try Data(contentsOf: URL(fileURLWithPath: eight))
        let fmt = try #require(data.range(of: Data("fmt ".utf8)))
        let at = fmt.upperBound + 8
        withUnsafeBytes(of: rate.littleEndian) { data.replaceSubrange(at..<(at + 4), with: $0) }
        withUnsafeBytes(of: (rate * 2).littleEndian) { data.replaceSubrange((at + 4)..<(at + 8), with: $0) }
        let path = dir.path("rate\(rate).wav")
        try data.write(to: URL(fileURLWithPath: path))
        return path
    }

    @Test("a header that says 1 Hz (or 1 MHz) is refused before any work, as a file and on standard input")
    func absurdRatesAreRefused() throws {
        for rate: UInt32 in [1, 3999, 1_000_000] {
            let file = try wav(withRate: rate)
            let r = try Run.speechgraph(["transcribe", file], timeout: 60)
            #expect(r.status == 1, "\(r.stderr)")
            #expect(r.stderr.contains("its sample rate, \(rate) Hz, is outside"), "\(r.stderr)")
            #expect(r.stderr.split(separator: "\n").count == 1)
            let bin = TestPaths.binary.path
            let piped = try Run.process("/bin/bash", ["-c", "cat '\(file)' | '\(bin)' transcribe -"], timeout: 60)
            #expect(piped.status == 1, "\(piped.stderr)")
            #expect(piped.stderr.contains("standard input: its sample rate, \(rate) Hz, is outside"))
        }
        let raw = try Run.speechgraph(["transcribe", "--rate", "1", "-"], timeout: 60)
        #expect(raw.status == 2, "\(raw.stderr)")
        // 8 kHz itself is fine.
        let ok = try Run.speechgraph(["transcribe", try wav(withRate: 8000)], timeout: 120)
        #expect(ok.status == 0, "\(ok.stderr)")
    }

    @Test("a WAV header with no samples after it is an error, as an empty file is")
    func headerOnlyWAV() throws {
        let wav = try sentence()
        var data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let marker = try #require(data.range(of: Data("data".utf8)))
        data = data.prefix(marker.upperBound + 4)
        withUnsafeBytes(of: UInt32(0).littleEndian) {
            data.replaceSubrange(marker.upperBound..<(marker.upperBound + 4), with: $0)
        }
        withUnsafeBytes(of: UInt32(data.count - 8).littleEndian) { data.replaceSubrange(4..<8, with: $0) }
        let header = dir.path("header.wav")
        try data.write(to: URL(fileURLWithPath: header))
        let r = try Run.speechgraph(["transcribe", header])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("no audio in it"), "\(r.stderr)")
    }

    @Test("tsv: a newline or tab in a file name is escaped, every result stays one line of two columns")
    func tsvEscapesFileNames() throws {
        let odd = dir.path("odd\tname\nhere.wav")
        try FileManager.default.copyItem(atPath: try sentence(), toPath: odd)
        let r = try Run.speechgraph(["transcribe", "--format", "tsv", odd, try sentence()])
        #expect(r.status == 0, "\(r.stderr)")
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.allSatisfy { $0.split(separator: "\t", omittingEmptySubsequences: false).count == 2 })
        #expect(lines.first?.hasPrefix(dir.path("odd\\tname\\nhere.wav") + "\t") == true, "\(r.stdout)")
    }

    @Test("/dev/stdin on a pipe and a FIFO with a writer are read as streams, as '-' is")
    func pipesByName() throws {
        let wav = try sentence()
        let bin = TestPaths.binary.path
        let file = try Run.speechgraph(["transcribe", wav])
        #expect(file.status == 0)
        let stdin = try Run.process("/bin/bash", ["-c", "cat '\(wav)' | '\(bin)' transcribe /dev/stdin"])
        #expect(stdin.status == 0, "\(stdin.stderr)")
        #expect(stdin.stdout == file.stdout)
        let fifo = dir.path("fifo.wav")
        #expect(mkfifo(fifo, 0o600) == 0)
        let viaFifo = try Run.process(
            "/bin/bash", ["-c", "cat '\(wav)' > '\(fifo)' & '\(bin)' transcribe '\(fifo)'; wait"])
        #expect(viaFifo.status == 0, "\(viaFifo.stderr)")
        #expect(viaFifo.stdout == file.stdout)
    }

    @Test("a file behind a directory that cannot be searched: permission denied, not 'no such file'")
    func unsearchableDirectory() throws {
        // Root searches any directory, so as root the command runs as nobody (uid 65534). Nobody may not enter the
        // clone (cloned into /root or a 0700 mktemp -d) nor, perhaps, $TMPDIR: the binary and the files are put in
        // a directory of /tmp that anyone may search, the binary copied there.
        let asNobody = getuid() == 0
        let place = asNobody ? try SearchableDirectory() : nil
        let base = place?.path ?? dir.url.path
        let locked = base + "/locked"
        try FileManager.default.createDirectory(atPath: locked, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: try sentence(), toPath: locked + "/call.wav")
        chmod(base, 0o755)
        chmod(locked, 0)
        defer { chmod(locked, 0o755) }
        var bin = TestPaths.binary.path
        if asNobody {
            try FileManager.default.copyItem(atPath: bin, toPath: base + "/speechgraph")
            bin = base + "/speechgraph"
        }
        let command = "'\(bin)' transcribe '\(locked)/call.wav' '\(base)/absent.wav'"
        let r =
            asNobody
            ? try Run.process(
                "/usr/bin/setpriv", ["--reuid=65534", "--regid=65534", "--clear-groups", "/bin/bash", "-c", command],
                currentDirectory: URL(fileURLWithPath: base))
            : try Run.process("/bin/bash", ["-c", command])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.contains("locked/call.wav: permission denied"), "\(r.stderr)")
        #expect(r.stderr.contains("absent.wav: no such file"), "\(r.stderr)")
    }

    /// A new directory in /tmp (which anyone may search, whatever $TMPDIR is), removed when the value goes away.
    final class SearchableDirectory {
        let path: String
        init() throws {
            var template = Array("/tmp/speechgraph-test-XXXXXX".utf8CString)
            guard let made = mkdtemp(&template) else { throw CocoaError(.fileWriteUnknown) }
            path = String(cString: made)
        }
        deinit {
            chmod(path + "/locked", 0o755)
            try? FileManager.default.removeItem(atPath: path)
        }
    }

    @Test("check: a NUL byte or a terminal escape in a graph file is quoted as an escape, never raw")
    func controlCharactersInDiagnostics() throws {
        let graph = dir.path("control.graph")
        try Data("node a = fi\0le.input { path: \"x\" }\nnode b = \u{1B}[31mred\n".utf8)
            .write(to: URL(fileURLWithPath: graph))
        let r = try Run.speechgraph(["check", graph])
        #expect(r.status == 2)
        #expect(r.stderr.contains(#"unexpected character '\0'"#), "\(r.stderr)")
        #expect(r.stderr.contains(#"unexpected character '\u{1B}'"#), "\(r.stderr)")
        #expect(!r.stderr.unicodeScalars.contains { $0.value < 0x20 && $0 != "\n" })
    }

    @Test("check: a line with 600,000 errors prints the first 100 and the count, not 50 MB")
    func manyErrorsAreCapped() throws {
        let graph = dir.path("many.graph")
        try ("node a = " + String(repeating: "} ", count: 600_000) + "\n").write(
            toFile: graph, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(["check", graph])
        #expect(r.status == 2)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 102, "\(lines.suffix(3))")
        #expect(r.stderr.contains("... and 599900 more (the first 100 are shown)"))
        #expect(lines.last == "600000 errors in \(graph)")
    }

    @Test("SIGQUIT (Ctrl-\\) quits at once: exit 131, one line, no backtrace")
    func quitSignal() throws {
        let wav = try sentence()
        let long = dir.path("long.wav")
        try TestSpeech.sox([wav, wav, wav, long])
        let log = dir.path("quit.jsonl")
        let r = try Run.speechgraph(
            ["run", "--realtime", "graphs/demo.graph"], environment: ["DEMO_AUDIO": long, "DEMO_LOG": log],
            timeout: 120
        ) { process in
            // Once it runs (a first result is written), the signal.
            Run.wait(for: process) { Run.lines(of: log).contains { $0.contains(#""type":"result""#) } }
            kill(process.processIdentifier, SIGQUIT)
        }
        #expect(r.status == 131, "\(r.stderr)")
        #expect(r.stderr == "speechgraph: quit (SIGQUIT): results in flight are lost\n")
    }
}
