import CJack
import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// One port as the process callback sees it: the JACK port and its ring.
struct RealtimePort {
    var port: OpaquePointer?
    var ring: AudioRing.Endpoint
    /// Outputs only: the ring has filled to its pre-buffer and is being played.
    var isPlaying: Bool
    var prebufferFrames: Int
}

/// Durations of the process callback, in microseconds, counted into fixed buckets (for `make bench`).
struct CallbackTiming {
    static let bucketCount = 5000  // 0...4999 us; the last counts everything longer
    var buckets: UnsafeMutablePointer<Int>
    var maxNanoseconds: Int
    var count: Int
}

/// Everything the JACK process callback touches, behind one raw pointer: only raw pointers and plain
/// values, so the callback never touches a Swift reference count, allocates, locks or waits.
struct RealtimeState {
    var inputs: UnsafeMutablePointer<RealtimePort>
    var inputCount: Int
    var outputs: UnsafeMutablePointer<RealtimePort>
    var outputCount: Int
    var inputWake: WakeSignal.Endpoint
    var outputWake: WakeSignal.Endpoint
    var gaps: SPSCRing<GapRecord>.Endpoint
    /// Set while ports are registered and valid.
    var running: UnsafeMutablePointer<Atomic<Bool>>
    /// Output periods that found their ring short (silence was played instead).
    var underruns: UnsafeMutablePointer<Atomic<Int>>
    /// Input frames dropped because a ring was full.
    var overruns: UnsafeMutablePointer<Atomic<Int>>
    var timing: UnsafeMutablePointer<CallbackTiming>
    var timingEnabled: Bool
    static let maxPorts = 64
}

/// The JACK process callback. Real-time thread only: for each input port, one all-or-nothing copy into
/// its ring (every channel or none, so channels stay aligned; a refused period becomes a gap record); for
/// each output port, one copy out of its ring (silence when short); then the readers are woken.
func speechgraphProcess(_ nframes: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let state = argument.assumingMemoryBound(to: RealtimeState.self)
    var start = timespec()
    if state.pointee.timingEnabled { clock_gettime(CLOCK_MONOTONIC, &start) }
    let n = Int(nframes)
    let running = state.pointee.running.pointee.load(ordering: .acquiring)

    // Inputs.
    let inputs = state.pointee.inputs
    let inputCount = state.pointee.inputCount
    if running && inputCount > 0 {
        var fits = true
        for i in 0..<inputCount where inputs[i].ring.availableToWrite < n { fits = false }
        if fits {
            for i in 0..<inputCount {
                if let port = inputs[i].port, let buffer = jack_port_get_buffer(port, nframes) {
                    _ = inputs[i].ring.write(buffer.assumingMemoryBound(to: Float.self), count: n)
                }
            }
        } else {
            var record = GapRecord(ringIndex: inputs[0].ring.writtenCount, frames: n)
            _ = state.pointee.gaps.write(&record, count: 1)
            state.pointee.overruns.pointee.add(n, ordering: .relaxed)
        }
        state.pointee.inputWake.post()
    }

    // Outputs.
    let outputs = state.pointee.outputs
    for i in 0..<state.pointee.outputCount {
        guard let port = outputs[i].port, let raw = jack_port_get_buffer(port, nframes) else { continue }
        let buffer = raw.assumingMemoryBound(to: Float.self)
        var got = 0
        if running {
            if !outputs[i].isPlaying && outputs[i].ring.availableToRead >= outputs[i].prebufferFrames {
                outputs[i].isPlaying = true
            }
            if outputs[i].isPlaying {
                got = outputs[i].ring.read(into: buffer, maxCount: n)
                if got < n {
                    outputs[i].isPlaying = false
                    state.pointee.underruns.pointee.add(1, ordering: .relaxed)
                }
            }
        }
        if got < n {
            (raw + got * MemoryLayout<Float>.stride).initializeMemory(
                as: UInt8.self, repeating: 0, count: (n - got) * MemoryLayout<Float>.stride)
        }
    }
    if state.pointee.outputCount > 0 { state.pointee.outputWake.post() }

    if state.pointee.timingEnabled {
        var end = timespec()
        clock_gettime(CLOCK_MONOTONIC, &end)
        let ns = (end.tv_sec - start.tv_sec) * 1_000_000_000 + (end.tv_nsec - start.tv_nsec)
        let timing = state.pointee.timing
        let bucket = min(ns / 1000, CallbackTiming.bucketCount - 1)
        timing.pointee.buckets[bucket] += 1
        if ns > timing.pointee.maxNanoseconds { timing.pointee.maxNanoseconds = ns }
        timing.pointee.count += 1
    }
    return 0
}
