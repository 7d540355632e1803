import SpeechGraphCore
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// The stress tests' repeatable numbers: the core's SplitMix64, with a range helper.
typealias RingTestRandom = SplitMix64

extension SplitMix64 {
    /// A number in `range`.
    mutating func next(in range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
}

/// Whether the long variants of the stress tests were asked for (`SPEECHGRAPH_LONG_TESTS=1`).
var longRealtimeTests: Bool {
    guard let value = getenv("SPEECHGRAPH_LONG_TESTS") else { return false }
    return String(cString: value) == "1"
}

/// A plain POSIX thread (so that ThreadSanitizer sees exactly the happens-before edges of
/// `pthread_create` and `pthread_join`, and nothing from a thread pool). `join()` exactly once.
struct TestThread {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    private var thread = pthread_t()

    init(_ body: @escaping @Sendable () -> Void) {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        let status = pthread_create(
            &thread, nil,
            { context in
                Unmanaged<Body>.fromOpaque(context!).takeRetainedValue().run()
                return nil
            }, context)
        precondition(status == 0, "pthread_create failed: \(status)")
    }

    func join() {
        let status = pthread_join(thread, nil)
        precondition(status == 0, "pthread_join failed: \(status)")
    }
}

/// Records the first few failures of a loop that checks millions of conditions, and counts the rest
/// (`#expect` in the innermost loop would dominate the run time).
struct FailureLog {
    private(set) var count = 0
    let limit: Int

    init(limit: Int = 20) { self.limit = limit }

    mutating func check(
        _ condition: Bool, _ message: @autoclosure () -> String,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) {
        if condition { return }
        count += 1
        if count <= limit { Issue.record(Comment(rawValue: message()), sourceLocation: sourceLocation) }
    }
}

/// Seconds on the monotonic clock.
func monotonicSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
