import Foundation

/// Runs a costly node (a recognizer) on a thread of its own, so that several of them use several cores.
/// The graph thread hands it copies of its input through a bounded queue and delivers the events it
/// makes, in order, on the graph thread. When the queue is full the graph thread waits (so with live
/// input, audio is dropped on the JACK side and reported as gaps, never buffered without bound).
///
/// The runner puts nodes whose descriptor says `prefersWorkerThread` on workers when a graph has two
/// or more of them; a single one runs on the graph thread (nothing to gain).
final class WorkerNode: GraphNode {
    private enum Command {
        case audio([Float], AudioFormat, Int64, port: Int)
        case event(GraphEvent, port: Int)
        case discontinuity(port: Int)
        case finish
    }

    let inner: any GraphNode
    private let condition = NSCondition()
    private var inbound: [Command] = []
    private var inboundFrames = 0
    private let maxInboundFrames: Int
    private var outbound: [(GraphEvent, Int)] = []
    private var failure: (any Error)?
    private var finished = false
    private var thread: Thread?
    private var output: NodeOutput?

    init(_ inner: any GraphNode, maxQueuedFrames: Int) {
        self.inner = inner
        self.maxInboundFrames = maxQueuedFrames
    }

    func prepare() throws {
        try inner.prepare()
    }

    /// Starts the worker; `output` is its deferred output (events queue here).
    func start(output: NodeOutput) {
        self.output = output
        nonisolated(unsafe) let me = self
        let t = Thread { me.work() }
        t.name = "speechgraph worker"
        thread = t
        t.start()
    }

    private func work() {
        while true {
            condition.lock()
            while inbound.isEmpty { condition.wait() }
            let command = inbound.removeFirst()
            if case .audio(let samples, let format, _, _) = command { inboundFrames -= samples.count / format.channelCount }
            condition.broadcast()
            condition.unlock()
            guard let output else { return }
            do {
                switch command {
                case .audio(let samples, let format, let start, let port):
                    try samples.withUnsafeBufferPointer {
                        try inner.process(AudioBlock(samples: $0, format: format, startFrame: start), port: port, output: output)
                    }
                case .event(let event, let port): try inner.handle(event, port: port, output: output)
                case .discontinuity(let port): try inner.discontinuity(port: port, output: output)
                case .finish: try inner.finish(output: output)
                }
            } catch {
                condition.lock()
                if failure == nil { failure = error }
                condition.unlock()
            }
            if case .finish = command {
                condition.lock()
                finished = true
                condition.broadcast()
                condition.unlock()
                return
            }
        }
    }

    private func enqueue(_ command: Command, frames: Int = 0) throws {
        condition.lock()
        defer { condition.unlock() }
        while inboundFrames + frames > maxInboundFrames && inboundFrames > 0 && failure == nil { condition.wait() }
        if let failure { throw failure }
        inbound.append(command)
        inboundFrames += frames
        condition.broadcast()
    }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        try enqueue(.audio(Array(block.samples), block.format, block.startFrame, port: port), frames: block.frameCount)
        try deliverOutbound(output)
    }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        try enqueue(.event(event, port: port))
        try deliverOutbound(output)
    }

    func discontinuity(port: Int, output: NodeOutput) throws {
        try enqueue(.discontinuity(port: port))
        try deliverOutbound(output)
    }

    /// Waits for everything queued to be done, then delivers the last events.
    func finish(output: NodeOutput) throws {
        try enqueue(.finish)
        condition.lock()
        while !finished { condition.wait() }
        condition.unlock()
        try deliverOutbound(output)
        if let failure { throw failure }
    }

    func close() {
        if thread != nil && !finished {
            condition.lock()
            inbound.append(.finish)
            condition.broadcast()
            while !finished { condition.wait() }
            condition.unlock()
        }
        inner.close()
    }

    var warnings: [String] { inner.warnings }

    /// Worker thread: an event for the graph thread.
    func queueOutbound(_ event: GraphEvent, port: Int) {
        condition.lock()
        outbound.append((event, port))
        condition.unlock()
    }

    /// Graph thread: delivers the events the worker made since the last call, in order.
    func deliverOutbound(_ output: NodeOutput) throws {
        condition.lock()
        let events = outbound
        outbound.removeAll()
        let error = failure
        condition.unlock()
        for (event, port) in events { try output.emit(event, port: port) }
        if let error { throw error }
    }
}
