import SpeechGraphCore
import SpeechGraphTestSupport
import Testing

@Suite(.tags(.fast)) struct SampleGuardTests {
    @Test func nonFiniteSamplesAreConcealedCountedAndWarnedOnce() {
        var guard_ = SampleGuard()
        var samples: [Float] = [0.5, .nan, 0.25, .infinity, -.infinity, 1e30, -1e30, 0.1]
        let bad = samples.withUnsafeMutableBufferPointer { guard_.clean($0) }
        #expect(bad == 3)
        #expect(samples.allSatisfy { $0.isFinite })
        // A lone bad sample takes (almost) the value before it; huge finite ones are clamped.
        #expect(abs(samples[1] - 0.495) < 1e-6)
        #expect(abs(samples[3] - 0.2475) < 1e-6)
        #expect(abs(samples[4] - 0.2475 * 0.99) < 1e-6)
        #expect(samples[5] == SampleGuard.limit && samples[6] == -SampleGuard.limit)
        #expect(samples[7] == 0.1)
        #expect(guard_.warning?.hasPrefix("3 samples were not a number") == true)
        // The event is where the first bad sample is (frame 1 of this block), not where the block starts.
        let event = guard_.firstWarning(node: "src", time: { 1.5 + Double($0) / 16000 })
        guard case .warning(_, let time, _)? = event else {
            Issue.record("no warning event")
            return
        }
        #expect(time == 1.5 + 1.0 / 16000)
        #expect(guard_.firstWarning(node: "src", time: { _ in 2 }) == nil)
    }

    @Test func theWarningIsAtTheFirstBadFrameOfAStereoBlock() {
        var guard_ = SampleGuard()
        var clean = [Float](repeating: 0.1, count: 64)
        clean.withUnsafeMutableBufferPointer { _ = guard_.clean($0, channels: 2) }
        var samples = [Float](repeating: 0.1, count: 64)
        samples[41] = .nan  // frame 20, right channel
        samples[50] = .nan
        samples.withUnsafeMutableBufferPointer { _ = guard_.clean($0, channels: 2) }
        guard case .warning(_, let time, _)? = guard_.firstWarning(node: "src", time: { Double($0) }) else {
            Issue.record("no warning event")
            return
        }
        #expect(time == 20)
    }

    @Test func aRunOfNaNFadesOutAndTheNextBlockContinuesTheChannel() {
        var guard_ = SampleGuard()
        var first: [Float] = [0.8]
        first.withUnsafeMutableBufferPointer { _ = guard_.clean($0) }
        var run = [Float](repeating: .nan, count: 1000)
        let bad = run.withUnsafeMutableBufferPointer { guard_.clean($0) }
        #expect(bad == 1000)
        #expect(abs(run[0] - 0.792) < 1e-6)
        #expect(abs(run[999]) < 0.001)
        // Interleaved stereo: each channel holds its own value.
        var stereo: [Float] = [0.5, -0.5, .nan, .nan]
        stereo.withUnsafeMutableBufferPointer { _ = guard_.clean($0, channels: 2) }
        #expect(abs(stereo[2] - 0.495) < 1e-6 && abs(stereo[3] + 0.495) < 1e-6)
        #expect(guard_.replaced == 1002)
    }

    @Test func oneSampleAtATimeForTheNodesThatCheckAgain() {
        #expect(SampleGuard.clean(.nan) == 0)
        #expect(SampleGuard.clean(-.infinity) == 0)
        #expect(SampleGuard.clean(1e9) == SampleGuard.limit)
        #expect(SampleGuard.clean(-0.25) == -0.25)
    }
}
