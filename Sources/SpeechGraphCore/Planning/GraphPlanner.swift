import Foundation

/// Turns a parsed graph into a plan: resolves node types and parameters, checks every connection,
/// finds cycles and unconnected inputs, then fixes formats and inserts converters.
public struct GraphPlanner {
    public var registry: NodeRegistry

    public init(registry: NodeRegistry) { self.registry = registry }

    /// `node.param=value` overrides from the command line (`--set`), applied over the file's values.
    public struct Override: Sendable {
        public var node: String
        public var parameter: String
        public var value: ValueLiteral
        /// How messages name the override: as the user typed it (`--set threshold` for `speechgraph vad`, whose
        /// overrides are all the vad node's); `--set node.parameter` when nil.
        public var origin: String?
        public init(node: String, parameter: String, value: ValueLiteral, origin: String? = nil) {
            self.node = node
            self.parameter = parameter
            self.value = value
            self.origin = origin
        }

        var label: String { origin ?? "--set \(node).\(parameter)" }

        /// Parses `node.param=value`; the value is read as it would be in a graph file.
        public static func parse(_ text: String) -> Override? {
            guard let eq = text.firstIndex(of: "=") else { return nil }
            let key = text[..<eq]
            let value = String(text[text.index(after: eq)...])
            guard let dot = key.firstIndex(of: "."), dot != key.startIndex, key.index(after: dot) != key.endIndex else {
                return nil
            }
            return Override(
                node: String(key[..<dot]), parameter: String(key[key.index(after: dot)...]),
                value: GraphParser.literal(fromText: value))
        }
    }

    /// Checks the graph without touching any file or device: types, parameters, ports, cycles.
    /// Throws a `GraphError` with every error found.
    public func validate(_ spec: GraphSpec, overrides: [Override] = []) throws -> GraphPlan {
        var diagnostics = DiagnosticList()
        var nodes: [PlannedNode] = []
        // Nodes with an error of their own: their values are not compared with other nodes' (a value that failed
        // its check leaves the default in its place).
        var withErrors: Set<String> = []
        var nodeIndex: [String: Int] = [:]
        let knownKinds = registry.eventKinds

        // Nodes, types and parameters.
        for decl in spec.nodes {
            if let first = nodeIndex[decl.name.value] {
                diagnostics.error("duplicate node name '\(decl.name.value)'", at: decl.name.location)
                diagnostics.append(
                    Diagnostic(.note, at: nodes[first].location, "'\(decl.name.value)' was first declared here"))
                continue
            }
            guard let type = registry[decl.type.value] else {
                let suggestion = didYouMean(decl.type.value, registry.types.keys)
                diagnostics.error(
                    "unknown node type '\(decl.type.value)'" + suggestion
                        + (suggestion.isEmpty
                            ? " (see 'speechgraph nodes'; a plugin's types are there once its folder is given with "
                                + "--plugin-path or SPEECHGRAPH_PLUGIN_PATH)"
                            : " (see 'speechgraph nodes')"),
                    at: decl.type.location)
                continue
            }
            for problem in type.contractProblems(knownKinds: knownKinds) {
                diagnostics.error(
                    "node type '\(decl.type.value)' breaks the node contract: \(problem)", at: decl.type.location)
            }
            let errorsBefore = diagnostics.errorCount
            let config = checkParameters(
                decl, type.descriptor, overrides.filter { $0.node == decl.name.value }, &diagnostics)
            // The values together, once each is right on its own.
            if diagnostics.errorCount == errorsBefore, let validate = type.validate {
                do { try validate(config) } catch let error as SpeechGraphError {
                    // As a parameter's own error: at its value, or naming the option that gave it.
                    let (option, at) = config.origin(of: error.parameter, item: error.item)
                    diagnostics.error((option.map { "\($0): " } ?? "") + error.message, at: at)
                } catch let errors as SpeechGraphErrors {
                    for error in errors.errors {
                        let (option, at) = config.origin(of: error.parameter, item: error.item)
                        diagnostics.error((option.map { "\($0): " } ?? "") + error.message, at: at)
                    }
                } catch {
                    diagnostics.error("node '\(decl.name.value)': \(error)", at: decl.location)
                }
            }
            if diagnostics.errorCount == errorsBefore {
                for advice in type.advise?(config) ?? [] {
                    let (option, at) = config.origin(of: advice.parameter)
                    diagnostics.append(Diagnostic(.warning, at: at, (option.map { "\($0): " } ?? "") + advice.message))
                }
            }
            if diagnostics.errorCount != errorsBefore { withErrors.insert(decl.name.value) }
            nodeIndex[decl.name.value] = nodes.count
            nodes.append(
                PlannedNode(
                    name: decl.name.value, typeName: decl.type.value, config: config, isInserted: false,
                    location: decl.location))
        }
        for o in overrides where !spec.nodes.contains(where: { $0.name.value == o.node }) {
            diagnostics.error(
                "\(o.label): no node named '\(o.node)'"
                    + didYouMean(o.node, spec.nodes.map(\.name.value)), at: nil)
        }

        // Edges, and what they connect (looked up by hashing: a chain of thousands of nodes is checked in linear
        // time).
        var edges: [PlannedEdge] = []
        struct Port: Hashable {
            var node: Int
            var port: Int
        }
        var pairs = Set<[Int]>()
        var usedOutputs = Set<Port>()
        var firstEdgeInto: [Port: Int] = [:]
        // The nodes of edges that have an error of their own (a port that does not exist): the inputs those
        // edges were meant for are not reported unconnected as well.
        var inBrokenEdges: Set<String> = []
        for decl in spec.edges {
            guard let from = resolve(decl.from, nodeIndex, spec, &diagnostics),
                let to = resolve(decl.to, nodeIndex, spec, &diagnostics)
            else {
                inBrokenEdges.formUnion([decl.from.node.value, decl.to.node.value])
                continue
            }
            let fromType = registry[nodes[from].typeName]!.descriptor
            let toType = registry[nodes[to].typeName]!.descriptor
            guard let (fromPort, toPort) = choosePorts(decl, fromType, toType, &diagnostics) else {
                inBrokenEdges.formUnion([decl.from.node.value, decl.to.node.value])
                continue
            }
            let kind = fromType.outputs[fromPort].kind
            if pairs.contains([from, fromPort, to, toPort]) {
                diagnostics.error("'\(decl.from) -> \(decl.to)' is connected twice", at: decl.location)
                continue
            }
            if kind == .audio, let other = firstEdgeInto[Port(node: to, port: toPort)].map({ edges[$0] }) {
                diagnostics.error(
                    "audio input '\(nodes[to].name).\(toType.inputs[toPort].name)' already has a connection "
                        + "(from '\(nodes[other.fromNode].name)'); an audio input takes one", at: decl.location)
                continue
            }
            pairs.insert([from, fromPort, to, toPort])
            usedOutputs.insert(Port(node: from, port: fromPort))
            if firstEdgeInto[Port(node: to, port: toPort)] == nil {
                firstEdgeInto[Port(node: to, port: toPort)] = edges.count
            }
            edges.append(
                PlannedEdge(
                    fromNode: from, fromPort: fromPort, toNode: to, toPort: toPort, kind: kind,
                    location: decl.location))
        }

        // An edge without port names connects one pair of ports. When it joins two nodes whose event ports
        // could be joined too, and neither is connected anywhere, say how (`vad -> asr` carries the audio
        // only; `vad.events -> asr.control` carries the speech events).
        for decl in spec.edges where decl.from.port == nil && decl.to.port == nil {
            guard let from = nodeIndex[decl.from.node.value], let to = nodeIndex[decl.to.node.value] else { continue }
            let fromType = registry[nodes[from].typeName]!.descriptor
            let toType = registry[nodes[to].typeName]!.descriptor
            for (f, o) in fromType.outputs.enumerated() where o.kind == .events {
                guard !usedOutputs.contains(Port(node: from, port: f)) else { continue }
                for (t, i) in toType.inputs.enumerated() where i.kind == .events && Self.canCarry(o, to: i) {
                    guard firstEdgeInto[Port(node: to, port: t)] == nil else { continue }
                    diagnostics.append(
                        Diagnostic(
                            .warning, at: decl.location,
                            "'\(decl.from.node.value).\(o.name)' is not connected: an edge without port names "
                                + "connects one pair of ports; write '\(decl.from.node.value).\(o.name) -> "
                                + "\(decl.to.node.value).\(i.name)' to carry its events (\(o.eventKinds.description))"))
                    break
                }
            }
        }

        // Unconnected required inputs, unconnected nodes, sources. A node whose type is unknown already has
        // its error; the inputs it would have fed, and the missing source it may be, follow from that one.
        let unresolved = Set(spec.nodes.map(\.name.value)).subtracting(nodeIndex.keys)
        let touchesUnresolved = Set(
            spec.edges.flatMap { e -> [String] in
                unresolved.contains(e.from.node.value) || unresolved.contains(e.to.node.value)
                    ? [e.from.node.value, e.to.node.value] : []
            })
        // A node an edge meant under a misspelt name ('asrr' for 'asr') is not connected because of that one error.
        let declared = spec.nodes.map(\.name.value)
        let declaredSet = Set(declared)
        let misspelt = Set(
            spec.edges.flatMap { [$0.from.node.value, $0.to.node.value] }.filter { !declaredSet.contains($0) }
                .compactMap { closestMatch(to: $0, in: declared) })
        // What is connected, looked up once (a graph of thousands of nodes is checked in linear time).
        let connectedInputs = Set(edges.map { [$0.toNode, $0.toPort] })
        let written = Set(spec.edges.flatMap { [$0.from.node.value, $0.to.node.value] })
        for (i, node) in nodes.enumerated()
        where !touchesUnresolved.contains(node.name) && !inBrokenEdges.contains(node.name)
            && !misspelt.contains(node.name)
        {
            let descriptor = registry[node.typeName]!.descriptor
            for (p, port) in descriptor.inputs.enumerated() where port.isRequired {
                if !connectedInputs.contains([i, p]) {
                    diagnostics.error(
                        "input '\(port.name)' (\(port.kind.rawValue)) of node '\(node.name)' is not connected",
                        at: node.location)
                }
            }
            if !written.contains(node.name), !descriptor.inputs.contains(where: \.isRequired) {
                diagnostics.append(
                    Diagnostic(.warning, at: node.location, "node '\(node.name)' is not connected to anything"))
            }
        }
        if !nodes.isEmpty, unresolved.isEmpty,
            !nodes.contains(where: { n in registry[n.typeName]!.descriptor.inputs.isEmpty })
        {
            diagnostics.error(
                "the graph has no input node (such as file.input)",
                at: SourceLocation(file: spec.file, line: 1, column: 1))
        }
        if spec.nodes.isEmpty {
            diagnostics.error("the graph declares no nodes", at: SourceLocation(file: spec.file, line: 1, column: 1))
        }

        checkFilesWritten(nodes, &diagnostics)
        checkUniqueNames(nodes.filter { !withErrors.contains($0.name) }, &diagnostics)

        // Cycles; on success, topological order.
        var order: [Int] = []
        if !diagnostics.hasErrors {
            switch topologicalOrder(count: nodes.count, edges: edges) {
            case .success(let o): order = o
            case .failure(let error):
                let cycle = error.nodes
                let names = cycle.map { nodes[$0].name } + [nodes[cycle[0]].name]
                let at = edges.first { $0.fromNode == cycle[cycle.count - 1] && $0.toNode == cycle[0] }?.location
                diagnostics.error(
                    "cycle in the graph: \(names.joined(separator: " -> ")) (audio and events must flow one way)",
                    at: at)
            }
        }
        try diagnostics.throwIfErrors()

        // Renumber nodes in topological order so the runner can walk them front to back.
        var newIndex = [Int](repeating: 0, count: nodes.count)
        for (new, old) in order.enumerated() { newIndex[old] = new }
        let ordered = order.map { nodes[$0] }
        let renumbered = edges.map {
            PlannedEdge(
                fromNode: newIndex[$0.fromNode], fromPort: $0.fromPort, toNode: newIndex[$0.toNode], toPort: $0.toPort,
                kind: $0.kind, location: $0.location)
        }
        let warnings = diagnostics.sorted.filter { $0.severity != .error }
        return GraphPlan(file: spec.file, nodes: ordered, edges: renumbered, warnings: warnings)
    }

    /// Validates, then fixes every audio format: applies each output's format rule (a `computed` one asks
    /// the node type: an input file's header is read here) and inserts `downmix` and `resample` where a
    /// connection's formats differ. `resources`: the resources of the graph about to run, when planning
    /// for a run (a JACK graph's client is opened then, once, as the graph's own session, and tells the
    /// server's rate); `nil` when only checking: then nothing is opened and a device's rate is assumed
    /// (the plan's notes say so).
    public func plan(_ spec: GraphSpec, overrides: [Override] = [], resources: GraphResources? = nil) throws
        -> GraphPlan
    {
        try negotiate(validate(spec, overrides: overrides), resources: resources)
    }
}
