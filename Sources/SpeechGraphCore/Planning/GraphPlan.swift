/// A node of a planned graph: its type, checked configuration and fixed formats.
public struct PlannedNode: Sendable {
    public var name: String
    public var typeName: String
    public var config: NodeConfig
    public var inputFormats: [String: AudioFormat] = [:]
    public var outputFormats: [String: AudioFormat] = [:]
    /// The largest block its audio inputs deliver at once.
    public var maxInputFrames: Int = 0
    /// The largest block it emits at once.
    public var maxOutputFrames: Int = 0
    /// Put in by the planner (a converter), not written in the graph file.
    public var isInserted: Bool
    public var location: SourceLocation?
    /// Where it runs: set by the placement pass (`GraphPlanner.place`), after format negotiation.
    public var placement: NodePlacement = .graphThread
}

/// A connection between an output port and an input port, by node and port index.
public struct PlannedEdge: Sendable, Hashable {
    public var fromNode: Int
    public var fromPort: Int
    public var toNode: Int
    public var toPort: Int
    public var kind: PortKind
    public var location: SourceLocation?
}

/// A validated graph. After `GraphPlanner.plan`, nodes are in topological order, every audio format is fixed,
/// and converters stand wherever two connected ports differ.
public struct GraphPlan: Sendable {
    public var file: String
    public var nodes: [PlannedNode]
    public var edges: [PlannedEdge]
    /// Warnings found while planning (an unconnected node, say). Errors are thrown instead.
    public var warnings: [Diagnostic]

    public func index(of name: String) -> Int? { nodes.firstIndex { $0.name == name } }

    /// Upstream node indices of each node, without duplicates.
    public var upstream: [[Int]] {
        var result = [[Int]](repeating: [], count: nodes.count)
        for e in edges where !result[e.toNode].contains(e.fromNode) { result[e.toNode].append(e.fromNode) }
        return result
    }
}

extension GraphPlan {
    /// What `speechgraph check --plan` prints: nodes in the order they run, with their formats, then every
    /// connection with the format that flows on it.
    public func render(registry: NodeRegistry) -> String {
        var lines: [String] = ["plan for \(file):", "", "nodes (in processing order):"]
        let nameWidth = nodes.map(\.name.count).max() ?? 4
        let typeWidth = nodes.map(\.typeName.count).max() ?? 4
        for node in nodes {
            var line =
                "  " + node.name.padding(toLength: nameWidth, withPad: " ", startingAt: 0) + "  "
                + node.typeName.padding(toLength: typeWidth, withPad: " ", startingAt: 0)
            if node.isInserted { line += "  (inserted)" }
            let descriptor = registry[node.typeName]?.descriptor
            let settings = (descriptor?.parameters ?? []).compactMap { p -> String? in
                guard let v = node.config.values[p.name] else { return nil }
                if case .number(let n) = v, let unit = p.displayUnit {
                    return "\(p.name): \(formatQuantity(n, in: unit))"
                }
                if case .string(let s) = v, p.kind == .string || p.kind == .path {
                    return "\(p.name): \(graphQuoted(s))"
                }
                return "\(p.name): \(v)"
            }
            if !settings.isEmpty { line += "  { " + settings.joined(separator: ", ") + " }" }
            lines.append(line)
            lines.append("      runs on: \(node.placement)")
            for (port, format) in node.outputFormats.sorted(by: { $0.key < $1.key }) {
                lines.append("      \(port): \(format), blocks of at most \(node.maxOutputFrames) frames")
            }
        }
        lines.append("")
        lines.append("connections:")
        for e in edges.sorted(by: { ($0.fromNode, $0.fromPort, $0.toNode) < ($1.fromNode, $1.fromPort, $1.toNode) }) {
            let from = nodes[e.fromNode]
            let to = nodes[e.toNode]
            let fromPort = registry[from.typeName]?.descriptor.outputs[e.fromPort].name ?? "\(e.fromPort)"
            let toPort = registry[to.typeName]?.descriptor.inputs[e.toPort].name ?? "\(e.toPort)"
            var line = "  \(from.name).\(fromPort) -> \(to.name).\(toPort)"
            if e.kind == .audio, let f = from.outputFormats[fromPort] {
                line += "  (\(f))"
            } else {
                line += "  (events)"
            }
            lines.append(line)
        }
        lines.append("")
        // The places, as the placement pass decided them (GraphPlanner.place).
        func named(_ keep: (NodePlacement) -> Bool) -> [String] { nodes.filter { keep($0.placement) }.map(\.name) }
        let ports = named { $0 == .audioServer }
        let workers = named { $0 == .worker }
        let hosted = nodes.compactMap { n -> String? in
            if case .inCallback(let host) = n.placement { return "\(n.name) (in \(host)'s)" }
            return nil
        }
        var threads = "threads: one graph thread runs the nodes above in order"
        if workers.count == 1 { threads += "; \(workers[0]) on a worker thread" }
        if workers.count > 1 { threads += "; \(workers.joined(separator: ", ")) each on a worker thread" }
        threads +=
            ports.isEmpty
            ? "; no real-time rings (no JACK node)."
            : "; the audio server's real-time thread feeds \(ports.joined(separator: ", ")) "
                + "through one SPSC ring per port"
                + (hosted.isEmpty ? "." : ", and runs \(hosted.joined(separator: ", ")) in its process callback.")
        lines.append(threads)
        return lines.joined(separator: "\n") + "\n"
    }
}
