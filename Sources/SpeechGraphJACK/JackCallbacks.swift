import CJack
import Foundation
import SpeechGraphCore
import Synchronization

/// What JACK's notification thread tells the graph thread: set by callbacks, read by `JackSession.poll`.
struct Notifications: ~Copyable {
    let serverGone = Atomic<Bool>(false)
    let xruns = Atomic<Int>(0)
    /// The ports registered since the last poll (at most `registeredLimit`): a port registered again under a name
    /// already matched (a player restarted) is a new port, to connect. The notification thread is not the
    /// real-time one: it may take a lock.
    let registered = Mutex<[jack_port_id_t]>([])
    static let registeredLimit = 4096
    let bufferSize = Atomic<Int>(0)
    /// The client's shutdown was counted process-wide (`JackLibrary.noteShutdown`), and its close has not taken it
    /// back yet.
    let shutDown = Atomic<Bool>(false)
    /// Shutdown callbacks running: a lost client is closed once they returned (libjack's close cancels its threads,
    /// this one among them).
    let shutdownsRunning = Atomic<Int>(0)
}

/// JACK's metadata keys (the C globals are not concurrency-safe to read from Swift 6).
enum Metadata {
    static let prettyName = "http://jackaudio.org/metadata/pretty-name"
    static let order = "http://jackaudio.org/metadata/order"
    static let portGroup = "http://jackaudio.org/metadata/port-group"
    static let signalType = "http://jackaudio.org/metadata/signal-type"
}

func onShutdown(_ code: jack_status_t, _ reason: UnsafePointer<CChar>?, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let session = argument.assumingMemoryBound(to: SessionCallbacks.self)
    let notifications = session.pointee.notifications
    notifications.pointee.shutdownsRunning.add(1, ordering: .acquiring)
    defer { notifications.pointee.shutdownsRunning.subtract(1, ordering: .releasing) }
    // Counted before the session can see it: no client opens in this process until this one is closed.
    JackLibrary.noteShutdown(notifications.pointee.shutDown)
    if let reason {
        let n = min(strlen(reason), SessionCallbacks.reasonCapacity - 1)
        session.pointee.reason.update(from: reason, count: n)
        session.pointee.reason[n] = 0
    }
    session.pointee.notifications.pointee.serverGone.store(true, ordering: .releasing)
    session.pointee.realtime.pointee.inputWake.post()
    session.pointee.realtime.pointee.outputWake.post()
    session.pointee.realtime.pointee.inputRoom.post()
    session.pointee.realtime.pointee.outputData.post()
}

/// JACK asks for the latency of the ports (after connections change): in a graph with ports both ways, which may
/// pass its input on (a tap to `jack.output`), what an output plays left the inputs a `prebuffer` before, up to a
/// period more (the graph thread writes it after the callback has read the input), so the outputs' capture latency
/// is the inputs' plus that, and the inputs' playback latency the outputs' plus that. A session with ports one way
/// only does not register it (JACK's default is right for it). JACK's notification thread, not the real-time one.
func onLatency(_ mode: jack_latency_callback_mode_t, _ argument: UnsafeMutableRawPointer?) {
    guard let argument else { return }
    let session = argument.assumingMemoryBound(to: SessionCallbacks.self)
    let rt = session.pointee.realtime.pointee
    guard rt.inputCount > 0, rt.outputCount > 0 else { return }
    // Saturating: a trap here would end the process on JACK's thread, whatever a port reports.
    func plus(_ a: UInt32, _ b: UInt32) -> UInt32 { a.addingReportingOverflow(b).overflow ? .max : a + b }
    let period = UInt32(max(0, session.pointee.notifications.pointee.bufferSize.load(ordering: .relaxed)))
    var added = jack_latency_range_t(min: UInt32.max, max: 0)
    for o in 0..<rt.outputCount {
        let prebuffer = UInt32(rt.outputs[o].prebufferFrames)
        added.min = min(added.min, prebuffer)
        added.max = max(added.max, plus(prebuffer, period))
    }
    // The range of the ports on the side the audio comes from, then ours added on the other side.
    let capture = mode == JackCaptureLatency
    let (from, fromCount) = capture ? (rt.inputs, rt.inputCount) : (rt.outputs, rt.outputCount)
    let (to, toCount) = capture ? (rt.outputs, rt.outputCount) : (rt.inputs, rt.inputCount)
    var range = jack_latency_range_t(min: UInt32.max, max: 0)
    for i in 0..<fromCount {
        guard let port = from[i].port else { continue }
        var r = jack_latency_range_t()
        jack_port_get_latency_range(port, mode, &r)
        range.min = min(range.min, r.min)
        range.max = max(range.max, r.max)
    }
    if range.min > range.max { range = jack_latency_range_t(min: 0, max: 0) }
    var total = jack_latency_range_t(min: plus(range.min, added.min), max: plus(range.max, added.max))
    for i in 0..<toCount {
        guard let port = to[i].port else { continue }
        jack_port_set_latency_range(port, mode, &total)
    }
}

/// The server starts or stops freewheeling (a JACK notification).
func onFreewheel(_ starting: Int32, _ argument: UnsafeMutableRawPointer?) {
    argument?.assumingMemoryBound(to: SessionCallbacks.self).pointee.realtime.pointee.freewheeling.pointee.store(
        starting != 0, ordering: .relaxed)
}

func onXrun(_ argument: UnsafeMutableRawPointer?) -> Int32 {
    argument?.assumingMemoryBound(to: SessionCallbacks.self).pointee.notifications.pointee.xruns.add(
        1, ordering: .relaxed)
    return 0
}

/// A port registered: the patterns are matched again at the next poll, and this port is connected if one matches
/// it, even when a port of its name was matched before (a player restarted).
func onPortRegistration(_ port: jack_port_id_t, _ registered: Int32, _ argument: UnsafeMutableRawPointer?) {
    guard registered != 0,
        let notifications = argument?.assumingMemoryBound(to: SessionCallbacks.self).pointee
            .notifications
    else { return }
    notifications.pointee.registered.withLock { if $0.count < Notifications.registeredLimit { $0.append(port) } }
}

func onBufferSize(_ frames: jack_nframes_t, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    argument?.assumingMemoryBound(to: SessionCallbacks.self).pointee.notifications.pointee.bufferSize
        .store(Int(frames), ordering: .relaxed)
    return 0
}

/// Clients whose server went away, each closed on a thread of its own. After a server restart libjack's
/// `jack_client_close` can block for good inside libjack (jackaudio/jack2#395: seen here after two or three
/// restarts of a dummy server), and neither the graph thread nor Ctrl-C may wait for it. While a close is
/// under way no client of the process opens (`JackLibrary`).
final class AbandonedClients: Sendable {
    /// Closes not yet returned.
    let pending = Atomic<Int>(0)
    /// What waits for the pending closes (the session's plugin instances and their scratch memory, which the
    /// callbacks of a closing client may still reach), done by the last close to return.
    private let afterCloses = Mutex<[@Sendable () -> Void]>([])

    /// The client's pointer handed to the closing thread: the session forgets it first and never uses it again,
    /// so only that thread touches it; the objects its callbacks reach (through the session's raw state, which
    /// a session gone before the close returned leaves allocated), kept until the close returns; and the
    /// session's notifications (in that raw state), for its shutdown flags.
    private struct Handle: @unchecked Sendable {
        let client: OpaquePointer
        let reached: [AnyObject]
        let notifications: UnsafeMutablePointer<Notifications>
    }

    func close(
        _ client: OpaquePointer, keeping reached: [AnyObject], notifications: UnsafeMutablePointer<Notifications>
    ) {
        pending.add(1, ordering: .relaxed)
        let handle = Handle(client: client, reached: reached, notifications: notifications)
        Thread.detachNewThread { [self] in
            // The shutdown callback that told of the loss returns first (bounded: it only stores and posts).
            for _ in 0..<1000 where handle.notifications.pointee.shutdownsRunning.load(ordering: .acquiring) > 0 {
                usleep(1000)
            }
            JackLibrary.close(handle.client, shutDown: handle.notifications.pointee.shutDown)
            withExtendedLifetime(handle.reached) {}
            // The last pending close does what waited, then stops pending (so the session's memory, which that
            // work reaches, stays while it runs: see `JackSession.deinit`).
            while true {
                let work = afterCloses.withLock { queued -> [@Sendable () -> Void]? in
                    guard pending.load(ordering: .acquiring) == 1, !queued.isEmpty else {
                        pending.subtract(1, ordering: .releasing)
                        return nil
                    }
                    defer { queued = [] }
                    return queued
                }
                guard let work else { break }
                for w in work { w() }
            }
        }
    }

    /// Runs `work` once no close is pending: now, or when the last one returns.
    func afterPendingCloses(_ work: @escaping @Sendable () -> Void) {
        let now = afterCloses.withLock { queued in
            guard pending.load(ordering: .acquiring) > 0 else { return true }
            queued.append(work)
            return false
        }
        if now { work() }
    }

    var closing: Bool { pending.load(ordering: .acquiring) > 0 }
}

/// What the non-process callbacks reach through their argument.
struct SessionCallbacks {
    var notifications: UnsafeMutablePointer<Notifications>
    var realtime: UnsafeMutablePointer<RealtimeState>
    /// The shutdown reason, copied out of JACK's string.
    var reason: UnsafeMutablePointer<CChar>
    static let reasonCapacity = 256
}
