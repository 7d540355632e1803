import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

private func ok(_ p: ParameterDescriptor, _ literal: ValueLiteral) -> ParameterValue? {
    if case .success(let v) = p.check(literal) { return v }
    return nil
}

private func failure(_ p: ParameterDescriptor, _ literal: ValueLiteral) -> String? {
    if case .failure(let e) = p.check(literal) { return e.message }
    return nil
}

private let frequency = ParameterDescriptor.quantity("rate", default: 16, .kilohertz, range: 8...48, doc: "")
private let time = ParameterDescriptor.quantity("hangover", default: 300, .milliseconds, range: 0...3000, doc: "")
private let level = ParameterDescriptor.quantity("threshold", default: -40, .decibels, range: -120...0, doc: "")
private let number = ParameterDescriptor.number("ratio", default: 0.5, range: 0...1, doc: "")
private let integer = ParameterDescriptor.integer("channels", default: 1, range: 1...8, doc: "")
private let boolean = ParameterDescriptor.boolean("words", default: true, doc: "")
private let string = ParameterDescriptor.string("model", default: "en-us", doc: "")
private let path = ParameterDescriptor.path("path", doc: "")
private let choice = ParameterDescriptor.choice(
    "mode", ["normal", "aggressive", "very-aggressive"], default: "normal", doc: "")

@Suite("ParameterDescriptor.check", .tags(.fast))
struct ParameterCheckTests {
    @Test(
        "quantities are converted to the canonical unit",
        arguments: [
            ("16 kHz", ValueLiteral.number(16, unit: "kHz"), 16000.0),
            ("16000 Hz", .number(16000, unit: "Hz"), 16000),
            ("8 khz", .number(8, unit: "khz"), 8000),
            ("44.1 kHz", .number(44.1, unit: "kHz"), 44100),
        ])
    func frequencies(_ label: String, literal: ValueLiteral, hertz: Double) throws {
        let v = try #require(ok(frequency, literal))
        guard case .number(let n) = v else {
            Issue.record("not a number: \(v)")
            return
        }
        #expect(abs(n - hertz) < 1e-9)
    }

    @Test("durations are converted to seconds")
    func durations() {
        #expect(ok(time, .number(300, unit: "ms")) == .number(0.3))
        #expect(ok(time, .number(1.5, unit: "s")) == .number(1.5))
        #expect(ok(time, .number(2, unit: "sec")) == .number(2))
        guard case .number(let us)? = ok(time, .number(250_000, unit: "us")) else {
            Issue.record("250000 us")
            return
        }
        #expect(abs(us - 0.25) < 1e-12)
        #expect(ok(time, .number(3000, unit: "ms")) == .number(3), "the upper bound itself is in range")
        #expect(ok(time, .number(0, unit: "s")) == .number(0))
        // Zero needs no unit (it is zero in all of them); any other number does.
        #expect(ok(time, .number(0, unit: nil)) == .number(0))
        #expect(failure(time, .number(1, unit: nil))?.hasPrefix("missing unit for 'hangover'") == true)
        #expect(failure(frequency, .number(0, unit: nil))?.hasPrefix("0 is out of range for 'rate'") == true)
    }

    @Test("levels stay in dB")
    func levels() {
        #expect(ok(level, .number(-40, unit: "dB")) == .number(-40))
        #expect(ok(level, .number(-6, unit: "dBFS")) == .number(-6))
    }

    @Test("unit errors say what was expected")
    func unitErrors() {
        #expect(
            failure(frequency, .number(16, unit: "ms"))
                == "wrong unit 'ms' for 'rate': expected a frequency like '16 kHz' or '48000 Hz', not a time")
        #expect(
            failure(time, .number(16, unit: "kHz"))
                == "wrong unit 'kHz' for 'hangover': expected a duration like '300 ms' or '1.5 s', not a frequency")
        #expect(
            failure(frequency, .number(16000, unit: nil))
                == "missing unit for 'rate': expected a frequency like '16 kHz' or '48000 Hz'")
        #expect(
            failure(level, .number(3, unit: "dBm"))
                == "unknown unit 'dBm' for 'threshold': expected a level like '-40 dB'")
        #expect(failure(level, .word("loud")) == "expected a level like '-40 dB' for 'threshold', found loud")
        #expect(
            failure(frequency, .string("16 kHz"))
                == "expected a frequency like '16 kHz' or '48000 Hz' for 'rate', found \"16 kHz\"")
    }

    @Test("range errors show the range in the parameter's display unit")
    func rangeErrors() {
        #expect(
            failure(frequency, .number(96, unit: "kHz")) == "96 kHz is out of range for 'rate': expected 8 to 48 kHz")
        #expect(
            failure(frequency, .number(4000, unit: "Hz")) == "4000 Hz is out of range for 'rate': expected 8 to 48 kHz")
        #expect(failure(time, .number(5, unit: "s")) == "5 s is out of range for 'hangover': expected 0 to 3000 ms")
        #expect(failure(time, .number(-1, unit: "ms")) == "-1 ms is out of range for 'hangover': expected 0 to 3000 ms")
        #expect(
            failure(level, .number(10, unit: "dB")) == "10 dB is out of range for 'threshold': expected -120 to 0 dB")
        #expect(failure(number, .number(1.5, unit: nil)) == "1.5 is out of range for 'ratio': expected 0 to 1")
        #expect(failure(integer, .number(9, unit: nil)) == "9 is out of range for 'channels': expected 1 to 8")
        #expect(failure(integer, .number(0, unit: nil)) == "0 is out of range for 'channels': expected 1 to 8")
    }

    @Test("plain numbers and integers")
    func numbers() {
        #expect(ok(number, .number(0.25, unit: nil)) == .number(0.25))
        #expect(ok(integer, .number(2, unit: nil)) == .integer(2))
        #expect(failure(integer, .number(2.5, unit: nil)) == "expected a whole number for 'channels', found 2.5")
        #expect(failure(number, .number(1, unit: "dB")) == "'ratio' takes a plain number, without a unit ('dB')")
        #expect(failure(integer, .number(2, unit: "Hz")) == "'channels' takes a plain number, without a unit ('Hz')")
        #expect(failure(number, .word("high")) == "expected a number for 'ratio', found high")
        #expect(failure(integer, .string("2")) == "expected a number for 'channels', found \"2\"")
    }

    @Test("an integer too large for Int is an error, not a crash")
    func hugeInteger() async throws {
        // Int(v) traps for a whole number beyond Int.max (this once crashed on 'channels: 1e20'), so the check
        // runs in a child process: a regression fails this test instead of taking the suite down. The child
        // prints each error message; the parent compares them.
        let result = try #require(
            await #expect(processExitsWith: .success, observing: [\.standardOutputContent]) {
                let p = ParameterDescriptor.integer("channels", default: 1, range: 1...8, doc: "")
                for v in [1e20, -1e20, 9.3e18, 1e300] {
                    if case .failure(let e) = p.check(.number(v, unit: nil)) {
                        print(e.message)
                    } else {
                        print("accepted \(v)")
                    }
                }
            })
        #expect(
            String(decoding: result.standardOutputContent, as: UTF8.self).split(separator: "\n") == [
                "1e+20 is out of range for 'channels': expected 1 to 8",
                "-1e+20 is out of range for 'channels': expected 1 to 8",
                "9.3e+18 is out of range for 'channels': expected 1 to 8",
                "1e+300 is out of range for 'channels': expected 1 to 8",
            ])
    }

    @Test("booleans accept true/yes/on and false/no/off, in any case")
    func booleans() {
        for w in ["true", "yes", "on", "TRUE", "Yes"] { #expect(ok(boolean, .word(w)) == .boolean(true), "\(w)") }
        for w in ["false", "no", "off", "Off"] { #expect(ok(boolean, .word(w)) == .boolean(false), "\(w)") }
        #expect(
            failure(boolean, .number(3, unit: nil)) == "expected true or false (or yes/no, on/off) for 'words', found 3"
        )
        #expect(
            failure(boolean, .word("maybe")) == "expected true or false (or yes/no, on/off) for 'words', found maybe")
        #expect(
            failure(boolean, .string("true"))
                == "expected true or false (or yes/no, on/off) for 'words', found \"true\": write it without quotes")
    }

    @Test("strings take quoted strings and words; paths must be quoted")
    func stringsAndPaths() {
        #expect(ok(string, .string("en us")) == .string("en us"))
        #expect(ok(string, .word("en-us")) == .string("en-us"))
        #expect(failure(string, .number(3, unit: nil)) == "expected a \"string\" for 'model', found 3")
        #expect(ok(path, .string("a b.wav")) == .string("a b.wav"))
        #expect(failure(path, .word("speech")) == "expected a quoted path for 'path', as in \"speech\"")
        #expect(failure(path, .string("")) == "an empty path for 'path': it names no file")
        #expect(failure(path, .number(1, unit: "s")) == "expected a \"string\" for 'path', found 1 s")
    }

    @Test("choices, with did-you-mean")
    func choices() {
        #expect(ok(choice, .word("aggressive")) == .string("aggressive"))
        #expect(ok(choice, .string("very-aggressive")) == .string("very-aggressive"))
        #expect(
            failure(choice, .word("agressive"))
                == "'agressive' is not one of normal, aggressive, very-aggressive for 'mode' "
                + "(did you mean 'aggressive'?)"
        )
        #expect(failure(choice, .word("xyz")) == "'xyz' is not one of normal, aggressive, very-aggressive for 'mode'")
        #expect(failure(choice, .word("Normal")) != nil, "choices are case-sensitive")
        #expect(
            failure(choice, .number(1, unit: nil))
                == "expected one of normal, aggressive, very-aggressive for 'mode', found 1")
    }

    @Test("defaults and ranges read as a user writes them")
    func texts() {
        #expect(frequency.defaultText == "16 kHz")
        #expect(time.defaultText == "300 ms")
        #expect(level.defaultText == "-40 dB")
        #expect(integer.defaultText == "1")
        #expect(boolean.defaultText == "true")
        #expect(string.defaultText == "\"en-us\"")
        #expect(choice.defaultText == "normal")
        #expect(path.defaultText == "(none)")
        #expect(ParameterDescriptor.path("p", required: true, doc: "").defaultText == "(required)")
        #expect(frequency.rangeText == "8 to 48 kHz")
        #expect(time.rangeText == "0 to 3000 ms")
        #expect(integer.rangeText == "1 to 8")
        #expect(boolean.rangeText == nil)
    }

    @Test("units parse as written")
    func units() {
        #expect(QuantityUnit.parse("kHz") == .kilohertz)
        #expect(QuantityUnit.parse("KHz") == .kilohertz)
        #expect(QuantityUnit.parse("ms") == .milliseconds)
        #expect(QuantityUnit.parse("µs") == .microseconds)
        #expect(QuantityUnit.parse("\u{03BC}s") == .microseconds, "the Greek mu, which looks like the micro sign")
        #expect(QuantityUnit.parse("Ms") == nil)
        #expect(QuantityUnit.parse("MHz") == nil)
        #expect(formatQuantity(0.3, in: .milliseconds) == "300 ms")
        #expect(formatQuantity(44100, in: .kilohertz) == "44.1 kHz")
    }

    @Test("did-you-mean finds close names only")
    func closest() {
        #expect(closestMatch(to: "hangvoer", in: ["hangover", "threshold"]) == "hangover")
        #expect(closestMatch(to: "treshold", in: ["hangover", "threshold"]) == "threshold")
        #expect(closestMatch(to: "RATE", in: ["rate"]) == "rate")
        #expect(closestMatch(to: "volume", in: ["hangover", "threshold"]) == nil)
        #expect(editDistance(Array("abc"), Array("acb")) == 1)
        #expect(editDistance(Array(""), Array("ab")) == 2)
    }
}

@Suite("Parameters in the planner", .tags(.fast))
struct PlannerParameterTests {
    @Test("defaults are filled into NodeConfig; written values replace them, in canonical units")
    func defaults() throws {
        let plan = try validatePlan(
            """
            node mic = fake.source { path: "a.wav", rate: 44.1 kHz }
            node vad = fake.gate { hangover: 1.5 s }
            node asr = fake.recognizer
            node out = fake.sink
            mic -> vad -> asr -> out
            """)
        let mic = try #require(plan.nodes.first { $0.name == "mic" }).config
        #expect(mic.string("path") == "a.wav")
        #expect(abs((mic.number("rate") ?? 0) - 44100) < 1e-6)
        #expect(mic.integer("channels") == 1)
        #expect(mic.number("duration") == 0.2)
        #expect(mic.number("block") == 0.05)
        #expect(mic.bool("loop") == false)
        #expect(mic.typeName == "fake.source")
        #expect(mic.locations["rate"] == SpeechGraphCore.SourceLocation(file: "test.graph", line: 1, column: 47))
        #expect(mic.locations["channels"] == nil, "a default has no location")
        let vad = try #require(plan.nodes.first { $0.name == "vad" }).config
        #expect(vad.number("threshold") == -40)
        #expect(vad.number("hangover") == 1.5)
        #expect(vad.number("ratio") == 0.5)
        #expect(vad.string("mode") == "normal")
        let asr = try #require(plan.nodes.first { $0.name == "asr" }).config
        #expect(asr.number("rate") == 16000)
        #expect(asr.string("model") == "en-us")
        #expect(asr.bool("words") == true)
        let out = try #require(plan.nodes.first { $0.name == "out" }).config
        #expect(out.values["path"] == nil, "an optional parameter without a default stays unset")
        #expect(out.values["label"] == nil)
    }

    static let graph = """
        node mic = fake.source { path: "a.wav" }
        node asr = fake.recognizer { rate: 16 kHz }
        node out = fake.sink
        mic -> asr -> out
        """

    @Test("--set overrides replace file values and defaults")
    func overridesApply() throws {
        let overrides = ["asr.rate=8 kHz", "asr.mode=utterance", "mic.channels=2", "out.label=screen"]
            .compactMap(GraphPlanner.Override.parse)
        #expect(overrides.count == 4)
        let plan = try validatePlan(Self.graph, overrides: overrides)
        let asr = try #require(plan.nodes.first { $0.name == "asr" }).config
        #expect(asr.number("rate") == 8000)
        #expect(asr.string("mode") == "utterance")
        #expect(try #require(plan.nodes.first { $0.name == "mic" }).config.integer("channels") == 2)
        #expect(try #require(plan.nodes.first { $0.name == "out" }).config.string("label") == "screen")
    }

    @Test(
        "a wrong --set is reported with its '--set node.param' prefix and no location",
        arguments: [
            (
                "asr.rate=16",
                "error: --set asr.rate: missing unit for 'rate': expected a frequency like '16 kHz' or '48000 Hz'"
            ),
            ("asr.rate=96 kHz", "error: --set asr.rate: 96 kHz is out of range for 'rate': expected 8 to 48 kHz"),
            (
                "asr.mode=streamin",
                "error: --set asr.mode: 'streamin' is not one of streaming, utterance for 'mode' "
                    + "(did you mean 'streaming'?)"
            ),
            (
                "asr.rat=8 kHz",
                "error: --set asr.rat: unknown parameter 'rat' for node type 'fake.recognizer' (did you mean 'rate'?)"
            ),
            ("ars.rate=8 kHz", "error: --set ars.rate: no node named 'ars' (did you mean 'asr'?)"),
            (
                "asr.language=en",
                "error: --set asr.language: unknown parameter 'language' for node type 'fake.recognizer' "
                    + "('speechgraph nodes fake.recognizer' lists its parameters)"
            ),
            ("out.path=1 s", "error: --set out.path: expected a \"string\" for 'path', found 1 s"),
        ])
    func overrideErrors(text: String, expected: String) throws {
        let o = try #require(GraphPlanner.Override.parse(text))
        #expect(diagnostics(of: Self.graph, overrides: [o]) == [expected])
    }

    @Test("on the command line a bare word is accepted for a string or path parameter (the shell ate the quotes)")
    func bareWordOverride() throws {
        let overrides = ["out.path=speech", "out.label=screen", #"asr.model="en-gb""#].compactMap(
            GraphPlanner.Override.parse)
        #expect(overrides.count == 3)
        #expect(diagnostics(of: Self.graph, overrides: overrides).isEmpty)
        let plan = try validatePlan(Self.graph, overrides: overrides)
        let out = try #require(plan.nodes.first { $0.name == "out" }).config
        #expect(out.string("path") == "speech")
        #expect(out.string("label") == "screen")
        #expect(try #require(plan.nodes.first { $0.name == "asr" }).config.string("model") == "en-gb")
        // In a graph file a path must still be quoted.
        #expect(
            diagnostics(
                of: """
                    node mic = fake.source { path: "a.wav" }
                    node asr = fake.recognizer
                    node out = fake.sink { path: speech }
                    mic -> asr -> out
                    """) == ["test.graph:3:30: error: expected a quoted path for 'path', as in \"speech\""])
    }

    @Test("a missing required parameter names the node, the type and the parameter's doc")
    func required() {
        #expect(
            diagnostics(
                of: "node mic = fake.source\nnode asr = fake.recognizer\nnode out = fake.sink\nmic -> asr -> out")
                == [
                    "test.graph:1:1: error: node 'mic' (fake.source) needs parameter 'path': "
                        + "Where the audio would come from (not read)."
                ])
        // Given by --set only: fine.
        let o = GraphPlanner.Override.parse("mic.path=a.wav")!
        #expect(
            diagnostics(
                of: "node mic = fake.source\nnode asr = fake.recognizer\nnode out = fake.sink\nmic -> asr -> out",
                overrides: [o]
            ).isEmpty)
    }

    @Test("a type without parameters says so")
    func noParameters() {
        let found = diagnostics(
            of: """
                node mic = fake.source { path: "a.wav" }
                node mix = downmix { rate: 16 kHz }
                node asr = fake.recognizer
                node out = fake.sink
                mic -> mix -> asr -> out
                """)
        #expect(found.count == 1)
        #expect(found.first?.hasPrefix("test.graph:2:") == true)
        #expect(
            found.first?.hasSuffix("error: unknown parameter 'rate' for node type 'downmix' (it takes no parameters)")
                == true)
    }
}
