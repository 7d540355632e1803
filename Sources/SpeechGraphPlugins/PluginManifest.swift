import SpeechGraphCore

/// What a plugin file offers, read from its descriptors in a child process and cached: enough to list,
/// check and plan its node types without loading it (as LV2's metadata), in the same contract as built-in
/// node types.
public struct PluginManifest: Codable, Sendable, Equatable {
    /// The file, as found on the search path.
    public var path: String
    /// The plugin ABI it was built against, "major.minor".
    public var abi: String
    public var name: String
    public var version: String
    public var description: String
    public var url: String?
    public var nodes: [NodeManifest]
}

public struct NodeManifest: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case audio, event }

    public var typeName: String
    public var summary: String
    public var doc: String
    public var kind: Kind
    public var category: String
    /// An audio node that keeps the real-time rules (SG_NODE_REALTIME_SAFE).
    public var realtimeSafe: Bool
    public var ports: [PortManifest]
    public var parameters: [ParameterManifest]
    public var eventKinds: [EventKindManifest]

    /// Why the host refuses a node's `emit` of `kind` on event output `port` (an index among its outputs), or
    /// nil: a port it does not have, a kind the port does not declare. An audio node has no event output.
    /// The graph's host (PluginEventNode) and `plugin check` apply this one rule.
    func emitRefusal(port: Int, kind: String?) -> String? {
        guard let k = kind else { return "it emitted an event with no kind on port \(port)" }
        let outputs = self.kind == .audio ? [] : ports.filter { !$0.isInput }
        guard outputs.indices.contains(port) else {
            return "it emitted '\(k)' on port \(port), but has \(outputs.count) event output"
                + (outputs.count == 1 ? "" : "s")
        }
        if let kinds = outputs[port].eventKinds, !kinds.contains(k) {
            return "it emitted '\(k)' on '\(outputs[port].name)', which declares only \(kinds.joined(separator: ", "))"
        }
        return nil
    }
}

public struct PortManifest: Codable, Sendable, Equatable {
    public var name: String
    public var isInput: Bool
    public var isAudio: Bool
    /// Audio inputs: the rate and channel count it takes (0: any). Audio outputs: `channels` replaces the
    /// channel count of input `formatOf` when non-zero.
    public var rate: Int
    public var channels: Int
    public var formatOf: String?
    /// Event ports: the kinds; `nil`: any kind.
    public var eventKinds: [String]?
    public var required: Bool
    public var doc: String
}

public struct ParameterManifest: Codable, Sendable, Equatable {
    public enum Kind: String, Codable, Sendable { case number, integer, boolean, string, choice, quantity }
    public var name: String
    public var kind: Kind
    /// Quantities: the unit defaults and ranges are given in ("ms", "dB", ...).
    public var unit: String?
    public var numberDefault: Double?
    public var stringDefault: String?
    public var min: Double?
    public var max: Double?
    public var choices: [String]?
    public var required: Bool
    public var doc: String
}

public struct EventKindManifest: Codable, Sendable, Equatable {
    public var name: String
    public var doc: String
}

extension NodeManifest {
    /// The node type's descriptor, as `speechgraph nodes` and the planner see it.
    public func descriptor(origin: String) -> NodeDescriptor {
        let ports = ports.map { p -> PortDescriptor in
            let kinds: EventKinds = p.eventKinds.map { .only($0.map { EventKind(rawValue: $0) }) } ?? .any
            switch (p.isInput, p.isAudio) {
            case (true, true):
                let requirement = AudioRequirement(
                    rate: p.rate > 0 ? .fixed(p.rate) : .any, channelCount: p.channels > 0 ? p.channels : nil)
                return .audioInput(p.name, requirement, required: p.required, doc: p.doc)
            case (false, true):
                return .audioOutput(
                    p.name, format: .input(p.formatOf ?? "in", channels: p.channels > 0 ? p.channels : nil),
                    doc: p.doc)
            case (true, false): return .eventInput(p.name, accepts: kinds, required: p.required, doc: p.doc)
            case (false, false): return .eventOutput(p.name, emits: kinds, doc: p.doc)
            }
        }
        return NodeDescriptor(
            typeName: typeName, summary: summary, doc: doc,
            category: NodeDescriptor.Category(rawValue: category) ?? .analysis, ports: ports,
            parameters: parameters.map(\.descriptor), threading: realtimeSafe ? .realtime : .any,
            eventKinds: eventKinds.map { EventKindDescriptor(EventKind($0.name), doc: $0.doc) }, origin: origin)
    }
}

extension ParameterManifest {
    var descriptor: ParameterDescriptor {
        switch kind {
        case .quantity:
            let unit = unit.flatMap(QuantityUnit.parse) ?? .seconds
            var d = ParameterDescriptor.quantity(
                name, default: required ? nil : numberDefault, unit, range: (min ?? 0)...(max ?? 0), doc: doc)
            d.isRequired = required
            return d
        case .number:
            return ParameterDescriptor(
                name, kind: .number, default: required ? nil : numberDefault.map { .number($0) },
                range: (min ?? 0)...(max ?? 0), required: required, doc: doc)
        case .integer:
            return ParameterDescriptor(
                name, kind: .integer, default: required ? nil : numberDefault.map { .integer(Int($0)) },
                range: (min ?? 0)...(max ?? 0), required: required, doc: doc)
        case .boolean:
            return ParameterDescriptor(
                name, kind: .boolean, default: .boolean((numberDefault ?? 0) != 0), required: false, doc: doc)
        case .string:
            return ParameterDescriptor(
                name, kind: .string, default: required ? nil : stringDefault.map { .string($0) }, required: required,
                doc: doc)
        case .choice:
            return ParameterDescriptor(
                name, kind: .choice(choices ?? []), default: required ? nil : stringDefault.map { .string($0) },
                required: required, doc: doc)
        }
    }
}
