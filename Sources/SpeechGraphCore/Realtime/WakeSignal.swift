#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Wakes a sleeping reader (a recognition thread) from the real-time thread: a POSIX unnamed
/// semaphore, as jalv's worker does (`zix_sem_post` after writing into the ring).
///
/// The writer writes into an ``SPSCRing`` and then calls `endpoint.post()`; the reader drains the ring
/// and, when it finds it empty, calls ``wait(timeout:)``. A semaphore remembers a post made before the
/// wait, so no wake-up is lost between "found it empty" and "went to sleep". The count is bounded
/// (see ``Endpoint/post()``), so a reader that was busy for a long time wakes at most once for
/// nothing, not once per missed post.
///
/// ### Thread contract
/// `endpoint.post()`: any thread, real-time safe. ``wait(timeout:)`` and ``drain()``: the waiting
/// thread (never the real-time thread; a single waiter is the intended use).
public final class WakeSignal: @unchecked Sendable {
    /// The largest count `post()` builds up: one pending wake-up is enough.
    public static var maximumPendingPosts: Int32 { 1 }

    @usableFromInline let semaphore: UnsafeMutablePointer<sem_t>

    /// Makes a signal with nothing posted. Not real-time safe (it allocates).
    public init() {
        semaphore = UnsafeMutablePointer<sem_t>.allocate(capacity: 1)
        let status = sem_init(semaphore, 0, 0)
        precondition(status == 0, "WakeSignal: sem_init failed (errno \(errno))")
    }

    deinit {
        sem_destroy(semaphore)
        semaphore.deallocate()
    }

    /// A handle without reference counting, for the real-time thread: a plain struct holding the
    /// semaphore's pointer. Any thread. Valid only while this signal object lives.
    @inlinable
    public var endpoint: Endpoint { Endpoint(semaphore: semaphore) }

    /// The posting side of a ``WakeSignal``, as a plain struct (see ``WakeSignal/endpoint``).
    public struct Endpoint: @unchecked Sendable {
        @usableFromInline let semaphore: UnsafeMutablePointer<sem_t>

        @inlinable
        init(semaphore: UnsafeMutablePointer<sem_t>) { self.semaphore = semaphore }

        /// Any thread, real-time safe: wakes the waiter, unless a wake-up is already pending
        /// (`sem_getvalue` ≥ ``WakeSignal/maximumPendingPosts``); only `sem_getvalue` and `sem_post`,
        /// which never block. Several threads post (the JACK callback, an app pushing audio, the workers, a
        /// stop, the graph thread to a freewheeling callback): two that post at once can each add one, so the
        /// count can reach the number of posters at once, and the waiter then wakes once more for nothing. No
        /// wake-up is ever lost.
        ///
        /// `@_noLocks` is checked by the compiler for the Swift part; the two C calls are outside
        /// its reach (`_unsafePerformance`): glibc's `sem_post` is an atomic increment plus a
        /// `futex` wake when someone sleeps, and takes no lock.
        @_noLocks @inlinable
        public func post() {
            _unsafePerformance {
                var value: Int32 = 0
                if sem_getvalue(semaphore, &value) == 0, value >= WakeSignal.maximumPendingPosts { return }
                _ = sem_post(semaphore)
            }
        }

        /// The waiting side, as ``WakeSignal/wait(timeout:)`` (which calls it): blocks, so never on the real-time
        /// thread, except where JACK runs the process callback without real-time constraints (freewheel), which
        /// may wait for the graph. Touches no reference count.
        ///
        /// The deadline is on `CLOCK_REALTIME` (what `sem_timedwait` takes): a wall-clock jump may
        /// lengthen or shorten one wait, so callers should treat the timeout as a polling interval.
        public func wait(timeout seconds: Double) -> Bool {
            if sem_trywait(semaphore) == 0 { return true }
            guard seconds > 0, !seconds.isNaN else { return false }
            var deadline = timespec()
            clock_gettime(CLOCK_REALTIME, &deadline)
            // Cap at a day: beyond that the caller meant "forever" and a loop around wait() is expected.
            let clamped = Swift.min(seconds, 86_400)
            let whole = clamped.rounded(.down)
            var nanoseconds = Int(deadline.tv_nsec) + Int((clamped - whole) * 1e9)
            var secondsPart = Int(deadline.tv_sec) + Int(whole)
            if nanoseconds >= 1_000_000_000 {
                nanoseconds -= 1_000_000_000
                secondsPart += 1
            }
            deadline.tv_sec = time_t(secondsPart)
            deadline.tv_nsec = Int(nanoseconds)
            while true {
                if sem_timedwait(semaphore, &deadline) == 0 { return true }
                let error = errno
                if error == EINTR { continue }
                // ETIMEDOUT, or an error that waiting again would not fix.
                return false
            }
        }
    }

    /// Any thread, real-time safe: the same as `endpoint.post()`.
    @inlinable
    public func post() { endpoint.post() }

    /// Waiting thread only, blocks (never on the real-time thread): sleeps until a post arrives or
    /// `seconds` have passed, and consumes the post. Returns true if woken by a post (or one was
    /// already pending), false on timeout. A timeout ≤ 0 only polls. Interruptions by signals (EINTR)
    /// are retried up to the same deadline. See ``Endpoint/wait(timeout:)``.
    public func wait(timeout seconds: Double) -> Bool { endpoint.wait(timeout: seconds) }

    /// Waiting thread only, does not block: consumes any pending posts, so the next ``wait(timeout:)``
    /// sleeps until a new post.
    public func drain() {
        while sem_trywait(semaphore) == 0 {}
    }
}

/// When a writer should post a reader's ``WakeSignal``: once `threshold` frames have been written since it last
/// did, or at once when told to (audio was dropped, the writer waits for room). A reader woken for every small
/// block (a JACK period, a 10 ms chunk) wakes far more often than it needs to, and each wake-up costs CPU. The
/// JACK process callback, `AudioPusher` and the worker feeding a recognizer count with one each.
///
/// A plain value: the writer's own, no locks or atomics; real-time safe.
public struct WakeCount: Sendable {
    /// Frames written since the last post.
    @usableFromInline var frames = 0

    public init() {}

    /// Counts `written` frames; whether to post now (`force`, or `threshold` reached), and if so counts afresh.
    @inlinable
    public mutating func add(_ written: Int, threshold: Int, force: Bool = false) -> Bool {
        frames += written
        guard force || frames >= threshold else { return false }
        frames = 0
        return true
    }

    /// Counts afresh: the writer posts now, whatever was written (audio dropped, a writer about to wait).
    @inlinable
    public mutating func reset() { frames = 0 }
}
