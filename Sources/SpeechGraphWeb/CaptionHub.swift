import NIOCore
import NIOHTTP1
import NIOWebSocket
import SpeechGraphCore
import SpeechGraphSinks
import Synchronization

/// One message for viewers: an event's JSON Lines form, or the stream's `hello` and `end`.
struct ViewerMessage: Sendable {
    enum Kind: Sendable {
        /// An event: `data: JSON` over Server-Sent Events, a text frame over a WebSocket.
        case event
        /// First to every viewer: the session (a new one each time the graph starts), `event: hello` over SSE.
        case hello
        /// The graph's input ended: `event: end` over SSE, a close frame (1000, "end") over a WebSocket.
        case end
    }
    let kind: Kind
    let json: String
    /// A message a newer one makes useless (a node's volatile result, a level): the key of what it describes.
    /// While one waits in a slow viewer's queue, the next with the same key takes its place, and when the queue
    /// is full these go first.
    let supersededBy: String?

    /// The end of the stream.
    static let end = ViewerMessage(kind: .end, json: "", supersededBy: nil)
}

/// A connected viewer: its queue of messages not yet written, bounded; the hub fills it from the graph's
/// thread and the server's event loop empties it into the connection as fast as the connection takes them. It
/// sends a keep-alive every `WebServer.keepAliveInterval` until its connection closes.
final class Viewer: Sendable {
    enum Transport: Sendable { case sse, webSocket }

    let channel: any Channel
    let transport: Transport
    private let limit: Int
    private struct State {
        var queue = CircularBuffer<ViewerMessage>(initialCapacity: 16)
        /// Over its bound with nothing left to drop, or closed: nothing more is queued.
        var closed = false
        /// The end message was written: the connection closes once it is out.
        var ending = false
        /// The hub has given it its replay (`join`): until then nothing is written, and the replay goes before
        /// what was queued meanwhile.
        var joined = false
    }
    private let state = Mutex(State())

    /// Called inside each enqueue, with the viewer's lock held (tests: what else is locked then).
    private let onEnqueue: (@Sendable () -> Void)?

    init(channel: any Channel, transport: Transport, limit: Int, onEnqueue: (@Sendable () -> Void)? = nil) {
        self.channel = channel
        self.transport = transport
        self.limit = limit
        self.onEnqueue = onEnqueue
        let keepAlive = channel.eventLoop.scheduleRepeatedTask(
            initialDelay: WebServer.keepAliveInterval, delay: WebServer.keepAliveInterval
        ) { [weak self] _ in self?.keepAlive() }
        channel.closeFuture.whenComplete { _ in keepAlive.cancel() }
    }

    /// Queues a message (any thread). `false`: the viewer cannot keep up (its queue is full of messages that
    /// cannot be dropped) and must be disconnected.
    func enqueue(_ message: ViewerMessage) -> Bool {
        state.withLock { s in
            onEnqueue?()
            return Self.enqueue(message, into: &s, limit: limit)
        }
    }

    /// The hub's replay for a new viewer, put before what the graph published since the hub registered it; only
    /// then is anything written. `false`: it no longer fits (the hub checks that a replay fits a queue, so only a
    /// burst meanwhile can do that).
    func join(replay: [ViewerMessage]) -> Bool {
        state.withLock { s in
            s.joined = true
            let early = Array(s.queue)
            s.queue.removeAll()
            return (replay + early).allSatisfy { Self.enqueue($0, into: &s, limit: limit) }
        }
    }

    private static func enqueue(_ message: ViewerMessage, into s: inout State, limit: Int) -> Bool {
        if s.closed { return true }
        // The end of the stream always goes in: the viewer closes after it, so its queue grows no further.
        if message.kind == .end {
            s.queue.append(message)
            return true
        }
        if let key = message.supersededBy, let i = s.queue.lastIndex(where: { $0.supersededBy == key }) {
            s.queue.remove(at: i)
        }
        if s.queue.count >= limit {
            guard let i = s.queue.firstIndex(where: { $0.supersededBy != nil }) else {
                s.closed = true
                s.queue.removeAll()
                return false
            }
            s.queue.remove(at: i)
        }
        s.queue.append(message)
        return true
    }

    var pending: Bool { state.withLock { $0.joined && !$0.queue.isEmpty } }

    /// Messages waiting (for the hub's statistics).
    var queued: Int { state.withLock { $0.queue.count } }

    func markClosed() {
        state.withLock {
            $0.closed = true
            $0.queue.removeAll()
        }
    }

    /// On the channel's event loop: writes what is queued while the connection takes it, and flushes. A flush can
    /// drain the socket at once (loopback) and make the channel writable again: then it goes on.
    func flush() {
        while true {
            var wrote = false
            var ended = false
            while channel.isWritable {
                let next = state.withLock { s -> ViewerMessage? in
                    s.joined && !s.queue.isEmpty ? s.queue.removeFirst() : nil
                }
                guard let next else { break }
                write(next)
                wrote = true
                if next.kind == .end {
                    state.withLock { $0.ending = true }
                    ended = true
                    break
                }
            }
            guard wrote else { return }
            channel.flush()
            if ended || !channel.isWritable || !pending { return }
        }
    }

    /// A keep-alive (`event: ping` over SSE, a `ping` object over a WebSocket), on the event loop, when nothing
    /// else is waiting and the stream has not ended.
    func keepAlive() {
        guard channel.isWritable, state.withLock({ $0.queue.isEmpty && !$0.ending && !$0.closed }) else { return }
        // Visible to the page's script (a comment or a WebSocket ping would not be): a page that hears nothing
        // for a while knows its connection is dead, even when the network did not say so.
        switch transport {
        case .sse:
            channel.writeAndFlush(
                HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: "event: ping\ndata: {}\n\n"))), promise: nil)
        case .webSocket:
            channel.writeAndFlush(
                WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: #"{"v":1,"type":"ping"}"#)),
                promise: nil)
        }
    }

    private func write(_ message: ViewerMessage) {
        switch transport {
        case .sse:
            let text: String
            switch message.kind {
            case .event: text = "data: \(message.json)\n\n"
            case .hello: text = "event: hello\ndata: \(message.json)\n\n"
            case .end: text = "event: end\ndata: {}\n\n"
            }
            channel.write(HTTPServerResponsePart.body(.byteBuffer(ByteBuffer(string: text))), promise: nil)
            if message.kind == .end {
                let channel = self.channel
                channel.writeAndFlush(HTTPServerResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
            }
        case .webSocket:
            if message.kind == .end {
                var reason = ByteBuffer()
                reason.write(webSocketErrorCode: .normalClosure)
                reason.writeString("end")
                let channel = self.channel
                channel.writeAndFlush(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)).whenComplete {
                    _ in channel.close(promise: nil)
                }
            } else {
                channel.write(
                    WebSocketFrame(fin: true, opcode: .text, data: ByteBuffer(string: message.json)), promise: nil)
            }
        }
    }
}

/// What the `web` sink shares with its server: the viewers, the last final results for new viewers, the
/// transcript so far, and the counters `/healthz` shows. `publish` and `end` are called on the graph's thread
/// and never wait for a viewer: they queue, and one task on the server's event loop writes.
final class CaptionHub: Sendable {
    struct Counters: Sendable {
        var events = 0
        var finals = 0
        var viewersServed = 0
        /// Viewers disconnected because they could not keep up.
        var dropped = 0
    }

    let session: String
    /// What every viewer gets first: the session.
    private let hello: ViewerMessage
    private let replayLimit: Int
    private let includeVolatile: Bool
    private let loop: any EventLoop

    private struct State {
        var viewers: [ObjectIdentifier: Viewer] = [:]
        var replay = CircularBuffer<ViewerMessage>(initialCapacity: 16)
        /// The latest volatile result of each node whose utterance is not final yet.
        var inFlight: [String: ViewerMessage] = [:]
        /// The latest speech event of each vad node (whether it hears speech now): a page loaded mid-sentence lights
        /// its speech indicator at once, not at the next utterance.
        var speech: [String: ViewerMessage] = [:]
        var text = ""
        var srt = SubtitleWriter(format: .srt)
        var vtt = SubtitleWriter(format: .vtt)
        var srtText = ""
        var vttText = ""
        var ended = false
        var counters = Counters()
    }
    private let state: Mutex<State>
    /// A write task is scheduled on the event loop (one for all viewers, not one per viewer per event).
    private let flushScheduled = Atomic<Bool>(false)

    init(loop: any EventLoop, replay: Int, volatile: Bool) {
        self.loop = loop
        replayLimit = replay
        includeVolatile = volatile
        var random = SystemRandomNumberGenerator()
        session = String(random.next() as UInt64, radix: 16)
        hello = ViewerMessage(
            kind: .hello, json: "{\"v\":\(JSONLines.version),\"type\":\"hello\",\"session\":\"\(session)\"}",
            supersededBy: nil)
        var initial = State()
        initial.vttText = initial.vtt.header
        state = Mutex(initial)
    }

    // MARK: the graph's side

    /// An event from the graph: to every viewer's queue, to the replay and the transcript.
    func publish(_ event: GraphEvent) {
        let key: String?
        var final: Transcription?
        var speechNode: String?
        switch event {
        case .result(let t) where t.isFinal:
            key = nil
            final = t
        case .result(let t):
            guard includeVolatile else { return }
            key = "result/" + t.node
        case .level(let node, _, _, _):
            key = "level/" + node
        case .speechStarted(let node, _), .speechEnded(let node, _), .speechPaused(let node, _),
            .speechResumed(let node, _):
            key = nil
            speechNode = node
        default:
            key = nil
        }
        let message = ViewerMessage(kind: .event, json: JSONLines.line(for: event), supersededBy: key)
        var viewers: [Viewer] = []
        state.withLock { s in
            guard !s.ended else { return }
            s.counters.events += 1
            if let final {
                s.counters.finals += 1
                s.inFlight[final.node] = nil
                if replayLimit > 0 {
                    if s.replay.count >= replayLimit { s.replay.removeFirst() }
                    s.replay.append(message)
                }
                if !final.text.isEmpty {
                    s.text += final.text + "\n"
                    s.srtText += s.srt.text(for: final)
                    s.vttText += s.vtt.text(for: final)
                }
            } else if case .result(let t) = event {
                s.inFlight[t.node] = message
            } else if let speechNode {
                // For the replay, droppable as a volatile result is: the replay fits a viewer's queue without it.
                s.speech[speechNode] = ViewerMessage(
                    kind: .event, json: message.json, supersededBy: "speech/" + speechNode)
            }
            viewers = Array(s.viewers.values)
        }
        // Each viewer's lock is taken with the hub's released: a viewer (its event loop writing) never holds up
        // the hub. One graph thread publishes, so each viewer gets the messages in order.
        let dropped = viewers.filter { !$0.enqueue(message) }
        if !dropped.isEmpty {
            state.withLock { s in
                for viewer in dropped where s.viewers.removeValue(forKey: ObjectIdentifier(viewer)) != nil {
                    s.counters.dropped += 1
                }
            }
            for viewer in dropped { viewer.channel.close(promise: nil) }
        }
        scheduleFlush()
    }

    /// The graph's input ended: every viewer gets the end of the stream after what it has queued, and then its
    /// connection closes. Viewers that come later get the replay and the end at once.
    func end() {
        let viewers = state.withLock { s -> [Viewer] in
            guard !s.ended else { return [] }
            s.ended = true
            s.inFlight = [:]
            s.speech = [:]
            return Array(s.viewers.values)
        }
        for viewer in viewers { _ = viewer.enqueue(.end) }
        scheduleFlush()
    }

    private func scheduleFlush() {
        guard !flushScheduled.exchange(true, ordering: .acquiringAndReleasing) else { return }
        loop.execute { [self] in
            flushScheduled.store(false, ordering: .releasing)
            let viewers = state.withLock { Array($0.viewers.values) }
            for viewer in viewers where viewer.pending { viewer.flush() }
        }
    }

    // MARK: the server's side (on the event loop)

    /// A new viewer: it gets `hello`, the replay (the last final results, each vad's latest speech event, then
    /// the volatile results in flight), and from then on every event. `false` when there are already `limit` viewers.
    func add(_ viewer: Viewer, limit: Int) -> Bool {
        // The replay is taken, and the viewer registered, under the hub's lock; it is queued with the lock released
        // (the viewer writes nothing before it has its replay, which goes before what was published meanwhile).
        let replay = state.withLock { s -> [ViewerMessage]? in
            guard s.viewers.count < limit else { return nil }
            // The replay fits the queue (WebSink checks `replay` against `queue`); what is in flight is droppable.
            var replay = [hello] + Array(s.replay)
            for node in s.speech.keys.sorted() { replay.append(s.speech[node]!) }
            for node in s.inFlight.keys.sorted() { replay.append(s.inFlight[node]!) }
            if s.ended { replay.append(.end) }
            s.viewers[ObjectIdentifier(viewer)] = viewer
            s.counters.viewersServed += 1
            return replay
        }
        guard let replay else { return false }
        if !viewer.join(replay: replay) {
            state.withLock { s in
                if s.viewers.removeValue(forKey: ObjectIdentifier(viewer)) != nil { s.counters.dropped += 1 }
            }
            viewer.channel.close(promise: nil)
            return true
        }
        // However the connection ends (even before the handler knew it had a viewer), the hub forgets it.
        viewer.channel.closeFuture.whenComplete { [self] _ in remove(viewer) }
        viewer.flush()
        return true
    }

    func remove(_ viewer: Viewer) {
        viewer.markClosed()
        _ = state.withLock { $0.viewers.removeValue(forKey: ObjectIdentifier(viewer)) }
    }

    var viewers: [Viewer] { state.withLock { Array($0.viewers.values) } }

    var viewerCount: Int { state.withLock { $0.viewers.count } }

    /// Whether some thread holds the hub's lock now (tests).
    var isLocked: Bool { state.withLockIfAvailable { _ in false } ?? true }

    enum Transcript: Sendable {
        case txt, srt, vtt
        var contentType: String {
            switch self {
            case .txt: "text/plain; charset=utf-8"
            case .srt: "application/x-subrip; charset=utf-8"
            case .vtt: "text/vtt; charset=utf-8"
            }
        }
    }

    /// The session so far: every final result with text.
    func transcript(_ kind: Transcript) -> String {
        state.withLock { s in
            switch kind {
            case .txt: s.text
            // With the last result's last cue, which the next result would settle.
            case .srt: s.srtText + s.srt.pending
            case .vtt: s.vttText + s.vtt.pending
            }
        }
    }

    /// `/healthz`: the state and the counters, as JSON.
    var health: String {
        state.withLock { s in
            let queued = s.viewers.values.map(\.queued).max() ?? 0
            return "{\"status\":\"\(s.ended ? "ended" : "live")\",\"session\":\"\(session)\","
                + "\"viewers\":\(s.viewers.count),\"viewersServed\":\(s.counters.viewersServed),"
                + "\"dropped\":\(s.counters.dropped),\"events\":\(s.counters.events),"
                + "\"finals\":\(s.counters.finals),\"maxQueued\":\(queued)}"
        }
    }
}
