import Foundation
import SpeechGraphCore

/// Pronunciations for a model's words: the general dictionary's (CMUdict), a spec's custom ones, and for
/// words in neither a guess from espeak-ng's phonemes.
public struct Lexicon: Sendable {
    /// Each word's pronunciations, in order (the first is the main one).
    public private(set) var entries: [String: [[String]]] = [:]

    public init() {}

    /// The entries of a PocketSphinx dictionary (`word PH PH`, alternates as `word(2) PH PH`): for the given
    /// words only, or every entry when `words` is nil.
    public init(dictionary path: String, words: Set<String>? = nil) throws {
        guard let data = FileManager.default.contents(atPath: path), let text = String(data: data, encoding: .utf8)
        else { throw LMBuildError("cannot read the dictionary \(path)") }
        for line in text.split(separator: "\n") {
            guard let space = line.firstIndex(where: { $0 == " " || $0 == "\t" }) else { continue }
            var word = line[..<space]
            if word.hasSuffix(")"), let open = word.lastIndex(of: "(") { word = word[..<open] }
            let w = String(word)
            guard words?.contains(w) ?? true else { continue }
            let phones = line[space...].split(whereSeparator: \.isWhitespace).map(String.init)
            if !phones.isEmpty { add(w, phones) }
        }
    }

    /// Adds a pronunciation unless the word has it already.
    public mutating func add(_ word: String, _ phones: [String], first: Bool = false) {
        var list = entries[word, default: []]
        guard !list.contains(phones) else { return }
        if first { list.insert(phones, at: 0) } else { list.append(phones) }
        entries[word] = list
    }

    /// These words' entries alone.
    public func only(_ words: Set<String>) -> Lexicon {
        var out = Lexicon()
        out.entries = entries.filter { words.contains($0.key) }
        return out
    }

    /// The dictionary file: one pronunciation a line, words sorted, alternates as `word(2)`.
    public var text: String {
        var out = ""
        for word in entries.keys.sorted() {
            for (i, phones) in entries[word]!.enumerated() {
                out += (i == 0 ? word : "\(word)(\(i + 1))") + " " + phones.joined(separator: " ") + "\n"
            }
        }
        return out
    }

    /// A pronunciation guessed from espeak-ng's American English phonemes (`espeak-ng -q --ipa`).
    public static func guess(_ word: String) throws -> [String] {
        let ipa = try espeak(["--", word], word: word).trimmingCharacters(in: .whitespacesAndNewlines)
        guard !ipa.isEmpty else { throw LMBuildError("espeak-ng gave no pronunciation for '\(word)'") }
        return try phones(ipa, of: word)
    }

    /// Pronunciations guessed for many words, as `guess` gives each, from one espeak-ng run (one word a line,
    /// each a sentence of its own, in; one line of phonemes a word out): a spec with a hundred new words takes
    /// one process, not a hundred. Should espeak-ng's lines not match the words one to one, each word is asked
    /// for alone.
    public static func guess(_ words: [String]) throws -> [String: [String]] {
        if words.count > 1 {
            let file = NSTemporaryDirectory() + "speechgraph-words-\(getpid())-\(UUID().uuidString).txt"
            defer { try? FileManager.default.removeItem(atPath: file) }
            do { try words.map { $0 + ".\n" }.joined().write(toFile: file, atomically: false, encoding: .utf8) } catch {
                throw LMBuildError("cannot write the words for espeak-ng to \(file): \(PathNames.reason(error))")
            }
            let lines = try espeak(["-f", file], word: words[0]).split(separator: "\n")
                .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            if lines.count == words.count {
                return try Dictionary(uniqueKeysWithValues: zip(words, lines).map { ($0, try phones($1, of: $0)) })
            }
        }
        return try Dictionary(uniqueKeysWithValues: words.map { ($0, try guess($0)) })
    }

    /// What `espeak-ng -q --ipa -v en-us` with `arguments` writes; `word` names what it was asked in an error.
    private static func espeak(_ arguments: [String], word: String) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["espeak-ng", "-q", "--ipa", "-v", "en-us"] + arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw LMBuildError("cannot run espeak-ng to pronounce '\(word)' (install Debian's espeak-ng): \(error)")
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LMBuildError("espeak-ng gave no pronunciation for '\(word)'")
        }
        return String(decoding: data, as: UTF8.self)
    }

    private static func phones(_ ipa: String, of word: String) throws -> [String] {
        do { return try Phones.fromIPA(ipa, skippingUnknown: true) } catch {
            throw LMBuildError(
                "espeak-ng's pronunciation of '\(word)' (\(ipa)) does not map to the model's phones: \(error)")
        }
    }
}

public struct LMBuildError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// `speechgraph lm build`: a spec into a model directory that the recognizer's `lm:` takes.
///
/// The directory holds `lm.arpa` (the model as text), `lm.bin` (PocketSphinx's binary form, when a
/// `binaryWriter` is given), `words.dict` (a pronunciation for every word of the model), `grammar.jsgf` (the
/// spec's phrases and templates as a grammar) and `spec.lmspec` (the spec it was built from).
public enum LMBuilder {
    public struct Report: Sendable {
        public var directory: String
        public var vocabularySize: Int
        /// How many n-grams of each order.
        public var ngramCounts: [Int]
        /// Sentences and samples the model was estimated from.
        public var sentenceCount: Int
        public var sampleCount: Int
        /// Words in neither the dictionary nor the spec's pronunciations, with the pronunciation guessed.
        public var guessed: [(word: String, phones: [String])]

        /// One warning for each guessed pronunciation, at the first phrase or template of `spec` that uses the
        /// word (`file:line:col: warning: ...`), or at `file` when none has a location.
        public func guessWarnings(_ spec: LMSpec, file: String) -> [String] {
            guessed.map { word, phones in
                let at =
                    spec.phrases.first { LMWords.words(of: $0.text).contains(word) }?.location
                    ?? spec.templates.first { LMWords.words(of: $0.text).contains(word) }?.location
                    // A word of a class's values: where the class is defined.
                    ?? spec.classes.keys.sorted().first { name in
                        spec.classes[name]!.contains { LMWords.words(of: $0).contains(word) }
                    }.flatMap { spec.classLocations[$0] }
                let pronounce = "'pronounce \"\(word)\" { cmu: \"...\" }'"
                return (at.map { "\($0): " } ?? "\(file): ")
                    + "warning: '\(word)' is in no dictionary; pronounced \(phones.joined(separator: " ")) "
                    + "(from espeak-ng): "
                    + (at == nil
                        ? "to change it, give the phrases in a spec (.lmspec) with \(pronounce)"
                        : "add \(pronounce) to the spec to change it")
            }
        }
    }

    public static func build(
        _ spec: LMSpec, into directory: String, dictionary: String,
        binaryWriter: ((_ arpa: String, _ binary: String) throws -> Void)? = nil
    ) throws -> Report {
        let corpus = LMCorpus(spec)
        let model = NGramModel(corpus, order: spec.order)
        let vocabulary = Set(model.vocabulary).subtracting([NGramModel.end, NGramModel.unknown])

        var lexicon = try Lexicon(dictionary: dictionary, words: vocabulary)
        for p in spec.pronunciations.reversed() { lexicon.add(p.word, p.phones, first: true) }
        var guessed: [(String, [String])] = []
        let unknown = vocabulary.sorted().filter { lexicon.entries[$0] == nil }
        let guesses = try Lexicon.guess(unknown)
        for word in unknown {
            let phones = guesses[word]!
            lexicon.add(word, phones)
            guessed.append((word, phones))
        }

        let fm = FileManager.default
        if fm.fileExists(atPath: directory), !fm.isDirectory(directory) {
            throw LMBuildError("cannot write the model into \(directory): it is a file, not a directory")
        }
        do { try fm.createDirectory(atPath: directory, withIntermediateDirectories: true) } catch {
            throw LMBuildError("cannot make the directory \(directory): \(PathNames.reason(error))")
        }
        let arpa = directory + "/lm.arpa"
        try write(model.arpa, to: arpa)
        try write(lexicon.text, to: directory + "/words.dict")
        try write(spec.source, to: directory + "/spec.lmspec")
        try write(spec.jsgf(), to: directory + "/grammar.jsgf")
        if let binaryWriter { try binaryWriter(arpa, directory + "/lm.bin") }
        return Report(
            directory: directory, vocabularySize: vocabulary.count, ngramCounts: model.grams.map(\.count),
            sentenceCount: corpus.sentences.count, sampleCount: corpus.sentences.reduce(0) { $0 + $1.count },
            guessed: guessed)
    }

    private static func write(_ text: String, to path: String) throws {
        do { try text.write(toFile: path, atomically: true, encoding: .utf8) } catch {
            throw LMBuildError("cannot write \(path): \(PathNames.reason(error))")
        }
    }
}
