import Foundation
import SpeechGraphCore

/// The `jsonl` sink: one JSON object per event per line, to standard output or a file.
public final class JSONLinesSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "jsonl",
        summary: "Writes every event as one JSON object per line (see docs/events.md).",
        category: .sink,
        ports: [
            .eventInput(
                "in", accepts: .any,
                doc: "Any events: results, speech activity, gaps, availability, levels, "
                    + "and kinds that plugins add.")
        ],
        parameters: [
            .path(
                "path", default: "-", writes: true,
                doc: "File to write (its folders are made if need be); \"-\" is standard output."),
            .boolean("volatile", default: true, doc: "Also write volatile (not yet final) results."),
            .string(
                "source", default: nil,
                doc: "A label written as \"source\" on each event (transcribe sets the file path)."),
            .boolean(
                "latency", default: false,
                doc: "When the audio runs on a clock (jack.input, push.input fed as the audio is captured, a file "
                    + "played in real time), add \"latency\": seconds from the end of the audio an event describes "
                    + "to the moment it was written."),
        ],
        requires: TextOutput.requires)

    public static let type = NodeType(descriptor, make: { try JSONLinesSink($0) })

    private let out: TextOutput
    private let includeVolatile: Bool
    private let source: String?
    private let latency: Bool
    private let resources: GraphResources

    init(_ context: NodeContext) throws {
        let config = context.config
        out = try .forSink(context)
        includeVolatile = config.bool(of: "volatile")
        source = config.string("source")
        latency = config.bool(of: "latency")
        resources = context.resources
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        if case .result(let t) = event, !t.isFinal, !includeVolatile { return }
        var extra: [(String, String)] = []
        if latency, let epoch = resources.audioEpoch, let end = JSONLines.audioEnd(of: event) {
            extra.append(("latency", JSONLines.fixed(Date().timeIntervalSince1970 - (epoch + end), 3)))
        }
        out.write(JSONLines.line(for: event, source: source, extra: extra) + "\n")
        out.flush()
        try out.tellFailure(output, at: JSONLines.audioEnd(of: event))
    }

    public func finish(output: NodeOutput) throws { out.finish() }

    public func close() { out.close() }

    /// A failed write: reported once, and the graph's other sinks go on.
    public var warnings: [String] { out.failure.map { [$0] } ?? [] }
}

/// The `console` sink: a transcript for people, on standard output.
public final class ConsoleSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "console",
        summary: "Prints a human-readable transcript on standard output.",
        doc: "Each final result is one line, with its time range unless 'timestamps' is off (a final result with "
            + "no words, sound without speech, makes none). On a terminal the "
            + "volatile text of the utterance in flight is shown dimmed and rewritten in place until its final "
            + "result replaces it (not dimmed when NO_COLOR is set); when standard output is not a terminal only "
            + "final lines are written. Gaps and changes of availability (and warnings about the input) are shown "
            + "between the lines.",
        category: .sink,
        ports: [
            .eventInput(
                "in", accepts: .only([.result, .gap, .availability, .warning]),
                doc: "Result, gap, availability and warning events.")
        ],
        parameters: [
            .boolean("timestamps", default: true, doc: "Start each line with the utterance's time range."),
            .string("source", default: nil, doc: "A label printed before each line."),
            .number(
                "colour-below", default: 0, range: 0...1,
                doc: "On a terminal, colour the words of final results whose confidence is below this: red below "
                    + "half of it, yellow above (the confidence is the probability that the word is right, "
                    + "docs/events.md). 0: no colours. Not a terminal, or NO_COLOR set: plain text."),
        ],
        requires: TextOutput.requires)

    public static let type = NodeType(
        descriptor,
        make: {
            ConsoleSink(
                $0.config,
                out: .standardOutput(
                    statusLine: $0.resources.optional(StatusLine.self),
                    shared: $0.resources.required(StandardOutput.self)))
        })

    private let out: TextOutput
    private let timestamps: Bool
    private let source: String?
    private let live: Bool
    /// Words below this confidence are coloured (terminal only); 0: never.
    private let colourBelow: Double
    /// Volatile text dimmed and unsure words coloured: on a terminal, unless NO_COLOR is set (no-color.org).
    private let styled: Bool
    /// A volatile line is on screen (terminal only), to be rewritten.
    private var tailShown = false
    /// The volatile line on screen (as written, escapes and all) and its utterance: shown again under a final
    /// result of an earlier utterance that comes after it (a recognizer whose engine decodes on its side while the
    /// next utterance streams).
    private var tail: (text: String, utterance: Int, node: String)?

    init(_ config: NodeConfig, out: TextOutput = .standardOutput(), live: Bool? = nil) {
        self.out = out
        timestamps = config.bool(of: "timestamps")
        source = config.string("source")
        self.live = live ?? out.isTerminal
        styled = self.live && (ProcessInfo.processInfo.environment["NO_COLOR"] ?? "").isEmpty
        colourBelow = styled ? config.number(of: "colour-below") : 0
    }

    /// What follows a rejected result's text (here and in the `text` sink).
    public static let rejectedMark = " (rejected: outside the grammar or domain model)"

    /// The final text with its unsure words coloured: red below half the threshold, yellow below it.
    public static func coloured(_ t: Transcription, below threshold: Double) -> String {
        guard threshold > 0, !t.words.isEmpty else { return t.text }
        return t.words.map { w in
            if w.confidence < threshold / 2 { return "\u{1B}[31m\(w.text)\u{1B}[0m" }
            if w.confidence < threshold { return "\u{1B}[33m\(w.text)\u{1B}[0m" }
            return w.text
        }.joined(separator: " ")
    }

    public static func clock(_ seconds: Double) -> String {
        let ms = Int((seconds * 1000).rounded())
        let m = ms / 60000
        let s = (ms / 1000) % 60
        let frac = ms % 1000
        func pad(_ v: Int, _ n: Int) -> String {
            let t = String(v)
            return String(repeating: "0", count: max(0, n - t.count)) + t
        }
        return "\(pad(m, 2)):\(pad(s, 2)).\(pad(frac, 3))"
    }

    /// What a gap, a change of availability or a warning says, in words (`0.50 s of audio lost at 00:12.345 (JACK
    /// xrun)`); `nil` for other events. The console writes it between lines; `speechgraph run` writes those no node
    /// takes on standard error.
    public static func notice(_ event: GraphEvent) -> String? {
        switch event {
        case .gap(_, let r, let reason):
            return r.duration > 0
                ? "\(JSONLines.fixed(r.duration, 2)) s of audio lost at \(clock(r.start)) (\(reason))"
                : "\(reason) at \(clock(r.start))"
        case .availability(_, let available, let reason):
            return available ? "recognition available (\(reason))" : "recognition not available: \(reason)"
        case .warning(_, let time, let reason):
            return "warning: \(reason)" + (time.map { " at \(clock($0))" } ?? "")
        default:
            return nil
        }
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        var line: String
        switch event {
        case .result(let t) where t.isFinal && t.text.isEmpty && !t.rejected:
            // Sound the recognizer heard no word in (a cough, a door): no line; the volatile text goes, unless it is
            // a later utterance's.
            if let tail, tail.node == t.node, t.utterance < tail.utterance { return }
            clearTail()
            out.flush()
            return
        case .result(let t):
            var text = t.isFinal ? Self.coloured(t, below: colourBelow) : t.text
            // Speech outside a grammar (or a domain-only model): a command a voice-controlled tool must not act on.
            if t.isFinal && t.rejected { text += Self.rejectedMark }
            line = timestamps ? "[\(Self.clock(t.range.start)) - \(Self.clock(t.range.end))] \(text)" : text
            if !t.isFinal {
                guard live else { return }
                if let source { line = "\(source): " + line }
                // Dimmed, no newline: the next result rewrites it.
                let shown = styled ? "\r\u{1B}[2K\u{1B}[2m" + line + "\u{1B}[0m" : "\r\u{1B}[2K" + line
                out.write(shown)
                out.flush()
                tailShown = true
                tail = (shown, t.utterance, t.node)
                try out.tellFailure(output, at: t.range.end)
                return
            }
        case .gap, .availability, .warning, .custom:
            guard let notice = Self.notice(event) else { return }
            line = "-- \(notice) --"
        default:
            return  // speech activity, levels and kinds added by plugins are not part of a transcript
        }
        if let source { line = "\(source): " + line }
        // A final result of an utterance before the one whose volatile text is shown: the line goes above it.
        var under: String?
        if case .result(let t) = event, let tail, tailShown, tail.node == t.node, t.utterance < tail.utterance {
            under = tail.text
        } else if case .result = event {
            tail = nil
        }
        clearTail()
        out.write(line + "\n")
        if let under {
            out.write(under)
            tailShown = true
        }
        out.flush()
        try out.tellFailure(output, at: JSONLines.audioEnd(of: event))
    }

    public func finish(output: NodeOutput) throws {
        clearTail()
        out.finish()
    }

    /// Erases the volatile line on screen, if one is shown (terminal only).
    private func clearTail() {
        if tailShown { out.write("\r\u{1B}[2K") }
        tailShown = false
    }

    /// A failed write: reported once, and the graph's other sinks go on.
    public var warnings: [String] { out.failure.map { [$0] } ?? [] }
}
