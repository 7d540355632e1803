import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// A single-producer single-consumer ring of `Element`s: the one audited lock-free type that carries
/// audio (and small fixed-size records) from the JACK real-time thread to the recognition threads.
///
/// ### Thread contract
/// Exactly one thread writes (`write`, `writeSome`) and exactly one thread reads (`read`,
/// `readExactly`) at a time; the two may be different threads and may run concurrently. The counters
/// and `available…` snapshots may be read from any thread. The real-time thread should use the
/// ``endpoint``: a plain struct of raw pointers, so using it neither retains nor releases anything.
/// Everything the endpoint does is `@inlinable` and therefore specialized for the concrete `Element`
/// at the call site: no generic metadata lookups on the real-time thread.
///
/// ### Fixed storage capacity
/// The capacity is a power of two, fixed at init. The storage is allocated *and pre-touched* (written
/// once with zeros) at init, so that no page fault happens later on the real-time thread (jack_rec:
/// "we still need to touch any newly allocated pages before process() starts using them").
///
/// ### Implementation notes
/// - `head` (elements ever written) and `tail` (elements ever read) are monotonically increasing
///   indices: the fill level is `head - tail`, never ambiguous, and a slot is `index & (capacity - 1)`.
///   The arithmetic wraps (`&+`, `&-`), so the ring stays correct even past `Int.max` (the exhaustive
///   layout tests start near `Int.max` to prove it).
/// - Both are `Synchronization.Atomic<Int>` with explicit orderings (never `volatile`; see jack2 issues
///   #388 and #715): the writer reads `tail` with `.acquiring` (the reader is done with those slots)
///   and publishes `head` with `.releasing` (the copied elements become visible with it); the reader
///   reads `head` with `.acquiring` and publishes `tail` with `.releasing`.
/// - `head` and the dropped counter (written by the writer) and `tail` (written by the reader) live on
///   different cache lines.
/// - Copies are raw bytes, at most two segments per call (the wrap-around), like JACK's two-element
///   read/write vectors; never a generic `update(from:)`.
///
/// ### Copies: `memmove`, not `copyMemory`
/// The copies call libc `memmove` directly rather than `UnsafeMutableRawPointer.copyMemory(from:byteCount:)`.
/// Optimized, both are the same `memmove` call. Unoptimized (the debug and sanitizer builds), `copyMemory`
/// is a call into the uninstrumented `libswiftCore`, which calls `memmove` from there, and this
/// toolchain's ThreadSanitizer ignores interceptor calls from uninstrumented libraries
/// (`ignore_noninstrumented_modules`): the copies, the very accesses that the orderings protect, would
/// be invisible. Called from this module, they are checked when the test runs with
/// `TSAN_OPTIONS=ignore_interceptors_accesses=0` (the toolchain's default ignores every interceptor
/// access; see `SPSCRingStressTests`). The one `memmove` call sits in a small non-inlinable function,
/// `SPSCRingCore.copyBytes`, for `@_noLocks` (see there).
public final class SPSCRing<Element: BitwiseCopyable>: @unchecked Sendable {
    /// The number of elements the ring holds: a power of two, at least 2. Any thread.
    public let capacity: Int

    /// The ring's raw pointers and start index (everything the endpoints carry).
    @usableFromInline let core: SPSCRingCore
    /// The one allocation holding the atomics (head, dropped on one cache line; tail on the next).
    private let counterBlock: UnsafeMutableRawPointer

    /// Bytes between the writer's counters and the reader's (two 64-byte lines: adjacent-line prefetch).
    private static var counterLineSize: Int { 128 }

    /// Makes an empty ring of `capacity` = the next power of two ≥ `max(minimumCapacity, 2)`, and
    /// allocates and pre-touches its storage. Not real-time safe (it allocates).
    public convenience init(minimumCapacity: Int) {
        self.init(minimumCapacity: minimumCapacity, startIndex: 0)
    }

    /// Makes an empty ring whose `head` and `tail` both start at `startIndex`, so that tests can reach
    /// every wrap-around layout (and indices near `Int.max`). `writtenCount` and `readCount` still
    /// start at 0. Not real-time safe (it allocates).
    @_spi(Testing)
    public init(minimumCapacity: Int, startIndex: Int) {
        precondition(minimumCapacity <= 1 << (Int.bitWidth - 2), "SPSCRing: capacity \(minimumCapacity) is too large")
        var capacity = 2
        while capacity < minimumCapacity { capacity <<= 1 }
        self.capacity = capacity

        let stride = MemoryLayout<Element>.stride
        let (byteCount, overflow) = capacity.multipliedReportingOverflow(by: Swift.max(stride, 1))
        precondition(!overflow, "SPSCRing: \(capacity) elements do not fit in memory")
        let storage = UnsafeMutableRawPointer.allocate(
            byteCount: byteCount, alignment: Swift.max(MemoryLayout<Element>.alignment, 64))
        // Pre-touch every page now, so that the real-time thread never takes a page fault on it
        // (memset: one call even in an unoptimized build, and it cannot be optimized away).
        memset(storage, 0, byteCount)

        let line = Self.counterLineSize
        counterBlock = UnsafeMutableRawPointer.allocate(byteCount: 2 * line, alignment: line)
        memset(counterBlock, 0, 2 * line)
        // Writer's line: head, dropped. Reader's line: tail.
        let head = counterBlock.bindMemory(to: Atomic<Int>.self, capacity: 1)
        let dropped = (counterBlock + MemoryLayout<Atomic<Int>>.stride).bindMemory(to: Atomic<Int>.self, capacity: 1)
        let tail = (counterBlock + line).bindMemory(to: Atomic<Int>.self, capacity: 1)
        head.initialize(to: Atomic(startIndex))
        dropped.initialize(to: Atomic(0))
        tail.initialize(to: Atomic(startIndex))
        core = SPSCRingCore(
            storage: storage, mask: capacity - 1, origin: startIndex,
            head: head, tail: tail, dropped: dropped)
    }

    deinit {
        core.head.deinitialize(count: 1)
        core.dropped.deinitialize(count: 1)
        core.tail.deinitialize(count: 1)
        counterBlock.deallocate()
        core.storage.deallocate()
    }

    /// A handle without reference counting, for the real-time thread: a plain struct of raw pointers
    /// (storage, head, tail, counters). Any thread. It is valid only while this ring object lives:
    /// the owner must keep the ring alive until no thread uses the endpoint any more (for JACK: until
    /// after `jack_client_close`).
    @inlinable
    public var endpoint: Endpoint {
        Endpoint(core: core)
    }

    /// The ring's operations, as a plain struct of raw pointers (see ``SPSCRing/endpoint``).
    ///
    /// The real-time members are annotated `@_noLocks`, which the compiler checks (no locks, no
    /// allocation, no retain/release, no generic calls that could look up metadata); it compiles on
    /// Swift 6.3 without experimental-feature flags. To make that check possible in the library itself,
    /// each member only converts its typed pointer to a raw one and hands the element stride to the
    /// non-generic `SPSCRingCore`, which does all the work.
    public struct Endpoint: @unchecked Sendable {
        @usableFromInline let core: SPSCRingCore

        @inlinable
        init(core: SPSCRingCore) { self.core = core }

        /// The ring's capacity. Any thread, real-time safe.
        @inlinable
        public var capacity: Int { @_noLocks get { core.capacity } }

        /// Writer only, real-time safe: writes all `count` elements, or none when they do not fit (then
        /// returns false and adds `count` to ``droppedCount``; a `count` above the capacity never
        /// fits). Two `memmove` segments at most.
        @_noLocks @inlinable
        public func write(_ source: UnsafePointer<Element>, count: Int) -> Bool {
            core.write(source, count: count, stride: MemoryLayout<Element>.stride)
        }

        /// Writer only, real-time safe: writes as many of the `count` elements as fit and returns how
        /// many it wrote (no drop counting).
        @_noLocks @inlinable
        public func writeSome(_ source: UnsafePointer<Element>, count: Int) -> Int {
            core.writeSome(source, count: count, stride: MemoryLayout<Element>.stride)
        }

        /// Reader only, real-time safe: reads up to `maxCount` elements into `destination` and returns
        /// how many it read (0 when the ring is empty).
        @_noLocks @inlinable
        public func read(into destination: UnsafeMutablePointer<Element>, maxCount: Int) -> Int {
            core.read(into: destination, maxCount: maxCount, stride: MemoryLayout<Element>.stride)
        }

        /// Reader only, real-time safe: reads exactly `count` elements into `destination` and returns
        /// true, or reads nothing (and leaves `destination` untouched) and returns false when fewer are
        /// available.
        @_noLocks @inlinable
        public func readExactly(into destination: UnsafeMutablePointer<Element>, count: Int) -> Bool {
            core.readExactly(into: destination, count: count, stride: MemoryLayout<Element>.stride)
        }

        /// Elements that can be read now. Any thread (a snapshot), real-time safe. Exact on the
        /// reader's thread, as of the moment it loads `head`.
        @inlinable
        public var availableToRead: Int { @_noLocks get { core.fillLevel } }

        /// Elements that can be written now. Any thread (a snapshot), real-time safe. Exact on the
        /// writer's thread, as of the moment it loads `tail`.
        @inlinable
        public var availableToWrite: Int { @_noLocks get { core.capacity &- core.fillLevel } }

        /// Elements refused by ``write(_:count:)`` since creation. Any thread, real-time safe.
        @inlinable
        public var droppedCount: Int { @_noLocks get { core.dropped.pointee.load(ordering: .relaxed) } }

        /// Total elements ever written (accepted; refused ones are in ``droppedCount``, so the writer's
        /// position on its own clock is `writtenCount + droppedCount`). Any thread, real-time safe.
        @inlinable
        public var writtenCount: Int { @_noLocks get { core.head.pointee.load(ordering: .acquiring) &- core.origin } }

        /// Total elements ever read. Any thread, real-time safe.
        @inlinable
        public var readCount: Int { @_noLocks get { core.tail.pointee.load(ordering: .acquiring) &- core.origin } }
    }
}

/// The untyped machinery of ``SPSCRing``: raw pointers and indices, elements as `stride` bytes each.
/// Not generic, so `@_noLocks` is checked on the code itself, not only where it is specialized.
/// Internal; every member follows the thread contract of the ``SPSCRing/Endpoint`` member that calls it.
@usableFromInline
struct SPSCRingCore: @unchecked Sendable {
    @usableFromInline let storage: UnsafeMutableRawPointer
    @usableFromInline let mask: Int
    @usableFromInline let origin: Int
    @usableFromInline let head: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let tail: UnsafeMutablePointer<Atomic<Int>>
    @usableFromInline let dropped: UnsafeMutablePointer<Atomic<Int>>

    @inlinable
    init(
        storage: UnsafeMutableRawPointer, mask: Int, origin: Int,
        head: UnsafeMutablePointer<Atomic<Int>>, tail: UnsafeMutablePointer<Atomic<Int>>,
        dropped: UnsafeMutablePointer<Atomic<Int>>
    ) {
        self.storage = storage
        self.mask = mask
        self.origin = origin
        self.head = head
        self.tail = tail
        self.dropped = dropped
    }

    @inlinable
    var capacity: Int { @_noLocks get { mask &+ 1 } }

    /// Writer only, real-time safe.
    @_noLocks @inlinable
    func write(_ source: UnsafeRawPointer, count: Int, stride: Int) -> Bool {
        precondition(count >= 0, "SPSCRing.write: negative count")
        let h = head.pointee.load(ordering: .relaxed)  // Only this thread stores head.
        let t = tail.pointee.load(ordering: .acquiring)  // The reader is done with the slots before t.
        guard count <= capacity &- (h &- t) else {
            dropped.pointee.wrappingAdd(count, ordering: .relaxed)
            return false
        }
        copyIn(source, count: count, at: h, stride: stride)
        head.pointee.store(h &+ count, ordering: .releasing)  // Publishes the copied elements.
        return true
    }

    /// Writer only, real-time safe.
    @_noLocks @inlinable
    func writeSome(_ source: UnsafeRawPointer, count: Int, stride: Int) -> Int {
        precondition(count >= 0, "SPSCRing.writeSome: negative count")
        let h = head.pointee.load(ordering: .relaxed)
        let t = tail.pointee.load(ordering: .acquiring)
        let free = capacity &- (h &- t)
        let n = count < free ? count : free
        guard n > 0 else { return 0 }
        copyIn(source, count: n, at: h, stride: stride)
        head.pointee.store(h &+ n, ordering: .releasing)
        return n
    }

    /// Writer only: copies `count` elements (which fit) into the slots from index `h`, in one or two
    /// segments.
    @_noLocks @inlinable
    func copyIn(_ source: UnsafeRawPointer, count: Int, at h: Int, stride: Int) {
        let start = h & mask
        let untilEnd = capacity &- start
        let first = count < untilEnd ? count : untilEnd
        Self.copyBytes(to: storage + start &* stride, from: source, byteCount: first &* stride)
        if count > first {
            Self.copyBytes(to: storage, from: source + first &* stride, byteCount: (count &- first) &* stride)
        }
    }

    /// Reader only, real-time safe.
    @_noLocks @inlinable
    func read(into destination: UnsafeMutableRawPointer, maxCount: Int, stride: Int) -> Int {
        precondition(maxCount >= 0, "SPSCRing.read: negative count")
        let t = tail.pointee.load(ordering: .relaxed)  // Only this thread stores tail.
        let h = head.pointee.load(ordering: .acquiring)  // The writer's elements before h are visible.
        let filled = h &- t
        let n = maxCount < filled ? maxCount : filled
        guard n > 0 else { return 0 }
        copyOut(destination, count: n, at: t, stride: stride)
        tail.pointee.store(t &+ n, ordering: .releasing)  // Hands the slots back to the writer.
        return n
    }

    /// Reader only, real-time safe.
    @_noLocks @inlinable
    func readExactly(into destination: UnsafeMutableRawPointer, count: Int, stride: Int) -> Bool {
        precondition(count >= 0, "SPSCRing.readExactly: negative count")
        let t = tail.pointee.load(ordering: .relaxed)
        let h = head.pointee.load(ordering: .acquiring)
        guard count <= h &- t else { return false }
        guard count > 0 else { return true }
        copyOut(destination, count: count, at: t, stride: stride)
        tail.pointee.store(t &+ count, ordering: .releasing)
        return true
    }

    /// Reader only: copies `count` elements (which are there) out of the slots from index `t`, in one
    /// or two segments.
    @_noLocks @inlinable
    func copyOut(_ destination: UnsafeMutableRawPointer, count: Int, at t: Int, stride: Int) {
        let start = t & mask
        let untilEnd = capacity &- start
        let first = count < untilEnd ? count : untilEnd
        Self.copyBytes(to: destination, from: storage + start &* stride, byteCount: first &* stride)
        if count > first {
            Self.copyBytes(to: destination + first &* stride, from: storage, byteCount: (count &- first) &* stride)
        }
    }

    /// Any thread, real-time safe: copies `byteCount` bytes with libc `memmove` (see "Copies" in the
    /// ``SPSCRing`` documentation). Deliberately not `@inlinable`: `@_noLocks` cannot look into a C
    /// function, so the call sits in `_unsafePerformance`, and only a function compiled here keeps
    /// that exemption (inlined into a client's `@_noLocks` function, the bare `memmove` is rejected);
    /// callers trust this function's own `@_noLocks`.
    @usableFromInline @_noLocks
    static func copyBytes(to destination: UnsafeMutableRawPointer, from source: UnsafeRawPointer, byteCount: Int) {
        _unsafePerformance { _ = memmove(destination, source, byteCount) }
    }

    /// Any thread, real-time safe: the fill level. `tail` is loaded before `head`, so the result is
    /// never negative; a snapshot taken from a third thread while both move may exceed the capacity,
    /// hence the clamp.
    @inlinable
    var fillLevel: Int {
        @_noLocks get {
            let t = tail.pointee.load(ordering: .acquiring)
            let h = head.pointee.load(ordering: .acquiring)
            let filled = h &- t
            return filled < 0 ? 0 : filled > capacity ? capacity : filled
        }
    }
}

// MARK: - Convenience for non-real-time callers

extension SPSCRing {
    /// Writer only, not real-time safe (the caller owns an array or buffer): writes all of `elements`
    /// or none, as ``Endpoint/write(_:count:)``.
    @discardableResult
    public func write(_ elements: UnsafeBufferPointer<Element>) -> Bool {
        guard let base = elements.baseAddress else { return true }
        return endpoint.write(base, count: elements.count)
    }

    /// Writer only, not real-time safe: writes all of `elements` or none, as ``Endpoint/write(_:count:)``.
    @discardableResult
    public func write(_ elements: [Element]) -> Bool {
        elements.withUnsafeBufferPointer { write($0) }
    }

    /// Writer only, not real-time safe: writes as many of `elements` as fit and returns how many, as
    /// ``Endpoint/writeSome(_:count:)``.
    public func writeSome(_ elements: UnsafeBufferPointer<Element>) -> Int {
        guard let base = elements.baseAddress else { return 0 }
        return endpoint.writeSome(base, count: elements.count)
    }

    /// Writer only, not real-time safe: writes as many of `elements` as fit and returns how many.
    public func writeSome(_ elements: [Element]) -> Int {
        elements.withUnsafeBufferPointer { writeSome($0) }
    }

    /// Reader only, not real-time safe: reads up to `buffer.count` elements into `buffer` and returns
    /// how many, as ``Endpoint/read(into:maxCount:)``.
    public func read(into buffer: UnsafeMutableBufferPointer<Element>) -> Int {
        guard let base = buffer.baseAddress else { return 0 }
        return endpoint.read(into: base, maxCount: buffer.count)
    }

    /// Reader only, not real-time safe (allocates the array): reads up to `maxCount` elements.
    public func read(maxCount: Int) -> [Element] {
        let n = Swift.min(maxCount, endpoint.availableToRead)
        guard n > 0 else { return [] }
        return [Element](unsafeUninitializedCapacity: n) { buffer, initialized in
            initialized = endpoint.read(into: buffer.baseAddress!, maxCount: n)
        }
    }

    /// Reader only, not real-time safe (allocates the array): reads exactly `count` elements, or
    /// nothing (returns nil) when fewer are available.
    public func readExactly(count: Int) -> [Element]? {
        precondition(count >= 0, "SPSCRing.readExactly: negative count")
        guard count > 0 else { return [] }
        guard endpoint.availableToRead >= count else { return nil }
        return [Element](unsafeUninitializedCapacity: count) { buffer, initialized in
            // Only the reader consumes, so the `count` elements seen above are still there.
            initialized = endpoint.readExactly(into: buffer.baseAddress!, count: count) ? count : 0
        }
    }

    /// Elements that can be read now. Any thread (a snapshot).
    public var availableToRead: Int { endpoint.availableToRead }
    /// Elements that can be written now. Any thread (a snapshot).
    public var availableToWrite: Int { endpoint.availableToWrite }
    /// Elements refused by `write` since creation. Any thread.
    public var droppedCount: Int { endpoint.droppedCount }
    /// Total elements ever written. Any thread.
    public var writtenCount: Int { endpoint.writtenCount }
    /// Total elements ever read. Any thread.
    public var readCount: Int { endpoint.readCount }
}

/// The ring that carries float32 audio samples from the real-time thread to the recognition threads.
public typealias AudioRing = SPSCRing<Float>

/// Audio lost on the way into a ring: the ring had no room for a whole write (a JACK period, a pushed
/// chunk). `ringIndex` is the ring's written count, in frames, when it happened; `frames` how many frames
/// were dropped there.
public struct GapRecord: BitwiseCopyable, Sendable {
    public var ringIndex: Int
    public var frames: Int
    public init(ringIndex: Int, frames: Int) {
        self.ringIndex = ringIndex
        self.frames = frames
    }
}
