import Foundation

/// Format negotiation: each output's format from its rule, converters where connected formats differ.
extension GraphPlanner {
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
            // The resources it shares with the others, made now for the graph about to run (its JACK client: asked
            // for its rate below).
            if let resources {
                do { try resources.prepare(descriptor.requires) } catch let error as SpeechGraphError {
                    throw SpeechGraphError(
                        plan.nodes[i].config.about(error.message), location: plan.nodes[i].location)
                }
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
        place(&plan)
        return plan
    }

    /// Each audio output's format, from its rule.
    func outputFormats(_ type: NodeType, _ context: inout PlanContext) throws -> [String: AudioFormat] {
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
    func insertConverter(
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
}
