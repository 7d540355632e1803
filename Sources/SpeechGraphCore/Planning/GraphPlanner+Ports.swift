import Foundation

/// A node's parameters checked against its descriptor, and the ports an edge written in the file connects.
extension GraphPlanner {
    // MARK: Parameters

    func checkParameters(
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

    func resolve(
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
    func choosePorts(
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
}
