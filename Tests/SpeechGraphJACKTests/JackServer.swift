import Foundation
import SpeechGraphTestSupport

/// A private `jackd -d dummy` server that a test starts and stops (no sound card needed).
/// One at a time per process (libjack crashes with two); stopped with SIGTERM so that jackd frees its
/// slot in the 8-server registry; started under `setpriv --pdeathsig KILL` so a crashed test takes it along.
final class JackServer: @unchecked Sendable {
    /// One name for every test server: a leaked registry slot is then reused, never multiplied.
    static let name = "speechgraph-test"
    let name = JackServer.name
    private var process: Process?

    struct Failure: Error, CustomStringConvertible { var description: String }

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
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            if try Run.process("/usr/bin/jack_lsp", ["-s", name], timeout: 5).status == 0 { return }
            guard p.isRunning else { throw Failure(description: "jackd exited at once (status \(p.terminationStatus))") }
            usleep(20_000)
        }
        stop()
        throw Failure(description: "jackd did not become ready in 10 s")
    }

    var isRunning: Bool { process?.isRunning ?? false }

    /// SIGTERM, then SIGKILL after 5 s; waits until the server no longer answers.
    func stop() {
        let p = process
        process = nil
        if let p, p.isRunning { kill(p.processIdentifier, SIGTERM) }
        // Also any jackd of this name (one left by an earlier, crashed test run).
        _ = try? Run.process("/usr/bin/pkill", ["-TERM", "-f", "jackd -n \(name) "], timeout: 5)
        let deadline = Date().addingTimeInterval(5)
        while Date() < deadline {
            let alive = (p?.isRunning ?? false)
                || (try? Run.process("/usr/bin/pgrep", ["-f", "jackd -n \(name) "], timeout: 5).status) == 0
            if !alive { break }
            usleep(20_000)
        }
        if let p, p.isRunning { kill(p.processIdentifier, SIGKILL) }
        _ = try? Run.process("/usr/bin/pkill", ["-KILL", "-f", "jackd -n \(name) "], timeout: 5)
        p?.waitUntilExit()
    }

    deinit { stop() }

    /// `jack_lsp` with these options against this server.
    func lsp(_ options: [String] = []) throws -> String {
        try Run.process("/usr/bin/jack_lsp", ["-s", name] + options, timeout: 10).stdout
    }
}

/// The output a running process has written so far to the file its stdout goes to.
func contents(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
