import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

/// The writing end of push.input, without a graph: what goes into its ring.
@Suite(.tags(.fast)) struct AudioPusherTests {
    /// Everything in the ring, in order.
    func drain(_ pusher: AudioPusher) -> [Float] {
        var out = [Float](repeating: 0, count: pusher.ring.endpoint.availableToRead)
        let n = out.withUnsafeMutableBufferPointer {
            pusher.ring.endpoint.read(into: $0.baseAddress!, maxCount: $0.count)
        }
        return Array(out.prefix(n))
    }

    @Test("stereo written in chunks of odd sizes arrives frame by frame, each channel in its place")
    func oddChunksKeepTheChannels() {
        let pusher = AudioPusher(
            format: AudioFormat(sampleRate: 16000, channelCount: 2), capacityFrames: 4096, wake: WakeSignal())
        // Left: 1, 2, 3, ...; right: -1, -2, -3, ...
        let frames = 1000
        let samples = (1...frames).flatMap { [Float($0), -Float($0)] }
        var at = 0
        var written = 0
        for size in [1, 2, 3, 5, 7, 1, 999, 1, 4, 977] where at < samples.count {
            let n = min(size, samples.count - at)
            let (completed, taken) = samples[at..<(at + n)].withUnsafeBufferPointer {
                pusher.push($0, waitForRoom: false)
            }
            #expect(taken)
            written += completed
            at += n
        }
        #expect(at == samples.count && written == frames)
        #expect(drain(pusher) == samples)
    }

    @Test("after a chunk dropped for want of room, the next write's samples are still in their channels")
    func aDropKeepsTheAlignment() {
        let pusher = AudioPusher(
            format: AudioFormat(sampleRate: 16000, channelCount: 2), capacityFrames: 8, wake: WakeSignal())
        let capacity = pusher.ring.capacity / 2
        // Fill the ring, then a chunk of 3 samples (1.5 frames) finds no room: its whole frame is dropped, its
        // half frame kept.
        #expect(pusher.write([Float](repeating: 9, count: capacity * 2)) == capacity)
        let (frames, taken) = [Float(1), -1, 2].withUnsafeBufferPointer { pusher.push($0, waitForRoom: false) }
        #expect(frames == 0 && !taken)
        #expect(pusher.droppedFrames == 1)
        _ = drain(pusher)
        // The next chunk completes the kept half frame: (2, -2), then (3, -3).
        #expect(pusher.write([-2, 3, -3]) == 2)
        #expect(drain(pusher) == [2, -2, 3, -3])
    }

    /// The gap records in the pusher's gap ring, in order.
    func gapRecords(_ pusher: AudioPusher) -> [GapRecord] {
        var out: [GapRecord] = []
        var record = GapRecord(ringIndex: 0, frames: 0)
        while pusher.gaps.endpoint.read(into: &record, maxCount: 1) == 1 { out.append(record) }
        return out
    }

    @Test("chunks dropped in a row, more than the gap ring holds, are one gap, recorded before the next audio")
    func dropsInARowAreOneGap() {
        let pusher = AudioPusher(
            format: AudioFormat(sampleRate: 16000, channelCount: 1), capacityFrames: 64, wake: WakeSignal())
        let capacity = pusher.ring.capacity
        #expect(pusher.write([Float](repeating: 1, count: capacity)) == capacity)
        for _ in 0..<300 { #expect(pusher.write([Float](repeating: 2, count: 10)) == 0) }
        #expect(pusher.droppedFrames == 3000)
        // Not recorded yet: the gap is still growing while nothing fits.
        #expect(gapRecords(pusher).isEmpty)
        _ = drain(pusher)
        #expect(pusher.write([Float](repeating: 3, count: 10)) == 10)
        let gaps = gapRecords(pusher)
        #expect(gaps.count == 1)
        #expect(gaps.first?.ringIndex == capacity && gaps.first?.frames == 3000)
        // A gap at the very end is recorded by end().
        _ = drain(pusher)
        #expect(pusher.write([Float](repeating: 4, count: capacity)) == capacity)
        #expect(pusher.write([Float](repeating: 5, count: 7)) == 0)
        pusher.end()
        #expect(gapRecords(pusher).map(\.frames) == [7])
    }
}
