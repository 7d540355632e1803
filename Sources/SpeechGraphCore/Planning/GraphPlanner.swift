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

    /// Values that must differ across the graph's nodes (`ParameterDescriptor.uniqueIn`): the second use of one
    /// is an error at its value, naming the first.
    private func checkUniqueNames(_ nodes: [PlannedNode], _ diagnostics: inout DiagnosticList) {
        var first: [String: (node: String, location: SourceLocation?)] = [:]
        for node in nodes {
            guard let type = registry[node.typeName] else { continue }
            for p in type.descriptor.parameters {
                guard let namespace = p.uniqueIn, let value = node.config.string(p.name) else { continue }
                // Where the value was given: its place, the option that gave it, or neither (the default).
                let (option, at) = node.config.origin(of: p.name)
                let given = option != nil || node.config.locations[p.name] != nil
                let here = at ?? node.location
                if let earlier = first["\(namespace)\n\(value)"] {
                    let place = earlier.location.map { $0.file == here?.file ? " (line \($0.line))" : " (\($0))" }
                    diagnostics.error(
                        (option.map { "\($0): " } ?? "")
                            + "node '\(earlier.node)'\(place ?? "") gives the \(namespace) name '\(value)' too"
                            + (given ? "" : " (the default of '\(p.name)')") + ": give the nodes different '\(p.name)' "
                            + "names", at: option == nil ? here : nil)
                } else {
                    first["\(namespace)\n\(value)"] = (node.name, node.config.locations[p.name] ?? node.location)
                }
            }
        }
    }

    /// A file a node writes must not be one that another path parameter names: a sink would overwrite the
    /// audio file an input reads (while it reads it), or two sinks would write one file over each other.
    /// Standard output (`-`) may be shared.
    private func checkFilesWritten(_ nodes: [PlannedNode], _ diagnostics: inout DiagnosticList) {
        struct Use {
            var node: String
            var parameter: String
            var path: String
            var writes: Bool
            var location: SourceLocation?
        }
        var uses: [Use] = []
        for node in nodes {
            guard let type = registry[node.typeName] else { continue }
            // Defaults are in the config already.
            for p in type.descriptor.parameters where p.kind == .path {
                guard let value = node.config.string(p.name), !value.isEmpty, value != "-" else { continue }
                // A value from --set has no location: the node's declaration stands for it.
                uses.append(
                    Use(
                        node: node.name, parameter: p.name, path: value, writes: p.writes,
                        location: node.config.locations[p.name] ?? node.location))
            }
        }
        let identities = uses.map { Self.fileIdentity($0.path) }
        // The uses of each file, so that a graph of thousands of sinks is checked in linear time.
        var byIdentity: [String: [Int]] = [:]
        for (u, identity) in identities.enumerated() { if let identity { byIdentity[identity, default: []].append(u) } }
        for (w, writer) in uses.enumerated() where writer.writes && identities[w] != nil {
            for o in byIdentity[identities[w]!] ?? [] where o != w {
                let other = uses[o]
                // Two writers: reported once, at the second.
                if other.writes && o > w { continue }
                let place = other.location.map {
                    $0.file == writer.location?.file ? " at line \($0.line)" : " at \($0)"
                }
                let at = " ('\(other.parameter)'\(place ?? ""))"
                let what =
                    other.writes
                    ? "which node '\(other.node)' writes too\(at)"
                    : "which node '\(other.node)' reads\(at): it would be overwritten while it is read"
                diagnostics.error(
                    "node '\(writer.node)' writes '\(writer.path)', \(what)", at: writer.location)
                break
            }
        }
    }

    /// What tells two paths apart: the device and inode of a file or folder that exists; for one that does not
    /// exist yet, the real path (links followed) of the nearest folder above it that exists, and the names below
    /// it (a sink makes the folders it needs). `nil` for a device, pipe or socket, or a standard stream by name
    /// (`/dev/null`, `/dev/stdout`, `/dev/fd/1`: any number of nodes may share one, as `-`).
    private static func fileIdentity(_ path: String) -> String? {
        if path.hasPrefix("/dev/std") || path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/") { return nil }
        var info = stat()
        if stat(path, &info) == 0 {
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR else { return nil }
            return "\(info.st_dev):\(info.st_ino)"
        }
        // The names below the nearest folder that exists, without "." and with ".." taken back where it can be.
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var folder = PathNames.folder(of: absolute)
        var below = [String(absolute.split(separator: "/").last ?? "")]
        while folder != "/" && access(folder, F_OK) != 0 {
            below.insert(String(folder.split(separator: "/").last ?? ""), at: 0)
            folder = PathNames.folder(of: folder)
        }
        guard let real = realpath(folder, nil) else { return nil }
        defer { free(real) }
        var names = String(cString: real).split(separator: "/").map(String.init)
        for name in below where name != "." {
            if name == ".." { _ = names.popLast() } else { names.append(name) }
        }
        return "/" + names.joined(separator: "/")
    }

    /// Works out every node's formats (inserting converters) and checks what the graph names outside itself (the
    /// nodes' resource checks, the files its sinks write). `allResourceProblems`: each node's resource problem is
    /// found, located, and all are thrown together at the end (`SpeechGraphErrors` when there are several: `check
    /// --plan` reports them all); otherwise the first is thrown at once.
    public func negotiate(
        _ validated: GraphPlan, resources: GraphResources? = nil, allResourceProblems: Bool = false
    ) throws -> GraphPlan {
        var plan = validated
        var diagnostics = DiagnosticList()
        var resourceProblems: [SpeechGraphError] = []
        // Nodes whose formats could not be worked out (an input file that is missing), and those downstream.
        var formatless: Set<Int> = []
        var i = 0
        while i < plan.nodes.count {
            let type = registry[plan.nodes[i].typeName]!
            let descriptor = type.descriptor
            var inputs: [String: AudioFormat] = [:]
            var maxIn = 0
            for e in plan.edges where e.toNode == i && e.kind == .audio {
                let from = plan.nodes[e.fromNode]
                let fromPort = registry[from.typeName]!.descriptor.outputs[e.fromPort].name
                guard let format = from.outputFormats[fromPort] else { continue }
                inputs[descriptor.inputs[e.toPort].name] = format
                maxIn = max(maxIn, from.maxOutputFrames)
            }
            var context = PlanContext(config: plan.nodes[i].config, inputFormats: inputs, resources: resources)
            // Converters: does each audio input get what it accepts?
            var inserted = false
            for (p, port) in descriptor.inputs.enumerated() where port.kind == .audio {
                guard let have = inputs[port.name] else { continue }
                var requirement = port.requirement
                do {
                    if let dynamic = try type.inputRequirement?(&context, port.name) { requirement = dynamic }
                } catch let error as SpeechGraphError {
                    let node = plan.nodes[i]
                    throw SpeechGraphError(
                        node.config.about(error.message), parameter: error.parameter, location: node.location)
                }
                let wantRate: Int?
                switch requirement.rate {
                case .any: wantRate = nil
                case .fixed(let r): wantRate = r
                case .parameter(let name): wantRate = plan.nodes[i].config.number(name).map { Int($0.rounded()) }
                }
                if let want = requirement.channelCount, want != have.channelCount {
                    guard want == 1 else {
                        diagnostics.error(
                            "node '\(plan.nodes[i].name)' needs \(want) channels on '\(port.name)' "
                                + "but gets \(have.channelCount); no converter does that",
                            at: plan.nodes[i].location)
                        continue
                    }
                    try insertConverter("downmix", values: [:], before: i, port: p, in: &plan)
                    inserted = true
                    break
                }
                if let want = wantRate, want != have.sampleRate {
                    try insertConverter(
                        "resample", values: ["rate": .number(Double(want))], before: i, port: p, in: &plan)
                    inserted = true
                    break
                }
            }
            if inserted { continue }  // the converter now stands at index i: plan it first

            do {
                plan.nodes[i].inputFormats = inputs
                plan.nodes[i].maxInputFrames = maxIn
                if plan.edges.contains(where: {
                    $0.toNode == i && $0.kind == .audio && formatless.contains($0.fromNode)
                }) {
                    // Its audio's format is not known: only what it names outside the graph is checked.
                    formatless.insert(i)
                } else {
                    do {
                        plan.nodes[i].outputFormats = try outputFormats(type, &context)
                    } catch let error as SpeechGraphError where allResourceProblems {
                        resourceProblems.append(plan.nodes[i].config.located(error))
                        formatless.insert(i)
                    }
                }
                plan.nodes[i].maxOutputFrames = type.maxOutputFrames(plan.nodes[i].config, inputs, maxIn)
                do {
                    try type.resourceCheck?(plan.nodes[i].config)
                    // The files and folders it writes: where they can be written.
                    for p in type.descriptor.parameters where p.kind == .path && p.writes {
                        if let path = plan.nodes[i].config.string(p.name), let problem = OutputPath.problem(path) {
                            throw SpeechGraphError(problem, parameter: p.name)
                        }
                    }
                } catch let error as SpeechGraphError where allResourceProblems {
                    // Nothing after depends on it: the next nodes are checked too.
                    resourceProblems.append(plan.nodes[i].config.located(error))
                } catch let errors as SpeechGraphErrors {
                    // The first alone, otherwise (located below, as a single error is).
                    guard allResourceProblems else { throw errors.errors[0] }
                    resourceProblems += errors.errors.map(plan.nodes[i].config.located)
                }
                for note in context.notes {
                    plan.warnings.append(
                        Diagnostic(.note, at: plan.nodes[i].location, "node '\(plan.nodes[i].name)': \(note)"))
                }
            } catch let error as SpeechGraphError {
                throw plan.nodes[i].config.located(error)
            }
            i += 1
        }
        try diagnostics.throwIfErrors()
        try SpeechGraphErrors(resourceProblems).throwIfAny()
        precondition(formatless.isEmpty, "a node without formats, and no problem found")
        return plan
    }

    /// Each audio output's format, from its rule.
    private func outputFormats(_ type: NodeType, _ context: inout PlanContext) throws -> [String: AudioFormat] {
        var result: [String: AudioFormat] = [:]
        var computed: [String: AudioFormat]?
        let config = context.config
        for port in type.descriptor.outputs where port.kind == .audio {
            switch port.format {
            case .input(let name, let rate, let channels)?:
                guard let input = context.inputFormats[name] else { continue }  // unconnected: no audio flows
                let hz: Int
                switch rate {
                case .any: hz = input.sampleRate
                case .fixed(let r): hz = r
                case .parameter(let p): hz = Int(config.number(of: p).rounded())
                }
                result[port.name] = AudioFormat(sampleRate: hz, channelCount: channels ?? input.channelCount)
            case .parameters(let rate, let channels)?:
                result[port.name] = AudioFormat(
                    sampleRate: Int(config.number(of: rate).rounded()),
                    channelCount: config.integer(of: channels))
            case .computed?:
                if computed == nil { computed = try type.formats?(&context) ?? [:] }
                guard let format = computed?[port.name] else {
                    throw SpeechGraphError(
                        "node type '\(type.descriptor.typeName)' computed no format for its output "
                            + "'\(port.name)'")
                }
                result[port.name] = format
            case nil:
                // Reported by validate() as a contract error; a plan never gets here with one.
                throw SpeechGraphError(
                    "node type '\(type.descriptor.typeName)' states no format for its output '\(port.name)'")
            }
        }
        return result
    }

    /// Puts a converter on the audio edge into (node, port); the converter takes the node's place in the order.
    private func insertConverter(
        _ typeName: String, values: [String: ParameterValue], before node: Int, port: Int,
        in plan: inout GraphPlan
    ) throws {
        guard let type = registry[typeName] else {
            throw SpeechGraphError("the graph needs a '\(typeName)' converter, but no such node type is registered")
        }
        guard
            let edgeIndex = plan.edges.firstIndex(where: { $0.toNode == node && $0.toPort == port && $0.kind == .audio }
            )
        else { return }
        let edge = plan.edges[edgeIndex]
        var config = NodeConfig(name: "", typeName: typeName)
        for p in type.descriptor.parameters { if let d = p.defaultValue { config.values[p.name] = d } }
        for (k, v) in values { config.values[k] = v }
        let target = plan.nodes[node]
        let targetPort = registry[target.typeName]!.descriptor.inputs[port].name
        var name = "\(target.name).\(targetPort)~\(typeName)"
        while plan.index(of: name) != nil { name += "'" }
        config.name = name
        config.location = edge.location
        let converter = PlannedNode(
            name: name, typeName: typeName, config: config, isInserted: true, location: edge.location)
        // Shift every index at or after `node` by one, put the converter at `node`.
        plan.nodes.insert(converter, at: node)
        plan.edges = plan.edges.map { e in
            var e = e
            if e.fromNode >= node { e.fromNode += 1 }
            if e.toNode >= node { e.toNode += 1 }
            return e
        }
        plan.edges[edgeIndex].toNode = node
        plan.edges[edgeIndex].toPort = 0
        plan.edges.append(
            PlannedEdge(
                fromNode: node, fromPort: 0, toNode: node + 1, toPort: port, kind: .audio,
                location: edge.location))
    }

    // MARK: Parameters

    private func checkParameters(
        _ decl: NodeDeclaration, _ descriptor: NodeDescriptor, _ overrides: [Override],
        _ diagnostics: inout DiagnosticList
    ) -> NodeConfig {
        var config = NodeConfig(name: decl.name.value, typeName: descriptor.typeName, location: decl.location)
        config.isImplicit = decl.isImplicit
        var seen: [String: SourceLocation] = [:]
        let names = descriptor.parameters.map(\.name)
        var failed: Set<String> = []
        func apply(
            _ name: String, _ value: ValueLiteral, at location: SourceLocation?, nameAt: SourceLocation?,
            from origin: String?, itemLocations: [SourceLocation] = []
        ) {
            guard let p = descriptor.parameter(name) else {
                let prefix = origin.map { "\($0): " } ?? ""
                let suggestion = didYouMean(name, names)
                let known =
                    names.isEmpty
                    ? " (it takes no parameters)"
                    : suggestion.isEmpty
                        ? " ('speechgraph nodes \(descriptor.typeName)' lists its parameters)" : suggestion
                diagnostics.error(
                    "\(prefix)unknown parameter '\(name)' for node type '\(descriptor.typeName)'\(known)", at: nameAt)
                // The parameter it was probably meant to be ('pth' for 'path') is not also said to be missing.
                if let meant = closestMatch(to: name, in: names) { failed.insert(meant) }
                return
            }
            var value = value
            // On the command line a bare word is as good as a quoted string: shells eat the quotes.
            if origin != nil, case .word(let w) = value, p.kind == .path || p.kind == .string { value = .string(w) }
            switch p.check(value) {
            case .success(let v):
                config.values[name] = v
                // A value from --set has no place in the file (nor keeps the one it replaced).
                config.locations[name] = location
                config.itemLocations[name] = itemLocations.isEmpty ? nil : itemLocations
                config.origins[name] = origin
            case .failure(let error):
                failed.insert(name)
                diagnostics.error((origin.map { "\($0): " } ?? "") + error.message, at: location)
            }
        }
        for p in descriptor.parameters { if let d = p.defaultValue { config.values[p.name] = d } }
        for assignment in decl.parameters {
            if let first = seen[assignment.name.value] {
                diagnostics.error(
                    "parameter '\(assignment.name.value)' is set twice (first at line \(first.line))",
                    at: assignment.name.location)
                continue
            }
            seen[assignment.name.value] = assignment.name.location
            apply(
                assignment.name.value, assignment.value.value, at: assignment.value.location,
                nameAt: assignment.name.location, from: assignment.origin, itemLocations: assignment.itemLocations)
        }
        for o in overrides {
            failed.remove(o.parameter)
            apply(o.parameter, o.value, at: nil, nameAt: nil, from: o.label)
            seen[o.parameter] = decl.location
        }
        for p in descriptor.parameters where p.isRequired && config.values[p.name] == nil && !failed.contains(p.name) {
            diagnostics.error(
                "node '\(decl.name.value)' (\(descriptor.typeName)) needs parameter '\(p.name)': \(p.doc)",
                at: decl.location)
        }
        return config
    }

    // MARK: Edges

    private func resolve(
        _ endpoint: Endpoint, _ index: [String: Int], _ spec: GraphSpec,
        _ diagnostics: inout DiagnosticList
    ) -> Int? {
        if let i = index[endpoint.node.value] { return i }
        // A node that was declared but failed to resolve already has its own error.
        if spec.nodes.contains(where: { $0.name.value == endpoint.node.value }) { return nil }
        diagnostics.error(
            "unknown node '\(endpoint.node.value)'" + didYouMean(endpoint.node.value, spec.nodes.map(\.name.value))
                + " (declare it with 'node \(endpoint.node.value) = TYPE { }')", at: endpoint.node.location)
        return nil
    }

    /// The port pair an edge connects. With no port named on either side: the first audio output and the
    /// first audio input when both nodes have audio ports, else the first event output and the first
    /// event input that accepts some of its kinds (`vad -> asr` carries the gated audio only; the speech
    /// events need `vad.events -> asr.control`).
    private func choosePorts(
        _ edge: EdgeDeclaration, _ from: NodeDescriptor, _ to: NodeDescriptor,
        _ diagnostics: inout DiagnosticList
    ) -> (Int, Int)? {
        let fromName = edge.from.node.value
        let toName = edge.to.node.value
        func port(
            _ ref: Located<String>, of ports: [PortDescriptor], node: String, type: NodeDescriptor,
            direction: PortDirection
        ) -> Int? {
            if let i = ports.firstIndex(where: { $0.name == ref.value }) { return i }
            let other = direction == .output ? type.inputs : type.outputs
            if other.contains(where: { $0.name == ref.value }) {
                diagnostics.error(
                    "'\(node).\(ref.value)' is an \(direction == .output ? "input" : "output"), "
                        + "it cannot be the \(direction == .output ? "source" : "target") of an edge", at: ref.location)
                return nil
            }
            let list = ports.map(\.name)
            diagnostics.error(
                "node '\(node)' (\(type.typeName)) has no \(direction.rawValue) port '\(ref.value)'"
                    + didYouMean(ref.value, list)
                    + (list.isEmpty
                        ? "; it has no \(direction.rawValue)s"
                        : "; its \(direction.rawValue)s: \(list.joined(separator: ", "))"),
                at: ref.location)
            return nil
        }
        guard !from.outputs.isEmpty else {
            diagnostics.error(
                "node '\(fromName)' (\(from.typeName)) has no outputs; it cannot start an edge",
                at: edge.from.node.location)
            return nil
        }
        guard !to.inputs.isEmpty else {
            diagnostics.error(
                "node '\(toName)' (\(to.typeName)) has no inputs; it cannot end an edge", at: edge.to.node.location)
            return nil
        }
        var fromPort: Int?
        var toPort: Int?
        if let ref = edge.from.port {
            guard let p = port(ref, of: from.outputs, node: fromName, type: from, direction: .output) else {
                return nil
            }
            fromPort = p
        }
        if let ref = edge.to.port {
            guard let p = port(ref, of: to.inputs, node: toName, type: to, direction: .input) else { return nil }
            toPort = p
        }
        // Unnamed ports: one pair. Audio when both sides have audio; else the first event output and the
        // first event input that takes some of its kinds. Nothing is wired that the edge does not name or
        // that cannot carry anything.
        switch (fromPort, toPort) {
        case (nil, nil):
            if let f = from.outputs.firstIndex(where: { $0.kind == .audio }),
                let t = to.inputs.firstIndex(where: { $0.kind == .audio })
            {
                return (f, t)
            }
            for (f, o) in from.outputs.enumerated() where o.kind == .events {
                if let t = to.inputs.firstIndex(where: { $0.kind == .events && Self.canCarry(o, to: $0) }) {
                    return (f, t)
                }
            }
            // Nothing fits: the first ports of a kind both sides have (or simply the first ones) show why.
            if let f = from.outputs.firstIndex(where: { o in to.inputs.contains { $0.kind == o.kind } }) {
                fromPort = f
                toPort = to.inputs.firstIndex { $0.kind == from.outputs[f].kind }
            }
        case (let f?, nil):
            toPort =
                to.inputs.firstIndex { $0.kind == from.outputs[f].kind && Self.canCarry(from.outputs[f], to: $0) }
                ?? to.inputs.firstIndex { $0.kind == from.outputs[f].kind }
        case (nil, let t?):
            fromPort =
                from.outputs.firstIndex { $0.kind == to.inputs[t].kind && Self.canCarry($0, to: to.inputs[t]) }
                ?? from.outputs.firstIndex { $0.kind == to.inputs[t].kind }
        default: break
        }
        guard let f = fromPort ?? from.outputs.indices.first, let t = toPort ?? to.inputs.indices.first else {
            return nil
        }
        let fk = from.outputs[f].kind
        let tk = to.inputs[t].kind
        if fk != tk || (fk == .audio && (fromPort == nil || toPort == nil)) {
            diagnostics.error(
                "port '\(fromName).\(from.outputs[f].name)' (\(fk.rawValue)) cannot connect to "
                    + "'\(toName).\(to.inputs[t].name)' (\(tk.rawValue))", at: edge.location)
            return nil
        }
        if fk == .events, !Self.canCarry(from.outputs[f], to: to.inputs[t]) {
            diagnostics.error(
                "'\(fromName).\(from.outputs[f].name)' emits \(from.outputs[f].eventKinds.description), but "
                    + "'\(toName).\(to.inputs[t].name)' accepts \(to.inputs[t].eventKinds.description): "
                    + "none of its events could pass", at: edge.location)
            return nil
        }
        return (f, t)
    }

    /// An event output can feed an event input when the input accepts at least one kind the output emits.
    static func canCarry(_ output: PortDescriptor, to input: PortDescriptor) -> Bool {
        guard let common = output.eventKinds.common(with: input.eventKinds) else { return true }
        return !common.isEmpty
    }

    // MARK: Order

    /// Kahn's algorithm, stable (declaration order among equals); on a cycle, one cycle's nodes in order.
    func topologicalOrder(count: Int, edges: [PlannedEdge]) -> Result<[Int], CycleError> {
        var indegree = [Int](repeating: 0, count: count)
        var next = [[Int]](repeating: [], count: count)
        for e in edges where !next[e.fromNode].contains(e.toNode) {
            next[e.fromNode].append(e.toNode)
            indegree[e.toNode] += 1
        }
        var ready = (0..<count).filter { indegree[$0] == 0 }
        var order: [Int] = []
        while !ready.isEmpty {
            let n = ready.removeFirst()
            order.append(n)
            for m in next[n] {
                indegree[m] -= 1
                if indegree[m] == 0 {
                    ready.append(m)
                    ready.sort()
                }
            }
        }
        if order.count == count { return .success(order) }
        // Every node left over has a left-over predecessor (that is why it was never ready): walking
        // backwards through them must repeat a node, and the repeat closes a cycle.
        var previous = [[Int]](repeating: [], count: count)
        for e in edges { previous[e.toNode].append(e.fromNode) }
        var path: [Int] = []
        var node = (0..<count).first { indegree[$0] > 0 }!
        while !path.contains(node) {
            path.append(node)
            node = previous[node].first { indegree[$0] > 0 }!
        }
        // Forward order, starting from the node declared first.
        let cycle = Array(path[path.firstIndex(of: node)!...].reversed())
        let first = cycle.firstIndex(of: cycle.min()!)!
        return .failure(CycleError(nodes: Array(cycle[first...] + cycle[..<first])))
    }

    struct CycleError: Error { var nodes: [Int] }
}
