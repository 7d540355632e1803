/// Where a planned node runs. Decided once, by `GraphPlanner.place`, from the descriptors' threading domains and
/// the graph's shape; the engine runs the plan as it says, `check --plan` prints it, and no node moves itself.
public enum NodePlacement: Sendable, Equatable, CustomStringConvertible {
    /// The graph thread, in order with the other nodes.
    case graphThread
    /// A worker thread of its own: its input queued to it, its events queued back to the graph thread.
    case worker
    /// The audio server's ports: the JACK process callback moves each period through one SPSC ring per port,
    /// the graph thread does the rest.
    case audioServer
    /// In the audio server's process callback, over the audio of node `of` (a real-time safe processor fed by
    /// that node alone), before the audio reaches the graph.
    case inCallback(of: String)

    public var description: String {
        switch self {
        case .graphThread: return "the graph thread"
        case .worker: return "a worker thread of its own"
        case .audioServer:
            return "the JACK process callback (its ports, through one SPSC ring each) and the graph thread"
        case .inCallback(let host): return "the JACK process callback of \(host), over its audio"
        }
    }
}

extension NodeDescriptor {
    /// A real-time safe processor: in the real-time domain with audio in and out (a plugin audio node that said it
    /// is real-time safe). It can run in the process callback of the source that feeds it alone.
    var isRealtimeProcessor: Bool {
        threading == .realtime && inputs.contains { $0.kind == .audio } && outputs.contains { $0.kind == .audio }
    }

    /// An audio server's source (jack.input): in the real-time domain with audio out and none in. Its process
    /// callback can run one real-time safe processor over its audio.
    var hostsRealtimeProcessor: Bool {
        threading == .realtime && !inputs.contains { $0.kind == .audio } && outputs.contains { $0.kind == .audio }
    }
}

extension GraphPlanner {
    /// The placement pass, run once formats are fixed (converters inserted). Its rules:
    /// - a `realtime` node that is not a processor (JACK ports): `audioServer`;
    /// - a real-time safe processor whose one audio input comes from an audio server's source, which feeds nothing
    ///   else, at the same channel count in and out: `inCallback(of:)` that source; any other processor: the graph
    ///   thread;
    /// - a `worker` node (a recognizer): a `worker` thread when the graph has two or more of them (so that they use
    ///   several cores) or live input (so that the graph thread, a vad deciding where speech ends, never waits for
    ///   a decoder); a single one on offline input stays on the graph thread, where the order of every event at
    ///   the sinks is fixed;
    /// - everything else: the graph thread.
    public func place(_ plan: inout GraphPlan) {
        let descriptors = plan.nodes.map { registry[$0.typeName]!.descriptor }
        let live = descriptors.contains { $0.isLive }
        let costly = descriptors.filter { $0.threading == .worker }.count
        for i in plan.nodes.indices {
            let d = descriptors[i]
            switch d.threading {
            case .any:
                plan.nodes[i].placement = .graphThread
            case .worker:
                plan.nodes[i].placement = costly >= 2 || live ? .worker : .graphThread
            case .realtime where !d.isRealtimeProcessor:
                plan.nodes[i].placement = .audioServer
            case .realtime:
                plan.nodes[i].placement =
                    callbackHost(of: i, in: plan, descriptors).map { .inCallback(of: $0) }
                    ?? .graphThread
            }
        }
    }

    /// The audio server's source a processor can run in the callback of: its only audio input's source, when that
    /// source hosts processors, feeds only this node, and the channel counts in and out are the same.
    private func callbackHost(of i: Int, in plan: GraphPlan, _ descriptors: [NodeDescriptor]) -> String? {
        let inputs = plan.edges.filter { $0.toNode == i && $0.kind == .audio }
        guard inputs.count == 1, let edge = inputs.first, descriptors[edge.fromNode].hostsRealtimeProcessor else {
            return nil
        }
        let consumers = plan.edges.filter { $0.fromNode == edge.fromNode && $0.fromPort == edge.fromPort }
        let node = plan.nodes[i]
        guard consumers.count == 1, node.inputFormats.count == 1, node.outputFormats.count == 1,
            node.inputFormats.values.first?.channelCount == node.outputFormats.values.first?.channelCount
        else { return nil }
        return plan.nodes[edge.fromNode].name
    }
}
