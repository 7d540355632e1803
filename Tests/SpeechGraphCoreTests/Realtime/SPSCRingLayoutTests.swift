@_spi(Testing) import SpeechGraphCore
import SpeechGraphTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// An element whose stride (3) is neither a power of two nor a multiple of the alignment of `Int`.
private struct ThreeBytes: BitwiseCopyable, Equatable, CustomStringConvertible {
    var a, b, c: UInt8
    init(_ n: Int) {
        a = UInt8(truncatingIfNeeded: n)
        b = UInt8(truncatingIfNeeded: n >> 8)
        c = UInt8(truncatingIfNeeded: n >> 16)
    }
    var description: String { "(\(a),\(b),\(c))" }
}

/// How the middle write of a layout scenario writes.
private enum WriteMode { case allOrNothing, some }
/// How the middle read of a layout scenario reads.
private enum ReadMode { case upTo, exactly }
/// The modes are paired rather than crossed: each write mode reaches every fill level before the read
/// (write sizes start at 0), so each read mode still meets every state; crossing them would double
/// the run time for no new state.
private let modePairs: [(WriteMode, ReadMode)] = [(.allOrNothing, .exactly), (.some, .upTo)]

/// The start indices for a capacity: every slot twice (`0 ..< 2 * capacity`), plus indices near
/// `Int.max / 2` and near `Int.max`, where filling the ring wraps the indices past `Int.max`.
private func startIndices(capacity: Int) -> [Int] {
    Array(0..<2 * capacity) + [
        Int.max / 2 - 1, Int.max / 2 + capacity / 2,
        Int.max - 1, Int.max - capacity / 2 + 1, Int.max, Int.min + 1,
    ]
}

/// Runs `body` for every layout (capacity × start index), like swift-collections' `withEvery`.
private func withEveryLayout(ofCapacities capacities: [Int], _ body: (_ capacity: Int, _ start: Int) -> Void) {
    for capacity in capacities {
        for start in startIndices(capacity: capacity) { body(capacity, start) }
    }
}

/// The exhaustive scenario: for one layout, every fill, every write size and every read size, both
/// write modes and both read modes (see `modePairs`). Element `n` of the stream is `value(n)`; `value(-1)` is the
/// sentinel that the destination buffer holds where nothing may be written.
private func checkEveryScenario<E: BitwiseCopyable & Equatable>(
    capacity: Int, start: Int, value: (Int) -> E, log: inout FailureLog
) -> Int {
    // The checks compare bytes (memcmp): the values are distinct bit patterns without padding, and a
    // generic `==` per element would dominate the run time of an unoptimized test build.
    let values = UnsafeMutablePointer<E>.allocate(capacity: 4 * capacity + 2)
    defer { values.deallocate() }
    for i in 0..<4 * capacity + 2 { (values + i).initialize(to: value(i)) }
    let destinationCount = 2 * capacity + 1
    let sentinels = UnsafeMutablePointer<E>.allocate(capacity: destinationCount)
    defer { sentinels.deallocate() }
    sentinels.initialize(repeating: value(-1), count: destinationCount)
    let destination = UnsafeMutablePointer<E>.allocate(capacity: destinationCount)
    defer { destination.deallocate() }
    let stride = MemoryLayout<E>.stride
    var scenarios = 0

    func clearDestination() {
        UnsafeMutableRawPointer(destination).copyMemory(from: sentinels, byteCount: destinationCount * stride)
    }
    /// Whether `destination[0 ..< count]` holds the stream elements `from ..< from + count` and the rest
    /// of it still holds sentinels.
    func destinationHolds(from: Int, count: Int) -> Bool {
        memcmp(destination, values + from, count * stride) == 0
            && memcmp(destination + count, sentinels, (destinationCount - count) * stride) == 0
    }
    func describeDestination() -> String {
        (0..<destinationCount).map { "\(destination[$0])" }.joined(separator: " ")
    }

    /// Reads everything left (exactly `expected` elements, stream positions `from ..< from + expected`).
    func drain(_ ring: SPSCRingEndpointChecker<E>, expected: Int, from: Int, context: @autoclosure () -> String) {
        clearDestination()
        let n = ring.endpoint.read(into: destination, maxCount: destinationCount)
        log.check(n == expected, "\(context()): drain read \(n), expected \(expected)")
        log.check(
            destinationHolds(from: from, count: n),
            "\(context()): drained from \(from): \(describeDestination())")
    }

    for fill in 0...capacity {
        for writeSize in 0...capacity {
            for readSize in 0...capacity {
                for (writeMode, readMode) in modePairs {
                    scenarios += 1
                    let context = {
                        "capacity \(capacity) start \(start) fill \(fill) write \(writeSize) \(writeMode) "
                            + "read \(readSize) \(readMode)"
                    }
                    let ring = SPSCRingEndpointChecker<E>(capacity: capacity, start: start)
                    let endpoint = ring.endpoint
                    log.check(endpoint.capacity == capacity, "\(context()): capacity \(endpoint.capacity)")

                    // 1. The fill.
                    log.check(endpoint.write(values, count: fill), "\(context()): the fill was refused")
                    ring.expectCounts(readable: fill, written: fill, read: 0, dropped: 0, log: &log, context())

                    // 2. The write.
                    let free = capacity - fill
                    let written: Int
                    switch writeMode {
                    case .allOrNothing:
                        let accepted = endpoint.write(values + fill, count: writeSize)
                        log.check(accepted == (writeSize <= free), "\(context()): write returned \(accepted)")
                        written = accepted ? writeSize : 0
                        ring.expectCounts(
                            readable: fill + written, written: fill + written, read: 0,
                            dropped: accepted ? 0 : writeSize, log: &log, context())
                    case .some:
                        written = endpoint.writeSome(values + fill, count: writeSize)
                        log.check(written == Swift.min(writeSize, free), "\(context()): writeSome wrote \(written)")
                        ring.expectCounts(
                            readable: fill + written, written: fill + written, read: 0, dropped: 0,
                            log: &log, context())
                    }
                    let total = fill + written
                    let dropped = endpoint.droppedCount

                    // 3. The read.
                    clearDestination()
                    let readCount: Int
                    switch readMode {
                    case .upTo:
                        readCount = endpoint.read(into: destination, maxCount: readSize)
                        log.check(readCount == Swift.min(readSize, total), "\(context()): read \(readCount)")
                    case .exactly:
                        let complete = endpoint.readExactly(into: destination, count: readSize)
                        log.check(complete == (readSize <= total), "\(context()): readExactly returned \(complete)")
                        readCount = complete ? readSize : 0
                    }
                    log.check(
                        destinationHolds(from: 0, count: readCount),
                        "\(context()): read \(readCount): \(describeDestination())")
                    ring.expectCounts(
                        readable: total - readCount, written: total, read: readCount,
                        dropped: dropped, log: &log, context())

                    // 4. The rest, and the written elements behind the refused ones are untouched.
                    drain(ring, expected: total - readCount, from: readCount, context: context())
                    ring.expectCounts(
                        readable: 0, written: total, read: total, dropped: dropped, log: &log,
                        context())

                    // 5. One more lap from wherever the indices now are: full, refused, empty.
                    log.check(endpoint.write(values + total, count: capacity), "\(context()): a full lap was refused")
                    log.check(!endpoint.write(values, count: 1), "\(context()): a full ring accepted one more")
                    log.check(endpoint.writeSome(values, count: 1) == 0, "\(context()): a full ring took some")
                    ring.expectCounts(
                        readable: capacity, written: total + capacity, read: total,
                        dropped: dropped + 1, log: &log, context())
                    drain(ring, expected: capacity, from: total, context: context())
                    log.check(!endpoint.readExactly(into: destination, count: 1), "\(context()): read from empty")
                    log.check(
                        endpoint.read(into: destination, maxCount: capacity) == 0, "\(context()): read from empty")
                }
            }
        }
    }
    return scenarios
}

/// A ring at a given start index plus count checks.
private struct SPSCRingEndpointChecker<E: BitwiseCopyable> {
    let ring: SPSCRing<E>
    let endpoint: SPSCRing<E>.Endpoint

    init(capacity: Int, start: Int) {
        ring = SPSCRing<E>(minimumCapacity: capacity, startIndex: start)
        endpoint = ring.endpoint
    }

    func expectCounts(
        readable: Int, written: Int, read: Int, dropped: Int, log: inout FailureLog,
        _ context: @autoclosure () -> String, sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        let e = endpoint
        let capacity = e.capacity
        if e.availableToRead == readable, e.availableToWrite == capacity - readable, e.writtenCount == written,
            e.readCount == read, e.droppedCount == dropped
        {
            return
        }
        log.check(
            false,
            """
            \(context()): readable \(e.availableToRead) (expected \(readable)), writable \(e.availableToWrite) \
            (expected \(capacity - readable)), written \(e.writtenCount) (expected \(written)), \
            read \(e.readCount) (expected \(read)), dropped \(e.droppedCount) (expected \(dropped))
            """, sourceLocation: sourceLocation)
    }
}

@Suite(.tags(.fast)) struct SPSCRingLayoutTests {
    @Test func everyLayoutWithIntElements() {
        var log = FailureLog()
        var scenarios = 0
        withEveryLayout(ofCapacities: [2, 4, 8, 16]) { capacity, start in
            scenarios += checkEveryScenario(capacity: capacity, start: start, value: { $0 }, log: &log)
        }
        #expect(log.count == 0, "\(log.count) of \(scenarios) checks failed")
        #expect(
            scenarios
                == [2, 4, 8, 16].map { c in (2 * c + 6) * (c + 1) * (c + 1) * (c + 1) * modePairs.count }.reduce(0, +))
    }

    @Test func everyLayoutWithThreeByteElements() {
        var log = FailureLog()
        withEveryLayout(ofCapacities: [2, 4, 8]) { capacity, start in
            _ = checkEveryScenario(capacity: capacity, start: start, value: { ThreeBytes($0) }, log: &log)
        }
        #expect(log.count == 0)
    }

    @Test(arguments: [
        (-5, 2), (0, 2), (1, 2), (2, 2), (3, 4), (4, 4), (5, 8), (1000, 1024), (1024, 1024), (1025, 2048),
    ])
    func capacityIsTheNextPowerOfTwo(minimum: Int, expected: Int) {
        let ring = AudioRing(minimumCapacity: minimum)
        #expect(ring.capacity == expected)
        #expect(ring.endpoint.capacity == expected)
        #expect(ring.availableToWrite == expected)
        #expect(ring.availableToRead == 0)
    }

    @Test func zeroCountsChangeNothing() {
        let ring = SPSCRing<Int>(minimumCapacity: 4)
        let endpoint = ring.endpoint
        var scratch = [7, 7, 7, 7]
        scratch.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            #expect(endpoint.write(base, count: 0))
            #expect(endpoint.writeSome(base, count: 0) == 0)
            #expect(endpoint.read(into: base, maxCount: 0) == 0)
            #expect(endpoint.readExactly(into: base, count: 0))
            #expect(endpoint.write(base, count: 4))
            #expect(endpoint.write(base, count: 0))  // Fits even when full: nothing is dropped.
            #expect(endpoint.read(into: base, maxCount: 0) == 0)
            #expect(endpoint.readExactly(into: base, count: 0))
        }
        #expect(ring.droppedCount == 0)
        #expect(ring.writtenCount == 4)
        #expect(ring.readCount == 0)
    }

    @Test func convenienceWrappers() {
        let ring = AudioRing(minimumCapacity: 8)
        #expect(ring.write([1, 2, 3]))
        #expect(ring.write([] as [Float]))
        #expect(!ring.write([Float](repeating: 9, count: 6)))  // 3 + 6 > 8: all refused.
        #expect(ring.droppedCount == 6)
        #expect(ring.writeSome([4, 5, 6, 7, 8, 9, 10]) == 5)
        #expect(ring.availableToRead == 8)
        #expect(ring.availableToWrite == 0)
        #expect(ring.read(maxCount: 2) == [1, 2])
        #expect(ring.readExactly(count: 7) == nil)
        #expect(ring.readExactly(count: 3) == [3, 4, 5])
        #expect(ring.readExactly(count: 0) == [])
        var rest = [Float](repeating: 0, count: 10)
        let n = rest.withUnsafeMutableBufferPointer { ring.read(into: $0) }
        #expect(n == 3)
        #expect(rest.prefix(n) == [6, 7, 8])
        #expect(ring.read(maxCount: 4) == [])
        let more: [Float] = [11, 12]
        #expect(more.withUnsafeBufferPointer { ring.write($0) })
        #expect(more.withUnsafeBufferPointer { ring.writeSome($0) } == 2)
        #expect(ring.read(maxCount: 100) == [11, 12, 11, 12])
        #expect(ring.writtenCount == 12)
        #expect(ring.readCount == 12)
        #expect(ring.droppedCount == 6)
    }

    @Test func endpointsOutliveTheirCopies() {
        // The endpoint is a plain value: copies see the same ring.
        let ring = SPSCRing<Int>(minimumCapacity: 2)
        let writer = ring.endpoint
        let reader = ring.endpoint
        var one = 42
        var out = 0
        #expect(writer.write(&one, count: 1))
        #expect(reader.availableToRead == 1)
        #expect(reader.read(into: &out, maxCount: 1) == 1)
        #expect(out == 42)
        #expect(writer.availableToWrite == 2)
    }
}
