import CSpeechGraphPlugin
import Dispatch
import SpeechGraphCore

#if canImport(Glibc)
    import Glibc
#endif

/// `speechgraph plugin check`'s checks, run inside the child process that loaded the plugin: every
/// descriptor, then each node made and run with varying block sizes, rates and hostile input, parameters at
/// and beyond their range ends, reset and re-prepare, and two instances at once. Each check reports one
/// line; `run` returns whether all passed.
public struct PluginValidator {
    public typealias Report = (_ line: String) -> Void
    let report: Report
    /// Announces a check before it runs, so that the parent can name it if the plugin crashes.
    let starting: Report
    /// Type names already taken (the built-in node types): a plugin type of the same name is refused.
    let taken: Set<String>
    /// Event kinds speechgraph's own node types define: a port that names another kind, one the plugin does not
    /// add either, gets a note (a misspelling, or another plugin's kind). Empty: no notes.
    let knownKinds: Set<String>
    private(set) var failures = 0

    public init(
        taken: Set<String> = [], knownKinds: Set<String> = [], report: @escaping Report, starting: @escaping Report
    ) {
        self.taken = taken
        self.knownKinds = knownKinds
        self.report = report
        self.starting = starting
    }

    public static let blockSizes = [1, 7, 64, 1024, 4096]
    public static let rates = [8000, 16000, 44100, 48000]

    mutating func check(_ name: String, _ body: () throws -> String?) {
        starting(name)
        do {
            if let problem = try body() {
                failures += 1
                report("FAIL \(name): \(problem)")
            } else {
                report("PASS \(name)")
            }
        } catch {
            failures += 1
            report("FAIL \(name): \(error)")
        }
    }

    /// Loads `path` in this process and checks it; `false` when any check failed.
    public mutating func run(path: String) -> Bool {
        starting("loading the plugin")
        let library: PluginLibrary
        let manifest: PluginManifest
        do {
            library = try PluginLibrary(path: path)
            report("PASS ABI version and entry point")
            manifest = try library.manifest()
        } catch {
            report("FAIL loading: \(error)")
            return false
        }
        report("PASS descriptors (\(manifest.nodes.count) node type\(manifest.nodes.count == 1 ? "" : "s"))")
        report(
            "info plugin \(manifest.name) \(manifest.version) (ABI \(manifest.abi)): \(manifest.description)")
        for node in manifest.nodes {
            let rt = node.realtimeSafe ? ", real-time safe" : ""
            report("info   \(node.typeName) (\(node.kind.rawValue) node\(rt)): \(node.summary)")
            for p in node.parameters {
                report("info     \(p.name): \(p.descriptor.kind.summary) = \(p.descriptor.defaultText)")
            }
        }
        for node in manifest.nodes where taken.contains(node.typeName) {
            failures += 1
            report("FAIL \(node.typeName): the type name clashes with the built-in node type '\(node.typeName)'")
        }
        if !knownKinds.isEmpty {
            let own = Set(manifest.nodes.flatMap { $0.eventKinds.map(\.name) })
            for node in manifest.nodes {
                for port in node.ports where !port.isAudio {
                    for kind in port.eventKinds ?? [] where !knownKinds.contains(kind) && !own.contains(kind) {
                        report(
                            "note \(node.typeName): '\(port.name)' \(port.isInput ? "accepts" : "emits") '\(kind)', "
                                + "which neither speechgraph nor this plugin defines (a misspelling, or another "
                                + "plugin's kind)")
                    }
                }
            }
        }
        for node in manifest.nodes {
            guard let cls = library.nodeClass(node.typeName) else { continue }
            switch node.kind {
            case .audio: checkAudio(node, cls)
            case .event: checkEvent(node, cls)
            }
        }
        return failures == 0
    }

    // MARK: Making nodes directly through the C ABI.

    /// The parameters with their defaults, and `overrides`; required ones get a plain value.
    static func values(_ node: NodeManifest, _ overrides: [String: ParameterValue] = [:]) -> [(String, ParameterValue)]
    {
        var out: [String: ParameterValue] = [:]
        for p in node.parameters {
            if let v = p.descriptor.defaultValue {
                out[p.name] = v
            } else if p.required {
                switch p.kind {
                case .string, .choice: out[p.name] = .string(p.choices?.first ?? "hello world")
                default: out[p.name] = .number(p.min ?? 0)
                }
            }
        }
        for (k, v) in overrides { out[k] = v }
        return out.sorted { $0.key < $1.key }
    }

    /// The host a node is checked with. Its `emit` refuses what the graph's host refuses
    /// (`NodeManifest.emitRefusal`), and keeps why.
    final class TestHost {
        var host = sg_host()
        let node: NodeManifest
        /// What it emitted that a graph would refuse, each as a sentence.
        var refused: [String] = []
        /// Inside `handle_event` or `reset`, the only calls a graph takes events from.
        var inEventCall = false
        init(_ node: NodeManifest) {
            self.node = node
            host.abi = sg_abi_version(major: UInt32(SG_ABI_MAJOR), minor: UInt32(SG_ABI_MINOR))
            host.warn = { _, _ in }
            host.emit = { context, port, kind, _, _, _ in
                guard let context else { return -1 }
                let me = Unmanaged<TestHost>.fromOpaque(context).takeUnretainedValue()
                let kind = kind.map { String(cString: $0) }
                guard me.inEventCall else {
                    me.refused.append("it emitted '\(kind ?? "")' outside handle_event and reset")
                    return -1
                }
                guard let why = me.node.emitRefusal(port: Int(port), kind: kind) else { return 0 }
                me.refused.append(why)
                return -1
            }
        }
    }

    /// What a graph does with an event it refuses.
    static let dropped = "(in a graph, the event is dropped and the run ends with a warning)"

    /// A node made through `create`, or the plugin's reason for refusing.
    struct Made {
        var instance: UnsafeMutableRawPointer?
        var error: String
    }

    static func create(
        _ cls: UnsafePointer<sg_node_class>, _ node: NodeManifest, _ host: TestHost,
        _ values: [(String, ParameterValue)]
    ) -> Made {
        let config = CValues(values)
        var c = sg_config()
        let name = strdup("check")!
        defer { free(name) }
        c.node_name = UnsafePointer(name)
        c.values = UnsafePointer(config.values)
        c.value_count = UInt32(config.count)
        var error = [CChar](repeating: 0, count: 512)
        host.host.context = Unmanaged.passUnretained(host).toOpaque()
        let made = withUnsafePointer(to: &host.host) { cls.pointee.create?($0, &c, &error, error.count) }
        return Made(instance: made, error: PluginNodeBase.sentence(error, or: ""))
    }

    /// Makes a node with its defaults, prepares it at 16 kHz, runs 1024 frames of silence (or nothing, for an
    /// event node), resets and destroys it. Refusals are not failures here; crashes are (they end the child).
    static func smoke(_ node: NodeManifest, _ cls: UnsafePointer<sg_node_class>) {
        let host = TestHost(node)
        let made = create(cls, node, host, values(node))
        guard let instance = made.instance else { return }
        if node.kind == .audio {
            let input = node.ports.first { $0.isAudio && $0.isInput }
            let output = node.ports.first { $0.isAudio && !$0.isInput }
            let channels = max(1, input?.channels ?? 1)
            let outChannels = (output?.channels ?? 0) > 0 ? output!.channels : channels
            let rate = (input?.rate ?? 0) > 0 ? input!.rate : 16000
            if prepare(cls, instance, rate: rate, channels: channels, outChannels: outChannels, maxFrames: 1024) == nil
            {
                var out: [Float] = []
                _ = drive(
                    cls, instance, channels: channels, outChannels: outChannels, block: 1024, frames: 1024,
                    signal: .silence, output: &out)
            }
        }
        cls.pointee.reset?(instance)
        cls.pointee.destroy?(instance)
    }

    // MARK: Audio nodes.

    enum Signal: String, CaseIterable {
        case silence
        case noise = "full-scale noise"
        case hostile = "NaN and infinities"
        case denormals
        func fill(_ buffer: UnsafeMutablePointer<Float>, _ count: Int, seed: inout UInt64) {
            for i in 0..<count {
                switch self {
                case .silence: buffer[i] = 0
                case .noise:
                    seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
                    buffer[i] = Float(Int64(bitPattern: seed) >> 11) / Float(1 << 52)
                case .hostile: buffer[i] = [Float.nan, .infinity, -.infinity, 1, -1][i % 5]
                case .denormals: buffer[i] = Float.leastNonzeroMagnitude * Float(i % 7 + 1)
                }
            }
        }
    }

    /// A run of `drive` that takes longer than this, at more than `slowCallSeconds` a call or on its way to
    /// `slowRunSeconds` for the run, is far slower than processing its audio can need, even on a busy machine (a
    /// fixed cost of a millisecond a call is not; at 3 ms a call, blocks of one frame took the whole check past its
    /// 120 s timeout).
    static let slowProcessSeconds = 5.0
    static let slowCallSeconds = 0.010
    static let slowRunSeconds = 30.0
    /// The rate sweep of an audio node as a whole, well within the check's 120 s.
    static let slowSweepSeconds = 90.0
    static let tooSlow = "process is too slow"

    /// Runs `frames` frames through `instance` in blocks of `block`; the first problem with the output.
    static func drive(
        _ cls: UnsafePointer<sg_node_class>, _ instance: UnsafeMutableRawPointer?, channels: Int,
        outChannels: Int, block: Int, frames: Int, signal: Signal, output: inout [Float]
    ) -> String? {
        let input = UnsafeMutablePointer<Float>.allocate(capacity: block * channels)
        let out = UnsafeMutablePointer<Float>.allocate(capacity: block * outChannels)
        defer {
            input.deallocate()
            out.deallocate()
        }
        var seed: UInt64 = 12345
        var done = 0
        output.removeAll(keepingCapacity: true)
        let start = DispatchTime.now().uptimeNanoseconds
        while done < frames {
            let n = min(block, frames - done)
            signal.fill(input, n * channels, seed: &seed)
            out.initialize(repeating: .nan, count: n * outChannels)
            cls.pointee.process?(instance, input, out, UInt32(n))
            // A fraction of a second of audio takes microseconds; seconds mean a process that waits or works far
            // beyond its block (said now, not at the check's overall timeout).
            let elapsed = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
            let calls = done / block + 1
            let projected = elapsed / Double(done + n) * Double(frames)
            if elapsed > slowProcessSeconds && (elapsed / Double(calls) > slowCallSeconds || projected > slowRunSeconds)
            {
                return String(
                    format: "\(tooSlow): %.1f s for %d frames in blocks of %d (%.1f ms a call)", elapsed,
                    done + n, block, 1000 * elapsed / Double(calls))
            }
            for i in 0..<(n * outChannels) {
                if !out[i].isFinite { return "its output holds \(out[i]) (frame \(done + i / outChannels))" }
            }
            output.append(contentsOf: UnsafeBufferPointer(start: out, count: n * outChannels))
            done += n
        }
        return nil
    }

    static func prepare(
        _ cls: UnsafePointer<sg_node_class>, _ instance: UnsafeMutableRawPointer?, rate: Int,
        channels: Int, outChannels: Int, maxFrames: Int
    ) -> String? {
        var setup = sg_audio_setup(
            sample_rate: UInt32(rate), input_channels: UInt32(channels), output_channels: UInt32(outChannels),
            max_frames: UInt32(maxFrames))
        var error = [CChar](repeating: 0, count: 512)
        guard cls.pointee.prepare?(instance, &setup, &error, error.count) == 0 else {
            return PluginNodeBase.sentence(error, or: "prepare failed without a reason")
        }
        return nil
    }

    mutating func checkAudio(_ node: NodeManifest, _ cls: UnsafePointer<sg_node_class>) {
        let input = node.ports.first { $0.isAudio && $0.isInput }!
        let output = node.ports.first { $0.isAudio && !$0.isInput }!
        let channels = input.channels > 0 ? input.channels : 1
        let outChannels = output.channels > 0 ? output.channels : channels
        let rates = input.rate > 0 ? [input.rate] : Self.rates
        let t = node.typeName
        let host = TestHost(node)
        // A process that is far too slow makes every other check as slow: the first says so, the rest are not run.
        var tooSlow = false
        // The sweep below, as a whole: a process a little slow a call (3 ms) passes each run and would take the
        // check past its timeout; it is said to be too slow once the sweep is on its way past `slowSweepSeconds`.
        let frames = { (rate: Int, block: Int) in max(block * 3, rate / 10) }
        let calls = { (rate: Int, block: Int) in (frames(rate, block) + block - 1) / block }
        let sweepCalls = rates.reduce(0) { sum, rate in
            sum + Self.blockSizes.reduce(0) { $0 + Signal.allCases.count * calls(rate, $1) }
        }
        let sweepStart = DispatchTime.now().uptimeNanoseconds
        var callsDone = 0

        for rate in rates where !tooSlow {
            check(
                "\(t): \(rate) Hz, blocks of \(Self.blockSizes.map(String.init).joined(separator: ", ")) frames, "
                    + Signal.allCases.map(\.rawValue).joined(separator: ", ")
            ) {
                let made = Self.create(cls, node, host, Self.values(node))
                guard let instance = made.instance else { return "create refused the defaults: \(made.error)" }
                defer { cls.pointee.destroy?(instance) }
                if let p = Self.prepare(
                    cls, instance, rate: rate, channels: channels, outChannels: outChannels,
                    maxFrames: 4096)
                {
                    return "prepare refused \(rate) Hz: \(p)"
                }
                var out: [Float] = []
                for block in Self.blockSizes {
                    for signal in Signal.allCases {
                        if let p = Self.drive(
                            cls, instance, channels: channels, outChannels: outChannels,
                            block: block, frames: frames(rate, block), signal: signal, output: &out)
                        {
                            tooSlow = p.hasPrefix(Self.tooSlow)
                            return "\(signal.rawValue) in blocks of \(block): \(p)"
                        }
                        callsDone += calls(rate, block)
                        let elapsed = Double(DispatchTime.now().uptimeNanoseconds - sweepStart) / 1e9
                        if elapsed > Self.slowProcessSeconds
                            && elapsed / Double(callsDone) * Double(sweepCalls) > Self.slowSweepSeconds
                        {
                            tooSlow = true
                            return String(
                                format: "\(Self.tooSlow): %.1f s for %d of this check's %d calls (%.2f ms a call), "
                                    + "on its way past %.0f s", elapsed, callsDone, sweepCalls,
                                1000 * elapsed / Double(callsDone), Self.slowSweepSeconds)
                        }
                    }
                }
                return nil
            }
        }

        if tooSlow {
            check("\(t): the other checks") { "not run: \(Self.tooSlow)" }
            return
        }
        let rate = rates.contains(16000) ? 16000 : rates[0]
        // An input that takes any channel count gets stereo in a graph (from a jack.input, a WAV): every channel
        // of every frame must be written (the output starts as NaN, so a sample left unwritten shows).
        if input.channels == 0 {
            let stereoOut = output.channels > 0 ? output.channels : 2
            check("\(t): 2 channels at \(rate) Hz (its input takes any channel count)") {
                let made = Self.create(cls, node, host, Self.values(node))
                guard let instance = made.instance else { return "create refused the defaults: \(made.error)" }
                defer { cls.pointee.destroy?(instance) }
                if let p = Self.prepare(
                    cls, instance, rate: rate, channels: 2, outChannels: stereoOut, maxFrames: 4096)
                {
                    return "prepare refused 2 channels: \(p)"
                }
                var out: [Float] = []
                for block in [7, 1024] {
                    if let p = Self.drive(
                        cls, instance, channels: 2, outChannels: stereoOut, block: block, frames: rate / 10,
                        signal: .noise, output: &out)
                    {
                        return "in blocks of \(block): \(p)"
                    }
                }
                return nil
            }
        }
        for p in node.parameters where [.number, .integer, .quantity].contains(p.kind) {
            let d = p.descriptor
            guard let range = d.range else { continue }
            let integer = p.kind == .integer
            func value(_ v: Double) -> ParameterValue { integer ? .integer(Int(v)) : .number(v) }
            check("\(t): '\(p.name)' at its range ends (\(d.rangeText ?? ""))") {
                for end in [range.lowerBound, range.upperBound] {
                    let made = Self.create(cls, node, host, Self.values(node, [p.name: value(end)]))
                    guard let instance = made.instance else { return "create refused \(end): \(made.error)" }
                    defer { cls.pointee.destroy?(instance) }
                    if let problem = Self.prepare(
                        cls, instance, rate: rate, channels: channels,
                        outChannels: outChannels, maxFrames: 1024)
                    {
                        return "prepare refused \(end): \(problem)"
                    }
                    var out: [Float] = []
                    if let problem = Self.drive(
                        cls, instance, channels: channels, outChannels: outChannels,
                        block: 1024, frames: rate / 4, signal: .noise, output: &out)
                    {
                        return "at \(end): \(problem)"
                    }
                }
                return nil
            }
            check("\(t): '\(p.name)' beyond its range is refused with a reason, or kept safe") {
                let span = Swift.max(1, range.upperBound - range.lowerBound)
                for beyond in [range.lowerBound - span, range.upperBound + span] {
                    let made = Self.create(cls, node, host, Self.values(node, [p.name: value(beyond)]))
                    guard let instance = made.instance else {
                        if made.error.isEmpty { return "create refused \(beyond) without a reason" }
                        continue
                    }
                    defer { cls.pointee.destroy?(instance) }
                    if Self.prepare(
                        cls, instance, rate: rate, channels: channels, outChannels: outChannels,
                        maxFrames: 1024) != nil
                    {
                        continue
                    }
                    var out: [Float] = []
                    if let problem = Self.drive(
                        cls, instance, channels: channels, outChannels: outChannels,
                        block: 1024, frames: rate / 4, signal: .noise, output: &out)
                    {
                        return "at \(beyond): \(problem)"
                    }
                }
                return nil
            }
        }

        check("\(t): reset and prepare again at another rate give the same output as a new node") {
            let made = Self.create(cls, node, host, Self.values(node))
            guard let instance = made.instance else { return "create refused the defaults: \(made.error)" }
            defer { cls.pointee.destroy?(instance) }
            var first: [Float] = []
            var again: [Float] = []
            let other = rates.last!
            for (r, keep) in [(rate, true), (other, false), (rate, false)] {
                if let p = Self.prepare(
                    cls, instance, rate: r, channels: channels, outChannels: outChannels,
                    maxFrames: 1024)
                {
                    return "prepare refused \(r) Hz: \(p)"
                }
                var out: [Float] = []
                if let p = Self.drive(
                    cls, instance, channels: channels, outChannels: outChannels, block: 256,
                    frames: r / 5, signal: .noise, output: &out)
                {
                    return p
                }
                cls.pointee.reset?(instance)
                if keep { first = out } else if r == rate { again = out }
            }
            return first == again ? nil : "the output after reset and prepare differs from the first run's"
        }

        check("\(t): two instances at once keep separate state") {
            let a = Self.create(cls, node, host, Self.values(node))
            let b = Self.create(cls, node, host, Self.values(node))
            defer {
                if let x = a.instance { cls.pointee.destroy?(x) }
                if let x = b.instance { cls.pointee.destroy?(x) }
            }
            guard let ia = a.instance, let ib = b.instance else { return "create refused a second instance" }
            for i in [ia, ib] {
                if let p = Self.prepare(
                    cls, i, rate: rate, channels: channels, outChannels: outChannels,
                    maxFrames: 512)
                {
                    return p
                }
            }
            // b runs silence in between a's noise blocks; a must give what one instance alone gives.
            var together: [Float] = []
            var scratch: [Float] = []
            var piece: [Float] = []
            for _ in 0..<8 {
                _ = Self.drive(
                    cls, ia, channels: channels, outChannels: outChannels, block: 512, frames: 512,
                    signal: .noise, output: &piece)
                together += piece
                _ = Self.drive(
                    cls, ib, channels: channels, outChannels: outChannels, block: 512, frames: 512,
                    signal: .silence, output: &scratch)
            }
            // Each block of a starts the noise sequence afresh (drive reseeds): compare with the same pattern.
            var pattern: [Float] = []
            let solo2 = Self.create(cls, node, host, Self.values(node))
            guard let s2 = solo2.instance else { return "create refused a fourth instance" }
            defer { cls.pointee.destroy?(s2) }
            _ = Self.prepare(cls, s2, rate: rate, channels: channels, outChannels: outChannels, maxFrames: 512)
            for _ in 0..<8 {
                _ = Self.drive(
                    cls, s2, channels: channels, outChannels: outChannels, block: 512, frames: 512,
                    signal: .noise, output: &piece)
                pattern += piece
            }
            return together == pattern ? nil : "an instance's output changes when another instance runs"
        }
    }

}
