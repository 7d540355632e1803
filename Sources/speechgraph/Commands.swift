import ArgumentParser
import Foundation
import SpeechGraph

extension SpeechgraphCommand {
    struct Run: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a graph file until its inputs end or Ctrl-C.",
            discussion: """
                Offline inputs run as fast as the CPU allows unless --realtime is given. A push.input node reads \
                standard input (a WAV or MP3 stream: 'arecord -f S16_LE -r 16000 -t wav | speechgraph run G'). \
                Ctrl-C or \
                SIGTERM stops the graph: the utterance in flight is finished and every result is written before exit. \
                SIGHUP loads the graph's models again (a recognizer's lm, grammar and dict are read again; a \
                changed spec is built again) while the audio goes on: each recognizer switches to them between \
                utterances and emits a modelChanged event (docs/lm.md).
                """)

        @Argument(help: "The graph file.") var graph: String
        @Option(
            name: .customLong("set"),
            help: ArgumentHelp(
                "Override a parameter, as node.param=value (repeatable).",
                valueName: "node.param=value"))
        var overrides: [String] = []
        @Option(
            help: ArgumentHelp(
                "Result preset of every recognizer: progressive (volatile then final results), "
                    + "final-only, or fast (final results as early as possible). Same as --set "
                    + "<recognizer>.results=<preset>.", valueName: "preset"))
        var results: String?
        @Flag(help: "Pace file inputs like live audio instead of running as fast as possible.") var realtime = false
        @Option(help: "JACK client name (JACK makes it unique when it is taken).") var name = "speechgraph"
        @Option(
            help: ArgumentHelp(
                "Stop after this many seconds (results in flight are finished), as a Ctrl-C would.",
                valueName: "seconds"))
        var duration: Double?
        @Flag(help: "Stop (exit status 1) when the JACK server goes away, instead of waiting for it to return.")
        var exitOnServerLoss = false
        @Flag(help: "At the end, print JACK figures to standard error: overruns, xruns, underruns, callback duration.")
        var stats = false
        @OptionGroup var plugins: PluginOptions

        func validate() throws {
            if let duration, !(duration.isFinite && duration > 0 && duration <= 1e9) {
                throw ValidationError("--duration: a number of seconds greater than 0 (at most 1e9)")
            }
            if let problem = JackSession.clientNameProblem(name) { throw ValidationError("--name: \(problem)") }
        }

        func run() throws {
            let status = StatusLine()
            // First: a SIGHUP (a reload, `systemctl reload`) while the program starts (plugins scanned, the stream's
            // header read, a spec built) must not end it, as the default action would.
            let signals = SignalHandling(status: status, reloadOnHangup: true)
            let registry = plugins.registry()
            // The graph's resources exist before it is planned: a JACK graph's client (its session) opens while
            // planning, once, and tells the server's rate.
            let jack = JackClientOptions(name: name, measureCallback: stats, exitOnServerLoss: exitOnServerLoss)
            let resources = GraphResources(providing: [status, jack])
            // A push.input is fed from standard input (a WAV or MP3 stream), at the stream's rate and channels (a graph
            // that does not parse is reported by loadPlan).
            var stdin: (reader: AudioStreamReader, node: String)?
            var streamOverrides: [String] = []
            let declared = (try? GraphParser.parse(contentsOf: graph))?.nodes ?? []
            let pushed = declared.filter { $0.type.value == "push.input" }.map(\.name.value)
            // Before standard input is read (which would be the first thing to fail: 'standard input is empty').
            if let wyoming = declared.first(where: { $0.type.value == "wyoming" }) {
                printError(
                    "speechgraph: error: node '\(wyoming.name.value)': the wyoming sink answers a Wyoming client: run "
                        + "this graph with 'speechgraph serve --graph \(graph)' (docs/wyoming.md)")
                throw Reported(code: Exit.usage)
            }
            if let node = pushed.first {
                guard pushed.count == 1 else {
                    printError(
                        "speechgraph: error: 'run' feeds standard input to one push.input node; this graph has "
                            + "\(pushed.count) (\(pushed.joined(separator: ", ")))")
                    throw Reported(code: Exit.usage)
                }
                guard isatty(0) == 0 else {
                    printError(
                        "speechgraph: error: node '\(node)' (push.input): 'run' writes standard input into it, a WAV "
                            + "stream ('arecord -f S16_LE -r 16000 -t wav | speechgraph run \(graph)'), and standard "
                            + "input is a terminal")
                    throw Reported(code: Exit.usage)
                }
                let reader: AudioStreamReader
                do {
                    reader = try signals.waitingForAudio {
                        try AudioStreamReader(
                            rate: nil, channels: 1,
                            rawHint: "raw samples become WAV through sox: 'sox -t raw -r 16000 -e signed -b 16 -c 1 - "
                                + "-t wav - | speechgraph run \(graph)'")
                    }
                } catch let error as AudioStreamReader.Failure {
                    printError("speechgraph: error: \(error.description)")
                    throw Reported(code: Exit.failure)
                }
                stdin = (reader, node)
                streamOverrides = ["\(node).rate=\(reader.sampleRate) Hz", "\(node).channels=\(reader.channelCount)"]
            }
            let plan = try loadPlan(
                path: graph, overrides: overrides + streamOverrides, results: results, registry: registry,
                negotiate: true, resources: resources)
            let progress = Progress(status: status)
            do {
                defer {
                    if stats {
                        printError(
                            resources.optional(JackSession.self)?.statisticsLine
                                ?? "speechgraph: --stats: no JACK figures: this graph has no jack.input or jack.output")
                    }
                }
                let label = graph
                // A gap, availability or warning that the graph routes to no sink (a jack.input whose events go
                // nowhere, a sink whose file can no longer be written): on standard error, when it happens. A
                // warning said then is not said again at the end (`warningsToldWhileRunning`).
                let options = RunningGraph.Options(
                    realtime: realtime,
                    progress: { fraction in progress.update(String(format: "%@: %3.0f%%", label, fraction * 100)) },
                    unrouted: { node, event in
                        guard let notice = ConsoleSink.notice(event) else { return }
                        status.clear()
                        // A warning starts as every warning does ('speechgraph: warning:', as at the end).
                        printError(
                            notice.hasPrefix("warning: ")
                                ? "speechgraph: warning: node '\(node)': \(notice.dropFirst("warning: ".count))"
                                : "speechgraph: node '\(node)': \(notice)")
                    })
                let running = try RunningGraph(plan: plan, registry: registry, resources: resources, options: options)
                for note in running.notes { printError(note) }
                if let stdin, let pusher = running.input(named: stdin.node) { stdin.reader.feed(pusher) }
                if let duration {
                    DispatchQueue.global().asyncAfter(deadline: .now() + duration) { running.stop() }
                }
                try signals.run(running)
                progress.clear()
                let warnings = running.warnings
                let said = running.warningsToldWhileRunning
                for w in warnings where !said.contains(w) { printError("speechgraph: warning: \(w)") }
                if !warnings.isEmpty { throw Reported(code: Exit.failure) }
            } catch let error as SpeechGraphError {
                reportFailure(error, status: status)
                throw Reported(code: Exit.failure)
            }
        }
    }

    struct Check: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Check a graph file and print every problem as file:line:col: error: message.",
            discussion:
                "Exit status 0 when the graph is valid, 2 when it has errors (1 when --plan cannot read an input).")

        @Argument(help: "The graph file.") var graph: String
        @Flag(help: "Also plan the graph (reads input headers); print nodes, where each runs, formats, converters.")
        var plan = false
        @Option(
            name: .customLong("set"),
            help: ArgumentHelp(
                "Override a parameter, as node.param=value (repeatable).",
                valueName: "node.param=value"))
        var overrides: [String] = []
        @OptionGroup var plugins: PluginOptions

        func run() throws {
            let registry = plugins.registry()
            let result = try loadPlan(path: graph, overrides: overrides, registry: registry, negotiate: plan)
            if plan {
                print(result.render(registry: registry), terminator: "")
            } else {
                printError("\(graph): ok (\(result.nodes.count) nodes, \(result.edges.count) connections)")
            }
        }
    }

    struct Nodes: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List node types, or show one type's ports and parameters.")

        @Argument(help: "A node type, such as recognizer.") var type: String?
        @Flag(
            help: ArgumentHelp(
                "Print the reference as Markdown: of the built-in types (docs/nodes.md; no plugins), or of the "
                    + "type given (a plugin's too)."))
        var markdown = false
        @OptionGroup var plugins: PluginOptions

        func run() throws {
            let registry = markdown && type == nil ? BuiltinNodes.registry() : plugins.registry()
            if let type {
                guard let t = registry[type] else {
                    let hint =
                        closestMatch(to: type, in: registry.types.keys).map { " (did you mean '\($0)'?)" }
                        ?? "; a plugin's types are there once its folder is given with --plugin-path or "
                        + "SPEECHGRAPH_PLUGIN_PATH"
                    printError("speechgraph: error: unknown node type '\(type)'\(hint); 'speechgraph nodes' lists them")
                    throw Reported(code: Exit.usage)
                }
                print(
                    markdown ? NodeReference.markdown(t.descriptor) : NodeReference.detail(t.descriptor), terminator: ""
                )
            } else if markdown {
                print(NodeReference.markdown(registry), terminator: "")
            } else {
                print(NodeReference.list(registry), terminator: "")
            }
        }
    }
}
