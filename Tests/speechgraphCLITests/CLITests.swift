import CSndFile
import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

/// The speechgraph binary as a user runs it: exit codes, messages, where output goes.
@Suite(.tags(.model)) struct CLITests {
    let dir = TemporaryDirectory()

    /// No crash, no Swift backtrace, no ArgumentParser usage dump for a runtime failure.
    func expectClean(_ r: ProcessResult, _ comment: Comment? = nil) {
        #expect(!r.signaled, comment)
        #expect(!r.stderr.contains("Fatal error"), comment)
        #expect(!r.stderr.contains("Stack dump"), comment)
        #expect(!r.stderr.contains("Current stack trace"), comment)
    }

    /// A JSGF file of grammar `c` with these rules, written into `dir`: its path.
    func jsgf(_ rules: String, _ name: String, in dir: TemporaryDirectory) throws -> String {
        let path = dir.path(name)
        try ("#JSGF V1.0;\ngrammar c;\n" + rules).write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func speech(_ name: String = "call.wav") throws -> String {
        let path = dir.path(name)
        if !FileManager.default.fileExists(atPath: path) {
            try TestSpeech.synthesize("please call my mother at seven in the evening", to: path)
        }
        return path
    }

    // MARK: transcribe and bad input

    @Test func transcribeFormats() throws {
        let wav = try speech()
        let text = try Run.speechgraph(["transcribe", wav])
        #expect(text.status == 0)
        #expect(
            wordErrorRate(reference: "please call my mother at seven in the evening", hypothesis: text.stdout) <= 0.25)
        #expect(text.stdout.split(separator: "\n").count == 1)

        let tsv = try Run.speechgraph(["transcribe", "--format", "tsv", wav, wav])
        let rows = tsv.stdout.split(separator: "\n").map { $0.split(separator: "\t", omittingEmptySubsequences: false) }
        #expect(rows.count == 2)
        #expect(rows.allSatisfy { $0.count == 2 && $0[0] == Substring(wav) })

        let jsonl = try Run.speechgraph(["transcribe", "--format", "jsonl", wav])
        let first = try #require(jsonl.stdout.split(separator: "\n").first)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any])
        #expect(o["type"] as? String == "result")
        #expect(o["source"] as? String == wav)
        #expect((o["words"] as? [[String: Any]])?.isEmpty == false)
        #expect(jsonl.stderr.isEmpty, "stderr: \(jsonl.stderr)")
    }

    @Test func otherRatesChannelsAndContainersAreTranscribed() throws {
        let wav = try speech()
        for (name, args) in [
            ("s48.wav", ["-r", "48000", "-c", "2"]), ("s8.wav", ["-r", "8000"]),
            ("s.flac", []), ("s.ogg", []),
        ] {
            let out = dir.path(name)
            try TestSpeech.sox([wav] + args + [out])
            let r = try Run.speechgraph(["transcribe", out])
            #expect(r.status == 0, "\(name): \(r.stderr)")
            let wer = wordErrorRate(reference: "please call my mother at seven in the evening", hypothesis: r.stdout)
            #expect(wer <= 0.25, "\(name): '\(r.stdout)'")
        }
    }

    @Test func missingFile() throws {
        let r = try Run.speechgraph(["transcribe", dir.path("nope.wav")])
        #expect(r.status == 1)
        // The user never wrote transcribe's graph: the message names the file, not the graph's nodes.
        #expect(r.stderr == "speechgraph: error: \(dir.path("nope.wav")): no such file\n")
        #expect(r.stdout.isEmpty)
        expectClean(r)
    }

    @Test func textFileNamedWav() throws {
        let path = dir.path("notes.wav")
        try "these are my notes, not audio\n".write(toFile: path, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(["transcribe", path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(path): not an audio file libsndfile can read"))
        #expect(r.stderr.split(separator: "\n").count == 1)
        expectClean(r)
    }

    @Test func emptyFile() throws {
        let path = dir.path("empty.wav")
        FileManager.default.createFile(atPath: path, contents: Data())
        let r = try Run.speechgraph(["transcribe", path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("\(path): empty file, no audio in it"))
        expectClean(r)
    }

    @Test func truncatedWavIsTranscribedAsFarAsItGoesAndReported() throws {
        let wav = try speech()
        let data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let cut = dir.path("cut.wav")
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: cut))
        let r = try Run.speechgraph(["transcribe", cut])
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("speechgraph: warning: \(cut): file is truncated"), "\(r.stderr)")
        // What is there is still transcribed: the first half of the sentence.
        #expect(r.stdout.contains("please"))
        expectClean(r)
    }

    @Test func damagedFileIsTranscribedUpToTheDamageAndReported() throws {
        // Two sentences in FLAC, bytes four fifths of the way in overwritten: libsndfile's decoder stops there.
        let second = dir.path("weather.wav")
        try TestSpeech.synthesize("the weather today is cold and windy", to: second)
        let flac = dir.path("two.flac")
        try TestSpeech.sox([try speech(), second, flac])
        var data = try Data(contentsOf: URL(fileURLWithPath: flac))
        let at = data.count * 4 / 5
        data.replaceSubrange(at..<(at + 4000), with: (0..<4000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        let damaged = dir.path("damaged.flac")
        try data.write(to: URL(fileURLWithPath: damaged))
        let r = try Run.speechgraph(["transcribe", damaged])
        #expect(r.status == 1)
        let lines = r.stderr.split(separator: "\n")
        #expect(lines.count == 1, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("speechgraph: warning: \(damaged): read error ("), "\(r.stderr)")
        #expect(r.stderr.contains(" s into the audio: the audio before it was read"), "\(r.stderr)")
        // The first sentence, before the damage, is transcribed: its result is not lost with the rest.
        #expect(r.stdout.contains("mother"), "\(r.stdout)")
        expectClean(r)
    }

    /// `wav` encoded as MP3 at `path`, as an encoder writes one (libsndfile with LAME: an Info header first).
    func mp3(_ wav: String, _ path: String) throws {
        var info = SF_INFO()
        guard let input = sf_open(wav, Int32(SFM_READ), &info) else {
            throw TestSpeech.Failure(description: "cannot read \(wav)")
        }
        defer { sf_close(input) }
        var format = SF_INFO()
        format.samplerate = info.samplerate
        format.channels = info.channels
        format.format = Int32(SF_FORMAT_MPEG | SF_FORMAT_MPEG_LAYER_III)
        guard let output = sf_open(path, Int32(SFM_WRITE), &format) else {
            throw TestSpeech.Failure(description: "cannot write \(path): \(String(cString: sf_strerror(nil)))")
        }
        var buffer = [Float](repeating: 0, count: 4096 * Int(info.channels))
        while case let n = sf_readf_float(input, &buffer, 4096), n > 0 { _ = sf_writef_float(output, buffer, n) }
        sf_close(output)
    }

    @Test func mp3IsReadWithoutTheDecodersNotes() throws {
        let path = dir.path("call.mp3")
        try mp3(try speech(), path)
        let r = try Run.speechgraph(["transcribe", path])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.isEmpty, "\(r.stderr)")
        #expect(r.stdout.contains("mother"), "\(r.stdout)")
    }

    /// libsndfile goes by a file's name when its contents say nothing, and hands a .mp3 to libmpg123; and an ID3
    /// tag, which MP3 files start with, can stand before a WAV or a FLAC too.
    @Test func filesThatLookLikeMp3AndAreNot() throws {
        let wav = dir.path("really-a-wav.mp3")
        try FileManager.default.copyItem(atPath: try speech(), toPath: wav)
        // An ID3v2.3 tag of 64 bytes of padding, then the WAV.
        let tagged = dir.path("tagged.wav")
        let tag = Data([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 64] + [UInt8](repeating: 0, count: 64))
        try (tag + Data(contentsOf: URL(fileURLWithPath: try speech()))).write(to: URL(fileURLWithPath: tagged))
        for path in [wav, tagged] {
            let r = try Run.speechgraph(["transcribe", path])
            #expect(r.status == 0 && r.stderr.isEmpty, "\(path): \(r.stderr)")
            #expect(r.stdout.contains("mother"), "\(path): \(r.stdout)")
        }
        let junk = dir.path("junk.mp3")
        try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).write(to: URL(fileURLWithPath: junk))
        let bad = try Run.speechgraph(["transcribe", junk])
        #expect(bad.status == 1)
        #expect(bad.stderr.hasPrefix("speechgraph: error: \(junk): not an audio file"), "\(bad.stderr)")
        #expect(bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
        expectClean(bad)
        // A tag and nothing else (a download that stopped early).
        let tagOnly = dir.path("tag-only.mp3")
        try tag.write(to: URL(fileURLWithPath: tagOnly))
        let empty = try Run.speechgraph(["transcribe", tagOnly])
        #expect(empty.status == 1)
        #expect(empty.stderr == "speechgraph: error: \(tagOnly): no audio in it\n", "\(empty.stderr)")
    }

    /// A file that starts with an MPEG frame header and then holds none: libsndfile handed it to libmpg123, which
    /// printed "Note: Illegal Audio-MPEG-Header ..." lines of its own before the error.
    @Test func oneFrameHeaderAndNothingAfterIsOneError() throws {
        let path = dir.path("header.wav")
        try Data([0xFF, 0xFB, 0x90, 0x00] + [UInt8](repeating: 0, count: 20_000)).write(to: URL(fileURLWithPath: path))
        let r = try Run.speechgraph(["transcribe", path])
        #expect(r.status == 1)
        #expect(r.stderr.hasPrefix("speechgraph: error: \(path): "), "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        // A WAV whose header says 0 Hz: in words, not libsndfile's "Internal error : SF_INFO struct incomplete".
        func le(_ v: Int, _ n: Int) -> [UInt8] { (0..<n).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
        let zero = dir.path("zero.wav")
        let header =
            Array("RIFF".utf8) + le(36 + 2000, 4) + Array("WAVEfmt ".utf8) + le(16, 4) + le(1, 2) + le(1, 2)
            + le(0, 4) + le(0, 4) + le(2, 2) + le(16, 2) + Array("data".utf8) + le(2000, 4)
        try Data(header + [UInt8](repeating: 1, count: 2000)).write(to: URL(fileURLWithPath: zero))
        let z = try Run.speechgraph(["transcribe", zero])
        #expect(z.status == 1)
        #expect(
            z.stderr == "speechgraph: error: \(zero): not an audio file libsndfile can read (its header gives no "
                + "sample rate or channels)\n", "\(z.stderr)")
    }

    @Test("a directory or a device where a file is meant: said so, not 'is empty' or 'cannot be read'")
    func directoriesAndDevicesAreNamed() throws {
        let folder = try Run.speechgraph(["transcribe", "--rate", "16000", dir.path("")])
        #expect(folder.status == 1)
        #expect(folder.stderr == "speechgraph: error: \(dir.path("")) is a directory, not audio\n", "\(folder.stderr)")
        let device = try Run.speechgraph(["lm", "build", "/dev/null", "-o", dir.path("null-lm")])
        #expect(device.status == 2)
        #expect(
            device.stderr.hasPrefix(
                "speechgraph: error: cannot read language-model spec /dev/null: it is a device or a pipe, not a file"),
            "\(device.stderr)")
    }

    /// An MP3 cut short, or with bytes overwritten partway: libmpg123 (through libsndfile) printed notes and
    /// warnings of its own ("Warning: Xing stream size off ...") and nothing said the file was short (exit 0). With
    /// an Info header (LAME writes one) the lost length is known; without one (older encoders), libmpg123's stop.
    @Test(arguments: ["cut", "overwritten", "cut, no Info header", "overwritten, no Info header"])
    func mp3CutShortOrDamagedIsOneWarningAndReadAsFarAsItGoes(_ damage: String) throws {
        let second = dir.path("weather.wav")
        try TestSpeech.synthesize("the weather today is cold and windy", to: second)
        let two = dir.path("two.wav")
        try TestSpeech.sox([try speech(), second, two])
        let whole = dir.path("two.mp3")
        try mp3(two, whole)
        var data = try Data(contentsOf: URL(fileURLWithPath: whole))
        if damage.hasSuffix("no Info header") {
            // The header's name blanked: the frame that holds it is read as a frame of silence.
            let name = try #require(data.range(of: Data("Info".utf8)) ?? data.range(of: Data("Xing".utf8)))
            data.replaceSubrange(name, with: [0, 0, 0, 0])
        }
        let at = data.count * 3 / 5
        if damage.hasPrefix("cut") {
            data = data.prefix(at)
        } else {
            data.replaceSubrange(at..<(at + 2000), with: (0..<2000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
        }
        let name = damage.replacingOccurrences(of: ",", with: "").replacingOccurrences(of: " ", with: "-")
        let damaged = dir.path("\(name).mp3")
        try data.write(to: URL(fileURLWithPath: damaged))
        let r = try Run.speechgraph(["transcribe", damaged])
        #expect(r.status == 1)
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(r.stderr.hasPrefix("speechgraph: warning: \(damaged): file is truncated or damaged"), "\(r.stderr)")
        #expect(r.stdout.contains("mother"), "\(r.stdout)")
        expectClean(r)
        // The same file from a pipe: one warning too, except for a stream cut short that has no Info header (a
        // stream's end is its end).
        let bin = TestPaths.binary.path
        let piped = try Run.process("/bin/bash", ["-c", "'\(bin)' transcribe - < '\(damaged)'"], timeout: 120)
        #expect(piped.stdout.contains("mother"), "\(piped.stdout)")
        expectClean(piped)
        if damage == "cut, no Info header" {
            #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        } else {
            #expect(piped.status == 1)
            #expect(piped.stderr.split(separator: "\n").count == 1, "\(piped.stderr)")
            let what = damage.hasPrefix("cut") ? "truncated" : "damaged"
            #expect(
                piped.stderr.hasPrefix("speechgraph: warning: standard input: the stream is \(what)"),
                "\(piped.stderr)")
        }
    }

    /// `curl -s URL | speechgraph transcribe -`: an MP3 on standard input or from a FIFO gives what the file gives,
    /// to the last digit of every confidence (the same samples: libmpg123's feed mode, and a file read from its
    /// start as opened, never sought back to it).
    @Test func mp3FromAPipeOrAFifoIsTheFile() throws {
        let path = dir.path("call.mp3")
        try mp3(try speech(), path)
        let bin = TestPaths.binary.path
        let file = try Run.speechgraph(["transcribe", "--format", "jsonl", path])
        #expect(file.status == 0 && file.stderr.isEmpty, "\(file.stderr)")
        #expect(file.stdout.contains("mother"), "\(file.stdout)")
        let source = { (r: ProcessResult) in
            r.stdout.replacingOccurrences(of: #""source":"[^"]*""#, with: "", options: .regularExpression)
        }
        let piped = try Run.process("/bin/bash", ["-c", "cat '\(path)' | '\(bin)' transcribe --format jsonl -"])
        #expect(piped.status == 0 && piped.stderr.isEmpty, "\(piped.stderr)")
        #expect(source(piped) == source(file))
        let fifo = dir.path("fifo.mp3")
        #expect(mkfifo(fifo, 0o600) == 0)
        let viaFifo = try Run.process(
            "/bin/bash", ["-c", "cat '\(path)' > '\(fifo)' & '\(bin)' transcribe --format jsonl '\(fifo)'; wait"])
        #expect(viaFifo.status == 0 && viaFifo.stderr.isEmpty, "\(viaFifo.stderr)")
        #expect(source(viaFifo) == source(file))
        // An ID3 tag that ends 100 bytes before the stream's first read does (4096 bytes): the first frame's header
        // is in that read, the second is not (it was looked for in that read alone: 'neither a WAV nor an MP3').
        let size = 4096 - 100
        let header: [UInt8] = [0x49, 0x44, 0x33, 3, 0, 0, 0, 0, UInt8((size - 10) >> 7), UInt8((size - 10) & 0x7F)]
        let tagged = dir.path("tagged.mp3")
        try (Data(header + [UInt8](repeating: 0, count: size - 10)) + Data(contentsOf: URL(fileURLWithPath: path)))
            .write(to: URL(fileURLWithPath: tagged))
        let taggedIn = try Run.process("/bin/bash", ["-c", "'\(bin)' transcribe --format jsonl - < '\(tagged)'"])
        #expect(taggedIn.status == 0 && taggedIn.stderr.isEmpty, "\(taggedIn.stderr)")
        #expect(source(taggedIn) == source(file))
    }

    /// What a stream starts with decides how it is read: an ID3 tag may stand before a WAV too; a tag alone, or
    /// bytes that are neither WAV nor MPEG, are one error each; a WAV stream whose header gives a length and that
    /// ends before it is one warning, as a truncated file is.
    @Test func streamsThatAreNotWhatTheySeem() throws {
        let bin = TestPaths.binary.path
        let wav = try speech()
        let stdin = { (file: String) in try Run.process("/bin/bash", ["-c", "'\(bin)' transcribe - < '\(file)'"]) }
        let tag = Data([0x49, 0x44, 0x33, 3, 0, 0, 0, 0, 0, 64] + [UInt8](repeating: 0, count: 64))
        let tagged = dir.path("tagged.wav")
        try (tag + Data(contentsOf: URL(fileURLWithPath: wav))).write(to: URL(fileURLWithPath: tagged))
        let r = try stdin(tagged)
        #expect(r.status == 0 && r.stderr.isEmpty, "\(r.stderr)")
        #expect(r.stdout.contains("mother"), "\(r.stdout)")
        let tagOnly = dir.path("tag-only")
        try tag.write(to: URL(fileURLWithPath: tagOnly))
        let junk = dir.path("junk")
        try Data((0..<5000).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }).write(to: URL(fileURLWithPath: junk))
        for (file, message) in [
            (tagOnly, "an ID3 tag and no audio after it"), (junk, "is neither a WAV nor an MP3 stream"),
        ] {
            let bad = try stdin(file)
            #expect(bad.status == 1)
            #expect(bad.stderr.hasPrefix("speechgraph: error: standard input"), "\(bad.stderr)")
            #expect(bad.stderr.contains(message), "\(bad.stderr)")
            #expect(bad.stderr.split(separator: "\n").count == 1, "\(bad.stderr)")
            expectClean(bad)
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: wav))
        let cut = dir.path("cut.wav")
        try data.prefix(data.count * 3 / 5).write(to: URL(fileURLWithPath: cut))
        let short = try stdin(cut)
        #expect(short.status == 1)
        #expect(
            short.stderr.hasPrefix("speechgraph: warning: standard input: the stream is truncated"), "\(short.stderr)")
        #expect(short.stderr.split(separator: "\n").count == 1, "\(short.stderr)")
        #expect(short.stdout.contains("mother"), "\(short.stdout)")
        // In JSON Lines the warning is in the transcript too, as an event of the stream's node.
        let jsonl = try Run.process("/bin/bash", ["-c", "'\(bin)' transcribe --format jsonl - < '\(cut)'"])
        #expect(jsonl.status == 1)
        let warnings = jsonl.stdout.split(separator: "\n").filter { $0.contains(#""type":"warning""#) }
        #expect(warnings.count == 1, "\(jsonl.stdout)")
        #expect(warnings.first?.contains("the stream is truncated") ?? false, "\(jsonl.stdout)")
        #expect(jsonl.stdout.contains(#""type":"result""#), "\(jsonl.stdout)")
    }

    @Test func oneBadFileDoesNotStopTheOthers() throws {
        let wav = try speech()
        let r = try Run.speechgraph(["transcribe", "--format", "tsv", dir.path("missing.wav"), wav])
        #expect(r.status == 1)
        #expect(r.stdout.split(separator: "\n").count == 1)
        #expect(r.stdout.hasPrefix(wav + "\t"))
        #expect(r.stderr.contains("no such file"))
    }

    @Test func missingModelDirectory() throws {
        let wav = try speech()
        let r = try Run.speechgraph(["transcribe", "--model", "/no/such/model", wav])
        #expect(r.status == 1)
        // Named by the option that gave the value, not by transcribe's graph.
        #expect(r.stderr == "speechgraph: error: --model: model directory not found: /no/such/model\n")
        expectClean(r)
        let named = try Run.speechgraph(["transcribe", "--model", "klingon", wav])
        #expect(named.status == 1)
        #expect(named.stderr.contains("model 'klingon' not found in"))
        #expect(named.stderr.contains("pocketsphinx-en-us"))
        let dict = try Run.speechgraph(["transcribe", "--dict", "/no/such.dict", wav])
        #expect(dict.status == 1)
        #expect(dict.stderr == "speechgraph: error: --dict: dictionary not found: /no/such.dict\n")
        // Two missing: transcribe names the first (in the same words), then stops.
        let two = try Run.speechgraph(["transcribe", "--dict", "/no/such.dict", "--lm", "/no/such.lm", wav])
        #expect(two.status == 1)
        #expect(two.stderr == "speechgraph: error: --dict: dictionary not found: /no/such.dict\n", "\(two.stderr)")
        // A folder or an audio file as the dictionary: PocketSphinx took them as dictionaries of no words.
        let folder = try Run.speechgraph(["transcribe", "--dict", "/tmp", wav])
        #expect(folder.status == 1)
        #expect(folder.stderr == "speechgraph: error: --dict: the dictionary /tmp is a directory, not a file\n")
        let audio = try Run.speechgraph(["transcribe", "--dict", wav, wav])
        #expect(audio.status == 1)
        #expect(
            audio.stderr == "speechgraph: error: --dict: \(wav) is not a pronunciation dictionary (a word and its "
                + "phones a line, as in 'hello HH AH L OW')\n", "\(audio.stderr)")
        let grammar = try Run.speechgraph(["transcribe", "--grammar", "/no/such.jsgf", wav])
        #expect(grammar.status == 1)
        #expect(grammar.stderr == "speechgraph: error: --grammar: grammar not found: /no/such.jsgf\n")
    }

    @Test("a grammar's words the dictionary lacks are all named, where they are, in one message")
    func grammarWordsOutsideTheDictionary() throws {
        let wav = try speech()
        let dir = TemporaryDirectory()
        let grammar = try jsgf("public <c> = hello zorblax | Lights on | open the quuxgate;\n", "oov.jsgf", in: dir)
        // Three files: the grammar fails each the same way, so it is said once and the others are not tried.
        let r = try Run.speechgraph(["transcribe", "--grammar", grammar, wav, wav, wav])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(
            r.stderr.hasPrefix(
                "speechgraph: error: --grammar: the grammar \(grammar) says 3 words that the dictionary ("))
        #expect(
            r.stderr.contains(
                "does not have: 'zorblax' (3:20), 'Lights' (3:30; the dictionary has 'lights'), 'quuxgate' (3:51)."),
            "\(r.stderr)")
        // A quoted token is one word to PocketSphinx, quotes included: a located error before it loads anything.
        let quoted = try jsgf("public <c> = turn \"lights on\";\n", "quoted.jsgf", in: dir)
        let q = try Run.speechgraph(["transcribe", "--grammar", quoted, wav])
        #expect(q.status == 2, "\(q.stderr)")
        #expect(q.stderr.hasPrefix("\(quoted):3:19: error: PocketSphinx reads the quoted token"), "\(q.stderr)")
        #expect(r.stderr.contains("write the grammar as a .lmspec spec"))
    }

    @Test("a grammar with errors: located errors, their count, exit 2 as with run, and no file transcribed")
    func badGrammarIsAUsageError() throws {
        let wav = try speech()
        let dir = TemporaryDirectory()
        let bad = try jsgf("public <cmd> = lights on | lights off\n", "bad.jsgf", in: dir)
        let r = try Run.speechgraph(["transcribe", "--grammar", bad, wav, wav])
        #expect(r.status == 2, "\(r.stderr)")
        #expect(
            r.stderr == "\(bad):3:38: error: expected ';' to end rule <cmd>, found 'the end of the file'\n"
                + "1 error in \(bad)\n", "\(r.stderr)")
        #expect(r.stdout.isEmpty)
        // A ';' forgotten before the next rule, or a group left open: said where the mistake is.
        for (rules, message) in [
            (
                "public <cmd> = lights on | lights off\n<other> = next slide;\n",
                "4:1: error: expected ';' to end rule "
                    + "<cmd> before rule <other> begins"
            ),
            (
                "public <cmd> = lights on | (next slide ;\n",
                "3:28: error: '(' opened here is not closed with ')' "
                    + "before the ';' that ends rule <cmd>"
            ),
            (
                "public <cmd> = lights on | lights off\npublic <b> = x;\n",
                "4:1: error: expected ';' to end rule <cmd> before rule <b> begins"
            ),
            // The end of the file is after the last token, not after a comment that follows it.
            (
                "public <cmd> = lights on | lights off\n// the end\n",
                "3:38: error: expected ';' to end rule <cmd>, found 'the end of the file'"
            ),
        ] {
            let file = try jsgf(rules, "open.jsgf", in: dir)
            let e = try Run.speechgraph(["transcribe", "--grammar", file, wav])
            #expect(e.status == 2 && e.stderr.hasPrefix("\(file):\(message)\n"), "\(e.stderr)")
        }
        // Named by a graph file: the count says the file the error is in.
        let graph = dir.path("commands.graph")
        try """
        node src = file.input { path: "\(wav)" }
        node asr = recognizer { mode: utterance, grammar: "\(bad)" }
        src -> asr
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let check = try Run.speechgraph(["check", "--plan", graph])
        #expect(check.status == 2, "\(check.stderr)")
        #expect(
            check.stderr == "\(bad):3:38: error: expected ';' to end rule <cmd>, found 'the end of the file'\n"
                + "1 error in \(bad)\n", "\(check.stderr)")
    }

    @Test("a grammar that imports another decodes with its rules; an import PocketSphinx cannot make is located")
    func grammarImports() throws {
        let dir = TemporaryDirectory()
        let wav = dir.path("call-two.wav")
        try TestSpeech.synthesize("call two", to: wav)
        try "#JSGF V1.0;\ngrammar digits;\npublic <digit> = one | two | three;\n".write(
            toFile: dir.path("digits.gram"), atomically: true, encoding: .utf8)
        let grammar = try jsgf("import <digits.digit>;\npublic <cmd> = (call | dial) <digit>;\n", "cmd.gram", in: dir)
        let r = try Run.speechgraph(["transcribe", "--grammar", grammar, wav])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "call two", "\(r.stdout)")
        // PocketSphinx itself says nothing of an import it cannot make, and recognises nothing.
        let missing = try jsgf("import <digitz.digit>;\npublic <cmd> = (call | dial) <digit>;\n", "bad.gram", in: dir)
        let e = try Run.speechgraph(["transcribe", "--grammar", missing, wav])
        #expect(e.status == 2, "\(e.stderr)")
        #expect(
            e.stderr.hasPrefix("\(missing):3:8: error: cannot import <digitz.digit>: no grammar file digitz.gram in "),
            "\(e.stderr)")
        #expect(e.stdout.isEmpty)
    }

    @Test func vadCommandNamesItsSettingAsTyped() throws {
        let r = try Run.speechgraph(["vad", "--set", "threshold=loud", try speech()])
        #expect(r.status == 2)
        #expect(r.stderr.hasPrefix("speechgraph: error: --set threshold: "), "\(r.stderr)")
        // One line: the value is in no file, so no '1 error in FILE' follows.
        let run = try Run.speechgraph(["check", "graphs/demo.graph", "--set", "asr.mode=bogus"])
        #expect(run.status == 2)
        #expect(
            run.stderr == "speechgraph: error: --set asr.mode: 'bogus' is not one of streaming, utterance for 'mode'\n",
            "\(run.stderr)")
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
    }

    // MARK: usage errors

    @Test func usageErrorsExit2() throws {
        for args in [
            ["transcribe"], ["frobnicate"], ["transcribe", "--format", "xml", "a.wav"], ["run"],
            ["nodes", "recogniser"], ["run", "graphs/demo.graph", "--set", "nonsense"],
            ["run", "graphs/demo.graph", "--results", "slow"],
            // JACK client names JACK would refuse: a usage error before anything runs (64 bytes: jack2 takes 63).
            ["run", "graphs/live.graph", "--name", "a:b"], ["run", "graphs/live.graph", "--name", ""],
            ["run", "graphs/live.graph", "--name", String(repeating: "n", count: 64)],
        ] {
            let r = try Run.speechgraph(args)
            #expect(r.status == 2, "\(args): \(r.stderr)")
            #expect(!r.stderr.isEmpty)
            #expect(r.stdout.isEmpty)
            expectClean(r)
        }
        let r = try Run.speechgraph(["nodes", "recogniser"])
        #expect(r.stderr.contains("did you mean 'recognizer'?"))
        // A negative number after an option is its value, checked as such (not "missing value").
        let negative = try Run.speechgraph(["run", "--duration", "-1", "graphs/demo.graph"])
        #expect(negative.status == 2)
        #expect(
            negative.stderr.hasPrefix("Error: --duration: a number of seconds greater than 0"), "\(negative.stderr)")
        // Values no command can use: usage errors before anything runs.
        for (arguments, message) in [
            (["plugin", "check", "--timeout", "-1", "x.so"], "Error: --timeout: a number of seconds above 0"),
            (["plugin", "check", "--timeout", "nan", "x.so"], "Error: --timeout: a number of seconds above 0"),
            (["lm", "build", "graphs/chess.lmspec", "-o", ""], "Error: -o: the model directory's name is empty"),
            (
                ["lm", "build", "graphs/chess.lmspec", "-o", "x", "--corpus", ""],
                "Error: --corpus: the file name is empty"
            ),
        ] {
            let odd = try Run.speechgraph(arguments)
            #expect(odd.status == 2 && odd.stderr.hasPrefix(message), "\(arguments): \(odd.stderr)")
        }
    }

    @Test func helpIsComplete() throws {
        let r = try Run.speechgraph(["--help"])
        #expect(r.status == 0)
        for word in ["run", "transcribe", "check", "nodes", "Exit status"] { #expect(r.stdout.contains(word)) }
        let topic = try Run.speechgraph(["help", "lm", "build"])
        #expect(topic.status == 0 && topic.stdout.contains("USAGE: speechgraph lm build"), "\(topic.stdout)")
        // A topic that is no command is a usage error, not the top-level help.
        for (words, message) in [
            (["nosuch"], "'help nosuch': no such command (commands: run, transcribe"),
            (["lm", "bild"], "'help lm bild': no such command (lm commands: build)"),
            (["run", "x"], "'help run x': 'run' has no subcommands"),
        ] {
            let bad = try Run.speechgraph(["help"] + words)
            #expect(bad.status == 2 && bad.stdout.isEmpty)
            #expect(bad.stderr.hasPrefix("speechgraph: error: \(message)"), "\(bad.stderr)")
        }
    }

    @Test func consoleWritesNoLineForAFinalResultWithoutWords() throws {
        // One second of digital silence, one utterance (no vad): its final result has no words.
        let wav = dir.path("silence.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-b", "16", "-c", "1", wav, "trim", "0", "1"])
        let log = dir.path("silence.jsonl")
        let graph = dir.path("silence.graph")
        try """
        node src = file.input { path: "\(wav)" }
        node asr = recognizer { mode: utterance }
        node out = console
        node log = jsonl { path: "\(log)" }
        src -> asr -> out, log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(["run", graph], timeout: 120)
        #expect(r.status == 0, "\(r.stderr)")
        let finals = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains(#""type":"result""#) && $0.contains(#""isFinal":true"#) }
        #expect(finals.count == 1 && finals[0].contains(#""text":"""#), "the final result is there: \(finals)")
        #expect(r.stdout.isEmpty, "no line for it on the console: \(r.stdout.debugDescription)")
    }

    // MARK: check

    @Test func checkRefusesJackPortNamesJackWouldMangle() throws {
        for (port, problem) in [
            ("a:b", "holds ':'"), ("", "cannot be empty"), (String(repeating: "p", count: 260), "too long"),
        ] {
            let graph = dir.path("port\(port.count).graph")
            try """
            node mic = jack.input { port: "\(port)" }
            node out = console
            mic.events -> out
            """.write(toFile: graph, atomically: true, encoding: .utf8)
            let r = try Run.speechgraph(["check", graph])
            #expect(r.status == 2, "\(r.stderr)")
            #expect(r.stderr.hasPrefix("\(graph):1:31: error:") && r.stderr.contains(problem), "\(r.stderr)")
        }
    }

    @Test func checkReportsGraphErrorsWithLocations() throws {
        let graph = dir.path("bad.graph")
        try """
        node src = file.inptu { path: "a.wav" }
        node asr = recognizer { rate: 16 ms, modle: "en-us" }
        node out = console
        src -> asr -> out
        asr -> nowhere
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(["check", graph])
        #expect(r.status == 2)
        let lines = r.stderr.split(separator: "\n").map(String.init)
        #expect(
            lines.contains(
                "\(graph):1:12: error: unknown node type 'file.inptu' (did you mean 'file.input'?) "
                    + "(see 'speechgraph nodes')"
            ))
        #expect(
            lines.contains(
                "\(graph):2:31: error: wrong unit 'ms' for 'rate': "
                    + "expected a frequency like '16 kHz' or '48000 Hz', not a time"
            ))
        #expect(
            lines.contains(
                "\(graph):2:38: error: unknown parameter 'modle' for node type 'recognizer' (did you mean 'model'?)"))
        #expect(
            lines.contains(
                "\(graph):5:8: error: unknown node 'nowhere'" + " (declare it with 'node nowhere = TYPE { }')"))
        #expect(lines.last == "4 errors in \(graph)")
        // run refuses the same graph the same way.
        let run = try Run.speechgraph(["run", graph])
        #expect(run.status == 2)
        #expect(run.stderr == r.stderr)
        // A graph file that is not there, or a directory: said so, exit 2.
        for (path, message) in [
            (dir.path("nosuch.graph"), "no such file: \(dir.path("nosuch.graph"))"),
            (dir.url.path, "\(dir.url.path) is a directory, not a graph file"),
        ] {
            let r = try Run.speechgraph(["check", path])
            #expect(r.status == 2)
            #expect(r.stderr.hasPrefix("speechgraph: error: \(message)\n"), "\(r.stderr)")
        }
        // An audio file run as a graph: said what to do with it.
        let wav = try speech()
        let audio = try Run.speechgraph(["run", wav])
        #expect(audio.status == 2)
        #expect(
            audio.stderr.hasPrefix(
                "\(wav):1:1: error: \(wav) is not UTF-8 text (it is audio: 'speechgraph transcribe \(wav)' "
                    + "transcribes it)"),
            "\(audio.stderr)")
    }

    @Test func checkAcceptsEveryShippedGraphAndPlansTheDemo() throws {
        let graphs = try FileManager.default.contentsOfDirectory(
            atPath: TestPaths.packageRoot.appendingPathComponent("graphs").path
        )
        .filter { $0.hasSuffix(".graph") }
        #expect(!graphs.isEmpty)
        // graphs/match.graph uses the example plugin built beside speechgraph.
        let plugins = TestPaths.binary.deletingLastPathComponent().path
        for g in graphs {
            let r = try Run.speechgraph(
                ["check", "--plugin-path", plugins, "graphs/\(g)"], environment: ["XDG_CACHE_HOME": dir.path("cache")])
            #expect(r.status == 0, "\(g): \(r.stderr)")
        }
        let wav = dir.path("demo.wav")
        try TestSpeech.synthesize("good morning", to: wav)
        try TestSpeech.sox([wav, "-r", "44100", "-c", "2", dir.path("demo44.wav")])
        let plan = try Run.speechgraph(
            ["check", "--plan", "graphs/demo.graph"], environment: ["DEMO_AUDIO": dir.path("demo44.wav")])
        #expect(plan.status == 0, "\(plan.stderr)")
        #expect(plan.stdout.contains("resample    (inserted)"))
        #expect(plan.stdout.contains("float32 44100 Hz mono"))
        #expect(plan.stdout.contains("float32 16000 Hz mono"))
    }

    @Test("graphs/captions-mic.graph: a WAV stream on standard input, captions on the console and in the srt file")
    func captionsFromStandardInput() throws {
        let wav = dir.path("talk.wav")
        try TestSpeech.synthesize("good morning everyone and welcome to the talk", to: wav)
        let padded = dir.path("padded.wav")
        try TestSpeech.sox([wav, padded, "pad", "0.5", "1"])
        let subs = dir.path("talk.srt")
        let bin = TestPaths.binary.path
        let r = try Run.process(
            "/bin/bash",
            [
                "-c",
                "sox '\(padded)' -t wav - | SUBS='\(subs)' '\(bin)' run graphs/captions-mic.graph "
                    + "--set page.listen=127.0.0.1:0",
            ], currentDirectory: TestPaths.packageRoot, timeout: 300)
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.contains("good morning"), "\(r.stdout)")
        #expect(r.stderr.contains("captions at http://127.0.0.1:"), "\(r.stderr)")
        let srt = try String(contentsOfFile: subs, encoding: .utf8)
        #expect(srt.hasPrefix("1\n00:00:00,"), "\(srt)")
        #expect(srt.contains(" --> ") && srt.contains("good morning"), "\(srt)")
    }

    // MARK: run, stop, flush

    @Test func runWritesTheTranscriptAndTheLog() throws {
        let wav = try speech()
        let log = dir.path("log.jsonl")
        let r = try Run.speechgraph(
            ["run", "graphs/demo.graph", "--set", "asr.mode=utterance"],
            environment: ["DEMO_AUDIO": wav, "DEMO_LOG": log])
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stdout.hasPrefix("[00:00.000 - 00:02."))
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 1)  // utterance mode: no volatile results
    }

    /// `--results` sets the preset of every recognizer: final-only leaves the volatile results out of the
    /// streamed demo, whose default (progressive) has them.
    @Test func resultsPresetAppliesToTheRecognizers() throws {
        let wav = try speech()
        func lines(_ extra: [String]) throws -> [Substring] {
            let log = dir.path("results.jsonl")
            let r = try Run.speechgraph(
                ["run", "graphs/demo.graph"] + extra, environment: ["DEMO_AUDIO": wav, "DEMO_LOG": log])
            #expect(r.status == 0, "\(r.stderr)")
            return try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        }
        #expect(try lines([]).contains { $0.contains("\"isFinal\":false") })
        let finalOnly = try lines(["--results", "final-only"])
        #expect(finalOnly.count == 1 && finalOnly[0].contains("\"isFinal\":true"), "\(finalOnly)")
        let bad = try Run.speechgraph(["run", "graphs/demo.graph", "--results", "slow"])
        #expect(bad.stderr.contains("--results expects progressive, final-only, fast, got 'slow'"), "\(bad.stderr)")
    }

    @Test("SIGHUP on run loads the models again while the audio goes on: modelChanged, then the run goes on")
    func hangupReloadsTheModels() throws {
        let wav = try speech()
        let long = dir.path("hup.wav")
        try TestSpeech.sox([wav, wav, wav, long])
        let log = dir.path("hup.jsonl")
        let graph = dir.path("hup.graph")
        try """
        node speech = file.input { path: "\(long)" }
        node vad    = vad
        node asr    = recognizer { mode: streaming }
        node log    = jsonl { path: "\(log)" }
        speech.out -> vad.in
        vad.out    -> asr.in
        vad.events -> asr.control
        asr        -> log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(["run", "--realtime", graph], timeout: 120) { process in
            Run.wait(for: process) { Run.lines(of: log).contains { $0.contains(#""isFinal":false"#) } }
            kill(process.processIdentifier, SIGHUP)
            Run.wait(for: process) { Run.lines(of: log).contains { $0.contains(#""type":"modelChanged""#) } }
            kill(process.processIdentifier, SIGTERM)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("SIGHUP: loading the graph's models again"), "\(r.stderr)")
        // The answer on the terminal too (it comes as the event does; the run then still finishes an utterance).
        #expect(r.stderr.contains("node 'asr': the new models took over"), "\(r.stderr)")
        let lines = Run.lines(of: log)
        let changed = try #require(lines.firstIndex { $0.contains(#""type":"modelChanged""#) })
        #expect(lines[changed].contains(#""ok":true"#), "\(lines[changed])")
        // Results before and after the change: the run went on.
        #expect(lines[..<changed].contains { $0.contains(#""isFinal":true"#) })
        #expect(lines[changed...].contains { $0.contains(#""type":"result""#) })
    }

    /// A spec broken before SIGHUP, on an input where nobody speaks: the failure waited for the next utterance
    /// (its modelChanged event), which a quiet input never begins, and the run went on without a word of it.
    /// Said at once now, and not again when the event comes (the stream's end finishes an utterance).
    @Test("SIGHUP with a spec that no longer reads, on a quiet input: the failure is said at once, and once")
    func hangupWithABrokenSpecOnAQuietInput() throws {
        let spec = dir.path("quiet.lmspec")
        try "phrase \"go forward\"\nphrase \"go back\"\n".write(toFile: spec, atomically: true, encoding: .utf8)
        let graph = dir.path("quiet.graph")
        let log = dir.path("quiet.jsonl")
        // Streaming mode: check's warning about it, on standard error once the graph is planned, says that the
        // program handles SIGHUP (it does from its start; before that, SIGHUP's default action ends it).
        try """
        node mic = push.input
        node asr = recognizer { lm: "\(spec)", mode: streaming }
        node log = jsonl { path: "\(log)" }
        mic -> asr -> log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        // The specs are built in a cache of the test's own: built before, one would say nothing of its guesses.
        let fed = try FedSpeechgraph(
            ["run", graph], stderrPath: dir.path("quiet.err"), environment: ["XDG_CACHE_HOME": dir.path("cache")])
        defer { fed.stop() }
        let (process, stdin) = (fed.process, fed.stdin)
        // A WAV stream of no stated length, 16 kHz mono 16-bit, and then nothing for now: the pipe stays open.
        var header = Data("RIFF".utf8) + Data([0xFF, 0xFF, 0xFF, 0xFF]) + Data("WAVEfmt ".utf8)
        header += Data([16, 0, 0, 0, 1, 0, 1, 0, 0x80, 0x3E, 0, 0, 0, 0x7D, 0, 0, 2, 0, 16, 0])
        header += Data("data".utf8) + Data([0xFF, 0xFF, 0xFF, 0xFF])
        stdin.fileHandleForWriting.write(header)
        let stderr = { fed.stderr }
        Run.wait(for: process, seconds: 120) { stderr().contains("warning: streaming mode") }
        // Until the graph runs, a SIGHUP is answered 'not running yet': sent again after each such answer (the
        // deadline only bounds a program that never answers).
        let loaded = "node 'asr': the models are loaded again"
        let notYet = "the graph is not running yet"
        let deadline = Date().addingTimeInterval(120)
        while process.isRunning && !stderr().contains(loaded) && Date() < deadline {
            let answers = stderr().components(separatedBy: notYet).count
            kill(process.processIdentifier, SIGHUP)
            Run.wait(for: process, seconds: 30) {
                stderr().contains(loaded) || stderr().components(separatedBy: notYet).count > answers
            }
        }
        #expect(stderr().contains(loaded), "\(stderr())")
        // A spec changed: built again, it says what it guessed, as it does when the graph is made.
        try "phrase \"go forward\"\nphrase \"go zigbee\"\n".write(toFile: spec, atomically: true, encoding: .utf8)
        let loadedCount = stderr().components(separatedBy: loaded).count
        kill(process.processIdentifier, SIGHUP)
        Run.wait(for: process, seconds: 120) { stderr().components(separatedBy: loaded).count > loadedCount }
        let guessed = "quiet.lmspec:2:8: warning: 'zigbee' is in no dictionary; pronounced"
        #expect(stderr().contains(guessed), "\(stderr())")
        #expect(stderr().components(separatedBy: loaded).count == loadedCount + 1, "\(stderr())")
        try "phrase \"go forward\"\nphrase \"oops\n".write(toFile: spec, atomically: true, encoding: .utf8)
        let failure = "warning: node 'asr': the models could not be loaded again"
        kill(process.processIdentifier, SIGHUP)
        Run.wait(for: process, seconds: 120) { stderr().contains(failure) }
        // The models of the reloads before, loaded but never taken (nobody spoke), will not take over either.
        #expect(
            stderr().contains(
                failure + "; those in use go on (those an earlier SIGHUP loaded, not yet in use, are dropped)"),
            "\(stderr())")
        // A second of silence, then the end: the utterance it makes ends with the failure's modelChanged event.
        stdin.fileHandleForWriting.write(Data(count: 32000))
        try stdin.fileHandleForWriting.close()
        Run.wait(for: process, seconds: 120) { false }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
        #expect(process.terminationReason == .exit && process.terminationStatus == 0, "\(stderr())")
        #expect(
            Run.lines(of: log).contains { $0.contains(#""type":"modelChanged""#) && $0.contains(#""ok":false"#) },
            "\(Run.lines(of: log))")
        #expect(stderr().components(separatedBy: failure).count == 2, "said once: \(stderr())")
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func aSignalStopsTheRunAndFlushesTheUtteranceInFlight(signal: Int32) throws {
        // 12 s of speech played in real time; stopped once the first words have been recognised.
        let wav = try speech()
        let long = dir.path("long.wav")
        try TestSpeech.sox([wav, wav, wav, wav, long])
        let total = try TestSpeech.duration(long)
        let log = dir.path("log\(signal).jsonl")
        let r = try Run.speechgraph(
            ["run", "--realtime", "graphs/demo.graph"], environment: ["DEMO_AUDIO": long, "DEMO_LOG": log],
            timeout: 120
        ) { process in
            // The signal goes as soon as a volatile result shows "please".
            Run.wait(for: process) {
                Run.lines(of: log).contains { $0.contains(#""isFinal":false"#) && $0.contains("please") }
            }
            kill(process.processIdentifier, signal)
        }
        #expect(r.status == 0, "\(r.stderr)")
        #expect(r.stderr.contains("stopping"))
        // The utterance in flight was finished and written, to the console and to the log.
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains(#""isFinal":true"#) }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let end = (o["range"] as? [String: Double])?["end"] ?? 0
        #expect(
            end > 0.5 && end < total - 1, "the result covers the audio heard before the stop (end \(end) of \(total))")
        #expect((o["text"] as? String)?.contains("please") == true)
        #expect(r.stdout.contains("please"))
    }

    // MARK: nodes and docs

    @Test func nodesListsEveryTypeAndDocsAgree() throws {
        let list = try Run.speechgraph(["nodes"])
        #expect(list.status == 0)
        for t in BuiltinNodes.types { #expect(list.stdout.contains(t.descriptor.typeName)) }
        let detail = try Run.speechgraph(["nodes", "recognizer"])
        for p in RecognizerNode.descriptor.parameters { #expect(detail.stdout.contains("  \(p.name): ")) }
        let markdown = try Run.speechgraph(["nodes", "--markdown"])
        let docs = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent("docs/nodes.md"), encoding: .utf8)
        #expect(markdown.stdout == docs, "docs/nodes.md is out of date: run 'make docs'")
        // One type's section, as docs/nodes.md has it (the type was ignored: the whole reference came out).
        let one = try Run.speechgraph(["nodes", "--markdown", "vad"])
        #expect(one.status == 0 && one.stdout.hasPrefix("## `vad` (analysis)"), "\(one.stdout.prefix(200))")
        #expect(docs.contains(one.stdout))
        // A plugin's type, named without its folder: where plugins come from.
        let plugin = try Run.speechgraph(["nodes", "gate"])
        #expect(plugin.status == 2 && plugin.stderr.contains("--plugin-path"), "\(plugin.stderr)")
    }
}

/// One wer.py score: the percentage and the counts behind it.
struct WERScore {
    var percent: Double
    var errors: Int
    var words: Int

    /// Scores `hypotheses` (a key<TAB>text file) against `references` with ../shared/tools/wer.py.
    init(references: String, hypotheses: String, shared: URL) throws {
        let r = try Run.process(
            "/usr/bin/env",
            [
                "python3", shared.appendingPathComponent("tools/wer.py").path,
                references, hypotheses,
            ])
        guard r.status == 0,
            let m = r.stdout.firstMatch(of: /WER ([0-9.]+)% \(S=(\d+) D=(\d+) I=(\d+) N=(\d+)\)/),
            let percent = Double(m.1), let s = Int(m.2), let d = Int(m.3), let i = Int(m.4), let n = Int(m.5)
        else { throw TestSpeech.Failure(description: "wer.py \(hypotheses): \(r.stdout) \(r.stderr)") }
        self.percent = percent
        errors = s + d + i
        words = n
    }

    /// One word's worth of WER, in points.
    var oneWord: Double { 100 / Double(words) }
}

/// `speechgraph transcribe --format jsonl` of the 35 files of ../shared/corpus/real (manifest order), run once for
/// the tests that need it (CorpusTests, and WyomingTests' comparison), in make test once for its test processes
/// (scripts/test.sh runs the two tests in two): 107 s of speech, 38 s of CPU, decoded once, not twice. The output of
/// one process: nothing in it depends on which test asked first.
enum RealSetTranscription {
    static let jsonl = ComputedOnce(sharedAs: "real-set-transcription") {
        try Run.speechgraph(["transcribe", "--format", "jsonl"] + realSet().map(\.file), timeout: 900)
    }
}

/// Accuracy of `speechgraph transcribe` on the 35 real utterances of ../shared/corpus/real, scored by the
/// shared scorer wer.py, against Debian's pocketsphinx_batch on the same files with the same model and search width
/// (`-maxhmmpf` 10000, the WAV header skipped): 63 errors in 239 words, 26.36%, measured on 2026-12-02. That is a
/// measured figure: `make bench` runs the peer beside speechgraph each time (pocketsphinx_batch_real_wer); here its
/// 66 s of CPU went into every `make test` for a number that does not change while Debian's PocketSphinx does not.
@Suite(.tags(.model)) struct CorpusTests {
    /// pocketsphinx_batch's errors on the real set (wer.py), as above.
    static let peerErrors = 63

    @Test(.enabled(if: TestPaths.corpusTestsWanted, "SPEECHGRAPH_NO_CORPUS=1: corpus tests off"))
    func realSpeechWordErrorRate() async throws {
        let shared = try TestPaths.requireShared()
        let corpus = shared.appendingPathComponent("corpus/real")
        let manifest = corpus.appendingPathComponent("manifest.tsv")
        let names = try String(contentsOf: manifest, encoding: .utf8).split(separator: "\n").dropFirst()
            .compactMap { $0.split(separator: "\t").first.map(String.init) }
        #expect(names.count == 35)
        let dir = TemporaryDirectory()
        // One decoding for two checks: JSON Lines (word detail on gives the same text as the tsv format) for the
        // word error rate and for the calibrated confidences.
        let r = try await RealSetTranscription.jsonl.get()
        #expect(r.status == 0, "\(r.stderr)")
        try r.stdout.write(toFile: dir.path("sg.jsonl"), atomically: true, encoding: .utf8)
        let rows = try Reliability.transcripts(r.stdout)
        #expect(rows.count == 35)
        try rows.map { "\($0.file)\t\($0.text)\n" }.joined().write(
            toFile: dir.path("sg.tsv"), atomically: true, encoding: .utf8)
        let sg = try WERScore(references: manifest.path, hypotheses: dir.path("sg.tsv"), shared: shared)
        try Reliability.expectCalibrated(references: manifest.path, jsonl: dir.path("sg.jsonl"))
        print(
            "corpus: speechgraph WER \(sg.percent)% (\(sg.errors) errors), pocketsphinx_batch "
                + "\(Self.peerErrors) errors, \(sg.words) words")
        // No worse than the peer, give or take one word.
        #expect(sg.errors <= Self.peerErrors + 1, "speechgraph \(sg.percent)% (\(sg.errors) errors)")
    }
}

/// `speechgraph transcribe` on the 148 s long-form clean file (the vad node cuts it into utterances), scored by
/// wer.py against the figure of Debian's `pocketsphinx_continuous` on the same file, as issue 4 measured it (239
/// words, one word 0.42 points): 29.3%. A measured figure, so the limit allows one word more than the peer's.
/// speechgraph measured 23.85% (docs/endpointing.md). The noisy copies (long_white15db: 65.69% against 66.9%,
/// long_pink15db: 56.07% against 61.5%) are the same check at about twice the CPU, and the order of the calibrated
/// confidences in white noise (docs/events.md): `make bench` scores them (transcribe_long_white15db_wer,
/// transcribe_long_pink15db_wer, and reliability.py's bins), the tests do not.
@Suite(.tags(.model)) struct LongFormTests {
    @Test(.enabled(if: TestPaths.corpusTestsWanted, "SPEECHGRAPH_NO_CORPUS=1: corpus tests off"))
    func longFormWordErrorRate() async throws {
        let (file, peer) = ("long_clean", 29.3)
        let shared = try TestPaths.requireShared()
        let long = shared.appendingPathComponent("corpus/long")
        // The decoding SubtitleTests reads too, of the graph transcribe builds (one decoding for both).
        let decoded = try await LongCleanDecoding.output.get()
        #expect(decoded.status == 0, "\(decoded.stderr)")
        let dir = TemporaryDirectory()
        let reference = try String(contentsOf: long.appendingPathComponent("\(file).txt"), encoding: .utf8)
        try "\(file)\t\(reference.trimmingCharacters(in: .whitespacesAndNewlines))\n"
            .write(toFile: dir.path("ref.tsv"), atomically: true, encoding: .utf8)
        try Reliability.transcripts(decoded.jsonl).map { "\($0.file)\t\($0.text)\n" }.joined()
            .write(toFile: dir.path("hyp.tsv"), atomically: true, encoding: .utf8)
        let score = try WERScore(references: dir.path("ref.tsv"), hypotheses: dir.path("hyp.tsv"), shared: shared)
        print(
            "\(file): WER \(score.percent)% (\(score.errors) errors in \(score.words) words), "
                + "pocketsphinx_continuous \(peer)%")
        #expect(score.percent <= peer + score.oneWord, "\(file): \(score.percent)% against the peer's \(peer)%")
    }
}
