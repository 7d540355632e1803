import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

private func tokens(_ text: String) -> (kinds: [Token.Kind], tokens: [Token], errors: [String]) {
    var lexer = Lexer(text: text, file: "t.graph")
    let tokens = lexer.tokenize()
    return (tokens.map(\.kind), tokens, lexer.diagnostics.all.map(\.description))
}

private func parse(_ text: String, environment: [String: String] = testEnvironment) throws -> GraphSpec {
    try GraphParser.parse(text, file: "t.graph", environment: environment)
}

/// The parse errors of `text`, as printed; [] when it parses.
private func parseErrors(_ text: String, environment: [String: String] = testEnvironment) -> [String] {
    do {
        _ = try parse(text, environment: environment)
        return []
    } catch let error as GraphError {
        return error.diagnostics.map(\.description)
    } catch {
        return ["unexpected: \(error)"]
    }
}

/// The value written for `parameter` of the first node.
private func value(_ text: String, _ parameter: String, environment: [String: String] = testEnvironment) throws
    -> ValueLiteral
{
    let spec = try parse(text, environment: environment)
    let node = try #require(spec.nodes.first)
    return try #require(node.parameters.first { $0.name.value == parameter }).value.value
}

private func edges(_ spec: GraphSpec) -> [String] {
    spec.edges.map { "\($0.from) -> \($0.to)" }
}

@Suite("Lexer", .tags(.fast))
struct LexerTests {
    @Test("tokens carry their line and column")
    func locations() {
        let (_, toks, errors) = tokens("node mic = fake.source {\n  rate: 16 kHz }\nmic -> out\n")
        #expect(errors.isEmpty)
        let placed = toks.map { "\($0.location.line):\($0.location.column) \($0.display)" }
        #expect(
            placed == [
                "1:1 'node'", "1:6 'mic'", "1:10 '='", "1:12 'fake'", "1:16 '.'", "1:17 'source'", "1:24 '{'",
                "1:25 end of line",
                "2:3 'rate'", "2:7 ':'", "2:9 number '16'", "2:12 'kHz'", "2:16 '}'", "2:17 end of line",
                "3:1 'mic'", "3:5 '->'", "3:8 'out'", "3:11 end of line",
                // At the end of the last line, not on a line after it that the file does not have.
                "3:11 end of file",
            ])
        #expect(toks.allSatisfy { $0.location.file == "t.graph" })
    }

    @Test("a tab counts as one column; CRLF ends a line once")
    func tabsAndCRLF() {
        let (kinds, toks, errors) = tokens("\ta\r\n\tb")
        #expect(errors.isEmpty)
        #expect(kinds == [.identifier("a"), .newline, .identifier("b"), .end])
        #expect(toks[0].location.column == 2)
        #expect(toks[2].location.line == 2 && toks[2].location.column == 2)
    }

    @Test(
        "numbers, with and without a space before the unit",
        arguments: [
            ("16 kHz", 16.0, "16", "kHz"), ("16kHz", 16, "16", "kHz"), ("-40 dB", -40, "-40", "dB"),
            ("-40dB", -40, "-40", "dB"), ("1.5 s", 1.5, "1.5", "s"), ("300ms", 300, "300", "ms"),
            ("+3 dB", 3, "+3", "dB"), ("16_000 Hz", 16000, "16000", "Hz"), ("1e-3 s", 0.001, "1e-3", "s"),
            ("2.5E3 Hz", 2500, "2.5E3", "Hz"), ("-.5 dB", -0.5, "-.5", "dB"),
        ])
    func numbers(text: String, value: Double, numberText: String, unit: String) {
        let (kinds, _, errors) = tokens(text)
        #expect(errors.isEmpty)
        #expect(kinds == [.number(value, text: numberText), .identifier(unit), .end])
    }

    @Test("a malformed number is an error at its start")
    func malformedNumber() {
        let (_, _, errors) = tokens("x: 1.2.3")
        #expect(errors == ["t.graph:1:4: error: malformed number '1.2.3'"])
    }

    @Test("a lone '-' or '+' is an error, but '->' is an arrow and '-' may be inside a name")
    func dashes() {
        #expect(tokens("a->b").kinds == [.identifier("a"), .arrow, .identifier("b"), .end])
        #expect(tokens("very-high").kinds == [.identifier("very-high"), .end])
        #expect(tokens("a - b").errors == ["t.graph:1:3: error: unexpected '-'"])
        #expect(tokens("+ x").errors == ["t.graph:1:1: error: unexpected '+'"])
    }

    @Test("strings with escapes")
    func escapes() {
        let (kinds, _, errors) = tokens(#""a\"b\\c\nd\te\$f""#)
        #expect(errors.isEmpty)
        #expect(kinds == [.string([.literal("a\"b\\c\nd\te$f")]), .end])
        #expect(tokens(#""""#).kinds == [.string([.literal("")]), .end])
    }

    @Test("an unknown escape is reported at the escaped character")
    func unknownEscape() {
        #expect(
            tokens(#"x: "C:\speech""#).errors
                == [#"t.graph:1:8: error: unknown escape '\s' in string (use \\, \", \n, \t or \$)"#])
    }

    @Test("an unterminated string is reported at its opening quote, at the end of a line or of the file")
    func unterminatedString() {
        #expect(tokens("x: \"abc\ny").errors == ["t.graph:1:4: error: unterminated string: expected a closing '\"'"])
        #expect(tokens("x: \"abc").errors == ["t.graph:1:4: error: unterminated string: expected a closing '\"'"])
        // The next line is still read.
        #expect(tokens("x: \"abc\ny").kinds.suffix(3) == [.newline, .identifier("y"), .end])
    }

    @Test("${VAR} and ${VAR:-default} inside strings keep their parts")
    func variablesInStrings() {
        let (kinds, _, errors) = tokens(#""${DIR:-/tmp/a b}/x-${N}.wav""#)
        #expect(errors.isEmpty)
        #expect(
            kinds == [
                .string([
                    .variable(name: "DIR", fallback: "/tmp/a b"), .literal("/x-"),
                    .variable(name: "N", fallback: nil), .literal(".wav"),
                ]), .end,
            ])
    }

    @Test("${VAR} as a value on its own")
    func variableToken() {
        #expect(tokens("${RATE:-16 kHz}").kinds == [.variable(name: "RATE", fallback: "16 kHz"), .end])
        #expect(tokens("${RATE}").kinds == [.variable(name: "RATE", fallback: nil), .end])
        #expect(tokens("${RATE x").errors == ["t.graph:1:1: error: unterminated '${': expected '}'"])
        #expect(tokens("${}").errors == ["t.graph:1:3: error: expected a variable name after '${'"])
    }

    @Test("comments run to the end of the line; blank lines collapse; ';' separates like a newline")
    func comments() {
        let (kinds, _, errors) = tokens("# head\na # tail -> b\n\n\n  # only a comment\nb; c")
        #expect(errors.isEmpty)
        #expect(kinds == [.newline, .identifier("a"), .newline, .identifier("b"), .newline, .identifier("c"), .end])
    }

    @Test("an unexpected character is reported and skipped")
    func badCharacter() {
        let (kinds, _, errors) = tokens("a @ b")
        #expect(errors == ["t.graph:1:3: error: unexpected character '@'"])
        #expect(kinds == [.identifier("a"), .identifier("b"), .end])
    }

    @Test("non-ASCII letters are part of names (µs is a unit)")
    func unicode() {
        #expect(tokens("5 µs").kinds == [.number(5, text: "5"), .identifier("µs"), .end])
        #expect(tokens("é b").kinds == [.identifier("é"), .identifier("b"), .end])
    }
}

@Suite("Parser", .tags(.fast))
struct ParserTests {
    @Test("nodes, types with dots, parameters and their locations")
    func nodes() throws {
        let spec = try parse(
            """
            # comment
            node mic = fake.source { path: "a.wav", rate: 48 kHz }
            node out = fake.sink
            mic -> out
            """)
        #expect(spec.file == "t.graph")
        #expect(spec.nodes.map(\.name.value) == ["mic", "out"])
        #expect(spec.nodes.map(\.type.value) == ["fake.source", "fake.sink"])
        let mic = spec.nodes[0]
        #expect(mic.location == SpeechGraphCore.SourceLocation(file: "t.graph", line: 2, column: 1))
        #expect(mic.name.location == SpeechGraphCore.SourceLocation(file: "t.graph", line: 2, column: 6))
        #expect(mic.type.location == SpeechGraphCore.SourceLocation(file: "t.graph", line: 2, column: 12))
        #expect(mic.parameters.map(\.name.value) == ["path", "rate"])
        #expect(mic.parameters.map(\.value.value) == [.string("a.wav"), .number(48, unit: "kHz")])
        #expect(mic.parameters[1].name.location.column == 41)
        #expect(mic.parameters[1].value.location.column == 47)
        #expect(spec.nodes[1].parameters.isEmpty)
    }

    @Test(
        "values: numbers with units, words, strings",
        arguments: [
            ("rate: 16 kHz", ValueLiteral.number(16, unit: "kHz")),
            ("rate: 16kHz", .number(16, unit: "kHz")),
            ("level: -40 dB", .number(-40, unit: "dB")),
            ("time: 1.5 s", .number(1.5, unit: "s")),
            ("time: 300ms", .number(300, unit: "ms")),
            ("count: 2", .number(2, unit: nil)),
            ("mode: very-high", .word("very-high")),
            ("flag: true", .word("true")),
            (#"path: "a b.wav""#, .string("a b.wav")),
        ])
    func values(assignment: String, expected: ValueLiteral) throws {
        let name = String(assignment.prefix { $0 != ":" })
        #expect(try value("node n = t { \(assignment) }", name) == expected)
    }

    @Test("${VAR:-default} in a string is expanded from the environment given, not the process's")
    func stringVariables() throws {
        let text = #"node n = t { path: "${DIR:-/tmp}/${NAME}.wav" }"#
        #expect(try value(text, "path", environment: ["NAME": "x"]) == .string("/tmp/x.wav"))
        #expect(try value(text, "path", environment: ["NAME": "x", "DIR": "/data"]) == .string("/data/x.wav"))
        // Set but empty counts as unset, as with the shell's ':-'.
        #expect(try value(text, "path", environment: ["NAME": "x", "DIR": ""]) == .string("/tmp/x.wav"))
        #expect(
            parseErrors(text, environment: [:]) == [
                "t.graph:1:20: error: environment variable 'NAME' is not set (give a default with '${NAME:-value}')"
            ])
    }

    @Test(
        "${VAR} as a whole value becomes a number with unit, a word or a string",
        arguments: [
            ("16 kHz", ValueLiteral.number(16, unit: "kHz")),
            ("16kHz", .number(16, unit: "kHz")),
            (" -40 dB ", .number(-40, unit: "dB")),
            ("2", .number(2, unit: nil)),
            ("utterance", .word("utterance")),
            ("out/log.jsonl", .string("out/log.jsonl")),
            ("two words", .string("two words")),
            // A '#' is text in a value, not a comment that would cut it.
            ("room #2", .string("room #2")),
            ("take#2", .string("take#2")),
            (#"["a #1", "b"]"#, .list(["a #1", "b"])),
        ])
    func wholeValueVariable(text: String, expected: ValueLiteral) throws {
        #expect(try value("node n = t { x: ${V} }", "x", environment: ["V": text]) == expected)
        #expect(try value("node n = t { x: ${UNSET:-\(text)} }", "x", environment: [:]) == expected)
    }

    @Test("a variable set to \"\" is empty, not 'not set'; with ':-' it takes the default, as in the shell")
    func emptyVariable() throws {
        let env = ["EMPTY": ""]
        #expect(try value(#"node n = t { x: "a${EMPTY}b" }"#, "x", environment: env) == .string("ab"))
        #expect(try value(#"node n = t { x: "${EMPTY:-d}" }"#, "x", environment: env) == .string("d"))
        #expect(try value("node n = t { x: ${EMPTY} }", "x", environment: env) == .string(""))
        #expect(try value("node n = t { x: ${EMPTY:-16 kHz} }", "x", environment: env) == .number(16, unit: "kHz"))
    }

    @Test("the shell's other forms (${X-d}, ${X:=d}) and a '-' in a name: one error saying what a variable is")
    func shellFormsOfVariables() {
        let hint = { (name: String, c: String) in
            "unexpected '\(c)' after '${\(name)': a variable's name is letters, digits and '_', and a default is "
                + "written '${\(name):-value}'"
        }
        #expect(
            parseErrors(#"node n = t { x: "${MY-VAR}/a", y: ${MODE-utterance} }"#, environment: [:]) == [
                "t.graph:1:22: error: " + hint("MY", "-"), "t.graph:1:41: error: " + hint("MODE", "-"),
            ])
        #expect(
            parseErrors("node n = t { x: ${MY.VAR} }", environment: [:]) == [
                "t.graph:1:21: error: " + hint("MY", ".")
            ])
        // A '${' left open before a path goes on: that, once (the look-ahead stops at the quote).
        #expect(
            parseErrors(#"node n = t { x: "${OUT/a.wav" }"#, environment: [:]) == [
                "t.graph:1:18: error: unterminated '${': expected '}'"
            ])
        #expect(
            parseErrors(#"node n = t { x: "${X:=abc}" }"#, environment: [:]) == [
                "t.graph:1:21: error: " + hint("X", ":")
            ])
    }

    @Test("curly quotes pasted from a page, or single quotes: one error each, showing the string as it should be")
    func quotesThatAreNotTheLanguages() {
        #expect(
            parseErrors(
                "node n = t { x: \u{201C}out/a.wav\u{201D}, y: 'b c', z: \u{201C}mic\u{201D} }", environment: [:]) == [
                    #"t.graph:1:17: error: curly quotes: a string goes in straight double quotes ("out/a.wav")"#,
                    #"t.graph:1:33: error: single quotes: a string goes in straight double quotes ("b c")"#,
                    #"t.graph:1:43: error: curly quotes: a string goes in straight double quotes ("mic")"#,
                ])
    }

    @Test("a number that starts with '.', or too large for a double: one error at it, saying what to write")
    func numberStartingWithADot() {
        #expect(
            parseErrors("node n = t { x: .5 kHz, y: .25s }", environment: [:]) == [
                "t.graph:1:17: error: a number starts with a digit: write 0.5, not .5",
                "t.graph:1:28: error: a number starts with a digit: write 0.25, not .25",
            ])
        #expect(
            parseErrors("node n = t { x: 1e400 Hz }", environment: [:]) == [
                "t.graph:1:17: error: number '1e400' is too large"
            ])
        // Inside an unquoted name it is the name's dot: the hint is to quote the name.
        #expect(
            parseErrors("node n = t { x: take.5.wav }", environment: [:]) == [
                "t.graph:1:21: error: expected ',' or '}' after the value of 'x', found '.' (a path or text goes in "
                    + "double quotes: \"take.5.wav\")"
            ])
    }

    @Test("a node's '{' on the next line: one error showing where it goes, and its block skipped")
    func braceOnTheNextLine() {
        #expect(
            parseErrors("node a = t\n{\n  x: 1\n}\nnode b = t", environment: [:]) == [
                "t.graph:2:1: error: a node's '{' goes on the line of its declaration: 'node a = t {'"
            ])
    }

    @Test("CR LF and CR line ends count lines as LF does, and an error is recovered from the same way")
    func lineEnds() {
        for end in ["\r\n", "\r"] {
            let text = ["node a = t { x: 1 }", "node b = t { x: \"abc }", "node c = t { = }", ""].joined(separator: end)
            #expect(
                parseErrors(text, environment: [:]) == [
                    "t.graph:2:17: error: unterminated string: expected a closing '\"'",
                    "t.graph:3:14: error: expected a parameter name or '}', found '='",
                ], "\(end.unicodeScalars.map(\.value))")
        }
    }

    @Test("an unset variable without a default is an error at the value")
    func unsetVariable() {
        #expect(
            parseErrors("node n = t {\n  x: ${NOPE}\n}", environment: [:]) == [
                "t.graph:2:6: error: environment variable 'NOPE' is not set (give a default with '${NOPE:-value}')"
            ])
    }

    @Test("newlines and commas both separate parameters inside braces")
    func separators() throws {
        let spec = try parse(
            """
            node a = t {
                x: 1, y: 2

                z: 3,
                w: 4
            }
            node b = t { }
            node c = t {}
            node d = t { x: 1, }
            """)
        #expect(spec.nodes.map { $0.parameters.map(\.name.value) } == [["x", "y", "z", "w"], [], [], ["x"]])
    }

    @Test("a chain makes one edge per arrow, in order")
    func chain() throws {
        let spec = try parse("a -> b -> c -> d")
        #expect(edges(spec) == ["a -> b", "b -> c", "c -> d"])
        #expect(spec.edges.map(\.location.column) == [3, 8, 13])
    }

    @Test("a comma fans out: every endpoint of one stage connects to every endpoint of the next")
    func fanOut() throws {
        #expect(edges(try parse("a -> b, c -> d")) == ["a -> b", "a -> c", "b -> d", "c -> d"])
        #expect(edges(try parse("a, b -> c, d")) == ["a -> c", "a -> d", "b -> c", "b -> d"])
    }

    @Test("ports by name, on either side")
    func ports() throws {
        let spec = try parse("a.out -> b.in\nb.events -> c")
        #expect(edges(spec) == ["a.out -> b.in", "b.events -> c"])
        let e = spec.edges[0]
        #expect(e.from.node.value == "a" && e.from.port?.value == "out")
        #expect(e.to.node.value == "b" && e.to.port?.value == "in")
        #expect(e.to.port?.location == SpeechGraphCore.SourceLocation(file: "t.graph", line: 1, column: 12))
        #expect(spec.edges[1].to.port == nil)
    }

    @Test("a chain may continue on the next line after an arrow")
    func chainAcrossLines() throws {
        #expect(edges(try parse("a ->\n  b ->\n\n  c")) == ["a -> b", "b -> c"])
    }

    /// The one error each malformed statement gives: what was expected and what was found, and nothing
    /// more (no second "expected end of line after statement" at the same token).
    @Test(
        "syntax errors name what was expected and what was found",
        arguments: [
            ("node a t", "t.graph:1:8: error: expected '=' after the node name, found 't'"),
            ("node = t", "t.graph:1:6: error: expected a node name after 'node', found '='"),
            ("node node = t", "t.graph:1:6: error: 'node' is a keyword and cannot name a node"),
            ("node a = { x: 1 }", "t.graph:1:10: error: expected a node type (for example 'recognizer'), found '{'"),
            ("node a = t { x 1 }", "t.graph:1:16: error: expected ':' after parameter 'x', found number '1'"),
            (
                "node a = t { x: }",
                "t.graph:1:17: error: expected a value (a number with its unit, a \"string\", a word or a [list]), "
                    + "found '}'"
            ),
            ("node a = t { x: a y: 2 }", "t.graph:1:19: error: expected ',' or '}' after the value of 'x', found 'y'"),
            // A word right after a number is its unit, so here the parser stops at the ':' of 'y:'.
            ("node a = t { x: 1 y: 2 }", "t.graph:1:20: error: expected ',' or '}' after the value of 'x', found ':'"),
            ("node a = t { x: 1", "t.graph:1:18: error: expected ',' or '}' after the value of 'x', found end of file"),
            (
                "node a = t { x: 1\n",
                "t.graph:1:18: error: expected '}' to close the parameters of node 'a' opened at line 1, "
                    + "found end of file"
            ),
            (
                "a b",
                "t.graph:1:3: error: expected '->' after 'a' "
                    + "(a statement is 'node name = type { ... }' or an edge 'a -> b')"
            ),
            (
                "a",
                "t.graph:1:2: error: expected '->' after 'a' "
                    + "(a statement is 'node name = type { ... }' or an edge 'a -> b')"
            ),
            ("a -> b c", "t.graph:1:8: error: expected end of line after statement, found 'c'"),
            ("a -> ", "t.graph:1:6: error: expected a node name, found end of file"),
            ("a. -> b", "t.graph:1:4: error: expected a port name after 'a.', found '->'"),
            ("= a", "t.graph:1:1: error: expected 'node' or an edge like 'a -> b', found '='"),
            // Paths without quotes: one error that shows them quoted.
            (
                "node a = t { path: demo.wav }",
                "t.graph:1:24: error: expected ',' or '}' after the value of 'path', found '.' "
                    + "(a path or text goes in double quotes: \"demo.wav\")"
            ),
            (
                "node a = t { path: /tmp/x.wav, y: 1 }",
                "t.graph:1:20: error: a path goes in double quotes: \"/tmp/x.wav\""
            ),
            (
                "node a = t { path: out/my-1.wav }",
                "t.graph:1:20: error: a path goes in double quotes: \"out/my-1.wav\""
            ),
            ("node a = t { path: ./x }", "t.graph:1:20: error: a path goes in double quotes: \"./x\""),
            ("a -> b  // fan out", "t.graph:1:9: error: unexpected '//': comments start with '#'"),
        ])
    func syntaxErrors(text: String, expected: String) {
        #expect(parseErrors(text) == [expected])
    }

    @Test("one syntax error gives one diagnostic, not a second 'expected end of line' at the same token")
    func doubledStatementError() {
        #expect(
            parseErrors("node asr fake.recognizer { rate: 16 kHz }")
                == ["t.graph:1:10: error: expected '=' after the node name, found 'fake'"])
    }

    @Test("an unclosed parameter block followed by another node says that '}' is missing")
    func missingBraceBeforeNextNode() throws {
        #expect(
            parseErrors("node mic = fake.source { path: \"a.wav\"\nnode asr = fake.recognizer\n") == [
                "t.graph:2:1: error: expected '}' to close the parameters of node 'mic' opened at line 1, "
                    + "found the next 'node'"
            ])
        // 'node' is still an ordinary parameter name when no node name follows it.
        #expect(try value("node n = t { node: 1 }", "node") == .number(1, unit: nil))
        // So with a connection after it, to a node or to one of its ports.
        for edge in ["mic -> asr", "mic.out -> asr.in"] {
            #expect(
                parseErrors("node mic = fake.source { path: \"a.wav\"\n\(edge)\n") == [
                    "t.graph:2:1: error: expected '}' to close the parameters of node 'mic' opened at line 1, "
                        + "found a connection"
                ])
        }
    }

    @Test("after an error the parser skips to the next line and reports later errors too, sorted")
    func recovery() {
        let errors = parseErrors(
            """
            node a t { x: 1
              y: 2 }
            node b = u
            b c
            node c = v { p: @ }
            """)
        // Every real error is reported, in file order (lexer and parser errors merged), and nothing else
        // (the block spanning lines 1-2 is skipped whole).
        #expect(
            errors == [
                "t.graph:1:8: error: expected '=' after the node name, found 't'",
                "t.graph:4:3: error: expected '->' after 'b' "
                    + "(a statement is 'node name = type { ... }' or an edge 'a -> b')",
                "t.graph:5:17: error: unexpected character '@'",
                "t.graph:5:19: error: expected a value (a number with its unit, a \"string\", a word or a [list]), "
                    + "found '}'",
            ])
    }

    @Test("an empty file parses to an empty graph")
    func empty() throws {
        let spec = try parse("\n# nothing\n\n")
        #expect(spec.nodes.isEmpty && spec.edges.isEmpty)
    }
}

@Suite("--set overrides", .tags(.fast))
struct OverrideParseTests {
    @Test(
        "node.param=value, the value read as in a graph file",
        arguments: [
            ("asr.rate=16 kHz", "asr", "rate", ValueLiteral.number(16, unit: "kHz")),
            ("asr.rate=8kHz", "asr", "rate", .number(8, unit: "kHz")),
            ("vad.threshold=-30 dB", "vad", "threshold", .number(-30, unit: "dB")),
            ("asr.mode=utterance", "asr", "mode", .word("utterance")),
            ("src.channels=2", "src", "channels", .number(2, unit: nil)),
            ("out.path=out/log.jsonl", "out", "path", .string("out/log.jsonl")),
            ("out.label=a=b", "out", "label", .string("a=b")),
            ("out.label=", "out", "label", .string("")),
            (#"m.phrases=["go forward", "turn left"]"#, "m", "phrases", .list(["go forward", "turn left"])),
            ("m.phrases=[one, two]", "m", "phrases", .list(["one", "two"])),
            ("m.phrases=[unclosed", "m", "phrases", .string("[unclosed")),
        ])
    func parses(text: String, node: String, parameter: String, value: ValueLiteral) throws {
        let o = try #require(GraphPlanner.Override.parse(text))
        #expect(o.node == node)
        #expect(o.parameter == parameter)
        #expect(o.value == value)
    }

    @Test("malformed overrides are rejected", arguments: ["asr", "asr.rate", "rate=16 kHz", ".rate=1", "asr.=1", "=1"])
    func rejects(text: String) {
        #expect(GraphPlanner.Override.parse(text) == nil)
    }

    @Test("a quoted value means the same as in a graph file (no quotes in the value)")
    func quotedValue() throws {
        // `--set 'out.path="speech"'`: in a graph file `path: "speech"` is the string `speech`.
        let o = try #require(GraphPlanner.Override.parse(#"out.path="speech""#))
        #expect(o.value == .string("speech"))
        #expect(GraphPlanner.Override.parse(#"out.label="a b""#)?.value == .string("a b"))
    }
}

@Suite("List values", .tags(.fast))
struct ListValueTests {
    @Test("a list of strings and words, over lines, becomes items a string parameter takes as a|b")
    func lists() throws {
        #expect(
            try value("node a = x { phrases: [\"call my mother\", \"open the door\"] }", "phrases")
                == .list(["call my mother", "open the door"]))
        #expect(try value("node a = x { phrases: [\n  \"one\",\n  two\n] }", "phrases") == .list(["one", "two"]))
        #expect(try value("node a = x { phrases: [] }", "phrases") == .list([]))
        let p = ParameterDescriptor.string("phrases", default: nil, doc: "")
        guard case .success(.string(let joined)) = p.check(.list(["a b", "c"])) else {
            Issue.record("a list for a string parameter")
            return
        }
        #expect(joined == "a b|c")
        guard case .failure(let e) = p.check(.list(["a|b"])) else {
            Issue.record("an item with '|' must be refused")
            return
        }
        #expect(e.message == "a list item of 'phrases' cannot hold '|': \"a|b\"")
        #expect(
            parseErrors("node a = x { phrases: [\"a\" \"b\"] }")
                == ["t.graph:1:28: error: expected ',' or ']' in the list, found a string"])
        // A byte that is not UTF-8: where it is.
        let bytes = Array("node a = x\nnode b = \"é".utf8) + [0xFF] + Array("\"\n".utf8)
        #expect(SourceLocation.firstInvalidUTF8(in: bytes, file: "f") == SourceLocation(file: "f", line: 2, column: 12))
        #expect(SourceLocation.firstInvalidUTF8(in: Array("ok\né".utf8), file: "f") == nil)
        // A file of stray characters: a thousand errors, then the rest is not read.
        let stray = parseErrors(String(repeating: "@", count: 50_000))
        #expect(stray.count == 1001)
        #expect(
            stray.last
                == "t.graph:1:1001: error: too many errors: the rest of the file is not read (is it a graph file?)")
        // The item with the '|' is blamed, not the list's '['.
        #expect(
            parseErrors("node a = x { phrases: [\n  \"one\",\n  \"two|three\"\n] }")
                == [
                    "t.graph:3:3: error: a list item cannot hold '|' (it separates the items): \"two|three\"; "
                        + "write each part as an item of its own"
                ])
        #expect(
            parseErrors("node a = x { phrases: [-> ] }")
                == ["t.graph:1:24: error: expected a \"string\" or ']' in the list, found '->'"])
    }
}
