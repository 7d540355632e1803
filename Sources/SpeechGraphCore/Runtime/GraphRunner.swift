import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Runs a planned graph offline: pulls every source in turn on the calling thread and pushes each
/// block through the graph, so events reach the sinks in the order they were made. As fast as the
/// CPU allows, or paced like live audio.
public final class GraphRunner {
    public let plan: GraphPlan
    private var nodes: [any GraphNode] = []
    /// routes[node][outputPort] = [(target node, target input port)]
    private var routes: [[[(node: Int, port: Int)]]] = []
    private var downstream: [[Int]] = []
    private var upstreamCount: [Int] = []
    private var finishedUpstream: [Int] = []
    private var finished: [Bool] = []
    private var closed = false
    /// Indices of nodes running on worker threads.
    private var workers: [Int] = []

    /// Instantiates every node of a negotiated plan. Nothing runs until `run`.
    public let resources: GraphResources
    private var audioOutputs: [[Bool]] = []

    public init(plan: GraphPlan, registry: NodeRegistry, resources: GraphResources = GraphResources()) throws {
        self.plan = plan
        self.resources = resources
        for (index, node) in plan.nodes.enumerated() {
            guard let type = registry[node.typeName] else {
                throw SpeechGraphError("node type '\(node.typeName)' is not registered")
            }
            let connected = Set(plan.edges.filter { $0.toNode == index }.map { type.descriptor.inputs[$0.toPort].name })
            let context = NodeContext(config: node.config, inputFormats: node.inputFormats,
                                      outputFormats: node.outputFormats, maxBlockFrames: max(node.maxInputFrames, 1),
                                      resources: resources, connectedInputs: connected)
            do {
                nodes.append(try type.make(context))
            } catch let error as SpeechGraphError {
                closeAll()
                throw SpeechGraphError("node '\(node.name)' (\(node.typeName)): \(error.message)", parameter: error.parameter,
                                       location: error.parameter.flatMap { node.config.locations[$0] } ?? node.location)
            }
        }
        // Several costly nodes: each on a worker thread of its own (see WorkerNode).
        let costly = plan.nodes.indices.filter { registry[plan.nodes[$0].typeName]!.descriptor.prefersWorkerThread }
        if costly.count >= 2 && resources.settings["threads"] != "one" {
            for i in costly {
                let rate = plan.nodes[i].inputFormats.values.first?.sampleRate ?? 16000
                let worker = WorkerNode(nodes[i], maxQueuedFrames: 2 * rate)
                nodes[i] = worker
                workers.append(i)
            }
        }
        routes = plan.nodes.indices.map { i in
            let outputs = registry[plan.nodes[i].typeName]!.descriptor.outputs.count
            return (0..<outputs).map { port in
                plan.edges.filter { $0.fromNode == i && $0.fromPort == port }.map { ($0.toNode, $0.toPort) }
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

    /// Runs until every source has ended or `stop` is requested, then finishes every node in order so
    /// that results already made are delivered, and closes them. A node that throws stops the run;
    /// the rest are still finished (best effort) before the error is rethrown.
    ///
    /// - Parameters:
    ///   - realtime: pace each source so that its audio takes as long as it lasts.
    ///   - progress: called after each block with the sources' mean progress (0...1), when known.
    public func run(stop: StopSignal = StopSignal(), realtime: Bool = false,
                    progress: ((Double) -> Void)? = nil) throws {
        defer { closeAll() }
        var prepared = 0
        do {
            for node in nodes {
                try node.prepare()
                prepared += 1
            }
        } catch let error as SpeechGraphError {
            let planned = plan.nodes[prepared]
            throw SpeechGraphError("node '\(planned.name)' (\(planned.typeName)): \(error.message)", parameter: error.parameter,
                                   location: error.parameter.flatMap { planned.config.locations[$0] } ?? planned.location)
        }

        for i in workers {
            (nodes[i] as! WorkerNode).start(output: NodeOutput(runner: self, node: i, deferred: nodes[i] as? WorkerNode))
        }
        let sources: [(index: Int, node: any SourceNode)] = nodes.enumerated().compactMap { i, n in
            (n as? any SourceNode).map { (i, $0) }
        }
        var active = sources.map { _ in true }
        let start = monotonicSeconds()
        if realtime { resources.setAudioEpochIfUnset(Date().timeIntervalSince1970) }
        do {
            while active.contains(true) && !stop.isRequested {
                for (k, source) in sources.enumerated() where active[k] {
                    if stop.isRequested { break }
                    if try !source.node.pull(output: NodeOutput(runner: self, node: source.index)) {
                        active[k] = false
                        try finishNode(source.index)
                    } else if realtime {
                        let due = start + source.node.position
                        let now = monotonicSeconds()
                        if due > now { sleepSeconds(due - now) }
                    }
                }
                for i in workers where !finished[i] {
                    try (nodes[i] as! WorkerNode).deliverOutbound(NodeOutput(runner: self, node: i))
                }
                if let progress {
                    let known = sources.compactMap { $0.node.progress }
                    if !known.isEmpty { progress(known.reduce(0, +) / Double(known.count)) }
                }
            }
            // Stopped or done: finish whatever has not finished, front to back.
            for i in nodes.indices where !finished[i] && upstreamCount[i] == 0 { try finishNode(i) }
            for i in nodes.indices where !finished[i] { try finishNode(i) }
        } catch {
            // Deliver what was already produced: finish the rest, ignoring their errors.
            for i in nodes.indices where !finished[i] {
                finished[i] = true
                try? nodes[i].finish(output: NodeOutput(runner: self, node: i))
            }
            throw error
        }
    }

    private func finishNode(_ i: Int) throws {
        guard !finished[i] else { return }
        finished[i] = true
        try nodes[i].finish(output: NodeOutput(runner: self, node: i))
        for d in downstream[i] {
            finishedUpstream[d] += 1
            if finishedUpstream[d] == upstreamCount[d] { try finishNode(d) }
        }
    }

    func deliver(_ block: AudioBlock, from node: Int, port: Int) throws {
        for target in routes[node][port] where !finished[target.node] {
            try nodes[target.node].process(block, port: target.port, output: NodeOutput(runner: self, node: target.node))
        }
    }

    func deliverDiscontinuity(from node: Int) throws {
        for (port, isAudio) in audioOutputs[node].enumerated() where isAudio {
            for target in routes[node][port] where !finished[target.node] {
                try nodes[target.node].discontinuity(port: target.port, output: NodeOutput(runner: self, node: target.node))
            }
        }
    }

    func deliver(_ event: GraphEvent, from node: Int, port: Int) throws {
        for target in routes[node][port] where !finished[target.node] {
            try nodes[target.node].handle(event, port: target.port, output: NodeOutput(runner: self, node: target.node))
        }
    }

    private func closeAll() {
        guard !closed else { return }
        closed = true
        for node in nodes { node.close() }
    }

    /// Every warning the nodes have raised so far, prefixed with the node's name.
    public var warnings: [String] {
        nodes.indices.flatMap { i in nodes[i].warnings.map { "node '\(plan.nodes[i].name)': \($0)" } }
    }

    /// The running node called `name`, for tests and tools that look inside.
    public func node(named name: String) -> (any GraphNode)? {
        plan.index(of: name).map { (nodes[$0] as? WorkerNode)?.inner ?? nodes[$0] }
    }
}

func monotonicSeconds() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ s: Double) {
    var request = timespec(tv_sec: Int(s), tv_nsec: Int((s - Double(Int(s))) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) == -1 && errno == EINTR { request = remaining }
}
