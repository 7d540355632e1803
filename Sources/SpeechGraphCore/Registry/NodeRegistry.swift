import Foundation

/// A runtime failure: a file that cannot be read, a model that is missing, a library that refused.
/// The CLI prints `message` and exits 1.
public struct SpeechGraphError: Error, Sendable, CustomStringConvertible {
    public var message: String
    /// When the failure comes from one parameter's value, its name, so the planner can point at it.
    public var parameter: String?
    /// When the failure is about one item of a list parameter (`phrases: ["a", "!!!"]`), the item's index: the
    /// planner points at the item when the list was written in a file.
    public var item: Int?
    /// Where in the graph file the failing node or parameter was written, when known.
    public var location: SourceLocation?

    public init(_ message: String, parameter: String? = nil, item: Int? = nil, location: SourceLocation? = nil) {
        self.message = message
        self.parameter = parameter
        self.item = item
        self.location = location
    }

    /// `file:line:col: error: message` when the place is known, else the message.
    public var description: String { location.map { "\($0): error: \(message)" } ?? message }
}

/// Several problems found together (a node type's `validate` that checks independent values: `check` reports
/// each at its value, not only the first).
public struct SpeechGraphErrors: Error, Sendable, CustomStringConvertible {
    public var errors: [SpeechGraphError]

    public init(_ errors: [SpeechGraphError]) { self.errors = errors }

    /// Throws the one error, or all of them, when there are any.
    public func throwIfAny() throws {
        if errors.count == 1 { throw errors[0] }
        if !errors.isEmpty { throw self }
    }

    public var description: String { errors.map(\.description).joined(separator: "; ") }
}

/// The checked parameters of one node, with defaults filled in, and where each was written.
public struct NodeConfig: Sendable {
    public var name: String
    public var typeName: String
    public var values: [String: ParameterValue]
    public var locations: [String: SourceLocation]
    /// For a list written in the file, where each of its items was.
    public var itemLocations: [String: [SourceLocation]] = [:]
    public var location: SourceLocation?
    /// Parameters whose value came from the command line, each with the option that gave it (`--set asr.dict`,
    /// or `--dict` of a command that made the graph): an error about one names the option, not a place in the file.
    public var origins: [String: String] = [:]
    /// A node a command made for the user (see `NodeDeclaration.isImplicit`): messages do not name it.
    public var isImplicit = false

    public init(
        name: String, typeName: String, values: [String: ParameterValue] = [:],
        locations: [String: SourceLocation] = [:], location: SourceLocation? = nil
    ) {
        self.name = name
        self.typeName = typeName
        self.values = values
        self.locations = locations
        self.location = location
    }

    /// `error` (from this node, about one of its parameters or none) as the node's: its message prefixed with the
    /// node, located at the parameter's value or the node's declaration, or, for a value from the command line,
    /// naming the option (with no place in the file).
    public func located(_ error: SpeechGraphError) -> SpeechGraphError {
        let (option, at) = origin(of: error.parameter, item: error.item)
        return SpeechGraphError(
            (option.map { "\($0): " } ?? "") + about(error.message), parameter: error.parameter, item: error.item,
            location: at)
    }

    /// A message about this node, as the user should read it: `node 'asr' (recognizer): message`, or the
    /// message alone for a node the user did not write.
    public func about(_ message: String) -> String {
        isImplicit ? message : "node '\(name)' (\(typeName)): \(message)"
    }

    /// A warning the node raised, as the end of a run prints it: `node 'src': message`, or the message alone.
    public func warning(_ message: String) -> String { isImplicit ? message : "node '\(name)': \(message)" }

    /// Where an error about `parameter` (or about the node, for `nil`) points: for a value from the command line,
    /// the option that gave it (`--set node.parameter`, `--dict`) and no place in the file; else the value's
    /// place (the item's, for an `item` of a list written in the file), or the node's.
    public func origin(of parameter: String?, item: Int? = nil) -> (option: String?, location: SourceLocation?) {
        if let parameter, let option = origins[parameter] { return (option, nil) }
        if let parameter, let item, let items = itemLocations[parameter], items.indices.contains(item) {
            return (nil, items[item])
        }
        return (nil, parameter.flatMap { locations[$0] } ?? location)
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

    // The value of a parameter that has a default: its descriptor holds the default, and the planner
    // fills it in, so a node reads it without restating it. Asking for one that has no value is a bug in
    // the node type (its descriptor gives the parameter no default), caught by the tests.

    public func number(of key: String) -> Double { present(key, number(key)) }
    public func integer(of key: String) -> Int { present(key, integer(key)) }
    public func bool(of key: String) -> Bool { present(key, bool(key)) }
    public func string(of key: String) -> String { present(key, string(key)) }

    private func present<T>(_ key: String, _ value: T?) -> T {
        guard let value else { missing(key) }
        return value
    }

    private func missing(_ key: String) -> Never {
        preconditionFailure(
            "parameter '\(key)' of \(typeName) node '\(name)' has no value: its descriptor needs a default")
    }
}

/// What a node type's plan-time functions get: the node's configuration, the formats of its connected
/// audio inputs, and, when the graph is planned to run, the graph's resources.
public struct PlanContext: Sendable {
    public var config: NodeConfig
    /// The format of each connected audio input (already converted), by port name.
    public var inputFormats: [String: AudioFormat]
    /// The resources of the graph about to run (a device the graph will own may be opened here, once, as
    /// a shared resource). `nil` when the graph is only checked (`speechgraph check --plan`): then nothing
    /// may be opened, and a format a device would tell is assumed (say so in `notes`).
    public var resources: GraphResources?
    /// What the plan should tell the user (an assumed rate); shown by `check --plan` as notes.
    public var notes: [String] = []

    public init(config: NodeConfig, inputFormats: [String: AudioFormat], resources: GraphResources?) {
        self.config = config
        self.inputFormats = inputFormats
        self.resources = resources
    }
}

/// The node output an audio input is connected to.
public struct AudioSource: Sendable, Equatable {
    public var node: String
    public var typeName: String
    public var port: String
    /// How many inputs that output feeds (a tap beside a converter: 2).
    public var consumers: Int

    public init(node: String, typeName: String, port: String, consumers: Int) {
        self.node = node
        self.typeName = typeName
        self.port = port
        self.consumers = consumers
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
    /// For a node on a worker thread: whether events wait behind the input it is working on.
    public var backlog: WorkerBacklog
    /// Where each connected audio input comes from, by input port name.
    public var sources: [String: AudioSource] = [:]
    /// Where the node runs, as the plan says (`GraphPlanner.place`): a real-time safe processor placed
    /// `inCallback(of:)` hands its processor to that node's real-time host.
    public var placement: NodePlacement = .graphThread
    /// Placed `inCallback(of:)`: the real-time host of that node's audio, if it is one (``RealtimeProcessorHosting``).
    public var realtimeHost: (any RealtimeProcessorHost)?
    /// Posted from another thread when work the node handed it is done: the graph then calls the node's
    /// `wake(output:)` on the node's own thread.
    public var wakeup = NodeWakeup()

    public init(
        config: NodeConfig, inputFormats: [String: AudioFormat], outputFormats: [String: AudioFormat],
        maxBlockFrames: Int, resources: GraphResources = GraphResources(), connectedInputs: Set<String> = [],
        backlog: WorkerBacklog = WorkerBacklog()
    ) {
        self.connectedInputs = connectedInputs
        self.backlog = backlog
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
    /// The formats of the outputs whose rule is ``OutputFormatRule/computed``, by port name. Called when
    /// the graph is planned; may read a file header, but must not start anything, and must open nothing
    /// when ``PlanContext/resources`` is `nil`. Output rules other than `computed` need no function: the
    /// planner applies them.
    public var formats: (@Sendable (inout PlanContext) throws -> [String: AudioFormat])?
    /// The largest block, in frames, each audio output emits, given the largest block on the inputs.
    public var maxOutputFrames: @Sendable (NodeConfig, [String: AudioFormat], Int) -> Int
    public var make: @Sendable (NodeContext) throws -> any GraphNode
    /// What an audio input accepts when that depends on more than the descriptor (jack.output takes
    /// the running server's rate). Called at plan time, with the same rules as `formats`; returning `nil`
    /// keeps the descriptor's requirement.
    public var inputRequirement: (@Sendable (inout PlanContext, String) throws -> AudioRequirement?)?
    /// Checks, when the graph is planned (`speechgraph check --plan`, and before any run), that what the
    /// node will open exists and can be read: a model, a dictionary, a file. Throws a `SpeechGraphError`
    /// naming the parameter, so the error points at it. Must not start or open anything lasting.
    public var resourceCheck: (@Sendable (NodeConfig) throws -> Void)?
    /// Checks what each parameter's own kind and range cannot: the values together (a replay that must fit a
    /// queue) or a value's form (an address). Run by `speechgraph check` with the parameters (nothing opened, no
    /// file read): a `SpeechGraphError` naming the parameter is a graph error at its value.
    public var validate: (@Sendable (NodeConfig) throws -> Void)?
    /// What `speechgraph check` should warn about in a valid configuration: values that work together but
    /// probably not as meant (a grammar whose rejection this mode turns off). Each a `SpeechGraphError` naming the
    /// parameter it is about, reported as a warning at its value; a warning does not stop a run.
    public var advise: (@Sendable (NodeConfig) -> [SpeechGraphError])?

    public init(
        _ descriptor: NodeDescriptor,
        formats: (@Sendable (inout PlanContext) throws -> [String: AudioFormat])? = nil,
        maxOutputFrames: @escaping @Sendable (NodeConfig, [String: AudioFormat], Int) -> Int = { _, _, n in n },
        inputRequirement: (@Sendable (inout PlanContext, String) throws -> AudioRequirement?)? = nil,
        resourceCheck: (@Sendable (NodeConfig) throws -> Void)? = nil,
        validate: (@Sendable (NodeConfig) throws -> Void)? = nil,
        advise: (@Sendable (NodeConfig) -> [SpeechGraphError])? = nil,
        make: @escaping @Sendable (NodeContext) throws -> any GraphNode
    ) {
        self.validate = validate
        self.advise = advise
        self.resourceCheck = resourceCheck
        self.inputRequirement = inputRequirement
        self.descriptor = descriptor
        self.formats = formats
        self.maxOutputFrames = maxOutputFrames
        self.make = make
    }
}

extension NodeType {
    /// Where this type breaks the node contract (docs/architecture.md): an audio output that states no
    /// format rule, a rule naming an input it does not have, `computed` with no `formats` function, an
    /// event port that names no kinds, a kind no registered type defines, a `worker` node with an audio output
    /// (a worker emits events only). `check` reports each as an error at every node of this type. Empty for a
    /// sound type.
    public func contractProblems(knownKinds: Set<EventKind>) -> [String] {
        var problems: [String] = []
        let d = descriptor
        if d.threading == .worker, let audio = d.outputs.first(where: { $0.kind == .audio }) {
            problems.append(
                "it runs on a worker thread (threading: worker), which emits events only, but has an audio output '"
                    + "\(audio.name)'")
        }
        for port in d.outputs where port.kind == .audio {
            switch port.format {
            case nil:
                problems.append(
                    "its audio output '\(port.name)' states no format rule (how its format follows from "
                        + "the inputs)")
            case .input(let name, _, _)?:
                if !d.inputs.contains(where: { $0.name == name && $0.kind == .audio }) {
                    problems.append(
                        "the format rule of output '\(port.name)' names '\(name)', which is not one of its "
                            + "audio inputs")
                }
            case .parameters(let rate, let channels)?:
                for p in [rate, channels] where d.parameter(p) == nil {
                    problems.append(
                        "the format rule of output '\(port.name)' names parameter '\(p)', which it does not have")
                }
            case .computed?:
                if formats == nil {
                    problems.append(
                        "output '\(port.name)' says its format is computed, but the type has no formats function")
                }
            }
        }
        for port in d.ports where port.kind == .events {
            guard case .only(let kinds) = port.eventKinds else { continue }
            if kinds.isEmpty {
                problems.append("its event \(port.direction.rawValue) '\(port.name)' names no event kinds")
            }
            for kind in kinds where !knownKinds.contains(kind) {
                problems.append("its event port '\(port.name)' names kind '\(kind)', which no node type defines")
            }
        }
        return problems
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

    /// Every event kind a graph may carry: the built-in ones and those the registered types add.
    public var eventKinds: Set<EventKind> {
        Set(EventKind.builtIn).union(types.values.flatMap { $0.descriptor.eventKinds.map(\.kind) })
    }

    /// Every type, sorted by category and then name, as `speechgraph nodes` lists them.
    public var sortedTypes: [NodeType] {
        let order = NodeDescriptor.Category.allCases
        return types.values.sorted {
            let a = order.firstIndex(of: $0.descriptor.category)!
            let b = order.firstIndex(of: $1.descriptor.category)!
            return a != b ? a < b : $0.descriptor.typeName < $1.descriptor.typeName
        }
    }
}
