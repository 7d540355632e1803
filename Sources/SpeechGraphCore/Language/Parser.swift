import Foundation

/// The hand-written parser of `.graph` files.
///
/// ```
/// node mic = file.input { path: "${INPUT:-speech.wav}" }
/// node asr = recognizer { }
/// node out = console
/// mic -> asr -> out, log      # a chain; a comma fans out
/// mic.out -> asr.in           # ports by name
/// ```
public struct GraphParser {
    private var tokens: [Token] = []
    private var position = 0
    private var diagnostics = DiagnosticList()
    private let file: String
    private let environment: [String: String]

    /// Parses `text` as the graph file `file`. `${VAR}` references read `environment`.
    public static func parse(
        _ text: String, file: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> GraphSpec {
        var parser = GraphParser(file: file, environment: environment)
        return try parser.run(text)
    }

    /// Reads and parses a graph file from disk.
    public static func parse(
        contentsOf path: String, environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws -> GraphSpec {
        guard let data = FileManager.default.contents(atPath: path) else {
            let fm = FileManager.default
            let message =
                !fm.fileExists(atPath: path)
                ? "no such file: \(path)"
                : fm.isDirectory(path) ? "\(path) is a directory, not a graph file" : "cannot read: \(path)"
            throw GraphError(.error(message, at: nil))
        }
        guard let text = String(data: data, encoding: .utf8) else {
            // An audio file given to `run` or `check` instead of a graph: say what to do with it.
            let head = [UInt8](data.prefix(4))
            let audio =
                head == Array("RIFF".utf8) || head == Array("fLaC".utf8) || head == Array("OggS".utf8)
                || head.starts(with: Array("ID3".utf8))
                || (head.count >= 2 && head[0] == 0xFF && head[1] & 0xE0 == 0xE0)
            let hint = audio ? " (it is audio: 'speechgraph transcribe \(path)' transcribes it)" : ""
            let at = audio ? nil : SourceLocation.firstInvalidUTF8(in: data, file: path)
            throw GraphError(
                .error(
                    "\(path) is not UTF-8 text\(at == nil ? "" : ": a byte here is not UTF-8")\(hint)",
                    at: at ?? SourceLocation(file: path, line: 1, column: 1)))
        }
        return try parse(text, file: path, environment: environment)
    }

    private init(file: String, environment: [String: String]) {
        self.file = file
        self.environment = environment
    }

    private mutating func run(_ text: String) throws -> GraphSpec {
        var lexer = Lexer(text: text, file: file)
        tokens = lexer.tokenize()
        diagnostics.append(contentsOf: lexer.diagnostics.all)
        var spec = GraphSpec(file: file)
        while true {
            skipNewlines()
            if case .end = current.kind { break }
            let before = diagnostics.all.count
            parseStatement(into: &spec)
            if diagnostics.all.count != before { recover() }
        }
        try diagnostics.throwIfErrors()
        return spec
    }

    // MARK: Tokens

    private var current: Token { tokens[position] }
    /// After a name: `->` or `.port ->`, the rest of a connection.
    private var isConnectionAhead: Bool {
        func kind(_ k: Int) -> Token.Kind? { position + k < tokens.count ? tokens[position + k].kind : nil }
        if kind(0) == .arrow { return true }
        guard kind(0) == .dot, case .identifier? = kind(1) else { return false }
        return kind(2) == .arrow
    }
    private mutating func advance() { if position < tokens.count - 1 { position += 1 } }
    private mutating func skipNewlines() { while case .newline = current.kind { advance() } }

    private mutating func expect(_ kind: Token.Kind, _ what: String) -> Bool {
        if current.kind == kind {
            advance()
            return true
        }
        diagnostics.error("expected \(what), found \(current.display)", at: current.location)
        return false
    }

    private mutating func identifier(_ what: String) -> Located<String>? {
        if case .identifier(let s) = current.kind {
            let t = Located(s, at: current.location)
            advance()
            return t
        }
        diagnostics.error("expected \(what), found \(current.display)", at: current.location)
        return nil
    }

    /// After an error, skip the rest of the statement: to the end of the line, or past a `{ ... }` block.
    private mutating func recover() {
        var depth = 0
        while true {
            switch current.kind {
            case .end: return
            case .leftBrace: depth += 1
            case .rightBrace:
                depth -= 1
                if depth <= 0 {
                    advance()
                    return
                }
            case .newline where depth <= 0: return
            default: break
            }
            advance()
        }
    }

    // MARK: Statements

    private mutating func parseStatement(into spec: inout GraphSpec) {
        let before = diagnostics.all.count
        if case .identifier("node") = current.kind {
            if let node = parseNode() { spec.nodes.append(node) }
        } else if case .identifier = current.kind {
            spec.edges.append(contentsOf: parseChain())
        } else if case .leftBrace = current.kind, let last = spec.nodes.last, last.parameters.isEmpty,
            spec.edges.last.map({ $0.location.line < last.location.line }) ?? true
        {
            // The brace style of C: the node before ended at its line's end.
            diagnostics.error(
                "a node's '{' goes on the line of its declaration: 'node \(last.name.value) = \(last.type.value) {'",
                at: current.location)
            return
        } else {
            diagnostics.error(
                "expected 'node' or an edge like 'a -> b', found \(current.display)", at: current.location)
            return
        }
        // A statement that already failed has said what was wrong; the rest of its line is skipped.
        guard diagnostics.all.count == before else { return }
        switch current.kind {
        case .newline, .end: break
        default:
            diagnostics.error("expected end of line after statement, found \(current.display)", at: current.location)
        }
    }

    private mutating func parseNode() -> NodeDeclaration? {
        let start = current.location
        advance()  // node
        guard let name = identifier("a node name after 'node'") else { return nil }
        if name.value == "node" {
            diagnostics.error("'node' is a keyword and cannot name a node", at: name.location)
            return nil
        }
        guard expect(.equals, "'=' after the node name") else { return nil }
        guard let first = identifier("a node type (for example 'recognizer')") else { return nil }
        var type = first.value
        while case .dot = current.kind {
            advance()
            guard let part = identifier("the rest of the node type after '.'") else { return nil }
            type += "." + part.value
        }
        var parameters: [ParameterAssignment] = []
        if case .leftBrace = current.kind {
            let open = current.location
            advance()
            while true {
                skipNewlines()
                if case .rightBrace = current.kind {
                    advance()
                    break
                }
                if case .identifier("node") = current.kind, position + 1 < tokens.count,
                    case .identifier = tokens[position + 1].kind
                {
                    diagnostics.error(
                        "expected '}' to close the parameters of node '\(name.value)' opened at line \(open.line), "
                            + "found the next 'node'", at: current.location)
                    return nil
                }
                if case .end = current.kind {
                    diagnostics.error(
                        "expected '}' to close the parameters of node '\(name.value)' opened at line \(open.line), "
                            + "found end of file", at: current.location)
                    return nil
                }
                guard let key = identifier("a parameter name or '}'") else { return nil }
                // A connection after an unclosed brace (`speech -> asr`, `vad.out -> asr`): the brace is missing.
                if isConnectionAhead {
                    diagnostics.error(
                        "expected '}' to close the parameters of node '\(name.value)' opened at line \(open.line), "
                            + "found a connection", at: key.location)
                    return nil
                }
                guard expect(.colon, "':' after parameter '\(key.value)'") else { return nil }
                var itemLocations: [SourceLocation] = []
                guard let value = parseValue(itemLocations: &itemLocations) else { return nil }
                parameters.append(ParameterAssignment(name: key, value: value, itemLocations: itemLocations))
                switch current.kind {
                case .comma, .newline: advance()
                case .rightBrace: break
                default:
                    // A file name without quotes (`path: demo.wav`): show it quoted.
                    var hint = ""
                    if case .word(let word) = value.value, case .dot = current.kind {
                        hint = " (a path or text goes in double quotes: \"\(bareText(after: word))\")"
                    }
                    diagnostics.error(
                        "expected ',' or '}' after the value of '\(key.value)', found \(current.display)\(hint)",
                        at: current.location)
                    return nil
                }
            }
        }
        return NodeDeclaration(
            name: name, type: Located(type, at: first.location), parameters: parameters, location: start)
    }

    /// A bare word and the dots, words and numbers right after it, as written (`demo.wav`).
    private func bareText(after word: String) -> String {
        var text = word
        for token in tokens[position...] {
            switch token.kind {
            case .dot: text += "."
            case .identifier(let s): text += s
            case .number(_, let t): text += t
            default: return text
            }
        }
        return text
    }

    /// One value; for a `[list]`, where each of its items was written goes in `itemLocations`.
    private mutating func parseValue(itemLocations: inout [SourceLocation]) -> Located<ValueLiteral>? {
        let token = current
        switch token.kind {
        case .number(let v, _):
            advance()
            if case .identifier(let unit) = current.kind {
                advance()
                return Located(.number(v, unit: unit), at: token.location)
            }
            return Located(.number(v, unit: nil), at: token.location)
        case .string(let parts):
            advance()
            return Located(.string(expand(parts, at: token.location)), at: token.location)
        case .identifier(let word):
            advance()
            return Located(.word(word), at: token.location)
        case .variable(let name, let fallback):
            advance()
            let text = expand([.variable(name: name, fallback: fallback)], at: token.location)
            return Located(Self.literal(fromText: text), at: token.location)
        case .leftBracket:
            advance()
            return parseList(at: token.location, itemLocations: &itemLocations)
        default:
            diagnostics.error(
                "expected a value (a number with its unit, a \"string\", a word or a [list]), found \(token.display)",
                at: token.location)
            return nil
        }
    }

    /// `["a", "b", word]` after its `[`: strings and words, separated by commas, over lines if need be. Where each
    /// item was written goes in `itemLocations`.
    private mutating func parseList(at start: SourceLocation, itemLocations: inout [SourceLocation])
        -> Located<ValueLiteral>?
    {
        var items: [String] = []
        while true {
            while case .newline = current.kind { advance() }
            switch current.kind {
            case .rightBracket:
                advance()
                return Located(.list(items), at: start)
            case .string(let parts):
                let location = current.location
                advance()
                let item = expand(parts, at: location)
                if item.contains("|") {
                    // The items stand for one string with '|' between them: this one would be two.
                    diagnostics.error(
                        "a list item cannot hold '|' (it separates the items): \(graphQuoted(item)); "
                            + "write each part as an item of its own",
                        at: location)
                }
                items.append(item)
                itemLocations.append(location)
            case .identifier(let word):
                itemLocations.append(current.location)
                advance()
                items.append(word)
            default:
                diagnostics.error(
                    "expected a \"string\" or ']' in the list, found \(current.display)", at: current.location)
                return nil
            }
            while case .newline = current.kind { advance() }
            switch current.kind {
            case .comma: advance()
            case .rightBracket: continue
            default:
                diagnostics.error("expected ',' or ']' in the list, found \(current.display)", at: current.location)
                return nil
            }
        }
    }

    /// What `${VAR}` stands for when it is a whole value: `16 kHz` is a number with a unit, `high` a word,
    /// `["a b", "c d"]` a list, anything else a string.
    static func literal(fromText text: String) -> ValueLiteral {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        var lexer = Lexer(text: trimmed, file: "")
        let tokens = lexer.tokenize().filter { $0.kind != .end }
        // A '#' outside quotes would start a comment in a file; in a value it is text (`take #2.jsonl`), so a value
        // whose tokens leave one out is a string.
        let quotedHashes = tokens.reduce(0) { n, token in
            guard case .string(let parts) = token.kind else { return n }
            return n + parts.reduce(0) { if case .literal(let l) = $1 { $0 + l.count { $0 == "#" } } else { $0 } }
        }
        if lexer.diagnostics.all.isEmpty && quotedHashes == trimmed.count(where: { $0 == "#" }) {
            if let list = list(tokens) { return .list(list) }
            switch tokens.map(\.kind) {
            case let k where k.count == 1:
                if case .number(let v, _) = k[0] { return .number(v, unit: nil) }
                if case .identifier(let w) = k[0] { return .word(w) }
                if case .string(let parts) = k[0], parts.allSatisfy({ if case .literal = $0 { true } else { false } }) {
                    return .string(parts.map { if case .literal(let l) = $0 { l } else { "" } }.joined())
                }
            case let k where k.count == 2:
                if case .number(let v, _) = k[0], case .identifier(let u) = k[1] { return .number(v, unit: u) }
            default: break
            }
        }
        return .string(text)
    }

    /// `["a", "b", word]` as whole-value tokens: its items, or `nil` when the tokens are not such a list.
    private static func list(_ tokens: [Token]) -> [String]? {
        guard case .leftBracket? = tokens.first?.kind, case .rightBracket? = tokens.last?.kind, tokens.count >= 2 else {
            return nil
        }
        var items: [String] = []
        var wantsItem = true
        for token in tokens.dropFirst().dropLast() {
            switch token.kind {
            case .string(let parts) where wantsItem:
                var text = ""
                for part in parts {
                    guard case .literal(let l) = part else { return nil }
                    text += l
                }
                items.append(text)
                wantsItem = false
            case .identifier(let word) where wantsItem:
                items.append(word)
                wantsItem = false
            case .comma where !wantsItem:
                wantsItem = true
            case .newline:
                continue
            default:
                return nil
            }
        }
        return wantsItem && !items.isEmpty ? nil : items
    }

    private mutating func expand(_ parts: [StringPart], at location: SourceLocation) -> String {
        var out = ""
        for part in parts {
            switch part {
            case .literal(let s): out += s
            case .variable(let name, let fallback):
                // As in the shell: ':-' also replaces a variable that is set but empty.
                if name.isEmpty {
                    continue  // the lexer has reported the missing name
                } else if let v = environment[name], !v.isEmpty || fallback == nil {
                    out += v
                } else if let fallback {
                    out += fallback
                } else {
                    diagnostics.error(
                        "environment variable '\(name)' is not set (give a default with '${\(name):-value}')",
                        at: location)
                }
            }
        }
        return out
    }

    // MARK: Edges

    /// `a -> b, c -> d`: every endpoint of one stage connects to every endpoint of the next.
    private mutating func parseChain() -> [EdgeDeclaration] {
        var edges: [EdgeDeclaration] = []
        guard var previous = parseStage() else { return [] }
        var sawArrow = false
        while case .arrow = current.kind {
            let arrow = current.location
            advance()
            sawArrow = true
            skipNewlines()
            guard let next = parseStage() else { return [] }
            for from in previous {
                for to in next { edges.append(EdgeDeclaration(from: from, to: to, location: arrow)) }
            }
            previous = next
        }
        if !sawArrow {
            diagnostics.error(
                "expected '->' after '\(previous[0])' (a statement is 'node name = type { ... }' or an edge 'a -> b')",
                at: current.location)
        }
        return edges
    }

    private mutating func parseStage() -> [Endpoint]? {
        var endpoints: [Endpoint] = []
        repeat {
            if !endpoints.isEmpty { advance() }  // the comma
            guard let node = identifier("a node name") else { return nil }
            var port: Located<String>?
            if case .dot = current.kind {
                advance()
                guard let p = identifier("a port name after '\(node.value).'") else { return nil }
                port = p
            }
            endpoints.append(Endpoint(node: node, port: port))
        } while current.kind == .comma
        return endpoints
    }
}
