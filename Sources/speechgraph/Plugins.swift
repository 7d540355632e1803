import ArgumentParser
import Foundation
import SpeechGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `--plugin-path`, shared by the commands that read graphs.
struct PluginOptions: ParsableArguments {
    @Option(
        name: .customLong("plugin-path"),
        help: ArgumentHelp(
            "A directory of plugins, searched before SPEECHGRAPH_PLUGIN_PATH, ~/.local/lib/speechgraph/plugins, "
                + "/usr/local/lib/speechgraph/plugins and /usr/lib/speechgraph/plugins (repeatable).",
            valueName: "dir"))
    var pluginPath: [String] = []

    /// The built-in node types and the plugins' (`base` for commands that add their own). Skipped plugins
    /// are named on standard error, once each.
    func registry(_ base: NodeRegistry = BuiltinNodes.registry()) -> NodeRegistry {
        var registry = base
        let environment = ProcessInfo.processInfo.environment
        // The default directories usually do not exist; one the user typed should.
        for dir in pluginPath.flatMap({ $0.split(separator: ":").map(String.init) })
        where !FileManager.default.isDirectory(dir) {
            let what =
                FileManager.default.fileExists(atPath: dir)
                ? "is a file, not a directory (give the directory that holds the plugin)" : "no such directory"
            printError("speechgraph: warning: --plugin-path \(dir): \(what)")
        }
        var catalog = PluginCatalog(
            directories: PluginCatalog.searchPath(extra: pluginPath, environment: environment),
            scanner: .process(executable: selfExecutable()),
            cachePath: PluginCatalog.cachePath(environment: environment))
        catalog.register(into: &registry)
        for warning in catalog.warnings { printError("speechgraph: \(warning)") }
        return registry
    }
}

/// This program's own file, to run it as a child.
func selfExecutable() -> String {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    return n > 0
        ? String(decoding: buffer[..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : CommandLine.arguments[0]
}

extension SpeechgraphCommand {
    struct PluginCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "plugin",
            abstract: "Validate plugin files (docs/plugins.md).",
            subcommands: [Check.self, Scan.self])

        struct Check: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Load a plugin in a child process and check it: every descriptor, then each node with "
                    + "block sizes 1 to 4096 frames, 8 to 48 kHz, silence, full-scale noise, NaN, infinities and "
                    + "denormals, parameters at and beyond their range ends, reset and re-prepare, two instances.",
                discussion: """
                    Prints what the plugin offers and one PASS or FAIL line per check; exit status 1 on any failure, \
                    including a crash or a hang of the plugin (the child's, never speechgraph's). A plugin built with \
                    -fsanitize=realtime runs under RealtimeSanitizer: a real-time safe node that allocates, locks or \
                    does I/O in process fails.
                    """)

            @Argument(help: "The plugin file (.so).") var file: String
            @Option(
                help: ArgumentHelp("Seconds before a plugin that does not finish is stopped.", valueName: "seconds"))
            var timeout: Double = 120
            @Flag(help: .hidden) var inChild = false

            func validate() throws {
                guard timeout.isFinite, timeout > 0, timeout <= 86400 else {
                    throw ValidationError("--timeout: a number of seconds above 0, at most 86400")
                }
            }

            func run() throws {
                if inChild { runChecks() }
                guard FileManager.default.fileExists(atPath: file) else {
                    printError("speechgraph: error: \(file): no such file")
                    throw Reported(code: Exit.failure)
                }
                if let unsafe = PluginCatalog.permissionProblem(path: file) {
                    print("FAIL permissions: \(unsafe)")
                    printError("speechgraph: error: \(file) was not loaded: \(unsafe)")
                    throw Reported(code: Exit.failure)
                }
                let outcome = PluginCheckRun.run(executable: selfExecutable(), plugin: file, timeout: timeout)
                for line in outcome.lines { print(line) }
                if let failure = outcome.failure { print("FAIL \(failure)") }
                let failed = outcome.failure != nil || outcome.lines.contains { $0.hasPrefix("FAIL") }
                let passed = outcome.lines.filter { $0.hasPrefix("PASS") }.count
                printError("\(file): \(failed ? "failed" : "passed") (\(passed) check\(passed == 1 ? "" : "s") passed)")
                if failed { throw Reported(code: Exit.failure) }
            }

            /// The child's side: every check, one line each, flushed as it goes.
            func runChecks() -> Never {
                let builtIn = BuiltinNodes.registry()
                var validator = PluginValidator(
                    taken: Set(builtIn.types.keys), knownKinds: Set(builtIn.eventKinds.map(\.rawValue)),
                    report: { line in
                        print(line)
                        fflush(nil)
                    },
                    starting: { name in
                        print("RUN \(name)")
                        fflush(nil)
                    })
                Glibc.exit(validator.run(path: file) ? 0 : 1)
            }
        }

        struct Scan: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Load one plugin file and print its descriptors as JSON (what the host runs in a child "
                    + "process before it loads a new or changed plugin).",
                shouldDisplay: false)

            @Argument(help: "The plugin file (.so).") var file: String

            func run() throws {
                let (report, output) = ChildScan.scanHere(path: file)
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys]
                output.write(try encoder.encode(report))
                output.write(Data("\n".utf8))
                if report.error != nil { throw Reported(code: Exit.failure) }
            }
        }
    }
}

/// Runs `speechgraph plugin check --in-child FILE` and gathers its lines; a crash or a hang becomes a
/// failure naming the check it happened in.
enum PluginCheckRun {
    struct Outcome {
        var lines: [String] = []
        var failure: String?
    }

    static func run(executable: String, plugin: String, timeout: Double) -> Outcome {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = ["plugin", "check", "--in-child", plugin]
        let pipe = Pipe()
        let errors = Pipe()
        process.standardOutput = pipe
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        var environment = ChildScan.childEnvironment()
        var outcome = Outcome()
        // Not a shared library at all (a WAV given by mistake): said as that, before any note on the checks.
        if let problem = PluginError.notALibrary(plugin) {
            outcome.failure = "loading: \(problem)"
            return outcome
        }
        let sanitized = RealtimeSanitizer.isInstrumented(plugin)
        if sanitized {
            if let runtime = RealtimeSanitizer.runtime() {
                environment["LD_PRELOAD"] = runtime
                outcome.lines.append("real-time rules: checked by RealtimeSanitizer (built with -fsanitize=realtime)")
            } else {
                outcome.failure =
                    "the plugin was built with -fsanitize=realtime, and the RealtimeSanitizer runtime "
                    + "(libspeechgraph-rtsan.so, made by `make` or scripts/build-rtsan.sh) is not next to speechgraph "
                    + "nor where SPEECHGRAPH_RTSAN_RUNTIME says"
                return outcome
            }
        } else {
            outcome.lines.append(
                "real-time rules: not checked (build the plugin with -fsanitize=realtime to check them)")
        }
        process.environment = environment
        do { try process.run() } catch {
            outcome.failure = "the check could not start: \(PathNames.reason(error))"
            return outcome
        }
        let stderrText = PipeReader(errors.fileHandleForReading, echo: FileHandle.standardError)
        let pid = process.processIdentifier
        // The check in progress: the reading loop sets it, the timers read it.
        let current = Mutex("loading the plugin")
        let killedFor = Mutex<String?>(nil)
        let loading = "loading the plugin"
        let loadTimer = DispatchSource.makeTimerSource()
        loadTimer.schedule(deadline: .now() + PluginCatalog.loadTimeout)
        loadTimer.setEventHandler {
            if current.withLock({ $0 == loading }) {
                killedFor.withLock {
                    $0 = "it hung while loading (no answer within \(Int(PluginCatalog.loadTimeout)) s)"
                }
                kill(pid, SIGKILL)
            }
        }
        loadTimer.resume()
        let timer = DispatchSource.makeTimerSource()
        timer.schedule(deadline: .now() + timeout)
        timer.setEventHandler {
            killedFor.withLock { $0 = "the plugin did not finish within \(Int(timeout)) s" }
            kill(pid, SIGKILL)
        }
        timer.resume()
        var pending = Data()
        let handle = pipe.fileHandleForReading
        while true {
            let chunk = handle.availableData
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[..<newline], as: UTF8.self)
                pending.removeSubrange(...newline)
                if line.hasPrefix("RUN ") {
                    current.withLock { $0 = String(line.dropFirst(4)) }
                } else {
                    outcome.lines.append(line.hasPrefix("info ") ? String(line.dropFirst(5)) : line)
                }
            }
        }
        process.waitUntilExit()
        timer.cancel()
        loadTimer.cancel()
        let errorText = String(decoding: stderrText.finish(), as: UTF8.self)
        let during = current.withLock { $0 }
        if let violation = errorText.split(separator: "\n").first(where: { $0.contains("in real-time context") }) {
            outcome.failure = "\(during): RealtimeSanitizer: \(violation)"
        } else if let reason = killedFor.withLock({ $0 }) {
            outcome.failure = "\(during): \(reason)"
        } else if process.terminationReason == .uncaughtSignal {
            let signal = process.terminationStatus
            let name = strsignal(signal).map { String(cString: $0) } ?? "signal \(signal)"
            outcome.failure = "\(during): it crashed\(during == loading ? " while loading" : "") (\(name))"
        } else if process.terminationStatus != 0 && !outcome.lines.contains(where: { $0.hasPrefix("FAIL") }) {
            outcome.failure = "\(during): the check ended with status \(process.terminationStatus)"
        }
        return outcome
    }
}

/// RealtimeSanitizer for plugins built with -fsanitize=realtime: the toolchain has its runtime only as a
/// static library, so `make` links it into a shared one (scripts/build-rtsan.sh) that the check's child
/// preloads.
enum RealtimeSanitizer {
    /// Whether `plugin` was built with -fsanitize=realtime (it calls into the sanitizer's runtime).
    static func isInstrumented(_ plugin: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: plugin) else { return false }
        return data.range(of: Data("__rtsan_realtime_enter".utf8)) != nil
    }

    /// The shared runtime: SPEECHGRAPH_RTSAN_RUNTIME, or next to speechgraph, or in its lib directory.
    static func runtime() -> String? {
        let candidates = [
            ProcessInfo.processInfo.environment["SPEECHGRAPH_RTSAN_RUNTIME"],
            PathNames.folder(of: selfExecutable()) + "/rtsan/libspeechgraph-rtsan.so",
            PathNames.folder(of: selfExecutable()) + "/../lib/speechgraph/libspeechgraph-rtsan.so",
        ].compactMap { $0 }
        return candidates.first { FileManager.default.fileExists(atPath: $0) }
    }
}
