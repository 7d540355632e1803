/// The format of an audio stream between two nodes. Samples are 32-bit float, interleaved,
/// in -1...1: what JACK delivers, and what every built-in node speaks.
public struct AudioFormat: Hashable, Sendable, CustomStringConvertible {
    public var sampleRate: Int
    public var channelCount: Int

    public init(sampleRate: Int, channelCount: Int) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
    }

    /// The sample rates an input may have: what the converters turn into a recognizer's rate sensibly. A file
    /// whose header says 1 Hz would otherwise be resampled 16,000 times over, for minutes, on a few bytes.
    public static let supportedRates: ClosedRange<Int> = 4000...384_000

    /// Why an input at `rate` is refused, or `nil`.
    public static func rateProblem(_ rate: Int) -> String? {
        supportedRates.contains(rate)
            ? nil : "its sample rate, \(rate) Hz, is outside what speechgraph takes (4000 to 384000 Hz)"
    }

    public var description: String {
        "float32 \(sampleRate) Hz \(channelCount == 1 ? "mono" : channelCount == 2 ? "stereo" : "\(channelCount) ch")"
    }
}

/// What an audio input accepts. The planner inserts `resample` and `downmix` where a connection differs.
public struct AudioRequirement: Sendable, Equatable {
    public enum Rate: Sendable, Equatable {
        case any
        case fixed(Int)
        /// The rate is the value of a frequency parameter of the node.
        case parameter(String)
    }

    public var rate: Rate
    /// `nil`: any channel count.
    public var channelCount: Int?

    public init(rate: Rate = .any, channelCount: Int? = nil) {
        self.rate = rate
        self.channelCount = channelCount
    }

    public static let any = AudioRequirement()
    public static let mono = AudioRequirement(channelCount: 1)

    public var description: String {
        let r: String
        switch rate {
        case .any: r = "any rate"
        case .fixed(let hz): r = "\(hz) Hz"
        case .parameter(let p): r = "the rate set by '\(p)'"
        }
        return "float32, \(r), \(channelCount.map { $0 == 1 ? "mono" : "\($0) channels" } ?? "any channels")"
    }
}

public enum PortDirection: String, Sendable { case input, output }

public enum PortKind: String, Sendable {
    /// A stream of samples in one format.
    case audio
    /// A stream of typed events: results, speech activity, levels, gaps, availability.
    case events
}

/// How the format of an audio output follows from the node's inputs and parameters: every audio output
/// states one, and the planner works the formats out from it (a node type that states none is a
/// `check` error). Plain enough to be mirrored as a C struct (a tag, a port name, a rate, a channel count).
public enum OutputFormatRule: Sendable, Equatable {
    /// The format of input `port`, with the rate and the channel count replaced where given (`.any`, `nil`:
    /// unchanged). A tap: `.input("in")`; resample: `.input("in", rate: .parameter("rate"))`; downmix:
    /// `.input("in", channels: 1)`.
    case input(String, rate: AudioRequirement.Rate = .any, channels: Int? = nil)
    /// The rate and the channel count are the values of two parameters (push.input).
    case parameters(rate: String, channels: String)
    /// Worked out when the graph is planned by the node type's `formats` function: a file's header, an
    /// audio server's rate.
    case computed

    public var description: String {
        switch self {
        case .input(let port, let rate, let channels):
            var parts: [String] = []
            switch rate {
            case .any: break
            case .fixed(let hz): parts.append("at \(hz) Hz")
            case .parameter(let p): parts.append("at the rate set by '\(p)'")
            }
            if let channels { parts.append(channels == 1 ? "mono" : "\(channels) channels") }
            return parts.isEmpty ? "as '\(port)'" : "'\(port)'s, " + parts.joined(separator: ", ")
        case .parameters(let rate, let channels): return "at '\(rate)', with '\(channels)' channels"
        case .computed: return "worked out when the graph is planned"
        }
    }
}

/// The name of a kind of event: `result`, `speechStarted`, or one a plugin adds. It is the `type` of the
/// event's JSON Lines form. Kinds are open: a node type may declare its own (``NodeDescriptor/eventKinds``)
/// and emit them as ``GraphEvent/custom(_:)``, and sinks that write every event handle them without
/// knowing them.
public struct EventKind: RawRepresentable, Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible,
    Comparable
{
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ name: String) { rawValue = name }
    public init(stringLiteral value: String) { rawValue = value }
    public var description: String { rawValue }
    public static func < (a: EventKind, b: EventKind) -> Bool { a.rawValue < b.rawValue }

    public static let result: EventKind = "result"
    public static let speechStarted: EventKind = "speechStarted"
    public static let speechEnded: EventKind = "speechEnded"
    public static let speechPaused: EventKind = "speechPaused"
    public static let speechResumed: EventKind = "speechResumed"
    /// Nobody spoke in the stream's first seconds (a vad's `no-speech`): a ``CustomEvent`` with its time.
    public static let noSpeech: EventKind = "noSpeech"
    public static let gap: EventKind = "gap"
    public static let availability: EventKind = "availability"
    public static let level: EventKind = "level"
    /// Something about the input worth telling the user that did not stop the graph (samples that were not
    /// numbers): a ``CustomEvent`` with a `reason` field.
    public static let warning: EventKind = "warning"

    /// The kinds speechgraph itself defines (docs/events.md).
    public static let builtIn: [EventKind] = [
        .result, .speechStarted, .speechEnded, .speechPaused, .speechResumed, .noSpeech, .gap, .availability, .level,
        .warning,
    ]
    /// Speech activity, as a vad node emits it.
    public static let speechActivity: [EventKind] = [.speechStarted, .speechEnded, .speechPaused, .speechResumed]
}

/// The event kinds a port emits (an output) or accepts (an input).
public enum EventKinds: Sendable, Equatable {
    /// Every kind, including kinds added later (a sink that writes events out; a pass-through).
    case any
    case only([EventKind])

    /// The kinds both sides have in common; `nil` when either side takes any kind.
    public func common(with other: EventKinds) -> [EventKind]? {
        switch (self, other) {
        case (.any, .any): return nil
        case (.any, .only(let k)), (.only(let k), .any): return k
        case (.only(let a), .only(let b)): return a.filter(b.contains)
        }
    }

    public func contains(_ kind: EventKind) -> Bool {
        switch self {
        case .any: return true
        case .only(let kinds): return kinds.contains(kind)
        }
    }

    public var description: String {
        switch self {
        case .any: return "any kind"
        case .only(let kinds): return kinds.isEmpty ? "no kind" : kinds.map(\.rawValue).joined(separator: ", ")
        }
    }
}

/// An event kind a node type adds to the built-in ones, with what it means (for `speechgraph nodes`).
public struct EventKindDescriptor: Sendable {
    public var kind: EventKind
    public var doc: String
    public init(_ kind: EventKind, doc: String) {
        self.kind = kind
        self.doc = doc
    }
}

/// Where a node's work runs (docs/architecture.md).
public enum ThreadingDomain: String, Sendable, CaseIterable {
    /// Part of it runs in the audio server's real-time thread (the JACK process callback): it talks to the
    /// graph through preallocated SPSC rings only.
    case realtime
    /// Costly: it gets a worker thread of its own when a graph has several such nodes (a recognizer). It
    /// must emit events only.
    case worker
    /// The graph thread, in order with the other nodes.
    case any
}

public struct PortDescriptor: Sendable {
    public var name: String
    public var direction: PortDirection
    public var kind: PortKind
    /// Audio inputs only: what the port accepts.
    public var requirement: AudioRequirement
    /// Audio outputs only: how its format follows from the inputs; `nil` means the node type states
    /// nothing, which `check` reports as an error.
    public var format: OutputFormatRule?
    /// Event ports only: the kinds an output emits, or an input accepts.
    public var eventKinds: EventKinds
    /// Inputs only: the graph is invalid while this port is unconnected.
    public var isRequired: Bool
    public var doc: String

    public init(
        name: String, direction: PortDirection, kind: PortKind, requirement: AudioRequirement = .any,
        format: OutputFormatRule? = nil, eventKinds: EventKinds = .only([]), isRequired: Bool = false,
        doc: String
    ) {
        self.name = name
        self.direction = direction
        self.kind = kind
        self.requirement = requirement
        self.format = format
        self.eventKinds = eventKinds
        self.isRequired = isRequired
        self.doc = doc
    }

    public static func audioInput(
        _ name: String = "in", _ requirement: AudioRequirement = .any, required: Bool = true,
        doc: String
    ) -> PortDescriptor {
        PortDescriptor(
            name: name, direction: .input, kind: .audio, requirement: requirement, isRequired: required, doc: doc)
    }
    /// An audio output and how its format follows from the inputs (`nil`: a `check` error).
    public static func audioOutput(_ name: String = "out", format: OutputFormatRule?, doc: String) -> PortDescriptor {
        PortDescriptor(name: name, direction: .output, kind: .audio, format: format, doc: doc)
    }
    /// An event input and the kinds it accepts.
    public static func eventInput(
        _ name: String = "in", accepts: EventKinds, required: Bool = true,
        doc: String
    ) -> PortDescriptor {
        PortDescriptor(
            name: name, direction: .input, kind: .events, eventKinds: accepts, isRequired: required, doc: doc)
    }
    /// An event output and the kinds it emits.
    public static func eventOutput(_ name: String = "events", emits: EventKinds, doc: String) -> PortDescriptor {
        PortDescriptor(name: name, direction: .output, kind: .events, eventKinds: emits, doc: doc)
    }
}

/// The type of a parameter; numbers with a dimension carry units in the graph file.
public enum ParameterKind: Sendable, Equatable {
    case quantity(QuantityDimension)
    case number
    case integer
    case boolean
    case string
    case path
    case choice([String])

    public var summary: String {
        switch self {
        case .quantity(let d): return d.rawValue
        case .number: return "number"
        case .integer: return "integer"
        case .boolean: return "boolean"
        case .string: return "string"
        case .path: return "path"
        case .choice(let options): return options.joined(separator: "|")
        }
    }
}

/// A checked parameter value, in the canonical unit of its dimension.
public enum ParameterValue: Sendable, Hashable, CustomStringConvertible {
    case number(Double)
    case integer(Int)
    case boolean(Bool)
    case string(String)

    public var description: String {
        switch self {
        case .number(let v): return formatNumber(v)
        case .integer(let v): return String(v)
        case .boolean(let v): return v ? "true" : "false"
        case .string(let s): return s
        }
    }
}

/// One parameter of a node type: the single source of its default, range, unit and doc.
public struct ParameterDescriptor: Sendable {
    public var name: String
    public var kind: ParameterKind
    /// `nil` with `isRequired == false`: the parameter is optional and has no value unless set.
    public var defaultValue: ParameterValue?
    /// In the canonical unit.
    public var range: ClosedRange<Double>?
    /// The unit defaults and ranges are shown in.
    public var displayUnit: QuantityUnit?
    public var isRequired: Bool
    /// A `path` the node writes (a sink's file), not one it reads: `check` refuses a graph in which it names a
    /// file another path parameter of the graph names too (an input the sink would overwrite while it is read).
    public var writes: Bool
    /// A name that no two nodes of a graph may give in this namespace (a JACK port's base name, "JACK port": two
    /// nodes with one would register the same ports): `check` refuses the second, at its value.
    public var uniqueIn: String?
    public var doc: String

    public init(
        _ name: String, kind: ParameterKind, default defaultValue: ParameterValue?, range: ClosedRange<Double>? = nil,
        displayUnit: QuantityUnit? = nil, required: Bool = false, writes: Bool = false, uniqueIn: String? = nil,
        doc: String
    ) {
        self.name = name
        self.kind = kind
        self.defaultValue = defaultValue
        self.range = range
        self.displayUnit = displayUnit
        self.isRequired = required
        self.writes = writes
        self.uniqueIn = uniqueIn
        self.doc = doc
    }

    /// A quantity given, with its range, in `unit`:
    /// `.quantity("hangover", default: 300, .milliseconds, range: 0...3000, ...)`.
    public static func quantity(
        _ name: String, default value: Double?, _ unit: QuantityUnit, range: ClosedRange<Double>,
        doc: String
    ) -> ParameterDescriptor {
        ParameterDescriptor(
            name, kind: .quantity(unit.dimension), default: value.map { .number($0 * unit.scale) },
            range: (range.lowerBound * unit.scale)...(range.upperBound * unit.scale), displayUnit: unit, doc: doc)
    }
    public static func integer(_ name: String, default value: Int?, range: ClosedRange<Int>, doc: String)
        -> ParameterDescriptor
    {
        ParameterDescriptor(
            name, kind: .integer, default: value.map { .integer($0) },
            range: Double(range.lowerBound)...Double(range.upperBound), doc: doc)
    }
    public static func number(_ name: String, default value: Double, range: ClosedRange<Double>, doc: String)
        -> ParameterDescriptor
    {
        ParameterDescriptor(name, kind: .number, default: .number(value), range: range, doc: doc)
    }
    public static func boolean(_ name: String, default value: Bool, doc: String) -> ParameterDescriptor {
        ParameterDescriptor(name, kind: .boolean, default: .boolean(value), doc: doc)
    }
    public static func string(_ name: String, default value: String?, required: Bool = false, doc: String)
        -> ParameterDescriptor
    {
        ParameterDescriptor(name, kind: .string, default: value.map { .string($0) }, required: required, doc: doc)
    }
    /// A file or folder; `writes`: one the node writes (see ``writes``), else one it reads.
    public static func path(
        _ name: String, default value: String? = nil, required: Bool = false, writes: Bool = false, doc: String
    ) -> ParameterDescriptor {
        ParameterDescriptor(
            name, kind: .path, default: value.map { .string($0) }, required: required, writes: writes, doc: doc)
    }
    public static func choice(_ name: String, _ options: [String], default value: String, doc: String)
        -> ParameterDescriptor
    {
        ParameterDescriptor(name, kind: .choice(options), default: .string(value), doc: doc)
    }

    /// The default as a user would write it in a graph file.
    public var defaultText: String {
        guard let defaultValue else { return isRequired ? "(required)" : "(none)" }
        switch (defaultValue, displayUnit) {
        case (.number(let v), let unit?): return formatQuantity(v, in: unit)
        case (.string(let s), _):
            if case .choice = kind { return s }
            return "\"\(s)\""
        default: return defaultValue.description
        }
    }

    /// The range as a user would write it, or `nil` when the parameter has none.
    public var rangeText: String? {
        guard let range else { return nil }
        if let unit = displayUnit {
            return "\(formatNumber(range.lowerBound / unit.scale)) to \(formatQuantity(range.upperBound, in: unit))"
        }
        return "\(formatNumber(range.lowerBound)) to \(formatNumber(range.upperBound))"
    }

    /// Checks a value given in code (a reload's new parameters), not written in a graph file: its kind and range.
    public func check(_ value: ParameterValue) -> Result<ParameterValue, ParameterError> {
        let number: Double?
        switch (kind, value) {
        case (.quantity, .number(let v)), (.number, .number(let v)): number = v
        case (.quantity, .integer(let v)), (.number, .integer(let v)), (.integer, .integer(let v)): number = Double(v)
        case (.boolean, .boolean), (.string, .string), (.path, .string): number = nil
        case (.choice(let options), .string(let w)) where options.contains(w): number = nil
        default: return .failure(ParameterError("\(value) is not a value for '\(name)' (\(kind.summary))"))
        }
        if let number, let range, !range.contains(number) {
            return .failure(ParameterError("\(value) is out of range for '\(name)': expected \(rangeText ?? "")"))
        }
        return .success(value)
    }

    private static let expectedBoolean = "expected true or false (or yes/no, on/off)"

    /// Checks a value as written against this parameter; the error message says what was expected.
    public func check(_ literal: ValueLiteral) -> Result<ParameterValue, ParameterError> {
        let value: ParameterValue
        switch (kind, literal) {
        case (.quantity, .number(0, nil)):
            // Zero is zero in every unit (`pause: 0` turns the pause events off): nothing to guess.
            value = .number(0)
        case (.quantity(let dimension), .number(let v, let unitText)):
            guard let unitText else {
                return .failure(ParameterError("missing unit for '\(name)': expected \(dimension.example)"))
            }
            guard let unit = QuantityUnit.parse(unitText) else {
                return .failure(
                    ParameterError("unknown unit '\(unitText)' for '\(name)': expected \(dimension.example)"))
            }
            guard unit.dimension == dimension else {
                return .failure(
                    ParameterError(
                        "wrong unit '\(unitText)' for '\(name)': expected \(dimension.example), "
                            + "not a \(unit.dimension.rawValue)"
                    ))
            }
            value = .number(v * unit.scale)
        case (.quantity(let dimension), _):
            return .failure(ParameterError("expected \(dimension.example) for '\(name)', found \(literal)"))
        case (.number, .number(let v, nil)):
            value = .number(v)
        case (.integer, .number(let v, nil)):
            guard v.isFinite, abs(v) < 1e15 else {
                return .failure(
                    ParameterError(
                        "\(literal) is out of range for '\(name)': expected \(rangeText ?? "a whole number")"))
            }
            guard v == v.rounded() else {
                return .failure(ParameterError("expected a whole number for '\(name)', found \(literal)"))
            }
            value = .integer(Int(v))
        case (.number, .number(_, let u?)), (.integer, .number(_, let u?)):
            return .failure(ParameterError("'\(name)' takes a plain number, without a unit ('\(u)')"))
        case (.number, _), (.integer, _):
            return .failure(ParameterError("expected a number for '\(name)', found \(literal)"))
        case (.boolean, .word(let w)) where ["true", "yes", "on"].contains(w.lowercased()):
            value = .boolean(true)
        case (.boolean, .word(let w)) where ["false", "no", "off"].contains(w.lowercased()):
            value = .boolean(false)
        case (.boolean, .string(let s))
        where ["true", "yes", "on", "false", "no", "off"].contains(s.lowercased()):
            return .failure(
                ParameterError("\(Self.expectedBoolean) for '\(name)', found \(literal): write it without quotes"))
        case (.boolean, _):
            return .failure(ParameterError("\(Self.expectedBoolean) for '\(name)', found \(literal)"))
        case (.path, .string("")):
            // Names no file (a variable set to nothing, say: `path: "${AUDIO}"` with AUDIO=).
            return .failure(ParameterError("an empty path for '\(name)': it names no file"))
        case (.string, .string(let s)), (.path, .string(let s)), (.string, .word(let s)):
            value = .string(s)
        case (.string, .list(let items)):
            // A list for a parameter that takes items separated by '|'.
            if let bad = items.first(where: { $0.contains("|") }) {
                return .failure(ParameterError("a list item of '\(name)' cannot hold '|': \"\(bad)\""))
            }
            value = .string(items.joined(separator: "|"))
        case (.path, .word(let s)):
            return .failure(ParameterError("expected a quoted path for '\(name)', as in \"\(s)\""))
        case (.string, _), (.path, _):
            return .failure(ParameterError("expected a \"string\" for '\(name)', found \(literal)"))
        case (.choice(let options), .word(let w)), (.choice(let options), .string(let w)):
            guard options.contains(w) else {
                return .failure(
                    ParameterError(
                        "'\(w)' is not one of \(options.joined(separator: ", ")) for '\(name)'" + didYouMean(w, options)
                    ))
            }
            value = .string(w)
        case (.choice(let options), _):
            return .failure(
                ParameterError("expected one of \(options.joined(separator: ", ")) for '\(name)', found \(literal)"))
        }
        if let range {
            let n: Double? =
                switch value {
                case .number(let v): v
                case .integer(let v): Double(v)
                default: nil
                }
            if let n, !range.contains(n) {
                return .failure(ParameterError("\(literal) is out of range for '\(name)': expected \(rangeText ?? "")"))
            }
        }
        return .success(value)
    }
}

/// Everything about a node type that can be known without running it: what `speechgraph nodes` prints,
/// what the parser checks, what the planner negotiates.
public struct NodeDescriptor: Sendable {
    public enum Category: String, Sendable, CaseIterable {
        case input, converter, analysis, recognizer, sink
    }

    public var typeName: String
    public var summary: String
    public var doc: String
    public var category: Category
    public var ports: [PortDescriptor]
    public var parameters: [ParameterDescriptor]
    /// Where its work runs: the graph thread (`any`), a worker thread of its own (`worker`), or partly the
    /// audio server's real-time thread (`realtime`).
    public var threading: ThreadingDomain
    /// Event kinds this type adds to the built-in ones (a plugin's own), with their docs.
    public var eventKinds: [EventKindDescriptor]
    /// The plugin file the type came from; `nil` for a type built into speechgraph.
    public var origin: String?
    /// Its audio comes at the world's pace (a JACK port, audio pushed by an app): a graph with such a node is
    /// live, and its costly nodes run on worker threads (`GraphPlanner.place`).
    public var isLive: Bool
    /// The resources its nodes share with the graph's other nodes (``GraphResource``): the planner makes the graph's
    /// one of each before it plans or makes such a node, unless the graph's caller provided it.
    public var requires: [GraphResourceKey]

    public init(
        typeName: String, summary: String, doc: String = "", category: Category, ports: [PortDescriptor],
        parameters: [ParameterDescriptor], threading: ThreadingDomain = .any, isLive: Bool = false,
        requires: [GraphResourceKey] = [], eventKinds: [EventKindDescriptor] = [], origin: String? = nil
    ) {
        self.isLive = isLive
        self.requires = requires
        self.origin = origin
        self.threading = threading
        self.eventKinds = eventKinds
        self.typeName = typeName
        self.summary = summary
        self.doc = doc
        self.category = category
        self.ports = ports
        self.parameters = parameters
    }

    public var inputs: [PortDescriptor] { ports.filter { $0.direction == .input } }
    public var outputs: [PortDescriptor] { ports.filter { $0.direction == .output } }
    public func parameter(_ name: String) -> ParameterDescriptor? { parameters.first { $0.name == name } }
    public func inputIndex(_ name: String) -> Int? { inputs.firstIndex { $0.name == name } }
    public func outputIndex(_ name: String) -> Int? { outputs.firstIndex { $0.name == name } }
}

/// Why a value does not fit a parameter, as a sentence for the user.
public struct ParameterError: Error, Sendable, Equatable {
    public var message: String
    public init(_ message: String) { self.message = message }
}
