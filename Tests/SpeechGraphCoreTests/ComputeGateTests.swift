import Foundation
import SpeechGraphCore
import SpeechGraphTestSupport
import Synchronization
import Testing

@Suite(.tags(.fast)) struct ComputeGateTests {
    /// Extra slots for work inside a `run` body are taken only when free and nobody waits, never waited for;
    /// while they are taken, other work waits; given back, it runs.
    @Test func freeSlotsAreTakenWithoutWaitingAndGivenBack() {
        let gate = ComputeGate(slots: 3)
        let ran = Mutex<Bool>(false)
        gate.run(urgent: true) {
            #expect(gate.takeFreeSlots(upTo: 5) == 2)  // 3 slots, this body holds one
            #expect(gate.takeFreeSlots(upTo: 1) == 0)  // none left: it does not wait
            let other = Thread { gate.run(urgent: false) { ran.withLock { $0 = true } } }
            other.start()
            while gate.waitingCount < 1 { usleep(1000) }
            #expect(!ran.withLock { $0 })
            #expect(gate.takeFreeSlots(upTo: 1) == 0)  // work waits: none taken ahead of it
            gate.returnSlots(2)
            while !ran.withLock({ $0 }) { usleep(1000) }
        }
        #expect(gate.waitingCount == 0)
        gate.run(urgent: false) { #expect(gate.takeFreeSlots(upTo: 2) == 2) }
    }

    /// With the only slot taken, three pieces of work queue up; when it is freed they run urgent first, then
    /// earliest deadline first, whatever the order they asked in.
    @Test func urgentWorkThenEarliestDeadlineGoFirst() {
        let held = HeldGate()
        let gate = held.gate
        let order = Mutex<[String]>([])
        let claims: [(String, Bool, Double)] = [("late", false, 5), ("early", false, 1), ("urgent", true, 9)]
        for (k, claim) in claims.enumerated() {
            held.spawn { gate.run(urgent: claim.1, deadline: claim.2) { order.withLock { $0.append(claim.0) } } }
            // Each asks only after the one before is waiting: their order of asking is known.
            while gate.waitingCount < k + 1 { usleep(1000) }
        }
        held.releaseAndWait()
        #expect(order.withLock { $0 } == ["urgent", "early", "late"])
        #expect(gate.waitingCount == 0)
    }

    /// Work that waits as not urgent goes ahead of earlier deadlines once it becomes urgent (a stream's last batch
    /// when its end came while the batch waited), and keeps its place when it does not.
    @Test(arguments: [true, false]) func waitingWorkThatBecomesUrgentGoesFirst(becomes: Bool) {
        let held = HeldGate()
        let gate = held.gate
        let order = Mutex<[String]>([])
        let ended = Atomic<Bool>(false)
        held.spawn { gate.run(urgent: false, deadline: 1) { order.withLock { $0.append("early") } } }
        while gate.waitingCount < 1 { usleep(1000) }
        held.spawn {
            let endCame = { ended.load(ordering: .relaxed) }
            gate.run(urgent: false, deadline: 5, becomesUrgent: endCame) { order.withLock { $0.append("ended") } }
        }
        while gate.waitingCount < 2 { usleep(1000) }
        #expect(!gate.urgentWorkWaits)
        if becomes {
            ended.store(true, ordering: .relaxed)
            // The promotion is observable (running work yields to it) before the slot is freed.
            let giveUp = Date(timeIntervalSinceNow: 30)
            while !gate.urgentWorkWaits && Date() < giveUp { usleep(1000) }
            #expect(gate.urgentWorkWaits)
        }
        held.releaseAndWait()
        #expect(order.withLock { $0 } == (becomes ? ["ended", "early"] : ["early", "ended"]))
        #expect(!gate.urgentWorkWaits)
        #expect(gate.waitingCount == 0)
    }

    /// A long batch that yields between its pieces lets urgent work (another graph's end of utterance) run
    /// before its next piece; one that does not yield keeps the slot to its end.
    @Test(arguments: [true, false]) func urgentWorkRunsBetweenTheBatchPieces(yields: Bool) {
        let gate = ComputeGate(slots: 1)
        let order = Mutex<[String]>([])
        let done = DispatchGroup()
        let holding = DispatchSemaphore(value: 0)
        done.enter()
        Thread {
            gate.run(urgent: false, deadline: 1) {
                order.withLock { $0.append("piece 1") }
                holding.signal()
                // The urgent claim is observable before the batch goes on.
                while !gate.urgentWorkWaits { usleep(1000) }
                if yields { gate.yieldToUrgentWork(deadline: 1) }
                order.withLock { $0.append("piece 2") }
            }
            done.leave()
        }.start()
        holding.wait()
        done.enter()
        Thread {
            gate.run(urgent: true) { order.withLock { $0.append("urgent") } }
            done.leave()
        }.start()
        done.wait()
        let expected = yields ? ["piece 1", "urgent", "piece 2"] : ["piece 1", "piece 2", "urgent"]
        #expect(order.withLock { $0 } == expected)
        #expect(!gate.urgentWorkWaits)
        #expect(gate.waitingCount == 0)
    }

    /// Never more pieces of work at once than slots.
    @Test func atMostSlotsRunAtOnce() {
        let gate = ComputeGate(slots: 2)
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            gate.run(urgent: i % 5 == 0, deadline: Double(i % 7)) {
                let now = running.add(1, ordering: .relaxed).newValue
                _ = most.max(now, ordering: .relaxed)
                usleep(200)
                running.subtract(1, ordering: .relaxed)
            }
        }
        #expect(most.load(ordering: .relaxed) <= 2)
        #expect(most.load(ordering: .relaxed) >= 1)
        #expect(gate.waitingCount == 0)
    }
}

/// A gate of one slot that a thread holds until `releaseAndWait`: work spawned meanwhile queues up for it.
final class HeldGate: Sendable {
    let gate = ComputeGate(slots: 1)
    private let release = DispatchSemaphore(value: 0)
    private let done = DispatchGroup()

    init() {
        let holding = DispatchSemaphore(value: 0)
        spawn { [gate, release] in
            gate.run(urgent: false) {
                holding.signal()
                release.wait()
            }
        }
        holding.wait()
    }

    /// Runs `body` on a thread of its own.
    func spawn(_ body: @escaping @Sendable () -> Void) {
        done.enter()
        Thread { [done] in
            body()
            done.leave()
        }.start()
    }

    /// Frees the slot, then waits until all the spawned work has run.
    func releaseAndWait() {
        release.signal()
        done.wait()
    }
}
