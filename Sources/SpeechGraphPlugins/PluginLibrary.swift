import CSpeechGraphPlugin
import Foundation
import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The plugin ABI this host speaks (speechgraph/plugin.h).
public enum PluginABI {
    public static let major = Int(SG_ABI_MAJOR)
    public static let minor = Int(SG_ABI_MINOR)
    public static var text: String { "\(major).\(minor)" }
}

/// A plugin file opened in this process: its handle and its `sg_plugin`. Opened once per path by a
/// ``PluginLoader``, never closed (a plugin written in Swift cannot be unloaded safely).
final class PluginLibrary: Sendable {
    let path: String
    /// Immutable after `init`; points into the plugin's own static data, valid while it is loaded.
    nonisolated(unsafe) let plugin: UnsafePointer<sg_plugin>
    /// Held around each `[main-thread]` call into the plugin (`create`, `prepare`, `destroy`): graphs are made
    /// and ended on threads of their own, and plugin.h promises that two such calls never overlap.
    private let mainThreadCalls = Mutex<Void>(())

    /// Runs `call`, a `[main-thread]` call into the plugin, never beside another.
    func mainThread<T>(_ call: () -> T) -> T { mainThreadCalls.withLock { _ in call() } }

    /// Opens `path`, checks its ABI version before calling anything in it, calls its entry point and its
    /// `init`. Throws a sentence naming what is wrong.
    init(path: String) throws {
        self.path = path
        // Loads its code, and runs its constructors: only ever first in a child process (PluginCatalog).
        if let problem = PluginError.notALibrary(path) { throw PluginError(problem) }
        // A name without a slash would be looked for on the library path, not in the current directory.
        guard let handle = dlopen(path.contains("/") ? path : "./" + path, RTLD_NOW | RTLD_LOCAL) else {
            let reason = dlerror().map { String(cString: $0) } ?? "unknown reason"
            if reason.contains("undefined symbol: __rtsan_") {
                // RealtimeSanitizer's runtime is only there when `speechgraph plugin check` preloads it.
                throw PluginError(
                    "it was built with -fsanitize=realtime, which is for `speechgraph plugin check` only: build it "
                        + "again without that flag to use it")
            }
            throw PluginError(PluginError.notLoaded + reason)
        }
        guard let abiSymbol = dlsym(handle, SG_PLUGIN_ABI_SYMBOL) else {
            throw PluginError(
                "it exports no '\(SG_PLUGIN_ABI_SYMBOL)' (not a speechgraph plugin, or built without "
                    + "SG_PLUGIN_ABI_VERSION)")
        }
        let abi = abiSymbol.assumingMemoryBound(to: sg_abi_version.self).pointee
        guard abi.major == SG_ABI_MAJOR && abi.minor <= SG_ABI_MINOR else {
            let why =
                abi.major != SG_ABI_MAJOR
                ? "its major version differs" : "its minor version is newer than this speechgraph's"
            throw PluginError(
                "it was built for plugin ABI \(abi.major).\(abi.minor), and this speechgraph speaks "
                    + "\(PluginABI.text): \(why)")
        }
        guard let entrySymbol = dlsym(handle, SG_PLUGIN_ENTRY_SYMBOL) else {
            throw PluginError("it exports no entry point '\(SG_PLUGIN_ENTRY_SYMBOL)'")
        }
        let entry = unsafeBitCast(entrySymbol, to: sg_plugin_entry_fn.self)
        guard let plugin = entry() else { throw PluginError("its entry point returned no plugin") }
        self.plugin = plugin
        if let initialize = plugin.pointee.`init`, initialize() != 0 {
            throw PluginError(PluginError.initRefused)
        }
    }

    /// The factory of node type `typeName`.
    func nodeClass(_ typeName: String) -> UnsafePointer<sg_node_class>? {
        let p = plugin.pointee
        guard let classes = p.node_classes else { return nil }
        for i in 0..<Int(p.node_class_count) {
            if let c = classes[i], let d = c.pointee.descriptor, let name = d.pointee.type_name,
                String(cString: name) == typeName
            {
                return c
            }
        }
        return nil
    }

    /// Reads and checks every descriptor: the plugin's manifest, or every problem found.
    func manifest() throws -> PluginManifest {
        let p = plugin.pointee
        var problems: [String] = []
        func text(_ s: UnsafePointer<CChar>?) -> String? { s.map { String(cString: $0) } }
        guard let name = text(p.name), !name.isEmpty else { throw PluginError("its sg_plugin has no name") }
        var nodes: [NodeManifest] = []
        if p.node_class_count == 0 || p.node_classes == nil { problems.append("it offers no node type") }
        if p.node_class_count > 1000 { problems.append("it claims \(p.node_class_count) node types") }
        if let classes = p.node_classes, p.node_class_count <= 1000 {
            for i in 0..<Int(p.node_class_count) {
                guard let c = classes[i] else {
                    problems.append("node class \(i) is NULL")
                    continue
                }
                do { nodes.append(try DescriptorReader.read(c)) } catch let error as PluginError {
                    problems.append(error.message)
                }
            }
        }
        var seen = Set<String>()
        for n in nodes where !seen.insert(n.typeName).inserted {
            problems.append("it offers node type '\(n.typeName)' twice")
        }
        guard problems.isEmpty else { throw PluginError(problems.joined(separator: "; ")) }
        return PluginManifest(
            path: path, abi: PluginABI.text, name: name, version: text(p.version) ?? "",
            description: text(p.description) ?? "", url: text(p.url), nodes: nodes)
    }

    deinit {
        plugin.pointee.deinit?()
    }
}

extension PluginError {
    /// Why the file at `path` is no shared library at all (a WAV given by mistake, a text file named .so), said
    /// as that rather than as the loader's "invalid ELF header" or "file too short"; nil for an ELF file (or
    /// one that cannot be read: the loader says why).
    public static func notALibrary(_ path: String) -> String? {
        guard let file = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? file.close() }
        guard let head = try? file.read(upToCount: 4) else { return nil }
        return head == Data([0x7F, 0x45, 0x4C, 0x46]) ? nil : "it is not a shared library (no ELF header)"
    }
}

/// Why a plugin was refused, as a sentence for the user.
public struct PluginError: Error, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }

    /// The start of the problem when the dynamic loader refuses the file (a library it needs is missing).
    static let notLoaded = "it cannot be loaded: "
    /// The problem when the plugin's `init` refuses.
    static let initRefused = "its init function refused to start"

    /// Whether a problem may go away while the file stays the same (a library it needs installed, the library
    /// path set, what its `init` looks for put in place): such a problem is not cached.
    static func mayPassLater(_ problem: String) -> Bool {
        // A library it needs that the loader cannot find (not a file that is no library at all).
        problem.hasPrefix(notLoaded) && problem.contains("cannot open shared object file") || problem == initRefused
    }
}

/// Reads one `sg_node_class` into a ``NodeManifest``, checking it against the ABI's rules.
enum DescriptorReader {
    static let maxCount: UInt32 = 256

    /// The first name that comes twice.
    static func repeated(_ names: [String]) -> String? {
        var seen = Set<String>()
        return names.first { !seen.insert($0).inserted }
    }

    static func isName(_ s: String) -> Bool {
        guard let first = s.unicodeScalars.first, ("a"..."z").contains(first) || ("A"..."Z").contains(first)
        else { return false }
        return s.count <= 64
            && s.unicodeScalars.allSatisfy {
                ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || $0 == "-"
                    || $0 == "_" || $0 == "."
            }
    }

    static func strings(_ list: UnsafePointer<UnsafePointer<CChar>?>?) -> [String]? {
        guard let list else { return nil }
        var out: [String] = []
        var i = 0
        while let s = list[i], i < 256 {
            out.append(String(cString: s))
            i += 1
        }
        return out
    }

    static func read(_ c: UnsafePointer<sg_node_class>) throws -> NodeManifest {
        let cls = c.pointee
        guard let dp = cls.descriptor else { throw PluginError("a node class has no descriptor") }
        let d = dp.pointee
        guard let nameText = d.type_name else { throw PluginError("a node descriptor has no type name") }
        let typeName = String(cString: nameText)
        var problems: [String] = []
        func fail(_ s: String) { problems.append(s) }
        if !isName(typeName) {
            fail("type name '\(typeName)' is not a name (a letter, then letters, digits, '-', '_' or '.')")
        }
        let summary = d.summary.map { String(cString: $0) } ?? ""
        if summary.isEmpty { fail("it has no summary") }
        let kind: NodeManifest.Kind
        switch d.kind {
        case UInt32(SG_NODE_AUDIO.rawValue): kind = .audio
        case UInt32(SG_NODE_EVENT.rawValue): kind = .event
        default:
            kind = .event
            fail("its kind \(d.kind) is neither SG_NODE_AUDIO nor SG_NODE_EVENT")
        }
        let categories = ["input", "converter", "analysis", "recognizer", "sink"]
        if d.category >= categories.count { fail("its category \(d.category) is not one of sg_category") }
        let knownFlags = UInt32(SG_NODE_REALTIME_SAFE)
        if d.flags & ~knownFlags != 0 { fail("its flags set bits this ABI does not define (\(d.flags))") }
        if cls.create == nil || cls.destroy == nil { fail("its class lacks create or destroy") }
        if kind == .audio && (cls.process == nil || cls.prepare == nil) {
            fail("an audio node needs prepare and process")
        }
        if kind == .event && cls.handle_event == nil { fail("an event node needs handle_event") }
        if d.flags & knownFlags != 0 && kind != .audio { fail("only an audio node can be real-time safe") }

        // Ports.
        var ports: [PortManifest] = []
        if d.port_count > maxCount || (d.port_count > 0 && d.ports == nil) {
            fail("its port list is not valid")
        } else {
            for i in 0..<Int(d.port_count) {
                let p = d.ports[i]
                let name = p.name.map { String(cString: $0) } ?? ""
                if !isName(name) { fail("port \(i) has no valid name ('\(name)')") }
                if p.direction > 1 || p.kind > 1 { fail("port '\(name)' has an unknown direction or kind") }
                let isInput = p.direction == UInt32(SG_PORT_INPUT.rawValue)
                let isAudio = p.kind == UInt32(SG_PORT_AUDIO.rawValue)
                let kinds = isAudio ? nil : strings(p.event_kinds)
                for k in kinds ?? [] where !isName(k) { fail("port '\(name)' names event kind '\(k)', not a name") }
                if isAudio && isInput && p.rate != 0 && AudioFormat.rateProblem(Int(p.rate)) != nil {
                    fail("port '\(name)' asks for \(p.rate) Hz")
                }
                if p.channels > 64 { fail("port '\(name)' asks for \(p.channels) channels (at most 64)") }
                ports.append(
                    PortManifest(
                        name: name, isInput: isInput, isAudio: isAudio, rate: Int(p.rate), channels: Int(p.channels),
                        formatOf: p.format_of.map { String(cString: $0) }, eventKinds: kinds, required: p.required != 0,
                        doc: p.doc.map { String(cString: $0) } ?? ""))
            }
        }
        if let twice = Self.repeated(ports.map(\.name)) { fail("two of its ports are named '\(twice)'") }
        let audioIn = ports.filter { $0.isAudio && $0.isInput }
        let audioOut = ports.filter { $0.isAudio && !$0.isInput }
        switch kind {
        case .audio:
            if audioIn.count != 1 || audioOut.count != 1 || ports.contains(where: { !$0.isAudio }) {
                fail("an audio node has exactly one audio input and one audio output, and no event port (ABI 1.0)")
            } else if audioOut[0].formatOf != audioIn[0].name {
                fail("its audio output must name its audio input in format_of")
            }
        case .event:
            if !audioIn.isEmpty || !audioOut.isEmpty { fail("an event node has no audio port") }
            if ports.isEmpty { fail("an event node needs at least one event port") }
        }

        // Parameters.
        var parameters: [ParameterManifest] = []
        if d.param_count > maxCount || (d.param_count > 0 && d.params == nil) {
            fail("its parameter list is not valid")
        } else {
            for i in 0..<Int(d.param_count) {
                let p = d.params[i]
                let name = p.name.map { String(cString: $0) } ?? ""
                if !isName(name) { fail("parameter \(i) has no valid name ('\(name)')") }
                let kinds: [ParameterManifest.Kind] = [.number, .integer, .boolean, .string, .choice, .quantity]
                guard p.type < kinds.count else {
                    fail("parameter '\(name)' has unknown type \(p.type)")
                    continue
                }
                let type = kinds[Int(p.type)]
                let unit = p.unit.map { String(cString: $0) }
                let required = p.required != 0
                let numeric = [.number, .integer, .quantity].contains(type)
                var m = ParameterManifest(
                    name: name, kind: type, unit: unit, numberDefault: nil, stringDefault: nil, min: nil, max: nil,
                    choices: nil, required: required, doc: p.doc.map { String(cString: $0) } ?? "")
                if type == .quantity, unit.flatMap(QuantityUnit.parse) == nil {
                    fail(
                        "parameter '\(name)' is a quantity with unit '\(unit ?? "(none)")': "
                            + "expected Hz, kHz, s, ms, us or dB"
                    )
                }
                if numeric {
                    if !p.min.isFinite || !p.max.isFinite || p.min > p.max {
                        fail("parameter '\(name)' has an empty or infinite range (\(p.min) to \(p.max))")
                    } else if !required && !(p.min...p.max).contains(p.number_default) {
                        fail(
                            "parameter '\(name)''s default \(p.number_default) "
                                + "is outside its range (\(p.min) to \(p.max))"
                        )
                    }
                    if type == .integer && p.number_default != p.number_default.rounded() {
                        fail("integer parameter '\(name)' has default \(p.number_default)")
                    }
                    m.min = p.min
                    m.max = p.max
                    m.numberDefault = p.number_default
                }
                if type == .boolean {
                    if !required && p.number_default != 0 && p.number_default != 1 {
                        fail("boolean parameter '\(name)' has default \(p.number_default): expected 0 or 1")
                    }
                    m.numberDefault = p.number_default
                }
                if type == .string || type == .choice { m.stringDefault = p.string_default.map { String(cString: $0) } }
                if type == .choice {
                    m.choices = strings(p.choices)
                    if (m.choices ?? []).isEmpty { fail("choice parameter '\(name)' offers no choices") }
                    if let twice = Self.repeated(m.choices ?? []) {
                        fail("choice parameter '\(name)' offers '\(twice)' twice")
                    }
                    if let def = m.stringDefault, !(m.choices ?? []).contains(def) {
                        fail("choice parameter '\(name)''s default '\(def)' is not one of its choices")
                    }
                    if m.stringDefault == nil && !required { fail("choice parameter '\(name)' has no default") }
                }
                parameters.append(m)
            }
        }
        if let twice = Self.repeated(parameters.map(\.name)) { fail("two of its parameters are named '\(twice)'") }

        // Event kinds it adds.
        var eventKinds: [EventKindManifest] = []
        if d.event_kind_count > maxCount || (d.event_kind_count > 0 && d.event_kinds == nil) {
            fail("its event kind list is not valid")
        } else {
            for i in 0..<Int(d.event_kind_count) {
                let k = d.event_kinds[i]
                let name = k.name.map { String(cString: $0) } ?? ""
                if !isName(name) { fail("event kind \(i) has no valid name ('\(name)')") }
                if EventKind.builtIn.contains(EventKind(name)) { fail("event kind '\(name)' is built in") }
                eventKinds.append(EventKindManifest(name: name, doc: k.doc.map { String(cString: $0) } ?? ""))
            }
        }
        guard problems.isEmpty else {
            throw PluginError("node type '\(typeName)': " + problems.joined(separator: "; "))
        }
        return NodeManifest(
            typeName: typeName, summary: summary, doc: d.doc.map { String(cString: $0) } ?? "", kind: kind,
            category: categories[Int(d.category)], realtimeSafe: d.flags & knownFlags != 0, ports: ports,
            parameters: parameters, eventKinds: eventKinds)
    }
}
