import Synchronization

/// How a node that hands work to another thread (a recognizer's engine decoding an utterance) is called again on its
/// own thread once that work is done: the other thread posts it, and the graph calls the node's `wake(output:)`
/// soon after, on the thread that runs the node (its worker's, or the graph thread), even when no audio or event
/// comes for it. `post()`: any thread but the real-time one (it may take a lock).
public final class NodeWakeup: Sendable {
    private let requested = Atomic<Bool>(false)
    /// Whom a post wakes: the node's worker, or the graph thread.
    private let signal: Mutex<WakeSignal?>

    /// A wakeup no graph serves yet (a node made outside a graph, in a test): posts are kept until one does.
    public init() { signal = Mutex(nil) }

    init(waking signal: WakeSignal) { self.signal = Mutex(signal) }

    /// Asks for the node's `wake(output:)`.
    public func post() {
        requested.store(true, ordering: .releasing)
        signal.withLock { $0 }?.post()
    }

    /// From now on, a post wakes `signal` (a worker's, once the node is put on one).
    func wakes(_ signal: WakeSignal) { self.signal.withLock { $0 = signal } }

    /// Whether a post came since the last call; clears it.
    func take() -> Bool { requested.exchange(false, ordering: .acquiringAndReleasing) }
}
