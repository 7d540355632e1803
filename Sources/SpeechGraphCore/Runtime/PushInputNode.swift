import Synchronization

/// The writing end of a `push.input` node: audio fed into a running graph from outside (an app's
/// microphone, a network stream, standard input, a test), from any thread, in chunks of any size.
///
/// The samples go into a preallocated single-producer ring that the graph thread reads. Writers are
/// serialised by a lock on this side only, so several threads may write (one after the other); the
/// graph thread never takes that lock. A write that does not fit either waits for room
/// (`waitForRoom: true`, for a producer that may run ahead of the graph: a file, a pipe) or is dropped
/// whole and reported as a gap event on the node's `events` port (the default, for live audio that must
/// never block its producer). A writer that would wait before its graph has started starts it (`RunningGraph`).
public final class AudioPusher: Sendable {
    /// The format written samples must have: interleaved float32 at this rate and channel count.
    public let format: AudioFormat
    let ring: AudioRing
    let gaps = SPSCRing<GapRecord>(minimumCapacity: 256)
    /// Serialises writers; holds what one write leaves to the next.
    private let writer: Mutex<WriterState>
    private let ended = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)
    private let dropped = Atomic<Int>(0)
    /// Why the stream ended early, when the writer said (`end(warning:)`).
    private let endWarning = Mutex<String?>(nil)
    /// Posted by the graph thread after it has read: room for a waiting writer.
    let room = WakeSignal()
    /// Called before a writer waits for room (the graph that reads this ring starts itself there).
    private let waiting = Mutex<(@Sendable () -> Void)?>(nil)
    /// The graph's wake signal: posted once `wakeFrames` have been written since it last was, when a write finds
    /// no room, and at the end.
    private let wake: WakeSignal
    /// 20 ms of audio (or half the ring, when that is less): a graph fed 10 ms chunks (or a JACK-like source,
    /// smaller ones) is woken 50 times a second, not once per chunk (each wake-up costs CPU, on a virtual machine
    /// tens of microseconds); its vad hears of the end of speech at most 20 ms later. What is written and not yet
    /// posted is read at the next post, or by the graph's own 50 ms poll.
    private let wakeFrames: Int

    init(format: AudioFormat, capacityFrames: Int, wake: WakeSignal) {
        self.format = format
        ring = AudioRing(minimumCapacity: capacityFrames * format.channelCount)
        self.wake = wake
        // At most half the ring, so that a writer that waits for room on its own (`freeFrames`) is never kept
        // waiting on audio the graph was not told of.
        wakeFrames = max(1, min(format.sampleRate / 50, ring.capacity / format.channelCount / 2))
        var state = WriterState()
        state.carry.reserveCapacity(format.channelCount)
        writer = Mutex(state)
    }

    struct WriterState {
        /// The samples of a frame a write left unfinished (the next one completes it).
        var carry: [Float] = []
        /// The frames dropped since audio was last written, as one gap: recorded just before the next audio
        /// that fits (or at the end), so that a stall of any length is one gap event and the gap ring never
        /// fills while the graph is away.
        var pendingGap: GapRecord?
        /// Frames written since the graph's wake signal was last posted.
        var unwoken = WakeCount()
    }

    /// `action` runs before a writer waits for room: `RunningGraph` starts there, since a graph that has not
    /// started would never make room.
    func beforeWaiting(_ action: @escaping @Sendable () -> Void) { waiting.withLock { $0 = action } }

    /// Frames a write can take now without waiting or dropping (a single writer may rely on it). Any thread.
    public var freeFrames: Int { ring.endpoint.availableToWrite / format.channelCount }

    /// Frames dropped because the ring was full (with `waitForRoom: false`). Any thread.
    public var droppedFrames: Int { dropped.load(ordering: .relaxed) }

    /// Writes interleaved samples, any number of them: a frame the chunk leaves unfinished (a stereo chunk of
    /// an odd count) is completed by the next write. Returns the frames this write completed: all of them, or
    /// none when the chunk was dropped (no room, the input ended, or the graph has stopped).
    @discardableResult
    public func write(_ samples: UnsafeBufferPointer<Float>, waitForRoom: Bool = false) -> Int {
        push(samples, waitForRoom: waitForRoom).frames
    }

    /// `write`, saying also whether the samples were taken (`false`: dropped, or the input ended or the graph
    /// stopped; `true` for samples kept to complete a frame).
    public func push(_ samples: UnsafeBufferPointer<Float>, waitForRoom: Bool) -> (frames: Int, taken: Bool) {
        let channels = format.channelCount
        guard !samples.isEmpty else { return (0, true) }
        return writer.withLock { state -> (frames: Int, taken: Bool) in
            guard !ended.load(ordering: .acquiring), !closed.load(ordering: .acquiring) else { return (0, false) }
            var start = 0
            var frames = 0
            var taken = true
            if !state.carry.isEmpty {
                start = min(channels - state.carry.count, samples.count)
                state.carry.append(contentsOf: samples[0..<start])
                if state.carry.count < channels { return (0, true) }
                // Taken out of the state while it is written (no copy), then put back empty.
                var carry: [Float] = []
                swap(&carry, &state.carry)
                let n = carry.withUnsafeBufferPointer { writeFrames($0, waitForRoom: waitForRoom, &state) }
                carry.removeAll(keepingCapacity: true)
                swap(&carry, &state.carry)
                frames = n
                taken = n > 0
            }
            let whole = (samples.count - start) / channels * channels
            if whole > 0 {
                let n = writeFrames(
                    UnsafeBufferPointer(rebasing: samples[start..<(start + whole)]), waitForRoom: waitForRoom, &state)
                frames += n
                taken = taken && n == whole / channels
            }
            // Kept even after a drop: the next write's first sample is still the next channel's.
            state.carry.append(contentsOf: samples[(start + whole)...])
            return (frames, taken)
        }
    }

    /// Whole frames into the ring (the writer lock held); returns the frames written.
    private func writeFrames(_ samples: UnsafeBufferPointer<Float>, waitForRoom: Bool, _ state: inout WriterState)
        -> Int
    {
        let channels = format.channelCount
        let frames = samples.count / channels
        guard frames > 0, let base = samples.baseAddress else { return 0 }
        var done = 0
        while done < samples.count {
            // A chunk larger than the ring goes in as pieces, each waiting for room.
            let piece = min(samples.count - done, ring.capacity / channels * channels)
            // The gap before this audio is recorded first (if its record does not fit, this audio is dropped
            // too: audio after an unrecorded gap would be placed too early on the stream's clock).
            let fits = ring.endpoint.availableToWrite >= piece
            let gapRecorded = !fits || (state.pendingGap.map { recordGap($0, &state) } ?? true)
            if fits && gapRecorded {
                _ = ring.endpoint.write(base + done, count: piece)
                done += piece
                if state.unwoken.add(piece / channels, threshold: wakeFrames) { wake.post() }
            } else if waitForRoom && gapRecorded {
                guard !closed.load(ordering: .acquiring) else { return done / channels }
                // The graph must read to make room, whatever it was told so far.
                state.unwoken.reset()
                wake.post()
                waiting.withLock { $0 }?()
                _ = room.wait(timeout: 0.05)
            } else {
                let lost = (samples.count - done) / channels
                dropped.add(lost, ordering: .relaxed)
                if state.pendingGap != nil {
                    state.pendingGap!.frames += lost
                } else {
                    state.pendingGap = GapRecord(ringIndex: ring.endpoint.writtenCount / channels, frames: lost)
                }
                state.unwoken.reset()
                wake.post()
                return done / channels
            }
        }
        return frames
    }

    @discardableResult
    public func write(_ samples: [Float], waitForRoom: Bool = false) -> Int {
        samples.withUnsafeBufferPointer { write($0, waitForRoom: waitForRoom) }
    }

    /// Writes `gap` to the gap ring; whether it fitted (it is then no longer pending).
    private func recordGap(_ gap: GapRecord, _ state: inout WriterState) -> Bool {
        var record = gap
        guard gaps.endpoint.write(&record, count: 1) else { return false }
        state.pendingGap = nil
        return true
    }

    /// The end of the stream: the node emits what was written (and the gap of any audio dropped last), then
    /// ends, and the graph finishes once its other inputs have ended too. Writes after this are ignored.
    /// `warning` says why the stream ended before its end, when it did (a source that could not be read to its
    /// end: "standard input: read error (...) 4.10 s into the audio"): the node then emits it as a `warning`
    /// event after the audio, and reports it among the graph's warnings.
    public func end(warning: String? = nil) {
        if let warning { endWarning.withLock { $0 = $0 ?? warning } }
        writer.withLock { state in
            if let gap = state.pendingGap { _ = recordGap(gap, &state) }
            ended.store(true, ordering: .releasing)
        }
        wake.post()
    }

    var isEnded: Bool { ended.load(ordering: .acquiring) }

    /// The warning the stream ended with; set before `isEnded` turns true.
    var warning: String? { endWarning.withLock { $0 } }

    /// The graph has stopped: no writer waits any longer.
    func close() {
        closed.store(true, ordering: .releasing)
        room.post()
    }
}

/// The `push.input` node: audio written into the graph from outside, through an ``AudioPusher``
/// (`RunningGraph.input(named:)`). `speechgraph transcribe -` feeds standard input through it.
public final class PushInputNode: SourceNode {
    public static let descriptor = NodeDescriptor(
        typeName: "push.input",
        summary: "Audio pushed into the graph from outside (an app, a server, standard input).",
        doc: """
            Programs that embed speechgraph write audio into this node from any thread, in chunks of any size \
            (RunningGraph.input(named:) returns its writer); 'speechgraph transcribe -' writes standard input \
            into it, and so does 'speechgraph run' for a graph's one push.input (a WAV or MP3 stream, whose rate and \
            channels it takes). The audio crosses to the graph thread through a preallocated lock-free ring of \
            'buffer'; a live writer's chunk that finds no room is dropped and reported as a gap event.
            """,
        category: .input,
        ports: [
            .audioOutput(
                "out", format: .parameters(rate: "rate", channels: "channels"),
                doc: "The pushed audio, interleaved, at 'rate' with 'channels' channels."),
            .eventOutput(
                "events", emits: .only([.gap, .warning]),
                doc: "gap events for audio dropped because the graph fell behind; a warning event the first "
                    + "time samples that are not numbers (NaN, infinite) were faded out to silence, and one after "
                    + "the last audio when the writer ended the stream with a reason (standard input cut short "
                    + "or damaged)."),
        ],
        parameters: [
            ParameterDescriptor(
                "rate", kind: .quantity(.frequency), default: .number(16000),
                range: Double(AudioFormat.supportedRates.lowerBound)...Double(AudioFormat.supportedRates.upperBound),
                displayUnit: .kilohertz, doc: "Sample rate of the pushed audio."),
            .integer("channels", default: 1, range: 1...64, doc: "Channels of the pushed audio (interleaved)."),
            .quantity(
                "buffer", default: 2, .seconds, range: 0.05...600,
                doc: "Audio held between the writer and the graph; a live writer's chunk that does not fit "
                    + "is dropped (a gap event)."),
            .integer("block", default: 1024, range: 16...65536, doc: "Largest block handed to the graph, in frames."),
        ], isLive: true)

    public static let type = NodeType(
        descriptor,
        maxOutputFrames: { config, _, _ in config.integer(of: "block") },
        make: { try PushInputNode($0) })

    public let pusher: AudioPusher
    let name: String
    private let block: Int
    private let scratch: UnsafeMutableBufferPointer<Float>
    /// Stream time in frames: audio emitted plus audio lost.
    private var streamFrame: Int64 = 0
    private var readFrames = 0
    private var pendingGap: GapRecord?
    private var sampleGuard = SampleGuard()
    /// Where the graph's audio epoch (for the jsonl sink's `latency`) is set, once, from the first audio taken.
    private let resources: GraphResources

    init(_ context: NodeContext) throws {
        // The planner derives it from `rate` and `channels` (the port's format rule).
        let format = context.outputFormats["out"]!
        name = context.config.name
        resources = context.resources
        block = context.config.integer(of: "block")
        let seconds = context.config.number(of: "buffer")
        pusher = AudioPusher(
            format: format, capacityFrames: max(Int(seconds * Double(format.sampleRate)), block),
            wake: context.resources.wake)
        scratch = .allocate(capacity: block * format.channelCount)
        scratch.initialize(repeating: 0)
    }

    deinit { scratch.deallocate() }

    public var isLive: Bool { true }

    public var position: Double { Double(streamFrame) / Double(pusher.format.sampleRate) }

    public func pull(output: NodeOutput) throws -> Bool {
        // Read `ended` before the ring: whatever was written before the end is then in the ring.
        let ended = pusher.isEnded
        let channels = pusher.format.channelCount
        let rate = Double(pusher.format.sampleRate)
        // What the ring held on entry, no more: a writer that keeps up must not keep the graph thread here.
        var budget = pusher.ring.endpoint.availableToRead / channels
        if budget > 0 {
            // Live audio: the newest of it was written a moment ago. Audio time 0 was due that much before (the
            // chunks dropped so far, a full ring, count as heard too).
            resources.setAudioEpochIfUnset(heard: Double(readFrames + budget + pusher.droppedFrames) / rate)
        }
        while true {
            if pendingGap == nil {
                var record = GapRecord(ringIndex: 0, frames: 0)
                if pusher.gaps.endpoint.read(into: &record, maxCount: 1) == 1 { pendingGap = record }
            }
            if let gap = pendingGap, gap.ringIndex <= readFrames {
                try output.emit(
                    .gap(
                        node: name,
                        range: TimeRange(
                            start: Double(streamFrame) / rate,
                            end: Double(streamFrame + Int64(gap.frames)) / rate),
                        reason: "overrun: the graph fell behind the pushed audio"), port: 1)
                streamFrame += Int64(gap.frames)
                pendingGap = nil
                continue
            }
            var frames = min(pusher.ring.endpoint.availableToRead / channels, block, budget)
            if let gap = pendingGap { frames = min(frames, gap.ringIndex - readFrames) }
            guard frames > 0 else { break }
            let n = pusher.ring.endpoint.read(into: scratch.baseAddress!, maxCount: frames * channels)
            pusher.room.post()
            readFrames += n / channels
            budget -= n / channels
            sampleGuard.clean(UnsafeMutableBufferPointer(rebasing: scratch[0..<n]), channels: channels)
            if let warning = sampleGuard.firstWarning(node: name, time: { Double(streamFrame + Int64($0)) / rate }) {
                try output.emit(warning, port: 1)
            }
            try output.emit(
                AudioBlock(
                    samples: UnsafeBufferPointer(rebasing: scratch[0..<n]), format: pusher.format,
                    startFrame: streamFrame))
            streamFrame += Int64(n / channels)
        }
        guard ended && pusher.ring.endpoint.availableToRead == 0 && pendingGap == nil else { return true }
        if let warning = pusher.warning, !endWarned {
            endWarned = true
            try output.emit(.warning(node: name, time: position, reason: warning), port: 1)
        }
        return false
    }

    public func close() { pusher.close() }

    /// Whether the stream's end warning has been emitted.
    private var endWarned = false

    public var warnings: [String] { [sampleGuard.warning, endWarned ? pusher.warning : nil].compactMap { $0 } }
}
