import Foundation

/// A runtime failure: a file that cannot be read, a model that is missing, a library that refused.
/// The CLI prints `message` and exits 1.
public struct SpeechGraphError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// When the failure comes from one parameter's value, its name, so the planner can point at it.
    public var parameter: String?
    /// Where in the graph file the failing node or parameter was written, when known.
    public var location: SourceLocation?

    public init(_ message: String, parameter: String? = nil, location: SourceLocation? = nil) {
        self.message = message
        self.parameter = parameter
        self.location = location
    }

    /// `file:line:col: error: message` when the place is known, else the message.
    public var description: String { location.map { "\($0): error: \(message)" } ?? message }
}

/// The checked parameters of one node, with defaults filled in, and where each was written.
public struct NodeConfig: Sendable {
    public var name: String
    public var typeName: String
    public var values: [String: ParameterValue]
    public var locations: [String: SourceLocation]
    public var location: SourceLocation?

    public init(name: String, typeName: String, values: [String: ParameterValue] = [:],
                locations: [String: SourceLocation] = [:], location: SourceLocation? = nil) {
        self.name = name
        self.typeName = typeName
        self.values = values
        self.locations = locations
        self.location = location
    }

    public func number(_ key: String) -> Double? {
        switch values[key] {
        case .number(let v)?: return v
        case .integer(let v)?: return Double(v)
        default: return nil
        }
    }
    public func integer(_ key: String) -> Int? {
        switch values[key] {
        case .integer(let v)?: return v
        case .number(let v)?: return Int(v)
        default: return nil
        }
    }
    public func bool(_ key: String) -> Bool? {
        if case .boolean(let v)? = values[key] { return v }
        return nil
    }
    public func string(_ key: String) -> String? {
        if case .string(let v)? = values[key] { return v }
        return nil
    }
}

/// What a node type's factory gets when the graph is instantiated.
public struct NodeContext: Sendable {
    public var config: NodeConfig
    /// The fixed format of each connected audio input, by port name.
    public var inputFormats: [String: AudioFormat]
    /// The fixed format of each audio output, by port name.
    public var outputFormats: [String: AudioFormat]
    /// The largest block, in frames, any audio input will deliver at once.
    public var maxBlockFrames: Int
    /// Objects shared by the nodes of one running graph (one JACK client for every jack.* node).
    public var resources: GraphResources
    /// The names of the input ports that have a connection.
    public var connectedInputs: Set<String>

    public init(config: NodeConfig, inputFormats: [String: AudioFormat], outputFormats: [String: AudioFormat],
                maxBlockFrames: Int, resources: GraphResources = GraphResources(), connectedInputs: Set<String> = []) {
        self.connectedInputs = connectedInputs
        self.config = config
        self.inputFormats = inputFormats
        self.outputFormats = outputFormats
        self.maxBlockFrames = maxBlockFrames
        self.resources = resources
    }
}

/// A node type: its descriptor, how its output formats follow from its inputs, and how to make one.
public struct NodeType: Sendable {
    public var descriptor: NodeDescriptor
    /// Output formats from the configuration and the (already converted) input formats. Called when the
    /// graph is planned; may read a file header, but must not start anything.
    public var formats: @Sendable (NodeConfig, [String: AudioFormat]) throws -> [String: AudioFormat]
    /// The largest block, in frames, each audio output emits, given the largest block on the inputs.
    public var maxOutputFrames: @Sendable (NodeConfig, [String: AudioFormat], Int) -> Int
    public var make: @Sendable (NodeContext) throws -> any GraphNode
    /// What an audio input accepts when that depends on more than the descriptor (jack.output takes
    /// the running server's rate). Called at plan time; `nil` keeps the descriptor's requirement.
    public var inputRequirement: (@Sendable (NodeConfig, String) throws -> AudioRequirement?)?
    /// Checks, when the graph is planned (`speechgraph check --plan`, and before any run), that what the
    /// node will open exists and can be read: a model, a dictionary, a file. Throws a `SpeechGraphError`
    /// naming the parameter, so the error points at it. Must not start or open anything lasting.
    public var resourceCheck: (@Sendable (NodeConfig) throws -> Void)?

    public init(
        _ descriptor: NodeDescriptor,
        formats: @escaping @Sendable (NodeConfig, [String: AudioFormat]) throws -> [String: AudioFormat] = { _, _ in [:] },
        maxOutputFrames: @escaping @Sendable (NodeConfig, [String: AudioFormat], Int) -> Int = { _, _, n in n },
        inputRequirement: (@Sendable (NodeConfig, String) throws -> AudioRequirement?)? = nil,
        resourceCheck: (@Sendable (NodeConfig) throws -> Void)? = nil,
        make: @escaping @Sendable (NodeContext) throws -> any GraphNode
    ) {
        self.resourceCheck = resourceCheck
        self.inputRequirement = inputRequirement
        self.descriptor = descriptor
        self.formats = formats
        self.maxOutputFrames = maxOutputFrames
        self.make = make
    }
}

/// All node types a graph may use, by type name. Node families and plugins register into it.
public struct NodeRegistry: Sendable {
    public private(set) var types: [String: NodeType] = [:]

    public init() {}

    /// Adds a node type; a second type with the same name is an error, never silently replaced.
    public mutating func register(_ type: NodeType) throws {
        let name = type.descriptor.typeName
        guard types[name] == nil else {
            throw SpeechGraphError("node type '\(name)' is registered twice")
        }
        types[name] = type
    }

    public subscript(typeName: String) -> NodeType? { types[typeName] }

    /// Every type, sorted by category and then name, as `speechgraph nodes` lists them.
    public var sortedTypes: [NodeType] {
        let order = NodeDescriptor.Category.allCases
        return types.values.sorted {
            let a = order.firstIndex(of: $0.descriptor.category)!, b = order.firstIndex(of: $1.descriptor.category)!
            return a != b ? a < b : $0.descriptor.typeName < $1.descriptor.typeName
        }
    }
}
