import Foundation
import Synchronization
import SpeechGraphTestSupport

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
        stop()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
        p.arguments = ["--pdeathsig", "KILL", "jackd", "-n", name, "--no-realtime", "-d", "dummy",
                       "-r", "\(rate)", "-p", "\(period)"]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        process = p
        // Ready when it answers; a deadline only bounds a jackd that hangs.
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            if try Run.process("/usr/bin/jack_lsp", ["-s", name], timeout: 30).status == 0 { return }
            guard p.isRunning else { throw Failure(description: "jackd exited at once (status \(p.terminationStatus))") }
            usleep(20_000)
        }
        stop()
        throw Failure(description: "jackd did not become ready in 60 s")
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// SIGTERM to the server this object started, SIGKILL if it has not exited after 10 s; waits for it.
    func stop() {
        guard let p = process else { return }
        process = nil
        guard p.isRunning else { return }
        kill(p.processIdentifier, SIGTERM)
        let deadline = Date().addingTimeInterval(10)
        while p.isRunning && Date() < deadline { usleep(10_000) }
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
