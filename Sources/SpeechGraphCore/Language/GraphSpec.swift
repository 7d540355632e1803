import Foundation

/// A value with the place it was written.
public struct Located<Value: Sendable>: Sendable {
    public var value: Value
    public var location: SourceLocation
    public init(_ value: Value, at location: SourceLocation) {
        self.value = value
        self.location = location
    }
}

extension Located: Equatable where Value: Equatable {}

/// `text` as a string of the graph language (and of language-model specs): `\\`, `"`, `$`, newlines and tabs
/// escaped, so that it reads back as exactly `text`.
public func graphQuoted(_ text: String) -> String {
    var out = "\""
    for ch in text.unicodeScalars {
        switch ch {
        case "\\": out += "\\\\"
        case "\"": out += "\\\""
        case "$": out += "\\$"
        case "\n": out += "\\n"
        case "\t": out += "\\t"
        default: out.unicodeScalars.append(ch)
        }
    }
    return out + "\""
}

/// A parameter value as written, before it is checked against the node's descriptor.
public enum ValueLiteral: Sendable, Equatable, CustomStringConvertible {
    /// `16 kHz`, `-40 dB`, `300 ms`, `2`.
    case number(Double, unit: String?)
    /// `"system:capture_1"`, with `${VAR}` already expanded.
    case string(String)
    /// A bare word: `normal`, `true`, `high`.
    case word(String)
    /// `["call my mother", "open the door"]`: for parameters that take a list (written `a|b` as a string).
    case list([String])

    public var description: String {
        switch self {
        case .number(let v, let unit?): return "\(formatNumber(v)) \(unit)"
        case .number(let v, nil): return formatNumber(v)
        case .string(let s): return "\"\(s)\""
        case .word(let w): return w
        case .list(let items): return "[" + items.map { "\"\($0)\"" }.joined(separator: ", ") + "]"
        }
    }
}

public struct ParameterAssignment: Sendable {
    public var name: Located<String>
    public var value: Located<ValueLiteral>
    /// The command-line option the value came from, when a command made the graph (`--model` of `transcribe`):
    /// a message about the value names the option, not a place in a file the user never saw.
    public var origin: String?
    /// For a `[list]` written in a file, where each of its items was written (an error about one points there).
    public var itemLocations: [SourceLocation]
    public init(
        name: Located<String>, value: Located<ValueLiteral>, origin: String? = nil,
        itemLocations: [SourceLocation] = []
    ) {
        self.name = name
        self.value = value
        self.origin = origin
        self.itemLocations = itemLocations
    }
}

public struct NodeDeclaration: Sendable {
    public var name: Located<String>
    public var type: Located<String>
    public var parameters: [ParameterAssignment]
    public var location: SourceLocation
    /// A node a command made for the user (`transcribe`'s file input and recognizer), not one the user wrote:
    /// messages about it do not name it.
    public var isImplicit: Bool
    public init(
        name: Located<String>, type: Located<String>, parameters: [ParameterAssignment], location: SourceLocation,
        isImplicit: Bool = false
    ) {
        self.name = name
        self.type = type
        self.parameters = parameters
        self.location = location
        self.isImplicit = isImplicit
    }
}

/// `node` or `node.port` on one side of an edge.
public struct Endpoint: Sendable, Equatable, CustomStringConvertible {
    public var node: Located<String>
    public var port: Located<String>?
    public init(node: Located<String>, port: Located<String>?) {
        self.node = node
        self.port = port
    }
    public var description: String { port.map { "\(node.value).\($0.value)" } ?? node.value }
}

public struct EdgeDeclaration: Sendable {
    public var from: Endpoint
    public var to: Endpoint
    public var location: SourceLocation  // the arrow
    public init(from: Endpoint, to: Endpoint, location: SourceLocation) {
        self.from = from
        self.to = to
        self.location = location
    }
}

/// A parsed graph file: every node and edge, each with its place in the file.
public struct GraphSpec: Sendable {
    public var file: String
    public var nodes: [NodeDeclaration]
    public var edges: [EdgeDeclaration]

    public init(file: String, nodes: [NodeDeclaration] = [], edges: [EdgeDeclaration] = []) {
        self.file = file
        self.nodes = nodes
        self.edges = edges
    }
}

func formatNumber(_ v: Double) -> String {
    if v == v.rounded(), abs(v) < 1e15 { return String(Int64(v)) }
    // 12 significant digits: 200 µs in ms reads 0.2, not 0.19999999999999998.
    var s = String(Double(String(format: "%.12g", v)) ?? v)
    if s.hasSuffix(".0") { s.removeLast(2) }
    return s
}
