import Foundation
import SpeechGraphTestSupport
import Synchronization

/// A private `jackd -d dummy` server that a test starts and stops (no sound card needed).
/// Each one has a name of its own (the process id, a counter and a random part), so that two test runs on
/// one machine never meet, and each is stopped by its PID only: SIGTERM (so that jackd frees its slot in
/// the server registry), then SIGKILL if it has not exited, and always waited for. It is started under
/// `setpriv --pdeathsig KILL`, so a crashed test takes it along.
final class JackServer: @unchecked Sendable {
    // @unchecked: `process` is only touched by the test that owns the server, one call at a time.
    private static let counter = Mutex(0)
    let name: String
    private var process: Process?

    struct Failure: Error, CustomStringConvertible { var description: String }

    init() {
        let n = Self.counter.withLock { n in
            n += 1
            return n
        }
        name = "sgt-\(getpid())-\(n)-\(UInt16.random(in: 0...UInt16.max))"
    }

    func start(rate: Int = 48000, period: Int = 256) throws {
        stop(keepingLock: true)
        if !holdsLock {
            try MachineLock.acquire()
            holdsLock = true
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = [
            "--pdeathsig", "KILL", "jackd", "-n", name, "--no-realtime", "-d", "dummy",
            "-r", "\(rate)", "-p", "\(period)",
        ]
        // jackd's own words, for when it does not start (its banner aside).
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("\(name).log").path
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: log) }
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle(forWritingAtPath: log) ?? FileHandle.nullDevice
        try p.run()
        process = p
        // Ready when it answers; a deadline only bounds a jackd that hangs.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try Run.process("/usr/bin/jack_lsp", ["-s", name], timeout: 30).status == 0 { return }
            guard p.isRunning else {
                let said = contents(log).split(separator: "\n").filter {
                    !$0.hasPrefix("Copyright") && !$0.hasPrefix("jackdmp ") && !$0.contains("WARRANTY")
                        && !$0.contains("free software") && !$0.contains("certain conditions")
                }
                throw Failure(
                    description: "jackd exited at once (status \(p.terminationStatus)): "
                        + said.joined(separator: "; "))
            }
            usleep(20_000)
        }
        stop()
        throw Failure(description: "jackd did not become ready in 60 s")
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// SIGTERM to the server this object started, SIGKILL if it has not exited after 10 s; waits for it.
    /// Then the machine lock goes, unless the test is about to start this server again (`keepingLock`: its registry
    /// entry is then left for that start, which takes it back, with no server of the same name started and
    /// stopped in between under a client that reconnects).
    func stop(keepingLock: Bool = false) {
        if let p = process {
            process = nil
            if p.isRunning {
                kill(p.processIdentifier, SIGTERM)
                let deadline = Date().addingTimeInterval(10)
                while p.isRunning && Date() < deadline { usleep(10_000) }
                if p.isRunning { kill(p.processIdentifier, SIGKILL) }
            }
            p.waitUntilExit()
            if !keepingLock { reclaimRegistryEntry() }
        }
        if holdsLock && !keepingLock {
            MachineLock.release()
            holdsLock = false
        }
    }

    private var holdsLock = false

    /// A jackd stopped while a client was closing its connection can exit without taking its name out of the
    /// machine's JACK registry (/dev/shm/jack-shm-registry). The registry holds 8 servers and frees a dead one's
    /// entry only for a server of the same name: after 8 such exits no server could start ("Too many servers
    /// already active"), in this run or a later one. So a name left there is started once more, with no client,
    /// and stopped again: that frees it.
    private func reclaimRegistryEntry() {
        func registered() -> Bool {
            guard let data = FileManager.default.contents(atPath: "/dev/shm/jack-shm-registry") else { return false }
            return data.range(of: Data(":\(name):".utf8)) != nil
        }
        guard registered() else { return }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--pdeathsig", "KILL", "jackd", "-n", name, "--no-realtime", "-d", "dummy"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return }
        // Deadlines only bound a jackd that hangs.
        let deadline = Date().addingTimeInterval(30)
        while p.isRunning && Date() < deadline,
            (try? Run.process("/usr/bin/jack_lsp", ["-s", name], timeout: 10).status) != 0
        {
            usleep(20_000)
        }
        kill(p.processIdentifier, SIGTERM)
        let stopped = Date().addingTimeInterval(10)
        while p.isRunning && Date() < stopped { usleep(10_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
    }

    deinit { stop() }

    /// `jack_lsp` with these options against this server.
    func lsp(_ options: [String] = []) throws -> String {
        try Run.process("/usr/bin/jack_lsp", ["-s", name] + options, timeout: 10).stdout
    }
}

/// The output a running process has written so far to the file its stdout goes to.
func contents(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }

/// One machine-wide lock (flock(2) on a file in /tmp) held while a JACK test server runs, so that test
/// runs on one machine take turns with their servers: JACK keeps port metadata in one database per user
/// (/dev/shm/jack_db-UID) that every server shares, port ids repeat across servers, and the first jackd to
/// exit deletes it. The kernel drops the lock when the process dies. Within one process it is counted,
/// never waited for (the suite is serialized).
enum MachineLock {
    static let path = "/tmp/speechgraph-jack-tests.lock"
    /// The open lock file and how many servers of this process hold the lock.
    private static let state = Mutex<(fd: Int32, holders: Int)>((-1, 0))

    struct Failure: Error, CustomStringConvertible { var description: String }

    /// Waits for the lock; the deadline (10 minutes) only bounds a hang in the other run.
    static func acquire() throws {
        try state.withLock { state in
            if state.holders > 0 {
                state.holders += 1
                return
            }
            let f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o666)
            guard f >= 0 else { throw Failure(description: "cannot open \(path): errno \(errno)") }
            let deadline = Date().addingTimeInterval(600)
            while flock(f, LOCK_EX | LOCK_NB) != 0 {
                guard Date() < deadline else {
                    close(f)
                    throw Failure(description: "another test run held \(path) for 10 minutes")
                }
                usleep(50_000)
            }
            state = (f, 1)
        }
    }

    static func release() {
        state.withLock { state in
            guard state.holders > 0 else { return }
            state.holders -= 1
            if state.holders == 0 {
                flock(state.fd, LOCK_UN)
                close(state.fd)
                state.fd = -1
            }
        }
    }
}
