import Foundation

/// A back-off n-gram model, estimated from a corpus with interpolated Kneser-Ney smoothing and written as
/// ARPA text.
///
/// Smoothing, for order k and history h (k-1 words), with c the counts of order k (raw counts at the
/// highest order, continuation counts below it, except for n-grams that start with `<s>`, which keep raw
/// counts since nothing precedes them):
///
///     P_k(w | h) = max(c(h w) - D_k, 0) / c(h) + γ(h) P_{k-1}(w | h'),   γ(h) = D_k N1+(h •) / c(h)
///
/// where h' is h without its first word and D_k = n1 / (n1 + 2 n2) from the counts of counts, kept within
/// [0.1, 0.9] (templates repeat each sentence many times, which leaves no singletons). Unigrams
/// interpolate with the uniform distribution over the vocabulary. The ARPA model stores P_k for every seen
/// n-gram and γ(h) as h's back-off weight, which makes it the same distribution as the interpolated one:
/// for every history, the probabilities of all words sum to 1.
public struct NGramModel: Sendable {
    public let order: Int
    /// The vocabulary, `</s>` included, `<s>` not (it is never predicted).
    public let vocabulary: [String]
    /// For each order (index 0: unigrams), each seen n-gram's log10 probability and back-off weight.
    public private(set) var grams: [[[String]: (prob: Double, backoff: Double?)]]
    /// The discount of each order.
    public let discounts: [Double]

    static let start = "<s>"
    static let end = "</s>"
    static let unknown = "<UNK>"  // as PocketSphinx spells it (ngram_unknown_wid)
    /// See `init`: measured on the chess development set (docs/lm.md).
    public static let defaultOtherSpeech = 1e-4

    /// `otherSpeech`: how likely a domain word is to follow a word outside the domain (`<UNK>`), relative to
    /// its unigram probability; nil: the model has no `<UNK>`.
    public init(_ corpus: LMCorpus, order: Int, otherSpeech: Double? = NGramModel.defaultOtherSpeech) {
        precondition(order >= 1)
        self.order = order
        // Raw counts of every order.
        var raw = [[[String]: Int]](repeating: [:], count: order)
        for (words, count) in corpus.sentences {
            let padded = [Self.start] + words + [Self.end]
            for end in 1..<padded.count {
                for k in 1...order where end - k + 1 >= 0 {
                    raw[k - 1][Array(padded[(end - k + 1)...end]), default: 0] += count
                }
            }
        }
        // Counts used at each order: continuation counts below the top, except n-grams that start with <s>.
        var counts = raw
        for k in 1..<order {
            var continuation: [[String]: Int] = [:]
            for gram in raw[k].keys { continuation[Array(gram.dropFirst()), default: 0] += 1 }
            counts[k - 1] = raw[k - 1].reduce(into: [:]) { out, entry in
                out[entry.key] = entry.key.first == Self.start ? entry.value : (continuation[entry.key] ?? entry.value)
            }
        }
        discounts = counts.map { level in
            let n1 = Double(level.values.filter { $0 == 1 }.count)
            let n2 = Double(level.values.filter { $0 == 2 }.count)
            guard n1 > 0, n2 > 0 else { return n1 > 0 ? 0.9 : 0.1 }
            return min(0.9, max(0.1, n1 / (n1 + 2 * n2)))
        }
        let vocabulary = Set(raw[0].keys.map { $0[0] }).subtracting([Self.start]).sorted()
        self.vocabulary = otherSpeech != nil && order >= 2 ? (vocabulary + [Self.unknown]).sorted() : vocabulary

        // Interpolated probabilities, order by order (natural probabilities first, log10 at the end).
        var probs = [[[String]: Double]](repeating: [:], count: order)
        var gammas = [[[String]: Double]](repeating: [:], count: order)  // by history, per order
        let unigramTotal = Double(counts[0].filter { $0.key != [Self.start] }.values.reduce(0, +))
        let unigramTypes = Double(counts[0].keys.filter { $0 != [Self.start] }.count)
        let uniform = 1 / Double(max(1, vocabulary.count))
        let gamma0 = discounts[0] * unigramTypes / unigramTotal
        for w in vocabulary {
            let c = Double(counts[0][[w]] ?? 0)
            probs[0][[w]] = max(c - discounts[0], 0) / unigramTotal + gamma0 * uniform
        }
        for k in 2...max(2, order) where k <= order {
            var totals: [[String]: Double] = [:]
            var types: [[String]: Double] = [:]
            for (gram, c) in counts[k - 1] {
                let h = Array(gram.dropLast())
                totals[h, default: 0] += Double(c)
                types[h, default: 0] += 1
            }
            for (h, total) in totals { gammas[k - 1][h] = discounts[k - 1] * types[h]! / total }
            for (gram, c) in counts[k - 1] {
                let h = Array(gram.dropLast())
                let lower = probs[k - 2][Array(gram.dropFirst())] ?? 0
                probs[k - 1][gram] = max(Double(c) - discounts[k - 1], 0) / totals[h]! + gammas[k - 1][h]! * lower
            }
        }
        // Other speech: `<UNK>` stands for every word outside the domain. Predicted, it is all but impossible
        // (the domain's sentences hold none); as a history it ends the sentence, and a domain word follows it
        // only with probability `otherSpeech` times its unigram probability. Alone, the decoder never meets
        // `<UNK>` (no dictionary word maps to it); interpolated with a general model, the general model's
        // words map to it, so a domain word after general speech is not favoured just because it is frequent
        // in the domain.
        if let gate = otherSpeech, order >= 2 {
            let unknownProbability = 1e-9
            for gram in probs[0].keys { probs[0][gram]! *= 1 - unknownProbability }
            probs[0][[Self.unknown]] = unknownProbability
            probs[1][[Self.unknown, Self.end]] = 1 - gate
            gammas[1][[Self.unknown]] = gate / (1 - probs[0][[Self.end]]!)
        }
        // Into log10, with back-off weights on the histories.
        var grams = [[[String]: (prob: Double, backoff: Double?)]](repeating: [:], count: order)
        for k in 1...order {
            for (gram, p) in probs[k - 1] { grams[k - 1][gram] = (log10(p), nil) }
        }
        grams[0][[Self.start]] = (-99, nil)
        for k in 2...max(2, order) where k <= order {
            for (h, g) in gammas[k - 1] where grams[k - 2][h] != nil {
                grams[k - 2][h]!.backoff = log10(g)
            }
        }
        self.grams = grams
    }

    /// log10 P(word | history), by backing off as a decoder does (the history's last `order - 1` words).
    public func logProbability(of word: String, after history: [String]) -> Double {
        var h = Array(history.suffix(order - 1))
        var backoff = 0.0
        while true {
            if let entry = grams[h.count][h + [word]] { return backoff + entry.prob }
            if h.isEmpty { return -99 }
            backoff += grams[h.count - 1][h]?.backoff ?? 0
            h.removeFirst()
        }
    }

    /// The model as ARPA text: sections in order, n-grams sorted, probabilities with 6 decimals.
    public var arpa: String {
        var out = "\\data\\\n"
        for k in 1...order { out += "ngram \(k)=\(grams[k - 1].count)\n" }
        for k in 1...order {
            out += "\n\\\(k)-grams:\n"
            for gram in grams[k - 1].keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
                let entry = grams[k - 1][gram]!
                out += String(format: "%.6f", entry.prob) + "\t" + gram.joined(separator: " ")
                if k < order { out += "\t" + String(format: "%.6f", entry.backoff ?? 0) }
                out += "\n"
            }
        }
        return out + "\n\\end\\\n"
    }
}
