import Foundation
import SpeechGraphCore
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphLM

/// The language-model spec, template expansion, pronunciations and the n-gram estimator: no model, no audio.
@Suite(.tags(.fast)) struct LMSpecTests {
    static let chess = """
        locale "en-US"
        phrase "Play the Albin counter gambit" { count: 10 }
        class piece = pawn, rook, knight, bishop, queen, king
        class royal = queen, king
        class rank = 1 to 8
        template "<piece> to <royal> <piece> <rank>" { count: 10000 }
        pronounce "Winawer" { xsampa: "w I n aU @r" }
        pronounce "Tartakower" { xsampa: "t A r t @ k aU @r" }
        """

    @Test("Apple's chess sample parses: phrases, classes (numbers spoken), a template, X-SAMPA pronunciations")
    func chessSpec() throws {
        let spec = try LMSpec(source: Self.chess, file: "chess.lmspec")
        #expect(spec.locale == "en-US")
        #expect(spec.phrases == [.init("Play the Albin counter gambit", count: 10, location: spec.phrases[0].location)])
        #expect(spec.classes["rank"] == ["1", "2", "3", "4", "5", "6", "7", "8"])
        #expect(spec.templates.map(\.count) == [10000])
        #expect(spec.pronunciations.map(\.word) == ["winawer", "tartakower"])
        #expect(spec.pronunciations[0].phones == ["W", "IH", "N", "AW", "ER"])
        #expect(spec.pronunciations[1].phones == ["T", "AA", "R", "T", "AH", "K", "AW", "ER"])
        // The spec written back parses to the same spec.
        #expect(try LMSpec(source: spec.source).source == spec.source)
    }

    @Test("Template expansion: every combination, numbers as words, 10,000 samples spread evenly")
    func expansion() throws {
        let spec = try LMSpec(source: Self.chess)
        let expansions = LMTemplate.expansions(of: spec.templates[0].text, classes: spec.classes)
        #expect(expansions.count == 6 * 2 * 6 * 8)
        #expect(expansions.first == ["pawn", "to", "queen", "pawn", "one"])
        #expect(expansions.contains(["king", "to", "king", "bishop", "eight"]))
        let corpus = LMCorpus(spec)
        let moves = corpus.sentences.filter { $0.words.count == 5 && $0.words[1] == "to" }
        #expect(moves.count == 576)
        #expect(moves.reduce(0) { $0 + $1.count } == 10000)
        #expect(Set(moves.map(\.count)) == [17, 18])  // 10000 = 576 x 17 + 208
        #expect(LMCorpus(spec) == corpus)  // the same spec, the same corpus
        #expect(
            LMWords.words(of: "Play the Caro-Kann, 1986!") == [
                "play", "the", "caro", "kann", "one", "thousand", "nine", "hundred", "eighty", "six",
            ])
        #expect(LMWords.words(of: "the Queen's e4") == ["the", "queen's", "e", "four"])
    }

    @Test("numbers written with signs, separators and suffixes are spoken as a thermostat's user says them")
    func numbersAsSaid() {
        func said(_ text: String) -> String { LMWords.words(of: text).joined(separator: " ") }
        #expect(said("set it to 21.5 degrees") == "set it to twenty one point five degrees")
        #expect(said("1,000 lumens") == "one thousand lumens")
        #expect(said("12,500,000 people") == "twelve million five hundred thousand people")
        #expect(said("the 2nd floor, the 21st, 3rd and 40th") == "the second floor the twenty first third and fortieth")
        #expect(said("dim to 50%") == "dim to fifty percent")
        #expect(said("it is 21° outside") == "it is twenty one degrees outside")
        #expect(said("-5 outside, x-5") == "minus five outside x five")
        #expect(said("costs $5") == "costs five dollars")
        #expect(said("version 1,2 and e4") == "version one two and e four")
        // Digits of other scripts are numbers too (a '\d' that took them once crashed the build on "1.٣").
        #expect(said("pay 1.٣ now") == "pay one point three now")
        #expect(said("room ３ and ١٢") == "room three and twelve")
    }

    @Test("class references: a name closed by '>'; a '<' with no class after it is text")
    func classReferences() {
        #expect(LMTemplate.references(in: "<a<b> to <rank>").map(\.name) == ["b", "rank"])
        #expect(LMTemplate.references(in: "< room > and <> and <a b>").isEmpty)
        // Many '<' and no '>' (once quadratic: 50,000 of them took minutes).
        #expect(LMTemplate.references(in: "a " + String(repeating: "<", count: 50_000) + " b").isEmpty)
    }

    @Test("X-SAMPA, IPA and CMU pronunciations map to the model's phones; unknown symbols are named")
    func phones() throws {
        #expect(try Phones.fromXSAMPA("\"t{.bl=") == ["T", "AE", "B", "AH", "L"])
        #expect(try Phones.fromXSAMPA("dZ O r dZ") == ["JH", "AO", "R", "JH"])
        #expect(try Phones.fromXSAMPA("l=") == ["AH", "L"])
        #expect(try Phones.fromIPA("wˈɪnæwɚ") == ["W", "IH", "N", "AE", "W", "ER"])
        #expect(try Phones.fromIPA("bˈʌʔn̩") == ["B", "AH", "T", "AH", "N"])
        #expect(try Phones.fromCMU("w ih1 n aw0 er0") == ["W", "IH", "N", "AW", "ER"])
        #expect(throws: Phones.MappingError.self) { try Phones.fromXSAMPA("w I ~ n") }
        #expect(throws: Phones.MappingError.self) { try Phones.fromCMU("W XX N") }
        #expect(throws: Phones.MappingError.self) { try Phones.fromIPA("") }
        // espeak-ng's guess for a foreign word may hold symbols English lacks (Welsh 'ɬ'): left out of a guess,
        // which failed a whole Wyoming request with "Llanelli" among its names.
        #expect(throws: Phones.MappingError.self) { try Phones.fromIPA("ɬanˈɛɬi") }
        #expect(try Phones.fromIPA("ɬanˈɛɬi", skippingUnknown: true) == ["AE", "N", "EH", "IY"])
    }

    /// The diagnostics of a spec, as text.
    func diagnostics(_ source: String) -> String {
        do {
            _ = try LMSpec(source: source, file: "t.lmspec")
            return ""
        } catch {
            return "\(error)"
        }
    }

    @Test("Spec errors are located (file:line:col: error:) and say what was expected")
    func specDiagnostics() {
        #expect(
            diagnostics("phrase \"a\" { count: 0 }").contains("t.lmspec:1:21: error: a count must be a whole number"))
        #expect(
            diagnostics("template \"<piec> to <rank>\"\nclass piece = a\nclass rank = 1 to 2")
                .contains(
                    "t.lmspec:1:11: error: template uses class '<piec>', which is not defined (did you mean 'piece'?)"))
        #expect(
            diagnostics("phrse \"a\"").contains(
                "t.lmspec:1:1: error: unknown statement 'phrse' (did you mean 'phrase'?)"))
        #expect(
            diagnostics("phrase \"a\"\npronounce \"x\" { xsampa: \"w ~\" }").contains(
                "t.lmspec:2:25: error: unknown X-SAMPA symbol '~'"))
        #expect(
            diagnostics("phrase \"a\"\npronounce \"x\" { sampa: \"w\" }").contains(
                "unknown setting 'sampa' (did you mean 'xsampa'?)"))
        #expect(
            diagnostics("locale \"fr-FR\"\nphrase \"a\"").contains(
                "t.lmspec:1:8: error: no model for locale 'fr-FR'; installed: en-US"))
        #expect(
            diagnostics("class a = x\nclass a = y\nphrase \"z\"").contains(
                "t.lmspec:2:1: error: class 'a' is defined twice (first at t.lmspec:1:1)"))
        #expect(
            diagnostics("class r = 8 to 1\nphrase \"a\"").contains("t.lmspec:1:16: error: the range 8 to 1 must go up"))
        #expect(diagnostics("# nothing\n").contains("t.lmspec:1:1: error: the spec has no phrases and no templates"))
        #expect(
            diagnostics("phrase \"a\" { count: 2 } extra").contains(
                "t.lmspec:1:25: error: expected the end of the line, found 'extra'"))
        // A '<' that names no class would be read as a word; a phrase with a class in it is meant as a template.
        let classes = diagnostics(
            "class room = a\ntemplate \"go to <room\"\ntemplate \"to <room >\"\nphrase \"in <room>\"")
        for expected in [
            "t.lmspec:2:17: error: '<' that names no class: a class is written '<name>'",
            "t.lmspec:3:14: error: '<' that names no class",
            "t.lmspec:4:8: error: a phrase names no classes: write 'template' for one with '<class>' in it",
        ] {
            #expect(classes.contains(expected), "\(classes)")
        }
        // Escapes before a class are two characters in the file for one in the template: the column is the file's.
        #expect(
            diagnostics("template \"\\\"say\\\" \\t <nope>\"").contains(
                "t.lmspec:1:22: error: template uses class '<nope>'"))
        #expect(
            diagnostics("class x = a\ntemplate \"\\\\\\\\ <x> <room\"").contains(
                "t.lmspec:2:20: error: '<' that names no class"))
        // A backslash that took the closing quote: the message says how to write one.
        #expect(
            diagnostics("phrase \"a\"\npronounce \"x\" { xsampa: \"r\\\" }").contains(
                "t.lmspec:2:25: error: unterminated string: expected a closing '\"' ('\\\"' is a quote inside the "
                    + "string; a backslash is written '\\\\')"))
        // CR line ends (an old Mac's) are line ends: a comment ends with its line.
        #expect(
            diagnostics("phrase \"a\"\r# c\rphrase \"b\" { count: 0 }\r").contains(
                "t.lmspec:3:21: error: a count must be a whole number"))
        // Every error at once, in file order.
        let both = diagnostics("phrse \"a\"\nphrase \"b\" { count: -1 }")
        #expect(both.split(separator: "\n").count == 2)
        // One mistake, one error: not also what its remains look like to the next rule.
        for (source, expected) in [
            ("phrase \"a\" { count 10 }", "t.lmspec:1:20: error: expected ':' after 'count', found number '10'"),
            ("phrase \"a\" { 1 2 3 }", "t.lmspec:1:14: error: expected a setting name or '}', found number '1'"),
            ("phrase \"a\" { count 3 4, count: 2 }", "t.lmspec:1:20: error: expected ':' after 'count'"),
            ("phrase six", "t.lmspec:1:8: error: expected a phrase in quotes, found 'six'"),
            ("template x\nphrase \"a\"", "t.lmspec:1:10: error: expected a template in quotes"),
            ("locale 3\nphrase \"a\"", "t.lmspec:1:8: error: expected a locale such as \"en-US\""),
            ("pronounce {\nphrase \"a\"", "t.lmspec:1:11: error: expected the word to pronounce"),
            ("class n = 0 to 10000\ntemplate \"<n>\"", "t.lmspec:1:16: error: the range 0 to 10000 must go up"),
            ("phrase \"a\"\npronounce \"x\" { arpabet: \"W\" }", "t.lmspec:2:17: error: unknown setting 'arpabet'"),
        ] {
            let errors = diagnostics(source).split(separator: "\n")
            #expect(errors.count == 1, "\(source): \(errors)")
            #expect(errors.first?.hasPrefix(expected) == true, "\(source): \(errors)")
        }
        // A class no template uses is a warning, not an error.
        let spec = try? LMSpec(source: "class unused = a\nphrase \"b\"", file: "t.lmspec")
        #expect(spec?.warnings.map(\.description) == ["t.lmspec:1:1: warning: class 'unused' is used by no template"])
    }
}

@Suite(.tags(.fast)) struct JSGFCheckTests {
    func errors(_ rules: String) -> [String] {
        do {
            try JSGFCheck.check("#JSGF V1.0;\ngrammar g;\n" + rules, file: "g.jsgf")
            return []
        } catch {
            return "\(error)".split(separator: "\n").map(String.init)
        }
    }

    @Test("A grammar's check goes on after an error: every mistake said, each once, and no rule taken for missing")
    func everyErrorOnce() {
        let all = errors(
            """
            <a> = lights on | "lights off" | next slide
            public <b> = <a>+ <missing>;
            <c> = x | (y ;
            <d> = ;
            public ;
            <e> = <b> | <c> | <d> | <f> ) ;
            <f> = z;
            <g> = "unclosed ;
            <h> = <g> <nowhere>;
            """)
        #expect(
            all == [
                "g.jsgf:3:19: error: PocketSphinx reads the quoted token \"lights off\" as one word, quotes included, "
                    + "which no dictionary has: write lights off without quotes",
                "g.jsgf:4:1: error: expected ';' to end rule <a> before rule <b> begins",
                "g.jsgf:4:19: error: rule <missing> is not defined in this grammar",
                "g.jsgf:5:11: error: '(' opened here is not closed with ')' before the ';' that ends rule <c>",
                "g.jsgf:6:7: error: expected something before ';'",
                "g.jsgf:7:1: error: expected a rule name (<name>) after 'public'",
                "g.jsgf:8:29: error: unexpected ')'",
                "g.jsgf:10:7: error: a quoted token opened here is not closed with '\"' on its line",
                "g.jsgf:11:11: error: rule <nowhere> is not defined in this grammar",
            ], "\(all)")
        // Groups nested thousands deep: an error, not a stack overflow.
        #expect(
            errors(
                "public <a> = " + String(repeating: "(", count: 5000) + "x" + String(repeating: ")", count: 5000) + ";")
                == ["g.jsgf:3:114: error: groups nested more than 100 deep in rule <a>"])
        #expect(
            errors(
                "public <a> = " + String(repeating: "[", count: 100) + "x" + String(repeating: "]", count: 100) + ";"
            ).isEmpty)
        // What PocketSphinx's own parser refuses, said here where it is: weights it does not read as numbers, an
        // empty rule name, a header without its ';' on its line.
        #expect(
            errors("public <a> = /1e5/ go | /5./ stop | /.5/ on | / 5 / off;")
                == [
                    "g.jsgf:3:14: error: expected a weight: a number between slashes, in digits with at most one point "
                        + "(/10/, /0.5/)",
                    "g.jsgf:3:25: error: expected a weight: a number between slashes, in digits with at most one point "
                        + "(/10/, /0.5/)",
                    "g.jsgf:3:47: error: expected a weight: a number between slashes, in digits with at most one point "
                        + "(/10/, /0.5/)",
                ])
        #expect(errors("public <> = go;") == ["g.jsgf:3:8: error: a rule name is empty: '<>'"])
        do {
            try JSGFCheck.check("#JSGF V1.0\ngrammar g;\npublic <a> = go;\n", file: "h.jsgf")
            Issue.record("a header without its ';'")
        } catch {
            #expect("\(error)" == "h.jsgf:1:1: error: expected ';' to end the header, as in '#JSGF V1.0;'")
        }
        // A rule that begins with itself: PocketSphinx loaded it and recognised nothing.
        #expect(
            errors("public <a> = <a> go | go;")
                == [
                    "g.jsgf:3:14: error: rule <a> begins with itself (<a> -> <a>), which PocketSphinx cannot search: "
                        + "it recognises nothing; put the repetition at the end (<a> = go <a> | go;) or use '+'"
                ])
        #expect(
            errors("public <a> = <b> now;\n<b> = <c> x;\n<c> = <a> go | stop;")
                == [
                    "g.jsgf:3:14: error: rule <a> begins with itself (<a> -> <b> -> <c> -> <a>), which PocketSphinx "
                        + "cannot search: it recognises nothing; put the repetition at the end (<a> = go <a> | go;) "
                        + "or use '+'"
                ])
        // Recursion at the end of a sequence is what JSGF means, also after optional words.
        #expect(errors("public <a> = go <a> | go;\n<b> = x (y | <b>) z;\npublic <c> = <b>;").isEmpty)
        #expect(
            errors("public <cmd> = <action> | <polite>;\n<polite> = [please] <cmd>;\n<action> = open | close;")
                .isEmpty)
        func whole(_ text: String) -> [String] {
            do {
                try JSGFCheck.check(text, file: "w.jsgf")
                return []
            } catch {
                return "\(error)".split(separator: "\n").map(String.init)
            }
        }
        // A statement that lost its ';' before a rule: that rule is still defined (not also "not defined").
        #expect(
            whole("#JSGF V1.0;\ngrammar g\n<a> = x;\npublic <b> = <a>;\n")
                == ["w.jsgf:3:1: error: expected ';' after 'grammar g', found '<a>'"])
        // A header may go on over lines.
        #expect(whole("#JSGF V1.0\n  UTF-8;\ngrammar g;\npublic <a> = go;\n").isEmpty)
        // CR line ends (an old Mac's): lines counted as an editor counts them.
        #expect(
            errors("public <a> = go;\r<b> = <c>;\r\n") == ["g.jsgf:4:7: error: rule <c> is not defined in this grammar"]
        )
        // Without errors before it, a grammar with no public rule says so.
        #expect(
            errors("<a> = x;\n") == [
                "g.jsgf:1:1: error: the grammar has no public rule: a recognizer decodes with its first public rule"
            ])
        #expect(errors("public <a> = x <a>;\n").isEmpty)
    }
}

/// `import`, as PocketSphinx's JSGF reader does it: the file found in the first grammar's directory, the rule public
/// in a grammar of the imported name, known by its short name where imported and by its full name anywhere.
@Suite(.tags(.fast)) struct JSGFImportTests {
    let root: String

    init() throws {
        root = NSTemporaryDirectory() + "speechgraph-jsgf-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root + "/com/acme", withIntermediateDirectories: true)
        try write("digits.gram", "grammar digits;\npublic <digit> = one | two | three;\n<hidden> = four;\n")
        try write("com/acme/colours.gram", "grammar com.acme.colours;\npublic <red> = red;\npublic <blue> = blue;\n")
        try write("numbers.gram", "grammar numerals;\npublic <digit> = one;\n")
        try write("broken.gram", "grammar broken;\npublic <x> = go\n")
    }

    func write(_ name: String, _ body: String) throws {
        try ("#JSGF V1.0;\n" + body).write(toFile: root + "/" + name, atomically: true, encoding: .utf8)
    }

    /// The errors of grammar `cmd` (in the directory) with these statements after its header.
    func errors(_ statements: String) throws -> [String] {
        try write("cmd.gram", "grammar cmd;\n" + statements)
        do {
            try JSGFCheck.check(file: root + "/cmd.gram")
            return []
        } catch {
            return "\(error)".split(separator: "\n").map { $0.replacingOccurrences(of: root + "/", with: "") }
        }
    }

    @Test("Imported rules are known where PocketSphinx knows them; every import it cannot make is said where it is")
    func importsAsPocketSphinxReadsThem() throws {
        defer { try? FileManager.default.removeItem(atPath: root) }
        // By short name where imported, by full name anywhere; a whole grammar with '.*'; nested packages.
        #expect(try errors("import <digits.digit>;\npublic <cmd> = call <digit> | dial <digits.digit>;\n").isEmpty)
        #expect(try errors("import <com.acme.colours.*>;\npublic <cmd> = paint <red> | <blue>;\n").isEmpty)
        let missing = try errors("import <nothing.digit>;\npublic <cmd> = call <digit>;\n")
        #expect(
            missing == [
                "cmd.gram:3:8: error: cannot import <nothing.digit>: no grammar file nothing.gram in '\(root)' "
                    + "(PocketSphinx looks in the first grammar's directory, or in those of JSGF_PATH when it is set)",
                "cmd.gram:4:21: error: rule <digit> is not defined in this grammar",
            ], "\(missing)")
        #expect(
            try errors("import <digit>;\npublic <cmd> = call one;\n") == [
                "cmd.gram:3:8: error: cannot import <digit>: an imported rule is named with its grammar, as "
                    + "<grammar.rule> or <grammar.*>"
            ])
        #expect(
            try errors("import <digits.hidden>;\nimport <digits.eleven>;\npublic <cmd> = call one;\n") == [
                "cmd.gram:3:8: error: cannot import <digits.hidden>: digits.gram does not make rule <hidden> public",
                "cmd.gram:4:8: error: cannot import <digits.eleven>: digits.gram has no rule <eleven>",
            ])
        #expect(
            try errors("import <numbers.digit>;\npublic <cmd> = call one;\n") == [
                "cmd.gram:3:8: error: cannot import <numbers.digit>: numbers.gram calls its grammar 'numerals', so "
                    + "PocketSphinx finds no rule of grammar 'numbers' in it (write 'grammar numbers;' there)"
            ])
        // An error in an imported grammar is said in its file, once.
        #expect(
            try errors("import <broken.x>;\npublic <cmd> = call <x>;\n") == [
                "broken.gram:3:16: error: expected ';' to end rule <x>, found 'the end of the file'"
            ])
        // A full name that no grammar read defines.
        #expect(
            try errors("import <digits.digit>;\npublic <cmd> = call <colours.red>;\n") == [
                "cmd.gram:4:21: error: rule <colours.red> is not defined: no grammar read (this one or one it "
                    + "imports) defines it"
            ])
        // The words of imported grammars are the grammar's words too (for the dictionary's check).
        try write("cmd.gram", "grammar cmd;\nimport <digits.*>;\npublic <cmd> = call <digit>;\n")
        let words = JSGFCheck.words(file: root + "/cmd.gram").map(\.text)
        #expect(words == ["call", "one", "two", "three", "four"], "\(words)")
    }
}

@Suite(.tags(.fast)) struct NGramModelTests {
    /// Every history the model stores (and the empty one): the probabilities of all words after it sum to 1.
    static func checkSums(_ model: NGramModel) {
        var histories: [[String]] = [[]]
        for k in 1..<model.order { histories += model.grams[k - 1].keys.filter { $0.last != "</s>" } }
        for h in histories {
            let sum = model.vocabulary.reduce(0.0) { $0 + pow(10, model.logProbability(of: $1, after: h)) }
            #expect(abs(sum - 1) < 1e-4, "history \(h): \(sum)")
        }
    }

    @Test("The probabilities after every history sum to 1 (chess spec, orders 1 to 4, with and without <UNK>)")
    func sumsToOne() throws {
        let corpus = LMCorpus(try LMSpec(source: LMSpecTests.chess))
        for order in 1...4 {
            Self.checkSums(NGramModel(corpus, order: order))
            Self.checkSums(NGramModel(corpus, order: order, otherSpeech: nil))
        }
    }

    @Test("Kneser-Ney by hand on a toy corpus: probabilities and back-off weights")
    func handComputed() {
        // "a b" twice, "a c" once; bigram model, no <UNK>.
        let model = NGramModel(LMCorpus([(["a", "b"], 2), (["a", "c"], 1)]), order: 2, otherSpeech: nil)
        // Bigram counts: <s> a 3, a b 2, a c 1, b </s> 2, c </s> 1: n1 = 2, n2 = 2, so D2 = 2 / (2 + 4) = 1/3.
        #expect(abs(model.discounts[1] - 1.0 / 3) < 1e-12)
        // Unigram continuation counts: a 1 (after <s>), b 1, c 1, </s> 2: n1 = 3, n2 = 1, D1 = 3 / 5 = 0.6.
        #expect(abs(model.discounts[0] - 0.6) < 1e-12)
        // P1(w) = max(c - 0.6, 0) / 5 + 0.6 * 4 / 5 * 1/4: a, b, c 0.2; </s> 0.4.
        let p1 = ["a": 0.2, "b": 0.2, "c": 0.2, "</s>": 0.4]
        for (w, p) in p1 { #expect(abs(pow(10, model.logProbability(of: w, after: [])) - p) < 1e-6, "\(w)") }
        // History a: c(a) = 3, two types, gamma = 1/3 * 2 / 3 = 2/9.
        // P(b|a) = (2 - 1/3) / 3 + 2/9 * 0.2 = 0.6; P(c|a) = (1 - 1/3) / 3 + 2/9 * 0.2 = 0.2667.
        func p(_ w: String, _ h: [String]) -> Double { pow(10, model.logProbability(of: w, after: h)) }
        #expect(abs(p("b", ["a"]) - 0.6) < 1e-6)
        #expect(abs(p("c", ["a"]) - (2.0 / 9 + 0.4 / 9)) < 1e-6)
        // The back-off weight of a is gamma, log10(2/9); an unseen word after a backs off through it.
        #expect(abs(model.grams[0][["a"]]!.backoff! - log10(2.0 / 9)) < 1e-9)
        #expect(abs(p("</s>", ["a"]) - 2.0 / 9 * 0.4) < 1e-6)
        // History <s>: one type (a, 3 times): gamma = 1/3 / 3 = 1/9; P(a|<s>) = (3 - 1/3) / 3 + 1/9 * 0.2.
        #expect(abs(p("a", ["<s>"]) - (8.0 / 9 + 0.2 / 9)) < 1e-6)
        Self.checkSums(model)
        // ARPA: the header counts, each section, 6 decimals.
        let arpa = model.arpa
        #expect(arpa.hasPrefix("\\data\\\nngram 1=5\nngram 2=5\n"))
        #expect(arpa.contains("\n-0.698970\ta\t-0.653213\n"))  // P(a) = 0.2, back-off 2/9
        #expect(arpa.contains("\n-0.698970\tb\t-0.778151\n"))  // history b: one type, 2 counts: 1/3 / 2
        #expect(arpa.contains("\n-99.000000\t<s>\t-0.954243\n"))  // never predicted; back-off 1/9
        #expect(arpa.contains("\n-0.221849\ta b\n"))  // P(b|a) = 0.6
    }
}
