import CJack
import Foundation
import SpeechGraphCore
import Synchronization

/// One JACK client shared by every jack.* node of a running graph: its ports, their rings, the
/// real-time state, and the way back when the server goes away and returns.
///
/// Thread contract: everything here runs on the graph thread, except the C callbacks above (JACK's
/// threads), which only store atomics and post wake signals.
public final class JackSession: @unchecked Sendable {
    public enum Change: Equatable {
        /// The server went away; the reason JACK gave.
        case lost(String)
        /// A server is back; ports are registered again and connections restored. Seconds it was away.
        case restored(Double)
        /// Audio the server lost (xruns reported since the last poll).
        case xruns(Int)
        /// libjack has not finished closing the client of the server that went away (it can hang there): no
        /// new client can open until it does.
        case closeStuck
        /// No client of this process can open yet (`JackLibrary.Wait`): why, said once it has lasted 5 s.
        case openWaits(String)
        /// The server came back at another rate than the graph was planned for.
        case rateChanged(from: Int, to: Int)
        /// A `connect` pattern of our port matched no port when the client opened (said once per pattern).
        case unmatched(pattern: String, port: String)
        /// The name was taken: JACK gave the client another.
        case renamed(from: String, to: String)
    }

    struct PortSpec {
        var name: String
        var prettyName: String
        var group: String
        var order: Int
        var isInput: Bool
        var connect: [String]
        var ring: AudioRing
        var prebufferFrames: Int
    }

    public let requestedName: String
    public private(set) var clientName: String
    public let serverName: String?
    /// The rate the graph runs at: the server's, once the client has opened (or the rate the graph was
    /// planned at, when it was planned without the session; the server must then run at it).
    public private(set) var sampleRate = 0
    public internal(set) var isAvailable = false
    public internal(set) var bufferSize = 0

    var client: OpaquePointer?
    var specs: [PortSpec] = []
    var ports: [OpaquePointer?] = []
    var started = false
    var lostAt: Date?
    var lastAttempt = Date.distantPast
    var xrunsSeen = 0
    var planningRateMismatch: (Int, Int)?
    /// The server rate last reported as not ours, while the server stays at it.
    var reportedMismatch: Int?

    /// Posted after each period that brought input: the graph's wake signal.
    let inputWake: WakeSignal
    let outputWake = WakeSignal()
    /// Posted by the graph thread after it read the input rings / wrote the output rings: a freewheeling process
    /// callback waits for them (see `speechgraphProcess`).
    let inputRoom = WakeSignal()
    let outputData = WakeSignal()
    let gapRing = SPSCRing<GapRecord>(minimumCapacity: 256)
    let realtime: UnsafeMutablePointer<RealtimeState>
    let notifications: UnsafeMutablePointer<Notifications>
    let callbacks: UnsafeMutablePointer<SessionCallbacks>
    let reason: UnsafeMutablePointer<CChar>
    let inputPorts: UnsafeMutablePointer<RealtimePort>
    let outputPorts: UnsafeMutablePointer<RealtimePort>
    let running: UnsafeMutablePointer<Atomic<Bool>>
    let freewheeling: UnsafeMutablePointer<Atomic<Bool>>
    let outputEnded: UnsafeMutablePointer<Atomic<Bool>>
    let underruns: UnsafeMutablePointer<Atomic<Int>>
    let overruns: UnsafeMutablePointer<Atomic<Int>>
    let timing: UnsafeMutablePointer<CallbackTiming>
    let timingBuckets: UnsafeMutablePointer<Int>
    let groups: UnsafeMutablePointer<RealtimeGroup>
    let abandoned = AbandonedClients()
    let openWait: Double
    /// Said once, when a lost client's close has taken this long (libjack hung: no reconnection).
    static let closeStuckAfter = 5.0
    var reportedStuck = false
    /// Since when a reconnection waits for libjack (`JackLibrary.Wait`), and whether that was said.
    var openWaitingSince: Date?
    var reportedOpenWait = false
    /// Real-time processors by the name of the jack.input node (its ports' group) whose audio they process.
    var processors: [(group: String, processor: RealtimeProcessor)] = []

    /// Each jack.input node of the graph, by the group of its ports (its node name), with what changed and what
    /// gaps were recorded since it last asked. Every one of them hears of the server's availability, xruns and
    /// gaps (their ports stop, go on and drop periods together); a pattern that matched nothing goes to the node
    /// whose port it is; the client's own news (renamed, a close that hangs) to the first. A session no node
    /// subscribes to (a graph with only jack.output) keeps nothing.
    var subscribers: [(group: String, changes: [Change], gaps: [GapRecord])] = []

    /// What was said before any node subscribed (the client's name, when the planner opened it).
    var unsubscribed: [Change] = []

    /// The ports each (port, pattern) pair matched when the patterns were last applied: when ports appear,
    /// only the new ones are connected, so a connection the user removed in a patchbay stays removed.
    var matched: [Int: Set<String>] = [:]

    /// Patterns already said to match nothing.
    var unmatchedReported = Set<String>()

    /// Makes the session; nothing talks to JACK until `openClient` (planning for a run) or `start`.
    /// `openWait`: how long `start` waits for libjack to be ready for another client of this process
    /// (`JackLibrary`).
    public init(
        name: String, server: String? = nil, measureCallback: Bool = false,
        inputWake: WakeSignal = WakeSignal(), openWait: Double = 10
    ) {
        self.inputWake = inputWake
        self.openWait = openWait
        requestedName = name
        clientName = name
        serverName = server
        let dummy = SPSCRing<Float>(minimumCapacity: 2)
        inputPorts = .allocate(capacity: RealtimeState.maxPorts)
        outputPorts = .allocate(capacity: RealtimeState.maxPorts)
        for i in 0..<RealtimeState.maxPorts {
            (inputPorts + i).initialize(
                to: RealtimePort(port: nil, ring: dummy.endpoint, isPlaying: false, prebufferFrames: 0))
            (outputPorts + i).initialize(
                to: RealtimePort(port: nil, ring: dummy.endpoint, isPlaying: false, prebufferFrames: 0))
        }
        placeholderRing = dummy
        running = .allocate(capacity: 1)
        running.initialize(to: Atomic(false))
        freewheeling = .allocate(capacity: 1)
        freewheeling.initialize(to: Atomic(false))
        outputEnded = .allocate(capacity: 1)
        outputEnded.initialize(to: Atomic(false))
        underruns = .allocate(capacity: 1)
        underruns.initialize(to: Atomic(0))
        overruns = .allocate(capacity: 1)
        overruns.initialize(to: Atomic(0))
        timingBuckets = .allocate(capacity: CallbackTiming.bucketCount)
        timingBuckets.initialize(repeating: 0, count: CallbackTiming.bucketCount)
        timing = .allocate(capacity: 1)
        timing.initialize(to: CallbackTiming(buckets: timingBuckets, maxNanoseconds: 0, count: 0))
        groups = .allocate(capacity: RealtimeGroup.maxGroups)
        realtime = .allocate(capacity: 1)
        realtime.initialize(
            to: RealtimeState(
                inputs: inputPorts, inputCount: 0, outputs: outputPorts, outputCount: 0,
                inputWake: inputWake.endpoint, outputWake: outputWake.endpoint, inputRoom: inputRoom.endpoint,
                outputData: outputData.endpoint, freewheeling: freewheeling, outputEnded: outputEnded,
                gaps: gapRing.endpoint,
                running: running, underruns: underruns, overruns: overruns, timing: timing,
                timingEnabled: measureCallback, groups: groups, groupCount: 0))
        notifications = .allocate(capacity: 1)
        notifications.initialize(to: Notifications())
        reason = .allocate(capacity: SessionCallbacks.reasonCapacity)
        reason.initialize(repeating: 0, count: SessionCallbacks.reasonCapacity)
        callbacks = .allocate(capacity: 1)
        callbacks.initialize(to: SessionCallbacks(notifications: notifications, realtime: realtime, reason: reason))
    }

    let placeholderRing: AudioRing

    /// The objects the callbacks reach through the raw state's endpoints, which do not retain them: a lost
    /// client's close keeps them until it returns (`AbandonedClients`).
    var reachedByCallbacks: [AnyObject] {
        [inputWake, outputWake, inputRoom, outputData, gapRing, placeholderRing] + specs.map { $0.ring }
    }

    deinit {
        close()
        // A lost client whose close never returned may still reach the callbacks' memory: it is left allocated.
        guard !abandoned.closing else { return }
        // Freed only after jack_client_close: the callbacks may run until then.
        realtime.deinitialize(count: 1)
        realtime.deallocate()
        notifications.deinitialize(count: 1)
        notifications.deallocate()
        callbacks.deinitialize(count: 1)
        callbacks.deallocate()
        reason.deallocate()
        inputPorts.deinitialize(count: RealtimeState.maxPorts)
        inputPorts.deallocate()
        outputPorts.deinitialize(count: RealtimeState.maxPorts)
        outputPorts.deallocate()
        running.deinitialize(count: 1)
        running.deallocate()
        freewheeling.deinitialize(count: 1)
        freewheeling.deallocate()
        outputEnded.deinitialize(count: 1)
        outputEnded.deallocate()
        underruns.deinitialize(count: 1)
        underruns.deallocate()
        overruns.deinitialize(count: 1)
        overruns.deallocate()
        timing.deinitialize(count: 1)
        timing.deallocate()
        timingBuckets.deallocate()
        groups.deallocate()  // their scratch memory went in close()
    }

    /// Runs `processor` in the process callback over the audio of the input ports of group `group` (a
    /// jack.input node's), before it is written to their rings. Before `start` only.
    func hostProcessor(_ processor: RealtimeProcessor, group: String, channels: Int) -> Bool {
        guard !started, processor.channels == channels, processors.count < RealtimeGroup.maxGroups,
            !processors.contains(where: { $0.group == group })
        else { return false }
        let capacity = max(1, min(processor.maxFrames, 8192))
        groups[processors.count] = RealtimeGroup(
            firstInput: 0, channels: channels, function: processor.function, instance: processor.instance,
            interleaved: .allocate(capacity: capacity * channels), processed: .allocate(capacity: capacity * channels),
            planar: .allocate(capacity: capacity), capacity: capacity)
        processors.append((group, processor))
        realtime.pointee.groupCount = processors.count
        return true
    }

    /// Whether the graph has JACK input ports (a jack.input, which reports the server's comings and goings).
    var hasInputs: Bool { specs.contains { $0.isInput } }

    /// Declares a port before `start`. Returns its index among the inputs or outputs.
    @discardableResult
    func addPort(
        name: String, prettyName: String, group: String, order: Int, isInput: Bool, connect: [String],
        ring: AudioRing, prebufferFrames: Int = 0
    ) throws -> Int {
        guard specs.filter({ $0.isInput == isInput }).count < RealtimeState.maxPorts else {
            throw SpeechGraphError("at most \(RealtimeState.maxPorts) JACK \(isInput ? "input" : "output") ports")
        }
        guard !specs.contains(where: { $0.name == name }) else {
            throw SpeechGraphError("two JACK ports named '\(name)': give the nodes different 'port' names")
        }
        specs.append(
            PortSpec(
                name: name, prettyName: prettyName, group: group, order: order, isInput: isInput,
                connect: connect, ring: ring, prebufferFrames: prebufferFrames))
        return specs.filter { $0.isInput == isInput }.count - 1
    }

    /// Opens the client, registers every port, activates, and makes the connections asked for.
    /// Idempotent: every jack.* node calls it from `prepare`.
    public func start() throws {
        guard !started else { return }
        started = true
        // A server that has just started, or one on a loaded machine, can fail a client's activation (jack2 waits
        // for the client's answer only as long as its client timeout, 500 ms unless jackd -t says otherwise): the
        // client is opened and activated again, 5 times in about 4 s, before the failure is said.
        var waits = [250_000, 500_000, 1_000_000, 2_000_000] as [UInt32]
        while true {
            do {
                return try open(initial: true)
            } catch let failure as ActivationFailure {
                guard !waits.isEmpty else {
                    throw SpeechGraphError(
                        "JACK could not activate client '\(failure.client)' (5 tries in 4 s: the server did not "
                            + "answer within its client timeout; on a loaded machine, jackd -t raises it)")
                }
                usleep(waits.removeFirst())
            }
        }
    }

    /// jack_activate failed: the client is closed again.
    private struct ActivationFailure: Error { var client: String }

    /// Opens the graph's client (not yet active: no port, no callback) and returns the server's rate; the
    /// planner calls it through the jack.* node types when it plans a graph to run, so the graph is planned
    /// at the rate of the server it runs on, with its own client and no other. Idempotent.
    public func openClient() throws -> Int {
        if client == nil { try openClient(initial: true) }
        return sampleRate
    }

    /// The rate a node was planned at: a session whose client is open must already run at it; otherwise the
    /// server must run at it when the client opens.
    func expect(rate: Int) throws {
        if sampleRate == 0 { sampleRate = rate }
        guard rate == sampleRate else {
            throw SpeechGraphError(
                "the JACK server runs at \(sampleRate) Hz but the graph was planned for \(rate) Hz "
                    + "(plan the graph with its resources, so that it takes the server's rate)")
        }
    }

    func openClient(initial: Bool) throws {
        JackSession.silenceLibjack()
        var status = jack_status_t(0)
        let options = jack_options_t(JackNoStartServer.rawValue)
        if initial, let problem = Self.clientNameProblem(requestedName) { throw SpeechGraphError(problem) }
        let opened: OpaquePointer?
        if initial {
            opened = try JackLibrary.open(
                requestedName, options, &status, serverName, waitingUpTo: openWait)
        } else {
            do {
                opened = try JackLibrary.open(requestedName, options, &status, serverName)
                openWaitingSince = nil
            } catch {
                // Tried again at the next poll; said once when it lasts.
                let since = openWaitingSince ?? Date()
                openWaitingSince = since
                if !reportedOpenWait, Date().timeIntervalSince(since) >= Self.closeStuckAfter {
                    reportedOpenWait = true
                    report(.openWaits(error.message(timeout: Self.closeStuckAfter)))
                }
                return
            }
        }
        guard let c = opened else {
            if initial {
                let failed = JackServerFailed.rawValue | JackServerError.rawValue
                if status.rawValue & failed != 0 || status.rawValue == 0 {
                    // jack2 refuses a taken name that has no room left for the "-01" it would add with the same
                    // status as no server at all: ask the server, under a name of our own, whether it is there.
                    if Self.serverAnswers(serverName) {
                        throw SpeechGraphError(Self.refusedNameMessage(requestedName, status: status.rawValue))
                    }
                    throw SpeechGraphError(Self.noServerMessage(serverName))
                }
                throw SpeechGraphError(
                    "JACK refused the client '\(requestedName)' (status 0x\(String(status.rawValue, radix: 16)))")
            }
            return
        }
        client = c
        clientName = String(cString: jack_get_client_name(c))
        if initial && clientName != requestedName {
            // Another client has the name (a second speechgraph): the user must know where our ports are.
            report(.renamed(from: requestedName, to: clientName))
        }
        let rate = Int(jack_get_sample_rate(c))
        if sampleRate == 0 { sampleRate = rate }
        if rate != sampleRate {
            JackLibrary.close(c, shutDown: notifications.pointee.shutDown)
            client = nil
            if initial {
                throw SpeechGraphError(
                    "the JACK server runs at \(rate) Hz but the graph was planned for \(sampleRate) Hz")
            }
            planningRateMismatch = (sampleRate, rate)
            return
        }
    }

    func open(initial: Bool) throws {
        if client == nil { try openClient(initial: initial) }
        guard let c = client else { return }
        bufferSize = Int(jack_get_buffer_size(c))
        notifications.pointee.serverGone.store(false, ordering: .releasing)
        notifications.pointee.bufferSize.store(bufferSize, ordering: .relaxed)

        // Ports, in the real-time state before activation (the callback is not running yet).
        ports = []
        var inputs = 0
        var outputs = 0
        // JACK's terminal flag: the audio of an input port goes nowhere else, that of an output port comes from
        // no other port. A session with ports both ways may pass its input on (a tap to jack.output), so neither
        // is marked.
        let hasInputs = specs.contains { $0.isInput }
        let hasOutputs = specs.contains { !$0.isInput }
        for spec in specs {
            var flags = UInt(spec.isInput ? JackPortIsInput.rawValue : JackPortIsOutput.rawValue)
            if spec.isInput ? !hasOutputs : !hasInputs { flags |= UInt(JackPortIsTerminal.rawValue) }
            guard let port = jack_port_register(c, spec.name, JACK_DEFAULT_AUDIO_TYPE, flags, 0) else {
                closeClient()
                throw SpeechGraphError("JACK refused to register port '\(spec.name)'")
            }
            ports.append(port)
            let uuid = jack_port_uuid(port)
            _ = jack_set_property(c, uuid, Metadata.prettyName, spec.prettyName, "text/plain")
            _ = jack_set_property(
                c, uuid, Metadata.order, String(spec.order), "http://www.w3.org/2001/XMLSchema#integer")
            _ = jack_set_property(c, uuid, Metadata.portGroup, spec.group, "text/plain")
            _ = jack_set_property(c, uuid, Metadata.signalType, "AUDIO", "text/plain")
            let rt = RealtimePort(
                port: port, ring: spec.ring.endpoint, isPlaying: false, prebufferFrames: spec.prebufferFrames)
            if spec.isInput {
                inputPorts[inputs] = rt
                inputs += 1
            } else {
                outputPorts[outputs] = rt
                outputs += 1
            }
        }
        realtime.pointee.inputCount = inputs
        realtime.pointee.outputCount = outputs
        realtime.pointee.hasPendingGap = false
        realtime.pointee.wakeFrames = outputs > 0 ? 0 : Int(jack_get_sample_rate(c)) / 50
        realtime.pointee.unwoken = WakeCount()
        // The ports of each group with a processor: consecutive inputs, in channel order.
        var index = 0
        for spec in specs where spec.isInput {
            if let g = processors.firstIndex(where: { $0.group == spec.group }) {
                if inputPorts[index].group < 0 && (index == 0 || inputPorts[index - 1].group != g) {
                    groups[g].firstInput = index
                }
                inputPorts[index].group = g
            }
            index += 1
        }

        let argument = UnsafeMutableRawPointer(callbacks)
        jack_set_process_callback(c, speechgraphProcess, UnsafeMutableRawPointer(realtime))
        jack_on_info_shutdown(c, onShutdown, argument)
        jack_set_xrun_callback(c, onXrun, argument)
        jack_set_port_registration_callback(c, onPortRegistration, argument)
        jack_set_buffer_size_callback(c, onBufferSize, argument)
        jack_set_freewheel_callback(c, onFreewheel, argument)
        if hasInputs && hasOutputs { jack_set_latency_callback(c, onLatency, argument) }
        freewheeling.pointee.store(false, ordering: .relaxed)
        running.pointee.store(true, ordering: .releasing)
        guard jack_activate(c) == 0 else {
            closeClient()
            if initial { throw ActivationFailure(client: clientName) }
            throw SpeechGraphError("JACK could not activate client '\(clientName)'")
        }
        isAvailable = true
        xrunsSeen = notifications.pointee.xruns.load(ordering: .relaxed)
        connectAll(onlyNew: false)
    }

    static func noServerMessage(_ server: String?) -> String {
        "no JACK server is running\(server.map { " named '\($0)'" } ?? "") (start one with jackd, qjackctl or "
            + "PipeWire's JACK support, or set JACK_DEFAULT_SERVER)"
    }

    /// Whether a JACK server (`server`, or the default) takes a client: one opened under a name of its own and
    /// closed at once.
    static func serverAnswers(_ server: String?) -> Bool {
        var status = jack_status_t(0)
        let options = jack_options_t(JackNoStartServer.rawValue)
        guard
            let probe = try? JackLibrary.open(
                "speechgraph-probe-\(getpid())", options, &status, server, waitingUpTo: 0)
        else { return false }
        let shutDown = Atomic<Bool>(false)  // the probe registers no shutdown callback
        JackLibrary.close(probe, shutDown: shutDown)
        return true
    }

    /// What to say when a running server refused the client `name`.
    static func refusedNameMessage(_ name: String, status: UInt32) -> String {
        let bytes = name.utf8.count
        // JACK makes a taken name unique by adding "-01", "-02", ...
        let renamable = clientNameLimit - 3
        guard bytes > renamable else {
            return "JACK refused the client '\(name)' (status 0x\(String(status, radix: 16)))"
        }
        return "JACK refused the client name '\(name)': another client has it, and at \(bytes) bytes it leaves no "
            + "room for the '-01' JACK adds to make it unique (at most \(renamable) bytes): give a shorter name, or "
            + "stop the other client"
    }

    /// The longest client name JACK takes, in bytes.
    static var clientNameLimit: Int {
        // jack2's jack_client_name_size() counts one more byte than its open takes (65: a 64-byte name is
        // refused, as "server failed"); jack1's is the size with the final NUL.
        min(Int(jack_client_name_size()) - 1, 63)
    }

    /// Why JACK would refuse `name` as a client name, or nil.
    public static func clientNameProblem(_ name: String) -> String? {
        let limit = clientNameLimit
        if name.isEmpty { return "a JACK client name cannot be empty" }
        if name.utf8.count > limit { return "JACK client name '\(name)' is too long: at most \(limit) bytes" }
        if name.contains(":") {
            return "JACK client name '\(name)' holds ':', which separates a port's client from its name"
        }
        return nil
    }

    public var underrunCount: Int { underruns.pointee.load(ordering: .relaxed) }

    /// xruns the server reported since the session started.
    public var xrunCount: Int { notifications.pointee.xruns.load(ordering: .relaxed) }

    /// One line of figures for `speechgraph run --stats`.
    public var statisticsLine: String {
        let d = callbackDurations()
        var line =
            "jack: client \(clientName), \(sampleRate) Hz, period \(bufferSize) frames; "
            + "overrun_frames \(overrunFrames), xruns \(xrunCount), underruns \(underrunCount)"
        if d.count > 0 {
            line += String(
                format: "; callback_us p50 %.1f p99 %.1f max %.1f over %d callbacks", d.p50, d.p99, d.max, d.count)
        }
        return line
    }

    /// The thread JACK runs the process callback on, while the client is active (`nil` before: libjack gives 0).
    public var processThread: pthread_t? {
        guard let client else { return nil }
        let thread = jack_client_thread_id(client)
        return thread == 0 ? nil : thread
    }

    /// Input frames dropped because the rings were full (overruns) since the session started.
    public var overrunFrames: Int { overruns.pointee.load(ordering: .relaxed) }

    /// Callback durations so far: (p50, p99, max) in microseconds, and the number of callbacks.
    /// Read it after `close` (or while running, as an estimate).
    public func callbackDurations() -> (p50: Double, p99: Double, max: Double, count: Int) {
        let t = timing.pointee
        guard t.count > 0 else { return (0, 0, 0, 0) }
        func percentile(_ p: Double) -> Double {
            let target = Int((Double(t.count) * p).rounded(.up))
            var seen = 0
            for b in 0..<CallbackTiming.bucketCount {
                seen += t.buckets[b]
                if seen >= target { return Double(b) + 0.5 }
            }
            return Double(CallbackTiming.bucketCount)
        }
        // A percentile is its 1 µs bucket's middle: never said to be above the exact maximum.
        let max = Double(t.maxNanoseconds) / 1000
        return (min(percentile(0.5), max), min(percentile(0.99), max), max, t.count)
    }

    /// The graph has queued its last output audio: a freewheeling process callback stops waiting for more.
    func endOutput() {
        outputEnded.pointee.store(true, ordering: .releasing)
        outputData.post()
    }

    func closeClient() {
        running.pointee.store(false, ordering: .releasing)
        // A freewheeling callback waiting for the graph stops waiting.
        inputRoom.post()
        outputData.post()
        if let c = client { JackLibrary.close(c, shutDown: notifications.pointee.shutDown) }
        client = nil
        ports = []
    }

    public func close() {
        closeClient()
        isAvailable = false
        // The callback can no longer run (nor a lost client's, once its close returned): the processors' instances
        // and their scratch memory may go.
        let released = Released(
            processors: processors.map { $0.processor }, realtime: realtime, groups: groups)
        processors = []
        abandoned.afterPendingCloses { released.free() }
    }

    /// The processors of a session that closed, and their scratch memory, freed once no callback can reach them.
    private struct Released: @unchecked Sendable {
        // Unchecked: touched by one thread, the one that frees them (the graph's, or the last lost client's closer).
        let processors: [RealtimeProcessor]
        let realtime: UnsafeMutablePointer<RealtimeState>
        let groups: UnsafeMutablePointer<RealtimeGroup>

        func free() {
            for processor in processors { processor.release() }
            for g in 0..<realtime.pointee.groupCount {
                groups[g].interleaved.deallocate()
                groups[g].processed.deallocate()
                groups[g].planar.deallocate()
            }
            realtime.pointee.groupCount = 0
        }
    }

    /// libjack prints its own complaints ("Cannot connect to server socket ...") on stderr; speechgraph
    /// says what went wrong itself, once.
    static func silenceLibjack() {
        jack_set_error_function { _ in }
        jack_set_info_function { _ in }
    }
}
