import CPluginGuard
import CSpeechGraphPlugin
import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Opens plugin files in this process when a graph first makes one of their nodes, once per path. One
/// loader per catalog (no process-wide registry of its own; the dynamic linker's is the process's).
public final class PluginLoader: Sendable {
    private let libraries = Mutex<[String: PluginLibrary]>([:])

    public init() {}

    func library(_ path: String) throws -> PluginLibrary {
        try libraries.withLock { open in
            if let library = open[path] { return library }
            let library = try PluginLibrary(path: path)
            open[path] = library
            return library
        }
    }
}

extension NodeManifest {
    /// The node type: its descriptor from the manifest, and a factory that opens the plugin file when the
    /// first node is made.
    public func nodeType(path: String, loader: PluginLoader) -> NodeType {
        let manifest = self
        return NodeType(descriptor(origin: path)) { context in
            let library: PluginLibrary
            do { library = try loader.library(path) } catch let error as PluginError {
                // It passed its check in a child process, and fails here (a library it needs has gone since).
                throw SpeechGraphError("plugin \(path) cannot be used: \(error)")
            }
            guard let cls = library.nodeClass(manifest.typeName) else {
                throw SpeechGraphError("plugin \(path) no longer offers node type '\(manifest.typeName)'")
            }
            switch manifest.kind {
            case .audio:
                return try PluginAudioNode(
                    library: library, cls: cls, manifest: manifest, path: path, context: context)
            case .event:
                return try PluginEventNode(
                    library: library, cls: cls, manifest: manifest, path: path, context: context)
            }
        }
    }
}

/// C strings and values that live as long as one call into a plugin.
struct CValues: ~Copyable {
    private var strings: [UnsafeMutablePointer<CChar>] = []
    private(set) var values: UnsafeMutablePointer<sg_value>
    let count: Int

    init(_ fields: [(String, ParameterValue)]) {
        count = fields.count
        values = .allocate(capacity: max(1, fields.count))
        for (i, (name, value)) in fields.enumerated() {
            var v = sg_value()
            v.name = UnsafePointer(keep(name))
            switch value {
            case .number(let n):
                v.type = UInt32(SG_VALUE_NUMBER.rawValue)
                v.number = n
            case .integer(let n):
                v.type = UInt32(SG_VALUE_INTEGER.rawValue)
                v.integer = Int64(n)
                v.number = Double(n)
            case .boolean(let b):
                v.type = UInt32(SG_VALUE_BOOLEAN.rawValue)
                v.integer = b ? 1 : 0
                v.number = b ? 1 : 0
            case .string(let s):
                v.type = UInt32(SG_VALUE_STRING.rawValue)
                v.string = UnsafePointer(keep(s))
            }
            (values + i).initialize(to: v)
        }
    }

    mutating func keep(_ s: String) -> UnsafeMutablePointer<CChar> {
        let p = strdup(s)!
        strings.append(p)
        return p
    }

    deinit {
        for p in strings { free(p) }
        values.deallocate()
    }
}

/// Reads the values a plugin hands the host back into parameter values.
func parameterValues(_ values: UnsafePointer<sg_value>?, _ count: UInt32) -> [String: EventValue] {
    guard let values, count > 0, count <= 256 else { return [:] }
    var out: [String: EventValue] = [:]
    for i in 0..<Int(count) {
        let v = values[i]
        guard let name = v.name else { continue }
        let value: EventValue
        switch v.type {
        case UInt32(SG_VALUE_INTEGER.rawValue): value = .integer(Int(v.integer))
        case UInt32(SG_VALUE_BOOLEAN.rawValue): value = .boolean(v.integer != 0)
        case UInt32(SG_VALUE_STRING.rawValue): value = .string(v.string.map { String(cString: $0) } ?? "")
        default: value = .number(v.number)
        }
        out[String(cString: name)] = value
    }
    return out
}

/// What every plugin node does: make the C instance with its configuration, collect its warnings, free it.
/// Every call into the plugin is marked (`guarded`), so that a crash in it names the node and the call.
public class PluginNodeBase {
    let library: PluginLibrary
    let cls: UnsafePointer<sg_node_class>
    let name: String
    /// "node 'g' (gate, plugin /path/gate.so)": what a crash inside one of its calls prints (CPluginGuard).
    let crashLabel: UnsafeMutablePointer<CChar>
    private(set) var host: UnsafeMutablePointer<sg_host>?
    var instance: UnsafeMutableRawPointer?
    /// Its warnings: `host->warn` and refused emits may come from any thread the plugin calls from.
    private let collected = Mutex<[String]>([])

    init(
        library: PluginLibrary, cls: UnsafePointer<sg_node_class>, typeName: String, path: String,
        context: NodeContext
    ) throws {
        self.library = library
        self.cls = cls
        name = context.config.name
        crashLabel = strdup("node '\(name)' (\(typeName), plugin \(path))")!
        sg_guard_install()
        let host = UnsafeMutablePointer<sg_host>.allocate(capacity: 1)
        self.host = host
        host.initialize(to: sg_host())
        host.pointee.abi = sg_abi_version(major: UInt32(SG_ABI_MAJOR), minor: UInt32(SG_ABI_MINOR))
        host.pointee.warn = { context, message in
            guard let context, let message else { return }
            Unmanaged<PluginNodeBase>.fromOpaque(context).takeUnretainedValue().note(String(cString: message))
        }
        host.pointee.emit = { context, port, kind, time, fields, count in
            guard let context else { return -1 }
            let node = Unmanaged<PluginNodeBase>.fromOpaque(context).takeUnretainedValue()
            return node.emitted(port: Int(port), kind: kind.map { String(cString: $0) }, time: time, fields, count)
        }
        host.pointee.context = Unmanaged.passUnretained(self).toOpaque()
        let config = CValues(context.config.values.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        var c = sg_config()
        let nodeName = strdup(name)!
        defer { free(nodeName) }
        c.node_name = UnsafePointer(nodeName)
        c.values = UnsafePointer(config.values)
        c.value_count = UInt32(config.count)
        var error = [CChar](repeating: 0, count: 512)
        var made: UnsafeMutableRawPointer?
        if let create = cls.pointee.create {
            library.mainThread {
                made = Self.guarded(crashLabel, SG_GUARD_CREATE) { create(host, &c, &error, error.count) }
            }
        }
        guard let made else {
            self.host = nil
            host.deallocate()
            throw SpeechGraphError(
                "could not be made: \(Self.sentence(error, or: "its plugin gave no reason"))")
        }
        instance = made
    }

    /// Runs `body`, a call into the plugin, with the calling thread marked as inside `call` of this node.
    @inline(__always)
    static func guarded<T>(_ label: UnsafePointer<CChar>, _ call: sg_guard_call, _ body: () throws -> T) rethrows
        -> T
    {
        let previous = sg_guard_enter(label, call)
        defer { sg_guard_leave(previous) }
        return try body()
    }

    @inline(__always)
    func guarded<T>(_ call: sg_guard_call, _ body: () throws -> T) rethrows -> T {
        try Self.guarded(crashLabel, call, body)
    }

    static func sentence(_ buffer: [CChar], or fallback: String) -> String {
        let text = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? fallback : text
    }

    /// An event nodes emits through the host; audio nodes cannot.
    func emitted(port: Int, kind: String?, time: Double, _ fields: UnsafePointer<sg_value>?, _ count: UInt32)
        -> Int32
    { -1 }

    /// The plugin's warnings (the graph names the node).
    public var warnings: [String] { collected.withLock { $0 } }

    /// A warning for the end of the run: each text once, 100 at most.
    func note(_ text: String) {
        collected.withLock { all in
            if !all.contains(text), all.count < 100 { all.append(text) }
        }
    }

    /// The plugin's `reset`, if it has one.
    func reset() {
        if let instance, let reset = cls.pointee.reset { guarded(SG_GUARD_RESET) { reset(instance) } }
    }

    public func close() {
        if let instance { Self.destroy(instance, cls: cls, library: library, label: crashLabel) }
        instance = nil
    }

    /// The plugin's `destroy` of `instance`, as a `[main-thread]` call.
    static func destroy(
        _ instance: UnsafeMutableRawPointer, cls: UnsafePointer<sg_node_class>, library: PluginLibrary,
        label: UnsafePointer<CChar>
    ) {
        guard let destroy = cls.pointee.destroy else { return }
        library.mainThread { guarded(label, SG_GUARD_DESTROY) { destroy(instance) } }
    }

    /// Gives the C instance away (to the real-time thread): this object will neither call nor free it.
    func handOff() -> (instance: UnsafeMutableRawPointer?, host: UnsafeMutablePointer<sg_host>?) {
        defer {
            instance = nil
            host = nil
        }
        // The instance may warn from the real-time thread no more: its host context would outlive us.
        host?.pointee.warn = { _, _ in }
        host?.pointee.emit = { _, _, _, _, _, _ in -1 }
        return (instance, host)
    }

    deinit {
        close()
        host?.deallocate()
        free(crashLabel)
    }
}

/// The C pointers a real-time processor's release frees. Unchecked: used once, after the real-time thread
/// stopped calling the instance.
struct HandedOff: @unchecked Sendable {
    var library: PluginLibrary
    var cls: UnsafePointer<sg_node_class>
    var instance: UnsafeMutableRawPointer?
    var host: UnsafeMutablePointer<sg_host>?
    /// What the real-time thread calls: the plugin's `process` and instance, and its own copy of the crash label.
    var processor: UnsafeMutablePointer<sg_guarded_processor>
}

/// An audio node from a plugin (SG_NODE_AUDIO): `process` on every block, into a buffer sized when the
/// graph was made. A real-time safe one whose input is a jack.input's output, and that output's only
/// consumer, runs in the JACK process callback instead; here it then passes the processed audio on.
public final class PluginAudioNode: PluginNodeBase, GraphNode {
    private let outputFormat: AudioFormat
    private let output: UnsafeMutablePointer<Float>
    private let maxFrames: Int
    /// Its `process` runs on the audio server's real-time thread.
    public private(set) var isHostedInRealtime = false
    /// What the plugin writes is cleaned as a source's audio is: a NaN from a plugin must not reach the nodes
    /// after it (in the real-time thread, the jack.input node cleans what the plugin made).
    private var sampleGuard = SampleGuard()

    public override var warnings: [String] {
        super.warnings + (sampleGuard.warning.map { ["its output: \($0)"] } ?? [])
    }

    init(
        library: PluginLibrary, cls: UnsafePointer<sg_node_class>, manifest: NodeManifest, path: String,
        context: NodeContext
    ) throws {
        // Its one audio input and one audio output (the manifest checked that), whatever their names.
        let inName = manifest.ports.first { $0.isAudio && $0.isInput }?.name ?? "in"
        let outName = manifest.ports.first { $0.isAudio && !$0.isInput }?.name ?? "out"
        guard let input = context.inputFormats[inName], let out = context.outputFormats[outName] else {
            throw SpeechGraphError("its audio input '\(inName)' is not connected")
        }
        let realtimeSafe = manifest.realtimeSafe
        outputFormat = out
        maxFrames = max(1, context.maxBlockFrames)
        output = .allocate(capacity: maxFrames * out.channelCount)
        output.initialize(repeating: 0, count: maxFrames * out.channelCount)
        try super.init(library: library, cls: cls, typeName: manifest.typeName, path: path, context: context)
        var setup = sg_audio_setup(
            sample_rate: UInt32(input.sampleRate), input_channels: UInt32(input.channelCount),
            output_channels: UInt32(out.channelCount), max_frames: UInt32(maxFrames))
        var error = [CChar](repeating: 0, count: 512)
        if let prepare = cls.pointee.prepare,
            library.mainThread({ guarded(SG_GUARD_PREPARE, { prepare(instance, &setup, &error, error.count) }) }) != 0
        {
            close()
            throw SpeechGraphError(
                "could not be prepared: \(Self.sentence(error, or: "its plugin gave no reason"))")
        }
        // Where it runs is the plan's (GraphPlanner.place): in the process callback of the jack.input feeding it
        // alone, when it is real-time safe; on the graph thread otherwise.
        if case .inCallback(let hostNode) = context.placement {
            guard realtimeSafe, let process = cls.pointee.process, let host = context.realtimeHost
            else {
                close()
                throw SpeechGraphError("was placed in \(hostNode)'s process callback, which cannot run it")
            }
            // Called through sg_guarded_process, which marks the real-time thread (no allocation, no lock).
            let guardedProcessor = UnsafeMutablePointer<sg_guarded_processor>.allocate(capacity: 1)
            guardedProcessor.initialize(
                to: sg_guarded_processor(process: process, instance: instance, node: UnsafePointer(strdup(crashLabel))))
            let given = HandedOff(
                library: library, cls: cls, instance: instance, host: self.host, processor: guardedProcessor)
            let processor = RealtimeProcessor(
                function: sg_guarded_process, instance: UnsafeMutableRawPointer(guardedProcessor),
                channels: input.channelCount, maxFrames: maxFrames,
                release: {
                    if let instance = given.instance {
                        Self.destroy(
                            instance, cls: given.cls, library: given.library, label: given.processor.pointee.node)
                    }
                    given.host?.deallocate()
                    Self.free(given.processor)
                })
            guard host.host(processor) else {
                Self.free(guardedProcessor)
                close()
                throw SpeechGraphError("was placed in \(hostNode)'s process callback, which refused it")
            }
            _ = handOff()
            isHostedInRealtime = true
        }
    }

    deinit { output.deallocate() }

    /// Frees what `init` made for the real-time thread: the processor and its copy of the crash label.
    private static func free(_ processor: UnsafeMutablePointer<sg_guarded_processor>) {
        Glibc.free(UnsafeMutablePointer(mutating: processor.pointee.node))
        processor.deallocate()
    }

    public func process(_ block: AudioBlock, port: Int, output next: NodeOutput) throws {
        // Processed in the real-time thread already.
        if isHostedInRealtime { return try next.emit(block) }
        guard let process = cls.pointee.process, let base = block.samples.baseAddress else { return }
        var start = 0
        let frames = block.frameCount
        let inChannels = block.format.channelCount
        while start < frames {
            let n = min(maxFrames, frames - start)
            guarded(SG_GUARD_PROCESS) { process(instance, base + start * inChannels, output, UInt32(n)) }
            sampleGuard.clean(
                UnsafeMutableBufferPointer(start: output, count: n * outputFormat.channelCount),
                channels: outputFormat.channelCount)
            try next.emit(
                AudioBlock(
                    samples: UnsafeBufferPointer(start: output, count: n * outputFormat.channelCount),
                    format: outputFormat, startFrame: block.startFrame + Int64(start)))
            start += n
        }
    }

    public func discontinuity(port: Int, output: NodeOutput) throws {
        reset()
        try output.emitDiscontinuity()
    }

    public func finish(output: NodeOutput) throws {
        reset()
    }
}

/// An event node from a plugin (SG_NODE_EVENT): events in through `handle_event`, its own events out
/// through the host's `emit`, on the graph thread.
final class PluginEventNode: PluginNodeBase, GraphNode {
    private let manifest: NodeManifest
    private var current: NodeOutput?
    private var emitError: (any Error)?

    init(
        library: PluginLibrary, cls: UnsafePointer<sg_node_class>, manifest: NodeManifest, path: String,
        context: NodeContext
    ) throws {
        self.manifest = manifest
        try super.init(library: library, cls: cls, typeName: manifest.typeName, path: path, context: context)
    }

    override func emitted(port: Int, kind: String?, time: Double, _ fields: UnsafePointer<sg_value>?, _ count: UInt32)
        -> Int32
    {
        // A refused event is dropped: said at the end of the run (the plugin may not check what emit returns).
        if let refusal = manifest.emitRefusal(port: port, kind: kind) {
            note("\(refusal): the event was dropped")
            return -1
        }
        guard let output = current, let kind else {
            note("it emitted '\(kind ?? "")' outside handle_event and reset: the event was dropped")
            return -1
        }
        let event = CustomEvent(
            kind: EventKind(kind), node: name, time: time.isFinite ? time : nil, fields: parameterValues(fields, count))
        // The nodes downstream run inside this call: a crash there is not the plugin's.
        let mark = sg_guard_enter(nil, SG_GUARD_HANDLE_EVENT)
        defer { sg_guard_leave(mark) }
        do { try output.emit(GraphEvent(event), port: port) } catch {
            emitError = error
            return -1
        }
        return 0
    }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        guard let handle = cls.pointee.handle_event else { return }
        var values = CValues(Self.fields(of: event).sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        var e = Self.cEvent(event, json: JSONLines.line(for: event), &values)
        var error = [CChar](repeating: 0, count: 512)
        current = output
        let status = guarded(SG_GUARD_HANDLE_EVENT) { handle(instance, UInt32(port), &e, &error, error.count) }
        current = nil
        if let emitError {
            self.emitError = nil
            throw emitError
        }
        if status != 0 {
            throw SpeechGraphError("node '\(name)' stopped: \(Self.sentence(error, or: "its plugin gave no reason"))")
        }
    }

    func finish(output: NodeOutput) throws {
        current = output
        reset()
        current = nil
        if let emitError { throw emitError }
    }

    /// The event as `sg_event`; its strings live in `values` (which holds its fields).
    static func cEvent(_ event: GraphEvent, json: String, _ values: inout CValues) -> sg_event {
        var e = sg_event()
        e.kind = UnsafePointer(values.keep(event.kind.rawValue))
        e.node = UnsafePointer(values.keep(event.node))
        e.time = .nan
        e.end_time = .nan
        switch event {
        case .result(let t):
            e.time = t.range.start
            e.end_time = t.range.end
            e.text = UnsafePointer(values.keep(t.text))
            e.is_final = t.isFinal ? 1 : 0
            e.utterance = Int32(clamping: t.utterance)
        case .speechStarted(_, let time), .speechEnded(_, let time), .speechPaused(_, let time),
            .speechResumed(_, let time), .level(_, let time, _, _):
            e.time = time
        case .gap(_, let range, _):
            e.time = range.start
            e.end_time = range.end
        case .noSpeech(_, let time):
            e.time = time
        case .warning(_, let time, _):
            e.time = time ?? .nan
        case .custom(let c):
            e.time = c.time ?? .nan
        case .availability: break
        }
        e.fields = UnsafePointer(values.values)
        e.field_count = UInt32(values.count)
        e.json = UnsafePointer(values.keep(json))
        return e
    }

    /// The flat fields of an event, as a C plugin sees them beside its JSON form.
    static func fields(of event: GraphEvent) -> [String: EventValue] {
        switch event {
        case .result(let t):
            return [
                "text": .string(t.text), "isFinal": .boolean(t.isFinal), "utterance": .integer(t.utterance),
                "start": .number(t.range.start), "end": .number(t.range.end), "rejected": .boolean(t.rejected),
            ]
        case .gap(_, _, let reason): return ["reason": .string(reason)]
        case .availability(_, let available, let reason):
            return ["isAvailable": .boolean(available), "reason": .string(reason)]
        case .warning(_, _, let reason): return ["reason": .string(reason)]
        case .custom(let c): return c.fields
        default: return [:]
        }
    }
}
