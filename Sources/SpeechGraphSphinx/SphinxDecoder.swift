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
                model: c.string(of: "model"), hmm: c.string("hmm"), lm: c.string("lm"), dict: c.string("dict"),
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
            model: c.string(of: "model"), hmm: c.string("hmm"), lm: nil, dict: c.string("dict"), jsgf: nil,
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
                if let words = domain.dict { args[args.firstIndex(of: "-dict")! + 1] = words }
            }
        } else if let lm {
            args += ["-lm", lm]
        }
        return args
    }
}

/// What identifies the version of a file a decoder was loaded from: a file written again (by `lm build`, an
/// editor, a package upgrade) gets a new modification time, and one replaced by a rename a new inode.
public struct FileStamp: Hashable, Sendable {
    public var path: String
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = -1
    var modified: Int64 = 0
    var modifiedNanoseconds: Int = 0

    /// The file as it is now; a file that cannot be read gets a stamp of its own (size -1).
    public init(_ path: String) {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
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

/// One PocketSphinx decoder. Not thread-safe: it is used by one node at a time, on the graph thread;
/// `SphinxDecoderPool` hands it out and takes it back.
public final class SphinxDecoder: @unchecked Sendable {
    // @unchecked: a decoder is used by one node at a time (the pool's lock orders hand-overs); the C
    // decoder it wraps is never touched by two threads at once.
    let ps: OpaquePointer
    public let model: SphinxModel
    /// Which pool it belongs to: streamed or whole-utterance decoding.
    var isStreaming = true
    /// The live cepstral mean's whole state as loaded (the model's `-cmninit` as the mean, no frames counted
    /// yet): `reset` puts it back.
    private var initialMean: MeanState
    /// The model's files as they were when loading began (`isCurrent`).
    public let stamps: [FileStamp]

    /// Loads the model. PocketSphinx's own log goes nowhere unless `SPEECHGRAPH_SPHINX_LOG` names a file;
    /// when loading fails, its error lines are part of the thrown message.
    public init(model: SphinxModel) throws {
        self.model = model
        stamps = model.fileStamps()  // before loading: a file written during the load makes the decoder stale
        // sphinxbase's log stream is process-global: one model load at a time, and the log stays off
        // while other decoders run (they would write into whatever stream is set).
        SphinxLog.loading.lock()
        defer { SphinxLog.loading.unlock() }
        SphinxLog.silence()
        if let ps = Self.load(model) {
            self.ps = ps
            if let domain = model.domain, domain.weight < 1 {
                var ready = false
                let reason = SphinxLog.capture { ready = Self.interpolate(ps, general: model.lm, domain: domain) }
                guard ready else {
                    ps_free(ps)
                    throw SpeechGraphError("PocketSphinx could not use the language model \(domain.lm): \(reason)")
                }
            }
            initialMean = Self.meanState(ps)
            return
        }
        // Load again with the log captured, to say why.
        let reason = SphinxLog.capture { _ = Self.load(model).map { ps_free($0) } }
        // PocketSphinx names the first word of a grammar its dictionary lacks: name them all, where they are.
        if let jsgf = model.jsgf, reason.contains("is missing in the dictionary") {
            let missing = Self.wordsMissing(from: model.dict, in: jsgf)
            if !missing.isEmpty {
                let listed =
                    missing.prefix(10).map {
                        "'\($0.text)' (\($0.location.line):\($0.location.column)"
                            + ($0.lowercaseKnown ? "; the dictionary has '\($0.text.lowercased())')" : ")")
                    }
                    .joined(separator: ", ") + (missing.count > 10 ? ", ..." : "")
                throw SpeechGraphError(
                    "the grammar \(jsgf) says \(missing.count == 1 ? "a word" : "\(missing.count) words") that the "
                        + "dictionary (\(model.dict)) does not have: \(listed). Give "
                        + (missing.count == 1 ? "it a pronunciation" : "them pronunciations")
                        + " in a dictionary ('dict'), or write the grammar as a .lmspec spec, whose new words "
                        + "espeak-ng pronounces (docs/lm.md)", parameter: "grammar")
            }
        }
        // A grammar's words are checked against the dictionary as it loads: name it, or the acoustic model is blamed.
        let grammar = model.jsgf.map { ", with the grammar \($0)" } ?? ""
        throw SpeechGraphError("PocketSphinx could not load the model (\(model.hmm)\(grammar)): \(reason)")
    }

    /// The grammar's words (each once, in order) that `dictionary` has no entry for (case counts, as for
    /// PocketSphinx), and whether it has the word in lower case.
    static func wordsMissing(from dictionary: String, in grammar: String)
        -> [(text: String, location: SourceLocation, lowercaseKnown: Bool)]
    {
        let said = JSGFCheck.words(file: grammar)
        let asked = Set(said.flatMap { [$0.text, $0.text.lowercased()] })
        guard let known = try? Lexicon(dictionary: dictionary, words: asked).entries else { return [] }
        var seen = Set<String>()
        return said.filter { known[$0.text] == nil && seen.insert($0.text).inserted }
            .map { ($0.text, $0.location, known[$0.text.lowercased()] != nil) }
    }

    private static func load(_ model: SphinxModel) -> OpaquePointer? {
        let args = model.arguments
        let argv = args.map { strdup($0) }
        defer { for a in argv { free(a) } }
        var pointers: [UnsafeMutablePointer<CChar>?] = argv
        let config = pointers.withUnsafeMutableBufferPointer { buffer in
            cmd_ln_parse_r(nil, ps_args(), Int32(buffer.count), buffer.baseAddress, 1)
        }
        guard let config else { return nil }
        defer { cmd_ln_free_r(config) }  // the decoder keeps its own reference
        return ps_init(config)
    }

    deinit { ps_free(ps) }

    /// This decoder decodes as one newly loaded for `model` would: the same model, its files unchanged since it
    /// was loaded.
    public func isCurrent(for model: SphinxModel) -> Bool { model == self.model && model.fileStamps() == stamps }

    /// Forgets what earlier audio taught the decoder: the live cepstral mean goes back to the state it was
    /// loaded in, so that a reused decoder decodes exactly as a newly loaded one. The whole state: the mean,
    /// its running sum and that sum's frame count, which a newly loaded decoder has at 0, so that the first
    /// update takes the mean of the frames heard alone (`cmn_live_set` would count the initial mean as 500
    /// frames, and a reused decoder's mean would then follow the speech more slowly). (The noise estimate and
    /// the front end's frame count start over with every new stream, see `startUtterance`.)
    ///
    /// Also the live feature buffer, which gives the first frames of an utterance their delta context when the
    /// utterance's first samples make no frame (a 20 ms piece): zeros and empty, as loaded, not the last frames
    /// of the previous utterance. And an utterance left open (a node that failed mid-utterance) is ended, or
    /// PocketSphinx would refuse to start the next.
    public func reset() {
        if utteranceOpen {
            _ = ps_end_utt(ps)
            utteranceOpen = false
        }
        setMeanState(initialMean)
        let feat = ps_get_feat(ps)!
        if let rows = feat.pointee.cepbuf {
            for r in 0..<Int(LIVEBUFBLOCKSIZE) { rows[r]?.update(repeating: 0, count: Int(feat.pointee.cepsize)) }
        }
        feat.pointee.bufpos = 0
        feat.pointee.curpos = 0
    }

    /// Between `startUtterance` and `endUtterance`.
    private var utteranceOpen = false

    /// The mean of the cepstra PocketSphinx's front end computes from these samples (silence left out, as the
    /// front end leaves it out), or `nil` when they hold no frame. Uses the decoder's own front end between
    /// utterances; the next `startUtterance(newStream: true)` starts it over.
    public func cepstralMean(of samples: UnsafeBufferPointer<Int16>) -> [Float]? {
        guard let frames = cepstra(of: samples), let size = frames.first?.count else { return nil }
        var sum = [Double](repeating: 0, count: size)
        var count = 0
        // As PocketSphinx's normalisation does: frames of no energy (c0 below 0) are left out.
        for row in frames where row[0] >= 0 {
            for i in 0..<size { sum[i] += Double(row[i]) }
            count += 1
        }
        guard count > 0 else { return nil }
        return sum.map { Float($0 / Double(count)) }
    }

    /// The cepstra PocketSphinx's front end computes from these samples, one row per 10 ms frame, without the
    /// last one it makes of the samples left over (between utterances, as `cepstralMean`).
    func cepstra(of samples: UnsafeBufferPointer<Int16>) -> [[Float]]? {
        guard let fe = ps_get_fe(ps), let base = samples.baseAddress, !samples.isEmpty else { return nil }
        let size = Int(fe_get_output_size(fe))
        var rows: [[Float]] = []
        func add(_ cep: UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?, _ frames: Int32) {
            guard let cep else { return }
            for f in 0..<Int(frames) {
                guard let row = cep[f] else { continue }
                rows.append(Array(UnsafeBufferPointer(start: row, count: size)))
            }
        }
        fe_start_stream(fe)
        guard fe_start_utt(fe) == 0 else { return nil }
        var block: UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?
        var frames: Int32 = 0
        if fe_process_utt(fe, base, samples.count, &block, &frames) == 0 { add(block, frames) }
        if let block { fe_free_2d(block) }
        var last = [mfcc_t](repeating: 0, count: size)
        var lastFrames: Int32 = 0
        _ = fe_end_utt(fe, &last, &lastFrames)  // the frame of the samples left over: not counted
        return rows.isEmpty ? nil : rows
    }

    /// Sets the live cepstral mean, counted as one frame of evidence: `updateCepstralMean` then moves it to the mean
    /// of the frames decoded since.
    public func setCepstralMean(_ mean: [Float]) {
        let cmn = Self.cmn(ps)
        guard mean.count == Int(cmn.pointee.veclen) else { return }
        for i in mean.indices {
            cmn.pointee.cmn_mean[i] = mean[i]
            cmn.pointee.sum[i] = mean[i]
        }
        cmn.pointee.nframe = 1
        noteMean()
    }

    /// The live cepstral mean's whole state: the mean, the sum it comes from and that sum's frame count.
    public struct MeanState: Sendable, Equatable {
        let mean: [Float]
        let sum: [Float]
        let frames: Int32
    }

    /// The live cepstral mean's state now (to `restore` it).
    public var meanState: MeanState { Self.meanState(ps) }

    private static func meanState(_ ps: OpaquePointer) -> MeanState {
        let cmn = Self.cmn(ps)
        let n = Int(cmn.pointee.veclen)
        return MeanState(
            mean: Array(UnsafeBufferPointer(start: cmn.pointee.cmn_mean, count: n)),
            sum: Array(UnsafeBufferPointer(start: cmn.pointee.sum, count: n)), frames: cmn.pointee.nframe)
    }

    /// Puts the live cepstral mean back as `meanState` found it.
    public func restore(_ state: MeanState) {
        setMeanState(state)
        noteMean()
    }

    private func setMeanState(_ state: MeanState) {
        let cmn = Self.cmn(ps)
        guard state.mean.count == Int(cmn.pointee.veclen) else { return }
        for i in state.mean.indices {
            cmn.pointee.cmn_mean[i] = state.mean[i]
            cmn.pointee.sum[i] = state.sum[i]
        }
        cmn.pointee.nframe = state.frames
    }

    /// With the second pass: the live means this utterance's frames were normalised with, each from `frame` on.
    private var meanHistory: [(frame: Int, mean: [Float])] = []
    /// Samples of this utterance fed so far.
    private var samplesFed = 0

    /// The cepstral frames the front end has computed from this utterance's samples so far: a window of 410
    /// samples (at 16 kHz) every 160.
    private var framesComputed: Int {
        guard let fe = ps_get_fe(ps) else { return 0 }
        var shift: Int32 = 0
        var size: Int32 = 0
        fe_get_input_size(fe, &shift, &size)
        guard shift > 0, samplesFed >= Int(size) else { return 0 }
        return (samplesFed - Int(size)) / Int(shift) + 1
    }

    /// Streamed decoding with the second pass: records the live mean when it has changed (set, updated, or moved
    /// by PocketSphinx itself while decoding), from the next frame the front end computes.
    private func noteMean() {
        guard model.secondPass, isStreaming else { return }
        let cmn = Self.cmn(ps)
        let live = UnsafeBufferPointer(start: cmn.pointee.cmn_mean, count: Int(cmn.pointee.veclen))
        if let last = meanHistory.last?.mean, last.elementsEqual(live) { return }
        meanHistory.append((frame: framesComputed, mean: Array(live)))
    }

    /// Streamed decoding with the second pass (`SphinxModel.secondPass`), done by `endUtterance`: gives the
    /// utterance's features the normalisation of utterance mode, the mean of all its frames, in place of the live
    /// means they were decoded with, so that PocketSphinx's second pass, which `endUtterance` runs over the words
    /// its first pass found, scores them as utterance mode would. Returns that mean, or `nil` when PocketSphinx's
    /// feature buffer could not be reached (a libpocketsphinx other than Debian's 0.8+5prealpha, features other
    /// than plain cepstra, or a grammar, whose search has no second pass; see `sg_ps_features`): the second pass
    /// then runs on the features as they are.
    ///
    /// Each frame's raw cepstrum is its stored one plus the live mean it was normalised with, except for frames of
    /// no energy (c0 below 0), which live normalisation leaves as they are and batch normalisation leaves out of
    /// the mean. A live mean that PocketSphinx moved inside one `process` call is counted from the end of that
    /// call (its frames taken back with the mean before: at most one batch late). The last few frames (the delta
    /// window's delay) are still in PocketSphinx's front end and keep their live mean, and the deltas of frames
    /// next to a change of the live mean keep its step. Once done, the utterance's features are no longer those the
    /// mean history describes: a second call does nothing.
    @discardableResult
    func renormaliseForSecondPass() -> [Float]? {
        guard !meanHistory.isEmpty, let (feat, frames, size) = features() else { return nil }
        defer { meanHistory.removeAll(keepingCapacity: true) }
        var sum = [Double](repeating: 0, count: size)
        var counted = 0
        forEachFrame(frames) { f, used in
            guard let row = feat[f]?[0], !Self.leftAsItWas(row, used) else { return }
            for i in 0..<size { sum[i] += Double(row[i] + used[i]) }
            counted += 1
        }
        guard counted > 0 else { return nil }
        let mean = sum.map { Float($0 / Double(counted)) }
        forEachFrame(frames) { f, used in
            guard let row = feat[f]?[0] else { return }
            // A frame of no energy was left as it was: batch normalisation subtracts the mean from it too.
            let kept = Self.leftAsItWas(row, used)
            for i in 0..<size { row[i] += (kept ? 0 : used[i]) - mean[i] }
        }
        return mean
    }

    /// The utterance's stored feature rows so far, their count and the cepstrum's size, when the second pass's
    /// renormalisation can reach them.
    func features() -> (UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?>, Int, Int)? {
        var count: Int32 = 0
        guard model.secondPass, isStreaming, let feat = sg_ps_features(ps, &count), count > 0 else { return nil }
        return (feat, Int(count), Int(Self.cmn(ps).pointee.veclen))
    }

    /// Each frame of the utterance so far with the live mean it was normalised with.
    private func forEachFrame(_ frames: Int, _ body: (Int, [Float]) -> Void) {
        var k = 0
        for f in 0..<frames {
            while k + 1 < meanHistory.count && meanHistory[k + 1].frame <= f { k += 1 }
            body(f, meanHistory[k].mean)
        }
    }

    /// Whether a stored row is a frame of no energy, which live normalisation left as it was (its raw cepstrum is
    /// the row; any other row's is the row plus the mean it was normalised with): its c0, stored as it was, is
    /// below 0 and below what any normalised frame's can be (-used c0).
    private static func leftAsItWas(_ row: UnsafeMutablePointer<mfcc_t>, _ used: [Float]) -> Bool {
        row[0] < 0 && row[0] < -used[0]
    }

    /// Moves the live cepstral mean to the mean of what it has counted (PocketSphinx itself only does it every
    /// 8 s of speech).
    public func updateCepstralMean() {
        cmn_live_update(Self.cmn(ps))
        noteMean()
    }

    /// The decoder's cepstral mean normalisation state.
    private static func cmn(_ ps: OpaquePointer) -> UnsafeMutablePointer<cmn_t> { ps_get_feat(ps).pointee.cmn_struct! }

    /// Starts an utterance. With `newStream`, on a fresh front-end stream: PocketSphinx's noise estimate
    /// and frame count start over (as `pocketsphinx_batch` does for every file). Streamed decoding needs
    /// that for every utterance, since it numbers word frames from the start of the stream; whole-utterance
    /// decoding numbers them per utterance and keeps the noise estimate from one utterance to the next of
    /// the same stream, which matters in steady noise. The live cepstral mean is kept either way.
    public func startUtterance(newStream: Bool = true) throws {
        if newStream { _ = ps_start_stream(ps) }
        guard ps_start_utt(ps) == 0 else { throw SpeechGraphError("PocketSphinx could not start an utterance") }
        utteranceOpen = true
        samplesFed = 0
        meanHistory.removeAll(keepingCapacity: true)
        noteMean()
    }

    /// Feeds 16-bit samples at the model's rate. `wholeUtterance`: these samples are the entire
    /// utterance, so cepstral mean normalisation can use their mean (PocketSphinx's batch mode).
    public func process(_ samples: UnsafeBufferPointer<Int16>, wholeUtterance: Bool = false) throws {
        guard ps_process_raw(ps, samples.baseAddress, samples.count, 0, wholeUtterance ? 1 : 0) >= 0 else {
            throw SpeechGraphError("PocketSphinx failed to decode audio")
        }
        samplesFed += samples.count
        noteMean()
    }

    /// Ends the utterance: PocketSphinx finishes its search (with the second pass, if the model has it, over
    /// renormalised features when streamed, see `renormaliseForSecondPass`).
    public func endUtterance() throws {
        if model.secondPass && isStreaming { renormaliseForSecondPass() }
        utteranceOpen = false
        guard ps_end_utt(ps) == 0 else { throw SpeechGraphError("PocketSphinx could not end the utterance") }
    }

    /// The best hypothesis so far (partial while an utterance runs, final after `endUtterance`).
    public var hypothesis: String {
        var score: Int32 = 0
        guard let hyp = ps_get_hyp(ps, &score) else { return "" }
        return String(cString: hyp)
    }

    /// Whether the search reached no end at all (a grammar none of whose sentences fits the audio): no
    /// hypothesis and no score, not an empty reading (an n-gram model's silence) with a score of its own.
    public var reachedNoEnd: Bool {
        var score: Int32 = 0
        return ps_get_hyp(ps, &score) == nil
    }

    /// The best hypothesis's path score (natural log: acoustic log-likelihood plus the language model's score
    /// raised to its weight), and the frames it spans. Two decoders with the same acoustic model that saw the same
    /// audio give comparable scores.
    public var hypothesisScore: (score: Double, frames: Int) {
        var score: Int32 = 0
        _ = ps_get_hyp(ps, &score)
        // Search scores are in log-math units shifted right by SENSCR_SHIFT (10 bits).
        return (Double(score) * 1024 * log(logmath_get_base(ps_get_logmath(ps))), Int(ps_get_n_frames(ps)))
    }

    /// Words of the best hypothesis with their frames (100 per second) and posterior probabilities,
    /// fillers and silences left out.
    public func words(frameOffset: Double) -> [Word] { Self.words(ps_seg_iter(ps), ps: ps, frameOffset: frameOffset) }

    /// Up to `count` different readings of the utterance just ended, best first, from PocketSphinx's n-best
    /// search over its lattice: each with its score (natural log, relative to the best) and its words
    /// (confidences of the best reading's lattice). Readings that differ only in fillers or pronunciation
    /// variants count once. Empty when the utterance has no lattice.
    public func nbest(_ count: Int, frameOffset: Double) -> [(text: String, score: Double, words: [Word])] {
        guard count > 0, var iterator = ps_nbest(ps) else { return [] }
        let logmath = ps_get_logmath(ps)
        let scale = log(logmath_get_base(logmath))
        var out: [(text: String, score: Double, words: [Word])] = []
        var seen = Set<String>()
        var best: Int32?
        // A* yields many paths that read the same: look a little further than `count`.
        for _ in 0..<(count * 20) {
            var score: Int32 = 0
            _ = ps_nbest_hyp(iterator, &score)  // its text has fillers; the words below have none
            let words = Self.words(ps_nbest_seg(iterator), ps: ps, frameOffset: frameOffset)
            let text = words.map(\.text).joined(separator: " ")
            if best == nil { best = score }
            if seen.insert(text).inserted {
                out.append((text, Double(score - (best ?? score)) * scale, words))
                if out.count == count { break }
            }
            guard let next = ps_nbest_next(iterator) else { return out }  // it freed itself at the end
            iterator = next
        }
        ps_nbest_free(iterator)
        return out
    }

    /// The words of a segment iteration (of the best hypothesis, or of an n-best entry); frees the iterator.
    static func words(_ first: OpaquePointer?, ps: OpaquePointer, frameOffset: Double) -> [Word] {
        var result: [Word] = []
        let logmath = ps_get_logmath(ps)
        var seg = first
        while let s = seg {
            if let w = ps_seg_word(s) {
                let text = String(cString: w)
                // Fillers, and "(NULL)": a grammar's empty transitions (an optional word left out) are segments.
                if !(text.hasPrefix("<") || text.hasPrefix("[") || text.hasPrefix("++") || text == "(NULL)") {
                    var sf: Int32 = 0
                    var ef: Int32 = 0
                    ps_seg_frames(s, &sf, &ef)
                    var a: Int32 = 0
                    var l: Int32 = 0
                    var b: Int32 = 0
                    let post = ps_seg_prob(s, &a, &l, &b)
                    let confidence = min(1, max(0, logmath_exp(logmath, post)))
                    let bare = text.replacingOccurrences(of: #"\(\d+\)$"#, with: "", options: .regularExpression)
                    result.append(
                        Word(
                            text: bare,
                            range: TimeRange(
                                start: frameOffset + Double(sf) / 100,
                                end: frameOffset + Double(ef + 1) / 100),
                            confidence: confidence))
                }
            }
            seg = ps_seg_next(s)
        }
        return result
    }
}

/// Keeps loaded decoders for reuse: loading a model takes far longer than decoding a short file. Each
/// running graph has one (its recognizers find it in the graph's resources); `speechgraph transcribe`
/// hands one pool to the graph of every file, so the model is loaded once for many files. A decoder
/// handed out again is reset first, so what one graph heard never changes what the next computes.
/// Thread-safe.
public final class SphinxDecoderPool: Sendable {
    /// Decoders are kept apart by use, so a whole-utterance decoder never inherits a live mean.
    private struct Key: Hashable {
        var model: SphinxModel
        var streaming: Bool
    }

    /// The idle decoders of each model and use, and those models and uses in the order they were last given
    /// decoders back (the latest at the end).
    private let idle = Mutex<(pool: [Key: [SphinxDecoder]], recent: [Key])>(([:], []))
    /// Idle decoders kept per model and use; one given back beyond that is freed.
    public let maxIdle: Int
    /// Idle decoders kept in all; beyond it, those of the model and use given back to longest ago are freed (a
    /// server that builds a model for each request's phrases would otherwise keep 90 MB for each, for ever). `fill`
    /// raises it to what it loads, so that what a server loads before it listens is kept.
    public var maxIdleInAll: Int { inAll.load(ordering: .relaxed) }
    private let inAll: Atomic<Int>

    /// - Parameters:
    ///   - maxIdle: idle decoders kept per model and use (a server bounds what a burst of clients left).
    ///   - maxIdleInAll: idle decoders kept in all.
    public init(maxIdle: Int = .max, maxIdleInAll: Int = .max) {
        self.maxIdle = maxIdle
        inAll = Atomic(maxIdleInAll)
    }

    /// An idle decoder for this model, reset to decode as a newly loaded one (`SphinxDecoder.reset`), or a newly
    /// loaded one.
    public func checkout(_ model: SphinxModel, streaming: Bool = true) throws -> SphinxDecoder {
        let key = Key(model: model, streaming: streaming)
        while let decoder = idle.withLock({ $0.pool[key]?.popLast() }) {
            // One whose files changed since it was loaded (a model built again, in a long-lived server) is dropped.
            guard decoder.isCurrent(for: model) else { continue }
            decoder.reset()
            return decoder
        }
        return try Self.load(key)
    }

    /// A newly loaded decoder for this model and use.
    private static func load(_ key: Key) throws -> SphinxDecoder {
        let decoder = try SphinxDecoder(model: key.model)
        decoder.isStreaming = key.streaming
        return decoder
    }

    /// Loads decoders until `count` (at most `maxIdle`) wait idle for each model and use the pool has held: a
    /// server does it once a first graph has run and before it listens, so that that many clients at once never
    /// wait for a model to load. Meant for a pool nobody else uses yet: it counts first, then loads.
    public func fill(upTo count: Int) throws {
        let have = idle.withLock { $0.pool.mapValues(\.count) }
        let wanted = have.count * min(count, maxIdle)
        if wanted > maxIdleInAll { inAll.store(wanted, ordering: .relaxed) }
        for (key, n) in have {
            for _ in n..<max(n, min(count, maxIdle)) { checkin(try Self.load(key)) }
        }
    }

    /// Decoders waiting in the pool, of every model and use.
    public var idleCount: Int { idle.withLock { $0.pool.values.reduce(0) { $0 + $1.count } } }

    /// Gives a decoder back once its node is done with it (between utterances).
    public func checkin(_ decoder: SphinxDecoder) {
        let key = Key(model: decoder.model, streaming: decoder.isStreaming)
        // Beyond `maxIdle` or `maxIdleInAll`, decoders are freed (on return from here, outside the lock).
        let surplus = idle.withLock { state -> [SphinxDecoder] in
            guard state.pool[key, default: []].count < maxIdle else { return [decoder] }
            state.pool[key, default: []].append(decoder)
            state.recent.removeAll { $0 == key }
            state.recent.append(key)
            var freed: [SphinxDecoder] = []
            var total = state.pool.values.reduce(0) { $0 + $1.count }
            while total > maxIdleInAll, let oldest = state.recent.first {
                if let d = state.pool[oldest]?.popLast() {
                    freed.append(d)
                    total -= 1
                }
                if state.pool[oldest]?.isEmpty ?? true {
                    state.pool[oldest] = nil
                    state.recent.removeFirst()
                }
            }
            return freed
        }
        _ = surplus
    }

}

/// PocketSphinx logs through sphinxbase's process-global log stream. It is switched off for good
/// (or sent to the file `SPEECHGRAPH_SPHINX_LOG` names); a failed model load is retried with the log
/// captured in a temporary file, which is never closed, since another thread's decoder may hold it.
enum SphinxLog {
    static let loading = NSLock()

    static func silence() {
        if let path = ProcessInfo.processInfo.environment["SPEECHGRAPH_SPHINX_LOG"], err_set_logfile(path) == 0 {
            return
        }
        err_set_logfp(nil)
    }

    /// Runs `body` with the log captured; returns its error lines.
    static func capture(_ body: () -> Void) -> String {
        guard let file = tmpfile() else {
            body()
            return "no reason given"
        }
        err_set_logfp(file)
        body()
        silence()
        fflush(file)
        rewind(file)
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("ERROR") || line.hasPrefix("FATAL") { lines.append(line) }
        }
        return lines.isEmpty ? "no reason given" : lines.suffix(3).joined(separator: "; ")
    }
}
