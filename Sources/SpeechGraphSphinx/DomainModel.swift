import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM

/// A domain language model for the recognizer (`lm:`), and its weight against the general model.
public struct DomainModel: Hashable, Sendable {
    /// The model file: ARPA or PocketSphinx's binary form.
    public var lm: String
    /// Pronunciations of its words (a built model's words.dict); nil: the general dictionary has them.
    public var dict: String?
    /// 1: the domain model alone. Below 1: interpolated, P = weight P_domain + (1 - weight) P_general.
    public var weight: Double
    /// A model with no `dict`, decoded alone: the general dictionary's entries for its words only (in the cache).
    /// The decoder reads the same pronunciations for the same words: the search can reach no other word. Loading
    /// the model with the whole general dictionary instead maps every one of its 130,000 words onto the model, in
    /// a table sized by the model's vocabulary: about 15 s for a model of a few words.
    public var vocabularyDict: String?

    public init(lm: String, dict: String?, weight: Double, vocabularyDict: String? = nil) {
        self.lm = lm
        self.dict = dict
        self.weight = weight
        self.vocabularyDict = vocabularyDict
    }

    /// `lm:` as the recognizer takes it: a spec (`.lmspec`, built into the cache on first use, or only parsed
    /// when `build` is false), a directory `speechgraph lm build` wrote, or a model file.
    static func resolve(
        _ path: String, weight: Double, generalDictionary: String, build: Bool, notes: BuildNotes? = nil
    ) throws -> DomainModel {
        let fm = FileManager.default
        var isDirectory: ObjCBool = false
        guard fm.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw SpeechGraphError("language model not found: \(path)", parameter: "lm")
        }
        if isDirectory.boolValue {
            var model = try DomainModel(directory: path, weight: weight)
            if build { notes?.lines += model.lookUpWords(in: generalDictionary) }
            return model
        }
        guard fm.isReadableFile(atPath: path) else {
            throw SpeechGraphError("language model cannot be read: \(path)", parameter: "lm")
        }
        if path.hasSuffix(".lmspec") {
            let spec = try LMSpec(contentsOf: path)
            guard build else {
                // Planning: the spec is checked; the model is built when the graph runs.
                return DomainModel(lm: path, dict: nil, weight: weight)
            }
            let directory = try SphinxLanguageModels.built(spec, dictionary: generalDictionary, notes: notes)
            return try DomainModel(directory: directory, weight: weight)
        }
        // A model file that `lm build` wrote: the pronunciations of its words are beside it.
        let folder = PathNames.folder(of: path)
        let words = (folder.isEmpty ? "." : folder) + "/words.dict"
        var model = DomainModel(lm: path, dict: fm.fileExists(atPath: words) ? words : nil, weight: weight)
        if build { notes?.lines += model.lookUpWords(in: generalDictionary) }
        return model
    }

    /// A model with no words.dict beside it (an ARPA file from another toolkit, a built model's lm.bin copied on its
    /// own): its words looked up in the general dictionary. Decoded alone, it gets `vocabularyDict`. Returns a
    /// warning when the dictionary lacks some of them: PocketSphinx leaves them out of the search without a word.
    /// None when the model cannot be read (loading it says why) or every word is there. A model with its
    /// words.dict (what `lm build` writes, with every word) is not read twice for it.
    mutating func lookUpWords(in generalDictionary: String) -> [String] {
        guard dict == nil else { return [] }
        let vocabulary = SphinxLanguageModels.words(of: lm)
        let asked = Set(vocabulary.flatMap { [$0, $0.lowercased()] })
        guard let lexicon = try? Lexicon(dictionary: generalDictionary, words: asked) else { return [] }
        let known = lexicon.entries
        // (None of them there: an empty one, PocketSphinx's fillers alone, and nothing recognized, as with the general
        // dictionary.)
        if weight >= 1 {
            vocabularyDict = SphinxLanguageModels.vocabularyDictionary(
                lexicon.only(Set(vocabulary)), of: lm, general: generalDictionary)
        }
        let missing = vocabulary.filter { known[$0] == nil }
        guard !missing.isEmpty else { return [] }
        let listed = missing.prefix(8).map { "'\($0)'" }.joined(separator: ", ") + (missing.count > 8 ? ", ..." : "")
        let lowercase =
            missing.allSatisfy { known[$0.lowercased()] != nil }
            ? " (which have them in lower case: their case counts)" : ""
        let advice =
            "there is no words.dict beside the model: give it one, or name a dictionary with those words with 'dict'"
        return [
            "\(lm): warning: \(missing.count) of the model's \(vocabulary.count) words are not in "
                + "\(generalDictionary)\(lowercase), and cannot be recognized: \(listed); "
                + "\(advice) (docs/lm.md)"
        ]
    }

    /// `grammar:` naming a spec or a built model directory: its grammar.jsgf and words.dict (when planning, the
    /// spec only parsed: the spec's own path).
    static func grammar(_ path: String, generalDictionary: String, build: Bool, notes: BuildNotes? = nil) throws
        -> (jsgf: String, dict: String?, directory: String?)
    {
        let fm = FileManager.default
        var directory = path
        if path.hasSuffix(".lmspec") {
            guard fm.isReadableFile(atPath: path) else {
                throw SpeechGraphError("grammar not found: \(path)", parameter: "grammar")
            }
            let spec = try LMSpec(contentsOf: path)
            guard build else { return (path, nil, nil) }
            directory = try SphinxLanguageModels.built(spec, dictionary: generalDictionary, notes: notes)
        }
        let jsgf = directory + "/grammar.jsgf"
        guard fm.fileExists(atPath: jsgf) else {
            throw SpeechGraphError(
                "\(directory) holds no grammar.jsgf: build it with 'speechgraph lm build SPEC -o \(directory)'",
                parameter: "grammar")
        }
        let words = directory + "/words.dict"
        return (jsgf, fm.fileExists(atPath: words) ? words : nil, directory)
    }

    init(directory: String, weight: Double) throws {
        let fm = FileManager.default
        guard let lm = ["lm.bin", "lm.arpa"].map({ "\(directory)/\($0)" }).first(where: fm.fileExists) else {
            throw SpeechGraphError(
                "\(directory) holds no language model (lm.bin or lm.arpa): build one with "
                    + "'speechgraph lm build SPEC -o \(directory)'", parameter: "lm")
        }
        let words = "\(directory)/words.dict"
        self.init(lm: lm, dict: fm.fileExists(atPath: words) ? words : nil, weight: weight)
    }
}

/// Building and caching models from specs, with PocketSphinx's binary writer.
public enum SphinxLanguageModels {
    /// The words of an ARPA or binary model, without the sentence markers and the unknown word; none when
    /// PocketSphinx cannot read it.
    static func words(of path: String) -> [String] {
        SphinxLog.loading.lock()
        defer { SphinxLog.loading.unlock() }
        SphinxLog.silence()
        guard let logmath = logmath_init(1.0001, 0, 0) else { return [] }
        defer { logmath_free(logmath) }
        guard let model = ngram_model_read(nil, path, NGRAM_AUTO, logmath) else { return [] }
        defer { ngram_model_free(model) }
        guard let counts = ngram_model_get_counts(model) else { return [] }
        let markers: Set<String> = ["<s>", "</s>", "<unk>", "<UNK>", "<sil>"]
        return (0..<Int32(counts[0])).compactMap { wid in
            ngram_word(model, wid).map { String(cString: $0) }.flatMap { markers.contains($0) ? nil : $0 }
        }
    }

    /// The file of `lexicon` (a model's words from `general`) in the cache (`cacheEntry`: HASH/words.dict), written
    /// there first when it is not yet; the hash covers the model file and the dictionary as they are now (their
    /// stamps). nil when it cannot be written (the decoder then reads the general one).
    static func vocabularyDictionary(_ lexicon: Lexicon, of lm: String, general: String) -> String? {
        let key = "vocabulary 2\n\(FileStamp(lm))\n\(FileStamp(general))\n"
        let written = { (directory: String) in FileManager.default.fileExists(atPath: "\(directory)/words.dict") }
        let directory = try? cacheEntry(key, complete: written) {
            try FileManager.default.createDirectory(atPath: $0, withIntermediateDirectories: true)
            try lexicon.text.write(toFile: "\($0)/words.dict", atomically: false, encoding: .utf8)
        }
        return directory.map { "\($0)/words.dict" }
    }

    /// The cache's directory for `key` ($XDG_CACHE_HOME, or ~/.cache, /speechgraph/lm/HASH, the key's FNV-1a hash),
    /// made first when `complete` does not hold for it: `make` writes a directory beside it, which is renamed into
    /// place (a second process making the same entry meanwhile does no harm), and then the cache's old entries are
    /// pruned (`SpecCache`). Each entry made adds one: the cache keeps the recent ones.
    static func cacheEntry(_ key: String, complete: (String) -> Bool, make: (String) throws -> Void) throws -> String {
        let fm = FileManager.default
        let cache = UserCache.directory() ?? (NSHomeDirectory() + "/.cache/speechgraph")
        let directory = "\(cache)/lm/" + String(fnv1a(key), radix: 16)
        if complete(directory) {
            SpecCache.markUsed(directory)
            return directory
        }
        let temporary = "\(directory).\(getpid()).\(UInt32.random(in: 0...UInt32.max))"
        do {
            try make(temporary)
            try? fm.createDirectory(atPath: PathNames.folder(of: directory), withIntermediateDirectories: true)
            if rename(temporary, directory) != 0 {
                let reason = String(cString: strerror(errno))
                try? fm.removeItem(atPath: temporary)
                guard complete(directory) else { throw LMBuildError("cannot put the model in \(directory): \(reason)") }
            }
        } catch {
            try? fm.removeItem(atPath: temporary)
            throw error
        }
        SpecCache.prune("\(cache)/lm")
        return directory
    }

    /// FNV-1a, 64 bits: the cache's names.
    static func fnv1a(_ key: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return hash
    }

    /// Writes an ARPA model in PocketSphinx's binary form (what `sphinx_lm_convert` does), which loads faster.
    public static func writeBinary(arpa: String, to binary: String) throws {
        SphinxLog.loading.lock()
        defer { SphinxLog.loading.unlock() }
        guard let logmath = logmath_init(1.0001, 0, 0) else { throw LMBuildError("cannot set up log arithmetic") }
        defer { logmath_free(logmath) }
        var failure: String?
        let reason = SphinxLog.capture {
            guard let model = ngram_model_read(nil, arpa, NGRAM_ARPA, logmath) else {
                failure = "PocketSphinx cannot read \(arpa)"
                return
            }
            defer { ngram_model_free(model) }
            if ngram_model_write(model, binary, NGRAM_BIN) != 0 { failure = "PocketSphinx cannot write \(binary)" }
        }
        if let failure { throw LMBuildError("\(failure): \(reason)") }
    }

    /// Builds a spec into a model directory: `lm.arpa`, `lm.bin`, `words.dict`, `spec.lmspec`.
    public static func build(_ spec: LMSpec, into directory: String, dictionary: String) throws -> LMBuilder.Report {
        try LMBuilder.build(spec, into: directory, dictionary: dictionary, binaryWriter: writeBinary)
    }

    /// The model directory of a spec in the cache (`cacheEntry`: HASH), built there first when it is not yet. The
    /// hash covers the spec, the dictionary file (its stamp) and the builder. A build made here adds its warnings
    /// (guessed pronunciations) to `notes`, as `speechgraph lm build` prints them.
    public static func built(_ spec: LMSpec, dictionary: String, notes: BuildNotes? = nil) throws -> String {
        let key = "builder 3\n\(FileStamp(dictionary))\n\(spec.source)"
        // Built and complete (every file is written before the directory is renamed into place).
        func complete(_ dir: String) -> Bool {
            ["lm.bin", "words.dict", "grammar.jsgf"].allSatisfy {
                FileManager.default.fileExists(atPath: "\(dir)/\($0)")
            }
        }
        do {
            return try cacheEntry(key, complete: complete) {
                let report = try build(spec, into: $0, dictionary: dictionary)
                notes?.lines += report.guessWarnings(spec, file: spec.phrases.first?.location?.file ?? "phrases")
            }
        } catch {
            throw SpeechGraphError("cannot build the language model: \(error)", parameter: "lm")
        }
    }
}

extension SphinxDecoder {
    /// Interpolates the domain model with the general one: words of the domain dictionary the general one
    /// lacks (or pronounces otherwise) are added, then the mixture becomes the decoder's search. Called once,
    /// right after loading, with PocketSphinx's log captured.
    static func interpolate(_ ps: OpaquePointer, general: String?, domain: DomainModel) -> Bool {
        let words = domain.dict.flatMap { try? Lexicon(dictionary: $0) }?.entries ?? [:]
        for word in words.keys.sorted() {
            for pronunciation in words[word]! {
                let phones = pronunciation.joined(separator: " ")
                // The pronunciations the decoder has for this word: word, word(2), word(3), ...
                var known: [String] = []
                while true {
                    let name = known.isEmpty ? word : "\(word)(\(known.count + 1))"
                    guard let p = ps_lookup_word(ps, name) else { break }
                    known.append(String(cString: p))
                    free(p)
                }
                if known.contains(phones) { continue }
                let name = known.isEmpty ? word : "\(word)(\(known.count + 1))"
                if ps_add_word(ps, name, phones, 0) < 0 { return false }
            }
        }
        let config = ps_get_config(ps)
        let logmath = ps_get_logmath(ps)
        guard let general, let generalModel = ngram_model_read(config, general, NGRAM_AUTO, logmath) else {
            return false
        }
        defer { ngram_model_free(generalModel) }
        guard let domainModel = ngram_model_read(config, domain.lm, NGRAM_AUTO, logmath) else { return false }
        defer { ngram_model_free(domainModel) }
        var models: [OpaquePointer?] = [generalModel, domainModel]
        let names = [strdup("general"), strdup("domain")]
        defer { for name in names { free(name) } }
        var namePointers: [UnsafeMutablePointer<CChar>?] = names
        // PocketSphinx mixes the models' scores after each is raised to the language weight (-lw): P_d^lw and
        // P_g^lw. Raising the weights too, (w P_d)^lw + ((1 - w) P_g)^lw, keeps the mixture close to the
        // linear interpolation (w P_d + (1 - w) P_g)^lw wherever one model dominates, as it does for a
        // domain's words; with the weights as they are, 'weight' would hardly matter.
        let lw = cmd_ln_float_r(config, "-lw")
        let top = max(domain.weight, 1 - domain.weight)
        let weights: [Float] = [Float(pow((1 - domain.weight) / top, lw)), Float(pow(domain.weight / top, lw))]
        let set = models.withUnsafeMutableBufferPointer { m in
            namePointers.withUnsafeMutableBufferPointer { n in
                ngram_model_set_init(config, m.baseAddress, n.baseAddress, weights, 2)
            }
        }
        guard let set else { return false }
        defer { ngram_model_free(set) }  // the search keeps its own reference
        return ps_set_lm(ps, "interpolated", set) == 0 && ps_set_search(ps, "interpolated") == 0
    }
}

/// What building a language model on first use had to say (guessed pronunciations): a recognizer reports them
/// as its `notes`.
public final class BuildNotes {
    public var lines: [String] = []
    public init() {}
}
