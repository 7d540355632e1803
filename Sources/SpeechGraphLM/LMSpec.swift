import Foundation
import SpeechGraphCore

/// A language-model spec (`.lmspec`): the data a domain language model is built from, in the style of the
/// graph language. Apple's `SFCustomLanguageModelData` holds the same: phrases with counts, templates over
/// classes with a sample count, custom pronunciations, a locale.
///
/// ```
/// locale "en-US"
/// phrase "Play the Albin counter gambit" { count: 10 }
/// class piece = pawn, rook, knight, bishop, queen, king
/// class rank = 1 to 8                       # numbers are spoken as words
/// template "<piece> to <royal> <piece> <rank>" { count: 10000 }
/// pronounce "Winawer" { xsampa: "w I n aU @r" }
/// pronounce "Caro" { cmu: "K AA R OW" }
/// ```
public struct LMSpec: Sendable, Equatable {
    public struct Phrase: Sendable, Equatable {
        public var text: String
        public var count: Int
        public var location: SourceLocation?
        public init(_ text: String, count: Int = 1, location: SourceLocation? = nil) {
            self.text = text
            self.count = count
            self.location = location
        }
    }

    /// `"<piece> to <royal> <piece> <rank>"`: every class reference is replaced by each of its values;
    /// `count` samples are spread evenly over the expansions (nil: each expansion once).
    public struct Template: Sendable, Equatable {
        public var text: String
        public var count: Int?
        public var location: SourceLocation?
        public init(_ text: String, count: Int? = nil, location: SourceLocation? = nil) {
            self.text = text
            self.count = count
            self.location = location
        }
    }

    /// A pronunciation of a word, in the model's phones (ARPAbet, as CMUdict writes them, without stress).
    public struct Pronunciation: Sendable, Equatable {
        public var word: String
        public var phones: [String]
        public var location: SourceLocation?
        public init(word: String, phones: [String], location: SourceLocation? = nil) {
            self.word = word
            self.phones = phones
            self.location = location
        }
    }

    public var locale = "en-US"
    /// The n-gram order of the model built from it.
    public var order = 3
    public var phrases: [Phrase] = []
    public var classes: [String: [String]] = [:]
    /// Where each class was defined, when read from a file.
    public var classLocations: [String: SourceLocation] = [:]
    public var templates: [Template] = []
    public var pronunciations: [Pronunciation] = []

    public init() {}

    /// The locales a model can be built for: the installed acoustic model's.
    public static let supportedLocales = ["en-US"]

    /// The supported locale `identifier` names (`en_US`, `en-us`), or an error that lists them.
    public static func supportedLocale(_ identifier: String) -> Result<String, LMBuildError> {
        let normal = identifier.replacingOccurrences(of: "_", with: "-").lowercased()
        if let known = supportedLocales.first(where: { $0.lowercased() == normal }) { return .success(known) }
        return .failure(
            LMBuildError("no model for locale '\(identifier)'; installed: " + supportedLocales.joined(separator: ", ")))
    }

    /// Reads a spec file; errors come as `file:line:col: error:` diagnostics.
    public init(contentsOf path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            let fm = FileManager.default
            let reason =
                !fm.fileExists(atPath: path)
                ? "no such file" : fm.isDirectory(path) ? "it is a directory" : PathNames.unreadableReason(path)
            throw GraphError(Diagnostic.error("cannot read language-model spec \(path): \(reason)", at: nil))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            let at = SourceLocation.firstInvalidUTF8(in: data, file: path)
            throw GraphError(
                Diagnostic.error(
                    "\(path) is not UTF-8 text: a byte here is not UTF-8",
                    at: at ?? SourceLocation(file: path, line: 1, column: 1)))
        }
        self = try LMSpec(source: text, file: path)
    }

    /// Parses spec text. Every problem is reported at once, in file order; warnings (a class no template
    /// uses) are in `warnings`.
    public init(source: String, file: String = "<spec>") throws {
        var parser = LMSpecParser(text: source, file: file)
        self = parser.parse()
        try parser.diagnostics.throwIfErrors()
        warnings = parser.diagnostics.sorted.filter { $0.severity != .error }
    }

    /// Warnings found while parsing.
    public var warnings: [Diagnostic] = []

    public static func == (a: LMSpec, b: LMSpec) -> Bool {
        a.locale == b.locale && a.order == b.order && a.phrases == b.phrases && a.classes == b.classes
            && a.templates == b.templates && a.pronunciations == b.pronunciations
    }

    /// The spec as text that parses back to the same spec (what the Swift builder writes).
    public var source: String {
        let quoted = graphQuoted
        var lines = ["locale \(quoted(locale))"]
        if order != 3 { lines.append("order \(order)") }
        for p in phrases { lines.append("phrase \(quoted(p.text)) { count: \(p.count) }") }
        for name in classes.keys.sorted() {
            lines.append("class \(name) = " + classes[name]!.map(quoted).joined(separator: ", "))
        }
        for t in templates {
            lines.append("template \(quoted(t.text))" + (t.count.map { " { count: \($0) }" } ?? ""))
        }
        for p in pronunciations {
            lines.append("pronounce \(quoted(p.word)) { cmu: \(quoted(p.phones.joined(separator: " "))) }")
        }
        return lines.joined(separator: "\n") + "\n"
    }
}

/// The `.lmspec` parser, on the graph language's lexer.
struct LMSpecParser {
    private var tokens: [Token]
    private var position = 0
    private(set) var diagnostics: DiagnosticList
    private let file: String
    /// The text's lines (CR LF and CR as line ends, as the lexer takes them), to place errors inside a string.
    private let lines: [[Unicode.Scalar]]

    init(text: String, file: String) {
        lines = Lexer.scalars(normalizingLineEnds: text).split(separator: "\n", omittingEmptySubsequences: false)
            .map(Array.init)
        var lexer = Lexer(text: text, file: file)
        tokens = lexer.tokenize()
        diagnostics = lexer.diagnostics
        self.file = file
    }

    private var current: Token { tokens[position] }
    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }

    private mutating func skipToNextLine() {
        while true {
            switch current.kind {
            case .newline:
                advance()
                return
            case .end: return
            default: advance()
            }
        }
    }

    private mutating func expectEndOfStatement() {
        if unclosedBlock {
            // The block's error said it; the next statement has begun.
            unclosedBlock = false
            return
        }
        switch current.kind {
        case .newline: advance()
        case .end: break
        default:
            diagnostics.error("expected the end of the line, found \(current.display)", at: current.location)
            skipToNextLine()
        }
    }

    /// A string (or a bare word, where `allowWord`) as text.
    private mutating func text(_ what: String, allowWord: Bool = false) -> Located<String>? {
        let token = current
        switch token.kind {
        case .string(let parts):
            advance()
            var s = ""
            for part in parts {
                switch part {
                case .literal(let l): s += l
                case .variable(let name, _):
                    diagnostics.error(
                        "'${\(name)}' is not expanded in a language-model spec (write '\\$' for a dollar sign)",
                        at: token.location)
                }
            }
            return Located(s, at: token.location)
        case .identifier(let w) where allowWord:
            advance()
            return Located(w, at: token.location)
        default:
            diagnostics.error("expected \(what), found \(current.display)", at: current.location)
            return nil
        }
    }

    private mutating func positiveInteger(_ what: String, upTo limit: Int = 100_000_000) -> Int? {
        guard case .number(let v, let t) = current.kind else {
            diagnostics.error("expected \(what) (a whole number), found \(current.display)", at: current.location)
            switch current.kind {
            case .comma, .newline, .rightBrace, .end: break
            default: advance()  // the value in its place: one mistake, one error
            }
            return nil
        }
        let location = current.location
        advance()
        guard v >= 1, v <= Double(limit), v == v.rounded() else {
            diagnostics.error("\(what) must be a whole number from 1 to \(limit), not \(t)", at: location)
            return nil
        }
        return Int(v)
    }

    /// A block was left unclosed where the next statement begins (its statement needs no end of line).
    private var unclosedBlock = false

    /// The words that start a statement.
    static let statements = ["locale", "order", "phrase", "class", "template", "pronounce"]

    /// `{ key: value, ... }` after a phrase, template or pronunciation: the keys it allows, each read by `read`.
    private mutating func block(_ allowed: [String], _ read: (inout LMSpecParser, Located<String>) -> Void) {
        guard case .leftBrace = current.kind else { return }
        let opened = current.location
        advance()
        while true {
            var newLine = false
            while case .newline = current.kind {
                advance()
                newLine = true
            }
            switch current.kind {
            case .rightBrace:
                advance()
                return
            case .end:
                diagnostics.error(
                    "expected '}' to close the block opened at \(opened.line):\(opened.column)", at: current.location)
                return
            case .identifier(let key) where newLine && Self.statements.contains(key) && !allowed.contains(key):
                // A line that starts a statement: the block before it was never closed (one error, not one per
                // line that follows).
                diagnostics.error(
                    "expected '}' to close the block opened at \(opened.line):\(opened.column)", at: current.location)
                unclosedBlock = true
                return
            case .identifier(let key):
                let keyLocation = current.location
                advance()
                guard allowed.contains(key) else {
                    diagnostics.error(
                        "unknown setting '\(key)'\(didYouMean(key, allowed)); expected "
                            + allowed.map { "'\($0)'" }.joined(separator: " or "), at: keyLocation)
                    skipSetting()
                    continue
                }
                guard case .colon = current.kind else {
                    diagnostics.error("expected ':' after '\(key)', found \(current.display)", at: current.location)
                    skipSetting()
                    continue
                }
                advance()
                read(&self, Located(key, at: keyLocation))
                if case .comma = current.kind { advance() }
            default:
                diagnostics.error("expected a setting name or '}', found \(current.display)", at: current.location)
                advance()
                skipSetting()
            }
        }
    }

    /// Past the rest of a setting found wrong, to the next one, the block's end or the line's: one error each.
    private mutating func skipSetting() {
        while !(current.kind == .comma || current.kind == .newline || current.kind == .rightBrace
            || current.kind == .end)
        {
            advance()
        }
        if case .comma = current.kind { advance() }
    }

    mutating func parse() -> LMSpec {
        var spec = LMSpec()
        var classLocations: [String: SourceLocation] = [:]
        var localeSeen = false
        let keywords = Self.statements
        while true {
            while case .newline = current.kind { advance() }
            guard case .identifier(let keyword) = current.kind else {
                if case .end = current.kind { break }
                diagnostics.error(
                    "expected a statement ('phrase', 'template', 'class', 'pronounce', 'locale' or 'order'), "
                        + "found \(current.display)", at: current.location)
                skipToNextLine()
                continue
            }
            let location = current.location
            advance()
            switch keyword {
            case "locale":
                guard let l = text("a locale such as \"en-US\"", allowWord: true) else {
                    skipToNextLine()
                    continue
                }
                switch LMSpec.supportedLocale(l.value) {
                case .success(let known): spec.locale = known
                case .failure(let e): diagnostics.error(e.description, at: l.location)
                }
                if localeSeen { diagnostics.error("the locale is set twice", at: location) }
                localeSeen = true
            case "order":
                if let n = positiveInteger("an n-gram order", upTo: 5) { spec.order = n }
            case "phrase":
                guard let t = text("a phrase in quotes") else {
                    skipToNextLine()  // one mistake, one error (not also "expected the end of the line")
                    continue
                }
                var count = 1
                block(["count"]) { p, _ in count = p.positiveInteger("a count") ?? count }
                if LMWords.words(of: t.value).isEmpty {
                    diagnostics.error("the phrase has no words", at: t.location)
                } else if !LMTemplate.references(in: t.value).isEmpty {
                    // Read as a phrase, '<room>' would be the word 'room'.
                    diagnostics.error(
                        "a phrase names no classes: write 'template' for one with '<class>' in it", at: t.location)
                }
                spec.phrases.append(.init(t.value, count: count, location: t.location))
            case "template":
                guard let t = text("a template in quotes, such as \"<piece> to <rank>\"") else {
                    skipToNextLine()
                    continue
                }
                var count: Int?
                block(["count"]) { p, _ in count = p.positiveInteger("a count") }
                spec.templates.append(.init(t.value, count: count, location: t.location))
            case "class":
                guard case .identifier(let name) = current.kind else {
                    diagnostics.error(
                        "expected a class name after 'class', found \(current.display)", at: current.location)
                    skipToNextLine()
                    continue
                }
                advance()
                guard case .equals = current.kind else {
                    diagnostics.error(
                        "expected '=' and the class's values after '\(name)', found \(current.display)",
                        at: current.location)
                    skipToNextLine()
                    continue
                }
                advance()
                let errors = diagnostics.all.count
                let values = classValues()
                if let earlier = classLocations[name] {
                    diagnostics.error("class '\(name)' is defined twice (first at \(earlier))", at: location)
                } else if values.isEmpty, diagnostics.all.count == errors {  // not when its values were wrong
                    diagnostics.error("class '\(name)' has no values", at: location)
                }
                classLocations[name] = classLocations[name] ?? location
                spec.classes[name] = spec.classes[name] ?? values
                continue  // classValues ends the statement
            case "pronounce":
                guard let word = text("the word to pronounce", allowWord: true) else {
                    skipToNextLine()
                    continue
                }
                if LMWords.words(of: word.value).count != 1 {
                    diagnostics.error("'pronounce' takes one word, not '\(word.value)'", at: word.location)
                }
                var found = false
                let errors = diagnostics.all.count
                block(["xsampa", "cmu", "ipa"]) { p, key in
                    guard let phones = p.text("a pronunciation in quotes") else { return }
                    found = true
                    do {
                        let arpabet: [String]
                        switch key.value {
                        case "xsampa": arpabet = try Phones.fromXSAMPA(phones.value)
                        case "ipa": arpabet = try Phones.fromIPA(phones.value)
                        default: arpabet = try Phones.fromCMU(phones.value)
                        }
                        spec.pronunciations.append(
                            .init(
                                word: LMWords.words(of: word.value).first ?? word.value.lowercased(),
                                phones: arpabet, location: word.location))
                    } catch {
                        p.diagnostics.error("\(error)", at: phones.location)
                    }
                }
                if !found, diagnostics.all.count == errors {  // not when the block said what was wrong
                    diagnostics.error(
                        "expected the pronunciation: { xsampa: \"...\" }, { cmu: \"...\" } or { ipa: \"...\" }",
                        at: current.location)
                }
            default:
                diagnostics.error(
                    "unknown statement '\(keyword)'\(didYouMean(keyword, keywords)); expected "
                        + "'phrase', 'template', 'class', 'pronounce', 'locale' or 'order'", at: location)
                skipToNextLine()
                continue
            }
            expectEndOfStatement()
        }
        spec.classLocations = classLocations
        checkTemplates(&spec, classLocations)
        if spec.phrases.isEmpty && spec.templates.isEmpty, !diagnostics.hasErrors {
            diagnostics.error(
                "the spec has no phrases and no templates: a language model needs some text",
                at: SourceLocation(file: file, line: 1, column: 1))
        }
        return spec
    }

    /// `pawn, rook, "queen side", 1 to 8`: words, strings and number ranges (spoken as words).
    private mutating func classValues() -> [String] {
        var values: [String] = []
        while true {
            switch current.kind {
            case .identifier(let w):
                values.append(w)
                advance()
            case .string:
                if let t = text("a value") { values.append(t.value) }
            case .number(let v, let t):
                let location = current.location
                advance()
                guard v >= 0, v == v.rounded(), v < 1_000_000 else {
                    diagnostics.error(
                        "a class's numbers must be whole numbers from 0 to 999999, not \(t)", at: location)
                    break
                }
                if case .identifier("to") = current.kind {
                    advance()
                    guard case .number(let w, let u) = current.kind else {
                        diagnostics.error(
                            "expected the number that ends the range, found \(current.display)", at: current.location)
                        skipToNextLine()
                        return values
                    }
                    let endLocation = current.location
                    advance()
                    guard w == w.rounded(), w >= v, w - v < 10_000 else {
                        diagnostics.error(
                            "the range \(t) to \(u) must go up, by at most 10000 numbers", at: endLocation)
                        break
                    }
                    values += (Int(v)...Int(w)).map(String.init)
                } else {
                    values.append(String(Int(v)))
                }
            default:
                diagnostics.error(
                    "expected a class value (a word, a string or a number), found \(current.display)",
                    at: current.location)
                skipToNextLine()
                return values
            }
            switch current.kind {
            case .comma:
                advance()
                while case .newline = current.kind { advance() }  // a long list may go on over lines
            case .newline:
                advance()
                return values
            case .end: return values
            default:
                diagnostics.error("expected ',' or the end of the line, found \(current.display)", at: current.location)
                skipToNextLine()
                return values
            }
        }
    }

    /// Where the character at `offset` of the string written at `string` (its opening quote) is in the file: each
    /// escape (`\"`, `\t`, `\\`) is two characters there for one in the string.
    private func location(ofOffset offset: Int, inStringAt string: SourceLocation) -> SourceLocation {
        guard string.line >= 1, string.line <= lines.count else { return string }
        let line = lines[string.line - 1]
        var i = string.column  // 0-based: just after the quote
        for _ in 0..<offset where i < line.count { i += line[i] == "\\" ? 2 : 1 }
        return SourceLocation(file: string.file, line: string.line, column: i + 1)
    }

    /// Every `<class>` a template names must be defined; a class no template names is worth a warning.
    private mutating func checkTemplates(_ spec: inout LMSpec, _ classLocations: [String: SourceLocation]) {
        var used = Set<String>()
        for t in spec.templates {
            guard let location = t.location else { continue }
            for (name, offset) in LMTemplate.references(in: t.text) {
                used.insert(name)
                if spec.classes[name] == nil {
                    let at = self.location(ofOffset: offset, inStringAt: location)
                    diagnostics.error(
                        "template uses class '<\(name)>', which is not defined\(didYouMean(name, spec.classes.keys)); "
                            + "define it with: class \(name) = ...", at: at)
                }
            }
            // A '<' that starts no reference (`<room`, `<room >`) would be read as the word 'room'.
            let starts = Set(LMTemplate.references(in: t.text).map(\.offset))
            for (offset, c) in t.text.enumerated() where c == "<" && !starts.contains(offset) {
                let at = self.location(ofOffset: offset, inStringAt: location)
                diagnostics.error(
                    "'<' that names no class: a class is written '<name>' (letters, digits and '_', closed by '>')",
                    at: at)
            }
            if LMTemplate.pieces(of: t.text).isEmpty {
                diagnostics.error("the template has no words", at: location)
            }
            // More combinations than are listed: each of `count` samples is drawn, and held, one by one.
            if let count = t.count, count > LMTemplate.sampleLimit,
                LMTemplate.expansionCount(of: t.text, classes: spec.classes) > LMTemplate.enumerationLimit
            {
                diagnostics.error(
                    "the template has more than \(LMTemplate.enumerationLimit) combinations, so its samples are "
                        + "drawn: at most \(LMTemplate.sampleLimit) of them (a model from a million samples takes "
                        + "about 10 s to build), not \(count)", at: location)
            }
        }
        for (name, location) in classLocations where !used.contains(name) {
            diagnostics.append(Diagnostic(.warning, at: location, "class '\(name)' is used by no template"))
        }
    }
}
