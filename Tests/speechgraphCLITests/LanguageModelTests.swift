import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// Custom language models end to end: `speechgraph lm build` and the recognizer's `lm` on the chess
/// development set (scripts/make-chess-set.sh: moves and openings from graphs/chess.lmspec, and general
/// sentences, synthesised by flite and espeak-ng), with the real PocketSphinx and its en-us model.
// Not serialized: each test has its own directory and model cache, and the long ones run side by side.
@Suite(.tags(.model)) struct LanguageModelTests {
    let dir = TemporaryDirectory()

    var chessSpec: String { TestPaths.packageRoot.appendingPathComponent("graphs/chess.lmspec").path }

    /// "turn on the lamp", spoken (made once in the test's directory): its path.
    func lampSpeech() throws -> String {
        let wav = dir.path("lamp.wav")
        if !FileManager.default.fileExists(atPath: wav) { try TestSpeech.synthesize("turn on the lamp", to: wav) }
        return wav
    }

    /// A spec of these lines, written as `name` in the test's directory: its path.
    func writeSpec(_ name: String, _ lines: String) throws -> String {
        let path = dir.path(name)
        try lines.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    @Test("lm build writes ARPA, PocketSphinx's binary form, a dictionary with the custom pronunciations")
    func build() throws {
        let out = dir.path("chess-lm")
        let run = try Run.speechgraph(["lm", "build", chessSpec, "-o", out])
        #expect(run.status == 0, "\(run.stderr)")
        for file in ["lm.arpa", "lm.bin", "words.dict", "spec.lmspec"] {
            #expect(FileManager.default.fileExists(atPath: "\(out)/\(file)"), "\(file)")
        }
        let dict = try String(contentsOfFile: "\(out)/words.dict", encoding: .utf8)
        #expect(dict.contains("winawer W IH N AW ER\n"))
        #expect(dict.contains("tartakower T AA R T AH K AW ER\n"))
        #expect(dict.contains("knight N AY T\n"))
        // "ruy" is in no dictionary: pronounced by espeak-ng, with a warning at its phrase.
        #expect(dict.contains("\nruy "))
        #expect(run.stderr.contains("chess.lmspec:18:8: warning: 'ruy' is in no dictionary"), "\(run.stderr)")
        #expect(run.stderr.contains("33 words"), "\(run.stderr)")
        let arpa = try String(contentsOfFile: "\(out)/lm.arpa", encoding: .utf8)
        #expect(arpa.hasPrefix("\\data\\\nngram 1=36\n"))  // 33 words, <s>, </s>, <UNK>

        // --corpus into a symbolic link writes the file it names (the link stays), into a pipe writes into it: a
        // special file is never replaced by a regular one (as root, '--corpus /dev/full' once replaced the device).
        let target = dir.path("corpus-target.txt")
        try "old".write(toFile: target, atomically: true, encoding: .utf8)
        let link = dir.path("corpus-link.txt")
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let fifo = dir.path("corpus.fifo")
        #expect(mkfifo(fifo, 0o600) == 0)
        let reader = Process()
        reader.executableURL = URL(fileURLWithPath: "/bin/cat")
        reader.arguments = [fifo]
        let copy = dir.path("corpus-read.txt")
        FileManager.default.createFile(atPath: copy, contents: nil)
        reader.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))  // not a pipe: 345 kB
        try reader.run()
        for (corpus, name) in [(link, "link"), (fifo, "fifo")] {
            let r = try Run.speechgraph(["lm", "build", chessSpec, "-o", dir.path("chess-\(name)"), "--corpus", corpus])
            #expect(r.status == 0, "\(r.stderr)")
        }
        Run.wait(for: reader, seconds: 60) { false }  // a FIFO replaced by a file would leave cat waiting
        if reader.isRunning { kill(reader.processIdentifier, SIGKILL) }
        reader.waitUntilExit()
        let piped = try String(contentsOfFile: copy, encoding: .utf8)
        #expect(piped.hasPrefix("<s> ") && piped.contains(" </s>\n"), "\(piped.prefix(200))")
        #expect((try? FileManager.default.destinationOfSymbolicLink(atPath: link)) == target)
        #expect(try String(contentsOfFile: target, encoding: .utf8) == piped)
        var info = stat()
        #expect(stat(fifo, &info) == 0 && info.st_mode & S_IFMT == S_IFIFO)
        // --corpus /dev/stdout with standard output appended to a file: appended to, not replaced.
        let log = dir.path("appended.txt")
        try "before\n".write(toFile: log, atomically: true, encoding: .utf8)
        let shell = try Run.process(
            "/bin/sh",
            [
                "-c", "\"$0\" lm build \"$1\" -o \"$2\" --corpus /dev/stdout >> \"$3\" 2>/dev/null",
                TestPaths.binary.path, chessSpec, dir.path("chess-stdout"), log,
            ])
        #expect(shell.status == 0)
        let appended = try String(contentsOfFile: log, encoding: .utf8)
        #expect(appended.hasPrefix("before\n<s> ") && appended.hasSuffix(" </s>\n"), "\(appended.prefix(100))")

        // A spec error: located, exit 2, nothing written.
        let bad = try writeSpec("bad.lmspec", "template \"<piece> to <rank>\"\nclass rank = 1 to 8\n")
        let failed = try Run.speechgraph(["lm", "build", bad, "-o", dir.path("bad-lm")])
        #expect(failed.status == 2)
        #expect(failed.stderr.contains("bad.lmspec:1:11: error: template uses class '<piece>', which is not defined"))
        // Then the count, as check and transcribe --lm end the same errors.
        #expect(failed.stderr.hasSuffix("1 error in \(bad)\n"), "\(failed.stderr)")
        #expect(!FileManager.default.fileExists(atPath: dir.path("bad-lm")))

        // A spec that is not there, and an output in the way: one message each, in words, with the path.
        let missing = try Run.speechgraph(["lm", "build", dir.path("nosuch.lmspec"), "-o", dir.path("x")])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("nosuch.lmspec: no such file"), "\(missing.stderr)")
        let file = dir.path("a-file")
        try "".write(toFile: file, atomically: true, encoding: .utf8)
        let inTheWay = try Run.speechgraph(["lm", "build", chessSpec, "-o", file])
        #expect(inTheWay.status == 1)
        #expect(
            inTheWay.stderr
                == "speechgraph: error: cannot write the model into \(file): it is a file, not a directory\n",
            "\(inTheWay.stderr)")
        // A folder that cannot be made: the system's reason, not Foundation's "could not be completed".
        let under = try Run.speechgraph(["lm", "build", chessSpec, "-o", file + "/model"])
        #expect(under.status == 1)
        #expect(
            under.stderr == "speechgraph: error: cannot make the directory \(file)/model: Not a directory\n",
            "\(under.stderr)")
    }

    @Test("A spec built on first use says which pronunciations it guessed, once, without failing the run")
    func guessedPronunciationsOnFirstUse() throws {
        let spec = try writeSpec("home.lmspec", "phrase \"toggle the zigbee lamp\"\nphrase \"turn on the lamp\"\n")
        let wav = try lampSpeech()
        let cache = ["XDG_CACHE_HOME": dir.path("guess-cache")]
        let first = try Run.speechgraph(["transcribe", "--lm", spec, wav], environment: cache)
        #expect(first.status == 0, "\(first.stderr)")
        #expect(
            first.stderr.contains(
                "home.lmspec:1:8: warning: 'zigbee' is in no dictionary; pronounced Z IH G B IY (from espeak-ng)"),
            "\(first.stderr)")
        #expect(!first.stderr.contains("speechgraph: warning"), "\(first.stderr)")
        // Built: the next run says nothing about it.
        let again = try Run.speechgraph(["transcribe", "--lm", spec, wav], environment: cache)
        #expect(again.status == 0)
        #expect(!again.stderr.contains("zigbee"), "\(again.stderr)")
        #expect(again.stdout == first.stdout)
        // A word only a class's values have: located at the class, with the spec's advice.
        let classes = try writeSpec(
            "classes.lmspec",
            "phrase \"turn on the lamp\"\nclass device = lamp, zigbee\ntemplate \"pair the <device>\"\n")
        let built = try Run.speechgraph(["lm", "build", classes, "-o", dir.path("classes-lm")], environment: cache)
        #expect(built.status == 0, "\(built.stderr)")
        #expect(
            built.stderr.contains(
                "classes.lmspec:2:1: warning: 'zigbee' is in no dictionary; pronounced Z IH G B IY (from espeak-ng): "
                    + "add 'pronounce \"zigbee\" { cmu: \"...\" }' to the spec"), "\(built.stderr)")
    }

    @Test("A spec built into a full cache: the cache keeps its most recently used models and drops the rest")
    func buildPrunesTheCache() throws {
        let spec = try writeSpec("lamp.lmspec", "phrase \"turn on the lamp\"\nphrase \"turn off the lamp\"\n")
        let wav = try lampSpeech()
        let cache = dir.path("full-cache")
        let models = cache + "/speechgraph/lm"
        let fm = FileManager.default
        // Models other specs left, unused for two hours or more, and a build a dead process left half done.
        let old = (0..<(SpecCache.keep + 6)).map { String(0xa000 + $0, radix: 16) } + ["b000.99999.1"]
        for (i, name) in old.enumerated() {
            try fm.createDirectory(atPath: "\(models)/\(name)", withIntermediateDirectories: true)
            try fm.setAttributes(
                [.modificationDate: Date().addingTimeInterval(-7200 - Double(i) * 60)],
                ofItemAtPath: "\(models)/\(name)")
        }
        let run = try Run.speechgraph(["transcribe", "--lm", spec, wav], environment: ["XDG_CACHE_HOME": cache])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stdout.contains("turn on the lamp"), "\(run.stdout)")
        let left = Set(try fm.contentsOfDirectory(atPath: models))
        // The new model and the most recently used of the old ones.
        #expect(left.count == SpecCache.keep, "\(left.sorted())")
        #expect(left.isSuperset(of: old.prefix(SpecCache.keep - 1)))
        let built = try #require(left.subtracting(old).first)
        #expect(fm.fileExists(atPath: "\(models)/\(built)/lm.bin"))
        // Used again: found, not built again, and marked used.
        let before = try #require(fm.attributesOfItem(atPath: "\(models)/\(built)")[.modificationDate] as? Date)
        try fm.setAttributes([.modificationDate: before.addingTimeInterval(-600)], ofItemAtPath: "\(models)/\(built)")
        let again = try Run.speechgraph(["transcribe", "--lm", spec, wav], environment: ["XDG_CACHE_HOME": cache])
        #expect(again.stdout == run.stdout)
        let after = try #require(fm.attributesOfItem(atPath: "\(models)/\(built)")[.modificationDate] as? Date)
        #expect(after > before.addingTimeInterval(-300))
    }

    @Test("New words are pronounced by one espeak-ng run, each as espeak-ng pronounces it alone")
    func guessesInOneRunMatchGuessesAlone() throws {
        // Words a spec might bring: names, a number, an apostrophe, a foreign word, a lone letter.
        let words = ["zigbee", "winawer", "tartakower", "42", "o'neill", "llanfair", "x", "hue", "sonos"]
        let together = try Lexicon.guess(words)
        #expect(together.count == words.count)
        for word in words {
            #expect(together[word] == (try Lexicon.guess(word)), "\(word)")
        }
    }

    @Test("A model file without a words.dict beside it names the words the dictionary lacks, and its case")
    func modelFileWithoutItsWords() throws {
        /// A unigram model of these words, as another toolkit might write it.
        func arpa(_ words: [String], in folder: String) throws -> String {
            try FileManager.default.createDirectory(atPath: dir.path(folder), withIntermediateDirectories: true)
            let path = dir.path(folder + "/lm.arpa")
            let unigrams = ["-0.7 </s>", "-99 <s> 0"] + words.map { "-0.7 \($0) 0" }
            try (["\\data\\", "ngram 1=\(words.count + 2)", "", "\\1-grams:"] + unigrams + ["", "\\end\\", ""])
                .joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
            return path
        }
        let wav = try lampSpeech()
        let words = ["toggle", "turn", "on", "the", "zigbee", "lamp"]

        // With a words.dict beside it that pronounces them all: nothing to say.
        let whole = try arpa(words, in: "whole")
        let general = try String(
            contentsOfFile: "/usr/share/pocketsphinx/model/en-us/cmudict-en-us.dict", encoding: .utf8
        )
        .split(separator: "\n").filter { words.contains(String($0.prefix { $0 != " " })) }
        let pronunciations = (general + ["zigbee Z IH G B IY"]).joined(separator: "\n") + "\n"
        try pronunciations.write(toFile: dir.path("whole/words.dict"), atomically: true, encoding: .utf8)
        let withWords = try Run.speechgraph(["transcribe", "--lm", whole, wav])
        #expect(withWords.status == 0, "\(withWords.stderr)")
        #expect(!withWords.stderr.contains("warning"), "\(withWords.stderr)")
        // Without it: 'zigbee' has no pronunciation, and the run says so (and goes on).
        let alone = try arpa(words, in: "alone")
        let without = try Run.speechgraph(["transcribe", "--lm", alone, wav], environment: environment)
        #expect(without.status == 0, "\(without.stderr)")
        // The decoder read the general dictionary's entries for the model's words alone, from the cache: with the
        // whole dictionary, PocketSphinx took 15 s to load a model of 6 words (every dictionary word mapped onto it).
        let cached = try FileManager.default.contentsOfDirectory(atPath: dir.path("cache/speechgraph/lm"))
        let subsets = try cached.compactMap { name -> String? in
            let file = dir.path("cache/speechgraph/lm/\(name)/words.dict")
            guard FileManager.default.fileExists(atPath: file) else { return nil }
            return try String(contentsOfFile: file, encoding: .utf8)
        }
        try #require(subsets.count == 1, "\(cached)")
        let entries = Set(subsets[0].split(separator: "\n").map { String($0.prefix { $0 != " " && $0 != "(" }) })
        #expect(entries == Set(words.filter { $0 != "zigbee" }), "\(subsets[0])")
        #expect(
            without.stderr.contains("\(alone): warning: 1 of the model's 6 words are not in /usr/share/"),
            "\(without.stderr)")
        #expect(
            without.stderr.contains("and cannot be recognized: 'zigbee'; there is no words.dict"), "\(without.stderr)")
        #expect(without.stdout == withWords.stdout)
        // Said once for a run of many files, not once a file.
        let twice = try Run.speechgraph(["transcribe", "--lm", alone, wav, wav])
        #expect(twice.stderr.components(separatedBy: "warning:").count == 2, "\(twice.stderr)")

        // In upper case (as some toolkits write them): the dictionary has the words in lower case.
        let upper = try arpa(words.map { $0.uppercased() }, in: "upper")
        let shouted = try Run.speechgraph(["transcribe", "--lm", upper, wav])
        #expect(
            shouted.stderr.contains("6 of the model's 6 words are not in /usr/share/"), "\(shouted.stderr)")
        #expect(!shouted.stderr.contains("(which have them in lower case"), "\(shouted.stderr)")  // not ZIGBEE
        let known = try arpa(words.filter { $0 != "zigbee" }.map { $0.uppercased() }, in: "known")
        let lower = try Run.speechgraph(["transcribe", "--lm", known, wav])
        #expect(
            lower.stderr.contains("(which have them in lower case: their case counts)"), "\(lower.stderr)")
    }

    /// Specs named as `lm` are built into this cache, not the user's.
    var environment: [String: String] { ["XDG_CACHE_HOME": dir.path("cache")] }

    /// `transcribe --format tsv` of these files: file -> transcript.
    func transcribe(_ files: [String], _ options: [String]) throws -> [String: String] {
        let run = try Run.speechgraph(["transcribe", "--format", "tsv"] + options + files, environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        var out: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") {
            let f = line.split(separator: "\t", maxSplits: 1, omittingEmptySubsequences: false)
            out[String(f[0])] = f.count > 1 ? String(f[1]) : ""
        }
        return out
    }

    func wer(_ set: [(file: String, text: String)], _ hyps: [String: String]) -> Double {
        var errors = 0.0
        var words = 0.0
        for (file, text) in set {
            let n = Double(text.split(separator: " ").count)
            errors += wordErrorRate(reference: text, hypothesis: hyps[file] ?? "") * n
            words += n
        }
        return errors / words
    }

    @Test("Chess: WER at most 5% with chess.lmspec (weight 0.4); general sentences lose at most 2 points")
    func chessDevelopmentSet() throws {
        let (chess, general) = try developmentSet()
        #expect(chess.count >= 40 && general.count >= 20)
        // Every fourth move, the 9 openings and 8 general sentences: make bench (scripts/bench-lm.sh) decodes the
        // whole set. (Synthesised speech decoded by one model: the same figures every run, wherever it runs.)
        let openings = chess.filter { $0.text.hasPrefix("play the") }
        #expect(openings.count == 9)
        let moves = chess.filter { !$0.text.hasPrefix("play the") }
        let tested = stride(from: 0, to: moves.count, by: 4).map { moves[$0] } + openings
        let fewer = Array(general.prefix(8))
        // The general model alone on those general sentences and the first 5 moves (it is not the one tested).
        let some = Array(chess.prefix(5))
        let plain = try transcribe(some.map(\.file) + fewer.map(\.file), [])
        let mixed = try transcribe(
            tested.map(\.file) + fewer.map(\.file), ["--lm", chessSpec, "--lm-weight", "0.4"])
        let chessPlain = wer(some, plain)
        let chessMixed = wer(tested, mixed)
        let generalPlain = wer(fewer, plain)
        let generalMixed = wer(fewer, mixed)
        print(
            "chess: general model \(chessPlain), with chess.lmspec \(chessMixed); "
                + "general sentences \(generalPlain) -> \(generalMixed)"
        )
        #expect(chessPlain > 0.4, "the general model alone should not know chess: \(chessPlain)")
        #expect(chessMixed <= 0.05, "chess with chess.lmspec: \(chessMixed)")
        #expect(generalMixed <= generalPlain + 0.02, "general sentences: \(generalPlain) -> \(generalMixed)")

        // Contextual strings: the 9 openings as phrases, nothing built by hand; the first 6 general sentences as
        // before.
        let six = Array(fewer.prefix(6))
        let phrased = try transcribe(
            openings.map(\.file) + six.map(\.file), openings.flatMap { ["--phrases", $0.text] })
        print("phrases: openings \(wer(openings, phrased)), general \(wer(six, phrased))")
        #expect(wer(openings, phrased) <= 0.05)
        #expect(wer(six, phrased) <= wer(six, plain) + 0.01)

    }

    /// scripts/make-chess-set.sh into this test's directory: the chess moves and openings, the general sentences.
    func developmentSet() throws -> (chess: [(file: String, text: String)], general: [(file: String, text: String)]) {
        let sets = dir.path("lm-dev")
        _ = try Run.process(
            "/bin/bash", [TestPaths.packageRoot.appendingPathComponent("scripts/make-chess-set.sh").path, sets])
        func read(_ name: String) throws -> [(file: String, text: String)] {
            try String(contentsOfFile: "\(sets)/\(name).tsv", encoding: .utf8).split(separator: "\n").map {
                let f = $0.split(separator: "\t")
                return (String(f[0]), String(f[1]))
            }
        }
        return (try read("chess"), try read("general"))
    }

    /// Speech that no sentence of a plain grammar fits: PocketSphinx's grammar search reaches no end, and the
    /// reading is empty with no score, which beat the general model's every time: accepted, empty. Rejected now.
    @Test func speechNoSentenceOfTheGrammarFitsIsRejected() throws {
        let grammar = dir.path("lights.jsgf")
        try "#JSGF V1.0;\ngrammar c;\npublic <cmd> = (turn on | turn off) the (lights | radio);\n".write(
            toFile: grammar, atomically: true, encoding: .utf8)
        // espeak-ng's voice: no sentence of the grammar fits it at all (flite's gets a forced reading).
        let outside = dir.path("garden.wav")
        let spoken = try Run.process(
            "/usr/bin/espeak-ng", ["-w", outside, "what a lovely day it is today in the garden"], timeout: 60)
        try #require(spoken.status == 0, "\(spoken.stderr)")
        let inside = dir.path("lights.wav")
        try TestSpeech.synthesize("turn on the lights", to: inside)
        let r = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--grammar", grammar, outside, inside], environment: environment)
        #expect(r.status == 0, "\(r.stderr)")
        let results = r.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        try #require(results.count == 2, "\(r.stdout)")
        try #require(results[0]["text"] as? String == "", "the search reached no sentence: \(results[0])")
        #expect(results[0]["rejected"] as? Bool == true, "\(results[0])")
        #expect(results[1]["rejected"] == nil && results[1]["text"] as? String == "turn on the lights", "\(results[1])")
    }

    @Test("Rejection: with chess.lmspec alone and with the chess grammar, general sentences rejected, moves accepted")
    func rejection() throws {
        let (chess, general) = try developmentSet()
        let some = Array(chess.prefix(4))
        let fewer = Array(general.prefix(6))
        // The domain model alone (weight 1): general sentences are rejected, moves accepted (the first 4, 6).
        let run = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--lm", chessSpec] + some.map(\.file) + fewer.map(\.file),
            environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        var rejected: [String: Bool] = [:]
        for line in run.stdout.split(separator: "\n") where line.contains("\"isFinal\":true") {
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            rejected[json["source"] as! String] = (json["rejected"] as? Bool) ?? false
        }
        let chessAccepted = Double(some.filter { rejected[$0.file] == false }.count) / Double(some.count)
        let generalRejected = Double(fewer.filter { rejected[$0.file] == true }.count) / Double(fewer.count)
        print("domain only: \(chessAccepted) of the moves accepted, \(generalRejected) of general sentences rejected")
        #expect(chessAccepted >= 0.95)
        #expect(generalRejected >= 0.9)

        // The chess grammar (the spec's phrases and templates as JSGF): the same.
        let grammar = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--grammar", chessSpec] + some.map(\.file) + fewer.map(\.file),
            environment: environment)
        #expect(grammar.status == 0, "\(grammar.stderr)")
        var results: [String: (text: String, rejected: Bool)] = [:]
        for line in grammar.stdout.split(separator: "\n") where line.contains("\"isFinal\":true") {
            let json = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
            results[json["source"] as! String] = (json["text"] as! String, (json["rejected"] as? Bool) ?? false)
        }
        let movesAccepted = Double(some.filter { results[$0.file]?.rejected == false }.count) / Double(some.count)
        let sentencesRejected =
            Double(fewer.filter { results[$0.file]?.rejected == true }.count) / Double(fewer.count)
        let grammarWER = wer(some, results.mapValues(\.text))
        print("chess grammar: \(movesAccepted) accepted, \(sentencesRejected) rejected, moves WER \(grammarWER)")
        #expect(movesAccepted >= 0.95)
        #expect(sentencesRejected >= 0.9)

        // The console says so after the text: a user reading it must not act on a rejected command.
        let said = try #require(fewer.first { results[$0.file]?.rejected == true })
        let move = try #require(some.first { results[$0.file]?.rejected == false })
        for (file, marked) in [(said.file, true), (move.file, false)] {
            let graph = dir.path("console-\(marked).graph")
            try """
            node src = file.input { path: "\(file)" }
            node asr = recognizer { mode: utterance, grammar: "\(chessSpec)" }
            node out = console { timestamps: false }
            src -> asr -> out
            """.write(toFile: graph, atomically: true, encoding: .utf8)
            let shown = try Run.speechgraph(["run", graph], environment: environment)
            #expect(shown.status == 0, "\(shown.stderr)")
            #expect(
                shown.stdout.contains("(rejected: outside the grammar or domain model)") == marked, "\(shown.stdout)")
        }
    }

    @Test("phrases as a list in a graph file: the phrase the general model gets wrong comes out right")
    func phrasesInAGraphFile() throws {
        let wav = dir.path("phrase.wav")
        try TestSpeech.synthesize("knight to king bishop three", to: wav)
        let graph = dir.path("phrases.graph")
        try """
        node src = file.input { path: "\(wav)" }
        node asr = recognizer { mode: utterance, phrases: [
            "knight to king bishop three",
            "open the door",
        ] }
        node out = jsonl { path: "\(dir.path("phrases.jsonl"))" }
        src -> asr -> out
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(["run", graph], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let finals = Run.lines(of: dir.path("phrases.jsonl")).filter { $0.contains("\"isFinal\":true") }
        #expect(finals.count == 1 && finals[0].contains("\"text\":\"knight to king bishop three\""), "\(finals)")
    }

    /// The files of ../shared/corpus/real whose names begin with `prefix`, with their reference texts.
    func realSet(_ prefix: String) throws -> [(file: String, text: String)] {
        let shared = try TestPaths.requireShared()
        let manifest = try String(
            contentsOf: shared.appendingPathComponent("corpus/real/manifest.tsv"), encoding: .utf8)
        return manifest.split(separator: "\n").filter { $0.hasPrefix(prefix) }.map { line in
            let f = line.split(separator: "\t")
            return (file: shared.appendingPathComponent("corpus/real/\(f[0])").path, text: String(f[1]))
        }
    }

    @Test("Real speech: the 22 AN4 files of ../shared/corpus/real with graphs/an4.lmspec, at most 12% WER")
    func an4() throws {
        let set = try realSet("an4_")
        #expect(set.count == 22)
        let spec = TestPaths.packageRoot.appendingPathComponent("graphs/an4.lmspec").path
        let hyps = try transcribe(set.map(\.file), ["--lm", spec])
        let rate = wer(set, hyps)
        print("an4 with an4.lmspec: \(rate)")
        #expect(rate <= 0.12)
    }

    @Test("Real speech: the 5 playing-card files of ../shared/corpus/real with graphs/cards.jsgf, none rejected")
    func cards() throws {
        let set = try realSet("ps_cards_")
        try #require(set.count == 5)
        let grammar = TestPaths.packageRoot.appendingPathComponent("graphs/cards.jsgf").path
        let run = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--grammar", grammar] + set.map(\.file), environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        var hyps: [String: String] = [:]
        for line in run.stdout.split(separator: "\n") where line.contains("\"isFinal\":true") {
            let event = try #require(
                try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
            let source = try #require(event["source"] as? String)
            #expect(event["rejected"] == nil, "\(line)")
            hyps[source] = event["text"] as? String
        }
        let rate = wer(set, hyps)
        print("cards with cards.jsgf: \(rate)")
        #expect(rate <= 1.0 / 21, "\(hyps)")  // 21 words: at most one wrong
    }

    @Test("Speech outside a grammar: rejected in JSON Lines, and marked so in a text sink's lines")
    func rejectedMarkedInPlainText() throws {
        let command = dir.path("command.wav")
        let other = dir.path("other.wav")
        try TestSpeech.synthesize("lights on", to: command)
        try TestSpeech.synthesize("the weather today is cold and windy", to: other)
        let grammar = dir.path("commands.jsgf")
        try """
        #JSGF V1.0;
        grammar commands;
        public <command> = lights on | lights off | next slide;
        """.write(toFile: grammar, atomically: true, encoding: .utf8)
        let jsonl = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--grammar", grammar, command, other], environment: environment)
        let finals = jsonl.stdout.split(separator: "\n").filter { $0.contains(#""isFinal":true"#) }
        try #require(finals.count == 2, "\(jsonl.stdout) \(jsonl.stderr)")
        #expect(!finals[0].contains(#""rejected":true"#) && finals[0].contains(#""text":"lights on""#))
        try #require(finals[1].contains(#""rejected":true"#), "\(finals[1])")
        // The text sink, as a script reading commands line by line uses it.
        let both = dir.path("both.wav")
        try TestSpeech.sox([command, other, both, "pad", "0.5", "1.5"])
        let graph = dir.path("text.graph")
        try """
        node src = file.input { path: "\(both)" }
        node vad = vad
        node asr = recognizer { mode: utterance, grammar: "\(grammar)" }
        node lines = text
        src -> vad
        vad.out -> asr.in
        vad.events -> asr.control
        asr -> lines
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(["run", graph], environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let lines = run.stdout.split(separator: "\n")
        #expect(lines.count == 2 && lines[0] == "lights on", "\(run.stdout)")
        #expect(lines.last?.hasSuffix(" (rejected: outside the grammar or domain model)") == true, "\(run.stdout)")
    }

    @Test("A grammar's optional words left out are no words: no \"(NULL)\" among a result's words or alternatives")
    func grammarNullTransitions() throws {
        let shared = try TestPaths.requireShared()
        let file = shared.appendingPathComponent("corpus/real/ps_cards_001.wav").path
        // Optional words and alternatives: PocketSphinx's grammar search passes empty transitions as segments.
        let grammar = dir.path("optional.jsgf")
        try """
        #JSGF V1.0;
        grammar optional;
        public <u> = [pick | play] [the | a] <rank> [of] <suit> [please];
        <rank> = ace | two | three | four | five | six | seven | eight | nine | ten | jack | queen | king;
        <suit> = clubs | diamonds | hearts | spades;
        """.write(toFile: grammar, atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(
            ["transcribe", "--format", "jsonl", "--alternatives", "3", "--grammar", grammar, file],
            environment: environment)
        #expect(run.status == 0, "\(run.stderr)")
        let line = try #require(run.stdout.split(separator: "\n").first { $0.contains("\"isFinal\":true") })
        let event = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        let words = try #require(event["words"] as? [[String: Any]]).compactMap { $0["text"] as? String }
        #expect(!words.isEmpty)
        #expect(!line.contains("(NULL)"), "\(line)")
        #expect(words.joined(separator: " ") == event["text"] as? String, "\(line)")
    }

    /// The samples of a synthesised sentence, and a second of silence to put around them.
    func speechSamples(_ sentence: String, name: String) throws -> (speech: [Float], silence: [Float]) {
        let wav = dir.path("\(name).wav")
        try TestSpeech.synthesize(sentence, to: wav)
        return (try AudioFile(path: wav).readAll(), [Float](repeating: 0, count: 16000))
    }

    /// A started live graph as graphs/live.graph: pushed audio, the vad, a streaming recognizer with a final pass
    /// (and `parameters`), and its recognizer's events.
    final class LiveGraph {
        let graph: SpeechGraph
        let mic: AudioInput
        private var events: AsyncStream<GraphEvent>.Iterator

        init(_ parameters: [String: String] = [:]) throws {
            var builder = GraphBuilder()
            builder.node("mic", "push.input", ["rate": "16 kHz"])
            builder.node("vad", "vad")
            builder.node("asr", "recognizer", ["mode": "streaming", "final-pass": "true"].merging(parameters) { $1 })
            builder.connect("mic", "vad")
            builder.connect("vad.out", "asr.in")
            builder.connect("vad.events", "asr.control")
            graph = try SpeechGraph(builder)
            mic = try graph.input("mic")
            try graph.start()
            events = graph.events(of: "asr").makeAsyncIterator()
        }

        /// The next final result's text, and the modelChanged events before it.
        func nextFinal() async -> (text: String, changed: [CustomEvent]) {
            var changed: [CustomEvent] = []
            while let event = await events.next() {
                if case .custom(let e) = event, e.kind == "modelChanged" { changed.append(e) }
                if case .result(let t) = event, t.isFinal { return (t.text, changed) }
            }
            return ("<end>", changed)
        }
    }

    @Test("Runtime vocabulary: a live pushed stream gets the chess model between two utterances, losing nothing")
    func vocabularyChangesMidStream() async throws {
        let move = "knight to king bishop three"
        let (speech, silence) = try speechSamples(move, name: "move")

        let chessModel = dir.path("chess-model")
        let built = try Run.speechgraph(["lm", "build", chessSpec, "-o", chessModel])
        #expect(built.status == 0, "\(built.stderr)")
        let live = try LiveGraph()
        let (graph, mic) = (live.graph, live.mic)
        func nextFinal() async -> (text: String, changed: [CustomEvent]) { await live.nextFinal() }
        mic.push(silence + speech + silence)
        let before = await nextFinal()
        // The chess model, while the stream goes on: loaded now, in use from the next utterance.
        try await graph.setLanguageModel(chessModel, weight: 1)
        mic.push(silence + speech + silence)
        let after = await nextFinal()
        // A weight out of range is refused as in a graph file: the call throws, the next utterance says so, the
        // chess model stays.
        await #expect(throws: SpeechGraph.Error.self) { try await graph.setLanguageModel(chessModel, weight: 0) }
        // A node that is not a recognizer, or none: refused before anything is reloaded.
        do {
            try await graph.setLanguageModel(chessModel, node: "mic")
            Issue.record("setLanguageModel on a push.input did not throw")
        } catch {
            #expect("\(error)" == "node 'mic' is a push.input, not a recognizer")
        }
        await #expect(throws: SpeechGraph.Error.self) { try await graph.setLanguageModel(chessModel, node: "nobody") }
        mic.push(silence + speech + silence)
        let refused = await nextFinal()
        // The refused weight is not asked for again: a reload of the files works.
        try await graph.reloadModels()
        graph.stop()
        let failure = try #require(refused.changed.first)
        #expect(failure.fields["ok"] == .boolean(false))
        #expect("\(failure.fields["reason"] ?? .string(""))".contains("out of range for 'weight'"), "\(failure.fields)")
        #expect(refused.text == move)
        print("general model: '\(before.text)'; after the change: '\(after.text)', \(after.changed)")
        #expect(before.changed.isEmpty)
        #expect(wordErrorRate(reference: move, hypothesis: before.text) > 0.2)
        #expect(after.text == move)
        let changed = try #require(after.changed.first)
        #expect(changed.fields["ok"] == .boolean(true))
        // The chess model's streaming and final-pass decoders are new; the general model, which now decodes each
        // utterance beside it (for rejection), is the final pass's decoder the graph already had.
        #expect(changed.fields["loadedDecoders"] == .integer(2), "\(changed.fields)")
        #expect(changed.fields["keptDecoders"] == .integer(1), "\(changed.fields)")
        // How long the switch took is a speed, not a correctness: said here, not bounded (the machine may be loaded).
        if case .number(let ms)? = changed.fields["switchMilliseconds"] {
            #expect(ms >= 0 && ms.isFinite)
            print("models switched in \(ms) ms")
        } else {
            Issue.record("no switch time")
        }
    }

    @Test("A reload keeps the decoders whose model files did not change, and loads again those whose files did")
    func reloadKeepsCurrentDecoders() async throws {
        let sentence = "the quick brown fox jumps over the lazy dog"
        let (speech, silence) = try speechSamples(sentence, name: "sentence")
        // The recognizer's dictionary is a file of the test's own, to write again.
        let general = try SphinxModel.resolve(
            model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
        let dict = dir.path("words.dict")
        try FileManager.default.copyItem(atPath: general.dict, toPath: dict)
        let live = try LiveGraph(["dict": "\"\(dict)\""])
        let (graph, mic) = (live.graph, live.mic)
        func nextFinal() async -> (text: String, changed: [CustomEvent]) { await live.nextFinal() }
        mic.push(silence + speech + silence)
        let first = await nextFinal()
        // Nothing changed: both decoders kept, none loaded.
        try await graph.reloadModels()
        mic.push(silence + speech + silence)
        let unchanged = await nextFinal()
        // The dictionary written again: both decoders read it, so both are loaded anew.
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(60)], ofItemAtPath: dict)
        try await graph.reloadModels()
        mic.push(silence + speech + silence)
        let rewritten = await nextFinal()
        graph.stop()
        let kept = try #require(unchanged.changed.first)
        #expect(kept.fields["ok"] == .boolean(true), "\(kept.fields)")
        #expect(kept.fields["keptDecoders"] == .integer(2), "\(kept.fields)")
        #expect(kept.fields["loadedDecoders"] == .integer(0), "\(kept.fields)")
        let loaded = try #require(rewritten.changed.first)
        #expect(loaded.fields["keptDecoders"] == .integer(0), "\(loaded.fields)")
        #expect(loaded.fields["loadedDecoders"] == .integer(2), "\(loaded.fields)")
        // The same text each time: the kept decoders decode as before, the new ones as the old.
        #expect(unchanged.text == first.text && rewritten.text == first.text, "\(first) \(unchanged) \(rewritten)")
        #expect(wordErrorRate(reference: sentence, hypothesis: first.text) <= 0.25, "\(first.text)")
    }

    @Test("The Swift builder (SFCustomLanguageModelData) writes the spec graphs/chess.lmspec holds")
    func swiftBuilder() async throws {
        typealias Data = SFCustomLanguageModelData
        let data = Data(locale: Locale(identifier: "en_US"), identifier: "com.example.chess", version: "1.0") {
            for opening in [
                "Albin counter gambit", "Caro-Kann defense", "Sicilian defense", "French defense", "Queen's gambit",
                "King's Indian defense", "Ruy Lopez", "Winawer variation", "Tartakower",
            ] {
                Data.PhraseCount(phrase: "Play the \(opening)", count: 10)
            }
            Data.PhraseCountsFromTemplates(classes: [
                "piece": ["pawn", "rook", "knight", "bishop", "queen", "king"],
                "royal": ["queen", "king"],
                "rank": Array(1...8).map({ String($0) }),
            ]) {
                Data.TemplatePhraseCountGenerator.Template("<piece> to <royal> <piece> <rank>", count: 10_000)
            }
            Data.CustomPronunciation(grapheme: "Winawer", phonemes: ["w I n aU @r"])
            Data.CustomPronunciation(grapheme: "Tartakower", phonemes: ["t A r t @ k aU @r"])
        }
        let url = dir.url.appendingPathComponent("chess.lmspec")
        try await data.export(to: url)
        let written = try LMSpec(contentsOf: url.path)
        let shipped = try LMSpec(contentsOf: chessSpec)
        #expect(LMCorpus(written) == LMCorpus(shipped))
        #expect(written.pronunciations.map(\.phones) == shipped.pronunciations.map(\.phones))
        // A bad X-SAMPA symbol is an error that names it.
        let bad = Data(locale: Locale(identifier: "en_US"), identifier: "x", version: "1") {
            Data.PhraseCount(phrase: "hello", count: 1)
            Data.CustomPronunciation(grapheme: "hello", phonemes: ["h @ ~ l oU"])
        }
        await #expect { try await bad.export(to: url) } throws: { "\($0)".contains("unknown X-SAMPA symbol '~'") }
    }
}
