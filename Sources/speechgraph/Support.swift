import Dispatch
import Foundation
import SpeechGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Turns Ctrl-C and SIGTERM into a graceful stop: the first asks the running graph to stop (results made
/// so far are finished and written); a second one exits at once.
final class SignalHandling {
    /// What a signal acts on: handed to the signal handlers, which run on a dispatch queue.
    private final class Target: Sendable {
        let stop = StopSignal()
        let running = Mutex<RunningGraph?>(nil)
        /// The program waits for a stream's first bytes (its WAV header), before any graph: nothing to finish.
        let waitingForAudio = Atomic<Bool>(false)
        /// Reload failures already said (`node` and reason): their modelChanged event, which comes later, is not
        /// said again.
        let toldFailures = Mutex<Set<String>>([])
        /// What listens for the answers of the latest reload: a newer reload supersedes an older one (the
        /// recognizer takes the latest), and only its answers are said.
        let listener = Mutex<Task<Void, Never>?>(nil)
    }

    let status: StatusLine
    private let target = Target()
    private var sources: [DispatchSourceSignal] = []

    var stop: StopSignal { target.stop }

    /// - Parameter reloadOnHangup: SIGHUP loads the running graph's models again (`speechgraph run`, as
    ///   daemons re-read their files) instead of stopping.
    init(status: StatusLine, reloadOnHangup: Bool = false) {
        self.status = status
        // A closed pipe on standard output is a write error (EPIPE), reported by whatever wrote there, while
        // the other sinks finish: not a silent death.
        signal(SIGPIPE, SIG_IGN)
        if reloadOnHangup {
            sources += Self.handle([SIGHUP]) { [target] _ in
                status.clear()
                // Not under the lock: Ctrl-C and SIGTERM must still reach the graph while models load.
                guard let graph = target.running.withLock({ $0 }) else {
                    printError(
                        "speechgraph: SIGHUP: the graph is not running yet (it is starting, with its model files as "
                            + "they are now)")
                    return
                }
                printError("speechgraph: SIGHUP: loading the graph's models again (the audio goes on)")
                let recognizers = graph.plan.nodes.filter { $0.typeName == RecognizerNode.descriptor.typeName }.count
                let events = graph.events()
                let outcomes = graph.reloadModels()
                // Each recognizer's answer on the terminal too, not only in a sink's JSON Lines: a spec with a
                // typo must not fail in silence. A failure is known as soon as the loading ends: said then (its
                // modelChanged event waits for the next utterance, which a quiet input may never begin). A reload
                // that works answers when the next utterance begins.
                for outcome in outcomes {
                    status.clear()
                    // A spec built again says what it guessed, as when the graph was made.
                    for note in outcome.notes { printError(note) }
                    if let failure = outcome.failure {
                        target.toldFailures.withLock { _ = $0.insert("\(outcome.node)\n\(failure)") }
                        printError(
                            Self.reloadFailure(node: outcome.node, failure, droppedEarlier: outcome.droppedEarlier))
                    } else {
                        printError(
                            "speechgraph: node '\(outcome.node)': the models are loaded again; they take over when the "
                                + "next utterance begins")
                    }
                }
                let task = Task.detached {
                    var answers = 0
                    for await event in events {
                        guard case .custom(let e) = event, e.kind == RecognizerNode.modelChanged else { continue }
                        answers += 1
                        if e.fields["ok"] == .boolean(false) {
                            let reason: String
                            if case .string(let r)? = e.fields["reason"] {
                                reason = r
                            } else {
                                reason = "no reason given"
                            }
                            let told = target.toldFailures.withLock { $0.remove("\(e.node)\n\(reason)") != nil }
                            if told && answers >= recognizers { break }
                            if told { continue }
                            status.clear()
                            printError(Self.reloadFailure(node: e.node, reason, droppedEarlier: false))
                        } else {
                            status.clear()
                            printError("speechgraph: node '\(e.node)': the new models took over")
                        }
                        if answers >= recognizers { break }
                    }
                }
                target.listener.withLock { old in
                    old?.cancel()
                    old = task
                }
            }
        }
        // A closed terminal (SIGHUP) finishes the results in flight as SIGTERM does.
        sources += Self.handle(reloadOnHangup ? [SIGINT, SIGTERM] : [SIGINT, SIGTERM, SIGHUP]) { [target] sig in
            status.clear()
            if target.waitingForAudio.load(ordering: .acquiring) {
                // Blocked reading a stream that has sent nothing yet: no result can be lost.
                printError("speechgraph: stopped before any audio came")
                _exit(0)
            }
            if target.stop.isRequested {
                // Name what held the graph, when it is inside a node (a plugin's process that never returns).
                let busy = target.running.withLock { $0?.busyNode }
                Self.stopNow(sig, busy.map { " (node '\($0)' had not returned)" } ?? "")
            }
            printError("speechgraph: stopping (finishing the results in flight; again to stop at once)")
            target.stop.request()
            target.running.withLock { $0?.stop() }
        }
        sources += Self.handle([SIGQUIT]) { _ in
            status.clear()
            Self.quit()
        }
    }

    /// A dispatch source for each signal, which runs `handler` with its number on a global queue (the signal
    /// itself ignored, so that its default action does not end the program first). Keep the sources: the
    /// handling ends with them.
    static func handle(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) -> [DispatchSourceSignal] {
        signals.map { sig in
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler { handler(sig) }
            source.resume()
            return source
        }
    }

    /// A second Ctrl-C, SIGTERM or SIGHUP: the program ends at once, with 128 + the signal's number.
    static func stopNow(_ sig: Int32, _ detail: String = "") -> Never {
        printError("speechgraph: stopping now" + detail)
        _exit(128 + sig)
    }

    /// Ctrl-\ (SIGQUIT) quits at once, as it does elsewhere: no backtrace, no finishing.
    static func quit() -> Never {
        printError("speechgraph: quit (SIGQUIT): results in flight are lost")
        _exit(128 + SIGQUIT)
    }

    /// A reload that failed, as standard error says it. `droppedEarlier`: models an earlier SIGHUP loaded, which were
    /// to take over at the next utterance, do not either.
    static func reloadFailure(node: String, _ failure: String, droppedEarlier: Bool) -> String {
        "speechgraph: warning: node '\(node)': the models could not be loaded again"
            + (droppedEarlier
                ? "; those in use go on (those an earlier SIGHUP loaded, not yet in use, are dropped)"
                : ", the old ones go on") + ": \(failure)"
    }

    /// Runs `body`, which waits for a stream's first bytes before any graph runs: Ctrl-C or SIGTERM meanwhile ends
    /// the program at once (exit 0: there is nothing to finish), instead of when the stream sends or closes.
    func waitingForAudio<T>(_ body: () throws -> T) rethrows -> T {
        target.waitingForAudio.store(true, ordering: .releasing)
        defer { target.waitingForAudio.store(false, ordering: .releasing) }
        return try body()
    }

    /// Runs `graph` to its end; a signal meanwhile stops it.
    func run(_ graph: RunningGraph) throws {
        target.running.withLock { $0 = graph }
        defer { target.running.withLock { $0 = nil } }
        if stop.isRequested { graph.stop() }
        try graph.run()
    }
}

/// Progress on standard error, only when it is a terminal; redrawn at most ten times a second.
final class Progress: Sendable {
    private let last = Mutex(0.0)
    let status: StatusLine

    init(status: StatusLine) { self.status = status }

    func update(_ text: String) {
        let now = Date().timeIntervalSince1970
        guard
            last.withLock({ last in
                guard now - last >= 0.1 else { return false }
                last = now
                return true
            })
        else { return }
        status.show(text)
    }

    func clear() { status.clear() }
}

/// Reads, validates and plans a graph file, reporting problems the way the CLI promises:
/// graph errors as `file:line:col: error: ...` (exit 2), runtime failures as one line (exit 1).
///
/// `results`: the `results` preset for every recognizer node of the graph (`run --results`), before `overrides`.
/// `resources`: the resources of the graph about to run (a JACK graph's client opens then, as the graph's
/// own, and tells the server's rate); `nil` when only checking, which opens nothing.
func loadPlan(
    path: String, overrides: [String], results: String? = nil, registry: NodeRegistry,
    negotiate: Bool, resources: GraphResources? = nil
) throws -> GraphPlan {
    var parsedOverrides = try parseOverrides(overrides)
    let planner = GraphPlanner(registry: registry)
    do {
        let spec = try GraphParser.parse(contentsOf: path)
        if let results {
            let presets = RecognizerNode.Results.allCases.map(\.rawValue)
            guard presets.contains(results) else {
                printError("speechgraph: error: --results expects \(presets.joined(separator: ", ")), got '\(results)'")
                throw Reported(code: Exit.usage)
            }
            let recognizers = spec.nodes.filter { $0.type.value == RecognizerNode.descriptor.typeName }
            if recognizers.isEmpty {
                printError("speechgraph: error: --results: \(path) has no recognizer node")
                throw Reported(code: Exit.usage)
            }
            parsedOverrides.insert(
                contentsOf: recognizers.map {
                    GraphPlanner.Override(
                        node: $0.name.value, parameter: "results", value: .word(results), origin: "--results")
                }, at: 0)
        }
        let validated = try planner.validate(spec, overrides: parsedOverrides)
        printDiagnostics(validated.warnings)
        guard negotiate else { return validated }
        let planned = try planner.negotiate(validated, resources: resources, allResourceProblems: true)
        printDiagnostics(Array(planned.warnings.dropFirst(validated.warnings.count)))
        return planned
    } catch let error as GraphError {
        printGraphErrors(error, in: path)
        throw Reported(code: Exit.usage)
    } catch let error as SpeechGraphError {
        reportFailure(error, status: nil)
        throw Reported(code: Exit.failure)
    } catch let errors as SpeechGraphErrors {
        // What the graph names that is missing or cannot be written, every one of them, in the file's order.
        let sorted = errors.errors.sorted {
            ($0.location?.line ?? 0, $0.location?.column ?? 0) < ($1.location?.line ?? 0, $1.location?.column ?? 0)
        }
        for error in sorted { reportFailure(error, status: nil) }
        throw Reported(code: Exit.failure)
    }
}

/// Parses `--set` values, `node.parameter=value`; with `node`, `parameter=value` for that node. A malformed
/// one is a usage error.
func parseOverrides(_ texts: [String], node: String? = nil) throws -> [GraphPlanner.Override] {
    try texts.map { text in
        guard var o = GraphPlanner.Override.parse(node.map { "\($0).\(text)" } ?? text) else {
            printError(
                "speechgraph: error: --set expects \(node == nil ? "node.parameter" : "param")=value, got '\(text)'")
            throw Reported(code: Exit.usage)
        }
        // Named as typed: `--set threshold` when the command gives the node.
        if node != nil { o.origin = "--set \(o.parameter)" }
        return o
    }
}

/// A runtime failure, as one line: `file:line:col: error: ...` when the graph file says where.
func reportFailure(_ error: SpeechGraphError, status: StatusLine?) {
    status?.clear()
    printError(userLine(Diagnostic(.error, at: error.location, error.message)))
}

/// A diagnostic as standard error shows it: `file:line:col: error: ...` at a place in a file the user wrote,
/// `speechgraph: error: ...` otherwise (no place, or a command's own graph: `<transcribe>`).
func userLine(_ d: Diagnostic) -> String {
    if let location = d.location, !location.file.hasPrefix("<") { return d.description }
    var placeless = d
    placeless.location = nil
    return "speechgraph: \(placeless)"
}

/// A graph made in code by the convenience commands (`transcribe`, `vad`), as if written in a file
/// named `<command>`: every declaration located at 1:1 of that pseudo-file. Its nodes are implicit (messages do
/// not name them: the user never wrote them), and a parameter that comes from an option names the option.
struct SyntheticGraph {
    private(set) var spec: GraphSpec
    private let here: SourceLocation

    init(command: String) {
        let file = "<\(command)>"
        spec = GraphSpec(file: file)
        here = SourceLocation(file: file, line: 1, column: 1)
    }

    private func located(_ s: String) -> Located<String> { Located(s, at: here) }

    /// `options`: for a parameter set from a command-line option, the option (`"dict": "--dict"`).
    mutating func node(
        _ name: String, _ type: String, _ parameters: [(String, ValueLiteral)] = [], options: [String: String] = [:]
    ) {
        spec.nodes.append(
            NodeDeclaration(
                name: located(name), type: located(type),
                parameters: parameters.map {
                    ParameterAssignment(name: located($0.0), value: Located($0.1, at: here), origin: options[$0.0])
                },
                location: here, isImplicit: true))
    }

    /// `from -> to`, with optional port names on either side.
    mutating func edge(_ from: String, _ fromPort: String? = nil, to: String, _ toPort: String? = nil) {
        spec.edges.append(
            EdgeDeclaration(
                from: Endpoint(node: located(from), port: fromPort.map(located)),
                to: Endpoint(node: located(to), port: toPort.map(located)), location: here))
    }
}

/// Reports what stopped one file of a many-file command; `false` for errors that are not about the file.
func reportFileFailure(_ error: any Error, status: StatusLine) -> Bool {
    switch error {
    case let error as SpeechGraphError:
        reportFailure(error, status: status)
        return true
    case let error as GraphError:
        status.clear()
        printDiagnostics(error.diagnostics)
        return true
    default:
        return false
    }
}

/// At most this many diagnostics are printed (a line of 600,000 stray braces would print 50 MB).
let diagnosticLimit = 100

/// Prints diagnostics, one a line, the first `diagnosticLimit` of them, then how many more there were.
/// A graph file's diagnostics, then how many errors it has: `1 error in FILE`; with errors in more than one
/// file (a graph and the grammar or spec it names), `3 errors: 2 in FILE, 1 in OTHER`. An error without a
/// location counts as `path`'s.
func printGraphErrors(_ error: GraphError, in path: String) {
    printDiagnostics(error.diagnostics)
    var files: [(file: String, errors: Int)] = []
    // Counted by the file they are in: an option's error (`--set asr.mode: ...`) is in none, and is one line.
    for d in error.diagnostics where d.severity == .error && !(d.location == nil && d.message.hasPrefix("--")) {
        let file = d.location?.file ?? path
        if let i = files.firstIndex(where: { $0.file == file }) {
            files[i].errors += 1
        } else {
            files.append((file, 1))
        }
    }
    let errors = files.reduce(0) { $0 + $1.errors }
    let plural = errors == 1 ? "" : "s"
    if files.isEmpty {
        return
    } else if files.count > 1 {
        printError("\(errors) error\(plural): " + files.map { "\($0.errors) in \($0.file)" }.joined(separator: ", "))
    } else {
        printError("\(errors) error\(plural) in \(files.first?.file ?? path)")
    }
}

func printDiagnostics(_ diagnostics: [Diagnostic]) {
    for d in diagnostics.prefix(diagnosticLimit) { printError(userLine(d)) }
    if diagnostics.count > diagnosticLimit {
        printError("... and \(diagnostics.count - diagnosticLimit) more (the first \(diagnosticLimit) are shown)")
    }
}

/// A file name as one field of a line (tsv): a tab, newline or carriage return in it is written `\t`, `\n`,
/// `\r`, and a backslash `\\`, so that every result stays one line of its columns.
func escapedField(_ text: String) -> String {
    guard text.contains(where: { "\\\t\n\r".contains($0) }) else { return text }
    var out = ""
    for c in text {
        switch c {
        case "\\": out += "\\\\"
        case "\t": out += "\\t"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        default: out.append(c)
        }
    }
    return out
}

/// The loop of the many-file commands (`transcribe`, `vad`): each file's graph is planned and run in
/// turn, with progress on a terminal; `handle` reads the finished runner. A file that fails, or warns, is
/// reported and counted, the others still run; a stop request ends the loop after the file in flight.
/// Throws `Reported(code: 1)` at the end when any file failed.
///
/// Every file's graph gets the same decoder pool, so the model is loaded once (a reused decoder is reset:
/// the results are those of a fresh process). `started` is called once a file's graph runs (to feed a
/// pushed input), `handle` once it has ended. Once a write to standard output failed (`output`: a closed
/// pipe, a full disk), the loop reports it once and stops: nothing more can be delivered there.
func runEachFile(
    _ files: [String], registry: NodeRegistry, signals: SignalHandling, output: StandardOutput,
    realtime: Bool = false,
    plan: (String) throws -> GraphPlan, started: (String, RunningGraph) -> Void = { _, _ in },
    handle: (String, RunningGraph) throws -> Void
) throws {
    let progress = Progress(status: signals.status)
    let pool = SphinxDecoderPool()
    var failures = 0
    var saidNotes = Set<String>()
    for (index, file) in files.enumerated() {
        if signals.stop.isRequested { break }
        do {
            let label = file == "-" ? "standard input" : file
            let options = RunningGraph.Options(realtime: realtime) { fraction in
                progress.update(String(format: "[%d/%d] %@ %3.0f%%", index + 1, files.count, label, fraction * 100))
            }
            let graph = try RunningGraph(
                plan: plan(file), registry: registry,
                resources: GraphResources(providing: [pool, signals.status, output]), options: options)
            // Each said once, not once a file (the same model's warning for every file of a run).
            for note in graph.notes where saidNotes.insert(note).inserted { printError(note) }
            graph.start()
            started(file, graph)
            try signals.run(graph)
            progress.clear()
            let warnings = graph.warnings
            // Standard output that cannot be written is an error, whichever sink found it (docs/cli.md).
            let isOutputFailure = { (w: String) in output.failure.map { w.hasSuffix($0) } ?? false }
            for w in warnings {
                // Each warning names its file (samples that were not numbers: which of the files had them).
                let named = isOutputFailure(w) || w.hasPrefix(label + ": ") ? w : "\(label): \(w)"
                printError("speechgraph: \(isOutputFailure(w) ? "error" : "warning"): \(named)")
                failures += 1
            }
            try handle(file, graph)
            if let failure = output.failure {
                if !warnings.contains(where: isOutputFailure) {
                    printError("speechgraph: error: \(failure)")
                    failures += 1
                }
                break
            }
        } catch let error as GraphError
            where !error.diagnostics.isEmpty
            && error.diagnostics.allSatisfy({
                $0.location.map { FileManager.default.fileExists(atPath: $0.file) } ?? false
            })
        {
            // Errors in a file an option names (a grammar, a language-model spec), not in the audio: every file
            // would get them. A usage error, as in `run` (docs/cli.md, exit status 2).
            signals.status.clear()
            printGraphErrors(error, in: error.diagnostics[0].location!.file)
            throw Reported(code: Exit.usage)
        } catch let error as GraphError
            where !error.diagnostics.isEmpty
            && error.diagnostics.allSatisfy({ $0.location.map { $0.file.hasPrefix("<") } ?? true })
        {
            // The command's own graph refused a value an option gave ('--phrases: the phrase '!!!' has no words'):
            // a usage error, said once, whatever the file.
            signals.status.clear()
            printDiagnostics(error.diagnostics)
            throw Reported(code: Exit.usage)
        } catch let error as SpeechGraphError where error.parameter.map({ $0 != "path" }) ?? false {
            // A value an option gave (a model, a dictionary, a grammar whose words the dictionary lacks), not the
            // audio file: every file would fail the same way. Said once; the files after it are not tried.
            reportFailure(error, status: signals.status)
            throw Reported(code: Exit.failure)
        } catch {
            guard reportFileFailure(error, status: signals.status) else { throw error }
            failures += 1
        }
    }
    if failures > 0 { throw Reported(code: Exit.failure) }
}
