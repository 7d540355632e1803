import Foundation
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The instantiated nodes of one graph and the wiring between them: delivers each block and event to
/// the nodes connected downstream, on the calling thread, in order, and finishes nodes front to back.
///
/// Thread contract: everything but `observe`/`endObservers` runs on one thread at a time: the caller's
/// while the graph is made, then the graph thread (``RunningGraph`` hands it over when it starts the
/// thread and takes it back when the thread has ended).
final class GraphEngine {
    let plan: GraphPlan
    var nodes: [any GraphNode] = []
    /// routes[node][outputPort] = [(target node, target input port, the kinds that input accepts)]
    private var routes: [[[(node: Int, port: Int, accepts: EventKinds)]]] = []
    private var downstream: [[Int]] = []
    private var upstreamCount: [Int] = []
    private var finishedUpstream: [Int] = []
    private(set) var finished: [Bool] = []
    private var closed = false
    /// Indices of nodes running on worker threads.
    private(set) var workers: [Int] = []
    /// Each node's wakeup (`NodeContext.wakeup`); those of nodes on the graph thread are served by `serveWakeups`.
    private var wakeups: [NodeWakeup] = []
    /// The order of `prepareAll`: nodes in the real-time domain last.
    private var prepareOrder: [Int] = []
    private var audioOutputs: [[Bool]] = []
    /// Streams of events handed out by `RunningGraph.events(of:)`: by node index, or all nodes (`nil`).
    private let observers = Mutex<Observers>(Observers())
    private struct Observers {
        var streams: [Int?: [AsyncStream<GraphEvent>.Continuation]] = [:]
        /// The graph has ended: a stream asked for now ends at once.
        var ended = false
    }
    /// The node the graph thread is inside now (the innermost, as nodes call on into the next), or -1: read from
    /// any thread to name a node that does not return (a plugin's process that hangs).
    let busy = Atomic<Int>(-1)
    /// Set once any observer exists, so that graphs nobody watches never take the lock.
    private let observed = Atomic<Bool>(false)
    /// The warnings told while the graph ran (`NodeOutput.warn`, or a warning event that went to `unrouted`),
    /// worded as `warnings` words them: each once.
    private(set) var told: Set<String> = []
    /// Called with each event no node takes (`RunningGraph.Options.unrouted`).
    var unrouted: (@Sendable (String, GraphEvent) -> Void)?

    /// `inline`: every node runs on the thread that runs the engine, a node placed on a worker too (`InlineGraph`).
    init(plan: GraphPlan, registry: NodeRegistry, resources: GraphResources, inline: Bool = false) throws {
        self.plan = plan
        var backlogs: [WorkerBacklog] = []
        for (index, node) in plan.nodes.enumerated() {
            guard let type = registry[node.typeName] else {
                throw SpeechGraphError("node type '\(node.typeName)' is not registered")
            }
            let connected = Set(plan.edges.filter { $0.toNode == index }.map { type.descriptor.inputs[$0.toPort].name })
            let backlog = WorkerBacklog()
            backlogs.append(backlog)
            var context = NodeContext(
                config: node.config, inputFormats: node.inputFormats, outputFormats: node.outputFormats,
                maxBlockFrames: max(node.maxInputFrames, 1), resources: resources, connectedInputs: connected,
                backlog: backlog)
            context.placement = node.placement
            context.wakeup = NodeWakeup(waking: resources.wake)
            wakeups.append(context.wakeup)
            for edge in plan.edges where edge.toNode == index && edge.kind == .audio {
                let from = plan.nodes[edge.fromNode]
                guard let fromType = registry[from.typeName] else { continue }
                let consumers = plan.edges.filter { $0.fromNode == edge.fromNode && $0.fromPort == edge.fromPort }
                context.sources[type.descriptor.inputs[edge.toPort].name] = AudioSource(
                    node: from.name, typeName: from.typeName, port: fromType.descriptor.outputs[edge.fromPort].name,
                    consumers: consumers.count)
            }
            // Where it runs in the audio server's callback, the host is the node it runs behind, made before it.
            if case .inCallback(let source) = node.placement,
                let host = plan.nodes.firstIndex(where: { $0.name == source }).flatMap({ $0 < nodes.count ? $0 : nil })
            {
                context.realtimeHost = (nodes[host] as? RealtimeProcessorHosting)?.realtimeHost
            }
            do {
                // The resources it shares, when the plan was made without them (`check`'s plan, run later).
                try resources.prepare(type.descriptor.requires)
                nodes.append(try type.make(context))
            } catch let error as SpeechGraphError {
                closeAll()
                throw located(error, node: index)
            }
        }
        // Where each node runs is the plan's (GraphPlanner.place): workers wrapped in a WorkerNode. Nodes of the audio
        // server are prepared last: a JACK client activates in its prepare, and the audio it queues from then on
        // must not wait for a recognizer loading its models (with a small `buffer`, that audio overflowed before the
        // graph ever ran).
        let realtime = plan.nodes.indices.filter {
            ![.graphThread, .worker].contains(plan.nodes[$0].placement)
        }
        prepareOrder = plan.nodes.indices.filter { !realtime.contains($0) } + realtime
        for i in plan.nodes.indices where plan.nodes[i].placement == .worker && !inline {
            let format = plan.nodes[i].inputFormats.values.first ?? AudioFormat(sampleRate: 16000, channelCount: 1)
            nodes[i] = WorkerNode(
                nodes[i], maxQueuedFrames: 2 * format.sampleRate, format: format, wake: resources.wake,
                backlog: backlogs[i], wakeup: wakeups[i])
            workers.append(i)
        }
        routes = plan.nodes.indices.map { i in
            let outputs = registry[plan.nodes[i].typeName]!.descriptor.outputs.count
            return (0..<outputs).map { port in
                plan.edges.filter { $0.fromNode == i && $0.fromPort == port }.map { e in
                    let input = registry[plan.nodes[e.toNode].typeName]!.descriptor.inputs[e.toPort]
                    return (e.toNode, e.toPort, input.kind == .events ? input.eventKinds : EventKinds.any)
                }
            }
        }
        audioOutputs = plan.nodes.map { n in registry[n.typeName]!.descriptor.outputs.map { $0.kind == .audio } }
        let upstream = plan.upstream
        upstreamCount = upstream.map(\.count)
        downstream = plan.nodes.indices.map { i in plan.nodes.indices.filter { upstream[$0].contains(i) } }
        finishedUpstream = Array(repeating: 0, count: plan.nodes.count)
        finished = Array(repeating: false, count: plan.nodes.count)
    }

    deinit { closeAll() }

    /// A runtime failure of node `index`, located at the parameter or node declaration it came from.
    func located(_ error: SpeechGraphError, node index: Int) -> SpeechGraphError {
        plan.nodes[index].config.located(error)
    }

    func prepareAll() throws {
        for i in prepareOrder {
            do {
                try nodes[i].prepare()
            } catch let error as SpeechGraphError {
                throw located(error, node: i)
            }
        }
        for i in workers {
            (nodes[i] as! WorkerNode).start(
                output: NodeOutput(engine: self, node: i, deferred: nodes[i] as? WorkerNode))
        }
    }

    func output(_ node: Int) -> NodeOutput { NodeOutput(engine: self, node: node) }

    /// Delivers the events the worker threads made since the last call.
    func deliverWorkerEvents() throws {
        for i in workers where !finished[i] {
            try (nodes[i] as! WorkerNode).deliverOutbound(output(i))
        }
    }

    /// Calls `wake(output:)` on each node on this thread whose wakeup was posted (a worker's node is its worker's).
    func serveWakeups() throws {
        for i in nodes.indices where !finished[i] && !(nodes[i] is WorkerNode) && wakeups[i].take() {
            let outer = busy.exchange(i, ordering: .relaxed)
            defer { busy.store(outer, ordering: .relaxed) }
            try nodes[i].wake(output: output(i))
        }
    }

    /// Node `i` and every node whose inputs have all finished because of it.
    func finishNode(_ i: Int) throws {
        guard !finished[i] else { return }
        finished[i] = true
        let outer = busy.exchange(i, ordering: .relaxed)
        defer { busy.store(outer, ordering: .relaxed) }
        try nodes[i].finish(output: output(i))
        for d in downstream[i] {
            finishedUpstream[d] += 1
            if finishedUpstream[d] == upstreamCount[d] { try finishNode(d) }
        }
    }

    /// Stopped or done: finishes whatever has not finished, front to back.
    func finishAll() throws {
        for i in nodes.indices where !finished[i] && upstreamCount[i] == 0 { try finishNode(i) }
        for i in nodes.indices where !finished[i] { try finishNode(i) }
    }

    /// After a failure: delivers what was already produced, ignoring further errors.
    func finishAfterFailure() {
        for i in nodes.indices where !finished[i] {
            finished[i] = true
            try? nodes[i].finish(output: output(i))
        }
    }

    func deliver(_ block: AudioBlock, from node: Int, port: Int) throws {
        for target in routes[node][port] where !finished[target.node] {
            let outer = busy.exchange(target.node, ordering: .relaxed)
            defer { busy.store(outer, ordering: .relaxed) }
            try nodes[target.node].process(block, port: target.port, output: output(target.node))
        }
    }

    func deliverDiscontinuity(from node: Int) throws {
        for (port, isAudio) in audioOutputs[node].enumerated() where isAudio {
            for target in routes[node][port] where !finished[target.node] {
                let outer = busy.exchange(target.node, ordering: .relaxed)
                defer { busy.store(outer, ordering: .relaxed) }
                try nodes[target.node].discontinuity(port: target.port, output: output(target.node))
            }
        }
    }

    func deliver(_ event: GraphEvent, from node: Int, port: Int) throws {
        if port == NodeOutput.noPort {
            // A warning told while running (`NodeOutput.warn`): once for each node and reason.
            guard case .warning(_, _, let reason) = event, told.insert(plan.nodes[node].config.warning(reason)).inserted
            else { return }
        }
        if observed.load(ordering: .acquiring) {
            observers.withLock { observers in
                for c in observers.streams[node] ?? [] { c.yield(event) }
                for c in observers.streams[nil] ?? [] { c.yield(event) }
            }
        }
        // An input gets only the kinds it accepts (a port may carry more: `vad.events` into a recognizer's
        // control and into a sink that writes every event).
        var taken = false
        let targets = port == NodeOutput.noPort ? [] : routes[node][port]
        for target in targets where !finished[target.node] && target.accepts.contains(event.kind) {
            taken = true
            let outer = busy.exchange(target.node, ordering: .relaxed)
            defer { busy.store(outer, ordering: .relaxed) }
            try nodes[target.node].handle(event, port: target.port, output: output(target.node))
        }
        if !taken, let unrouted {
            // A warning event no node takes is told by the handler (`speechgraph run` prints it): it counts as
            // told, so that the same reason among the node's warnings at the end is not said again (a stream's
            // end warning is both).
            if port != NodeOutput.noPort, case .warning(_, _, let reason) = event {
                told.insert(plan.nodes[node].config.warning(reason))
            }
            unrouted(plan.nodes[node].name, event)
        }
    }

    /// Any thread: `continuation` receives every event node `index` emits (every node's, for `nil`).
    func observe(_ index: Int?, _ continuation: AsyncStream<GraphEvent>.Continuation) {
        let ended = observers.withLock { observers in
            if !observers.ended { observers.streams[index, default: []].append(continuation) }
            return observers.ended
        }
        if ended { continuation.finish() } else { observed.store(true, ordering: .releasing) }
    }

    /// Any thread: ends every stream handed out; later ones end at once.
    func endObservers() {
        let all = observers.withLock { observers in
            defer {
                observers.streams.removeAll()
                observers.ended = true
            }
            return observers.streams.values.flatMap { $0 }
        }
        for c in all { c.finish() }
    }

    func closeAll() {
        guard !closed else { return }
        closed = true
        for node in nodes { node.close() }
    }

    var warnings: [String] {
        nodes.indices.flatMap { i in nodes[i].warnings.map(plan.nodes[i].config.warning) }
    }

    var notes: [String] { nodes.flatMap(\.notes) }

    /// The source nodes that receive audio on their own time (`live`: JACK ports, pushed inputs), or those that
    /// read on demand (files), with their indices: what the live and offline drivers pull.
    func sources(live: Bool) -> [(index: Int, node: any SourceNode)] {
        nodes.enumerated().compactMap { i, n in
            (n as? any SourceNode).flatMap { $0.isLive == live ? (i, $0) : nil }
        }
    }

    func node(named name: String) -> (any GraphNode)? {
        plan.index(of: name).map { (nodes[$0] as? WorkerNode)?.inner ?? nodes[$0] }
    }
}

/// Seconds on the monotonic clock: any thread, real-time safe (one `clock_gettime`).
public func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ s: Double) {
    var request = timespec(tv_sec: Int(s), tv_nsec: Int((s - Double(Int(s))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}
