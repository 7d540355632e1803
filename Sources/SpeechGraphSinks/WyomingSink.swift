import Foundation
import SpeechGraphCore
import Synchronization

/// What the `wyoming` sink sends to its client, in order: the Wyoming protocol's transcript events.
public enum WyomingReply: Sendable, Equatable {
    /// `transcript-start`, before the first chunk.
    case transcriptStart
    /// `transcript-chunk`: words two volatile results in a row agreed on, appended to those sent before (after the
    /// first chunk, each begins with a space). Provisional: the `transcript` is the text that counts.
    case transcriptChunk(String)
    /// `transcript-stop`, after the transcript: the end of the stream.
    case transcriptStop
    /// `transcript`: the final text.
    case transcript(String)
}

/// Where a graph's `wyoming` sink sends its replies: `speechgraph serve --wyoming` hands one to the graph of
/// each transcription (in its ``GraphResources``). `send` is called on the graph's thread, in order, and must
/// not block.
public final class WyomingOutlet: GraphResource {
    /// Only `serve --wyoming` has one, for each transcription.
    public static func make(for resources: GraphResources) -> WyomingOutlet? { nil }

    let send: @Sendable (WyomingReply) -> Void
    /// Called once, when the final transcript went out at the end of speech (before the input ended): the rest
    /// of the audio is not needed.
    let endpoint: @Sendable () -> Void
    /// Whether the client has already sent all its audio (its audio-stop came): then the end of speech does not
    /// end the request, since nothing is gained by answering before the rest is transcribed.
    let inputComplete: @Sendable () -> Bool

    public init(
        send: @escaping @Sendable (WyomingReply) -> Void, endpoint: @escaping @Sendable () -> Void,
        inputComplete: @escaping @Sendable () -> Bool = { false }
    ) {
        self.send = send
        self.endpoint = endpoint
        self.inputComplete = inputComplete
    }
}

/// The `wyoming` sink: results as the Wyoming protocol's transcript events, for `speechgraph serve --wyoming`.
public final class WyomingSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "wyoming",
        summary: "Sends results to a Wyoming client (Home Assistant): transcript chunks, then the transcript.",
        doc: """
            The protocol's sink in the graph 'speechgraph serve --wyoming' runs for each transcription \
            (docs/wyoming.md); a graph with it cannot run otherwise. While the recognizer's volatile results \
            come, the words that stay the same from one to the next go out as transcript-chunk events (after \
            transcript-start); with 'endpoint', the first final result that has words ends the request: the \
            transcript and transcript-stop go out at once, without waiting for the client's audio-stop \
            (server-side endpointing: the vad's pause ends the command), unless the client has already sent \
            all its audio (then all of it is transcribed); so does a vad's noSpeech (nobody spoke in the \
            stream's first seconds: an empty transcript). Otherwise, and when no speech was heard, the \
            transcript (every final result's text) goes out when the audio ends.
            """,
        category: .sink,
        ports: [
            .eventInput(
                "in", accepts: .only([.result, .noSpeech]),
                doc: "Results of the recognizer (volatile and final), and a vad's noSpeech ('vad.events -> "
                    + "client' in graphs/wyoming.graph).")
        ],
        parameters: [
            .boolean(
                "endpoint", default: true,
                doc: "Send the transcript at the end of the first utterance with words (the vad's end of "
                    + "speech), or at a noSpeech event (an empty transcript), not at the client's audio-stop."),
            .boolean(
                "chunks", default: true,
                doc: "Stream the transcript as it is recognized: transcript-start and transcript-chunk events "
                    + "before the transcript, transcript-stop after it."),
        ],
        requires: [WyomingOutlet.key])

    public static let type = NodeType(descriptor, make: { try WyomingSink($0) })

    private let outlet: WyomingOutlet
    private let endpoint: Bool
    private let chunks: Bool
    /// Words of the previous volatile result: a word is stable once two results in a row agree on it.
    private var previous: [Substring] = []
    /// Words already sent as chunks, in this utterance and before it.
    private var sent: [Substring] = []
    /// Final texts so far.
    private var finals: [String] = []
    /// Words sent before the utterance in flight began.
    private var committed = 0
    private var started = false
    private var done = false

    init(_ context: NodeContext) throws {
        guard let outlet = context.resources.optional(WyomingOutlet.self) else {
            throw SpeechGraphError(
                "the wyoming sink answers a Wyoming client: run this graph with 'speechgraph serve --wyoming' "
                    + "(docs/wyoming.md)")
        }
        self.outlet = outlet
        endpoint = context.config.bool(of: "endpoint")
        chunks = context.config.bool(of: "chunks")
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard !done else { return }
        if case .noSpeech = event {
            // Nobody has spoken: the client need not wait for its audio-stop to hear that.
            if finals.isEmpty { answerBeforeAudioStop() }
            return
        }
        guard case .result(let t) = event else { return }
        let words = t.text.split(separator: " ")
        if !t.isFinal {
            // Stable: the longest common prefix of this result and the previous one.
            var stable = 0
            while stable < min(words.count, previous.count) && words[stable] == previous[stable] { stable += 1 }
            previous = words
            // Only words that extend what this utterance has sent: a revised early word waits for the final result.
            let inFlight = sent[committed...]
            if stable > inFlight.count && words.starts(with: inFlight) {
                sendChunk(Array(words[inFlight.count..<stable]))
            }
            return
        }
        previous = []
        if !words.isEmpty {
            // What the final text adds to the chunks sent in this utterance, when it agrees with them.
            let inFlight = sent[committed...]
            if words.starts(with: inFlight) { sendChunk(Array(words[inFlight.count...])) }
            finals.append(t.text)
        }
        committed = sent.count
        if !words.isEmpty { answerBeforeAudioStop() }
    }

    /// With 'endpoint', while the client still sends: the transcript goes out now, and the rest of the audio is
    /// not needed.
    private func answerBeforeAudioStop() {
        guard endpoint && !outlet.inputComplete() else { return }
        complete()
        outlet.endpoint()
    }

    public func finish(output: NodeOutput) throws { complete() }

    private func sendChunk(_ words: [Substring]) {
        guard chunks, !words.isEmpty else { return }
        if !started {
            started = true
            outlet.send(.transcriptStart)
        }
        let text = words.joined(separator: " ")
        outlet.send(.transcriptChunk(sent.isEmpty ? text : " " + text))
        sent += words
    }

    private func complete() {
        guard !done else { return }
        done = true
        // The reference's order (PyPI's wyoming): the transcript, then transcript-stop to end the stream.
        if chunks && !started { outlet.send(.transcriptStart) }
        outlet.send(.transcript(finals.joined(separator: " ")))
        if chunks { outlet.send(.transcriptStop) }
    }
}
