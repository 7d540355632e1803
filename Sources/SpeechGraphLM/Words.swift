import Foundation
import SpeechGraphCore

/// How text becomes the words a model and its dictionary hold: lower case; a hyphen splits words
/// ("Caro-Kann" is "caro kann"); punctuation goes, apostrophes stay ("queen's"); numbers are spoken as
/// words ("8" is "eight", "1986" is "one thousand nine hundred eighty six", "1,000" "one thousand", "21.5"
/// "twenty one point five", "2nd" "second", "50%" "fifty percent", "21°" "twenty one degrees", "-5" "minus
/// five", "$5" "five dollars").
public enum LMWords {
    public static func words(of text: String) -> [String] {
        var out: [String] = []
        var word = ""
        let text = spokenSigns(asciiDigits(text))
        func flush() {
            if !word.isEmpty {
                let w = word.trimmingCharacters(in: CharacterSet(charactersIn: "'"))
                if !w.isEmpty {
                    if w.allSatisfy(\.isASCIIDigit), let n = Int(w) { out += spoken(n) } else { out.append(w) }
                }
                word = ""
            }
        }
        for ch in text.lowercased() {
            if ch.isLetter || ch.isNumber || ch == "'" {
                // A number written against letters ("e4") is its own word.
                if let last = word.last, last.isASCIIDigit != ch.isASCIIDigit, ch != "'", last != "'" { flush() }
                word.append(ch)
            } else {
                flush()
            }
        }
        flush()
        return out
    }

    /// Digits of any script ('٣', '３') as the ASCII digits they stand for, so that they are spoken as numbers.
    static func asciiDigits(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { !$0.isASCII && $0.properties.numericType == .decimal }) else {
            return text
        }
        var out = String.UnicodeScalarView()
        for scalar in text.unicodeScalars {
            if !scalar.isASCII, scalar.properties.numericType == .decimal, let v = scalar.properties.numericValue,
                let digit = Unicode.Scalar(48 + UInt32(v))
            {
                out.append(digit)
            } else {
                out.append(scalar)
            }
        }
        return String(out)
    }

    /// Numbers written with signs, separators and suffixes, as words the loop above takes as they are.
    /// Only ASCII digits are numbers here (a regex's `\d` takes any script's, such as '٣', which `Int` does not).
    static func spokenSigns(_ text: String) -> String {
        guard text.contains(where: \.isASCIIDigit) else { return text }
        var t = text
        // 1,000 and 12,500,000: the separators go.
        t = t.replacing(/(^|[^0-9.,])([0-9]{1,3}(?:,[0-9]{3})+)(?![0-9])/) {
            String($0.output.1) + String($0.output.2).filter { $0 != "," }
        }
        // $5 and $5.50 (dollars, then the decimals as they come).
        t = t.replacing(/\$([0-9]+(?:\.[0-9]+)?)/) { "\($0.output.1) dollars" }
        t = t.replacing(/([0-9])\s?%/) { "\($0.output.1) percent" }
        t = t.replacing(/([0-9])\s?°/) { "\($0.output.1) degrees" }
        // A minus sign before a number (not a hyphen between words: "x-5" stays two words).
        t = t.replacing(/(^|[\s(\[])-(?=[0-9])/) { "\($0.output.1)minus " }
        // 21.5: "twenty one point five"; the decimals digit by digit.
        t = t.replacing(/([0-9]+)\.([0-9]+)/) { m in
            "\(m.output.1) point "
                + m.output.2.compactMap { $0.wholeNumberValue.map { ones[$0] } }.joined(separator: " ")
        }
        // 1st, 2nd, 23rd, 4th: ordinals.
        t = t.replacing(/([0-9]+)(?:st|nd|rd|th)\b/.ignoresCase()) { m in
            guard let n = Int(m.output.1) else { return String(m.output.0) }
            return ordinal(spoken(n)).joined(separator: " ")
        }
        return t
    }

    /// Cardinal words as the ordinal: "twenty one" is "twenty first", "twelve" "twelfth", "forty" "fortieth".
    static func ordinal(_ words: [String]) -> [String] {
        guard let last = words.last else { return words }
        let irregular = [
            "one": "first", "two": "second", "three": "third", "five": "fifth", "eight": "eighth", "nine": "ninth",
            "twelve": "twelfth",
        ]
        let word = irregular[last] ?? (last.hasSuffix("y") ? String(last.dropLast()) + "ieth" : last + "th")
        return words.dropLast() + [word]
    }

    private static let ones = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
        "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen",
    ]
    private static let tens = ["", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]

    /// A whole number as its cardinal words; beyond 999,999,999 digit by digit.
    public static func spoken(_ n: Int) -> [String] {
        if n < 0 { return ["minus"] + spoken(-n) }
        if n < 20 { return [ones[n]] }
        if n < 100 { return [tens[n / 10]] + (n % 10 == 0 ? [] : [ones[n % 10]]) }
        if n < 1000 { return [ones[n / 100], "hundred"] + (n % 100 == 0 ? [] : spoken(n % 100)) }
        if n < 1_000_000 { return spoken(n / 1000) + ["thousand"] + (n % 1000 == 0 ? [] : spoken(n % 1000)) }
        if n < 1_000_000_000 {
            return spoken(n / 1_000_000) + ["million"] + (n % 1_000_000 == 0 ? [] : spoken(n % 1_000_000))
        }
        return String(n).map { ones[Int(String($0))!] }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}

/// Templates: `"<piece> to <royal> <piece> <rank>"`.
public enum LMTemplate {
    /// A class name: letters, digits, `_` and `-`.
    public static func isClassName(_ name: String) -> Bool {
        !name.isEmpty && name.allSatisfy(isClassNameCharacter)
    }

    static func isClassNameCharacter(_ c: Character) -> Bool { c.isLetter || c.isNumber || c == "_" || c == "-" }

    /// A template's parts, in order: its literal text as words, and its class references.
    public enum Piece: Equatable {
        case words([String])
        case reference(String)
    }

    /// The template as pieces (empty literal runs left out).
    public static func pieces(of template: String) -> [Piece] {
        var out: [Piece] = []
        var rest = Substring(template)
        func literal(_ text: Substring) {
            let words = LMWords.words(of: String(text))
            if !words.isEmpty { out.append(.words(words)) }
        }
        for (name, _) in references(in: template) {
            guard let range = rest.range(of: "<\(name)>") else { continue }
            literal(rest[..<range.lowerBound])
            out.append(.reference(name))
            rest = rest[range.upperBound...]
        }
        literal(rest)
        return out
    }

    /// The class names a template refers to, with the offset (in characters) of each `<`.
    public static func references(in template: String) -> [(name: String, offset: Int)] {
        var out: [(String, Int)] = []
        let chars = Array(template)
        var i = 0
        while i < chars.count {
            if chars[i] == "<" {
                // Up to the first character a class name cannot hold (not to the next '>', wherever it is: a
                // text of many '<' and no '>' would take quadratic time).
                var close = i + 1
                while close < chars.count, isClassNameCharacter(chars[close]) { close += 1 }
                if close < chars.count, chars[close] == ">", close > i + 1 {
                    out.append((String(chars[(i + 1)..<close]), i))
                    i = close + 1
                    continue
                }
            }
            i += 1
        }
        return out
    }

    /// Every expansion of a template, as words, in a fixed order (the first class varies slowest).
    public static func expansions(of template: String, classes: [String: [String]]) -> [[String]] {
        // Each piece's choices: its literal words, or a class's values as word lists.
        let choices: [[[String]]] = pieces(of: template).map { piece in
            switch piece {
            case .words(let words): [words]
            case .reference(let name): (classes[name] ?? []).map { LMWords.words(of: $0) }
            }
        }
        var out: [[String]] = [[]]
        for choices in choices {
            out = out.flatMap { prefix in choices.map { prefix + $0 } }
        }
        return out.filter { !$0.isEmpty }
    }

    /// How many expansions a template has, without making them (Int.max when that overflows).
    public static func expansionCount(of template: String, classes: [String: [String]]) -> Int {
        references(in: template).reduce(1) { n, r in
            let (product, overflow) = n.multipliedReportingOverflow(by: classes[r.name]?.count ?? 0)
            return overflow ? Int.max : product
        }
    }

    /// Templates with more expansions than this are sampled (their `count`, or this many samples), not listed.
    public static let enumerationLimit = 100_000
    /// The most samples drawn from a template with more combinations than `enumerationLimit`.
    public static let sampleLimit = 1_000_000

    /// One expansion, each class value drawn with `random`.
    static func sample(_ template: String, classes: [String: [String]], random: () -> UInt64) -> [String] {
        pieces(of: template).flatMap { piece -> [String] in
            switch piece {
            case .words(let words): return words
            case .reference(let name):
                guard let values = classes[name], !values.isEmpty else { return [] }
                return LMWords.words(of: values[Int(random() % UInt64(values.count))])
            }
        }
    }
}

/// The text a model is estimated from: sentences (as words) with counts.
public struct LMCorpus: Sendable, Equatable {
    public var sentences: [(words: [String], count: Int)]

    public init(_ sentences: [(words: [String], count: Int)]) { self.sentences = sentences }

    public static func == (a: LMCorpus, b: LMCorpus) -> Bool {
        a.sentences.count == b.sentences.count
            && zip(a.sentences, b.sentences).allSatisfy { $0.words == $1.words && $0.count == $1.count }
    }

    /// The spec's phrases with their counts, then each template's `count` samples spread evenly over its
    /// expansions: each expansion gets `count / n`, and the remainder goes one each to expansions picked by
    /// a fixed pseudo-random sequence, so the same spec always gives the same corpus.
    public init(_ spec: LMSpec) {
        var sentences: [(words: [String], count: Int)] = []
        for p in spec.phrases {
            let words = LMWords.words(of: p.text)
            if !words.isEmpty { sentences.append((words, p.count)) }
        }
        var random = SplitMix64(seed: 0x5EED_5EED)
        for t in spec.templates {
            let n = LMTemplate.expansionCount(of: t.text, classes: spec.classes)
            if n > LMTemplate.enumerationLimit {
                // Too many to list ("<letter> <letter> <letter> <letter> <letter>" has 26^5): draw the samples,
                // each sentence once with the times it was drawn (in the order first drawn).
                var drawn: [[String]: Int] = [:]
                var order: [[String]] = []
                for _ in 0..<min(t.count ?? LMTemplate.enumerationLimit, LMTemplate.sampleLimit) {
                    let words = LMTemplate.sample(t.text, classes: spec.classes) { random.next() }
                    guard !words.isEmpty else { continue }
                    if drawn[words] == nil { order.append(words) }
                    drawn[words, default: 0] += 1
                }
                for words in order { sentences.append((words, drawn[words]!)) }
                continue
            }
            let expansions = LMTemplate.expansions(of: t.text, classes: spec.classes)
            guard !expansions.isEmpty else { continue }
            let total = t.count ?? expansions.count
            var counts = [Int](repeating: total / expansions.count, count: expansions.count)
            var remainder = total % expansions.count
            var picked = Set<Int>()
            while remainder > 0 {
                let i = Int(random.next() % UInt64(expansions.count))
                if picked.insert(i).inserted {
                    counts[i] += 1
                    remainder -= 1
                }
            }
            for (words, count) in zip(expansions, counts) where count > 0 { sentences.append((words, count)) }
        }
        self.sentences = sentences
    }

    /// Every word the corpus holds, sorted.
    public var vocabulary: [String] { Array(Set(sentences.flatMap(\.words))).sorted() }
}

extension LMSpec {
    /// The spec as a JSGF grammar: exactly its phrases and its templates' expansions (counts do not matter to a
    /// grammar). `lm build` writes it as grammar.jsgf, for the recognizer's `grammar`.
    public func jsgf(name: String = "spec") -> String {
        func words(_ text: String) -> String { LMWords.words(of: text).joined(separator: " ") }
        var alternatives: [String] = []
        var rules: [String] = []
        let phrases = Array(Set(self.phrases.map { words($0.text) }).filter { !$0.isEmpty }).sorted()
        if !phrases.isEmpty {
            alternatives.append("<phrase>")
            rules.append("<phrase> = " + phrases.joined(separator: " | ") + ";")
        }
        for (i, t) in templates.enumerated() {
            let body = LMTemplate.pieces(of: t.text).map { piece in
                switch piece {
                case .words(let words): words.joined(separator: " ")
                case .reference(let name): "<class_\(name)>"
                }
            }
            let rule = "<template_\(i + 1)>"
            alternatives.append(rule)
            rules.append("\(rule) = " + body.joined(separator: " ") + ";")
        }
        for name in classes.keys.sorted() {
            let values = Array(Set(classes[name]!.map(words).filter { !$0.isEmpty })).sorted()
            rules.append("<class_\(name)> = " + values.joined(separator: " | ") + ";")
        }
        let safe = name.filter { $0.isLetter || $0.isNumber || $0 == "_" }
        return "#JSGF V1.0;\ngrammar \(safe.isEmpty ? "spec" : safe);\n\npublic <utterance> = "
            + alternatives.joined(separator: " | ") + ";\n\n" + rules.joined(separator: "\n") + "\n"
    }
}
