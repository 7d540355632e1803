// SpeechGraphPluginKit: write a speechgraph plugin in Swift. The plugin is a dynamic library product that
// depends on this target; only the C ABI (speechgraph/plugin.h) crosses into the host, so the host and the
// plugin share no Swift types (docs/plugins.md).
//
//     final class Hello: EventNode {
//         static let descriptor = NodeTypeDescriptor(typeName: "hello", summary: "...", ports: [...])
//         init(config: PluginConfig, host: PluginHost) throws { ... }
//         func handle(_ event: PluginEvent, port: Int) throws { try host.emit("greeting", fields: [...]) }
//     }
//     let plugin = Plugin(name: "hello", version: "1.0.0", description: "...", nodes: [Hello.self])
//     @_cdecl("speechgraph_plugin_entry") public func entry() -> UnsafeRawPointer { plugin.entry }
@_exported import CSpeechGraphPlugin
import SpeechGraphPluginABI
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A value of a parameter or of an event field.
public enum PluginValue: Sendable, Equatable {
    case number(Double)
    case integer(Int)
    case boolean(Bool)
    case string(String)

    public var string: String? {
        if case .string(let s) = self { return s }
        return nil
    }
    public var number: Double? {
        switch self {
        case .number(let n): return n
        case .integer(let n): return Double(n)
        default: return nil
        }
    }
    public var bool: Bool? {
        if case .boolean(let b) = self { return b }
        return nil
    }
}

/// A failure to tell the user: thrown from `init` or `handle`, it becomes the node's error message.
public struct PluginFailure: Error, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

/// One port, as speechgraph/plugin.h's sg_port_descriptor.
public struct PluginPort: Sendable {
    var name: String
    var input: Bool
    var kinds: [String]?
    var required: Bool
    var doc: String

    /// An event input taking `kinds` (`nil`: any kind).
    public static func eventInput(_ name: String = "in", accepts kinds: [String]?, required: Bool = true, doc: String)
        -> PluginPort
    { PluginPort(name: name, input: true, kinds: kinds, required: required, doc: doc) }
    /// An event output emitting `kinds`.
    public static func eventOutput(_ name: String = "events", emits kinds: [String], doc: String) -> PluginPort {
        PluginPort(name: name, input: false, kinds: kinds, required: false, doc: doc)
    }
}

/// One parameter, as sg_param_descriptor: the single place its default, range, unit and doc live.
public struct PluginParameter: Sendable {
    var name: String
    var type: sg_param_type
    var unit: String?
    var number: Double = 0
    var string: String?
    var range: ClosedRange<Double> = 0...0
    var choices: [String] = []
    var required = false
    var doc: String

    public static func string(_ name: String, default value: String?, required: Bool = false, doc: String)
        -> PluginParameter
    { PluginParameter(name: name, type: SG_PARAM_STRING, string: value, required: required, doc: doc) }
    public static func choice(_ name: String, _ choices: [String], default value: String, doc: String)
        -> PluginParameter
    { PluginParameter(name: name, type: SG_PARAM_CHOICE, string: value, choices: choices, doc: doc) }
    public static func boolean(_ name: String, default value: Bool, doc: String) -> PluginParameter {
        PluginParameter(name: name, type: SG_PARAM_BOOLEAN, number: value ? 1 : 0, doc: doc)
    }
    public static func number(_ name: String, default value: Double, range: ClosedRange<Double>, doc: String)
        -> PluginParameter
    { PluginParameter(name: name, type: SG_PARAM_NUMBER, number: value, range: range, doc: doc) }
    public static func integer(_ name: String, default value: Int, range: ClosedRange<Int>, doc: String)
        -> PluginParameter
    {
        PluginParameter(
            name: name, type: SG_PARAM_INTEGER, number: Double(value),
            range: Double(range.lowerBound)...Double(range.upperBound), doc: doc)
    }
    /// A number with a unit ("ms", "s", "Hz", "kHz", "dB"); the node gets it in seconds, hertz or decibels.
    public static func quantity(
        _ name: String, default value: Double, _ unit: String, range: ClosedRange<Double>, doc: String
    ) -> PluginParameter {
        PluginParameter(name: name, type: SG_PARAM_QUANTITY, unit: unit, number: value, range: range, doc: doc)
    }
}

/// Everything the host knows of an event node type without running it.
public struct NodeTypeDescriptor: Sendable {
    public enum Category: UInt32, Sendable { case input, converter, analysis, recognizer, sink }
    var typeName: String
    var summary: String
    var doc: String
    var category: Category
    var ports: [PluginPort]
    var parameters: [PluginParameter]
    var eventKinds: [(name: String, doc: String)]

    public init(
        typeName: String, summary: String, doc: String = "", category: Category = .analysis, ports: [PluginPort],
        parameters: [PluginParameter] = [], eventKinds: [(name: String, doc: String)] = []
    ) {
        self.typeName = typeName
        self.summary = summary
        self.doc = doc
        self.category = category
        self.ports = ports
        self.parameters = parameters
        self.eventKinds = eventKinds
    }
}

/// A node's parameters, defaults filled in by the host, quantities in seconds, hertz or decibels.
public struct PluginConfig: Sendable {
    public var nodeName: String
    public var values: [String: PluginValue]
    public subscript(name: String) -> PluginValue? { values[name] }
}

/// An event arriving at an event node.
public struct PluginEvent: Sendable {
    public var kind: String
    public var node: String
    /// Audio time in seconds: the moment, or a result's start.
    public var time: Double?
    public var endTime: Double?
    /// Results: the transcript.
    public var text: String?
    public var isFinal: Bool
    public var utterance: Int
    public var fields: [String: PluginValue]
    /// The event's JSON Lines form (docs/events.md).
    public var json: String

    /// Results: speech outside the recognizer's grammar or domain model, read as the nearest thing in it. A
    /// voice-control node should not act on it (docs/events.md, `rejected`).
    public var isRejected: Bool { fields["rejected"] == .boolean(true) }
}

/// What a node may ask of the host. Valid from `init` until the node is released.
public struct PluginHost: @unchecked Sendable {
    // A pointer the host keeps valid for the node's life; only used on the threads the header allows.
    let host: UnsafePointer<sg_host>

    /// Emits an event of `kind` (one its output port declares) on event output `port`. [graph-thread]
    public func emit(_ kind: String, port: Int = 0, time: Double? = nil, fields: [String: PluginValue] = [:]) throws {
        let values = CValueList(fields.sorted { $0.key < $1.key })
        defer { values.free() }
        let status = kind.withCString {
            host.pointee.emit(
                host.pointee.context, UInt32(port), $0, time ?? .nan, values.pointer, UInt32(fields.count))
        }
        if status != 0 { throw PluginFailure("the host refused event '\(kind)' on output \(port)") }
    }

    /// Tells the user something that did not stop the node.
    public func warn(_ message: String) { message.withCString { host.pointee.warn(host.pointee.context, $0) } }
}

/// An event node written in Swift: events in, events out, on the graph thread.
public protocol EventNode: AnyObject {
    static var descriptor: NodeTypeDescriptor { get }
    init(config: PluginConfig, host: PluginHost) throws
    /// An event on event input `port`.
    func handle(_ event: PluginEvent, port: Int) throws
    /// The stream ended: emit what is held, forget the stream.
    func reset()
}

extension EventNode {
    public func reset() {}
}

/// sg_value arrays built from Swift values, freed by the caller.
struct CValueList {
    let pointer: UnsafeMutablePointer<sg_value>
    let strings: [UnsafeMutablePointer<CChar>]

    init(_ fields: [(key: String, value: PluginValue)]) {
        pointer = .allocate(capacity: max(1, fields.count))
        var strings: [UnsafeMutablePointer<CChar>] = []
        for (i, field) in fields.enumerated() {
            var v = sg_value()
            let name = strdup(field.key)!
            strings.append(name)
            v.name = UnsafePointer(name)
            switch field.value {
            case .number(let n):
                v.type = SG_VALUE_NUMBER.rawValue
                v.number = n
            case .integer(let n):
                v.type = SG_VALUE_INTEGER.rawValue
                v.integer = Int64(n)
            case .boolean(let b):
                v.type = SG_VALUE_BOOLEAN.rawValue
                v.integer = b ? 1 : 0
            case .string(let s):
                let p = strdup(s)!
                strings.append(p)
                v.type = SG_VALUE_STRING.rawValue
                v.string = UnsafePointer(p)
            }
            (pointer + i).initialize(to: v)
        }
        self.strings = strings
    }

    func free() {
        for s in strings { Glibc.free(s) }
        pointer.deallocate()
    }
}

func readValues(_ values: UnsafePointer<sg_value>?, _ count: UInt32) -> [String: PluginValue] {
    guard let values else { return [:] }
    var out: [String: PluginValue] = [:]
    for i in 0..<Int(count) {
        let v = values[i]
        guard let name = v.name else { continue }
        switch v.type {
        case SG_VALUE_INTEGER.rawValue: out[String(cString: name)] = .integer(Int(v.integer))
        case SG_VALUE_BOOLEAN.rawValue: out[String(cString: name)] = .boolean(v.integer != 0)
        case SG_VALUE_STRING.rawValue: out[String(cString: name)] = .string(v.string.map { String(cString: $0) } ?? "")
        default: out[String(cString: name)] = .number(v.number)
        }
    }
    return out
}

func copyError(_ message: String, _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int) {
    guard let buffer, size > 0 else { return }
    let bytes = Array(message.utf8.prefix(size - 1))
    for (i, b) in bytes.enumerated() { buffer[i] = CChar(bitPattern: b) }
    buffer[bytes.count] = 0
}

/// A live node and the host it was given.
final class NodeBox {
    let node: any EventNode
    init(_ node: any EventNode) { self.node = node }
}

/// The node types of this plugin, by slot: `create` is a C function without context, so each slot has one.
let slots = Mutex<[Slot]>([])

/// A node type in a slot. Unchecked: a metatype is an immutable value, safe to share between threads.
struct Slot: @unchecked Sendable {
    let type: any EventNode.Type
}

func create(
    slot: Int, _ host: UnsafePointer<sg_host>?, _ config: UnsafePointer<sg_config>?,
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int
) -> UnsafeMutableRawPointer? {
    guard let host, let config else { return nil }
    guard let type = slots.withLock({ slot < $0.count ? $0[slot].type : nil }) else { return nil }
    let c = PluginConfig(
        nodeName: config.pointee.node_name.map { String(cString: $0) } ?? "",
        values: readValues(config.pointee.values, config.pointee.value_count))
    do {
        let node = try type.init(config: c, host: PluginHost(host: host))
        return Unmanaged.passRetained(NodeBox(node)).toOpaque()
    } catch let failure as PluginFailure {
        copyError(failure.message, buffer, size)
    } catch {
        copyError("\(error)", buffer, size)
    }
    return nil
}

typealias CreateFunction =
    @convention(c) (
        UnsafePointer<sg_host>?, UnsafePointer<sg_config>?, UnsafeMutablePointer<CChar>?, Int
    ) -> UnsafeMutableRawPointer?

/// One C `create` per slot.
let creators: [CreateFunction] = [
    { create(slot: 0, $0, $1, $2, $3) }, { create(slot: 1, $0, $1, $2, $3) }, { create(slot: 2, $0, $1, $2, $3) },
    { create(slot: 3, $0, $1, $2, $3) }, { create(slot: 4, $0, $1, $2, $3) }, { create(slot: 5, $0, $1, $2, $3) },
    { create(slot: 6, $0, $1, $2, $3) }, { create(slot: 7, $0, $1, $2, $3) },
]

/// A plugin: its name and its node types, as the C structures the host reads. Make one, as a global `let`,
/// and return its `entry` from `speechgraph_plugin_entry`.
public final class Plugin: @unchecked Sendable {
    // Built once in `init` and never changed: the host only reads it.
    private let plugin: UnsafeMutablePointer<sg_plugin>

    /// At most 8 node types per Swift plugin.
    public init(name: String, version: String, description: String, url: String? = nil, nodes: [any EventNode.Type]) {
        precondition(nodes.count <= creators.count, "a Swift plugin offers at most \(creators.count) node types")
        let first = slots.withLock { slots in
            let first = slots.count
            slots += nodes.map(Slot.init)
            return first
        }
        let classes = UnsafeMutablePointer<UnsafePointer<sg_node_class>?>.allocate(capacity: nodes.count)
        for (i, type) in nodes.enumerated() {
            let cls = UnsafeMutablePointer<sg_node_class>.allocate(capacity: 1)
            cls.initialize(to: sg_node_class())
            cls.pointee.descriptor = UnsafePointer(Self.describe(type.descriptor))
            cls.pointee.create = creators[first + i]
            cls.pointee.handle_event = { node, port, event, buffer, size in
                guard let node, let event else { return -1 }
                let box = Unmanaged<NodeBox>.fromOpaque(node).takeUnretainedValue()
                let e = event.pointee
                let time = e.time.isFinite ? e.time : nil
                let end = e.end_time.isFinite ? e.end_time : nil
                let pluginEvent = PluginEvent(
                    kind: e.kind.map { String(cString: $0) } ?? "", node: e.node.map { String(cString: $0) } ?? "",
                    time: time, endTime: end, text: e.text.map { String(cString: $0) }, isFinal: e.is_final != 0,
                    utterance: Int(e.utterance), fields: readValues(e.fields, e.field_count),
                    json: e.json.map { String(cString: $0) } ?? "")
                do {
                    try box.node.handle(pluginEvent, port: Int(port))
                    return 0
                } catch let failure as PluginFailure {
                    copyError(failure.message, buffer, size)
                } catch {
                    copyError("\(error)", buffer, size)
                }
                return -1
            }
            cls.pointee.reset = { node in
                guard let node else { return }
                Unmanaged<NodeBox>.fromOpaque(node).takeUnretainedValue().node.reset()
            }
            cls.pointee.destroy = { node in
                guard let node else { return }
                Unmanaged<NodeBox>.fromOpaque(node).release()
            }
            (classes + i).initialize(to: UnsafePointer(cls))
        }
        plugin = .allocate(capacity: 1)
        plugin.initialize(to: sg_plugin())
        plugin.pointee.name = Self.keep(name)
        plugin.pointee.version = Self.keep(version)
        plugin.pointee.description = Self.keep(description)
        plugin.pointee.url = url.map(Self.keep)
        plugin.pointee.node_classes = UnsafePointer(classes)
        plugin.pointee.node_class_count = UInt32(nodes.count)
    }

    /// What `speechgraph_plugin_entry` returns.
    public var entry: UnsafeRawPointer { UnsafeRawPointer(plugin) }

    static func keep(_ s: String) -> UnsafePointer<CChar> { UnsafePointer(strdup(s)!) }

    static func keepList(_ list: [String]?) -> UnsafePointer<UnsafePointer<CChar>?>? {
        guard let list else { return nil }
        let p = UnsafeMutablePointer<UnsafePointer<CChar>?>.allocate(capacity: list.count + 1)
        for (i, s) in list.enumerated() { (p + i).initialize(to: keep(s)) }
        (p + list.count).initialize(to: nil)
        return UnsafePointer(p)
    }

    static func describe(_ d: NodeTypeDescriptor) -> UnsafeMutablePointer<sg_node_descriptor> {
        let ports = UnsafeMutablePointer<sg_port_descriptor>.allocate(capacity: max(1, d.ports.count))
        for (i, p) in d.ports.enumerated() {
            var c = sg_port_descriptor()
            c.name = keep(p.name)
            c.direction = p.input ? SG_PORT_INPUT.rawValue : SG_PORT_OUTPUT.rawValue
            c.kind = SG_PORT_EVENTS.rawValue
            c.event_kinds = keepList(p.kinds)
            c.required = p.required ? 1 : 0
            c.doc = keep(p.doc)
            (ports + i).initialize(to: c)
        }
        let params = UnsafeMutablePointer<sg_param_descriptor>.allocate(capacity: max(1, d.parameters.count))
        for (i, p) in d.parameters.enumerated() {
            var c = sg_param_descriptor()
            c.name = keep(p.name)
            c.type = p.type.rawValue
            c.unit = p.unit.map(keep)
            c.number_default = p.number
            c.string_default = p.string.map(keep)
            c.min = p.range.lowerBound
            c.max = p.range.upperBound
            c.choices = p.choices.isEmpty ? nil : keepList(p.choices)
            c.required = p.required ? 1 : 0
            c.doc = keep(p.doc)
            (params + i).initialize(to: c)
        }
        let kinds = UnsafeMutablePointer<sg_event_kind_descriptor>.allocate(capacity: max(1, d.eventKinds.count))
        for (i, k) in d.eventKinds.enumerated() {
            (kinds + i).initialize(to: sg_event_kind_descriptor(name: keep(k.name), doc: keep(k.doc)))
        }
        let c = UnsafeMutablePointer<sg_node_descriptor>.allocate(capacity: 1)
        c.initialize(to: sg_node_descriptor())
        c.pointee.type_name = keep(d.typeName)
        c.pointee.summary = keep(d.summary)
        c.pointee.doc = keep(d.doc)
        c.pointee.kind = SG_NODE_EVENT.rawValue
        c.pointee.category = d.category.rawValue
        c.pointee.ports = UnsafePointer(ports)
        c.pointee.port_count = UInt32(d.ports.count)
        c.pointee.params = UnsafePointer(params)
        c.pointee.param_count = UInt32(d.parameters.count)
        c.pointee.event_kinds = UnsafePointer(kinds)
        c.pointee.event_kind_count = UInt32(d.eventKinds.count)
        return c
    }
}
