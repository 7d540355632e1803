// The part of AVFAudio that speech code uses to hear a microphone, over JACK (or PipeWire's JACK): an
// `AVAudioEngine` whose input node is a JACK client with one input port, taps that deliver `AVAudioPCMBuffer`s on a
// graph thread (never JACK's real-time thread), and `AVAudioSession` and `AVAudioApplication` as far as such code
// calls them (docs/api.md). Underneath, a running engine is one graph: jack.input -> [resample] -> a tap node.
import Foundation
import Synchronization

public typealias AVAudioNodeBus = Int
/// What a tap is given: a buffer of audio and when its first frame was heard. `@Sendable`: it is called on a thread
/// of the engine's graph, so a closure written in main-actor code (a view controller's) must not take that
/// actor's isolation with it.
public typealias AVAudioNodeTapBlock = @Sendable (AVAudioPCMBuffer, AVAudioTime) -> Void

/// When a buffer's audio was heard: its first frame's sample time (frames since the engine started, at
/// `sampleRate`) and the host time it was delivered at (nanoseconds of the monotonic clock).
public final class AVAudioTime: Sendable, CustomStringConvertible {
    public let sampleTime: AVAudioFramePosition
    public let sampleRate: Double
    public let hostTime: UInt64
    public let isSampleTimeValid: Bool
    public let isHostTimeValid: Bool

    public init(sampleTime: AVAudioFramePosition, atRate sampleRate: Double) {
        self.sampleTime = sampleTime
        self.sampleRate = sampleRate
        hostTime = 0
        isSampleTimeValid = true
        isHostTimeValid = false
    }

    public init(hostTime: UInt64) {
        self.hostTime = hostTime
        sampleTime = 0
        sampleRate = 0
        isSampleTimeValid = false
        isHostTimeValid = true
    }

    public init(hostTime: UInt64, sampleTime: AVAudioFramePosition, atRate sampleRate: Double) {
        self.hostTime = hostTime
        self.sampleTime = sampleTime
        self.sampleRate = sampleRate
        isSampleTimeValid = true
        isHostTimeValid = true
    }

    /// The monotonic clock now, in nanoseconds.
    public static func hostTime(forSeconds seconds: TimeInterval) -> UInt64 { UInt64(max(0, seconds) * 1e9) }
    public static func seconds(forHostTime hostTime: UInt64) -> TimeInterval { Double(hostTime) / 1e9 }

    public var description: String { "sample time \(sampleTime) at \(sampleRate) Hz, host time \(hostTime)" }
}

/// A node of an engine's graph.
open class AVAudioNode: @unchecked Sendable {
    init() {}
}

/// The engine's input: a JACK client named after the program (`AVAudioEngine.clientName`), with one input port,
/// `in_1`, connected at start to the ports matching `$SPEECHGRAPH_CAPTURE` (`system:capture_1` when it is not set),
/// as `jack.input` connects, and open to any connection made from outside (a patchbay, `jack_connect`).
public final class AVAudioInputNode: AVAudioNode, @unchecked Sendable {
    private struct Tap {
        var block: Unchecked<AVAudioNodeTapBlock>
        var bufferSize: AVAudioFrameCount
        var format: AVAudioFormat?
    }
    private let tap = Mutex<Tap?>(nil)
    private weak var engine: AVAudioEngine?

    init(engine: AVAudioEngine) {
        self.engine = engine
        super.init()
    }

    /// The port's format: one channel at the JACK server's rate (asked of the server; 48 kHz when none runs, and
    /// `start()` then throws).
    public func outputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat {
        let rate = (try? engine?.serverRate()) ?? 48000
        return AVAudioFormat(standardFormatWithSampleRate: Double(rate), channels: 1)!
    }

    public func inputFormat(forBus bus: AVAudioNodeBus) -> AVAudioFormat { outputFormat(forBus: bus) }

    /// `block` gets buffers of `bufferSize` frames (the last one, at `stop()`, may be shorter) in `format` (nil:
    /// the port's; another rate is converted to; it has the port's one channel), on a thread of the engine's graph,
    /// one after another. One tap a bus, as Apple's: installing a second without removing the first is an error
    /// that Apple's engine raises as an exception; here it replaces the first, with a message on standard error.
    public func installTap(
        onBus bus: AVAudioNodeBus, bufferSize: AVAudioFrameCount, format: AVAudioFormat?,
        block: @escaping AVAudioNodeTapBlock
    ) {
        let replaced = tap.withLock { t -> Bool in
            defer { t = Tap(block: Unchecked(block), bufferSize: max(1, bufferSize), format: format) }
            return t != nil
        }
        if replaced {
            FileHandle.standardError.write(
                Data("speechgraph: warning: installTap(onBus: \(bus)) on a bus with a tap: it replaces it\n".utf8))
        }
        engine?.tapChanged()
    }

    public func removeTap(onBus bus: AVAudioNodeBus) { tap.withLock { $0 = nil } }

    /// The rate the tap asked for (nil: the port's).
    var tapRate: Double? { tap.withLock { $0?.format?.sampleRate } }

    /// The tap's block and buffer size now.
    func currentTap() -> (block: AVAudioNodeTapBlock, size: Int)? {
        tap.withLock { t in t.map { ($0.block.value, Int($0.bufferSize)) } }
    }
}

/// An audio engine with one input node, over JACK: `prepare()` opens its client, `start()` runs it, `stop()` ends
/// it (the tap's last frames delivered). Each `start()` after a `stop()` runs a new graph.
public final class AVAudioEngine: @unchecked Sendable {
    // Unchecked: its state is behind a lock.
    private struct State {
        var graph: SpeechGraph?
        var running = false
        var watcher: Task<Void, Never>?
        var rate: Int?
        /// Its server went away and has not come back: an interruption began that has not ended.
        var interrupted = false
    }
    private let state = Mutex(State())
    public private(set) lazy var inputNode = AVAudioInputNode(engine: self)

    /// The JACK client's name: the program's (`$SPEECHGRAPH_CLIENT_NAME` if set), made JACK-safe.
    public var clientName: String = AVAudioEngine.defaultClientName

    public init() {}

    /// An engine let go while running stops its graph (without waiting for it).
    deinit { state.withLock { $0.graph }?.stop() }

    static var defaultClientName: String {
        if let name = ProcessInfo.processInfo.environment["SPEECHGRAPH_CLIENT_NAME"], !name.isEmpty { return name }
        let program = (CommandLine.arguments.first.map { ($0 as NSString).lastPathComponent } ?? "speechgraph")
        let safe = String(program.map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" }.prefix(40))
        return safe.isEmpty ? "speechgraph" : safe
    }

    public var isRunning: Bool { state.withLock { $0.running } }

    /// Makes the engine's graph (its JACK client opens and learns the server's rate); `start()` does it if this
    /// was not called. Without a server nothing happens here: `start()` says so.
    public func prepare() { _ = try? preparedGraph() }

    /// Starts hearing the input port and delivering to the tap. Throws when no JACK server runs (or PipeWire's
    /// JACK is not there), with the reason.
    public func start() throws {
        let graph = try preparedGraph()
        let start: Bool = state.withLock { s in
            if s.running { return false }
            s.running = true
            return true
        }
        guard start else { return }
        do { try graph.start() } catch {
            state.withLock { $0.running = false }
            throw AVAudioEngineError.failed("\(error)")
        }
        // The server going away and coming back: an interruption, began and ended.
        let events = graph.events(of: "mic")
        let watcher = Task.detached { [weak self] in
            for await event in events {
                guard case .availability(_, let available, let reason) = event else { continue }
                self?.state.withLock { $0.interrupted = !available }
                AVAudioSession.post(interruption: available ? .ended : .began, reason: reason)
            }
        }
        state.withLock { $0.watcher = watcher }
    }

    /// Stops: the port is closed, the tap gets what it has not had yet. `start()` makes a new graph.
    public func stop() {
        let (graph, watcher) = state.withLock { s -> (SpeechGraph?, Task<Void, Never>?) in
            defer {
                s.graph = nil
                s.running = false
                s.watcher = nil
            }
            return (s.graph, s.watcher)
        }
        guard let graph else { return }
        graph.stop()
        // Waits for the graph to end, so that the tap's last buffer is delivered before stop() returns (not from
        // the tap's own block, which that graph calls).
        try? graph.running.wait()
        watcher?.cancel()
        // Stopped while its server was gone: for this engine the interruption is over (not to be resumed), so that
        // recognizers are available again.
        let interrupted = state.withLock { s in
            defer { s.interrupted = false }
            return s.interrupted
        }
        if interrupted { AVAudioSession.post(interruption: .ended, reason: "the engine stopped", resume: false) }
    }

    public func pause() { stop() }

    public func reset() {}

    /// The server's rate, as the prepared graph's client learned it.
    func serverRate() throws -> Int {
        if let rate = state.withLock({ $0.rate }) { return rate }
        _ = try preparedGraph()
        return state.withLock { $0.rate } ?? 48000
    }

    /// A tap installed or changed before the engine runs: the graph prepared for it is made again at start (its
    /// rate may differ). The prepared one closes its client as it goes.
    func tapChanged() {
        let stale = state.withLock { s -> SpeechGraph? in
            guard !s.running else { return nil }
            defer { s.graph = nil }
            return s.graph
        }
        stale?.stop()
    }

    private func preparedGraph() throws -> SpeechGraph {
        if let graph = state.withLock({ $0.graph }) { return graph }
        var (made, rate) = try makeGraph(convertingTo: nil)
        var graph: SpeechGraph? = made
        if let want = inputNode.tapRate, let rate, Int(want) != rate {
            // The tap asked for another rate than the server's: converted to it, by a graph whose client opens
            // once the first's has closed (with both, JACK would rename the second).
            graph?.stop()
            graph = nil
            (made, _) = try makeGraph(convertingTo: want)
            graph = made
        }
        let prepared = graph!
        state.withLock { s in
            s.graph = prepared
            s.rate = rate
        }
        return prepared
    }

    /// The engine's graph, and the server's rate its client learned when planning.
    private func makeGraph(convertingTo tapRate: Double?) throws -> (SpeechGraph, Int?) {
        let capture = ProcessInfo.processInfo.environment["SPEECHGRAPH_CAPTURE"].flatMap { $0.isEmpty ? nil : $0 }
        var b = GraphBuilder()
        b.node("mic", "jack.input", ["connect": graphQuoted(capture ?? "system:capture_1")])
        b.node("tap", AVAudioTapNode.descriptor.typeName)
        if let tapRate {
            b.node("convert", "resample", ["rate": "\(tapRate / 1000) kHz"])
            b.connect("mic.out", "convert")
            b.connect("convert", "tap")
        } else {
            b.connect("mic.out", "tap")
        }
        var registry = BuiltinNodes.registry()
        try? registry.register(AVAudioTapNode.type)
        let resources = GraphResources(providing: [JackClientOptions(name: clientName)])
        let graph: SpeechGraph
        do {
            graph = try SpeechGraph(
                source: b.source, name: "<AVAudioEngine>", settings: [:], registry: registry, resources: resources)
        } catch {
            let server = ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] ?? "default"
            throw AVAudioEngineError.noServer(
                "the input node could not open its JACK client (is a JACK server running, or PipeWire's JACK? "
                    + "server: \(server)): \(error)")
        }
        (graph.running.node(named: "tap") as? AVAudioTapNode)?.input = inputNode
        // Planning opened the client, which learned the server's rate.
        return (graph, resources.optional(JackSession.self).map(\.sampleRate))
    }
}

/// Why an engine did not start.
public enum AVAudioEngineError: Error, CustomStringConvertible, LocalizedError {
    case noServer(String)
    case failed(String)
    public var description: String {
        switch self {
        case .noServer(let why), .failed(let why): return why
        }
    }
    public var errorDescription: String? { description }
}

/// The tap of an engine's graph: gathers audio into buffers of the tap's size and hands each to its block.
final class AVAudioTapNode: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "avaudio.tap",
        summary: "An AVAudioEngine input node's tap (the Swift API's; not for graph files).",
        category: .sink,
        ports: [.audioInput("in", .any, doc: "The input node's audio.")],
        parameters: [], threading: .worker)

    static let type = NodeType(descriptor, make: { _ in AVAudioTapNode() })

    /// Set before the graph starts.
    nonisolated(unsafe) weak var input: AVAudioInputNode?
    private var buffer: AVAudioPCMBuffer?
    private var bufferStart: Int64 = 0

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        guard let (deliver, size) = input?.currentTap() else {
            buffer = nil
            return
        }
        let channels = block.format.channelCount
        var frame = 0
        while frame < block.frameCount {
            if buffer == nil || buffer!.frameCapacity != AVAudioFrameCount(size)
                || buffer!.format.sampleRate != Double(block.format.sampleRate)
            {
                guard
                    let format = AVAudioFormat(
                        standardFormatWithSampleRate: Double(block.format.sampleRate), channels: 1),
                    let fresh = AVAudioPCMBuffer(pcmFormat: format, frameCapacity: AVAudioFrameCount(size))
                else { return }
                buffer = fresh
                bufferStart = block.startFrame + Int64(frame)
            }
            let b = buffer!
            let room = Int(b.frameCapacity - b.frameLength)
            let n = min(room, block.frameCount - frame)
            let out = b.floatChannelData![0] + Int(b.frameLength)
            // The first channel (the input node has one).
            for i in 0..<n { out[i] = block.samples[(frame + i) * channels] }
            b.frameLength += AVAudioFrameCount(n)
            frame += n
            if b.frameLength == b.frameCapacity { send(deliver) }
        }
    }

    private func send(_ deliver: AVAudioNodeTapBlock) {
        guard let b = buffer, b.frameLength > 0 else { return }
        buffer = nil
        let now = DispatchTime.now().uptimeNanoseconds
        deliver(b, AVAudioTime(hostTime: now, sampleTime: bufferStart, atRate: b.format.sampleRate))
    }

    func finish(output: NodeOutput) throws {
        if let (deliver, _) = input?.currentTap() { send(deliver) }
    }
}

// MARK: - The session and the application, as far as speech code calls them

/// The process's audio session. On Linux there is nothing to configure: the category, mode and options are kept
/// for the app to read, `setActive` succeeds. Its interruption notification is posted when an engine's JACK server
/// goes away (`.began`) and comes back (`.ended`, with `.shouldResume`).
public final class AVAudioSession: @unchecked Sendable {
    public struct Category: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let ambient = Category(rawValue: "AVAudioSessionCategoryAmbient")
        public static let soloAmbient = Category(rawValue: "AVAudioSessionCategorySoloAmbient")
        public static let playback = Category(rawValue: "AVAudioSessionCategoryPlayback")
        public static let record = Category(rawValue: "AVAudioSessionCategoryRecord")
        public static let playAndRecord = Category(rawValue: "AVAudioSessionCategoryPlayAndRecord")
        public static let multiRoute = Category(rawValue: "AVAudioSessionCategoryMultiRoute")
    }
    public struct Mode: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let `default` = Mode(rawValue: "AVAudioSessionModeDefault")
        public static let measurement = Mode(rawValue: "AVAudioSessionModeMeasurement")
        public static let spokenAudio = Mode(rawValue: "AVAudioSessionModeSpokenAudio")
        public static let voiceChat = Mode(rawValue: "AVAudioSessionModeVoiceChat")
        public static let videoRecording = Mode(rawValue: "AVAudioSessionModeVideoRecording")
    }
    public struct CategoryOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let mixWithOthers = CategoryOptions(rawValue: 1)
        public static let duckOthers = CategoryOptions(rawValue: 2)
        public static let allowBluetooth = CategoryOptions(rawValue: 4)
        public static let defaultToSpeaker = CategoryOptions(rawValue: 8)
    }
    public struct SetActiveOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let notifyOthersOnDeactivation = SetActiveOptions(rawValue: 1)
    }
    public enum InterruptionType: UInt, Sendable {
        case ended = 0
        case began = 1
    }
    public struct InterruptionOptions: OptionSet, Sendable {
        public let rawValue: UInt
        public init(rawValue: UInt) { self.rawValue = rawValue }
        public static let shouldResume = InterruptionOptions(rawValue: 1)
    }

    public static let interruptionNotification = Notification.Name("AVAudioSessionInterruptionNotification")

    private struct Settings {
        var category = Category.soloAmbient
        var mode = Mode.default
        var options: CategoryOptions = []
        var isActive = false
    }
    private let settings = Mutex(Settings())
    private static let shared = AVAudioSession()

    public static func sharedInstance() -> AVAudioSession { shared }

    public var category: Category { settings.withLock { $0.category } }
    public var mode: Mode { settings.withLock { $0.mode } }
    public var categoryOptions: CategoryOptions { settings.withLock { $0.options } }

    public func setCategory(_ category: Category, mode: Mode = .default, options: CategoryOptions = []) throws {
        settings.withLock { s in (s.category, s.mode, s.options) = (category, mode, options) }
    }
    public func setCategory(_ category: Category) throws { try setCategory(category, mode: .default, options: []) }
    public func setMode(_ mode: Mode) throws { settings.withLock { $0.mode = mode } }
    public func setActive(_ active: Bool, options: SetActiveOptions = []) throws {
        settings.withLock { $0.isActive = active }
    }

    /// The interruption notification, on the default center (object: the shared session).
    static func post(interruption type: InterruptionType, reason: String, resume: Bool = true) {
        var info: [AnyHashable: Any] = [
            AVAudioSessionInterruptionTypeKey: type.rawValue, AVAudioSessionInterruptionReasonKey: reason,
        ]
        if type == .ended {
            info[AVAudioSessionInterruptionOptionKey] = (resume ? InterruptionOptions.shouldResume : []).rawValue
        }
        NotificationCenter.default.post(name: AVAudioSession.interruptionNotification, object: shared, userInfo: info)
    }
}

/// The interruption notification's user info: its `AVAudioSession.InterruptionType` raw value, its
/// `InterruptionOptions` raw value (`.ended` only), and speechgraph's reason (what the JACK server did).
public let AVAudioSessionInterruptionTypeKey = "AVAudioSessionInterruptionTypeKey"
public let AVAudioSessionInterruptionOptionKey = "AVAudioSessionInterruptionOptionKey"
public let AVAudioSessionInterruptionReasonKey = "AVAudioSessionInterruptionReasonKey"

/// The application's audio permissions: recording is always allowed on Linux (JACK ports are the user's).
public final class AVAudioApplication: Sendable {
    public static func requestRecordPermission() async -> Bool { true }
    public static func requestRecordPermission(completionHandler: @escaping (Bool) -> Void) {
        let handler = Unchecked(completionHandler)
        DispatchQueue.global().async { handler.value(true) }
    }
    public static let shared = AVAudioApplication()
    public enum RecordPermission: Sendable { case undetermined, denied, granted }
    public var recordPermission: RecordPermission { .granted }
}
