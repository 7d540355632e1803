import CJack
import Foundation
import SpeechGraphCore

/// Settings shared by the jack.* nodes of one graph.
enum JackSettings {
    /// The largest period JACK servers take (jackd's -p: 8192 frames): the rings hold two at least, whatever
    /// 'buffer' says, so that a period always fits.
    static let largestPeriod = 8192

    /// The server: JACK_DEFAULT_SERVER, as libjack itself reads it.
    static var server: String? { ProcessInfo.processInfo.environment["JACK_DEFAULT_SERVER"] }

    /// What the jack.* nodes of a graph require: its JACK client, and the options that client is made with.
    static let requires = [JackClientOptions.key, JackSession.key]

    /// The rate to plan a jack.* node at: planning to run, the server's, asked through the graph's own
    /// session (its client opens here, once); only checking, nothing is opened and 48 kHz is assumed.
    static func planningRate(_ context: inout PlanContext) throws -> Int {
        if let resources = context.resources { return try resources.required(JackSession.self).openClient() }
        context.notes.append(
            "the JACK server is not asked for its rate when the graph is only checked: "
                + "\(assumedRate / 1000) kHz assumed (a run plans at the server's own rate)")
        return assumedRate
    }
    static let assumedRate = 48000

    /// The `port` parameter as JACK would take it: ports are registered as PORT_1 ... PORT_`ports`, each short
    /// name at most 255 bytes (JACK cuts longer ones, and cut names can collide).
    static func checkPortName(_ config: NodeConfig, ports: Int) throws {
        let port = config.string(of: "port")
        if port.isEmpty { throw SpeechGraphError("a JACK port name cannot be empty", parameter: "port") }
        if port.contains(":") {
            throw SpeechGraphError(
                "JACK port name '\(port)' holds ':', which separates a port's client from its name", parameter: "port")
        }
        let longest = port.utf8.count + 1 + String(ports).utf8.count
        if longest > 255 {
            throw SpeechGraphError(
                "JACK port name is too long: with its _N suffix at most 255 bytes (this one makes \(longest))",
                parameter: "port")
        }
    }

    static func patterns(_ text: String?) -> [String] {
        (text ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }
}

/// The `jack.input` node: audio from JACK ports into the graph.
///
/// Lets a real-time safe plugin node that follows a jack.input run in the process callback.
final class JackInputRealtimeHost: RealtimeProcessorHost {
    let session: JackSession
    let group: String
    let channels: Int

    init(session: JackSession, group: String, channels: Int) {
        self.session = session
        self.group = group
        self.channels = channels
    }

    func host(_ processor: RealtimeProcessor) -> Bool {
        session.hostProcessor(processor, group: group, channels: channels)
    }
}

/// The JACK process callback copies each period into one ring per port; this node, on the graph thread,
/// waits for the rings, reads them and emits interleaved blocks timed on the server's sample clock.
public final class JackInputNode: SourceNode, RealtimeProcessorHosting {
    public static let descriptor = NodeDescriptor(
        typeName: "jack.input",
        summary: "Live audio from JACK input ports (or PipeWire's JACK interface).",
        doc: """
            Registers 'channels' input ports named PORT_1, PORT_2, ... on the speechgraph client, connects \
            them to the ports matching 'connect' at start and to matching ports that appear later (a \
            connection removed in a patchbay stays removed), and accepts any connection made from outside \
            (qjackctl, Carla, jack_connect). Audio lost because the graph fell behind, and JACK xruns, become \
            gap events; when the server stops, availability false is emitted and the utterance in flight is \
            finished with the audio heard, and when a server returns the ports come back, connected again by \
            their patterns (not the connections made from outside), and availability true.
            """,
        category: .input,
        ports: [
            .audioOutput("out", format: .computed, doc: "The ports' audio, interleaved, at the server's rate."),
            .eventOutput(
                "events", emits: .only([.gap, .availability, .warning]),
                doc: "gap and availability events; a warning event the first time samples that are not "
                    + "numbers (NaN, infinite) were faded out to silence."),
        ],
        parameters: [
            .integer("channels", default: 1, range: 1...64, doc: "Number of input ports."),
            ParameterDescriptor(
                "port", kind: .string, default: .string("in"), uniqueIn: "JACK port",
                doc: "Base name of the ports: in_1, in_2, ... (no ':'; with the _N at most 255 bytes)."),
            .string(
                "connect", default: nil,
                doc: "Ports to connect to, as shell patterns (*, ?, [...]) separated by commas "
                    + "(\"system:capture_*\"; \"in_1\", with no client, is a port of this graph's own client). With "
                    + "as many patterns as channels, pattern N feeds port N; otherwise every matching port is "
                    + "connected to every port of this node."),
            .quantity(
                "buffer", default: 2000, .milliseconds, range: 50...60_000,
                doc:
                    "Audio held between the JACK thread and the graph before periods are dropped (at least two "
                    + "periods of 8192 frames, whatever the server's period); while the server freewheels (an "
                    + "export), a period waits for room instead."),
            .integer("block", default: 1024, range: 16...65536, doc: "Largest block handed to the graph, in frames."),
        ],
        threading: .realtime, isLive: true, requires: JackSettings.requires)

    public static let type = NodeType(
        descriptor,
        formats: { context in
            let rate = try JackSettings.planningRate(&context)
            return ["out": AudioFormat(sampleRate: rate, channelCount: context.config.integer(of: "channels"))]
        },
        maxOutputFrames: { config, _, _ in config.integer(of: "block") },
        validate: { try JackSettings.checkPortName($0, ports: $0.integer(of: "channels")) },
        make: { try JackInputNode($0) })

    private let name: String
    private let session: JackSession
    private let rings: [AudioRing]
    private let format: AudioFormat
    private let block: Int
    private let scratch: UnsafeMutablePointer<Float>
    private let interleaved: UnsafeMutablePointer<Float>
    /// Stream time in frames: audio emitted plus audio lost.
    private var streamFrame: Int64 = 0
    private var pendingGap: GapRecord?
    /// Where the graph's audio epoch (for the jsonl sink's `latency`) is set, once, from the first audio taken.
    private let resources: GraphResources
    /// xruns are reported at most once a second, as one gap event with their count.
    private var xrunsPending = 0
    private var sampleGuard = SampleGuard()
    private var xrunsSince: Int64 = 0
    private var lastXrunReport = Date.distantPast
    private let exitOnServerLoss: Bool
    /// This node's place among the session's subscribers (its changes and gaps).
    private let subscriber: Int
    /// Runs the real-time safe plugin node the plan places in this node's process callback (right after it).
    public let realtimeHost: any RealtimeProcessorHost

    init(_ context: NodeContext) throws {
        let c = context.config
        name = c.name
        format = context.outputFormats["out"]!
        block = c.integer(of: "block")
        exitOnServerLoss = context.resources.required(JackClientOptions.self).exitOnServerLoss
        session = context.resources.required(JackSession.self)
        resources = context.resources
        try session.expect(rate: format.sampleRate)
        let frames = Int(c.number(of: "buffer") * Double(format.sampleRate))
        let base = c.string(of: "port")
        let patterns = JackSettings.patterns(c.string("connect"))
        var rings: [AudioRing] = []
        for channel in 1...format.channelCount {
            // Two of the largest periods at least: a period that does not fit whole is dropped, so a 'buffer' of
            // 50 ms (1024 frames) under a period of 2048 once lost all the audio.
            let ring = AudioRing(minimumCapacity: max(frames, 2 * JackSettings.largestPeriod))
            // With several channels and as many patterns, pattern N feeds port N; otherwise every pattern every port.
            let connect =
                patterns.count == format.channelCount && format.channelCount > 1 ? [patterns[channel - 1]] : patterns
            try session.addPort(
                name: "\(base)_\(channel)", prettyName: "\(c.name) \(channel)", group: "\(c.name)",
                order: channel, isInput: true, connect: connect, ring: ring)
            rings.append(ring)
        }
        self.rings = rings
        subscriber = session.subscribe(group: c.name)
        // A real-time safe plugin node right after this one may run in the process callback.
        realtimeHost = JackInputRealtimeHost(session: session, group: c.name, channels: format.channelCount)
        scratch = .allocate(capacity: block)
        scratch.initialize(repeating: 0, count: block)
        interleaved = .allocate(capacity: block * format.channelCount)
        interleaved.initialize(repeating: 0, count: block * format.channelCount)
    }

    deinit {
        scratch.deallocate()
        interleaved.deallocate()
    }

    public func prepare() throws { try session.start() }

    public var position: Double { Double(streamFrame) / Double(format.sampleRate) }

    /// The JACK process callback posts the graph's wake signal after each period.
    public var isLive: Bool { true }

    private func time(_ frame: Int64) -> Double { Double(frame) / Double(format.sampleRate) }

    /// A `warning` event on the events port, now.
    private func warn(_ reason: String, _ output: NodeOutput) throws {
        try output.emit(.warning(node: name, time: time(streamFrame), reason: reason), port: 1)
    }

    public func pull(output: NodeOutput) throws -> Bool {
        session.poll()
        for change in session.takeChanges(subscriber: subscriber) {
            switch change {
            case .lost(let reason):
                try drain(output: output)
                // The utterance in flight ends with the audio that was heard; then the news.
                try output.emitDiscontinuity()
                try output.emit(.availability(node: name, isAvailable: false, reason: reason), port: 1)
                if exitOnServerLoss {
                    // Everything heard has been delivered; stop with the reason (exit status 1).
                    throw SpeechGraphError(reason)
                }
            case .restored(let seconds):
                let lost = Int64((seconds * Double(format.sampleRate)).rounded())
                try output.emit(
                    .gap(
                        node: name, range: TimeRange(start: time(streamFrame), end: time(streamFrame + lost)),
                        reason: "JACK server unavailable"), port: 1)
                streamFrame += lost
                try output.emit(
                    .availability(
                        node: name, isAvailable: true,
                        reason: "JACK server is back; client '\(session.clientName)' reconnected"),
                    port: 1)
            case .xruns(let count):
                if xrunsPending == 0 { xrunsSince = streamFrame }
                xrunsPending += count
            case .rateChanged(let from, let to):
                try output.emit(
                    .availability(
                        node: name, isAvailable: false,
                        reason: "the JACK server came back at \(to) Hz; this graph runs at \(from) Hz: "
                            + "restart speechgraph"), port: 1)
            case .closeStuck:
                try warn(
                    "libjack has not released the client of the JACK server that stopped (a libjack bug, "
                        + "jackaudio/jack2#395): this client cannot connect again until it does; restart speechgraph "
                        + "to reconnect", output)
            case .openWaits(let why):
                try warn(why, output)
            case .renamed(let from, let to):
                try warn(
                    "another JACK client is called '\(from)': this graph's client is '\(to)' (its ports are \(to):...)",
                    output)
            case .unmatched(let pattern, let port):
                try warn(
                    "'connect' pattern '\(pattern)' matches no JACK port now: \(port) is connected to matching ports "
                        + "when they appear (jack_lsp lists the ports)", output)
            }
        }
        if xrunsPending > 0, Date().timeIntervalSince(lastXrunReport) >= 1 {
            lastXrunReport = Date()
            // JACK does not say how much audio an xrun cost: a point in time, with the count.
            try output.emit(
                .gap(
                    node: name, range: TimeRange(start: time(xrunsSince), end: time(xrunsSince)),
                    reason: xrunsPending == 1 ? "JACK xrun" : "\(xrunsPending) JACK xruns"), port: 1)
            xrunsPending = 0
        }
        try drain(output: output)
        return true
    }

    /// Emits what the rings held when it was called (no more, so that a slow graph still returns to
    /// its loop and sees a stop), in blocks, with gap events where periods were dropped.
    private func drain(output: NodeOutput) throws {
        var budget = rings.map(\.endpoint.availableToRead).min() ?? 0
        if budget > 0 {
            // The newest of this audio was captured a moment ago (the last period): audio time 0, that much before,
            // counting periods dropped (a full ring) since the session started as heard too.
            resources.setAudioEpochIfUnset(
                heard: Double(rings[0].endpoint.readCount + budget + session.overrunFrames) / Double(format.sampleRate))
        }
        while true {
            if pendingGap == nil { pendingGap = session.nextGap(subscriber: subscriber) }
            var available = rings.map(\.endpoint.availableToRead).min() ?? 0
            let readSoFar = rings[0].endpoint.readCount
            if let gap = pendingGap, gap.ringIndex <= readSoFar {
                // Everything before the gap has been emitted: report it and move the clock past it.
                try output.emit(
                    .gap(
                        node: name,
                        range: TimeRange(start: time(streamFrame), end: time(streamFrame + Int64(gap.frames))),
                        reason: "overrun: the graph fell behind the audio"), port: 1)
                streamFrame += Int64(gap.frames)
                pendingGap = nil
                continue
            }
            if let gap = pendingGap { available = min(available, gap.ringIndex - readSoFar) }
            available = min(available, budget)
            guard available > 0 else { return }
            let n = min(available, block)
            budget -= n
            let channels = format.channelCount
            if channels == 1 {
                _ = rings[0].endpoint.read(into: interleaved, maxCount: n)
            } else {
                for (c, ring) in rings.enumerated() {
                    _ = ring.endpoint.read(into: scratch, maxCount: n)
                    for i in 0..<n { interleaved[i * channels + c] = scratch[i] }
                }
            }
            // A freewheeling process callback may be waiting for this room.
            session.inputRoom.post()
            // Any JACK client can write NaN into our port: it becomes silence here, before any node sees it.
            sampleGuard.clean(UnsafeMutableBufferPointer(start: interleaved, count: n * channels), channels: channels)
            if let warning = sampleGuard.firstWarning(node: name, time: { time(streamFrame + Int64($0)) }) {
                try output.emit(warning, port: 1)
            }
            try output.emit(
                AudioBlock(
                    samples: UnsafeBufferPointer(start: interleaved, count: n * channels),
                    format: format, startFrame: streamFrame))
            streamFrame += Int64(n)
        }
    }

    public func close() { session.close() }

    public var warnings: [String] { sampleGuard.warning.map { [$0] } ?? [] }
}

/// The `jack.output` node: any audio stream of the graph back out to JACK ports.
public final class JackOutputNode: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "jack.output",
        summary: "Plays an audio stream of the graph on JACK output ports.",
        doc: """
            One output port per channel of its input (PORT_1, PORT_2, ...), connected to the ports matching \
            'connect'. The input is resampled to the server's rate by the planner. Playback starts once \
            'prebuffer' of audio is queued; if the graph falls behind, silence is played until it catches up \
            (while the server freewheels, a period waits for the graph's audio instead). A graph that passes its \
            input on tells JACK the latency it adds: the prebuffer, up to a period more.
            """,
        category: .sink,
        ports: [.audioInput("in", .any, doc: "The audio to play.")],
        parameters: [
            ParameterDescriptor(
                "port", kind: .string, default: .string("out"), uniqueIn: "JACK port",
                doc: "Base name of the ports: out_1, out_2, ... (no ':'; with the _N at most 255 bytes)."),
            .string(
                "connect", default: nil,
                doc: "Ports to connect to, as shell patterns (*, ?, [...]) separated by commas (\"in_1\", with no "
                    + "client, is a port of this graph's own client)."),
            .quantity(
                "prebuffer", default: 200, .milliseconds, range: 0...10_000,
                doc: "Audio queued before playback starts (and after an underrun)."),
            .quantity(
                "buffer", default: 2000, .milliseconds, range: 50...60_000,
                doc: "Most audio queued (at least two periods of 8192 frames)."),
        ],
        threading: .realtime, requires: JackSettings.requires)

    public static let type = NodeType(
        descriptor,
        inputRequirement: { context, _ in
            AudioRequirement(rate: .fixed(try JackSettings.planningRate(&context)))
        },
        // One port per channel of the input: as many as a session takes.
        validate: { try JackSettings.checkPortName($0, ports: RealtimeState.maxPorts) },
        make: { try JackOutputNode($0) })

    private let session: JackSession
    private let rings: [AudioRing]
    private let channels: Int
    private let scratch: UnsafeMutablePointer<Float>
    private let capacity: Int
    private let exitOnServerLoss: Bool
    private var unplayedFrames = 0

    init(_ context: NodeContext) throws {
        let c = context.config
        guard let input = context.inputFormats["in"] else { throw SpeechGraphError("jack.output has no input") }
        exitOnServerLoss = context.resources.required(JackClientOptions.self).exitOnServerLoss
        channels = input.channelCount
        session = context.resources.required(JackSession.self)
        try session.expect(rate: input.sampleRate)
        let frames = Int(c.number(of: "buffer") * Double(input.sampleRate))
        let prebuffer = Int(c.number(of: "prebuffer") * Double(input.sampleRate))
        let base = c.string(of: "port")
        let patterns = JackSettings.patterns(c.string("connect"))
        var rings: [AudioRing] = []
        for channel in 1...channels {
            let ring = AudioRing(minimumCapacity: max(frames, prebuffer * 2, 2 * JackSettings.largestPeriod))
            let connect = patterns.count == channels && channels > 1 ? [patterns[channel - 1]] : patterns
            try session.addPort(
                name: "\(base)_\(channel)", prettyName: "\(c.name) \(channel)", group: c.name, order: channel,
                isInput: false, connect: connect, ring: ring, prebufferFrames: prebuffer)
            rings.append(ring)
        }
        self.rings = rings
        capacity = rings[0].capacity
        scratch = .allocate(capacity: max(context.maxBlockFrames, 1))
        scratch.initialize(repeating: 0, count: max(context.maxBlockFrames, 1))
    }

    deinit { scratch.deallocate() }

    public func prepare() throws { try session.start() }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        let n = block.frameCount
        if !session.isAvailable {
            // No server: the audio has nowhere to go and is dropped at once (the graph keeps its pace), while
            // the session tries to reconnect.
            session.poll()
            if !session.isAvailable { return try unplayable(n) }
        }
        var done = 0
        while done < n {
            let room = rings.map(\.endpoint.availableToWrite).min() ?? 0
            if room == 0 {
                _ = session.outputWake.wait(timeout: 0.05)
                session.poll()
                if !session.isAvailable { return try unplayable(n - done) }
                continue
            }
            let m = min(room, n - done)
            for (c, ring) in rings.enumerated() {
                if channels == 1 {
                    _ = ring.endpoint.write(block.samples.baseAddress! + done, count: m)
                } else {
                    for i in 0..<m { scratch[i] = block.samples[(done + i) * channels + c] }
                    _ = ring.endpoint.write(scratch, count: m)
                }
            }
            // A freewheeling process callback may be waiting for this audio.
            session.outputData.post()
            done += m
        }
    }

    /// `frames` that have no server to play on: counted, or with `--exit-on-server-loss` the end of the run.
    private func unplayable(_ frames: Int) throws {
        if exitOnServerLoss { throw SpeechGraphError("the JACK server stopped") }
        unplayedFrames += frames
    }

    /// At the end, wait until what was queued has been played (the ring drains at the server's pace). Without a
    /// server, what is still queued will not be played: counted with the rest (it was queued before the server
    /// went, up to 'buffer' of it).
    public func finish(output: NodeOutput) throws {
        session.endOutput()
        let deadline = Date().addingTimeInterval(Double(capacity) / Double(session.sampleRate) + 1)
        while session.isAvailable, rings.contains(where: { $0.endpoint.availableToRead > 0 }), Date() < deadline {
            _ = session.outputWake.wait(timeout: 0.05)
            session.poll()
        }
        if !session.isAvailable { unplayedFrames += rings.map(\.endpoint.availableToRead).max() ?? 0 }
    }

    public func close() { session.close() }

    /// Audio that had no server to play on, in a graph without a jack.input (whose events say when the server
    /// went and came back, and whose run the server's absence does not fail).
    public var warnings: [String] {
        guard unplayedFrames > 0, session.sampleRate > 0, !session.hasInputs else { return [] }
        let seconds = Double(unplayedFrames) / Double(session.sampleRate)
        return ["\(String(format: "%.2f", seconds)) s of audio were not played: the JACK server was not running"]
    }
}

/// How a graph's JACK client is made: `speechgraph run --name`, `--stats`, `--exit-on-server-loss` (or an app's own
/// choice). A graph whose caller provides none has the defaults.
public final class JackClientOptions: GraphResource {
    /// The client name asked for ("speechgraph"); JACK makes it unique if it is taken.
    public let name: String
    /// Measure the process callback (`run --stats`: its time, its allocations).
    public let measureCallback: Bool
    /// A lost server stops the graph (exit status 1) instead of being waited for.
    public let exitOnServerLoss: Bool

    public init(name: String = "speechgraph", measureCallback: Bool = false, exitOnServerLoss: Bool = false) {
        self.name = name
        self.measureCallback = measureCallback
        self.exitOnServerLoss = exitOnServerLoss
    }

    public static func make(for resources: GraphResources) -> JackClientOptions? { JackClientOptions() }
}

/// The graph's JACK client: one per running graph, made by the planner for its first jack.* node (its client opens
/// when the graph is planned to run, to ask the server's rate).
extension JackSession: GraphResource {
    public static func make(for resources: GraphResources) throws -> Self? {
        let options = try resources.prepare(JackClientOptions.self) ?? JackClientOptions()
        return Self(
            name: options.name, server: JackSettings.server, measureCallback: options.measureCallback,
            inputWake: resources.wake)
    }
}
