import Foundation
import SpeechGraphCore

/// The JSGF grammar language read as PocketSphinx reads it: tokens, then a parser that reports each mistake.
extension JSGFCheck {
    struct Token {
        enum Kind: Equatable {
            case header, word, quoted, rule, tag, weight, end
            case symbol(Character)
        }
        var kind: Kind
        var text: String
        var location: SourceLocation
    }

    struct Parser {
        let text: [Unicode.Scalar]
        let file: String
        var i = 0
        var line = 1
        var column = 1
        var diagnostics = DiagnosticList()
        var defined: [String: SourceLocation] = [:]
        var referenced: [(String, SourceLocation)] = []
        /// The rules declared public.
        var publicRules = Set<String>()
        var hasPublic: Bool { !publicRules.isEmpty }
        /// What the `grammar` statement names.
        var grammarName: String?
        /// The rules each `import` statement names, with their places.
        var imports: [(String, SourceLocation)] = []
        /// The words of the rules, with their places.
        var words: [(text: String, location: SourceLocation)] = []

        init(text: [Unicode.Scalar], file: String) {
            self.text = text
            self.file = file
        }

        var here: SourceLocation { SourceLocation(file: file, line: line, column: column) }

        mutating func advance() {
            if text[i] == "\n" {
                line += 1
                column = 1
            } else {
                if !text[i].properties.isWhitespace {
                    afterContent = SourceLocation(file: file, line: line, column: column + 1)
                }
                column += 1
            }
            i += 1
        }

        /// Just after the last character that is not a blank: where the end of the file is said to be (not on a
        /// line after the file's last newline, which an editor cannot go to).
        var afterContent: SourceLocation?

        static let special: Set<Unicode.Scalar> = [
            ";", "=", "|", "*", "+", "<", ">", "(", ")", "[", "]", "{", "}", "/", "\"",
        ]

        /// The token `next` gave last (nil: an error).
        var lastRead: Token?

        /// The next token, past whitespace and comments; nil after an error, said.
        mutating func next() -> Token? {
            lastRead = scan()
            return lastRead
        }

        mutating func scan() -> Token? {
            let contentBefore = afterContent
            while i < text.count {
                let c = text[i]
                if c.properties.isWhitespace {
                    advance()
                } else if c == "/" && i + 1 < text.count && text[i + 1] == "/" {
                    while i < text.count && text[i] != "\n" { advance() }
                } else if c == "/" && i + 1 < text.count && text[i + 1] == "*" {
                    let start = here
                    advance()
                    advance()
                    while i < text.count && !(text[i] == "*" && i + 1 < text.count && text[i + 1] == "/") { advance() }
                    guard i < text.count else {
                        diagnostics.error("a comment opened here is never closed with '*/'", at: start)
                        return nil
                    }
                    advance()
                    advance()
                } else {
                    break
                }
            }
            // Comments are not what the end of the file is said to be after: the last token is.
            afterContent = contentBefore
            let start = here
            guard i < text.count else { return Token(kind: .end, text: "", location: afterContent ?? start) }
            let c = text[i]
            func run(until close: Unicode.Scalar, what: String, kind: Token.Kind) -> Token? {
                var s = String(c)
                advance()
                while i < text.count && text[i] != close && text[i] != "\n" {
                    if text[i] == "\\" && i + 1 < text.count {
                        s.unicodeScalars.append(text[i])
                        advance()
                    }
                    s.unicodeScalars.append(text[i])
                    advance()
                }
                guard i < text.count && text[i] == close else {
                    diagnostics.error("\(what) opened here is not closed with '\(close)' on its line", at: start)
                    return nil
                }
                s.unicodeScalars.append(close)
                advance()
                return Token(kind: kind, text: s, location: start)
            }
            switch c {
            case "#":
                var s = ""
                while i < text.count && !text[i].properties.isWhitespace && text[i] != ";" {
                    s.unicodeScalars.append(text[i])
                    advance()
                }
                guard s == "#JSGF" else {
                    diagnostics.error("expected '#JSGF', found '\(s)'", at: start)
                    return nil
                }
                return Token(kind: .header, text: s, location: start)
            case "<":
                let name = run(until: ">", what: "a rule name", kind: .rule)
                // Said, and read on as a name: one mistake, one error.
                if name?.text == "<>" { diagnostics.error("a rule name is empty: '<>'", at: start) }
                return name
            case "\"": return run(until: "\"", what: "a quoted token", kind: .quoted)
            case "{":
                // A tag may span lines.
                var s = ""
                while i < text.count && text[i] != "}" {
                    s.unicodeScalars.append(text[i])
                    advance()
                }
                guard i < text.count else {
                    diagnostics.error("a tag opened here is not closed with '}'", at: start)
                    return nil
                }
                advance()
                return Token(kind: .tag, text: s + "}", location: start)
            case "/":
                var s = "/"
                advance()
                while i < text.count && text[i] != "/" && text[i] != "\n" {
                    s.unicodeScalars.append(text[i])
                    advance()
                }
                // PocketSphinx's scanner takes digits with at most one point and digits after it: not '1e5',
                // '+5', '5.' or ' 5 '.
                let number = s.dropFirst()
                let parts = number.split(separator: ".", omittingEmptySubsequences: false)
                let closed = i < text.count && text[i] == "/"
                guard closed, !number.isEmpty, parts.count <= 2, parts.count == 1 || !parts[1].isEmpty,
                    number.allSatisfy({ $0 == "." || ("0"..."9").contains($0) })
                else {
                    diagnostics.error(
                        "expected a weight: a number between slashes, in digits with at most one point (/10/, /0.5/)",
                        at: start)
                    if closed { advance() }  // past its closing '/', which would seem to open another
                    return nil
                }
                advance()
                return Token(kind: .weight, text: s + "/", location: start)
            default:
                if Self.special.contains(c) {
                    advance()
                    return Token(kind: .symbol(Character(c)), text: String(c), location: start)
                }
                var s = ""
                while i < text.count && !text[i].properties.isWhitespace && !Self.special.contains(text[i]) {
                    s.unicodeScalars.append(text[i])
                    advance()
                }
                return Token(kind: .word, text: s, location: start)
            }
        }

        mutating func parse() {
            guard let header = next() else { return }
            guard header.kind == .header else {
                diagnostics.error(
                    "expected the header '#JSGF V1.0;' first, found '\(header.text)'", at: header.location)
                return
            }
            // #JSGF version [encoding [locale]] ; on one line
            while true {
                guard let t = next() else { return }
                if t.kind == .symbol(";") { break }
                // The header may go on over lines (a newline is a blank); a statement after it means that its ';'
                // is missing.
                let statement =
                    t.kind == .rule || (t.kind == .word && ["grammar", "import", "public"].contains(t.text))
                if t.kind == .end || (statement && t.location.line != header.location.line) {
                    diagnostics.error(
                        "expected ';' to end the header, as in '#JSGF V1.0;'",
                        at: t.kind == .end ? t.location : header.location)
                    return
                }
            }
            while !atEnd {
                // A statement that goes wrong is said, and the check goes on after it (`recover`).
                guard let t = next() else {
                    recover()
                    continue
                }
                switch (t.kind, t.text) {
                case (.end, _):
                    atEnd = true
                case (.word, "grammar"), (.word, "import"):
                    guard let name = next(), name.kind == (t.text == "grammar" ? .word : .rule) else {
                        diagnostics.error(
                            t.text == "grammar"
                                ? "expected the grammar's name after 'grammar'"
                                : "expected a rule name (<grammar.rule>) after 'import'", at: t.location)
                        recover()
                        continue
                    }
                    if t.text == "grammar" {
                        grammarName = name.text
                    } else {
                        imports.append((name.text, name.location))
                    }
                    if !expect(";", after: "'\(t.text) \(name.text)'", at: name) { recover() }
                case (.word, "public"):
                    guard let name = next(), name.kind == .rule else {
                        diagnostics.error("expected a rule name (<name>) after 'public'", at: t.location)
                        recover()
                        continue
                    }
                    publicRules.insert(name.text)
                    if !rule(name) { recover() }
                case (.rule, _):
                    if !rule(t) { recover() }
                default:
                    diagnostics.error(
                        "expected a rule ('<name> = ...;' or 'public <name> = ...;'), 'grammar' or 'import', "
                            + "found '\(t.text)'", at: t.location)
                    recover()
                }
            }
            checkLeftRecursion()
        }

        /// The end of the file was read.
        var atEnd = false
        /// The rules each rule begins an alternative with, something following them, where it names them.
        var firstReferences: [String: [(String, SourceLocation)]] = [:]
        /// The reference that begins the current alternative of a rule, until it is known whether something follows.
        var leading: (String, SourceLocation)?

        /// Something follows the reference that begins the alternative: it is a left reference.
        mutating func confirmLeading(of rule: Token) {
            guard let l = leading else { return }
            firstReferences[rule.text, default: []].append(l)
            leading = nil
        }

        /// Rules that begin with themselves, through others or not (`<a> = <a> go | go;`): PocketSphinx takes them
        /// and recognises nothing. Each cycle said once, at its first rule's reference.
        mutating func checkLeftRecursion() {
            var said = Set<String>()
            for name in defined.keys.sorted(by: { defined[$0]! < defined[$1]! }) where !said.contains(name) {
                // Depth-first from `name`, through first references, back to it.
                var stack: [(rule: String, path: [String], at: SourceLocation?)] = [(name, [name], nil)]
                var visited = Set<String>()
                while let (rule, path, at) = stack.popLast() {
                    for (next, location) in firstReferences[rule] ?? [] {
                        if next == name {
                            let cycle = (path + [name]).joined(separator: " -> ")
                            diagnostics.error(
                                "rule \(name) begins with itself (\(cycle)), which PocketSphinx cannot search: it "
                                    + "recognises nothing; put the repetition at the end (<a> = go <a> | go;) or use "
                                    + "'+'", at: at ?? location)
                            said.formUnion(path)
                            stack = []
                            break
                        }
                        if visited.insert(next).inserted { stack.append((next, path + [next], at ?? location)) }
                    }
                }
            }
        }
        /// A rule whose `<name> =` ended the rule before it (which lacked its ';'): read next, by `recover`.
        var pendingRule: Token?

        /// After an error: past the ';' that ends the statement, or up to the next rule's `<name> =` (that rule
        /// is read then), so that the rest of the file is checked too: each error said, and each rule defined.
        mutating func recover() {
            // The token that went wrong may begin the next rule (`grammar g` without its ';', then `<a> = x;`).
            var previous: Token? = lastRead
            var beforePrevious: Token?
            // The error was at the ';' that ends the statement (`<a> = ;`, `public ;`): the next one starts here.
            if pendingRule == nil, lastRead?.kind == .symbol(";") { return }
            if lastRead?.kind == .end {
                atEnd = true
                return
            }
            while true {
                if let name = pendingRule {
                    pendingRule = nil
                    if ruleBody(name) { return }
                    continue
                }
                guard let t = next() else {
                    (previous, beforePrevious) = (nil, nil)
                    continue
                }
                switch t.kind {
                case .end:
                    atEnd = true
                    return
                case .symbol(";"):
                    return
                case .symbol("=") where previous?.kind == .rule:
                    if beforePrevious?.kind == .word && beforePrevious?.text == "public" {
                        publicRules.insert(previous!.text)
                    }
                    define(previous!)
                    pendingRule = previous
                default:
                    (previous, beforePrevious) = (t, previous)
                }
            }
        }

        mutating func expect(_ symbol: Character, after what: String, at previous: Token) -> Bool {
            guard let t = next() else { return false }
            guard t.kind == .symbol(symbol) else {
                diagnostics.error("expected '\(symbol)' after \(what), found '\(t.text)'", at: t.location)
                return false
            }
            return true
        }

        /// `<name> = alternatives ;` (the name read).
        mutating func rule(_ name: Token) -> Bool {
            define(name)
            guard expect("=", after: "rule \(name.text)", at: name) else { return false }
            return ruleBody(name)
        }

        mutating func define(_ name: Token) {
            if let first = defined[name.text] {
                diagnostics.error("rule \(name.text) is defined twice (first at line \(first.line))", at: name.location)
            }
            defined[name.text] = name.location
        }

        /// A rule's alternatives and its ';' (its `<name> =` read).
        mutating func ruleBody(_ name: Token) -> Bool {
            leading = nil
            guard let end = alternatives(closing: nil, opener: nil, rule: name) else { return false }
            guard end.kind == .symbol(";") else {
                diagnostics.error(
                    "expected ';' to end rule \(name.text), "
                        + "found '\(end.kind == .end ? "the end of the file" : end.text)'",
                    at: end.location)
                return false
            }
            return true
        }

        static let deepest = 100

        /// Alternatives up to `closing` (a ')' or ']', which `opener` opened) or, at the top, ';', in rule `rule`:
        /// returns the token that ended them.
        mutating func alternatives(closing: Character?, opener: Token?, rule: Token, depth: Int = 0) -> Token? {
            var items = 0
            var last: Token?
            var beforeLast: Token?
            while true {
                guard let t = next() else { return nil }
                defer {
                    beforeLast = last
                    last = t
                }
                switch t.kind {
                case .word:
                    words.append((t.text, t.location))
                    confirmLeading(of: rule)
                    items += 1
                case .quoted:
                    // PocketSphinx looks a quoted token up as one word, quotes and spaces included: no dictionary
                    // has it, and the model would not load.
                    let inside = t.text.dropFirst().dropLast()
                    diagnostics.error(
                        "PocketSphinx reads the quoted token \(t.text) as one word, quotes included, which no "
                            + "dictionary has: write \(inside.isEmpty ? "the words" : String(inside)) without quotes",
                        at: t.location)
                    confirmLeading(of: rule)
                    items += 1
                case .rule:
                    referenced.append((t.text, t.location))
                    confirmLeading(of: rule)
                    // The first item of an alternative of the rule itself: a left reference if something follows it
                    // (a reference that ends its sequence is right recursion, which PocketSphinx takes).
                    if depth == 0 && items == 0 { leading = (t.text, t.location) }
                    items += 1
                case .weight:
                    continue
                case .tag:
                    continue
                case .symbol("("), .symbol("["):
                    let close: Character = t.kind == .symbol("(") ? ")" : "]"
                    // Each level is a call: thousands would overflow the stack.
                    guard depth < Self.deepest else {
                        diagnostics.error(
                            "groups nested more than \(Self.deepest) deep in rule \(rule.text)", at: t.location)
                        return nil
                    }
                    confirmLeading(of: rule)
                    guard let end = alternatives(closing: close, opener: t, rule: rule, depth: depth + 1) else {
                        return nil
                    }
                    guard end.kind == .symbol(close) else {
                        diagnostics.error("'\(t.text)' opened here is not closed with '\(close)'", at: t.location)
                        return nil
                    }
                    items += 1
                case .symbol("*"), .symbol("+"):
                    confirmLeading(of: rule)  // repeated, it is followed by itself
                    guard items > 0 else {
                        diagnostics.error("'\(t.text)' must follow what it repeats", at: t.location)
                        return nil
                    }
                case .symbol("|"):
                    guard items > 0 else {
                        diagnostics.error("expected something before '|'", at: t.location)
                        return nil
                    }
                    items = 0
                    if depth == 0 { leading = nil }
                case .symbol(let c) where c == closing || (closing == nil && c == ";"):
                    if depth == 0 { leading = nil }
                    guard items > 0 else {
                        diagnostics.error("expected something before '\(c)'", at: t.location)
                        return nil
                    }
                    return t
                case .end:
                    return t
                case .symbol(";") where closing != nil:
                    // The rule ends with a group still open.
                    diagnostics.error(
                        "'\(opener?.text ?? "(")' opened here is not closed with '\(closing!)' before the ';' that "
                            + "ends rule \(rule.text)", at: opener?.location ?? t.location)
                    return nil
                case .symbol("=") where last?.kind == .rule:
                    // `<next> =`: a new rule, so the one before lacks its ';' (before its 'public', if it has one).
                    let at = beforeLast.flatMap { $0.kind == .word && $0.text == "public" ? $0.location : nil }
                    diagnostics.error(
                        "expected ';' to end rule \(rule.text) before rule \(last!.text) begins",
                        at: at ?? last!.location)
                    if at != nil { publicRules.insert(last!.text) }
                    define(last!)
                    pendingRule = last
                    return nil
                default:
                    diagnostics.error("unexpected '\(t.text)'", at: t.location)
                    return nil
                }
            }
        }
    }
}
