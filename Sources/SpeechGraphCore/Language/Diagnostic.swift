/// A place in a graph file: 1-based line and column.
public struct SourceLocation: Hashable, Sendable, Comparable, CustomStringConvertible {
    public var file: String
    public var line: Int
    public var column: Int

    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    public var description: String { "\(file):\(line):\(column)" }

    public static func < (a: SourceLocation, b: SourceLocation) -> Bool {
        (a.file, a.line, a.column) < (b.file, b.line, b.column)
    }

    /// Where the first byte that is not UTF-8 is in `bytes` (columns counted in characters before it, as an
    /// editor shows them), or nil when they are all UTF-8.
    public static func firstInvalidUTF8<Bytes: Sequence<UInt8>>(in bytes: Bytes, file: String) -> SourceLocation? {
        var iterator = bytes.makeIterator()
        var decoder = UTF8()
        var (line, column) = (1, 1)
        while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                if scalar == "\n" {
                    (line, column) = (line + 1, 1)
                } else {
                    column += 1
                }
            case .emptyInput: return nil
            case .error: return SourceLocation(file: file, line: line, column: column)
            }
        }
    }
}

/// One finding about a graph: an error, a warning or a note, with its location when it has one.
public struct Diagnostic: Hashable, Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable { case error, warning, note }

    public var severity: Severity
    public var location: SourceLocation?
    public var message: String

    public init(_ severity: Severity = .error, at location: SourceLocation?, _ message: String) {
        self.severity = severity
        self.location = location
        self.message = message
    }

    public static func error(_ message: String, at location: SourceLocation?) -> Diagnostic {
        Diagnostic(.error, at: location, message)
    }

    /// `file:line:col: error: message`, the form compilers use, so editors can jump to it.
    public var description: String {
        let text = Self.printable(message)
        if let location { return "\(location): \(severity.rawValue): \(text)" }
        return "\(severity.rawValue): \(text)"
    }

    /// `text` with its control characters written as escapes (`\0`, `\u{1B}`): a graph file's NUL byte or
    /// terminal escape quoted in a message must not reach the terminal raw.
    public static func printable(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: isControl) else { return text }
        var out = ""
        for scalar in text.unicodeScalars {
            if scalar == "\0" {
                out += "\\0"
            } else if isControl(scalar) {
                out += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
        return out
    }

    private static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (0x7F...0x9F).contains(s.value)
    }
}

/// Thrown when a graph cannot be parsed, validated or planned. Carries every diagnostic found.
public struct GraphError: Error, Sendable, CustomStringConvertible {
    public var diagnostics: [Diagnostic]

    public init(_ diagnostics: [Diagnostic]) { self.diagnostics = diagnostics }
    public init(_ diagnostic: Diagnostic) { self.diagnostics = [diagnostic] }

    public var description: String { diagnostics.map(\.description).joined(separator: "\n") }
}

/// Collects diagnostics while a pass runs, so that every problem is reported, not just the first.
public struct DiagnosticList: Sendable {
    public private(set) var all: [Diagnostic] = []
    public init() {}
    public var hasErrors: Bool { all.contains { $0.severity == .error } }
    public var errorCount: Int { all.reduce(0) { $0 + ($1.severity == .error ? 1 : 0) } }
    /// An error; the same error at the same place a second time (a misspelt node in two edges of one chain,
    /// `a -> bb -> c`) is said once.
    public mutating func error(_ message: String, at location: SourceLocation?) {
        let d = Diagnostic.error(message, at: location)
        guard errorsSeen.insert(d).inserted else { return }
        all.append(d)
    }
    /// The errors so far, to say each once (a set: a hostile line can hold 600,000 of them).
    private var errorsSeen: Set<Diagnostic> = []
    public mutating func append(_ d: Diagnostic) { all.append(d) }
    public mutating func append(contentsOf ds: [Diagnostic]) { all.append(contentsOf: ds) }
    /// Throws the collected diagnostics, in file order, if any of them is an error.
    public func throwIfErrors() throws {
        if hasErrors { throw GraphError(sorted) }
    }
    /// In file order; a note stays right after the diagnostic it was added with.
    public var sorted: [Diagnostic] {
        var groups: [[Diagnostic]] = []
        for d in all {
            if d.severity == .note, !groups.isEmpty { groups[groups.count - 1].append(d) } else { groups.append([d]) }
        }
        let order = groups.enumerated().sorted { a, b in
            switch (a.element[0].location, b.element[0].location) {
            case let (x?, y?): return x == y ? a.offset < b.offset : x < y
            case (nil, _?): return false
            case (_?, nil): return true
            case (nil, nil): return a.offset < b.offset
            }
        }
        return order.flatMap(\.element)
    }
}

/// "did you mean ...?" for a misspelt name: the closest candidate within a small edit distance.
public func closestMatch(to word: String, in candidates: some Sequence<String>) -> String? {
    let w = Array(word.lowercased())
    var best: (String, Int)?
    for candidate in candidates {
        let d = editDistance(w, Array(candidate.lowercased()))
        let limit = max(1, min(3, candidate.count / 3 + 1))
        if d <= limit, best == nil || d < best!.1 { best = (candidate, d) }
    }
    return best?.0
}

/// The edit distance between two sequences (of characters, of words): optimal string alignment, which counts
/// insertions, deletions, substitutions and adjacent transpositions ("hangvoer" is one slip from "hangover").
public func editDistance<Element: Equatable>(_ a: [Element], _ b: [Element]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in 0...a.count { d[i][0] = i }
    for j in 0...b.count { d[0][j] = j }
    for i in 1...a.count {
        for j in 1...b.count {
            let cost = a[i - 1] == b[j - 1] ? 0 : 1
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost)
            if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
            }
        }
    }
    return d[a.count][b.count]
}

package func didYouMean(_ word: String, _ candidates: some Sequence<String>) -> String {
    if let m = closestMatch(to: word, in: candidates) { return " (did you mean '\(m)'?)" }
    return ""
}
