import SpeechGraphCore
import SpeechGraphTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// What the two threads share: the ring, the wake-up, and flags. The plain fields are written by one
/// thread and read by the test only after `join()`.
private final class StressRun: @unchecked Sendable {
    let ring: SPSCRing<Int>
    let wake = WakeSignal()
    let total: Int
    /// Set by the writer after its last write (the reader then drains and stops).
    let writerDone = Atomic<Bool>(false)
    /// Set by the reader when it gives up (no progress for a long time), so the writer stops too.
    let abandoned = Atomic<Bool>(false)

    // Reader's results.
    var received = 0
    var missing = 0
    var outOfOrder = 0
    var splitChunks = 0
    var droppedCounterBehind = 0
    var wakeUps = 0
    var timeouts = 0
    var firstError: String?
    // Writer's results.
    var writerDropped = 0
    var writerFullWaits = 0

    init(capacity: Int, total: Int) {
        ring = SPSCRing<Int>(minimumCapacity: capacity)
        self.total = total
    }

    func noteError(_ message: @autoclosure () -> String) {
        if firstError == nil { firstError = message() }
    }
}

/// Elements per stress run: 1M, or 20M with `SPEECHGRAPH_LONG_TESTS=1`.
private var stressElementCount: Int { longRealtimeTests ? 20_000_000 : 1_000_000 }

/// Seconds without progress after which a stress thread gives up (a hang is a failure, not a stall).
private let stallLimit = 30.0

/// Two-thread stress tests of `SPSCRing` (jack2 #715, swift-atomics' `LockFreeQueue` test), with
/// `WakeSignal` waking the reader. 1M elements each; 20M with `SPEECHGRAPH_LONG_TESTS=1`.
///
/// ### Under ThreadSanitizer
///
///     swift build --build-tests --sanitize=thread --scratch-path .build-tsan
///     TSAN_OPTIONS=ignore_interceptors_accesses=0 \
///       swift test --skip-build --sanitize=thread --scratch-path .build-tsan --filter "SPSCRing|WakeSignal"
///
/// The option matters: by default this toolchain's ThreadSanitizer ignores every access made inside
/// an intercepted libc call such as `memmove`, which is where all of the ring's element copies happen,
/// so it stays silent even for a ring that publishes `head` with `.relaxed`. With the option, it
/// reports exactly that mutation (and a `.relaxed` `tail`) as races in `copyOut`/`copyIn`, and
/// nothing on the real ring.
@Suite(.tags(.fast)) struct SPSCRingStressTests {
    /// Writer: `writeSome` in random chunk sizes, retrying the rest when the ring is full. Reader:
    /// `read` and `readExactly` in other random chunk sizes, sleeping on the `WakeSignal` when the ring
    /// is empty. Every number must arrive exactly once, in order.
    @Test func losslessSequenceThroughWriteSomeAndReadExactly() {
        let run = StressRun(capacity: 256, total: stressElementCount)
        let writer = TestThread { losslessWriter(run, seed: 0x5EED_0001) }
        let reader = TestThread { losslessReader(run, seed: 0x5EED_0002) }
        writer.join()
        reader.join()

        let endpoint = run.ring.endpoint
        #expect(run.firstError == nil, "\(run.firstError ?? "")")
        #expect(run.outOfOrder == 0)
        #expect(run.received == run.total)
        #expect(endpoint.writtenCount == run.total)
        #expect(endpoint.readCount == run.total)
        #expect(endpoint.droppedCount == 0)
        #expect(endpoint.availableToRead == 0)
        #expect(endpoint.availableToWrite == endpoint.capacity)
        print(
            "SPSCRing lossless stress: \(run.total) elements, writer found the ring full \(run.writerFullWaits) times, "
                + "reader woken \(run.wakeUps) times, timed out \(run.timeouts) times")
    }

    /// Writer: all-or-nothing `write` in random chunk sizes (some larger than the ring), never waiting,
    /// like the real-time thread. Reader: `read` in other random chunk sizes. The reader replays the
    /// writer's chunk sizes (same seed), so it checks that every chunk arrived whole or not at all,
    /// that numbers only ever skip whole refused chunks, and that the dropped counter equals exactly
    /// the numbers missing.
    @Test func allOrNothingWritesDropWholeChunks() {
        let capacity = 256
        let run = StressRun(capacity: capacity, total: stressElementCount)
        let writerSeed: UInt64 = 0x5EED_0003
        let writer = TestThread { dropWriter(run, seed: writerSeed, maxChunk: capacity + capacity / 2) }
        let reader = TestThread {
            dropReader(run, seed: 0x5EED_0004, writerSeed: writerSeed, maxChunk: capacity + capacity / 2)
        }
        writer.join()
        reader.join()

        let endpoint = run.ring.endpoint
        #expect(run.firstError == nil, "\(run.firstError ?? "")")
        #expect(run.outOfOrder == 0)
        #expect(run.splitChunks == 0)
        #expect(run.droppedCounterBehind == 0)
        #expect(run.missing == endpoint.droppedCount)
        #expect(run.writerDropped == endpoint.droppedCount)
        #expect(run.received + run.missing == run.total)
        #expect(endpoint.writtenCount == run.total - endpoint.droppedCount)
        #expect(endpoint.readCount == endpoint.writtenCount)
        #expect(run.received > 0)
        #expect(endpoint.droppedCount > 0)  // Chunks larger than the ring are always refused.
        print(
            "SPSCRing drop stress: \(run.total) elements, \(run.received) received, \(endpoint.droppedCount) dropped, "
                + "reader woken \(run.wakeUps) times, timed out \(run.timeouts) times")
    }
}

// MARK: - Lossless

private func losslessWriter(_ run: StressRun, seed: UInt64) {
    let endpoint = run.ring.endpoint
    let wake = run.wake.endpoint
    var random = RingTestRandom(seed: seed)
    let maxChunk = 2 * endpoint.capacity
    let chunk = UnsafeMutablePointer<Int>.allocate(capacity: maxChunk)
    defer { chunk.deallocate() }
    var next = 0
    var lastProgress = monotonicSeconds()
    while next < run.total {
        let size = Swift.min(random.next(in: 1...maxChunk), run.total - next)
        for i in 0..<size { chunk[i] = next + i }
        var done = 0
        while done < size {
            let n = endpoint.writeSome(chunk + done, count: size - done)
            if n > 0 {
                done += n
                wake.post()
                lastProgress = monotonicSeconds()
            } else {
                run.writerFullWaits += 1
                if run.abandoned.load(ordering: .relaxed) { return }
                if monotonicSeconds() - lastProgress > stallLimit { return }
                sched_yield()
            }
        }
        next += size
    }
}

private func losslessReader(_ run: StressRun, seed: UInt64) {
    let endpoint = run.ring.endpoint
    var random = RingTestRandom(seed: seed)
    let capacity = endpoint.capacity
    let buffer = UnsafeMutablePointer<Int>.allocate(capacity: capacity)
    defer { buffer.deallocate() }
    var expected = 0
    var lastProgress = monotonicSeconds()
    while expected < run.total {
        // readExactly sizes stay within the capacity (a larger one could never be satisfied).
        let size = Swift.min(random.next(in: 1...capacity), run.total - expected)
        let n: Int
        if random.next() & 1 == 0 {
            n = endpoint.readExactly(into: buffer, count: size) ? size : 0
        } else {
            n = endpoint.read(into: buffer, maxCount: size)
        }
        if n == 0 {
            if run.wake.wait(timeout: 0.005) { run.wakeUps += 1 } else { run.timeouts += 1 }
            if monotonicSeconds() - lastProgress > stallLimit {
                run.noteError("reader stalled at \(expected)")
                run.abandoned.store(true, ordering: .relaxed)
                return
            }
            continue
        }
        lastProgress = monotonicSeconds()
        for i in 0..<n where buffer[i] != expected + i {
            run.outOfOrder += 1
            run.noteError("read \(buffer[i]) where \(expected + i) was due")
            break
        }
        expected += n
        run.received += n
    }
}

// MARK: - All or nothing

/// The writer's chunk sizes, replayable by the reader: chunk boundaries of the stream `0 ..< total`.
private struct ChunkBoundaries {
    private var random: RingTestRandom
    private let maxChunk: Int
    private let total: Int
    /// The start of the current chunk (a boundary), or `total`.
    private(set) var start = 0
    /// The size of the current chunk.
    private(set) var size: Int

    init(seed: UInt64, maxChunk: Int, total: Int) {
        random = RingTestRandom(seed: seed)
        self.maxChunk = maxChunk
        self.total = total
        size = 0
        size = nextSize()
    }

    private mutating func nextSize() -> Int { Swift.min(random.next(in: 1...maxChunk), total - start) }

    mutating func advance() {
        start += size
        size = start < total ? nextSize() : 0
    }

    /// Whether `position` is a chunk boundary (or the end). Queries must not go backwards.
    mutating func isBoundary(_ position: Int) -> Bool {
        while start < position && start < total { advance() }
        return start == position
    }
}

private func dropWriter(_ run: StressRun, seed: UInt64, maxChunk: Int) {
    let endpoint = run.ring.endpoint
    let wake = run.wake.endpoint
    var chunks = ChunkBoundaries(seed: seed, maxChunk: maxChunk, total: run.total)
    let chunk = UnsafeMutablePointer<Int>.allocate(capacity: maxChunk)
    defer { chunk.deallocate() }
    while chunks.start < run.total {
        let size = chunks.size
        for i in 0..<size { chunk[i] = chunks.start + i }
        if endpoint.write(chunk, count: size) {
            wake.post()
        } else {
            run.writerDropped += size
            if run.abandoned.load(ordering: .relaxed) { break }
            // Time moves on for the real-time thread; give the reader a chance so not everything drops.
            sched_yield()
        }
        chunks.advance()
    }
    run.writerDone.store(true, ordering: .releasing)
    wake.post()
}

private func dropReader(_ run: StressRun, seed: UInt64, writerSeed: UInt64, maxChunk: Int) {
    let endpoint = run.ring.endpoint
    var random = RingTestRandom(seed: seed)
    var boundaries = ChunkBoundaries(seed: writerSeed, maxChunk: maxChunk, total: run.total)
    let capacity = endpoint.capacity
    let buffer = UnsafeMutablePointer<Int>.allocate(capacity: 2 * capacity)
    defer { buffer.deallocate() }
    var expected = 0
    var lastProgress = monotonicSeconds()

    func accept(_ value: Int) {
        if value == expected {
            expected += 1
            return
        }
        if value < expected {
            run.outOfOrder += 1
            run.noteError("read \(value) after \(expected - 1)")
            return
        }
        // A gap: it must consist of whole refused chunks, all counted as dropped already (the drops
        // happened before the write that `value` came with, which this thread has acquired).
        if !boundaries.isBoundary(expected) || !boundaries.isBoundary(value) {
            run.splitChunks += 1
            run.noteError("gap \(expected) ..< \(value) is not made of whole chunks")
        }
        run.missing += value - expected
        if endpoint.droppedCount < run.missing {
            run.droppedCounterBehind += 1
            run.noteError("dropped counter \(endpoint.droppedCount) < \(run.missing) missing")
        }
        expected = value + 1
    }

    while true {
        let n = endpoint.read(into: buffer, maxCount: random.next(in: 1...2 * capacity))
        if n > 0 {
            lastProgress = monotonicSeconds()
            for i in 0..<n { accept(buffer[i]) }
            run.received += n
            continue
        }
        if run.writerDone.load(ordering: .acquiring) {
            // Everything the writer wrote is visible now: drain it, then stop.
            while true {
                let n = endpoint.read(into: buffer, maxCount: 2 * capacity)
                if n == 0 { break }
                for i in 0..<n { accept(buffer[i]) }
                run.received += n
            }
            break
        }
        if run.wake.wait(timeout: 0.005) { run.wakeUps += 1 } else { run.timeouts += 1 }
        if monotonicSeconds() - lastProgress > stallLimit {
            run.noteError("reader stalled at \(expected)")
            run.abandoned.store(true, ordering: .relaxed)
            return
        }
    }
    // The chunks after the last one received were refused too.
    if expected < run.total {
        if !boundaries.isBoundary(expected) {
            run.splitChunks += 1
            run.noteError("the stream ends inside a chunk at \(expected)")
        }
        run.missing += run.total - expected
    }
}
