import Foundation

/// Pronunciations in the model's phones: the 39 ARPAbet phones of CMUdict (and of PocketSphinx's en-us
/// model), without stress. X-SAMPA (as Apple's custom pronunciations are written), IPA (as espeak-ng writes
/// them) and CMU/ARPAbet strings map onto them.
public enum Phones {
    /// The en-us model's phones.
    public static let arpabet: Set<String> = [
        "AA", "AE", "AH", "AO", "AW", "AY", "B", "CH", "D", "DH", "EH", "ER", "EY", "F", "G", "HH", "IH", "IY",
        "JH", "K", "L", "M", "N", "NG", "OW", "OY", "P", "R", "S", "SH", "T", "TH", "UH", "UW", "V", "W", "Y", "Z",
        "ZH",
    ]

    public struct MappingError: Error, CustomStringConvertible {
        public var description: String
    }

    /// X-SAMPA symbols and the ARPAbet phones they map to. Vowel quality is mapped to the nearest General
    /// American phone (X-SAMPA `r` and `r\` are both R; `@r`, as in Apple's sample, is ER).
    static let xsampa: [String: [String]] = [
        "A": ["AA"], "Q": ["AA"], "a": ["AA"], "{": ["AE"], "V": ["AH"], "@": ["AH"], "6": ["AH"], "O": ["AO"],
        "aU": ["AW"], "aI": ["AY"], "E": ["EH"], "e": ["EY"], "eI": ["EY"], "3`": ["ER"], "@`": ["ER"],
        "@r": ["ER"], "3r": ["ER"], "3": ["ER"], "I": ["IH"], "i": ["IY"], "o": ["OW"], "oU": ["OW"], "@U": ["OW"],
        "OI": ["OY"], "U": ["UH"], "u": ["UW"], "b": ["B"], "tS": ["CH"], "d": ["D"], "D": ["DH"], "f": ["F"],
        "g": ["G"], "h": ["HH"], "dZ": ["JH"], "k": ["K"], "l": ["L"], "5": ["L"], "m": ["M"], "n": ["N"],
        "N": ["NG"], "p": ["P"], "r": ["R"], "r\\": ["R"], "s": ["S"], "S": ["SH"], "t": ["T"], "4": ["T"],
        "?": ["T"], "T": ["TH"], "v": ["V"], "w": ["W"], "W": ["W"], "j": ["Y"], "z": ["Z"], "Z": ["ZH"],
        "x": ["K"], "l=": ["AH", "L"], "n=": ["AH", "N"], "m=": ["AH", "M"],
    ]

    /// IPA symbols (as espeak-ng's `--ipa` writes American English) and their ARPAbet phones.
    static let ipa: [String: [String]] = [
        "ɑ": ["AA"], "ɒ": ["AA"], "a": ["AE"], "æ": ["AE"], "ʌ": ["AH"], "ə": ["AH"], "ɐ": ["AH"], "ɔ": ["AO"],
        "aʊ": ["AW"], "aɪ": ["AY"], "ɛ": ["EH"], "e": ["EY"], "eɪ": ["EY"], "ɚ": ["ER"], "ɝ": ["ER"],
        "ɜ": ["ER"], "ɜɹ": ["ER"], "ɪ": ["IH"], "ᵻ": ["IH"], "i": ["IY"], "o": ["OW"],
        "oʊ": ["OW"], "əʊ": ["OW"], "ɔɪ": ["OY"], "ʊ": ["UH"], "u": ["UW"], "b": ["B"], "tʃ": ["CH"],
        "d": ["D"], "ð": ["DH"], "f": ["F"], "ɡ": ["G"], "g": ["G"], "h": ["HH"], "dʒ": ["JH"], "k": ["K"],
        "l": ["L"], "ɫ": ["L"], "m": ["M"], "n": ["N"], "ŋ": ["NG"], "p": ["P"], "ɹ": ["R"], "r": ["R"],
        "s": ["S"], "ʃ": ["SH"], "t": ["T"], "ɾ": ["T"], "ʔ": ["T"], "θ": ["TH"], "v": ["V"], "w": ["W"],
        "j": ["Y"], "z": ["Z"], "ʒ": ["ZH"], "x": ["K"], "n̩": ["AH", "N"], "l̩": ["AH", "L"], "m̩": ["AH", "M"],
    ]

    /// `"w I n aU @r"` (symbols separated by spaces) or `"wInaU@r"` (read longest symbol first). Stress (`"`,
    /// `%`), length (`:`) and syllable breaks (`.`) are dropped.
    public static func fromXSAMPA(_ text: String) throws -> [String] {
        try map(text, table: xsampa, marks: ["\"", "%", ":", ".", "'", ","], name: "X-SAMPA")
    }

    /// IPA, as espeak-ng writes it: `wˈɪnəwɚ`. Stress and length marks are dropped.
    /// `skippingUnknown`: symbols the table lacks are left out (espeak-ng's guess for a foreign word, such as the
    /// Welsh 'ɬ' of "Llanelli", is still the nearest English pronunciation without them).
    public static func fromIPA(_ text: String, skippingUnknown: Bool = false) throws -> [String] {
        try map(
            text, table: ipa, marks: ["ˈ", "ˌ", "ː", "ˑ", ".", "-", "ʲ", "ʰ", "͡"], name: "IPA",
            skippingUnknown: skippingUnknown)
    }

    /// `"W IH1 N AW0 ER0"`: CMUdict's ARPAbet, stress digits allowed and dropped, any case.
    public static func fromCMU(_ text: String) throws -> [String] {
        let phones = text.split(whereSeparator: \.isWhitespace).map {
            $0.uppercased().filter { !$0.isNumber }
        }
        guard !phones.isEmpty else { throw MappingError(description: "the pronunciation has no phones") }
        if let bad = phones.first(where: { !arpabet.contains($0) }) {
            throw MappingError(
                description: "unknown ARPAbet phone '\(bad)'; the model's phones are "
                    + arpabet.sorted().joined(separator: " "))
        }
        return phones
    }

    private static func map(
        _ text: String, table: [String: [String]], marks: Set<String>, name: String, skippingUnknown: Bool = false
    ) throws -> [String] {
        let longest = table.keys.map(\.unicodeScalars.count).max() ?? 1
        var phones: [String] = []
        for chunk in text.split(whereSeparator: \.isWhitespace) {
            let scalars = Array(chunk.unicodeScalars)
            var i = 0
            while i < scalars.count {
                let one = String(scalars[i])
                if marks.contains(one) {
                    i += 1
                    continue
                }
                var matched = false
                for length in stride(from: min(longest, scalars.count - i), through: 1, by: -1) {
                    var symbol = ""
                    symbol.unicodeScalars.append(contentsOf: scalars[i..<(i + length)])
                    if let mapped = table[symbol] {
                        phones += mapped
                        i += length
                        matched = true
                        break
                    }
                }
                if !matched && skippingUnknown {
                    i += 1
                } else if !matched {
                    throw MappingError(
                        description: "unknown \(name) symbol '\(one)' in '\(text)'; known: "
                            + table.keys.sorted().joined(separator: " "))
                }
            }
        }
        guard !phones.isEmpty else { throw MappingError(description: "the pronunciation has no phones") }
        return phones
    }
}
