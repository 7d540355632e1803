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
    /// Inputs only: the ``RealtimeGroup`` whose processor this port's audio goes through, or -1.
    var group: Int = -1
}

/// The input ports of one jack.input node whose audio a real-time processor (a real-time safe plugin node)
/// transforms in the process callback before it is written to their rings, with the scratch memory it needs,
/// allocated before the callback runs.
struct RealtimeGroup {
    var firstInput: Int
    var channels: Int
    var function: RealtimeProcessor.Function
    var instance: UnsafeMutableRawPointer?
    /// `capacity * channels` frames each.
    var interleaved: UnsafeMutablePointer<Float>
    var processed: UnsafeMutablePointer<Float>
    /// `capacity` samples: one channel of `processed`.
    var planar: UnsafeMutablePointer<Float>
    var capacity: Int
    static let maxGroups = 16
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
    /// Posted by the graph thread after it read the input rings, and after it wrote the output rings: what a
    /// freewheeling callback waits for.
    var inputRoom: WakeSignal.Endpoint
    var outputData: WakeSignal.Endpoint
    /// Set while the server freewheels (JACK's freewheel callback): periods come as fast as the clients take
    /// them, with no real-time constraint, and the callback waits for the graph instead of dropping audio.
    var freewheeling: UnsafeMutablePointer<Atomic<Bool>>
    /// Set when the graph has queued its last output audio (its jack.output nodes finish): a freewheeling period
    /// no longer waits for more.
    var outputEnded: UnsafeMutablePointer<Atomic<Bool>>
    var gaps: SPSCRing<GapRecord>.Endpoint
    /// Set while ports are registered and valid.
    var running: UnsafeMutablePointer<Atomic<Bool>>
    /// Output periods that found their ring short (silence was played instead).
    var underruns: UnsafeMutablePointer<Atomic<Int>>
    /// Input frames dropped because a ring was full.
    var overruns: UnsafeMutablePointer<Atomic<Int>>
    var timing: UnsafeMutablePointer<CallbackTiming>
    var timingEnabled: Bool
    var groups: UnsafeMutablePointer<RealtimeGroup>
    var groupCount: Int
    /// The periods dropped since audio was last written, as one gap: written to `gaps` before the next audio,
    /// so that a stall of any length is one record (and one `gap` event), and the record ring never fills
    /// while the graph is away. Touched by the process callback only (reset before activation).
    var pendingGap: GapRecord = GapRecord(ringIndex: 0, frames: 0)
    var hasPendingGap = false
    /// The input readers are woken once this many frames have come since they last were (20 ms; set before
    /// activation), or at once when a period is dropped: with small periods the graph thread wakes 50 times a
    /// second, not once per period (each wake-up costs CPU). 0: every period (a session with outputs, whose rings
    /// the graph thread must keep filling as promptly as before).
    var wakeFrames = 0
    /// Frames since the input readers were last woken. Touched by the process callback only (reset before
    /// activation).
    var unwoken = WakeCount()
    static let maxPorts = 64
    /// The longest a freewheeling period waits for the graph before it is dropped as in real time (JACK's
    /// freewheel driver gives up on a client after 10 s).
    static let freewheelPatience = 5.0
}

/// Whether every input ring has room for `frames`; with `keepingHalfFree` (freewheeling), room for them with half
/// the ring still free after. A freewheeling period waits for that, not only for room: when the server returns to
/// real time (the export ends), the graph then has half its buffer to catch up in, where a full ring would drop
/// the first period it is late for.
@inline(__always)
func inputsFit(_ state: UnsafeMutablePointer<RealtimeState>, _ frames: Int, keepingHalfFree: Bool = false) -> Bool {
    let inputs = state.pointee.inputs
    for i in 0..<state.pointee.inputCount {
        let reserve = keepingHalfFree ? inputs[i].ring.capacity / 2 : 0
        if inputs[i].ring.availableToWrite < frames + reserve { return false }
    }
    return true
}

/// Freewheeling only (no real-time constraint then): until `ready()`, wakes the graph thread (`wake`) and sleeps
/// until it has read or written (`signal`); gives up after ``RealtimeState/freewheelPatience``, or when the client
/// stops meanwhile. Returns `ready()`.
func waitForGraph(
    _ state: UnsafeMutablePointer<RealtimeState>, wake: WakeSignal.Endpoint, signal: WakeSignal.Endpoint,
    until ready: () -> Bool
) -> Bool {
    let deadline = monotonicSeconds() + RealtimeState.freewheelPatience
    while !ready() {
        let left = deadline - monotonicSeconds()
        guard left > 0, state.pointee.running.pointee.load(ordering: .acquiring) else { return false }
        wake.post()
        _ = signal.wait(timeout: min(left, 0.05))
    }
    return true
}

/// One period of a group's ports through its processor, in pieces of at most `capacity` frames: gather the
/// channels into interleaved frames, process, and write each channel to its port's ring.
@inline(__always)
func processGroup(
    _ group: UnsafeMutablePointer<RealtimeGroup>, _ inputs: UnsafeMutablePointer<RealtimePort>,
    _ nframes: jack_nframes_t
) {
    let g = group.pointee
    let n = Int(nframes)
    var done = 0
    while done < n {
        let m = min(g.capacity, n - done)
        for c in 0..<g.channels {
            let source = inputs[g.firstInput + c].port.flatMap { jack_port_get_buffer($0, nframes) }
            if let source {
                let samples = source.assumingMemoryBound(to: Float.self) + done
                for f in 0..<m { g.interleaved[f * g.channels + c] = samples[f] }
            } else {
                for f in 0..<m { g.interleaved[f * g.channels + c] = 0 }
            }
        }
        g.function(g.instance, g.interleaved, g.processed, UInt32(m))
        for c in 0..<g.channels {
            for f in 0..<m { g.planar[f] = g.processed[f * g.channels + c] }
            _ = inputs[g.firstInput + c].ring.write(g.planar, count: m)
        }
        done += m
    }
}

/// The JACK process callback. Real-time thread only: for each input port, one all-or-nothing copy into
/// its ring (every channel or none, so channels stay aligned; a refused period becomes a gap record), through
/// the node's real-time processor first when a real-time safe plugin node follows it; for
/// each output port, one copy out of its ring (silence when short); then the readers are woken. While the
/// server freewheels, and only then, a period waits (a bounded time) for room in the input rings and for audio
/// in the output rings of a port that is playing: JACK then runs the callback without real-time constraints, as
/// fast as the slowest client goes.
func speechgraphProcess(_ nframes: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let argument else { return 0 }
    let state = argument.assumingMemoryBound(to: RealtimeState.self)
    var start = timespec()
    if state.pointee.timingEnabled { clock_gettime(CLOCK_MONOTONIC, &start) }
    let n = Int(nframes)
    let running = state.pointee.running.pointee.load(ordering: .acquiring)
    let freewheeling = state.pointee.freewheeling.pointee.load(ordering: .relaxed)

    // Inputs.
    let inputs = state.pointee.inputs
    let inputCount = state.pointee.inputCount
    if running && inputCount > 0 {
        var fits = inputsFit(state, n)
        // Freewheeling (an export): no deadline to meet, so the period waits for the graph to read rather than
        // being lost, and keeps half of each ring free for the return to real time. Past the patience, it goes in
        // if it fits at all.
        if freewheeling && !inputsFit(state, n, keepingHalfFree: true) {
            _ = waitForGraph(state, wake: state.pointee.inputWake, signal: state.pointee.inputRoom) {
                inputsFit(state, n, keepingHalfFree: true)
            }
            fits = inputsFit(state, n)
        }
        // The gap before this audio is recorded first; if its record does not fit, the period is dropped too
        // (audio after an unrecorded gap would be placed too early on the stream's clock).
        if fits && state.pointee.hasPendingGap {
            var record = state.pointee.pendingGap
            if state.pointee.gaps.write(&record, count: 1) {
                state.pointee.hasPendingGap = false
            } else {
                fits = false
            }
        }
        if fits {
            for i in 0..<inputCount where inputs[i].group < 0 {
                if let port = inputs[i].port, let buffer = jack_port_get_buffer(port, nframes) {
                    _ = inputs[i].ring.write(buffer.assumingMemoryBound(to: Float.self), count: n)
                }
            }
            // Ports whose audio a real-time plugin node processes first (a gate straight after jack.input).
            for g in 0..<state.pointee.groupCount { processGroup(state.pointee.groups + g, inputs, nframes) }
        } else {
            if state.pointee.hasPendingGap {
                state.pointee.pendingGap.frames += n
            } else {
                state.pointee.pendingGap = GapRecord(ringIndex: inputs[0].ring.writtenCount, frames: n)
                state.pointee.hasPendingGap = true
            }
            state.pointee.overruns.pointee.add(n, ordering: .relaxed)
        }
        if state.pointee.unwoken.add(n, threshold: state.pointee.wakeFrames, force: !fits) {
            state.pointee.inputWake.post()
        }
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
                if freewheeling && outputs[i].ring.availableToRead < n {
                    // Until the graph has queued the period, or has ended its output.
                    let ring = outputs[i].ring
                    let ended = state.pointee.outputEnded
                    _ = waitForGraph(state, wake: state.pointee.outputWake, signal: state.pointee.outputData) {
                        ring.availableToRead >= n || ended.pointee.load(ordering: .acquiring)
                    }
                }
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

    // A freewheeling period's waits for the graph are no real-time cost: not counted.
    if state.pointee.timingEnabled && !freewheeling {
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
