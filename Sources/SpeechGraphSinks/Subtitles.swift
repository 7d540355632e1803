import SpeechGraphCore

/// One subtitle cue: a time span and at most `maxLines` lines of text.
public struct Cue: Sendable, Equatable {
    public var start: Double
    public var end: Double
    public var lines: [String]
}

/// Cuts final results into subtitle cues as subtitle editors expect them: at most 2 lines of at most 42
/// characters and at most 7 s each; a result too long for one cue is cut where the cue is full, or a little
/// earlier where the speaker paused, and its last two cues share their words rather than leave one or two over.
public struct CueMaker: Sendable {
    public var maxLineLength = 42
    public var maxLines = 2
    public var maxDuration = 7.0
    /// A silence between words at least this long is where a long result is cut, if it comes in the second half
    /// of the cue.
    public var pause = 0.3
    /// Shortest time a cue stays up, when the next one leaves room: 5/6 s, the minimum of Netflix's timed text
    /// style guide.
    public var minDuration = 5.0 / 6.0

    public init() {}

    /// The cues of one final result, in order. Words give the times; without words the result's span is
    /// shared out by characters.
    public func cues(for result: Transcription) -> [Cue] {
        var words = result.words.filter { !$0.text.isEmpty }
        if words.isEmpty {
            let texts = result.text.split(separator: " ").map(String.init)
            guard !texts.isEmpty else { return [] }
            let total = Double(Self.characters(texts))
            var t = result.range.start
            for text in texts {
                let d = result.range.duration * Double(text.count + 1) / total
                words.append(Word(text: text, range: TimeRange(start: t, end: t + d), confidence: 1))
                t += d
            }
        }
        // A result that fits one cue is one cue. A longer one is cut where its first cue is as full as it can be,
        // or earlier at the speaker's longest pause (at least `pause`) in the second half of that cue: no cue of a
        // word or two between pauses flashes by.
        var cues: [Cue] = []
        var rest = words[...]
        while !rest.isEmpty {
            var fit = rest.startIndex + 1
            while fit < rest.endIndex && fits(rest[rest.startIndex...fit]) { fit += 1 }
            // rest[..<fit] is the longest start that fits (a single word always goes, cut into lines if need be).
            var cut = fit
            if fit < rest.endIndex {
                let half = rest.startIndex + max(1, (fit - rest.startIndex + 1) / 2)
                var longest = pause
                for k in half..<fit {
                    let gap = rest[k].range.start - rest[k - 1].range.end
                    if gap >= longest {
                        longest = gap
                        cut = k
                    }
                }
            }
            // The last cue would be a word or two left over ("... behind the" / "house"): the two last cues share
            // the words instead, as evenly as they fit (by characters).
            if cut < rest.endIndex && rest.endIndex - cut < Self.fewestWords && fits(rest[cut...]) {
                var best = cut
                var bestImbalance = Int.max
                for k in (rest.startIndex + 1)..<cut where fits(rest[k...]) {
                    let imbalance = abs(
                        Self.characters(rest[..<k].map(\.text)) - Self.characters(rest[k...].map(\.text)))
                    if imbalance < bestImbalance { (best, bestImbalance) = (k, imbalance) }
                }
                cut = best
            }
            cues.append(cue(Array(rest[..<cut])))
            rest = rest[cut...]
        }
        // A cue stays up at least `minDuration` where the next cue (or the utterance) leaves room.
        for i in cues.indices {
            let limit = i + 1 < cues.count ? cues[i + 1].start : max(result.range.end, cues[i].end)
            cues[i].end = max(cues[i].end, min(cues[i].start + minDuration, limit))
        }
        return cues
    }

    /// A result's last cue has at least this many words when the cue before it can spare them.
    static let fewestWords = 3

    /// The characters of these words with a space after each.
    private static func characters(_ texts: [String]) -> Int { texts.reduce(0) { $0 + $1.count + 1 } }

    /// Whether these words make one cue: within the lines and the duration.
    private func fits(_ words: ArraySlice<Word>) -> Bool {
        guard let first = words.first, let last = words.last else { return true }
        return last.range.end - first.range.start <= maxDuration && lines(words.map(\.text)) != nil
    }

    private func cue(_ words: [Word]) -> Cue {
        let texts = words.map(\.text)
        // A single word longer than a line is cut into pieces of a line.
        let text = lines(texts) ?? Self.hardWrap(texts.joined(separator: " "), maxLineLength, maxLines)
        return Cue(
            start: words[0].range.start, end: max(words[words.count - 1].range.end, words[0].range.start + 0.01),
            lines: text)
    }

    /// The words wrapped into at most `maxLines` lines of at most `maxLineLength` characters, balanced
    /// (the first line no longer than needed), or `nil` when they do not fit.
    func lines(_ words: [String]) -> [String]? {
        let all = words.joined(separator: " ")
        if all.count <= maxLineLength { return [all] }
        guard maxLines >= 2 else { return nil }
        // The split that makes the longer line shortest.
        var best: [String]?
        var bestLength = Int.max
        for cut in 1..<words.count {
            let a = words[..<cut].joined(separator: " ")
            let b = words[cut...].joined(separator: " ")
            guard a.count <= maxLineLength && b.count <= maxLineLength else { continue }
            if max(a.count, b.count) < bestLength {
                bestLength = max(a.count, b.count)
                best = [a, b]
            }
        }
        return best
    }

    static func hardWrap(_ text: String, _ length: Int, _ count: Int) -> [String] {
        var out: [String] = []
        var rest = Substring(text)
        while !rest.isEmpty && out.count < count {
            out.append(String(rest.prefix(length)))
            rest = rest.dropFirst(length)
        }
        return out
    }
}

/// The `srt` and `vtt` sinks: final results as subtitles (SubRip or WebVTT), each cue written as soon as the
/// result it comes from is final.
public final class SubtitleSink: GraphNode {
    public enum Format: String, Sendable { case srt, vtt }

    static func descriptor(_ format: Format) -> NodeDescriptor {
        let name = format == .srt ? "SubRip (.srt)" : "WebVTT (.vtt)"
        return NodeDescriptor(
            typeName: format.rawValue,
            summary: "Writes final results as \(name) subtitles.",
            doc: "Each final result becomes one or more cues of at most 2 lines of at most 42 characters and at most "
                + "7 s: a result that fits one cue is one cue, a longer one is cut where a cue is full or a little "
                + "earlier, where the speaker paused, and its last cue is never a word or two left over (the last two "
                + "cues share the words). A cue stays up at least 5/6 s when the next speech leaves room. Cues are "
                + "written as soon as their result is final (a result's last cue when the next result comes, which "
                + "says how long it may stay up, or at the end), so a file grows while a live graph runs. Cue times "
                + "are word times on the audio clock.",
            category: .sink,
            ports: [.eventInput("in", accepts: .only([.result]), doc: "Results (volatile ones are ignored).")],
            parameters: [
                .path(
                    "path", default: "-", writes: true,
                    doc: "File to write (its folders are made if need be); \"-\" is standard output.")
            ],
            requires: TextOutput.requires)
    }

    public static let srt = NodeType(descriptor(.srt), make: { try SubtitleSink($0, format: .srt) })
    public static let vtt = NodeType(descriptor(.vtt), make: { try SubtitleSink($0, format: .vtt) })

    private let out: TextOutput
    private var writer: SubtitleWriter

    init(_ context: NodeContext, format: Format) throws {
        writer = SubtitleWriter(format: format)
        out = try .forSink(context)
        // Held until the first cue (or the end): a graph that fails before it runs leaves the file as it was.
        out.write(writer.header)
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard case .result(let t) = event, t.isFinal else { return }
        out.write(writer.text(for: t))
        out.flush()
        try out.tellFailure(output, at: t.range.end)
    }

    static func text(_ cue: Cue, index: Int, format: Format) -> String {
        let times = "\(timestamp(cue.start, format)) --> \(timestamp(cue.end, format))"
        let body = cue.lines.joined(separator: "\n")
        switch format {
        case .srt: return "\(index)\n\(times)\n\(body)\n\n"
        case .vtt: return "\(times)\n\(body)\n\n"
        }
    }

    /// `HH:MM:SS,mmm` (SubRip) or `HH:MM:SS.mmm` (WebVTT).
    public static func timestamp(_ seconds: Double, _ format: Format) -> String {
        let ms = Int((max(0, seconds) * 1000).rounded())
        let h = ms / 3_600_000
        let m = ms / 60_000 % 60
        let s = ms / 1000 % 60
        func two(_ v: Int) -> String { v < 10 ? "0\(v)" : "\(v)" }
        let frac = String(ms % 1000 + 1000).dropFirst()
        return "\(two(h)):\(two(m)):\(two(s))\(format == .srt ? "," : ".")\(frac)"
    }

    public func finish(output: NodeOutput) throws {
        out.write(writer.finish())
        out.finish()
    }
    public func close() { out.close() }
    public var warnings: [String] { out.failure.map { [$0] } ?? [] }
}

/// A subtitle file written as results come: the cues of each final result, numbered, never overlapping the
/// cue before. A result's last cue is held until the next result's first cue (or the end): it stays up at least
/// `CueMaker.minDuration` when the next speech leaves room, also after the end of its utterance (a one-word
/// answer does not flash by). The `srt` and `vtt` sinks and the `web` sink's transcript downloads write with it.
public struct SubtitleWriter: Sendable {
    public let format: SubtitleSink.Format
    private let maker = CueMaker()
    private var index = 0
    private var lastEnd = 0.0
    /// The last result's last cue, not written yet.
    private var held: Cue?

    public init(format: SubtitleSink.Format) { self.format = format }

    /// What the file begins with ("WEBVTT" and a blank line for WebVTT).
    public var header: String { format == .vtt ? "WEBVTT\n\n" : "" }

    /// The cues this result settles, as text to append to the file: the previous result's last cue, then this
    /// one's but its last.
    public mutating func text(for result: Transcription) -> String {
        let cues = maker.cues(for: result)
        guard let first = cues.first else { return "" }
        var text = release(before: first.start)
        for cue in cues.dropLast() { text += write(cue) }
        held = cues.last
        return text
    }

    /// The cue still held, as text to append at the end of the file.
    public mutating func finish() -> String { release(before: nil) }

    /// The file's end as it would be written if the results ended now (the held cue), without changing anything.
    public var pending: String {
        var copy = self
        return copy.finish()
    }

    /// Writes the held cue, up at least `minDuration` when the next cue starts later than that, or when none
    /// comes (the end: a last one-word answer does not flash by either).
    private mutating func release(before next: Double?) -> String {
        guard var cue = held else { return "" }
        held = nil
        cue.end = max(cue.end, min(cue.start + maker.minDuration, next ?? .infinity))
        return write(cue)
    }

    private mutating func write(_ cue: Cue) -> String {
        var cue = cue
        // Cues never overlap.
        cue.start = max(cue.start, lastEnd)
        cue.end = max(cue.end, cue.start + 0.01)
        lastEnd = cue.end
        index += 1
        return SubtitleSink.text(cue, index: index, format: format)
    }
}

/// The `text` sink: the plain transcript, one final result per line.
public final class TextSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "text",
        summary: "Writes the plain transcript: the text of each final result, one per line.",
        doc: "A result marked rejected (speech outside the recognizer's grammar or domain model, read as the nearest "
            + "thing in it) is followed by ' (rejected: outside the grammar or domain model)', as on the console, "
            + "so that a script reading the lines as commands does not take it for one.",
        category: .sink,
        ports: [.eventInput("in", accepts: .only([.result]), doc: "Results (volatile ones are ignored).")],
        parameters: [
            .path(
                "path", default: "-", writes: true,
                doc: "File to write (its folders are made if need be); \"-\" is standard output.")
        ],
        requires: TextOutput.requires)

    public static let type = NodeType(descriptor, make: { try TextSink($0) })

    private let out: TextOutput

    init(_ context: NodeContext) throws {
        out = try .forSink(context)
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard case .result(let t) = event, t.isFinal, !t.text.isEmpty else { return }
        out.write(t.text + (t.rejected ? ConsoleSink.rejectedMark : "") + "\n")
        out.flush()
        try out.tellFailure(output, at: t.range.end)
    }

    public func finish(output: NodeOutput) throws { out.finish() }
    public func close() { out.close() }
    public var warnings: [String] { out.failure.map { [$0] } ?? [] }
}
