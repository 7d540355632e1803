import Foundation
import NIOCore
import NIOPosix
import SpeechGraphCore
import SpeechGraphSinks
import SpeechGraphSphinx
import Synchronization

/// A model the server offers: a per-connection graph (`push.input`, usually a vad and a recognizer, and a
/// `wyoming` sink), with what `info` says about it.
public struct WyomingModel: Sendable {
    public var name: String
    public var description: String
    public var languages: [String]
    public var attribution: (name: String, url: String)
    public var version: String?
    /// The graph, parsed: planned anew for each transcription (its audio format, the request's settings).
    public var graph: GraphSpec
    /// The `push.input` node audio goes into, the `wyoming` sink, the vad nodes and the recognizers.
    let input: String
    /// The input's `buffer`, in seconds.
    let inputBuffer: Double
    let vads: [(name: String, minSilence: Double, hangover: Double)]
    let recognizers: [String]

    /// Checks that the graph can serve: it plans (at 16 kHz mono), has one `push.input` and a `wyoming` sink.
    public init(
        name: String, description: String, languages: [String], attribution: (name: String, url: String),
        version: String?, graph: GraphSpec, registry: NodeRegistry
    ) throws {
        self.name = name
        self.description = description
        self.languages = languages
        self.attribution = attribution
        self.version = version
        self.graph = graph
        let plan = try GraphPlanner(registry: registry).plan(graph)
        let inputs = plan.nodes.filter { $0.typeName == "push.input" }
        // Graph errors (exit 2 from `serve`), not runtime failures.
        guard inputs.count == 1 else {
            throw GraphError(
                Diagnostic.error(
                    "\(graph.file): a Wyoming graph needs exactly one push.input node (the client's audio); it has "
                        + "\(inputs.count)", at: nil))
        }
        guard plan.nodes.contains(where: { $0.typeName == "wyoming" }) else {
            throw GraphError(
                Diagnostic.error(
                    "\(graph.file): a Wyoming graph needs a wyoming sink (the client's transcript)", at: nil))
        }
        input = inputs[0].name
        inputBuffer = inputs[0].config.number("buffer") ?? 2
        vads = plan.nodes.filter { $0.typeName == "vad" && !$0.isInserted }.map {
            ($0.name, $0.config.number("min-silence") ?? 0.4, $0.config.number("hangover") ?? 0.4)
        }
        recognizers = plan.nodes.filter { $0.typeName == "recognizer" }.map(\.name)
    }
}

/// `speechgraph serve --wyoming`: a Wyoming speech-to-text server (Home Assistant's voice assistant) on
/// SwiftNIO. Each transcription runs in a graph of its own, made from its model's graph file for the audio's
/// format; graphs share the server's decoders (a pool: a connection's decoder goes back to it when its graph
/// ends) and its compute gate (ends of utterances go first), and nothing else.
public final class WyomingServer: Sendable {
    public struct Configuration: Sendable {
        public var host = "127.0.0.1"
        public var port = 10300
        /// The first is the default (a request without `name`).
        public var models: [WyomingModel]
        public var registry: NodeRegistry
        /// Connections served at once; the next gets an `error` event and is closed.
        public var maxConnections = 16
        /// A connection that sends nothing for this long is closed (also mid-stream), unless it waits for the
        /// transcript of audio it has ended.
        public var idleTimeout: TimeAmount = .seconds(60)
        public var limits = WyomingLimits()
        /// A request's `transcript_names` and `transcript_terms` become the recognizers' `phrases` (a model built
        /// per set of names, then cached, and a second decoding of each utterance: answers come later). Off: they
        /// are accepted and ignored.
        public var phrasesFromRequests = false
        /// `info`'s program version.
        public var version = "0"
        /// Decoders of each model loaded before the server listens: that many clients at once never wait for a
        /// model to load (each decoder holds its own copy of the model, about 90 MB). Between connections the
        /// pool keeps this many idle decoders, or 4 if that is more.
        public var decoders = 1
        /// Called (on the graph makers' queue) after each transcription's graph has ended: `serve` trims the heap.
        public var afterTranscription: @Sendable () -> Void = {}
        /// Where the server says what went wrong with a client (each `error` event it sends, with the client's
        /// address): `serve` writes to standard error. Bounded: at most `ClientErrorLog.linesPer10s` lines in 10 s,
        /// then how many were left out, so a hostile client cannot flood the journal.
        public var log: @Sendable (String) -> Void = { _ in }

        public init(models: [WyomingModel], registry: NodeRegistry) {
            self.models = models
            self.registry = registry
        }
    }

    let configuration: Configuration
    let group: MultiThreadedEventLoopGroup
    /// Shared by every connection's graph: loaded decoders are reused, not loaded again per connection.
    public let decoders: SphinxDecoderPool
    let gate = ComputeGate()
    /// What went wrong with clients, for the server's log.
    let clientLog: ClientErrorLog
    /// Graphs are planned and made here, one at a time, off the event loop (a spec's model is built while
    /// planning; decoders load on each graph's thread, one at a time, unless the pool has one).
    let makers = DispatchQueue(label: "speechgraph wyoming graphs")
    /// Graphs started and not yet ended: `wait` lets them finish before the event loops stop.
    let activeGraphs = Atomic<Int>(0)
    private let channel = Mutex<(any Channel)?>(nil)
    private let connections = Mutex<[ObjectIdentifier: any Channel]>([:])
    private let draining = Atomic<Bool>(false)
    private let allClosed = Mutex<[CheckedContinuation<Void, Never>]>([])
    /// Connections that are closing and still read what their client sends (`WyomingConnection.closeGracefully`).
    private let lingering = Atomic<Int>(0)
    /// At most this many connections linger at once; beyond it, one closes as soon as its last event is written
    /// (a flood of refused connections cannot hold sockets open).
    static let maxLingering = 64

    /// Takes one of the places for a lingering connection; false when they are all taken.
    func beginLingering() -> Bool {
        if lingering.add(1, ordering: .relaxed).newValue <= Self.maxLingering { return true }
        lingering.subtract(1, ordering: .relaxed)
        return false
    }

    func endLingering() { lingering.subtract(1, ordering: .relaxed) }

    public init(_ configuration: Configuration) {
        self.configuration = configuration
        clientLog = ClientErrorLog(configuration.log)
        // Per model and use as many as asked for (4 at least), and three times that in all: the models built for
        // requests' phrases give way to the ones in use.
        decoders = SphinxDecoderPool(
            maxIdle: max(4, configuration.decoders), maxIdleInAll: 3 * max(4, configuration.decoders))
        group = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)
    }

    /// Runs each model's graph once on a moment of silence: its model files load now (a missing one fails here,
    /// before the server listens), and `decoders` of each wait in the pool for the first clients.
    public func warmUp() throws {
        for model in configuration.models {
            let (graph, input) = try makeGraph(model, outlet: WyomingOutlet(send: { _ in }, endpoint: {}))
            input?.write([Float](repeating: 0, count: 1600))
            graph.endInput()
            try graph.wait()
        }
        try decoders.fill(upTo: configuration.decoders)
    }

    /// A model's graph for one transcription, with the server's decoders and gate, and its `push.input`.
    func makeGraph(_ model: WyomingModel, overrides: [GraphPlanner.Override] = [], outlet: WyomingOutlet) throws
        -> (RunningGraph, AudioPusher?)
    {
        let resources = GraphResources(providing: [decoders, gate, outlet])
        let plan = try GraphPlanner(registry: configuration.registry).plan(
            model.graph, overrides: overrides, resources: resources)
        let graph = try RunningGraph(plan: plan, registry: configuration.registry, resources: resources)
        return (graph, graph.input(named: model.input))
    }

    /// Binds and listens; returns the bound port (useful with port 0).
    @discardableResult
    public func start() async throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(ByteToMessageHandler(WyomingFrameDecoder(limits: configuration.limits)))
                    // After the decoder: whole events are what keeps a connection alive, not bytes (a client that
                    // sends a byte of a header now and then held its place for ever).
                    try sync.addHandler(IdleStateHandler(readTimeout: configuration.idleTimeout))
                    try sync.addHandler(WyomingConnection(server: self, channel: channel))
                }
            }
        let bound = try await bootstrap.bind(host: configuration.host, port: configuration.port).get()
        channel.withLock { $0 = bound }
        return bound.localAddress?.port ?? configuration.port
    }

    /// Why listening failed, in the system's words (`Address already in use`), not NIO's
    /// (`bind(descriptor:ptr:bytes:): Address already in use) (errno: 98)`).
    public static func listenFailure(_ error: any Error) -> String {
        guard let io = error as? IOError else { return "\(error)" }
        return String(cString: strerror(io.errnoCode))
    }

    /// Waits until the server has closed (after `drain`).
    public func wait() async throws {
        guard let bound = channel.withLock({ $0 }) else { return }
        try await bound.closeFuture.get()
        await withCheckedContinuation { continuation in
            let now = connections.withLock { c -> Bool in
                if c.isEmpty { return true }
                allClosed.withLock { $0.append(continuation) }
                return false
            }
            if now { continuation.resume() }
        }
        // Graphs of clients that left may still be finishing (their last replies go through the event loops).
        while activeGraphs.load(ordering: .relaxed) > 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await group.shutdownGracefully()
    }

    /// Stops taking connections; idle connections close at once, and transcriptions in flight end their
    /// audio where it is, send their transcript and close. `wait` returns when all have.
    public func drain() {
        guard !draining.exchange(true, ordering: .acquiringAndReleasing) else { return }
        channel.withLock { $0 }?.close(promise: nil)
        for connection in connections.withLock({ Array($0.values) }) {
            connection.pipeline.fireUserInboundEventTriggered(WyomingConnection.Drain())
        }
    }

    var isDraining: Bool { draining.load(ordering: .acquiring) }

    /// Registers a new connection; false when the server is full (or draining).
    func admit(_ channel: any Channel) -> Bool {
        connections.withLock { c in
            guard c.count < configuration.maxConnections, !isDraining else { return false }
            c[ObjectIdentifier(channel)] = channel
            return true
        }
    }

    func release(_ channel: any Channel) {
        let waiting = connections.withLock { c -> [CheckedContinuation<Void, Never>] in
            c[ObjectIdentifier(channel)] = nil
            return c.isEmpty
                ? allClosed.withLock { w in
                    defer { w = [] }
                    return w
                } : []
        }
        for w in waiting { w.resume() }
    }

    /// Connections open now.
    public var connectionCount: Int { connections.withLock { $0.count } }

    /// The `info` event: the program and the models it offers.
    var info: WyomingEvent {
        let models: [JSONValue] = configuration.models.map { m in
            .object([
                "name": .string(m.name), "description": .string(m.description), "installed": .bool(true),
                "version": m.version.map(JSONValue.string) ?? .null,
                "attribution": .object(["name": .string(m.attribution.name), "url": .string(m.attribution.url)]),
                "languages": .array(m.languages.map(JSONValue.string)),
            ])
        }
        let program: JSONValue = .object([
            "name": .string("speechgraph"),
            "description": .string("speechgraph: on-device speech recognition with PocketSphinx, as a graph"),
            "attribution": .object([
                "name": .string("speechgraph"), "url": .string("https://github.com/speechgraph/speechgraph"),
            ]),
            "installed": .bool(true), "version": .string(configuration.version), "models": .array(models),
            "supports_transcript_streaming": .bool(true),
            // speechgraph's own vad ends the command (server-side endpointing).
            "requires_external_vad": .bool(false),
            // Cepstral mean normalisation already takes out the level; noise reduction changes the spectrum the
            // acoustic model was trained on.
            "prefers_auto_gain_enabled": .bool(false), "prefers_noise_reduction_enabled": .bool(false),
        ])
        return WyomingEvent("info", ["asr": .array([program])])
    }
}

/// The server's lines about clients' errors, at most `linesPer10s` in 10 s: a client that sends garbage as fast as
/// it can costs the log one line saying so, then a count, not a line a frame.
final class ClientErrorLog: Sendable {
    static let linesPer10s = 20
    private let write: @Sendable (String) -> Void
    private struct Window {
        var start: ContinuousClock.Instant
        var lines = 0
        var leftOut = 0
    }
    private let window: Mutex<Window>

    init(_ write: @escaping @Sendable (String) -> Void) {
        self.write = write
        window = Mutex(Window(start: .now))
    }

    func note(_ line: String) {
        let now = ContinuousClock.now
        let (show, full, leftOut) = window.withLock { w -> (Bool, Bool, Int) in
            var leftOut = 0
            if now - w.start >= .seconds(10) {
                leftOut = w.leftOut
                w = Window(start: now)
            }
            guard w.lines < Self.linesPer10s else {
                w.leftOut += 1
                return (false, false, leftOut)
            }
            w.lines += 1
            return (true, w.lines == Self.linesPer10s, leftOut)
        }
        if leftOut > 0 { write("speechgraph: wyoming: \(leftOut) more client errors were not shown") }
        guard show else { return }
        write(line)
        if full { write("speechgraph: wyoming: \(Self.linesPer10s) client errors in 10 s: the next ones are counted") }
    }
}
