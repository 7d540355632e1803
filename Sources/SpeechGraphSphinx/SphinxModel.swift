import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM
import Synchronization

/// Where a PocketSphinx model lives: acoustic model directory, language model or grammar, dictionary.
public struct SphinxModel: Hashable, Sendable {
    public var hmm: String
    public var lm: String?
    public var jsgf: String?
    public var dict: String
    public var sampleRate: Int
    /// PocketSphinx's `-remove_silence`: skip frames its own detector calls silence. Faster, but the
    /// frames left are numbered without the silence, so word times come out wrong.
    public var removesSilence = true
    /// PocketSphinx's `-maxhmmpf`: the most HMMs kept active in a frame. Its own default (30000) lets the
    /// first pass run slower than real time at the start of words; 10000 gives the same transcripts on the
    /// corpus and keeps the search under real time (see docs/endpointing.md).
    public var maxHMMs = SphinxModel.defaultMaxHMMs
    public static let defaultMaxHMMs = 10000
    /// PocketSphinx's second pass (`-fwdflat`): it redoes the utterance's search over the words the first pass
    /// found, when the utterance ends. More accurate for whole utterances, but the final result waits for it
    /// (about 4% of the utterance's duration); a streaming recognizer runs it only with `second-pass`, on features
    /// renormalised with the utterance's mean (`SphinxDecoder.renormaliseForSecondPass`).
    public var secondPass = true
    /// PocketSphinx's `-fwdflatsfwin` when set: the second pass tries a word at a frame only if the first pass
    /// found it starting within this many frames (10 ms each) of it; PocketSphinx's default (25) when nil. Fewer
    /// words to try make the pass cheaper (see `RecognizerModels`).
    public var secondPassWordWindow: Int?
    /// A domain language model that replaces the general one (`weight` 1) or is interpolated with it.
    public var domain: DomainModel?
    /// With a grammar built from a spec: the dictionary of its words.
    public var grammarDict: String?
    /// With a grammar built from a spec: the spec's n-gram model, which rejection compares with the general one.
    public var grammarModel: DomainModel?

    /// Directories searched for a model given by name (`model: en-us`), in order.
    public static var searchPath: [String] {
        var dirs: [String] = []
        if let env = ProcessInfo.processInfo.environment["SPEECHGRAPH_MODEL_PATH"] {
            dirs += env.split(separator: ":").map(String.init)
        }
        return dirs + ["/usr/share/pocketsphinx/model", "/usr/local/share/pocketsphinx/model"]
    }

    /// Resolves a model from the recognizer's parameters. `model` is a name looked up on the search path
    /// (`en-us` finds Debian's pocketsphinx-en-us) or a directory; `hmm`, `lm`, `dict` and `jsgf` override
    /// its parts. Every file is checked here, so a missing one gives a message that names it.
    public static func resolve(
        model: String, hmm: String?, lm: String?, dict: String?, jsgf: String?,
        sampleRate: Int, weight: Double = 1, buildSpec: Bool = true, notes: BuildNotes? = nil
    ) throws -> SphinxModel {
        var jsgf = jsgf
        // The grammar.jsgf of a directory `lm build` wrote is that directory's grammar, with its words.dict.
        if let file = jsgf, (file as NSString).lastPathComponent == "grammar.jsgf" {
            let parent = PathNames.folder(of: file)
            let dir = parent.isEmpty ? "." : parent
            if FileManager.default.fileExists(atPath: dir + "/words.dict") { jsgf = dir }
        }
        if let jsgf, jsgf.hasSuffix(".lmspec") || FileManager.default.isDirectory(jsgf) {
            // A grammar from a spec (its phrases and templates), with the dictionary of its words.
            var general = try resolve(
                model: model, hmm: hmm, lm: nil, dict: dict, jsgf: nil, sampleRate: sampleRate)
            let grammar = try DomainModel.grammar(
                jsgf, generalDictionary: general.dict, build: buildSpec, notes: notes)
            (general.jsgf, general.grammarDict) = (grammar.jsgf, grammar.dict)
            general.grammarModel = try grammar.directory.map { try DomainModel(directory: $0, weight: 1) }
            return general
        }
        // `lm` names a domain model (a spec, a built model directory, or a model file): the general model's
        // parts are resolved as if it were not set, and the domain model goes beside them.
        if let lm, jsgf == nil {
            var general = try resolve(
                model: model, hmm: hmm, lm: nil, dict: dict, jsgf: nil, sampleRate: sampleRate)
            general.domain = try DomainModel.resolve(
                lm, weight: weight, generalDictionary: general.dict, build: buildSpec, notes: notes)
            return general
        }
        let fm = FileManager.default
        let isDirectory = fm.isDirectory
        var modelDir: String?
        if model.contains("/") {
            modelDir = model
        } else {
            modelDir = searchPath.map { "\($0)/\(model)" }.first(where: isDirectory)
        }
        let name = modelDir.map { URL(fileURLWithPath: $0).lastPathComponent } ?? model
        if hmm == nil || (lm == nil && jsgf == nil) || dict == nil {
            guard let dir = modelDir, isDirectory(dir) else {
                if model.contains("/") {
                    throw SpeechGraphError("model directory not found: \(model)", parameter: "model")
                }
                throw SpeechGraphError(
                    "model '\(model)' not found in \(searchPath.joined(separator: ", ")) "
                        + "(install Debian's pocketsphinx-en-us, or give a model directory's path)",
                    parameter: "model")
            }
            modelDir = dir
        }
        func pick(_ given: String?, _ candidates: [String], suffixes: [String], what: String, parameter: String) throws
            -> String
        {
            if let given {
                guard fm.fileExists(atPath: given) else {
                    throw SpeechGraphError("\(what) not found: \(given)", parameter: parameter)
                }
                guard fm.isReadableFile(atPath: given) else {
                    throw SpeechGraphError("\(what) cannot be read: \(given)", parameter: parameter)
                }
                return given
            }
            let dir = modelDir!
            if let found = candidates.map({ "\(dir)/\($0)" }).first(where: { fm.fileExists(atPath: $0) }) {
                return found
            }
            // Otherwise the one file of that kind in the model directory (a phone LM is not a word LM).
            let files = ((try? fm.contentsOfDirectory(atPath: dir)) ?? []).sorted()
            let kind = files.filter { f in suffixes.contains { f.hasSuffix($0) } && !f.contains("-phone") }
            if kind.count == 1 { return "\(dir)/\(kind[0])" }
            throw SpeechGraphError(
                "no \(what) in model directory \(dir) (looked for \(candidates.joined(separator: ", "))); "
                    + "set '\(parameter)'", parameter: parameter)
        }
        let hmmPath: String
        if let hmm {
            guard isDirectory(hmm) else {
                throw SpeechGraphError("acoustic model directory not found: \(hmm)", parameter: "hmm")
            }
            hmmPath = hmm
        } else {
            let dir = modelDir!
            if let inner = [name, "hmm"].map({ "\(dir)/\($0)" }).first(where: {
                isDirectory($0) && fm.fileExists(atPath: "\($0)/mdef")
            }) {
                hmmPath = inner
            } else if fm.fileExists(atPath: "\(dir)/mdef") {
                hmmPath = dir
            } else {
                throw SpeechGraphError(
                    "no acoustic model in \(dir) (expected \(dir)/\(name)/mdef); set 'hmm'", parameter: "hmm")
            }
        }
        // A grammar file's problems, located in it, before PocketSphinx reads it (its parser writes what it does
        // not understand to standard output, and takes rule references that name nothing).
        if let jsgf, fm.fileExists(atPath: jsgf), !isDirectory(jsgf) { try JSGFCheck.check(file: jsgf) }
        var lmPath: String?
        if jsgf == nil {
            lmPath = try pick(
                lm, ["\(name).lm.bin", "\(name).lm", "\(name).lm.DMP"], suffixes: [".lm.bin", ".lm", ".lm.DMP"],
                what: "language model", parameter: "lm")
        } else if let jsgf, !fm.fileExists(atPath: jsgf) {
            // 'grammar', or 'jsgf' (its earlier name) when only that is set: resolve(config) maps the error.
            throw SpeechGraphError("grammar not found: \(jsgf)", parameter: "grammar")
        } else if lm == nil, let dir = modelDir, isDirectory(dir) {
            // With a grammar, the general model's language model (when the model has one) decodes each utterance
            // too, to reject speech outside the grammar.
            lmPath = try? pick(
                nil, ["\(name).lm.bin", "\(name).lm", "\(name).lm.DMP"], suffixes: [".lm.bin", ".lm", ".lm.DMP"],
                what: "language model", parameter: "lm")
        }
        let dictPath = try pick(
            dict, ["cmudict-\(name).dict", "\(name).dict"], suffixes: [".dict", ".dic"],
            what: "dictionary", parameter: "dict")
        // PocketSphinx takes a directory or an audio file as a dictionary of no words, and recognises nothing.
        if dict != nil, let problem = Self.dictionaryProblem(dictPath) {
            throw SpeechGraphError(problem, parameter: "dict")
        }
        return SphinxModel(hmm: hmmPath, lm: lmPath, jsgf: jsgf, dict: dictPath, sampleRate: sampleRate)
    }

    /// Why `path` is not a pronunciation dictionary (`word PHONE PHONE ...` a line), or nil: a directory, binary
    /// data, or a first entry that is not a word and its phones.
    static func dictionaryProblem(_ path: String) -> String? {
        if FileManager.default.isDirectory(path) { return "the dictionary \(path) is a directory, not a file" }
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }  // said when it loads
        defer { try? handle.close() }
        let head = (try? handle.read(upToCount: 4096)) ?? Data()
        let what = "\(path) is not a pronunciation dictionary (a word and its phones a line, as in 'hello HH AH L OW')"
        if head.isEmpty { return "the dictionary \(path) is empty" }
        if head.contains(0) { return what }
        let first = String(decoding: head, as: UTF8.self).split(separator: "\n").first {
            !$0.trimmingCharacters(in: .whitespaces).isEmpty && !$0.hasPrefix("#") && !$0.hasPrefix(";;")
        }
        guard let first, first.split(whereSeparator: { $0 == " " || $0 == "\t" }).count >= 2 else { return what }
        return nil
    }

    /// The model a recognizer node's parameters name (`model`, `hmm`, `lm`, `dict`, `jsgf`, `rate`).
    /// The PocketSphinx model's name or directory: `model`, unless the recognizer's engine is another's (then
    /// `model` names that engine's model, and PocketSphinx, which streams the volatile results, has en-us).
    public static func sphinxModelName(_ c: NodeConfig) -> String {
        c.string("engine") == "pocketsphinx" || c.string("engine") == nil ? c.string("model") ?? "en-us" : "en-us"
    }

    /// `buildSpec`: build a spec that `lm` names (or find it built); otherwise only parse it (planning).
    /// `notes`: what a spec built here had to say (guessed pronunciations).
    public static func resolve(_ c: NodeConfig, buildSpec: Bool = true, notes: BuildNotes? = nil) throws
        -> SphinxModel
    {
        let phrases = phraseItems(c).filter { !LMWords.words(of: $0).isEmpty }
        if !phrases.isEmpty {
            return try resolve(phrases: phrases, c, buildSpec: buildSpec, notes: notes)
        }
        do {
            return try resolve(
                model: sphinxModelName(c), hmm: c.string("hmm"), lm: c.string("lm"), dict: c.string("dict"),
                jsgf: c.string("grammar") ?? c.string("jsgf"), sampleRate: Int(c.number(of: "rate").rounded()),
                weight: c.number("weight") ?? 1, buildSpec: buildSpec, notes: notes)
        } catch var error as SpeechGraphError where error.parameter == "grammar" && c.string("grammar") == nil {
            error.parameter = "jsgf"
            throw error
        }
    }

    /// The model's filter bank must fit under half the sample rate (its `feat.params` `-upperf`): the en-us model's
    /// reaches 6800 Hz, so it needs audio at 13.6 kHz or more, and PocketSphinx refuses it at 8 kHz.
    public func checkRate() throws {
        guard let params = try? String(contentsOfFile: hmm + "/feat.params", encoding: .utf8) else { return }
        let words = params.split(whereSeparator: \.isWhitespace)
        guard let i = words.firstIndex(of: "-upperf"), i + 1 < words.count, let upper = Double(words[i + 1]),
            upper * 2 > Double(sampleRate)
        else { return }
        throw SpeechGraphError(
            "the acoustic model \(hmm) analyses up to \(Int(upper)) Hz, which needs audio at "
                + "\(Int(upper * 2)) Hz or more: 'rate' \(sampleRate) Hz is too low for it (use a model made for "
                + "that rate, with 'model' or 'hmm')", parameter: "rate")
    }

    /// The weight of `phrases` alone (no `lm`): a boost for them, general speech unchanged. A handful of
    /// phrases make a far sharper model than a spec's templates, so its reading must win by more: on the chess
    /// development set, the 9 openings as phrases give 0% WER at weights 0.1 and 0.2 (63% without them), and the
    /// general sentences 23.0% as without; at 0.4, 30.4% (docs/lm.md).
    public static let phrasesWeight = 0.15

    /// The recognizer's `phrases`, one item for each between '|', trimmed; nothing at either end ("", "a|b|",
    /// "${EXTRA}|a" with EXTRA empty) is no phrase.
    static func phraseItems(_ c: NodeConfig) -> [String] { numberedPhraseItems(c).map(\.text) }

    /// `phraseItems`, each with its index among the items as written (a `[list]`'s, empty ends included).
    static func numberedPhraseItems(_ c: NodeConfig) -> [(index: Int, text: String)] {
        var items = (c.string("phrases") ?? "").split(separator: "|", omittingEmptySubsequences: false).enumerated()
            .map { (index: $0.offset, text: $0.element.trimmingCharacters(in: .whitespaces)) }
        while items.first?.text == "" { items.removeFirst() }
        while items.last?.text == "" { items.removeLast() }
        return items
    }

    /// What is wrong with the items of `phrases`, every bad item in the list's order: items with no words (an
    /// empty one is nothing between two '|') and items that name a class; located at the first bad item, when the
    /// list was written in a file. nil: nothing.
    static func phraseError(_ c: NodeConfig) -> SpeechGraphError? {
        let numbered = numberedPhraseItems(c)
        guard let problem = phraseProblems(numbered.map(\.text)) else { return nil }
        let first = numbered.first { LMWords.words(of: $0.text).isEmpty || !LMTemplate.references(in: $0.text).isEmpty }
        return SpeechGraphError(problem, parameter: "phrases", item: first?.index)
    }

    /// `phraseError`'s message for `items`.
    static func phraseProblems(_ items: [String]) -> String? {
        func quoted(_ items: [String]) -> String {
            let shown = items.prefix(10).map { "'\($0)'" }
            return shown.joined(separator: ", ") + (items.count > 10 ? " and \(items.count - 10) more" : "")
        }
        var problems: [String] = []
        let wordless = items.filter { LMWords.words(of: $0).isEmpty }
        let empties = wordless.filter(\.isEmpty).count
        let noWords = wordless.filter { !$0.isEmpty }
        if empties > 0 {
            problems.append(
                empties == 1
                    ? "an empty phrase (nothing between two '|')" : "\(empties) empty phrases (nothing between two '|')"
            )
        }
        if !noWords.isEmpty {
            problems.append(
                noWords.count == 1
                    ? "the phrase \(quoted(noWords)) has no words" : "the phrases \(quoted(noWords)) have no words")
        }
        let templated = items.filter { !LMTemplate.references(in: $0).isEmpty }
        if !templated.isEmpty {
            problems.append(
                (templated.count == 1
                    ? "the phrase \(quoted(templated)) names a class"
                    : "the phrases \(quoted(templated)) name classes")
                    + ": phrases are plain text (a template goes in an 'lm' spec)")
        }
        return problems.isEmpty ? nil : problems.joined(separator: "; ")
    }

    /// The recognizer's settings that do not go together (`speechgraph check`, with nothing read): phrases with a
    /// grammar, or with an `lm` that is not a spec.
    public static func validate(_ c: NodeConfig) throws {
        if c.string("grammar") != nil && c.string("jsgf") != nil {
            throw SpeechGraphError("'jsgf' is the earlier name of 'grammar': give one of them", parameter: "jsgf")
        }
        if c.string("grammar") ?? c.string("jsgf") != nil, c.string("lm") != nil {
            throw SpeechGraphError(
                "a grammar and 'lm' do not go together: the recognizer decodes with one of them (a spec's phrases "
                    + "and templates can be a grammar: 'grammar: \"my.lmspec\"')", parameter: "lm")
        }
        // A phrase of no words ('!!!', or nothing between two '|') would be dropped without a word; read as a
        // phrase, '<room>' would be the word 'room'. Every such item is said, in one error.
        if let error = phraseError(c) { throw error }
        let items = phraseItems(c)
        // Past that, every item has words.
        guard !items.isEmpty else { return }
        guard c.string("grammar") ?? c.string("jsgf") == nil else {
            throw SpeechGraphError(
                "'phrases' and a grammar do not go together: add the phrases to the grammar", parameter: "phrases")
        }
        if let lm = c.string("lm"), !lm.hasSuffix(".lmspec") {
            throw SpeechGraphError(
                "'phrases' go with an 'lm' that is a spec (.lmspec), not \(lm): add them to its spec",
                parameter: "phrases")
        }
    }

    /// Contextual strings (`phrases`): a spec of those phrases, with the spec `lm` names if any, built like any
    /// spec and mixed with the general model (at `weight` with an `lm`, at `phrasesWeight` alone).
    private static func resolve(phrases: [String], _ c: NodeConfig, buildSpec: Bool, notes: BuildNotes?) throws
        -> SphinxModel
    {
        try validate(c)
        var model = try resolve(
            model: sphinxModelName(c), hmm: c.string("hmm"), lm: nil, dict: c.string("dict"), jsgf: nil,
            sampleRate: Int(c.number(of: "rate").rounded()))
        var spec = LMSpec()
        var weight = Self.phrasesWeight
        if let lm = c.string("lm") {
            guard FileManager.default.isReadableFile(atPath: lm) else {
                throw SpeechGraphError("language model not found: \(lm)", parameter: "lm")
            }
            spec = try LMSpec(contentsOf: lm)
            weight = c.number("weight") ?? 1
        }
        // Each phrase as often as a spec's phrase usually is: enough to favour it, not to drown the rest.
        spec.phrases += phrases.map { LMSpec.Phrase($0, count: 10) }
        guard buildSpec else { return model }
        let directory = try SphinxLanguageModels.built(spec, dictionary: model.dict, notes: notes)
        model.domain = try DomainModel(directory: directory, weight: weight)
        return model
    }

    var arguments: [String] {
        var args = [
            "-hmm", hmm, "-dict", dict, "-samprate", String(sampleRate),
            "-remove_silence", removesSilence ? "yes" : "no", "-maxhmmpf", String(maxHMMs),
            "-fwdflat", secondPass ? "yes" : "no",
        ]
        if secondPass, let window = secondPassWordWindow { args += ["-fwdflatsfwin", String(window)] }
        if let jsgf {
            args += ["-jsgf", jsgf]
            if let words = grammarDict { args[args.firstIndex(of: "-dict")! + 1] = words }
        } else if let domain {
            // Domain only: its model and its own dictionary. Interpolated: no model yet (the decoder sets
            // the mixture up after loading, see `SphinxDecoder.interpolate`) and the general dictionary.
            if domain.weight >= 1 {
                args += ["-lm", domain.lm]
                if let words = domain.dict ?? domain.vocabularyDict { args[args.firstIndex(of: "-dict")! + 1] = words }
            }
        } else if let lm {
            args += ["-lm", lm]
        }
        return args
    }
}

extension SphinxModel {
    /// The files a decoder of this model reads (the acoustic model directory's files, dictionaries, language
    /// models, grammar) as they are now: a decoder loaded while they were the same is still current.
    public func fileStamps() -> [FileStamp] {
        var files = [dict]
        files += [lm, jsgf, grammarDict, domain?.lm, domain?.dict, grammarModel?.lm, grammarModel?.dict].compactMap {
            $0
        }
        let acoustic = (try? FileManager.default.contentsOfDirectory(atPath: hmm))?.sorted() ?? []
        files += [hmm] + acoustic.map { "\(hmm)/\($0)" }
        return files.map(FileStamp.init)
    }
}
