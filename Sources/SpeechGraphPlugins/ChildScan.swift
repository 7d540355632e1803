import Foundation
import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Validates a plugin file in a child process (`speechgraph plugin scan FILE`), so that a plugin that
/// crashes or hangs while it loads costs the child, not the host.
public enum ChildScan {
    public enum Outcome: Sendable {
        case manifest(PluginManifest)
        case refused(String)
        /// No answer in time (a plugin that hangs, or a machine too busy): not cached.
        case hung(String)
    }

    /// What the child prints on its standard output: one JSON object.
    public struct Report: Codable {
        public var manifest: PluginManifest?
        public var error: String?
        public init(manifest: PluginManifest? = nil, error: String? = nil) {
            self.manifest = manifest
            self.error = error
        }
    }

    /// The child's side: loads `path` in this process and returns the report to print. The plugin's own
    /// output on standard output is moved to standard error first, so it cannot corrupt the report.
    public static func scanHere(path: String) -> (report: Report, output: FileHandle) {
        let saved = dup(STDOUT_FILENO)
        dup2(STDERR_FILENO, STDOUT_FILENO)
        let output = FileHandle(fileDescriptor: saved, closeOnDealloc: true)
        do {
            let library = try PluginLibrary(path: path)
            let manifest = try library.manifest()
            // Each node made once with its defaults and run on a little silence: a plugin that crashes in
            // its nodes' constructors crashes here, in the child.
            for node in manifest.nodes {
                if let cls = library.nodeClass(node.typeName) { PluginValidator.smoke(node, cls) }
            }
            return (Report(manifest: manifest), output)
        } catch {
            return (Report(error: "\(error)"), output)
        }
    }

    /// The host's side: runs the child and waits at most `timeout` seconds.
    static func run(executable: String, plugin: String, timeout: Double) -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["plugin", "scan", plugin]
        let stdout = Pipe()
        let stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        process.environment = childEnvironment()
        let done = DispatchSemaphore(value: 0)
        process.terminationHandler = { _ in done.signal() }
        do { try process.run() } catch {
            return .refused("its validation could not start (\(executable): \(PathNames.reason(error)))")
        }
        // Read both pipes while the child runs (a chatty plugin must not block on a full pipe), at most 1 MiB each.
        let reports = PipeReader(stdout.fileHandleForReading)
        let errors = PipeReader(stderr.fileHandleForReading)
        if done.wait(timeout: .now() + timeout) == .timedOut {
            kill(process.processIdentifier, SIGKILL)
            done.wait()
            return .hung(String(format: "it hung while loading (no answer within %.0f s)", timeout))
        }
        let out = reports.finish()
        let err = errors.finish()
        if process.terminationReason == .uncaughtSignal {
            let signal = process.terminationStatus
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            let detail = lastLine(err).map { ": \($0)" } ?? ""
            return .refused("it crashed while loading (\(name))\(detail)")
        }
        guard let report = try? JSONDecoder().decode(Report.self, from: out) else {
            let detail = lastLine(err).map { ": \($0)" } ?? ""
            return .refused("its validation ended with status \(process.terminationStatus) and no report\(detail)")
        }
        if let manifest = report.manifest { return .manifest(manifest) }
        return .refused(report.error ?? "its validation gave no reason")
    }

    /// The environment of a child that loads a plugin: Swift's backtracer off, so that a plugin that crashes the
    /// child ends it with its signal (which the host reports in one line) instead of a page of backtrace of
    /// speechgraph, as if speechgraph had crashed; and a crash the backtracer's handler returned from is no pass.
    public static func childEnvironment() -> [String: String] {
        var environment = ProcessInfo.processInfo.environment
        environment["SWIFT_BACKTRACE"] = "enable=no"
        return environment
    }

    static func lastLine(_ data: Data) -> String? {
        let text = String(decoding: data, as: UTF8.self)
        return text.split(separator: "\n").last.map { String($0.prefix(300)) }
    }
}

/// Drains a pipe on a thread of its own, keeping at most `limit` bytes, and passing what comes on to `echo`
/// as it comes when given one (a child's standard error shown live).
public final class PipeReader: Sendable {
    private let data = Mutex(Data())
    private let finished = DispatchSemaphore(value: 0)

    public init(_ handle: FileHandle, limit: Int = 1 << 20, echo: FileHandle? = nil) {
        Thread.detachNewThread { [self] in
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty { break }
                echo?.write(chunk)
                self.data.withLock { if $0.count < limit { $0.append(chunk.prefix(limit - $0.count)) } }
            }
            self.finished.signal()
        }
    }

    /// What was read, once the pipe closed (or after a second: a process the plugin started may hold it).
    public func finish() -> Data {
        _ = finished.wait(timeout: .now() + 1)
        return data.withLock { $0 }
    }
}
