import Synchronization

/// The inline executor: a planned graph run to its end on the calling thread. Every node runs in place (a node the
/// plan puts on a worker thread too, on this thread, in order), the sources that read on demand are pulled on their
/// sample clock, and pushed audio is fed from queues the caller fills beforehand (`feed`), one chunk an input a
/// cycle, as room allows. No thread, no clock, no wait: the same plan and the same audio give the same events in the
/// same order, every time. `run` reports what no node took and what was left unconsumed.
///
/// For tests of graph behaviour, and for tools that want a graph's result at once. The threaded executor,
/// `RunningGraph`, runs the same plan for real (live input, JACK, workers on their cores). A plan that places a
/// node in the audio server's real-time thread is refused: JACK calls that from a thread of its own.
public final class InlineGraph {
    /// What a run left: each ought to be empty for a test that fed the graph all it needs.
    public struct Report: Sendable {
        /// The events no node took (no connection from their port accepts their kind), with the node that emitted
        /// each, in order.
        public var unrouted: [(node: String, event: GraphEvent)] = []
        /// Audio or records a node never consumed: pushed audio still queued or in a ring, a gap never reported.
        public var leftUnconsumed: [String] = []
        /// The graph's warnings at the end (as `RunningGraph.warnings` words them).
        public var warnings: [String] = []
    }

    public let plan: GraphPlan
    public let resources: GraphResources
    private let engine: GraphEngine
    private var queued: [String: [[Float]]] = [:]
    private var ran = false

    /// Makes every node (opening files and models), as `RunningGraph` does; nothing runs until `run`.
    public init(plan: GraphPlan, registry: NodeRegistry, resources: GraphResources = GraphResources()) throws {
        if let node = plan.nodes.first(where: {
            if case .inCallback = $0.placement { return true }
            return $0.placement == .audioServer
        }) {
            throw SpeechGraphError(
                "node '\(node.name)' runs in the audio server's real-time thread, which the inline executor has not: "
                    + "run the graph with RunningGraph")
        }
        self.plan = plan
        self.resources = resources
        engine = try GraphEngine(plan: plan, registry: registry, resources: resources, inline: true)
    }

    /// Queues interleaved samples for the `push.input` node called `name`, written `chunkFrames` at a time as the
    /// graph makes room; the input ends once its queue is empty. Before `run`.
    public func feed(_ name: String, _ samples: [Float], chunkFrames: Int = 1600) throws {
        guard let input = pushInput(name) else { throw SpeechGraphError("no push.input node called '\(name)'") }
        let step = max(1, chunkFrames) * input.pusher.format.channelCount
        var chunks: [[Float]] = []
        var start = 0
        while start < samples.count {
            chunks.append(Array(samples[start..<min(start + step, samples.count)]))
            start += step
        }
        queued[name, default: []] += chunks
    }

    /// Runs the graph to its end on this thread: prepares every node, pulls and feeds until every source has
    /// ended, finishes every node, closes them. Once. Throws what a node threw, located as `RunningGraph` locates
    /// it; a push.input that was fed nothing and never ended would wait for ever, and is ended first.
    @discardableResult
    public func run() throws -> Report {
        guard !ran else { throw SpeechGraphError("an inline graph runs once") }
        ran = true
        let unrouted = Mutex<[(node: String, event: GraphEvent)]>([])
        engine.unrouted = { node, event in unrouted.withLock { $0.append((node, event)) } }
        defer { engine.closeAll() }
        for case let input as PushInputNode in engine.nodes where queued[input.name, default: []].isEmpty {
            input.pusher.end()
        }
        var report = Report()
        do {
            try engine.prepareAll()
            var offline = OfflineDriver(engine: engine, realtime: false, resources: resources)
            var live = LiveDriver(engine: engine, wake: resources.wake)
            while true {
                let pulling = try offline.cycle()
                feedOneChunkEach()
                let listening = try live.cycle(mayWait: false, ending: false)
                try engine.serveWakeups()
                if !pulling && !listening { break }
            }
            try engine.finishAll()
        } catch {
            engine.finishAfterFailure()
            throw error
        }
        report.unrouted = unrouted.withLock { $0 }
        for (name, chunks) in queued where !chunks.isEmpty {
            report.leftUnconsumed.append("\(name): \(chunks.count) chunks of pushed audio never written")
        }
        for case let input as PushInputNode in engine.nodes {
            let left = input.pusher.ring.endpoint.availableToRead / input.pusher.format.channelCount
            if left > 0 { report.leftUnconsumed.append("\(input.name): \(left) pushed frames never read") }
        }
        report.warnings = engine.warnings
        return report
    }

    /// The node called `name` (a worker node's own node), for what a test reads after the run.
    public func node(named name: String) -> (any GraphNode)? { engine.node(named: name) }

    private func pushInput(_ name: String) -> PushInputNode? {
        engine.nodes.lazy.compactMap { $0 as? PushInputNode }.first { $0.name == name }
    }

    /// One queued chunk into each push.input that has room for it; an input whose queue is empty is ended.
    private func feedOneChunkEach() {
        for name in queued.keys.sorted() {
            guard let input = pushInput(name), var chunks = queued[name] else { continue }
            if let next = chunks.first, input.pusher.freeFrames * input.pusher.format.channelCount >= next.count {
                _ = input.pusher.write(next)
                chunks.removeFirst()
                queued[name] = chunks
            }
            if chunks.isEmpty, !input.pusher.isEnded { input.pusher.end() }
        }
    }
}
