import Foundation
import Synchronization

/// What waits for a node on its worker thread: how many events (and discontinuities, and the finish) are queued
/// behind the input it is working on. A recognizer decoding a batch while an event waits (speechEnded) is
/// catching up on audio someone is waiting for: its ``ComputeGate`` turn is urgent. Any thread (an atomic).
public final class WorkerBacklog: Sendable {
    private let events = Atomic<Int>(0)
    private let arrivalBits = Atomic<UInt64>(0)
    private let worker = Atomic<Bool>(false)

    public init() {}

    /// When the block the node is processing reached its graph (monotonic clock, seconds; 0 for a node on the
    /// graph thread): the deadline of the decoding it causes, see ``ComputeGate``.
    public var arrival: Double { Double(bitPattern: arrivalBits.load(ordering: .relaxed)) }

    func setArrival(_ time: Double) { arrivalBits.store(time.bitPattern, ordering: .relaxed) }

    /// Whether an event waits behind the current input (always false for a node on the graph thread).
    public var hasEvents: Bool { events.load(ordering: .relaxed) > 0 }

    /// Whether the node runs on a worker thread of its own (set before its first input): only then can an event
    /// come behind its input while it works.
    public var isOnWorker: Bool { worker.load(ordering: .relaxed) }

    func runsOnWorker() { worker.store(true, ordering: .relaxed) }

    func queued() { events.add(1, ordering: .relaxed) }
    func taken() { events.subtract(1, ordering: .relaxed) }
}

/// Runs a costly node (a recognizer) on a thread of its own, so that several of them use several cores.
///
/// The graph thread hands it its input through two preallocated single-producer single-consumer rings
/// (the same audited ``SPSCRing`` as the JACK edge): the samples, and a command per block, event,
/// discontinuity or finish, in order. No block is copied into an `Array`. Events for the node (rare:
/// utterance boundaries) wait in a small locked queue beside their command. The events the node makes are
/// queued for the graph thread, which delivers them in order. When a ring is full the graph thread waits
/// for room (so with live input, audio is dropped on the JACK side and reported as gaps, never buffered
/// without bound).
///
/// The runner puts the nodes whose descriptor's threading domain is `.worker` on workers when a graph has two or
/// more of them (several use several cores) or live input (the graph thread, a vad deciding where speech ends,
/// never waits for a decoder, which may itself wait for its turn at the ``ComputeGate`` it shares with other
/// graphs). A single one on offline input stays on the graph thread: the order of events at the sinks is fixed.
final class WorkerNode: GraphNode {
    private struct Command: BitwiseCopyable {
        enum Kind: UInt8 { case audio, event, discontinuity, finish }
        var kind: Kind
        var port: Int32
        /// Audio: the block's frames (their samples are next in the sample ring) and first frame.
        var frames: Int
        var startFrame: Int64
        /// When the graph thread queued it (monotonic seconds).
        var arrival: Double = 0
    }

    let inner: any GraphNode
    private let format: AudioFormat
    private let samples: AudioRing
    private let commands = SPSCRing<Command>(minimumCapacity: 1024)
    /// Events for the node, in the order of their commands.
    private let inboundEvents = Mutex<[GraphEvent]>([])
    /// Events the node made, for the graph thread.
    private let outbound = Mutex<[(GraphEvent, Int)]>([])
    private let failure = Mutex<(any Error)?>(nil)
    private let finished = Atomic<Bool>(false)
    /// Posted by the graph thread after each command but audio, and after audio once `stepFrames` have queued
    /// since the last post; the worker sleeps on it.
    private let work = WakeSignal()
    /// The inner node's `framesBeforeNextStep`, published by the worker after each command it took.
    private let stepFrames = Atomic<Int>(0)
    /// Graph thread: frames queued since `work` was last posted. The worker sleeps only after it has taken every
    /// command queued before the last post, so what waits unread is at most this much.
    private var unwoken = WakeCount()
    /// Posted by the worker after each command it took, and when it ends; the graph thread sleeps on it.
    private let room = WakeSignal()
    /// The graph's wake signal: posted when the worker queued events, so that a graph thread asleep waiting for
    /// live audio delivers them at once.
    private let graphWake: WakeSignal
    private let scratch: UnsafeMutableBufferPointer<Float>
    /// The worker thread was started. (The thread itself is not kept: its closure holds this node until the thread
    /// ends, and a node holding its thread would never be freed.)
    private var started = false
    /// How often the worker woke to a post of `work` (the worker thread's until `finished`; for tests after that).
    private(set) var wakeUps = 0
    /// Set by the graph thread while it waits for room in a full ring (it posts `work` then), cleared by the worker
    /// when it wakes to a post.
    private let waitsForRoom = Atomic<Bool>(false)
    /// How often the worker's wait ran out its timeout while the graph thread was waiting for room: a wake missed
    /// (the worker thread's until `finished`; for tests after that).
    private(set) var missedWakes = 0

    private let backlog: WorkerBacklog
    /// The inner node's wakeup: a post wakes this worker, which calls the node's `wake(output:)`.
    private let wakeup: NodeWakeup

    init(
        _ inner: any GraphNode, maxQueuedFrames: Int, format: AudioFormat, wake: WakeSignal, backlog: WorkerBacklog,
        wakeup: NodeWakeup = NodeWakeup()
    ) {
        self.inner = inner
        self.wakeup = wakeup
        self.format = format
        graphWake = wake
        self.backlog = backlog
        backlog.runsOnWorker()
        samples = AudioRing(minimumCapacity: maxQueuedFrames * format.channelCount)
        scratch = .allocate(capacity: samples.capacity)
        scratch.initialize(repeating: 0)
        wakeup.wakes(work)
    }

    deinit { scratch.deallocate() }

    func prepare() throws {
        try inner.prepare()
    }

    /// Starts the worker; `output` is its deferred output (events queue here).
    func start(output: NodeOutput) {
        // The worker thread is the only user of `inner` (and of `output`) from here until `finished`,
        // which it sets last; the graph thread waits for `finished` before it touches `inner` again.
        nonisolated(unsafe) let job = (self, output)
        let t = Thread { job.0.work(output: job.1) }
        t.name = "speechgraph worker"
        started = true
        t.start()
    }

    private func work(output: NodeOutput) {
        var command = Command(kind: .finish, port: 0, frames: 0, startFrame: 0)
        while true {
            if wakeup.take() {
                do { try inner.wake(output: output) } catch { failure.withLock { if $0 == nil { $0 = error } } }
            }
            guard commands.endpoint.read(into: &command, maxCount: 1) == 1 else {
                if work.wait(timeout: 1) {
                    wakeUps += 1
                    waitsForRoom.store(false, ordering: .relaxed)
                } else if waitsForRoom.load(ordering: .relaxed) {
                    missedWakes += 1
                }
                continue
            }
            if command.kind != .audio { backlog.taken() }
            do {
                switch command.kind {
                case .audio:
                    let count = command.frames * format.channelCount
                    _ = samples.endpoint.readExactly(into: scratch.baseAddress!, count: count)
                    room.post()
                    backlog.setArrival(command.arrival)
                    try inner.process(
                        AudioBlock(
                            samples: UnsafeBufferPointer(rebasing: scratch[0..<count]),
                            format: format, startFrame: command.startFrame),
                        port: Int(command.port), output: output)
                case .event:
                    let event = inboundEvents.withLock { $0.removeFirst() }
                    room.post()
                    try inner.handle(event, port: Int(command.port), output: output)
                case .discontinuity:
                    room.post()
                    try inner.discontinuity(port: Int(command.port), output: output)
                case .finish:
                    try inner.finish(output: output)
                }
            } catch {
                failure.withLock { if $0 == nil { $0 = error } }
            }
            stepFrames.store(inner.framesBeforeNextStep, ordering: .releasing)
            if command.kind == .finish {
                finished.store(true, ordering: .releasing)
                room.post()
                return
            }
        }
    }

    /// Graph thread: queues a command (and its samples), waiting for room when a ring is full.
    private func enqueue(_ command: Command, samples block: UnsafeBufferPointer<Float>? = nil) throws {
        var command = command
        command.arrival = monotonicSeconds()
        if command.kind != .audio { backlog.queued() }
        while true {
            if let error = failure.withLock({ $0 }) { throw error }
            let needed = block?.count ?? 0
            if commands.endpoint.availableToWrite >= 1, samples.endpoint.availableToWrite >= needed {
                if let block, let base = block.baseAddress { _ = samples.endpoint.write(base, count: needed) }
                _ = commands.endpoint.write(&command, count: 1)
                let step = stepFrames.load(ordering: .acquiring)
                if unwoken.add(command.frames, threshold: step, force: command.kind != .audio) { work.post() }
                return
            }
            // Full: the worker has work, wake it whatever it asked for.
            unwoken.reset()
            waitsForRoom.store(true, ordering: .relaxed)
            work.post()
            _ = room.wait(timeout: 0.05)
        }
    }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        // A block larger than the ring goes in as pieces.
        let channels = format.channelCount
        let most = samples.capacity / channels
        var done = 0
        while done < block.frameCount {
            let n = min(most, block.frameCount - done)
            let piece = UnsafeBufferPointer(rebasing: block.samples[(done * channels)..<((done + n) * channels)])
            try enqueue(
                Command(kind: .audio, port: Int32(port), frames: n, startFrame: block.startFrame + Int64(done)),
                samples: piece)
            done += n
        }
        try deliverOutbound(output)
    }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        inboundEvents.withLock { $0.append(event) }
        try enqueue(Command(kind: .event, port: Int32(port), frames: 0, startFrame: 0))
        try deliverOutbound(output)
    }

    func discontinuity(port: Int, output: NodeOutput) throws {
        try enqueue(Command(kind: .discontinuity, port: Int32(port), frames: 0, startFrame: 0))
        try deliverOutbound(output)
    }

    /// Waits for everything queued to be done, then delivers the last events.
    func finish(output: NodeOutput) throws {
        try enqueue(Command(kind: .finish, port: 0, frames: 0, startFrame: 0))
        while !finished.load(ordering: .acquiring) { _ = room.wait(timeout: 0.05) }
        try deliverOutbound(output)
        if let error = failure.withLock({ $0 }) { throw error }
    }

    func close() {
        if started && !finished.load(ordering: .acquiring) {
            // The graph failed before finishing this node: let the worker end before closing the node.
            var command = Command(kind: .finish, port: 0, frames: 0, startFrame: 0)
            backlog.queued()
            while !commands.endpoint.write(&command, count: 1) {
                if finished.load(ordering: .acquiring) { break }
                _ = room.wait(timeout: 0.05)
            }
            work.post()
            while !finished.load(ordering: .acquiring) { _ = room.wait(timeout: 0.05) }
        }
        inner.close()
    }

    var warnings: [String] { inner.warnings }
    var notes: [String] { inner.notes }

    /// Worker thread: an event for the graph thread.
    func queueOutbound(_ event: GraphEvent, port: Int) {
        outbound.withLock { $0.append((event, port)) }
        graphWake.post()
    }

    /// Graph thread: delivers the events the worker made since the last call, in order.
    func deliverOutbound(_ output: NodeOutput) throws {
        let events = outbound.withLock { events in
            defer { events.removeAll(keepingCapacity: true) }
            return events
        }
        for (event, port) in events { try output.emit(event, port: port) }
        if let error = failure.withLock({ $0 }) { throw error }
    }
}
