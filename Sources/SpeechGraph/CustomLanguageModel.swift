import Foundation

/// Custom language-model data, built in Swift as Apple's `SFCustomLanguageModelData` is (the SpokenWord
/// sample's `datagenerator`): phrases with counts, templates over classes, custom pronunciations. It writes
/// the same spec `speechgraph lm build` reads (`export(to:)`), or builds the model directory the recognizer's
/// `lm` takes (`build(into:)`).
///
/// ```swift
/// let data = SFCustomLanguageModelData(locale: Locale(identifier: "en_US"), identifier: "chess", version: "1.0") {
///     SFCustomLanguageModelData.PhraseCount(phrase: "Play the Albin counter gambit", count: 10)
///     SFCustomLanguageModelData.PhraseCountsFromTemplates(classes: ["piece": ["pawn", "rook"], "rank": ["1", "2"]]) {
///         SFCustomLanguageModelData.TemplatePhraseCountGenerator.Template("<piece> to <rank>", count: 100)
///     }
///     SFCustomLanguageModelData.CustomPronunciation(grapheme: "Winawer", phonemes: ["w I n aU @r"])
/// }
/// try await data.export(to: URL(filePath: "/tmp/chess.lmspec"))
/// ```
public struct SFCustomLanguageModelData: Sendable {
    public let locale: Locale
    public let identifier: String
    public let version: String
    public private(set) var items: [any DataInsertable]

    public init(
        locale: Locale, identifier: String, version: String,
        @DataInsertableBuilder _ content: () -> [any DataInsertable]
    ) {
        self.locale = locale
        self.identifier = identifier
        self.version = version
        self.items = content()
    }

    /// Adds more data (Apple's `insert(phraseCount:)` and friends, in one).
    public mutating func insert(_ item: any DataInsertable) { items.append(item) }

    /// Something the data holds.
    public protocol DataInsertable: Sendable {
        func insert(into spec: inout LMSpec) throws
    }

    @resultBuilder
    public enum DataInsertableBuilder {
        public static func buildExpression(_ item: any DataInsertable) -> [any DataInsertable] { [item] }
        public static func buildBlock(_ parts: [any DataInsertable]...) -> [any DataInsertable] { parts.flatMap { $0 } }
        public static func buildOptional(_ part: [any DataInsertable]?) -> [any DataInsertable] { part ?? [] }
        public static func buildEither(first: [any DataInsertable]) -> [any DataInsertable] { first }
        public static func buildEither(second: [any DataInsertable]) -> [any DataInsertable] { second }
        public static func buildArray(_ parts: [[any DataInsertable]]) -> [any DataInsertable] { parts.flatMap { $0 } }
    }

    /// An exact phrase and how often the app expects it.
    public struct PhraseCount: DataInsertable {
        public let phrase: String
        public let count: Int
        public init(phrase: String, count: Int) {
            self.phrase = phrase
            self.count = count
        }
        public func insert(into spec: inout LMSpec) throws {
            guard count >= 1 else { throw LMBuildError("PhraseCount '\(phrase)': the count must be at least 1") }
            guard !LMWords.words(of: phrase).isEmpty else { throw LMBuildError("PhraseCount '\(phrase)' has no words") }
            spec.phrases.append(.init(phrase, count: count))
        }
    }

    /// Templates over classes: `"<piece> to <rank>"` with `piece` and `rank` from `classes`.
    public struct PhraseCountsFromTemplates: DataInsertable {
        public let classes: [String: [String]]
        public let templates: [TemplatePhraseCountGenerator.Template]
        public init(
            classes: [String: [String]],
            @TemplateBuilder _ templates: () -> [TemplatePhraseCountGenerator.Template]
        ) {
            self.classes = classes
            self.templates = templates()
        }
        public func insert(into spec: inout LMSpec) throws {
            for (name, values) in classes {
                guard LMTemplate.isClassName(name) else {
                    throw LMBuildError("class name '\(name)': letters, digits, '_' and '-' only")
                }
                if let existing = spec.classes[name], existing != values {
                    throw LMBuildError("class '\(name)' is defined twice, with different values")
                }
                spec.classes[name] = values
            }
            for t in templates {
                for (name, _) in LMTemplate.references(in: t.body) where classes[name] == nil {
                    throw LMBuildError("template '\(t.body)' uses class '<\(name)>', which is not defined")
                }
                guard t.count >= 1 else { throw LMBuildError("template '\(t.body)': the count must be at least 1") }
                spec.templates.append(.init(t.body, count: t.count))
            }
        }
    }

    @resultBuilder
    public enum TemplateBuilder {
        public static func buildExpression(_ t: TemplatePhraseCountGenerator.Template)
            -> [TemplatePhraseCountGenerator.Template]
        { [t] }
        public static func buildBlock(_ parts: [TemplatePhraseCountGenerator.Template]...)
            -> [TemplatePhraseCountGenerator.Template]
        { parts.flatMap { $0 } }
    }

    public enum TemplatePhraseCountGenerator {
        public struct Template: Sendable {
            public let body: String
            public let count: Int
            public init(_ body: String, count: Int) {
                self.body = body
                self.count = count
            }
        }
    }

    /// A word and its pronunciations, each in X-SAMPA as in Apple's sample (`"w I n aU @r"`).
    public struct CustomPronunciation: DataInsertable {
        public let grapheme: String
        public let phonemes: [String]
        public init(grapheme: String, phonemes: [String]) {
            self.grapheme = grapheme
            self.phonemes = phonemes
        }
        public func insert(into spec: inout LMSpec) throws {
            let words = LMWords.words(of: grapheme)
            guard words.count == 1 else { throw LMBuildError("CustomPronunciation takes one word, not '\(grapheme)'") }
            guard !phonemes.isEmpty else { throw LMBuildError("CustomPronunciation '\(grapheme)' has no phonemes") }
            for p in phonemes {
                do {
                    spec.pronunciations.append(.init(word: words[0], phones: try Phones.fromXSAMPA(p)))
                } catch {
                    throw LMBuildError("CustomPronunciation '\(grapheme)': \(error)")
                }
            }
        }
    }

    /// The data as a spec.
    public func spec() throws -> LMSpec {
        var spec = LMSpec()
        spec.locale = try LMSpec.supportedLocale(locale.identifier).get()
        for item in items { try item.insert(into: &spec) }
        guard !spec.phrases.isEmpty || !spec.templates.isEmpty else {
            throw LMBuildError("the data has no phrases and no templates: a language model needs some text")
        }
        return spec
    }

    /// Writes the spec (`.lmspec` text) that `speechgraph lm build` and the recognizer's `lm` read.
    public func export(to url: URL) async throws {
        try spec().source.write(to: url, atomically: true, encoding: .utf8)
    }

    /// Builds the model directory (lm.arpa, lm.bin, words.dict, grammar.jsgf, spec.lmspec) with the installed
    /// model's dictionary.
    @discardableResult
    public func build(into directory: URL) throws -> LMBuilder.Report {
        let general = try SphinxModel.resolve(
            model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
        return try SphinxLanguageModels.build(spec(), into: directory.path, dictionary: general.dict)
    }
}

/// Where a custom language model is, for a transcriber (Apple's `SFSpeechLanguageModel.Configuration`):
/// a spec or a model directory, and its weight against the general model.
public struct SFSpeechLanguageModel: Sendable {
    public struct Configuration: Sendable, Hashable {
        /// The model: a directory `prepareCustomLanguageModel` (or `SFCustomLanguageModelData.build(into:)`)
        /// builds, or a spec (`.lmspec`), built on first use.
        public var languageModel: URL
        /// Where `prepareCustomLanguageModel` also writes the model's pronunciations (a dictionary file), if given.
        public var vocabulary: URL?
        /// The domain model's weight (docs/lm.md): 1, the domain model alone; below 1, mixed with the general
        /// model, so that general speech is still recognised (0.4 by default).
        public var weight: Double
        public init(languageModel: URL, vocabulary: URL? = nil, weight: Double = 0.4) {
            self.languageModel = languageModel
            self.vocabulary = vocabulary
            self.weight = weight
        }
        public init(languageModel: URL, weight: Double) {
            self.init(languageModel: languageModel, vocabulary: nil, weight: weight)
        }
    }

    /// Builds the custom language model in `asset` (what `SFCustomLanguageModelData.export(to:)` wrote) into
    /// `configuration.languageModel` (a model directory; `vocabulary`, if set, gets its dictionary), with the
    /// installed model's dictionary. A directory already built from the same data is kept, unless `ignoresCache`.
    /// `clientIdentifier` is not used. Throws what is wrong with the data (`file:line:col: error:` for a spec).
    public static func prepareCustomLanguageModel(
        for asset: URL, clientIdentifier: String, configuration: Configuration, ignoresCache: Bool = false
    ) async throws {
        try await Task.detached { try prepare(asset, configuration, ignoresCache: ignoresCache) }.value
    }

    /// The same without a client identifier (the form of iOS 26 and later).
    public static func prepareCustomLanguageModel(
        for asset: URL, configuration: Configuration, ignoresCache: Bool = false
    ) async throws {
        try await Task.detached { try prepare(asset, configuration, ignoresCache: ignoresCache) }.value
    }

    /// As the `async` form, calling `completion` (on an arbitrary queue) with nil or the error.
    public static func prepareCustomLanguageModel(
        for asset: URL, clientIdentifier: String, configuration: Configuration,
        completion: @escaping (Error?) -> Void
    ) {
        prepareCustomLanguageModel(
            for: asset, clientIdentifier: clientIdentifier, configuration: configuration, ignoresCache: false,
            completion: completion)
    }

    public static func prepareCustomLanguageModel(
        for asset: URL, clientIdentifier: String, configuration: Configuration, ignoresCache: Bool,
        completion: @escaping (Error?) -> Void
    ) {
        let completion = Unchecked(completion)
        DispatchQueue.global().async {
            do {
                try prepare(asset, configuration, ignoresCache: ignoresCache)
                completion.value(nil)
            } catch {
                completion.value(error)
            }
        }
    }

    static func prepare(_ asset: URL, _ configuration: Configuration, ignoresCache: Bool) throws {
        let source: String
        do { source = try String(contentsOf: asset, encoding: .utf8) } catch {
            throw SpeechGraph.Error.unreadable("\(asset.path): \(PathNames.reason(error))")
        }
        let spec = try LMSpec(source: source, file: asset.path)
        let directory = configuration.languageModel
        // The build writes the spec it was built from: the same spec again is built already.
        let cached =
            !ignoresCache
            && (try? String(contentsOf: directory.appendingPathComponent("spec.lmspec"), encoding: .utf8))
                == spec.source
            && FileManager.default.fileExists(atPath: directory.appendingPathComponent("lm.bin").path)
        if !cached {
            let general = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            _ = try SphinxLanguageModels.build(spec, into: directory.path, dictionary: general.dict)
        }
        if let vocabulary = configuration.vocabulary {
            let words = try Data(contentsOf: directory.appendingPathComponent("words.dict"))
            try words.write(to: vocabulary, options: .atomic)
        }
    }
}
