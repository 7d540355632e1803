/// A block of audio handed from one node to the next: a borrowed view, valid only during the call.
/// A node that needs the samples later copies them.
public struct AudioBlock {
    /// Interleaved float32 samples, `frameCount * format.channelCount` of them.
    public var samples: UnsafeBufferPointer<Float>
    public var format: AudioFormat
    /// The sample time of the first frame, counted at `format.sampleRate` from the start of the stream.
    public var startFrame: Int64

    public init(samples: UnsafeBufferPointer<Float>, format: AudioFormat, startFrame: Int64) {
        self.samples = samples
        self.format = format
        self.startFrame = startFrame
    }

    public var frameCount: Int { samples.count / format.channelCount }
    public var startTime: Double { Double(startFrame) / Double(format.sampleRate) }
    public var endTime: Double { Double(startFrame + Int64(frameCount)) / Double(format.sampleRate) }
}

/// A running node. Where the plan placed it (`NodePlacement`), the graph thread or its worker thread calls
/// `prepare`, `process`, `handle` and `finish`, one call at a time, in the order audio and events arrive. Its
/// `init` runs on the thread that makes the graph, and `close` on whichever thread releases it last, once the
/// graph has stopped (from `deinit`). Allocate in `prepare`; `process` and `handle` run for every block.
public protocol GraphNode: AnyObject {
    /// Called once before anything flows: open files and devices, allocate buffers.
    func prepare() throws
    /// Audio arriving on input `port` (index among the node's inputs).
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws
    /// An event arriving on input `port`.
    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws
    /// The audio on input `port` is interrupted (its server went away): what came before will not be
    /// continued. Finish what depends on continuity (an utterance, a filter's tail) and pass it on.
    /// By default the discontinuity is passed to every audio output.
    func discontinuity(port: Int, output: NodeOutput) throws
    /// Every upstream node has finished (end of stream, or a stop): emit whatever is still held.
    func finish(output: NodeOutput) throws
    /// Release what `prepare` took. Called once, after `finish` or after a failure.
    func close()
    /// Problems worth telling the user that did not stop the node (a truncated file, say).
    var warnings: [String] { get }
    /// What the user should know about how the node was made, which is no problem (a pronunciation guessed for a
    /// word of a language model built on first use): whole lines, each saying where it comes from.
    var notes: [String] { get }
    /// For a node on a worker thread: how many more frames of audio it can take before it does anything that
    /// someone waits for (decodes a batch, emits a result). The graph thread wakes the worker once that much audio
    /// has queued, or at once for an event, a discontinuity or the finish, so that a worker fed 10 ms blocks does
    /// not wake for each (every wake-up costs CPU, on a virtual machine tens of microseconds). Read on the worker
    /// thread after each call. 0 (the default): woken for every block.
    var framesBeforeNextStep: Int { get }
    /// Work the node handed to another thread is done: that thread posted the node's ``NodeContext/wakeup``. Called
    /// on the node's own thread, between its other calls.
    func wake(output: NodeOutput) throws
}

extension GraphNode {
    public func prepare() throws {}
    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {}
    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {}
    public func discontinuity(port: Int, output: NodeOutput) throws { try output.emitDiscontinuity() }
    public func finish(output: NodeOutput) throws {}
    public func close() {}
    public var warnings: [String] { [] }
    public var notes: [String] { [] }
    public var framesBeforeNextStep: Int { 0 }
    public func wake(output: NodeOutput) throws {}
}

/// A node with no inputs that produces audio or events: a file, a live input.
public protocol SourceNode: GraphNode {
    /// Emit the next block (a source that reads on demand), or whatever has arrived since the last call
    /// (a live source; it must not wait for more). Returns `false` once the stream has ended.
    func pull(output: NodeOutput) throws -> Bool
    /// Seconds of audio emitted so far: `--realtime` paces on this.
    var position: Double { get }
    /// Fraction of the input consumed, when the input has a known length; shown as progress.
    var progress: Double? { get }
    /// Audio arrives on its own time (JACK ports, pushed audio): the graph's live driver calls `pull` when
    /// the graph's wake signal (``GraphResources/wake``) is posted, which the source arranges for its
    /// producer to do. `false` (the default): the offline driver pulls it as fast as the graph runs.
    var isLive: Bool { get }
}

extension SourceNode {
    public var progress: Double? { nil }
    public var isLive: Bool { false }
}

/// How a node hands audio and events on to the nodes connected to its outputs.
public struct NodeOutput {
    unowned let engine: GraphEngine
    let node: Int
    /// Set for a node running on a worker thread: its events are queued for the graph thread.
    let deferred: WorkerNode?

    init(engine: GraphEngine, node: Int, deferred: WorkerNode? = nil) {
        self.engine = engine
        self.node = node
        self.deferred = deferred
    }

    /// Sends a block out of output `port` (index among the node's outputs); returns after every
    /// downstream node has processed it.
    public func emit(_ block: AudioBlock, port: Int = 0) throws {
        precondition(deferred == nil, "a node on a worker thread emits events only")
        try engine.deliver(block, from: node, port: port)
    }

    public func emit(_ event: GraphEvent, port: Int = 0) throws {
        if let deferred {
            deferred.queueOutbound(event, port: port)
            return
        }
        try engine.deliver(event, from: node, port: port)
    }

    /// A `warning` event from this node that goes to no port: to the graph's observers (`RunningGraph.events`)
    /// and its `unrouted` handler (`speechgraph run` prints it on standard error at once). For what a node
    /// without event outputs (a sink whose file can no longer be written) must tell while the graph runs; the
    /// node still reports it in `warnings` at the end. The graph tells each reason of a node once, however often
    /// it is called (`RunningGraph.warningsToldWhileRunning`).
    public func warn(_ reason: String, time: Double?) throws {
        let event = GraphEvent.warning(node: engine.plan.nodes[node].name, time: time, reason: reason)
        try emit(event, port: NodeOutput.noPort)
    }

    /// The port of an event that goes to no node (`warn`).
    static let noPort = -1

    /// Tells every node downstream of this node's audio outputs that the audio is interrupted.
    public func emitDiscontinuity() throws {
        if deferred != nil { return }  // event-only nodes have no audio outputs
        try engine.deliverDiscontinuity(from: node)
    }

}
