import CJack
import Foundation
import SpeechGraphCore
import Synchronization

/// What the graph thread notices of the server (lost, back, xruns, another rate) and the gaps the callback
/// recorded, handed to each jack.input node.
extension JackSession {
    /// A jack.input node's place among the session's subscribers, for `takeChanges` and `nextGap`; made while the
    /// graph is built (the changes said before are kept for the first subscriber).
    public func subscribe(group: String) -> Int {
        subscribers.append((group, subscribers.isEmpty ? unsubscribed : [], []))
        unsubscribed = []
        return subscribers.count - 1
    }

    func report(_ change: Change, group: String? = nil) {
        guard !subscribers.isEmpty else {
            // Kept only until the graph is started: nobody will ever take them after that.
            if !started { unsubscribed.append(change) }
            return
        }
        switch change {
        case .lost, .restored, .xruns, .rateChanged:
            for i in subscribers.indices { subscribers[i].changes.append(change) }
        case .unmatched:
            let owner = subscribers.firstIndex { $0.group == group } ?? 0
            subscribers[owner].changes.append(change)
        case .closeStuck, .renamed, .openWaits:
            subscribers[0].changes.append(change)
        }
    }

    /// What changed since this subscriber last asked (jack.input turns changes into events).
    public func takeChanges(subscriber: Int) -> [Change] {
        defer { subscribers[subscriber].changes.removeAll() }
        return subscribers[subscriber].changes
    }

    /// Changes kept for nodes to take, in all: 0 once every subscriber took its own (a test's view).
    var retainedChanges: Int { unsubscribed.count + subscribers.reduce(0) { $0 + $1.changes.count } }

    /// Called often from the graph thread (by any jack.* node): notices a lost server, reconnects after
    /// a loss (trying every 250 ms), re-applies connection patterns when ports appear. What changed is
    /// kept for `takeChanges`.
    public func poll() {
        if isAvailable && notifications.pointee.serverGone.load(ordering: .acquiring) {
            running.pointee.store(false, ordering: .releasing)
            isAvailable = false
            lostAt = Date()
            let why = String(cString: reason)
            if let c = client { abandoned.close(c, keeping: reachedByCallbacks, notifications: notifications) }
            client = nil
            ports = []
            report(.lost(why.isEmpty ? "the JACK server stopped" : "the JACK server stopped: \(why)"))
        }
        if !isAvailable, started, abandoned.closing {
            if !reportedStuck, Date().timeIntervalSince(lostAt ?? Date()) >= Self.closeStuckAfter {
                reportedStuck = true
                report(.closeStuck)
            }
        } else if !isAvailable, started, Date().timeIntervalSince(lastAttempt) >= 0.25 {
            lastAttempt = Date()
            if Self.serverListens(serverName) { try? open(initial: false) }
            if let (from, to) = planningRateMismatch {
                planningRateMismatch = nil
                // Said once per rate: the attempts go on every 250 ms until a server at our rate is back.
                if reportedMismatch != to { report(.rateChanged(from: from, to: to)) }
                reportedMismatch = to
            }
            if isAvailable {
                reportedMismatch = nil
                reportedStuck = false
                reportedOpenWait = false
                report(.restored(Date().timeIntervalSince(lostAt ?? Date())))
            }
        }
        if isAvailable {
            let xruns = notifications.pointee.xruns.load(ordering: .relaxed)
            if xruns > xrunsSeen {
                report(.xruns(xruns - xrunsSeen))
                xrunsSeen = xruns
            }
            if notifications.pointee.registered.withLock({ !$0.isEmpty }) {
                connectAll(onlyNew: true)
            }
            bufferSize = notifications.pointee.bufferSize.load(ordering: .relaxed)
        }
    }

    /// Whether the server may be tried: with JACK2's libjack (its registry in /dev/shm), only once the server's
    /// socket is there (/dev/shm/jack_NAME_UID_0), which jackd makes when it is ready, after its metadata database,
    /// and removes when it stops. Every jack_client_open opens that database (and makes it when it is not there),
    /// even when no server answers: tried while a server is going or coming (every 250 ms after a loss), it meets
    /// the files half made or half removed, and crashes the process (SIGSEGV, SIGBUS). Another libjack (PipeWire's)
    /// is always tried.
    static func serverListens(_ server: String?) -> Bool {
        guard FileManager.default.fileExists(atPath: "/dev/shm/jack-shm-registry") else { return true }
        let name = server ?? JackSettings.server ?? "default"
        var info = stat()
        return stat("/dev/shm/jack_\(name)_\(geteuid())_0", &info) == 0 && (info.st_mode & S_IFMT) == S_IFSOCK
    }

    /// The next recorded input gap this subscriber has not had, if any: the gap ring's records are handed to every
    /// subscriber (each jack.input reads its own rings, which lost the same periods).
    func nextGap(subscriber: Int) -> GapRecord? {
        var record = GapRecord(ringIndex: 0, frames: 0)
        while gapRing.endpoint.readExactly(into: &record, count: 1) {
            for i in subscribers.indices { subscribers[i].gaps.append(record) }
        }
        return subscribers[subscriber].gaps.isEmpty ? nil : subscribers[subscriber].gaps.removeFirst()
    }
}
