import Foundation

/// A token of the graph language, with the place where it starts.
public struct Token: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case identifier(String)
        case number(Double, text: String)
        /// A double-quoted string; `parts` keeps `${VAR:-default}` references for expansion.
        case string([StringPart])
        /// `${VAR}` or `${VAR:-default}` standing as a value on its own.
        case variable(name: String, fallback: String?)
        case arrow  // ->
        case equals  // =
        case colon  // :
        case comma  // ,
        case dot  // .
        case leftBrace  // {
        case rightBrace  // }
        case leftBracket  // [
        case rightBracket  // ]
        case newline
        case end
    }

    public var kind: Kind
    public var location: SourceLocation

    /// How the token reads in an error message.
    public var display: String {
        switch kind {
        case .identifier(let s): return "'\(s)'"
        case .number(_, let text): return "number '\(text)'"
        case .string: return "a string"
        case .variable(let name, _): return "'${\(name)}'"
        case .arrow: return "'->'"
        case .equals: return "'='"
        case .colon: return "':'"
        case .comma: return "','"
        case .dot: return "'.'"
        case .leftBrace: return "'{'"
        case .rightBrace: return "'}'"
        case .leftBracket: return "'['"
        case .rightBracket: return "']'"
        case .newline: return "end of line"
        case .end: return "end of file"
        }
    }
}

public enum StringPart: Sendable, Equatable {
    case literal(String)
    case variable(name: String, fallback: String?)
}

/// Turns graph-file text into tokens. Comments run from `#` to the end of the line.
package struct Lexer {
    private let scalars: [Unicode.Scalar]
    private let file: String
    private var index = 0
    private var line = 1
    private var column = 1
    package private(set) var diagnostics = DiagnosticList()

    package init(text: String, file: String) {
        self.scalars = Self.scalars(normalizingLineEnds: text)
        self.file = file
    }

    /// The text's characters with Windows (CR LF) and old Mac (CR) line ends as LF: lines are counted, and errors
    /// recovered from, as with LF (graph files, language-model specs and grammars alike).
    package static func scalars(normalizingLineEnds text: String) -> [Unicode.Scalar] {
        var scalars: [Unicode.Scalar] = []
        scalars.reserveCapacity(text.unicodeScalars.count)
        var afterCR = false
        for c in text.unicodeScalars {
            if c == "\n" && afterCR {
                afterCR = false
                continue
            }
            afterCR = c == "\r"
            scalars.append(afterCR ? "\n" : c)
        }
        return scalars
    }

    private var here: SourceLocation { SourceLocation(file: file, line: line, column: column) }
    private func peek(_ offset: Int = 0) -> Unicode.Scalar? {
        index + offset < scalars.count ? scalars[index + offset] : nil
    }
    private mutating func advance() {
        if scalars[index] == "\n" {
            line += 1
            column = 1
        } else {
            column += 1
        }
        index += 1
    }

    /// Quotes that are not the language's: curly ones, guillemets, the shell's single quote.
    private static let otherQuotes: Set<Unicode.Scalar> = [
        "\u{201C}", "\u{201D}", "\u{201E}", "\u{2018}", "\u{2019}", "\u{00AB}", "\u{00BB}", "'",
    ]

    /// The tokens of one character each (besides `->`, newlines and strings).
    private static let punctuation: [Unicode.Scalar: Token.Kind] = [
        "=": .equals, ":": .colon, ",": .comma, ".": .dot, "{": .leftBrace, "}": .rightBrace, "[": .leftBracket,
        "]": .rightBracket,
    ]

    /// Errors after which the rest of a file is not read.
    static let errorLimit = 1000

    package mutating func tokenize() -> [Token] {
        var tokens: [Token] = []
        while true {
            skipBlanksAndComments()
            let start = here
            guard let c = peek() else {
                // At the end of the last line that has something, not on a line after the file's last newline.
                let end = tokens.last.flatMap { $0.kind == .newline ? $0.location : nil } ?? start
                tokens.append(Token(kind: .end, location: end))
                return tokens
            }
            // A file that is not a graph (2 MB of stray characters took 10 s to say so, one error each).
            if diagnostics.all.count >= Self.errorLimit {
                diagnostics.error("too many errors: the rest of the file is not read (is it a graph file?)", at: start)
                tokens.append(Token(kind: .end, location: start))
                return tokens
            }
            switch c {
            case "\n", ";":  // (a CR is a "\n" by now: see init)
                advance()
                // Collapse runs of blank lines into one separator.
                if case .newline? = tokens.last?.kind {} else { tokens.append(Token(kind: .newline, location: start)) }
            case "-" where peek(1) == ">":
                advance()
                advance()
                tokens.append(Token(kind: .arrow, location: start))
            case "." where peek(1).map(isDigit) ?? false && !(index > 0 && isPathCharacter(scalars[index - 1])):
                // (After a word or a number it is part of an unquoted name, `en-70k-0.2.lm.bin`: said below.)
                // `.5 s`: one error that says how to write it, and the number read (the reading pass fails anyway).
                advance()
                var digits = ""
                while let d = peek(), isDigit(d) {
                    digits.unicodeScalars.append(d)
                    advance()
                }
                diagnostics.error("a number starts with a digit: write 0.\(digits), not .\(digits)", at: start)
                tokens.append(Token(kind: .number(Double("0." + digits) ?? 0, text: "0." + digits), location: start))
            case "=", ":", ",", ".", "{", "}", "[", "]":
                advance()
                tokens.append(Token(kind: Self.punctuation[c]!, location: start))
            case "\"":
                if let (parts, closedBrace) = lexString() {
                    tokens.append(Token(kind: .string(parts), location: start))
                    if let closedBrace { tokens.append(Token(kind: .rightBrace, location: closedBrace)) }
                }
            case _ where Self.otherQuotes.contains(c):
                // Quotes pasted from a web page or a word processor, or the shell's single quotes: one error, and
                // what they enclose read as the string that was meant (nothing more is said about it).
                advance()
                var text = ""
                while let d = peek(), d != "\n", !Self.otherQuotes.contains(d) {
                    text.unicodeScalars.append(d)
                    advance()
                }
                if let d = peek(), Self.otherQuotes.contains(d) { advance() }
                diagnostics.error(
                    "\(c == "'" ? "single" : "curly") quotes: a string goes in straight double quotes (\"\(text)\")",
                    at: start)
                tokens.append(Token(kind: .string([.literal(text)]), location: start))
            case "$" where peek(1) == "{":
                if case .variable(let name, let fallback)? = lexVariable() {
                    tokens.append(Token(kind: .variable(name: name, fallback: fallback), location: start))
                }
            case "-", "+", "0"..."9":
                if c == "-" || c == "+",
                    !(peek(1).map(isDigit) ?? false || (peek(1) == "." && (peek(2).map(isDigit) ?? false)))
                {
                    advance()
                    diagnostics.error("unexpected '\(c)'", at: start)
                } else {
                    tokens.append(lexNumber(start))
                }
            default:
                if isIdentifierStart(c) {
                    var s = ""
                    while let d = peek(), isIdentifierBody(d) {
                        // A '-' inside a name is allowed ("very-high"), but not when it starts '->'.
                        if d == "-", peek(1) == ">" { break }
                        s.unicodeScalars.append(d)
                        advance()
                    }
                    tokens.append(Token(kind: .identifier(s), location: start))
                } else if c == "/" && peek(1) == "/" {
                    // A C-style comment: one error, and the rest of the line skipped as a comment would be.
                    diagnostics.error("unexpected '//': comments start with '#'", at: start)
                    while let d = peek(), d != "\n" { advance() }
                } else if c == "/" || c == "~" {
                    tokens.append(lexBarePath(start, after: &tokens))
                } else {
                    advance()
                    diagnostics.error("unexpected character '\(Character(c))'", at: start)
                }
            }
        }
    }

    private mutating func skipBlanksAndComments() {
        while let c = peek() {
            if c == " " || c == "\t" {
                advance()
            } else if Self.isInvisible(c) {
                // Pasted from a web page or a word processor: it looks like a space but is not one. A byte order
                // mark at the very start is an editor's, and is skipped.
                if !(index == 0 && c == "\u{FEFF}") {
                    let name = (c.properties.name ?? "").lowercased()
                    let code = String(format: "U+%04X", c.value)
                    diagnostics.error(
                        "invisible character \(code)\(name.isEmpty ? "" : " (\(name))"): type a plain space or nothing",
                        at: here)
                }
                advance()
            } else if c == "#" {
                while let d = peek(), d != "\n" { advance() }
            } else {
                return
            }
        }
    }

    private mutating func lexNumber(_ start: SourceLocation) -> Token {
        var text = ""
        if let c = peek(), c == "-" || c == "+" {
            text.unicodeScalars.append(c)
            advance()
        }
        while let c = peek(), isDigit(c) || c == "." || c == "_" {
            if c != "_" { text.unicodeScalars.append(c) }
            advance()
        }
        if let c = peek(), c == "e" || c == "E", let n = peek(1),
            isDigit(n) || ((n == "-" || n == "+") && (peek(2).map(isDigit) ?? false))
        {
            text.unicodeScalars.append(c)
            advance()
            text.unicodeScalars.append(peek()!)
            advance()
            while let d = peek(), isDigit(d) {
                text.unicodeScalars.append(d)
                advance()
            }
        }
        guard let value = Double(text) else {
            diagnostics.error("malformed number '\(text)'", at: start)
            return Token(kind: .number(0, text: text), location: start)
        }
        guard value.isFinite else {
            diagnostics.error("number '\(text)' is too large", at: start)
            return Token(kind: .number(0, text: text), location: start)
        }
        return Token(kind: .number(value, text: text), location: start)
    }

    /// A string's parts; for an unterminated string that ends its line with `}`, also where that brace
    /// is, so the block it closes still closes (one mistake, one error).
    private mutating func lexString() -> ([StringPart], SourceLocation?)? {
        let start = here
        advance()  // opening quote
        var parts: [StringPart] = []
        var literal = ""
        var lastBrace: SourceLocation?
        var escapedQuote = false
        while true {
            guard let c = peek(), c != "\n" else {
                // `"r\"` meant as r\ and a closing quote: the backslash took the quote.
                let hint = escapedQuote ? " ('\\\"' is a quote inside the string; a backslash is written '\\\\')" : ""
                diagnostics.error("unterminated string: expected a closing '\"'\(hint)", at: start)
                var closed: SourceLocation?
                let trimmed = literal.reversed().drop { $0 == " " || $0 == "\t" }
                if trimmed.first == "}", let brace = lastBrace {
                    literal = String(trimmed.dropFirst().reversed())
                    closed = brace
                }
                // Still a string token, so the parser does not report a missing value as well.
                if !literal.isEmpty || parts.isEmpty { parts.append(.literal(literal)) }
                return (parts, closed)
            }
            if c == "}" { lastBrace = here }
            if c == "\"" {
                advance()
                break
            }
            if c == "\\" {
                advance()
                guard let e = peek(), e != "\n" else { continue }
                switch e {
                case "n": literal += "\n"
                case "t": literal += "\t"
                case "\\", "\"", "$":
                    literal.unicodeScalars.append(e)
                    if e == "\"" { escapedQuote = true }
                default:
                    diagnostics.error(
                        "unknown escape '\\\(Character(e))' in string (use \\\\, \\\", \\n, \\t or \\$)", at: here)
                }
                advance()
                continue
            }
            if c == "$", peek(1) == "{" {
                if !literal.isEmpty {
                    parts.append(.literal(literal))
                    literal = ""
                }
                if let v = lexVariable() { parts.append(v) }
                continue
            }
            literal.unicodeScalars.append(c)
            advance()
        }
        if !literal.isEmpty || parts.isEmpty { parts.append(.literal(literal)) }
        return (parts, nil)
    }

    /// `${NAME}` or `${NAME:-fallback}`; the fallback runs to the closing brace.
    private mutating func lexVariable() -> StringPart? {
        let start = here
        advance()
        advance()  // ${
        var name = ""
        while let c = peek(), isIdentifierBody(c), c != "-" {
            name.unicodeScalars.append(c)
            advance()
        }
        if name.isEmpty {
            diagnostics.error("expected a variable name after '${'", at: here)
        }
        var fallback: String?
        if peek() == ":", peek(1) == "-" {
            advance()
            advance()
            var f = ""
            while let c = peek(), c != "}", c != "\n" {
                f.unicodeScalars.append(c)
                advance()
            }
            fallback = f
        }
        guard peek() == "}" else {
            // What stands after the name, when a '}' closes it further on: a '-' in it, or the shell's other forms
            // (`${X-d}`, `${X:=d}`), which the language does not take.
            var rest = ""
            var k = 0
            while let c = peek(k), c != "}", c != "\n" {
                rest.unicodeScalars.append(c)
                k += 1
            }
            if fallback == nil, !name.isEmpty, peek(k) == "}", let first = rest.unicodeScalars.first,
                !rest.contains("\"")
            {
                diagnostics.error(
                    "unexpected '\(first)' after '${\(name)': a variable's name is letters, digits and '_', and a "
                        + "default is written '${\(name):-value}'", at: here)
                for _ in 0...k { advance() }  // through the '}': what follows is read as usual
                // A stand-in, so that nothing else is said about it (the error stops the reading pass anyway).
                return .variable(name: name, fallback: "")
            }
            diagnostics.error("unterminated '${': expected '}'", at: start)
            return nil
        }
        advance()
        return .variable(name: name, fallback: fallback)
    }

    /// A path written without quotes (`path: /tmp/x.wav`, `out/demo.wav`), found at its first '/' or '~': one
    /// error that shows it quoted, and a string token, so that the parser goes on without more errors about it.
    /// The words and dots lexed just before it on the same line, with nothing between, are part of it.
    private mutating func lexBarePath(_ at: SourceLocation, after tokens: inout [Token]) -> Token {
        var first = index
        while first > 0, isPathCharacter(scalars[first - 1]) { first -= 1 }
        let startColumn = at.column - (index - first)
        while let last = tokens.last, last.location.line == at.line, last.location.column >= startColumn {
            tokens.removeLast()
        }
        while let c = peek(), isPathCharacter(c) { advance() }
        var path = ""
        path.unicodeScalars.append(contentsOf: scalars[first..<index])
        let location = SourceLocation(file: file, line: at.line, column: startColumn)
        diagnostics.error("a path goes in double quotes: \"\(path)\"", at: location)
        return Token(kind: .string([.literal(path)]), location: location)
    }

    private func isPathCharacter(_ c: Unicode.Scalar) -> Bool {
        isIdentifierBody(c) || c == "." || c == "/" || c == "~" || c == "+" || c == "@" || c == "%"
    }

    private func isDigit(_ c: Unicode.Scalar) -> Bool { c >= "0" && c <= "9" }
    private func isIdentifierStart(_ c: Unicode.Scalar) -> Bool {
        (c >= "a" && c <= "z") || (c >= "A" && c <= "Z") || c == "_" || (c.value > 127 && !Self.isInvisible(c))
    }
    /// A character beyond ASCII that shows as blank or nothing: a no-break or other Unicode space, a zero-width
    /// character, a control character.
    private static func isInvisible(_ c: Unicode.Scalar) -> Bool {
        guard c.value > 127 else { return false }
        switch c.properties.generalCategory {
        case .spaceSeparator, .lineSeparator, .paragraphSeparator, .format, .control: return true
        default: return c.properties.isWhitespace
        }
    }
    private func isIdentifierBody(_ c: Unicode.Scalar) -> Bool {
        isIdentifierStart(c) || isDigit(c) || c == "-"
    }
}
