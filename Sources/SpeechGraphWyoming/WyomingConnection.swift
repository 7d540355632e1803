import Foundation
import NIOCore
import SpeechGraphCore
import SpeechGraphSinks
import Synchronization

/// One transcription: its graph (made off the event loop), the writing end of its `push.input`, and whether it
/// has ended. Made on the event loop; the graph's thread and the maker touch only its Sendable parts.
final class WyomingJob: Sendable {
    let format: (rate: Int, channels: Int)
    /// The language transcripts name: the request's, or the model's first.
    let language: String?
    let graph = Mutex<RunningGraph?>(nil)
    let pusher = Mutex<AudioPusher?>(nil)
    /// The transcript went out at the end of speech: the rest of the audio is not needed.
    let endpointed = Atomic<Bool>(false)
    /// The client's audio-stop came (its audio may still be on its way into the graph).
    let stopReceived = Atomic<Bool>(false)
    /// The client left, or started another stream before this one's end: its graph stops, its replies are dropped.
    let abandoned = Atomic<Bool>(false)

    init(format: (rate: Int, channels: Int), language: String?) {
        self.format = format
        self.language = language
    }
}

/// A Wyoming client's connection: its events in, one transcription at a time, replies out. Everything here runs
/// on the connection's event loop; replies from a graph's thread hop onto it.
final class WyomingConnection: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = WyomingEvent
    typealias OutboundOut = ByteBuffer

    /// Sent by `WyomingServer.drain` through the pipeline.
    struct Drain {}

    private let server: WyomingServer
    private let channel: any Channel
    private var admitted = false
    /// What the last `transcribe` asked for; it applies to the next audio.
    private var request: [String: JSONValue] = [:]
    private var job: WyomingJob?
    /// Graphs of this connection made (or being made) and not yet ended: the current job's, and those of streams
    /// dropped by a newer audio-start, which take a moment to stop (a graph still loading its decoder finishes).
    private var liveGraphs = 0
    /// The current job's graph, to make once the dropped ones have ended: a client that sends audio-start after
    /// audio-start (with no audio-stop) has one graph at a time, not one per audio-start, each with a decoder.
    private var pendingMake: (job: WyomingJob, model: WyomingModel, request: [String: JSONValue])?
    /// Audio for the job's graph that is not in it yet (the graph is being made, or its buffer is full).
    private var waiting: [[Float]] = []
    private var waitingSamples = 0
    /// The bytes of a frame an audio chunk left unfinished (a client that forwards reads of a pipe: chunks of any
    /// size): the next chunk completes it, so the samples after it stay aligned.
    private var partialFrame: [UInt8] = []
    /// Whether this stream was told that a chunk's format differs from its audio-start's.
    private var chunkFormatSaid = false
    /// The client's audio-stop for the current job came (the input ends once `waiting` is in).
    private var stopped = false
    /// After a refused audio-start, or after the transcript went out at the end of speech: chunks are dropped
    /// until the client's audio-stop.
    private var discarding = false
    private var retryScheduled = false
    private var closeWhenIdle = false
    /// The connection is closing (`closeGracefully`): what the client still sends is read and dropped.
    private var closing = false
    /// The last write handed to the channel, to shut the output down after it.
    private var lastWrite: EventLoopFuture<Void>?
    /// The full close of a lingering connection, `lingerTime` after it began closing.
    private var lingerEnd: Scheduled<Void>?

    /// How long a closing connection goes on reading (and dropping) what the client sends, at most.
    static let lingerTime = TimeAmount.seconds(2)

    init(server: WyomingServer, channel: any Channel) {
        self.server = server
        self.channel = channel
    }

    func channelActive(context: ChannelHandlerContext) {
        admitted = server.admit(channel)
        if !admitted {
            let why =
                server.isDraining
                ? "the server is shutting down"
                : "the server is busy (it takes \(server.configuration.maxConnections) connection"
                    + (server.configuration.maxConnections == 1 ? ")" : "s at once)")
            send(.error(why, code: "busy"))
            closeGracefully()
            return
        }
        context.fireChannelActive()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if let lingerEnd {
            lingerEnd.cancel()
            server.endLingering()
            self.lingerEnd = nil
        }
        // The client went away: its graph stops now and gives its decoders back.
        dropJob()
        if admitted { server.release(channel) }
        admitted = false
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard !closing else { return }
        // Framing is lost (or the socket failed): the connection ends, and with it any transcription.
        dropJob()
        if let frame = error as? WyomingFrameError {
            send(.error(frame.description, code: frame.code))
            closeGracefully()
        } else {
            context.close(promise: nil)
        }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is Drain {
            closeWhenIdle = true
            if let job {
                stopped = true
                endInputIfReady(job)
            } else {
                closeGracefully()
            }
        } else if closing {
            return
        } else if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            // Idle: nothing to read, and not because this side stopped reading (a full buffer), nor because the
            // client waits for the transcript of a stream it has ended.
            let waitingForUs = job != nil && (stopped || !waiting.isEmpty)
            if !waitingForUs {
                let seconds = server.configuration.idleTimeout.nanoseconds / 1_000_000_000
                send(.error("no event for \(seconds) s", code: "idle"))
                dropJob()
                closeGracefully()
            }
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard admitted, !closing else { return }
        let event = unwrapInboundIn(data)
        switch event.type {
        case "describe":
            send(server.info)
        case "ping":
            send(WyomingEvent("pong", event.data["text"].map { ["text": $0] } ?? [:]))
        case "transcribe":
            request = event.data
        case "audio-start":
            audioStart(event)
        case "audio-chunk":
            audioChunk(event)
        case "audio-stop":
            if discarding && job == nil {
                discarding = false
            } else if let job, !stopped {
                stopped = true
                job.stopReceived.store(true, ordering: .releasing)
                endInputIfReady(job)
            }
        default:
            // The protocol: events a program does not handle are ignored.
            break
        }
    }

    // MARK: - Audio

    private func audioStart(_ event: WyomingEvent) {
        // A new stream before the previous one was answered: the previous one is dropped, its graph stopped.
        if job != nil { dropJob() }
        discarding = true
        // A transcribe request applies to this stream only, whether it starts or is refused (a refused one went
        // on refusing the next streams, which no transcribe preceded).
        let request = self.request
        self.request = [:]
        guard !closeWhenIdle else {
            send(.error("the server is shutting down", code: "busy"))
            return closeGracefully()
        }
        guard let rate = event.data["rate"]?.integer, AudioFormat.supportedRates.contains(rate) else {
            return send(
                .error("audio-start: 'rate' must be a whole number of Hz, 4000 to 384000", code: "bad-audio"))
        }
        guard event.data["width"]?.integer == 2 else {
            return send(
                .error("audio-start: only 16-bit audio ('width' 2) is taken", code: "bad-audio"))
        }
        guard let channels = event.data["channels"]?.integer, (1...64).contains(channels) else {
            return send(.error("audio-start: 'channels' must be 1 to 64", code: "bad-audio"))
        }
        if let name = request["name"], name.string == nil {
            // Not a name: the default model would answer a request for another one.
            return send(.error("transcribe: 'name' must be a model's name (a string)", code: "no-model"))
        }
        let modelName = request["name"]?.string
        guard
            let model = modelName.map({ n in server.configuration.models.first { $0.name == n } })
                ?? server.configuration.models.first
        else {
            let offered = server.configuration.models.map(\.name).joined(separator: ", ")
            return send(
                .error("no model named '\(modelName ?? "")'; this server offers: \(offered)", code: "no-model"))
        }
        // A language the model does not speak (its primary subtag: en-US is en) gets an error, not English text
        // labelled as that language.
        let asked = request["language"]?.string
        if let asked, !model.languages.isEmpty, !model.languages.contains(where: { Self.sameLanguage($0, asked) }) {
            return send(
                .error(
                    "model '\(model.name)' speaks \(model.languages.joined(separator: ", ")), not '\(asked)'",
                    code: "no-model"))
        }
        discarding = false
        stopped = false
        dropWaiting()
        let job = WyomingJob(format: (rate, channels), language: asked ?? model.languages.first)
        self.job = job
        if liveGraphs == 0 {
            make(job, model: model, request: request)
        } else {
            pendingMake = (job, model, request)  // its audio waits (and then the socket) meanwhile
        }
    }

    /// Whether two language tags name one language: the same primary subtag (`en`, `en-US`, `en_gb`).
    static func sameLanguage(_ a: String, _ b: String) -> Bool {
        func primary(_ tag: String) -> Substring {
            tag.split(whereSeparator: { $0 == "-" || $0 == "_" }).first.map { Substring($0.lowercased()) } ?? ""
        }
        return primary(a) == primary(b)
    }

    private func audioChunk(_ event: WyomingEvent) {
        guard !discarding, let job, !stopped else { return }
        if job.endpointed.load(ordering: .acquiring) { return }
        guard event.data["width"].map({ $0.integer == 2 }) ?? true,
            event.data["rate"].map({ $0.integer == job.format.rate }) ?? true,
            event.data["channels"].map({ $0.integer == job.format.channels }) ?? true
        else {
            // Said once for the stream, not for each of its chunks.
            if !chunkFormatSaid {
                chunkFormatSaid = true
                send(.error("audio-chunk: its format differs from audio-start's", code: "bad-audio"))
            }
            return
        }
        guard let payload = event.payload else { return }
        var bytes = partialFrame
        bytes += payload.readableBytesView
        let frameBytes = 2 * job.format.channels
        let frames = bytes.count / frameBytes
        partialFrame = Array(bytes[(frames * frameBytes)...])
        guard frames > 0 else { return }
        var samples = [Float](repeating: 0, count: frames * job.format.channels)
        for i in 0..<samples.count {
            let v = Int16(bitPattern: UInt16(bytes[2 * i]) | UInt16(bytes[2 * i + 1]) << 8)
            samples[i] = Float(v) / 32768
        }
        waiting.append(samples)
        waitingSamples += samples.count
        flush(job)
    }

    /// Moves waiting audio into the graph while its buffer has room (a chunk larger than the room goes in part by
    /// part). When it has none (a client sending faster than the graph decodes), the socket stops being read until
    /// it has: TCP slows the client down, nothing is dropped, and the event loop never waits.
    private func flush(_ job: WyomingJob) {
        guard let pusher = job.pusher.withLock({ $0 }) else {
            // The graph is being made: `ready` flushes. Until then the client is read while little is held.
            updateReading()
            return
        }
        let channels = job.format.channels
        while !waiting.isEmpty {
            let room = pusher.freeFrames * channels
            guard room > 0 else { break }
            if waiting[0].count <= room {
                pusher.write(waiting[0])
                waitingSamples -= waiting[0].count
                waiting.removeFirst()
            } else {
                pusher.write(Array(waiting[0][..<room]))
                waiting[0].removeFirst(room)
                waitingSamples -= room
            }
        }
        updateReading()
        if waiting.isEmpty {
            endInputIfReady(job)
        } else {
            scheduleRetry()
        }
    }

    /// Audio held here at most before the socket stops being read: 8 MB of samples.
    static let maxWaitingSamples = 2 * 1024 * 1024

    /// The current stream, if any, is dropped: its graph stops (giving its decoders back), its replies are not sent,
    /// and its waiting audio goes.
    private func dropJob() {
        if let job { abandon(job) }
        job = nil
        dropWaiting()
    }

    private func dropWaiting() {
        waiting = []
        waitingSamples = 0
        partialFrame = []
        chunkFormatSaid = false
        updateReading()
    }

    /// The socket is read while the replies to it can be written (a client that sends `describe` or `ping` and never
    /// reads would otherwise fill the server's memory with replies) and little audio waits for the graph; a closing
    /// connection reads (and drops) all it gets.
    private func updateReading() {
        let read = closing || (channel.isWritable && waitingSamples <= Self.maxWaitingSamples)
        _ = channel.setOption(ChannelOptions.autoRead, value: read)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        updateReading()
        context.fireChannelWritabilityChanged()
    }

    private func scheduleRetry() {
        guard !retryScheduled else { return }
        retryScheduled = true
        let handler = NIOLoopBound(self, eventLoop: channel.eventLoop)
        channel.eventLoop.scheduleTask(in: .milliseconds(10)) {
            let me = handler.value
            me.retryScheduled = false
            if let job = me.job { me.flush(job) }
        }
    }

    private func endInputIfReady(_ job: WyomingJob) {
        guard stopped, waiting.isEmpty, let pusher = job.pusher.withLock({ $0 }) else { return }
        pusher.end()
    }

    private func abandon(_ job: WyomingJob) {
        job.abandoned.store(true, ordering: .releasing)
        job.endpointed.store(true, ordering: .releasing)
        job.graph.withLock { $0 }?.stop()
        job.pusher.withLock { $0 }?.end()
    }

    // MARK: - The graph

    /// Plans and makes the job's graph on the server's maker queue; its replies come back to this loop.
    private func make(_ job: WyomingJob, model: WyomingModel, request: [String: JSONValue]) {
        liveGraphs += 1
        let loop = channel.eventLoop
        let handler = NIOLoopBound(self, eventLoop: loop)
        let server = self.server
        let outlet = WyomingOutlet(
            send: { reply in
                loop.execute { handler.value.reply(reply, for: job) }
            },
            endpoint: {
                job.endpointed.store(true, ordering: .releasing)
                loop.execute { handler.value.endpointed(job) }
            },
            inputComplete: { job.stopReceived.load(ordering: .acquiring) })
        let overrides = Self.overrides(
            model: model, format: job.format, request: request, phrases: server.configuration.phrasesFromRequests)
        server.makers.async {
            // The client has gone (or the request ended) while this waited: nothing to make.
            guard !job.endpointed.load(ordering: .acquiring) else {
                return loop.execute { handler.value.ended(job, failure: nil) }
            }
            do {
                let (graph, pusher) = try server.makeGraph(model, overrides: overrides, outlet: outlet)
                job.graph.withLock { $0 = graph }
                job.pusher.withLock { $0 = pusher }
                if job.endpointed.load(ordering: .acquiring) { graph.stop() }
                graph.start()
                server.activeGraphs.add(1, ordering: .relaxed)
                Task {
                    let failure: String?
                    do {
                        try await graph.wait()
                        failure = nil
                    } catch {
                        failure = "\(error)"
                    }
                    // The graph holds the outlet, whose closures hold the job: let go of it here.
                    job.graph.withLock { $0 = nil }
                    job.pusher.withLock { $0 = nil }
                    server.makers.async { server.configuration.afterTranscription() }
                    loop.execute { handler.value.ended(job, failure: failure) }
                    server.activeGraphs.subtract(1, ordering: .relaxed)
                }
                loop.execute { handler.value.ready(job) }
            } catch {
                let text = (error as? GraphError)?.diagnostics.map(\.description).joined(separator: "\n") ?? "\(error)"
                loop.execute { handler.value.ended(job, failure: text) }
            }
        }
    }

    /// The request's settings as parameter overrides: the audio's format on the input, `vad_sensitivity` on the
    /// vad nodes' pauses, `transcript_names` and `transcript_terms` as the recognizers' contextual phrases.
    static func overrides(
        model: WyomingModel, format: (rate: Int, channels: Int), request: [String: JSONValue], phrases usePhrases: Bool
    ) -> [GraphPlanner.Override] {
        // The input's buffer holds at most 4 Mi samples (16 MB), whatever rate and channels the client chose.
        let seconds = min(model.inputBuffer, Double(4 * 1024 * 1024) / Double(format.rate * format.channels))
        var o: [GraphPlanner.Override] = [
            .init(node: model.input, parameter: "rate", value: .number(Double(format.rate), unit: "Hz")),
            .init(node: model.input, parameter: "channels", value: .number(Double(format.channels), unit: nil)),
            .init(node: model.input, parameter: "buffer", value: .number(max(seconds, 0.05), unit: "s")),
        ]
        let factor: Double? =
            switch request["vad_sensitivity"]?.string {
            case "relaxed": 2
            case "aggressive": 0.5
            default: nil
            }
        if let factor {
            for vad in model.vads {
                let pause = max(vad.minSilence, vad.hangover) * factor
                for p in ["min-silence", "hangover"] {
                    o.append(.init(node: vad.name, parameter: p, value: .number(pause * 1000, unit: "ms")))
                }
            }
        }
        guard usePhrases else { return o }
        let phrases = (request["transcript_names"]?.strings ?? []) + (request["transcript_terms"]?.strings ?? [])
        let cleaned = phrases.map { $0.replacingOccurrences(of: "|", with: " ") }.filter {
            !$0.trimmingCharacters(in: .whitespaces).isEmpty
        }
        if !cleaned.isEmpty {
            for asr in model.recognizers {
                o.append(.init(node: asr, parameter: "phrases", value: .list(Array(cleaned.prefix(100)))))
            }
        }
        return o
    }

    private func ready(_ job: WyomingJob) {
        guard self.job === job else { return }
        flush(job)
    }

    private func reply(_ reply: WyomingReply, for job: WyomingJob) {
        guard channel.isActive, !job.abandoned.load(ordering: .acquiring) else { return }
        let event: WyomingEvent =
            switch reply {
            case .transcriptStart: WyomingEvent("transcript-start", language(for: job))
            case .transcriptChunk(let text): WyomingEvent("transcript-chunk", ["text": .string(text)])
            case .transcriptStop: WyomingEvent("transcript-stop")
            case .transcript(let text):
                WyomingEvent("transcript", ["text": .string(text)].merging(language(for: job)) { a, _ in a })
            }
        send(event)
    }

    private func language(for job: WyomingJob) -> [String: JSONValue] {
        job.language.map { ["language": .string($0)] } ?? [:]
    }

    /// The transcript went out at the end of speech: the graph stops, and the client's further audio is dropped.
    private func endpointed(_ job: WyomingJob) {
        job.graph.withLock { $0 }?.stop()
        guard self.job === job else { return }
        dropWaiting()
    }

    private func ended(_ job: WyomingJob, failure: String?) {
        liveGraphs -= 1
        if liveGraphs == 0, let pending = pendingMake {
            pendingMake = nil
            if pending.job === self.job { make(pending.job, model: pending.model, request: pending.request) }
        }
        if let failure, channel.isActive, !job.abandoned.load(ordering: .acquiring) {
            send(.error("the transcription failed: \(failure)", code: "failed"))
        }
        guard self.job === job else { return }
        self.job = nil
        dropWaiting()
        // Chunks still coming for this stream (after an endpoint) are dropped until its audio-stop.
        discarding = !stopped
        if closeWhenIdle { closeGracefully() }
    }

    // MARK: - Writing

    private func send(_ event: WyomingEvent) {
        if event.type == "error" {
            let peer = channel.remoteAddress.map { a in
                let host = a.ipAddress.map { $0.contains(":") ? "[\($0)]" : $0 } ?? "?"
                return "\(host):\(a.port ?? 0)"
            }
            // The text may quote the client (a model name): its control characters are written as escapes.
            let text = Diagnostic.printable(event.data["text"]?.string ?? "")
            server.clientLog.note(
                "speechgraph: wyoming: \(peer ?? "a client"): \(text) (\(event.data["code"]?.string ?? "error"))")
        }
        var buffer = channel.allocator.buffer(capacity: 256)
        event.write(into: &buffer)
        lastWrite = channel.writeAndFlush(buffer)
    }

    /// Ends the connection without losing what was sent: the output is shut down once the last event is written
    /// (the client reads every event, then the end of the stream), and what the client still sends is read and
    /// dropped until it closes its side, or for `lingerTime` at most. Closing the socket at once, with the client's
    /// audio unread, would make the kernel reset the connection and throw away replies the client had not read yet.
    /// When `WyomingServer.maxLingering` connections linger already, it closes as soon as its last event is written.
    private func closeGracefully() {
        guard !closing else { return }
        closing = true
        let channel = self.channel
        let written = lastWrite ?? channel.eventLoop.makeSucceededVoidFuture()
        guard channel.isActive, server.beginLingering() else {
            written.whenComplete { _ in channel.close(promise: nil) }
            return
        }
        updateReading()
        written.whenComplete { _ in channel.close(mode: .output, promise: nil) }
        lingerEnd = channel.eventLoop.scheduleTask(in: Self.lingerTime) { channel.close(promise: nil) }
    }
}
