import Foundation
import Synchronization

/// Lets at most `slots` pieces of costly work (decoding) run at once, and lets urgent work go first.
///
/// Many live graphs in one process (a server with one graph per connection, `speechgraph-bench streams`)
/// each have a recognizer that wakes to decode a batch of audio every 100 ms or so. Left to the kernel,
/// eight decoders on two cores interleave in short time slices: each evicts the others' models from the
/// caches, and the one whose utterance has just ended (someone is waiting for its final result) gets an
/// eighth of the machine. Behind a gate with one slot per core, each batch runs to its end on a core of its
/// own, and the end of an utterance (urgent) takes the next free slot ahead of every waiting batch. Batches
/// take slots oldest audio first (earliest deadline), so a graph that fell behind in a burst catches up
/// before the others' newer batches, and none starves.
///
/// A graph makes its own gate (one slot per core) unless its maker provides one in its ``GraphResources``:
/// graphs that should share the machine fairly are handed the same gate. Worker threads only, never the
/// real-time thread: it blocks.
public final class ComputeGate: GraphResource, @unchecked Sendable {
    // @unchecked: every stored property below is read and written only with `condition` locked, except the
    // atomic `urgentWaiting`.
    private let condition = NSCondition()
    private var free: Int
    private struct Claim: Comparable {
        var urgent: Bool
        var deadline: Double
        var ticket: UInt64
        static func < (a: Claim, b: Claim) -> Bool {
            (a.urgent ? 0 : 1, a.deadline, a.ticket) < (b.urgent ? 0 : 1, b.deadline, b.ticket)
        }
    }
    private var waiting: [Claim] = []
    private var nextTicket: UInt64 = 0
    /// How many urgent claims are in `waiting`: changed with `condition` locked, read without it by
    /// `yieldToUrgentWork`.
    private let urgentWaiting = Atomic<Int>(0)

    /// How many pieces of work may run at once.
    public let slots: Int

    /// - Parameter slots: default: the number of cores this process may use.
    public init(slots: Int = ProcessInfo.processInfo.activeProcessorCount) {
        self.slots = max(1, slots)
        free = self.slots
    }

    /// A graph's own: one slot per core.
    public static func make(for resources: GraphResources) -> ComputeGate? { ComputeGate() }

    /// How many pieces of work wait for a slot now.
    public var waitingCount: Int {
        condition.lock()
        defer { condition.unlock() }
        return waiting.count
    }

    /// Runs `body` once a slot is free and no waiting work comes before it: urgent work first, then the work
    /// whose `deadline` (when its input arrived, on any clock all users of the gate share) is earliest, then
    /// in the order asked.
    ///
    /// `becomesUrgent`, for work that is not urgent yet: asked while it waits (every few milliseconds, with the gate
    /// locked: it must be quick and must not use the gate), and once it answers true the work waits as urgent work
    /// does (a stream's last batches when its end has come meanwhile: someone now waits for them).
    public func run<T>(
        urgent: Bool, deadline: Double = 0, becomesUrgent: (() -> Bool)? = nil, _ body: () throws -> T
    ) rethrows -> T {
        acquire(urgent: urgent, deadline: deadline, becomesUrgent: urgent ? nil : becomesUrgent)
        defer { release() }
        return try body()
    }

    /// Called between the pieces of a long, non-urgent `run` body (a batch decoded a few frames at a time):
    /// when urgent work waits, gives the slot to it and waits for a slot again (with the same `deadline`), so
    /// that the end of an utterance waits for at most a piece of another graph's batch, not the whole of it.
    /// Costs one atomic load when nothing urgent waits. Only from inside a `run` body.
    public func yieldToUrgentWork(deadline: Double) {
        guard urgentWaiting.load(ordering: .relaxed) > 0 else { return }
        release()
        acquire(urgent: false, deadline: deadline)
    }

    /// Takes up to `count` more slots for work that can spread over several cores (a final pass decoding several
    /// phases at once), only those free now that no waiting work comes before: never waits, so work that holds
    /// a slot cannot deadlock with other holders. Returns how many it took; give them back with
    /// `returnSlots`. Only from inside a `run` body.
    public func takeFreeSlots(upTo count: Int) -> Int {
        condition.lock()
        defer { condition.unlock() }
        guard waiting.isEmpty else { return 0 }
        let taken = max(0, min(count, free))
        free -= taken
        return taken
    }

    /// Gives back slots `takeFreeSlots` took.
    public func returnSlots(_ count: Int) {
        guard count > 0 else { return }
        condition.lock()
        free += count
        condition.broadcast()
        condition.unlock()
    }

    /// Whether urgent work waits for a slot now (a hint: it may change at once).
    public var urgentWorkWaits: Bool { urgentWaiting.load(ordering: .relaxed) > 0 }

    /// How often waiting work that may become urgent asks whether it has.
    private static let urgencyCheckInterval = 0.005

    private func acquire(urgent: Bool, deadline: Double, becomesUrgent: (() -> Bool)? = nil) {
        condition.lock()
        var claim = Claim(urgent: urgent, deadline: deadline, ticket: nextTicket)
        nextTicket += 1
        waiting.append(claim)
        if urgent { urgentWaiting.add(1, ordering: .relaxed) }
        while free == 0 || waiting.contains(where: { $0 < claim }) {
            guard let becomesUrgent, !claim.urgent else {
                condition.wait()
                continue
            }
            _ = condition.wait(until: Date(timeIntervalSinceNow: Self.urgencyCheckInterval))
            if becomesUrgent() {
                claim.urgent = true
                if let i = waiting.firstIndex(where: { $0.ticket == claim.ticket }) { waiting[i].urgent = true }
                urgentWaiting.add(1, ordering: .relaxed)
            }
        }
        waiting.removeAll { $0.ticket == claim.ticket }
        if claim.urgent { urgentWaiting.subtract(1, ordering: .relaxed) }
        free -= 1
        // Another waiter may be able to go too (a slot is still free, and it now comes first).
        condition.broadcast()
        condition.unlock()
    }

    private func release() {
        condition.lock()
        free += 1
        condition.broadcast()
        condition.unlock()
    }
}
