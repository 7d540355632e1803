import Dispatch
import Foundation
import Synchronization

/// A planned graph, instantiated and run: the one object that owns a graph's nodes, its threads, its
/// resources (decoders, the JACK session) and its events.
///
/// ```swift
/// let graph = try RunningGraph(plan: plan, registry: registry)
/// let results = graph.events(of: "asr")
/// let mic = graph.input(named: "mic")       // a push.input node
/// graph.start()
/// mic?.write(samples)                       // from any thread
/// mic?.end()
/// for await event in results { ... }        // ends when the graph has finished
/// try graph.wait()
/// ```
///
/// Many graphs can run at once in one process; each has its own nodes, decoders and threads, and
/// nothing one graph does changes what another computes. One thing is shared, and only in time: PocketSphinx
/// logs through one process-global stream, so model loads take turns (`SphinxLog.loading`): a graph loading a
/// model may wait for another's load, never for its decoding.
///
/// ### Drivers
/// The graph thread runs two drivers in turn: the offline driver pulls the sources that read on demand
/// (files), as fast as the CPU allows or paced like live audio, on their sample clock; the live driver
/// takes what the live sources (JACK ports, pushed inputs) have received, and when nothing is due from
/// any source it sleeps on the graph's wake signal, which the JACK process callback and pushers post.
///
/// ### Thread contract
/// Every method may be called from any thread. The nodes themselves are used by one thread at a time:
/// by the thread that makes the graph until `start`, then only by the graph thread (and the worker
/// threads it starts) until the graph has ended, then again by whoever has seen it end (`wait`,
/// `drain`); the dispatch group that marks the end orders those uses.
public final class RunningGraph: @unchecked Sendable {
    // @unchecked: `engine` is not Sendable. It is touched by one thread at a time as the contract above
    // says: `start` hands it to the graph thread (Thread.start happens-before the thread's body), and
    // `done.leave()` at the thread's end happens-before `done.wait()`/`notify` returns elsewhere. Every
    // other stored property is immutable or Sendable (Mutex, Atomic, StopSignal, DispatchGroup).

    public struct Options: Sendable {
        /// Pace sources that read on demand (files) so that their audio takes as long as it lasts.
        public var realtime: Bool
        /// Called on the graph thread with the sources' mean progress (0...1), when known.
        public var progress: (@Sendable (Double) -> Void)?
        /// A stop signal shared with the caller (one signal may stop several graphs); `stop()` sets it too.
        public var stop: StopSignal?
        /// Called on the graph thread with the name of the node that emitted it and each event that no node of the
        /// graph takes (no connection from its port accepts its kind): a `jack.input`'s gaps, availability and
        /// warnings in a graph that routes them nowhere, for the caller to show elsewhere (`speechgraph run`
        /// writes them on standard error). Observers of `events(of:)` see every event either way.
        public var unrouted: (@Sendable (_ node: String, _ event: GraphEvent) -> Void)?

        public init(
            realtime: Bool = false, stop: StopSignal? = nil, progress: (@Sendable (Double) -> Void)? = nil,
            unrouted: (@Sendable (_ node: String, _ event: GraphEvent) -> Void)? = nil
        ) {
            self.realtime = realtime
            self.stop = stop
            self.unrouted = unrouted
            self.progress = progress
        }
    }

    private enum Phase { case ready, running, ended }

    public let plan: GraphPlan
    public let resources: GraphResources
    private let options: Options
    private let engine: GraphEngine
    private let stopSignal: StopSignal
    private let draining = Atomic<Bool>(false)
    private let phase = Mutex<Phase>(.ready)
    private let outcome = Mutex<(any Error)?>(nil)
    private let done = DispatchGroup()

    /// Makes every node of a planned graph (opening files and models, registering JACK ports). Nothing
    /// runs until `start`. A node that cannot be made throws, located where the graph file declared it.
    public init(
        plan: GraphPlan, registry: NodeRegistry, resources: GraphResources = GraphResources(),
        options: Options = Options()
    ) throws {
        self.plan = plan
        self.resources = resources
        self.options = options
        stopSignal = options.stop ?? StopSignal()
        engine = try GraphEngine(plan: plan, registry: registry, resources: resources)
        engine.unrouted = options.unrouted
        // A writer that would wait for room before `start` would wait forever: only the running graph reads.
        for case let input as PushInputNode in engine.nodes {
            input.pusher.beforeWaiting { [weak self] in self?.start() }
        }
    }

    /// Starts the graph thread. Events flow from here on; subscribe with `events(of:)` before, so as to
    /// miss none. Calling it again does nothing.
    public func start() {
        let go = phase.withLock { phase -> Bool in
            guard phase == .ready else { return false }
            phase = .running
            return true
        }
        guard go else { return }
        done.enter()
        let thread = Thread { [self] in
            do {
                try body()
            } catch {
                outcome.withLock { $0 = error }
            }
            engine.endObservers()
            phase.withLock { $0 = .ended }
            done.leave()
        }
        thread.name = "speechgraph graph"
        thread.start()
    }

    /// Asks the graph to stop soon: sources stop where they are, the utterance in flight is finished, and
    /// every result made is delivered before the graph ends. Any thread, any time. Before `start`, the graph
    /// ends at once without running: its event sequences end, `wait` returns, and `start` does nothing.
    public func stop() {
        stopSignal.request()
        let neverStarted = phase.withLock { phase -> Bool in
            guard phase == .ready else { return false }
            phase = .ended
            return true
        }
        // Nothing ran: its event sequences end now. Its nodes are closed with the graph (no sink wrote, so the
        // files they would rewrite stay as they were); the engine stays the creating thread's until then.
        if neverStarted { engine.endObservers() }
        resources.wake.post()
    }

    /// Ends the input: pushed inputs and live ports take no more audio, files are read to their end; the
    /// graph ends once every result is out. Then waits for that, like `wait`.
    public func drain() async throws {
        endInput()
        try await ended()
    }

    /// Starts the graph if it has not started, and waits, without blocking a thread, until it has ended;
    /// rethrows what stopped it.
    public func wait() async throws {
        start()
        try await ended()
    }

    private func ended() async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            done.notify(queue: .global()) { [self] in
                if let error = outcome.withLock({ $0 }) {
                    continuation.resume(throwing: error)
                } else {
                    continuation.resume()
                }
            }
        }
    }

    /// Loads the graph's models again (`speechgraph run` does it on SIGHUP): the files they were read from are
    /// read again, and `parameters` (by node name: a recognizer's `lm`, `weight`, `grammar`) replace those
    /// nodes' parameters. New models load on this thread while the audio goes on (this returns when they are
    /// loaded) and take over between utterances; each node that reloads emits a `modelChanged` event when they
    /// do (or when they could not be loaded). Not on the graph's own thread.
    /// Returns each reloading node's name, and why its models could not be loaded (`nil`: loaded).
    @discardableResult
    public func reloadModels(parameters: [String: [String: ParameterValue]] = [:]) -> [ModelReloads.Outcome] {
        let outcomes = resources.optional(ModelReloads.self)?.request(parameters: parameters) ?? []
        resources.wake.post()
        return outcomes
    }

    /// Ends the input (see `drain`) without waiting.
    public func endInput() {
        start()
        draining.store(true, ordering: .releasing)
        resources.wake.post()
    }

    /// Starts the graph if it has not started, and blocks until it has ended; rethrows what stopped it.
    public func wait() throws {
        start()
        done.wait()
        if let error = outcome.withLock({ $0 }) { throw error }
    }

    /// Starts the graph and blocks until it has ended (`start` then `wait`).
    public func run() throws { try wait() }

    /// Every event that node `name` emits (every node's, for `nil`) from now on, in order; the sequence
    /// ends when the graph has ended. A name that is not in the graph gives an empty sequence.
    public func events(of name: String? = nil) -> AsyncStream<GraphEvent> {
        let (stream, continuation) = AsyncStream<GraphEvent>.makeStream()
        let index = name.flatMap { plan.index(of: $0) }
        if name != nil && index == nil || phase.withLock({ $0 == .ended }) {
            continuation.finish()
        } else {
            engine.observe(index, continuation)
        }
        return stream
    }

    /// The node the graph thread is inside now (processing a block or handling an event), if any: what holds
    /// a graph that does not stop (a plugin node whose process never returns). Any thread.
    public var busyNode: String? {
        let i = engine.busy.load(ordering: .relaxed)
        return plan.nodes.indices.contains(i) ? plan.nodes[i].name : nil
    }

    /// The writing end of the `push.input` node called `name`: feed it audio from outside.
    public func input(named name: String) -> AudioPusher? {
        guard let index = plan.index(of: name) else { return nil }
        return (engine.nodes[index] as? PushInputNode)?.pusher
    }

    /// What the nodes had to say about how they were made, no problem (a pronunciation guessed for a word of a
    /// language model built on first use: `file:line:col: warning: ...`), as whole lines. Before `start` or after
    /// the end; the same every time.
    public var notes: [String] {
        guard phase.withLock({ $0 != .running }) else { return [] }
        return engine.notes
    }

    /// Warnings the nodes raised (a truncated file, say), prefixed with the node's name. After the end.
    public var warnings: [String] {
        guard phase.withLock({ $0 != .running }) else { return [] }
        return engine.warnings
    }

    /// Those of `warnings` that were also told while the graph ran (a sink that could not write, a stream's end
    /// that no node takes: a `warning` event to `events()` and `Options.unrouted`), so that a program that printed
    /// them then need not again.
    /// After the end.
    public var warningsToldWhileRunning: Set<String> {
        guard phase.withLock({ $0 != .running }) else { return [] }
        return engine.told
    }

    /// How often the worker thread of the node called `name` woke to a post (nil: the node is not on one); after the
    /// end, for tests.
    func workerWakeUps(of name: String) -> Int? {
        guard phase.withLock({ $0 == .ended }), let index = plan.index(of: name) else { return nil }
        return (engine.nodes[index] as? WorkerNode)?.wakeUps
    }

    /// How often the worker thread of the node called `name` slept out its timeout while the graph thread waited for
    /// room in its rings (nil: the node is not on one); after the end, for tests.
    func workerMissedWakes(of name: String) -> Int? {
        guard phase.withLock({ $0 == .ended }), let index = plan.index(of: name) else { return nil }
        return (engine.nodes[index] as? WorkerNode)?.missedWakes
    }

    /// The node called `name`, for tests and tools that look inside; only before `start` or after the end.
    public func node(named name: String) -> (any GraphNode)? {
        guard phase.withLock({ $0 != .running }) else { return nil }
        return engine.node(named: name)
    }

    // MARK: - The graph thread

    private func body() throws {
        defer { engine.closeAll() }
        try engine.prepareAll()
        var offline = OfflineDriver(engine: engine, realtime: options.realtime, resources: resources)
        var live = LiveDriver(engine: engine, wake: resources.wake)
        do {
            while !stopSignal.isRequested {
                let pulling = try offline.cycle()
                let listening = try live.cycle(mayWait: !pulling, ending: draining.load(ordering: .acquiring))
                try engine.serveWakeups()
                try engine.deliverWorkerEvents()
                if let progress = options.progress, let fraction = offline.progress { progress(fraction) }
                if !pulling && !listening { break }
            }
            try engine.finishAll()
        } catch {
            engine.finishAfterFailure()
            throw error
        }
    }
}

/// Pulls the sources that read on demand (files), one block each per cycle, on their sample clock: as
/// fast as the CPU allows, or paced so that audio takes as long as it lasts.
struct OfflineDriver {
    private let engine: GraphEngine
    private let realtime: Bool
    private var sources: [(index: Int, node: any SourceNode)]
    private var start = 0.0

    init(engine: GraphEngine, realtime: Bool, resources: GraphResources) {
        self.engine = engine
        self.realtime = realtime
        sources = engine.sources(live: false)
        start = monotonicSeconds()
        if realtime && !sources.isEmpty { resources.setAudioEpochIfUnset(Date().timeIntervalSince1970) }
    }

    /// Pulls every active source once; returns whether any is still active.
    mutating func cycle() throws -> Bool {
        var k = 0
        while k < sources.count {
            let source = sources[k]
            if try source.node.pull(output: engine.output(source.index)) {
                if realtime {
                    let due = start + source.node.position
                    let now = monotonicSeconds()
                    if due > now { sleepSeconds(due - now) }
                }
                k += 1
            } else {
                sources.remove(at: k)
                try engine.finishNode(source.index)
            }
        }
        return !sources.isEmpty
    }

    var progress: Double? {
        let known = sources.compactMap(\.node.progress)
        return known.isEmpty ? nil : known.reduce(0, +) / Double(known.count)
    }
}

/// Takes what the live sources (JACK ports, pushed inputs) have received. When nothing else is due, it
/// sleeps on the graph's wake signal until a source posts it (JACK's process callback after each period,
/// a pusher after each write), or 50 ms pass (so that server changes are noticed).
struct LiveDriver {
    private let engine: GraphEngine
    private let wake: WakeSignal
    private var sources: [(index: Int, node: any SourceNode)]

    init(engine: GraphEngine, wake: WakeSignal) {
        self.engine = engine
        self.wake = wake
        sources = engine.sources(live: true)
    }

    /// - Parameters:
    ///   - mayWait: nothing else is due: sleep until a source posts the wake signal.
    ///   - ending: the input is ending: take what has arrived, then finish every live source.
    /// - Returns: whether any live source is still active.
    mutating func cycle(mayWait: Bool, ending: Bool) throws -> Bool {
        guard !sources.isEmpty else { return false }
        if mayWait && !ending { _ = wake.wait(timeout: 0.05) }
        var k = 0
        while k < sources.count {
            let source = sources[k]
            if try source.node.pull(output: engine.output(source.index)) && !ending {
                k += 1
            } else {
                sources.remove(at: k)
                try engine.finishNode(source.index)
            }
        }
        return !sources.isEmpty
    }
}
