import ArgumentParser
import SpeechGraph
import SpeechGraphWhisper

#if canImport(Glibc)
    import Glibc
#endif

/// Exit codes, documented in `speechgraph --help` and docs/cli.md.
enum Exit {
    static let ok: Int32 = 0
    /// The graph ran (or tried to) and something failed: unreadable audio, a missing model, a write error.
    static let failure: Int32 = 1
    /// The command line or the graph file is wrong; nothing ran.
    static let usage: Int32 = 2
}

/// Failures already reported to the user; only the exit code is left to set.
struct Reported: Error {
    var code: Int32
}

/// speechgraph's version (`--version`, the Wyoming server's info).
let speechgraphVersion = "0.8.0"

@main
struct SpeechgraphCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "speechgraph",
        abstract: "On-device speech recognition for Linux, as an audio processing graph.",
        discussion: """
            A graph file wires input nodes (JACK ports, audio files) through converters, a voice activity \
            detector and a PocketSphinx recognizer to sinks (console, jsonl). See docs/graph-language.md, \
            docs/jack.md and \
            'speechgraph nodes' for every node type.

            Plugins add node types without rebuilding speechgraph: shared libraries found on --plugin-path, \
            SPEECHGRAPH_PLUGIN_PATH, ~/.local/lib/speechgraph/plugins, /usr/local/lib/speechgraph/plugins and \
            /usr/lib/speechgraph/plugins, validated first in a child process ('speechgraph plugin check', \
            docs/plugins.md).

            Results go to standard output (or a sink's file); errors, warnings and progress to standard error.

            SIGHUP makes 'run' load its graph's models again; it stops the other commands as SIGTERM does.

            Exit status: 0 ok (also after Ctrl-C, SIGTERM or SIGHUP, once every result made so far is written); \
            1 runtime failure (unreadable or damaged audio, missing model, write error, a warning such as \
            samples that were not numbers); 2 usage or graph-file error (nothing ran); 128+N when a second \
            Ctrl-C, SIGTERM or SIGHUP (signal N) stopped it at once; 131 after SIGQUIT (quit at once).
            """,
        version: speechgraphVersion,
        subcommands: [
            Run.self, Transcribe.self, VAD.self, Check.self, Nodes.self, LMCommand.self, PluginCommand.self, Serve.self,
        ])

    static func main() {
        if let bad = unknownShortOption(Array(CommandLine.arguments.dropFirst())) {
            printError(
                "speechgraph: error: unknown option '\(bad)' (a file whose name starts with '-': write ./\(bad), "
                    + "or put it after --)")
            Glibc.exit(Exit.usage)
        }
        if let problem = unknownHelpTopic(Array(CommandLine.arguments.dropFirst())) {
            printError("speechgraph: error: \(problem)")
            Glibc.exit(Exit.usage)
        }
        var parsed: ParsableCommand.Type?
        do {
            var command = try parseAsRoot(negativeValuesJoined(Array(CommandLine.arguments.dropFirst())))
            parsed = type(of: command)
            try command.run()
            WhisperWorker.stopShared()
        } catch let reported as Reported {
            WhisperWorker.stopShared()
            Glibc.exit(reported.code)
        } catch {
            if let command = parsed, let invalid = error as? ValidationError {
                // Thrown by a subcommand's run (checks made once the whole command line has parsed): that
                // subcommand's usage, as the parser gives it for its own checks.
                printError(
                    "Error: \(invalid.message)\nUsage: \(usageString(for: command))\n"
                        + "  See 'speechgraph \(command._commandName) --help' for more information.")
                Glibc.exit(Exit.usage)
            }
            let code = exitCode(for: error)
            if code == .success {
                // --help, --version
                print(fullMessage(for: error))
                Glibc.exit(Exit.ok)
            }
            printError(fullMessage(for: error))
            // ArgumentParser uses 64 for usage errors; speechgraph documents 2.
            Glibc.exit(code == .validationFailure ? Exit.usage : code.rawValue == 1 ? Exit.failure : code.rawValue)
        }
    }
}

/// The first argument that looks like grouped short flags (`-dash.wav`) before any `--`: the parser would read
/// `-dash.wav` as `-d -a -s -h ...` and print the help. A single short option (`-h`, `lm build`'s `-o`, or an
/// unknown one) is left to the parser.
func unknownShortOption(_ arguments: [String]) -> String? {
    for argument in arguments {
        if argument == "--" { return nil }
        if argument.hasPrefix("-") && !argument.hasPrefix("--") && argument.count > 2 && Double(argument) == nil {
            return argument
        }
    }
    return nil
}

/// `--duration -1` as `--duration=-1`: the parser takes a negative number after an option for an option of its
/// own and says the value is missing; joined, the value reaches the option's own check ("must be above 0").
func negativeValuesJoined(_ arguments: [String]) -> [String] {
    var out: [String] = []
    var i = 0
    while i < arguments.count {
        let argument = arguments[i]
        if argument == "--" { return out + arguments[i...] }
        if argument.hasPrefix("--") && !argument.contains("=") && i + 1 < arguments.count,
            arguments[i + 1].hasPrefix("-"), Double(arguments[i + 1]) != nil
        {
            out.append("\(argument)=\(arguments[i + 1])")
            i += 2
            continue
        }
        out.append(argument)
        i += 1
    }
    return out
}

/// `speechgraph help WORD...` where a word names no command: what is wrong, with the commands there are at that
/// level. The parser would print the top-level help and exit 0, as if the topic had been found.
func unknownHelpTopic(_ arguments: [String]) -> String? {
    guard arguments.first == "help" else { return nil }
    var command: ParsableCommand.Type = SpeechgraphCommand.self
    var path: [String] = []
    for word in arguments.dropFirst() where !word.hasPrefix("-") {
        let subcommands = command.configuration.subcommands
        guard let next = subcommands.first(where: { $0._commandName == word }) else {
            let topic = (["help"] + path + [word]).joined(separator: " ")
            if subcommands.isEmpty { return "'\(topic)': '\(path.joined(separator: " "))' has no subcommands" }
            let commands = subcommands.map { $0._commandName }.joined(separator: ", ")
            return "'\(topic)': no such command (\(path.isEmpty ? "" : path.joined(separator: " ") + " ")commands: "
                + "\(commands))"
        }
        path.append(word)
        command = next
    }
    return nil
}

/// Writes a line to standard error.
func printError(_ text: String) {
    let line = text.hasSuffix("\n") ? text : text + "\n"
    _ = line.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
}

var stderrIsTerminal: Bool { isatty(2) == 1 }
