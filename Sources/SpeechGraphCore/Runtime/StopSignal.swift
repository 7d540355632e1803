import Synchronization

/// Asks a running graph to stop. Safe to set from any thread (a signal handler's queue, a test).
public final class StopSignal: Sendable {
    private let flag = Atomic<Bool>(false)
    public init() {}
    public func request() { flag.store(true, ordering: .releasing) }
    public var isRequested: Bool { flag.load(ordering: .acquiring) }
}
