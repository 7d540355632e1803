import SpeechGraphCore
import SpeechGraphTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

/// Behaviour checks, not benchmarks: the time bounds are loose on purpose.
@Suite(.tags(.fast)) struct WakeSignalTests {
    @Test func postThenWaitReturnsAtOnce() {
        let signal = WakeSignal()
        signal.endpoint.post()
        // True: the post woke it (a wait that ran out would be false).
        #expect(signal.wait(timeout: 5))
    }

    @Test func waitWithNothingPostedTimesOut() {
        let signal = WakeSignal()
        let timeout = 0.2
        let start = monotonicSeconds()
        #expect(!signal.wait(timeout: timeout))
        let elapsed = monotonicSeconds() - start
        // A lower bound only: a loaded machine can wake it late, never early.
        #expect(elapsed >= 0.8 * timeout, "woke after \(elapsed) s")
    }

    @Test(arguments: [0.0, -1.0, Double.nan])
    func aTimeoutOfZeroOrLessOnlyPolls(timeout: Double) {
        let signal = WakeSignal()
        // Returns (a wait of no time, or of NaN, that blocked would never return), and false: nothing was posted.
        #expect(!signal.wait(timeout: timeout))
        signal.post()
        #expect(signal.wait(timeout: timeout))
    }

    @Test func postsAreBounded() {
        let signal = WakeSignal()
        let endpoint = signal.endpoint
        for _ in 0..<100 { endpoint.post() }
        #expect(signal.wait(timeout: 1))
        // Only one wake-up was pending, not a hundred.
        #expect(!signal.wait(timeout: 0.05))
    }

    @Test func drainConsumesPendingPosts() {
        let signal = WakeSignal()
        signal.post()
        signal.drain()
        #expect(!signal.wait(timeout: 0.05))
        signal.drain()  // Nothing pending: returns at once.
        signal.post()
        #expect(signal.wait(timeout: 1))
    }

    @Test func aPostFromAnotherThreadWakesTheWaiter() {
        let signal = WakeSignal()
        let endpoint = signal.endpoint
        let poster = TestThread {
            usleep(50_000)
            endpoint.post()
        }
        // True: the post woke it, not the 10 s running out (false).
        let woken = signal.wait(timeout: 10)
        poster.join()
        #expect(woken)
    }

    @Test func timeoutsWithFractionsCarryIntoSeconds() {
        // A deadline whose nanoseconds overflow into the next second must still be valid (EINVAL
        // would return at once).
        let signal = WakeSignal()
        let start = monotonicSeconds()
        #expect(!signal.wait(timeout: 0.99))
        #expect(monotonicSeconds() - start >= 0.8 * 0.99)
    }
}
