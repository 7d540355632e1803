import Foundation
import SpeechGraphCore
import Synchronization

/// Where things are, seen from the tests.
public enum TestPaths {
    /// The package root (the folder holding Package.swift).
    public static let packageRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.fileExists(atPath: url.appendingPathComponent("Package.swift").path) { return url }
        }
        fatalError("no Package.swift above \(#filePath)")
    }()

    /// `../shared` beside the checkout (or $SPEECHGRAPH_SHARED), when it is there.
    public static var shared: URL? {
        let candidates = [
            ProcessInfo.processInfo.environment["SPEECHGRAPH_SHARED"],
            packageRoot.deletingLastPathComponent().appendingPathComponent("shared").path,
        ].compactMap { $0 }
        return candidates.map { URL(fileURLWithPath: $0) }
            .first { FileManager.default.fileExists(atPath: $0.appendingPathComponent("corpus").path) }
    }

    /// Corpus tests run unless SPEECHGRAPH_NO_CORPUS=1 (a developer's fast loop without ../shared); when they
    /// run, a missing corpus fails them (`requireShared`), never skips them.
    public static var corpusTestsWanted: Bool { ProcessInfo.processInfo.environment["SPEECHGRAPH_NO_CORPUS"] != "1" }

    public struct MissingCorpus: Error, CustomStringConvertible {
        public var description: String
    }

    /// `shared`, or a failure that says where it was looked for.
    public static func requireShared() throws -> URL {
        guard let shared else {
            throw MissingCorpus(
                description: "../shared/corpus not found beside \(packageRoot.path) (nor at "
                    + "$SPEECHGRAPH_SHARED); set SPEECHGRAPH_NO_CORPUS=1 to leave the corpus tests out")
        }
        return shared
    }

    /// The speechgraph binary that `swift build` made next to the test bundle.
    public static var binary: URL {
        if let env = ProcessInfo.processInfo.environment["SPEECHGRAPH_BIN"] { return URL(fileURLWithPath: env) }
        for config in ["debug", "release"] {
            let url = packageRoot.appendingPathComponent(".build/\(config)/speechgraph")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return packageRoot.appendingPathComponent(".build/debug/speechgraph")
    }
}

/// A temporary folder, removed when the value goes away.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL
    public init() {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("speechgraph-test-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }
    deinit { try? FileManager.default.removeItem(at: url) }
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}

/// What a finished process printed and returned.
public struct ProcessResult: Sendable, Codable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
    /// Killed by a signal rather than exiting.
    public var signaled: Bool
}

/// The speechgraph binary running with standard input a pipe the test writes and keeps open as long as it likes,
/// standard error in a file it can read while the program runs, standard output discarded. `stop()` (also at
/// deinit) kills what still runs and closes the pipe.
public final class FedSpeechgraph {
    public let process = Process()
    public let stdin = Pipe()
    private let errPath: String

    /// - Parameter environment: variables added to the test's own.
    public init(_ arguments: [String], stderrPath: String, environment: [String: String] = [:]) throws {
        errPath = stderrPath
        FileManager.default.createFile(atPath: stderrPath, contents: nil)
        process.executableURL = TestPaths.binary
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardInput = stdin
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        try process.run()
    }

    /// What it has written on standard error so far.
    public var stderr: String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }

    public func stop() {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        try? stdin.fileHandleForWriting.close()
    }

    deinit { stop() }
}

public enum Run {
    /// Waits, polling every 20 ms, until `condition` holds or `process` has ended; `seconds` only bounds a
    /// hang (what the test waits for is the condition, never the time).
    public static func wait(for process: Process, seconds: Double = 60, until condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline && process.isRunning && !condition() { usleep(20_000) }
    }

    /// The lines of a file being written (none while it does not exist).
    public static func lines(of path: String) -> [Substring] {
        ((try? String(contentsOfFile: path, encoding: .utf8)) ?? "").split(separator: "\n")
    }

    /// Runs a program to completion (or `timeout`, then SIGKILL), capturing both streams.
    /// `whileRunning` gets the process once it has started (to send it a signal, say).
    @discardableResult
    public static func process(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil,
        currentDirectory: URL? = nil, timeout: Double = 300,
        whileRunning: ((Process) -> Void)? = nil
    ) throws -> ProcessResult {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        if let environment { p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 } }
        if let currentDirectory { p.currentDirectoryURL = currentDirectory }
        let dir = TemporaryDirectory()
        let outURL = dir.url.appendingPathComponent("out")
        let errURL = dir.url.appendingPathComponent("err")
        FileManager.default.createFile(atPath: outURL.path, contents: nil)
        FileManager.default.createFile(atPath: errURL.path, contents: nil)
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        p.standardOutput = out
        p.standardError = err
        p.standardInput = FileHandle.nullDevice
        try p.run()
        whileRunning?(p)
        let deadline = Date().addingTimeInterval(timeout)
        while p.isRunning && Date() < deadline { usleep(10_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        try out.close()
        try err.close()
        return ProcessResult(
            status: p.terminationStatus,
            stdout: (try? String(contentsOf: outURL, encoding: .utf8)) ?? "",
            stderr: (try? String(contentsOf: errURL, encoding: .utf8)) ?? "",
            signaled: p.terminationReason == .uncaughtSignal)
    }

    /// Runs the speechgraph binary.
    @discardableResult
    public static func speechgraph(
        _ arguments: [String], environment: [String: String]? = nil, timeout: Double = 300,
        whileRunning: ((Process) -> Void)? = nil
    ) throws -> ProcessResult {
        try process(
            TestPaths.binary.path, arguments, environment: environment, currentDirectory: TestPaths.packageRoot,
            timeout: timeout, whileRunning: whileRunning)
    }
}

/// Test speech made on the spot with flite (Debian's flite package) and sox.
public enum TestSpeech {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
        public init(description: String) { self.description = description }
    }

    /// Speaks `text` into a WAV file. The `rms` voice is 16 kHz and recognised well by PocketSphinx's en-us model;
    /// `kal` is 8 kHz.
    public static func synthesize(_ text: String, to path: String, voice: String = "rms") throws {
        let r = try Run.process("/usr/bin/flite", ["-voice", voice, "-t", text, "-o", path], timeout: 60)
        guard r.status == 0 else { throw Failure(description: "flite failed: \(r.stderr)") }
    }

    /// The duration of an audio file in seconds (soxi -D).
    public static func duration(_ path: String) throws -> Double {
        let r = try Run.process("/usr/bin/soxi", ["-D", path], timeout: 60)
        guard r.status == 0, let d = Double(r.stdout.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw Failure(description: "soxi -D \(path) failed: \(r.stderr)")
        }
        return d
    }

    /// Music a vad lets through, into `path` (16 kHz mono): chords of three sines (Hz), one a second, each fading in
    /// and out, as scripts/make-noise-set.sh makes its tones. Its parts go beside it.
    public static func chords(_ chords: [[Int]], to path: String) throws {
        var parts: [String] = []
        for (i, chord) in chords.enumerated() {
            let part = "\(path).chord\(i).wav"
            try sox(
                ["-n", "-r", "16000", "-b", "16", "-c", "1", part, "synth", "1"] + chord.flatMap { ["sine", "\($0)"] }
                    + ["channels", "1", "fade", "0.05", "1", "0.2", "norm", "-18"])
            parts.append(part)
        }
        try sox(parts + [path])
    }

    /// `sentences` spoken one after another into `path` (16 kHz mono), each followed by `pause` seconds of
    /// silence; its parts go beside it.
    public static func sentences(_ sentences: [String], pause: Double, to path: String) throws {
        var parts: [String] = []
        for (i, s) in sentences.enumerated() {
            let part = "\(path).\(i).wav"
            try synthesize(s, to: part)
            let silence = "\(path).\(i)-pause.wav"
            try sox(["-n", "-r", "16000", "-b", "16", "-c", "1", silence, "trim", "0", "\(pause)"])
            parts += [part, silence]
        }
        try sox(parts + [path])
    }

    /// The final results' texts in `speechgraph transcribe --format jsonl` output, by the file they came from
    /// (`source`), in order; empty texts left out.
    public static func finalTexts(jsonl: String) -> [String: [String]] {
        var texts: [String: [String]] = [:]
        for line in jsonl.split(separator: "\n") {
            guard let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                event["type"] as? String == "result", event["isFinal"] as? Bool == true,
                let text = event["text"] as? String, !text.isEmpty
            else { continue }
            texts[event["source"] as? String ?? "", default: []].append(text)
        }
        return texts
    }

    /// Runs sox with these arguments (`sox in.wav -r 48000 -c 2 out.wav`).
    public static func sox(_ arguments: [String]) throws {
        let r = try Run.process("/usr/bin/sox", arguments, timeout: 60)
        guard r.status == 0 else {
            throw Failure(description: "sox \(arguments.joined(separator: " ")) failed: \(r.stderr)")
        }
    }
}

/// Word error rate of `hypothesis` against `reference` (lowercase words, punctuation dropped).
public func wordErrorRate(reference: String, hypothesis: String) -> Double {
    func words(_ s: String) -> [Substring] {
        s.lowercased().split { !($0.isLetter || $0.isNumber || $0 == "'") }
    }
    let r = words(reference)
    let h = words(hypothesis)
    guard !r.isEmpty else { return h.isEmpty ? 0 : 1 }
    var d = Array(0...h.count)
    for i in 1...r.count {
        var previous = d[0]
        d[0] = i
        if h.isEmpty { continue }
        for j in 1...h.count {
            let current = d[j]
            d[j] = min(d[j] + 1, d[j - 1] + 1, previous + (r[i - 1] == h[j - 1] ? 0 : 1))
            previous = current
        }
    }
    return Double(d[h.count]) / Double(r.count)
}

/// A value in a directory that several test processes share: made by the one that holds the lock file
/// (`NAME.lock`, flock) and finds no value yet, written as JSON (`NAME.json`, renamed into place when whole).
enum SharedFixture {
    static func value<Value: Codable>(named name: String, in dir: String, make: () throws -> Value) async throws
        -> Value
    {
        let valuePath = "\(dir)/\(name).json"
        func written() throws -> Value? {
            guard let data = FileManager.default.contents(atPath: valuePath) else { return nil }
            return try JSONDecoder().decode(Value.self, from: data)
        }
        let lock = open("\(dir)/\(name).lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard lock >= 0 else { throw TestSpeech.Failure(description: "\(dir)/\(name).lock: \(errno)") }
        defer { close(lock) }
        while true {
            if let value = try written() { return value }
            if flock(lock, LOCK_EX | LOCK_NB) == 0 {
                defer { flock(lock, LOCK_UN) }
                if let value = try written() { return value }
                let value = try make()
                let partial = "\(valuePath).\(getpid())"
                try JSONEncoder().encode(value).write(to: URL(fileURLWithPath: partial))
                guard rename(partial, valuePath) == 0 else {
                    throw TestSpeech.Failure(description: "rename to \(valuePath): \(errno)")
                }
                return value
            }
            // Another process is making it: look again in a while (the file appears, or the lock is let go).
            try await Task.sleep(for: .milliseconds(100))
        }
    }
}

/// A test fixture computed once per test process, by the first test that asks; the others await it without
/// holding a thread of the test runner (which has one per core). For an expensive result several tests read, such
/// as one decoding of a corpus file, never for anything a test changes. A failure is every asker's.
///
/// One made with a name (`sharedAs`) is computed once per test run when `SPEECHGRAPH_TEST_SHARED_DIR` names a
/// directory (scripts/test.sh makes one for its four test processes): the first process to ask makes it, under a
/// lock file there, and writes it there; the others read it (waiting, without a thread, until it is written). A
/// failure is not shared: each process that finds no value tries for itself.
public final class ComputedOnce<Value: Sendable>: Sendable {
    private enum State {
        case notAsked
        case making(waiting: [CheckedContinuation<Value, Error>])
        case made(Result<Value, Error>)
    }
    private let state = Mutex<State>(.notAsked)
    private let make: @Sendable () async throws -> Value

    public init(_ make: @escaping @Sendable () throws -> Value) { self.make = { try make() } }

    /// Made once per test run (as above) where the run shares a directory, else once per process.
    public init(sharedAs name: String, _ make: @escaping @Sendable () throws -> Value) where Value: Codable {
        self.make = {
            guard let dir = ProcessInfo.processInfo.environment["SPEECHGRAPH_TEST_SHARED_DIR"], !dir.isEmpty else {
                return try make()
            }
            return try await SharedFixture.value(named: name, in: dir, make: make)
        }
    }

    public func get() async throws -> Value {
        let first = state.withLock { state in
            guard case .notAsked = state else { return false }
            state = .making(waiting: [])
            return true
        }
        if first {
            let result: Result<Value, Error>
            do { result = .success(try await make()) } catch { result = .failure(error) }
            let waiting = state.withLock { state in
                guard case .making(let waiting) = state else { return [CheckedContinuation<Value, Error>]() }
                state = .made(result)
                return waiting
            }
            for continuation in waiting { continuation.resume(with: result) }
            return try result.get()
        }
        return try await withCheckedThrowingContinuation { continuation in
            let made: Result<Value, Error>? = state.withLock { state in
                switch state {
                case .made(let result): return result
                case .making(var waiting):
                    waiting.append(continuation)
                    state = .making(waiting: waiting)
                    return nil
                case .notAsked: return .failure(TestSpeech.Failure(description: "ComputedOnce: never started"))
                }
            }
            if let made { continuation.resume(with: made) }
        }
    }
}
