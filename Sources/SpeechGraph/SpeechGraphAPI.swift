import Foundation
import Synchronization

/// A speech recognition graph for apps: a graph file (or source text, or a graph built in code) checked,
/// planned and run, with its results as an `AsyncSequence` of ``SpeechResult`` whose text is an
/// `AttributedString` carrying each word's audio time range and confidence (docs/api.md).
///
/// ```swift
/// let graph = try SpeechGraph(contentsOf: url)
/// try graph.start()
/// for try await result in graph.results(of: "asr") {
///     print(result.isFinal, result.range, result.plainText)
/// }
/// graph.stop()
/// ```
public final class SpeechGraph: Sendable {
    /// What went wrong, typed.
    public enum Error: Swift.Error, CustomStringConvertible, Sendable {
        /// The graph file or text has errors: each `file:line:col: error: message`.
        case invalidGraph([String])
        /// A node could not be made or the graph failed while running (a missing model, an unreadable file).
        case failed(String)
        /// No node of that name in the graph, or not of the kind asked for (`input` of a node that is not a
        /// `push.input`).
        case noSuchNode(String)
        /// The file could not be read.
        case unreadable(String)
        /// No model of the locale's language is installed (a transcriber's, an analyzer's); `installed`: the locales
        /// that have one.
        case unsupportedLocale(Locale, installed: [Locale])

        public var description: String {
            switch self {
            case .invalidGraph(let lines): return lines.joined(separator: "\n")
            case .failed(let message): return message
            case .noSuchNode(let message): return message
            case .unreadable(let message): return message
            case .unsupportedLocale(let locale, let installed):
                let have = installed.map(\.identifier).joined(separator: ", ")
                return "no model for locale \(locale.identifier) (installed: \(have.isEmpty ? "none" : have))"
            }
        }
    }

    public let running: RunningGraph
    /// The graph's events since it was made (the last 10,000), replayed to each `results`/`events` sequence.
    private let history: EventHistory
    /// Each node's type, and the nodes that give results (an event output that emits them).
    private let types: [String: String]
    private let resultNodes: Set<String>

    /// A graph file. `settings` override parameters as `--set` does: `["asr.mode": "utterance"]`.
    public convenience init(
        contentsOf url: URL, settings: [String: String] = [:], registry: NodeRegistry = BuiltinNodes.registry()
    ) throws {
        let text: String
        do { text = try String(contentsOf: url, encoding: .utf8) } catch {
            throw Error.unreadable("\(url.path): \(PathNames.reason(error))")
        }
        try self.init(source: text, name: url.path, settings: settings, registry: registry)
    }

    /// Graph source text, in the graph language (docs/graph-language.md).
    public convenience init(
        source: String, name: String = "<source>", settings: [String: String] = [:],
        registry: NodeRegistry = BuiltinNodes.registry()
    ) throws {
        // The graph's own resources: planning a JACK graph opens its client, once, to learn the server's rate.
        try self.init(source: source, name: name, settings: settings, registry: registry, resources: GraphResources())
    }

    /// With resources of the caller's (the JACK client's options of an `AVAudioEngine`).
    init(
        source: String, name: String, settings: [String: String], registry: NodeRegistry, resources: GraphResources
    ) throws {
        var overrides: [GraphPlanner.Override] = []
        for (key, value) in settings.sorted(by: { $0.key < $1.key }) {
            guard var o = GraphPlanner.Override.parse("\(key)=\(value)") else {
                throw Error.invalidGraph(["setting '\(key)': expected node.parameter"])
            }
            o.origin = "setting '\(key)'"
            overrides.append(o)
        }
        let plan: GraphPlan
        do {
            let spec = try GraphParser.parse(source, file: name)
            plan = try GraphPlanner(registry: registry).plan(spec, overrides: overrides, resources: resources)
        } catch let error as GraphError {
            throw Error.invalidGraph(error.diagnostics.filter { $0.severity == .error }.map(\.description))
        } catch {
            throw Error.failed("\(error)")
        }
        do {
            running = try RunningGraph(plan: plan, registry: registry, resources: resources)
        } catch {
            throw Error.failed("\(error)")
        }
        history = EventHistory()
        history.follow(running.events())
        types = Dictionary(plan.nodes.map { ($0.name, $0.typeName) }) { a, _ in a }
        resultNodes = Set(
            plan.nodes.filter { node in
                registry[node.typeName]?.descriptor.outputs.contains {
                    $0.kind == .events && $0.eventKinds.contains(.result)
                } ?? false
            }.map(\.name))
    }

    /// A graph built in code.
    public convenience init(_ builder: GraphBuilder, registry: NodeRegistry = BuiltinNodes.registry()) throws {
        try self.init(source: builder.source, name: "<built>", registry: registry)
    }

    /// Starts the graph: files are read, live inputs listened to. Results flow from here on.
    public func start() throws { running.start() }

    /// Stops soon: the utterance in flight is finished and every result delivered, then the sequences end.
    /// Before `start()`: the graph ends at once, and its sequences end empty.
    public func stop() { running.stop() }

    /// Runtime vocabulary: gives the recognizer `node` a new language model (a spec, a model directory or a
    /// model file; docs/lm.md) and weight, without stopping the audio. Returns once the model is loaded (a
    /// spec is built first); it takes over at the next utterance, and the recognizer then emits a
    /// `modelChanged` event (`events(of:)`). Throws ``Error/noSuchNode(_:)`` when `node` is not a recognizer of
    /// the graph (nothing is reloaded), and ``Error/failed(_:)`` with the reason when the model could not be
    /// loaded (the recognizer keeps its model).
    public func setLanguageModel(_ lm: String, weight: Double = 1, node: String = "asr") async throws {
        guard types[node] == RecognizerNode.descriptor.typeName else {
            throw Error.noSuchNode(
                types[node].map { "node '\(node)' is a \($0), not a recognizer" }
                    ?? "no node named '\(node)' in the graph")
        }
        let running = self.running
        let outcomes = await Task.detached {
            running.reloadModels(parameters: [node: ["lm": .string(lm), "weight": .number(weight)]])
        }.value
        if let failure = outcomes.first(where: { $0.node == node })?.failure {
            throw Error.failed("\(node): the language model was not taken: \(failure)")
        }
    }

    /// Loads every recognizer's models again from their files (what SIGHUP does to `speechgraph run`); returns
    /// once they are loaded. Throws ``Error/failed(_:)`` naming each recognizer whose models could not be loaded
    /// (it keeps its models; the others take their new ones).
    public func reloadModels() async throws {
        let running = self.running
        let outcomes = await Task.detached { running.reloadModels() }.value
        let failures = outcomes.compactMap { o in o.failure.map { "\(o.node): \($0)" } }
        if !failures.isEmpty {
            throw Error.failed("models could not be loaded: " + failures.joined(separator: "; "))
        }
    }

    /// Ends the inputs (pushed audio, files read to their end) and waits until every result is out.
    public func finish() async throws {
        do { try await running.drain() } catch { throw Error.failed("\(error)") }
    }

    /// The results of node `name` (a recognizer), volatile and final, from the graph's start (a sequence asked
    /// for after more than 10,000 events begins with the last 10,000); the sequence ends when the graph ends,
    /// and throws what stopped it.
    /// A name that is no node of the graph, or a node that gives no results (a `file.input`): the sequence
    /// throws ``Error/noSuchNode(_:)``.
    public func results(of name: String) -> AsyncThrowingStream<SpeechResult, any Swift.Error> {
        guard let type = types[name] else {
            return AsyncThrowingStream { $0.finish(throwing: Error.noSuchNode("no node named '\(name)' in the graph")) }
        }
        guard resultNodes.contains(name) else {
            return AsyncThrowingStream {
                $0.finish(throwing: Error.noSuchNode("node '\(name)' is a \(type), which gives no results"))
            }
        }
        let events = history.stream()
        let graph = running
        return AsyncThrowingStream { continuation in
            let task = Task {
                for await event in events {
                    if case .result(let t) = event, t.node == name { continuation.yield(SpeechResult(t)) }
                }
                do {
                    try await graph.wait()
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: Error.failed("\(error)"))
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Every event of every node (or of node `name`), from the graph's start.
    public func events(of name: String? = nil) -> AsyncStream<GraphEvent> {
        let events = history.stream()
        return AsyncStream { continuation in
            let task = Task {
                for await event in events where name == nil || event.node == name { continuation.yield(event) }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// The `push.input` node called `name`: push audio into it from any thread.
    public func input(_ name: String) throws -> AudioInput {
        guard let pusher = running.input(named: name) else {
            throw Error.noSuchNode("no push.input node named '\(name)' in the graph")
        }
        return AudioInput(pusher: pusher)
    }

    /// What went wrong without stopping the graph, once it has ended: a truncated file, a sink that could not
    /// write, samples that were not numbers; each prefixed with its node. `finish()` returns normally with
    /// them (the results are there); `speechgraph run` prints them and exits 1.
    public var warnings: [String] { running.warnings }

    /// What the graph's nodes had to say about how they were made, which is no problem: a pronunciation guessed
    /// for a word of a language model built on first use (`file:line:col: warning: 'zigbee' is in no dictionary;
    /// pronounced ...`). Before `start()` or once the graph has ended.
    public var notes: [String] { running.notes }
}

/// Audio pushed into a graph's `push.input` node, from any thread, in blocks of any size.
public struct AudioInput: Sendable {
    let pusher: AudioPusher

    /// Interleaved float samples in -1...1 at the node's rate and channel count (the `push.input` node's `rate`
    /// and `channels`: nothing converts them), any number of them (a frame left unfinished is completed by the
    /// next push). By default it waits while the node's buffer is full (a file pushed faster than the graph
    /// decodes loses nothing); a push that would wait before `start()` starts the graph, which alone makes room.
    /// A live source that must never wait passes `waitForRoom: false`, and a chunk that finds no room is then
    /// dropped and reported as a gap event. Returns whether the chunk was taken (`false` also after `end()`,
    /// `finish()` or `stop()`).
    @discardableResult
    public func push(_ samples: [Float], waitForRoom: Bool = true) -> Bool {
        samples.withUnsafeBufferPointer { pusher.push($0, waitForRoom: waitForRoom).taken }
    }

    /// No more audio: the graph finishes what it holds.
    public func end() { pusher.end() }
}

/// A graph described in code: nodes with parameters, and edges, turned into graph-language source.
public struct GraphBuilder: Sendable {
    private var lines: [String] = []

    public init() {}

    /// A node: `node("asr", "recognizer", ["mode": "utterance"])`. Values are written as in a graph file
    /// (`"300 ms"`, `"true"`, a quoted string for paths: pass `"\"a.wav\""`, or use `path:`).
    public mutating func node(_ name: String, _ type: String, _ parameters: [String: String] = [:]) {
        let params = parameters.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }.joined(separator: ", ")
        lines.append("node \(name) = \(type)" + (params.isEmpty ? "" : " { \(params) }"))
    }

    /// A `file.input` node reading `path`.
    public mutating func file(_ name: String, path: String) {
        lines.append("node \(name) = file.input { path: \(graphQuoted(path)) }")
    }

    /// An edge: `connect("src", "asr")`, or ports: `connect("vad.events", "asr.control")`.
    public mutating func connect(_ from: String, _ to: String) { lines.append("\(from) -> \(to)") }

    public var source: String { lines.joined(separator: "\n") + "\n" }
}

/// One result of a recognizer: volatile (may still change) or final.
public struct SpeechResult: Sendable {
    public let isFinal: Bool
    /// Counts from 1 within the recognizer.
    public let utterance: Int
    /// The audio the utterance covers, in seconds of the input.
    public let range: TimeRange
    /// The text; each word's run carries its `audioTimeRange` (a `CMTimeRange`) and `transcriptionConfidence`
    /// (final results; a volatile result's text is one run with the utterance's range).
    public let text: AttributedString
    public let plainText: String
    public let words: [Word]
    /// The n-best list (the recognizer's `alternatives`), best first.
    public let alternatives: [Alternative]
    /// The utterance's confidence, the mean of its words'.
    public let confidence: Double?
    /// The speech does not fit the recognizer's grammar or domain-only language model (docs/lm.md); `text` is the
    /// best guess within it.
    public let isRejected: Bool
    public let node: String

    public init(_ t: Transcription) {
        isFinal = t.isFinal
        utterance = t.utterance
        range = t.range
        plainText = t.text
        words = t.words
        alternatives = t.alternatives
        confidence = t.confidence
        isRejected = t.rejected
        node = t.node
        var text = AttributedString()
        if t.words.isEmpty {
            var run = AttributedString(t.text)
            run.audioTimeRange = CMTimeRange(t.range)
            text = run
        } else {
            for (i, w) in t.words.enumerated() {
                if i > 0 { text += AttributedString(" ") }
                var run = AttributedString(w.text)
                run.audioTimeRange = CMTimeRange(w.range)
                run.transcriptionConfidence = w.confidence
                text += run
            }
        }
        self.text = text
    }

    /// Whether one of `phrases` was said: as whole words in order, without case, in the best text or, when it
    /// is not there, in one of the alternatives (a trivia game hears "nemo" when the best guess was "memo").
    public func matches(_ phrases: [String]) -> Bool {
        let readings = [plainText] + alternatives.map(\.text)
        return phrases.contains { phrase in
            let p = Self.words(phrase)
            return !p.isEmpty && readings.contains { Self.contains(Self.words($0), p) }
        }
    }

    static func words(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.map(String.init)
    }

    static func contains(_ words: [String], _ phrase: [String]) -> Bool {
        guard words.count >= phrase.count else { return false }
        return (0...(words.count - phrase.count)).contains { Array(words[$0..<$0 + phrase.count]) == phrase }
    }
}

// MARK: - The attributes of a result's runs, named as Apple's Speech framework names them.

public enum SpeechGraphAttributes {
    /// The audio a run of text was heard in.
    public enum AudioTimeRangeAttribute: AttributedStringKey {
        public typealias Value = CMTimeRange
        public static let name = "speechgraph.audioTimeRange"
    }
    /// The probability that a run's word is right.
    public enum TranscriptionConfidenceAttribute: AttributedStringKey {
        public typealias Value = Double
        public static let name = "speechgraph.transcriptionConfidence"
    }
}

extension AttributeScopes {
    /// `result.text.runs[...].audioTimeRange`, `.transcriptionConfidence`.
    public struct SpeechGraphAttributeScope: AttributeScope {
        public let audioTimeRange: SpeechGraphAttributes.AudioTimeRangeAttribute
        public let transcriptionConfidence: SpeechGraphAttributes.TranscriptionConfidenceAttribute
    }

    public var speechGraph: SpeechGraphAttributeScope.Type { SpeechGraphAttributeScope.self }
}

extension AttributeDynamicLookup {
    public subscript<T: AttributedStringKey>(
        dynamicMember keyPath: KeyPath<AttributeScopes.SpeechGraphAttributeScope, T>
    ) -> T { self[T.self] }
}

/// The events of a graph since it was made (the most recent `limit` of them, so that a graph that runs for
/// days keeps bounded memory), and the sequences that replay them and then follow.
final class EventHistory: Sendable {
    static let limit = 10_000
    private struct State {
        var events: [GraphEvent] = []
        var ended = false
        var followers: [AsyncStream<GraphEvent>.Continuation] = []
    }
    private let state = Mutex(State())

    func follow(_ stream: AsyncStream<GraphEvent>) {
        Task { [self] in
            for await event in stream {
                state.withLock { s in
                    if s.events.count == Self.limit { s.events.removeFirst(Self.limit / 10) }
                    s.events.append(event)
                    for f in s.followers { f.yield(event) }
                }
            }
            state.withLock { s in
                s.ended = true
                for f in s.followers { f.finish() }
                s.followers = []
            }
        }
    }

    func stream() -> AsyncStream<GraphEvent> {
        let (stream, continuation) = AsyncStream<GraphEvent>.makeStream()
        state.withLock { s in
            for e in s.events { continuation.yield(e) }
            if s.ended { continuation.finish() } else { s.followers.append(continuation) }
        }
        return stream
    }
}

extension AttributedString {
    /// The span of runs whose `audioTimeRange` overlaps `timeRange`, from the first to the last of them, or `nil`
    /// when none does (Apple's method of the same name): where a new result's text replaces what a transcript
    /// showed for the same audio.
    public func rangeOfAudioTimeRangeAttributes(intersecting timeRange: CMTimeRange) -> Range<AttributedString.Index>? {
        var first: AttributedString.Index?
        var last: AttributedString.Index?
        for run in runs {
            guard let r = run.audioTimeRange, r.start < timeRange.end, r.end > timeRange.start
            else { continue }
            if first == nil { first = run.range.lowerBound }
            last = run.range.upperBound
        }
        guard let first, let last else { return nil }
        return first..<last
    }
}
