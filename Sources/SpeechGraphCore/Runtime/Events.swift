/// A span of audio time, in seconds on the clock of the input (sample time, not wall time).
public struct TimeRange: Sendable, Hashable {
    public var start: Double
    public var end: Double
    public init(start: Double, end: Double) {
        self.start = start
        self.end = end
    }
    public var duration: Double { end - start }
}

/// One recognized word, with its time span and confidence in 0...1.
public struct Word: Sendable, Hashable {
    public var text: String
    public var range: TimeRange
    public var confidence: Double
    /// Other words the recognizer's n-best list offers for the same time span, most likely first (asked
    /// for with the recognizer's `alternatives`).
    public var alternatives: [String]
    public init(text: String, range: TimeRange, confidence: Double, alternatives: [String] = []) {
        self.text = text
        self.range = range
        self.confidence = confidence
        self.alternatives = alternatives
    }
}

/// Another reading of an utterance: its text and its score, the natural log of its likelihood relative
/// to the best reading's (0 for the best, negative for the others).
public struct Alternative: Sendable, Hashable {
    public var text: String
    public var score: Double
    public init(text: String, score: Double) {
        self.text = text
        self.score = score
    }
}

/// The text of an utterance: volatile (may change) or final (never changes again).
public struct Transcription: Sendable, Hashable {
    /// Counts from 1 within one recognizer node.
    public var utterance: Int
    public var isFinal: Bool
    public var range: TimeRange
    public var text: String
    /// Per-word timings and confidences, when the recognizer gives them.
    public var words: [Word]
    /// The n-best list, best first (the first is the best reading, `text`), when asked for.
    public var alternatives: [Alternative]
    /// The utterance's confidence in 0...1 (the mean of its words'), when it has words.
    public var confidence: Double?
    /// The node that produced it.
    public var node: String
    /// Where the audio came from (a file path, a JACK port), when known.
    public var source: String?
    /// With a grammar or a domain-only language model: the speech does not fit it (the general model explains
    /// it much better). `text` and `confidence` still hold the best guess within the grammar.
    public var rejected = false

    public init(
        utterance: Int, isFinal: Bool, range: TimeRange, text: String, words: [Word] = [],
        alternatives: [Alternative] = [], confidence: Double? = nil, node: String, source: String? = nil
    ) {
        self.confidence = confidence
        self.utterance = utterance
        self.isFinal = isFinal
        self.range = range
        self.text = text
        self.words = words
        self.alternatives = alternatives
        self.node = node
        self.source = source
    }
}

/// A value in a custom event's payload: the same values a parameter takes.
public typealias EventValue = ParameterValue

/// An event of a kind speechgraph does not define itself (a plugin's): its kind, the node that emitted it,
/// its audio time when it has one, and a flat payload. Sinks that write every event (jsonl) write it as
/// `{"type": kind, "node": ..., "time": ..., field: value, ...}`; sinks that only show results skip it.
public struct CustomEvent: Sendable, Hashable {
    public var kind: EventKind
    public var node: String
    /// Seconds on the input's audio clock, when the event is about a moment of the audio.
    public var time: Double?
    public var fields: [String: EventValue]

    public init(kind: EventKind, node: String, time: Double? = nil, fields: [String: EventValue] = [:]) {
        self.kind = kind
        self.node = node
        self.time = time
        self.fields = fields
    }
}

/// Everything that flows on event ports.
public enum GraphEvent: Sendable, Hashable {
    case result(Transcription)
    /// Voice activity: speech began or ended at this audio time.
    case speechStarted(node: String, time: Double)
    case speechEnded(node: String, time: Double)
    /// Inside speech, a pause began at this audio time (an early end-of-turn hint); `speechResumed` or
    /// `speechEnded` follows.
    case speechPaused(node: String, time: Double)
    /// After `speechPaused`, the speech went on: its onset time.
    case speechResumed(node: String, time: Double)
    /// Audio that was lost (an overrun, an xrun, a server that went away).
    case gap(node: String, range: TimeRange, reason: String)
    /// Recognition became available or unavailable (an audio server went away or came back).
    case availability(node: String, isAvailable: Bool, reason: String)
    /// Signal level over the interval ending at `time`: RMS and peak per channel, in dBFS.
    case level(node: String, time: Double, rms: [Double], peak: [Double])
    /// Nobody spoke: a vad heard no speech for its `no-speech` time since the stream began or speech last ended.
    case noSpeech(node: String, time: Double)
    /// Something a user should hear of while the graph goes on (samples that were not numbers, a file that could
    /// no longer be written); at an audio time when the node has one.
    case warning(node: String, time: Double?, reason: String)
    /// A kind added by a node type (a plugin): see ``CustomEvent``. A plugin's `noSpeech` or `warning` is made the
    /// typed event (``init(_:)``).
    case custom(CustomEvent)

    /// A node type's event: `noSpeech`, and `warning` with a string `reason`, as their typed cases; any other
    /// kind as `custom`.
    public init(_ event: CustomEvent) {
        if event.kind == .noSpeech, let time = event.time {
            self = .noSpeech(node: event.node, time: time)
        } else if event.kind == .warning, case .string(let reason)? = event.fields["reason"] {
            self = .warning(node: event.node, time: event.time, reason: reason)
        } else {
            self = .custom(event)
        }
    }

    /// The event's kind, as docs/events.md names it (the `type` of its JSON Lines form).
    public var kind: EventKind {
        switch self {
        case .result: .result
        case .speechStarted: .speechStarted
        case .speechEnded: .speechEnded
        case .speechPaused: .speechPaused
        case .speechResumed: .speechResumed
        case .gap: .gap
        case .availability: .availability
        case .level: .level
        case .noSpeech: .noSpeech
        case .warning: .warning
        case .custom(let e): e.kind
        }
    }

    /// The kind's name.
    public var typeName: String { kind.rawValue }

    /// The node that emitted it.
    public var node: String {
        switch self {
        case .result(let t): t.node
        case .speechStarted(let n, _), .speechEnded(let n, _), .speechPaused(let n, _), .speechResumed(let n, _): n
        case .gap(let n, _, _), .availability(let n, _, _), .level(let n, _, _, _): n
        case .noSpeech(let n, _), .warning(let n, _, _): n
        case .custom(let e): e.node
        }
    }
}
