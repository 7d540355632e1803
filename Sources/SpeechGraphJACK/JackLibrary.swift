import CJack
import Foundation
import SpeechGraphCore
import Synchronization

/// Every JACK client this process opens or closes, through one place: libjack's state is the process's, not a
/// client's, and a client opened at the wrong moment frees the others under their feet.
///
/// JACK2's libjack keeps one flag for the whole process saying that "the server" runs (cleared when any client's
/// server goes away, set when any open reaches a server) and one count of the clients allocated. Every
/// `jack_client_open`, even one that finds no server, first looks at both: with the flag down and clients still
/// allocated, it closes and frees every client of the process ("Jack server was closed but clients are still
/// allocated, cleanup..."): a lost client that another thread is closing (`AbandonedClients`), and a live client of
/// another server, whose session still holds it and whose threads are running. Either crashes the process later, in
/// libjack's threads or ours. So no client is opened while this process holds a client allocated since a client's
/// server went away: a session that lost its server tries again once every lost client is closed (at once, for
/// sessions of one server, which all lose it together); a graph that starts meanwhile waits for that, and is told
/// why when it lasts. PipeWire's libjack keeps no such state: the rule only makes it wait for closes.
///
/// Not mutable state of speechgraph's own: it mirrors the C library's, which one process has once.
enum JackLibrary {
    /// Shutdowns JACK reported (any client's server went away), counted on JACK's threads (lock-free: an open
    /// holds the lock below while libjack runs, and libjack's threads must never wait for it).
    static let shutdowns = Atomic<Int>(0)
    /// Lost clients (their shutdown counted) not yet closed.
    static let lost = Atomic<Int>(0)

    private struct State {
        /// Clients opened and not yet closed (their close returned).
        var open = 0
        /// `shutdowns` when an open last reached a server, or when no client was open.
        var shutdownsSeen = 0
    }
    private static let state = Mutex(State())

    /// Why an open is not tried now.
    enum Wait: Error {
        /// A client whose server went away is not closed yet (libjack's close can take long, or hang: jack2#395).
        case lostClientClosing
        /// Clients of a server that is still there are open, and another server went away since they opened:
        /// libjack would free them.
        case otherClientsOpen(Int)
    }

    /// Why an open may not be tried now, `seen` shutdowns having been counted: nil when it may.
    private static func hold(_ s: inout State, seen: Int) -> Wait? {
        if s.open == 0 { s.shutdownsSeen = seen }
        guard s.open > 0, seen > s.shutdownsSeen else { return nil }
        return lost.load(ordering: .acquiring) > 0 ? .lostClientClosing : .otherClientsOpen(s.open)
    }

    /// `jack_client_open` (with `server`, when named), unless the moment is wrong (`Wait`); nil when JACK refused
    /// (`status` says why). Opens and closes go one at a time.
    static func open(
        _ name: String, _ options: jack_options_t, _ status: inout jack_status_t, _ server: String?
    ) throws(Wait) -> OpaquePointer? {
        try state.withLock { (s: inout State) throws(Wait) -> OpaquePointer? in
            let seen = shutdowns.load(ordering: .acquiring)
            if let wait = hold(&s, seen: seen) { throw wait }
            guard let client = speechgraph_jack_client_open(name, options, &status, server) else { return nil }
            s.open += 1
            s.shutdownsSeen = seen
            return client
        }
    }

    /// `open`, waiting up to `timeout` seconds for the moment to be right (a new graph while a lost client closes).
    static func open(
        _ name: String, _ options: jack_options_t, _ status: inout jack_status_t, _ server: String?,
        waitingUpTo timeout: Double
    ) throws -> OpaquePointer? {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            do {
                return try open(name, options, &status, server)
            } catch let wait {
                guard Date() < deadline else { throw SpeechGraphError(wait.message(timeout: timeout)) }
                usleep(20_000)
            }
        }
    }

    /// A client's shutdown callback ran: counted once per client (`counted` is the client's own flag).
    static func noteShutdown(_ counted: borrowing Atomic<Bool>) {
        guard !counted.exchange(true, ordering: .acquiringAndReleasing) else { return }
        lost.add(1, ordering: .relaxed)
        shutdowns.add(1, ordering: .releasing)
    }

    /// `jack_client_close`, and the count of open (and lost) clients after it returns; `shutDown` is the client's
    /// own flag that `noteShutdown` set, taken back here.
    static func close(_ client: OpaquePointer, shutDown: borrowing Atomic<Bool>) {
        jack_client_close(client)
        state.withLock { s in
            s.open -= 1
            // A shutdown counted now is this client's (it closed under it) or another's, counted there.
            if shutDown.exchange(false, ordering: .acquiringAndReleasing) { lost.subtract(1, ordering: .relaxed) }
            if s.open == 0 { s.shutdownsSeen = shutdowns.load(ordering: .acquiring) }
        }
    }
}

extension JackLibrary.Wait {
    func message(timeout: Double) -> String {
        let waited = "waited \(String(format: "%g", timeout)) s"
        switch self {
        case .lostClientClosing:
            return "JACK: no client can open in this process while libjack closes the client of a server that went "
                + "away (\(waited); libjack's close can hang, jackaudio/jack2#395: restart speechgraph)"
        case .otherClientsOpen(let n):
            let clients = n == 1 ? "1 client of another JACK server stays" : "\(n) clients of another JACK server stay"
            return "JACK: no client can open in this process while \(clients) open: a server this process used went "
                + "away, and libjack would close every client of the process (\(waited); run the graphs of each JACK "
                + "server in a process of its own)"
        }
    }
}
