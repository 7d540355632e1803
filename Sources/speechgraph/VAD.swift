import ArgumentParser
import Foundation
import SpeechGraph

extension SpeechgraphCommand {
    struct VAD: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "vad",
            abstract: "Detect speech in audio files and print the regions.",
            discussion: """
                Each file runs through the graph file.input -> vad -> collect, with converters to 16 kHz mono \
                where the file differs. See docs/vad.md for the detector and its parameters.

                Formats: tsv ('start_s<TAB>end_s' per region, in seconds with 3 decimals, as \
                ../shared/tools/vad_score.py reads them; with several files a third column names the file), \
                jsonl (the vad's events: speechStarted, speechEnded, speechPaused and speechResumed, noSpeech; \
                see docs/events.md).

                A file that cannot be read is reported and skipped; the others are still processed, and the \
                exit status is then 1. A wrong parameter exits with 2 before anything runs.
                """)

        enum Format: String, ExpressibleByArgument, CaseIterable { case tsv, jsonl }

        @Argument(help: "Audio files (WAV, FLAC, Ogg/Vorbis, MP3; any rate and channel count).") var files: [String]
        @Option(help: "Output format: tsv or jsonl.") var format: Format = .tsv
        @Option(help: "Detector preset: sensitive, normal or strict.") var preset: VADPreset?
        @Option(
            name: .customLong("set"),
            help: ArgumentHelp(
                "Set a vad parameter, as param=value (repeatable): threshold=2dB, hangover=400ms, "
                    + "min-speech, min-silence, pause, pre-roll, no-speech.", valueName: "param=value"))
        var parameters: [String] = []

        func validate() throws {
            if files.isEmpty { throw ValidationError("give at least one audio file") }
            if files.contains("") { throw ValidationError("an empty file name (a variable that is not set?)") }
            if files.contains("-") {
                throw ValidationError(
                    "'-': vad reads files, not standard input (save the stream to a file first, or use "
                        + "'speechgraph transcribe --format jsonl -', whose results have the speech's times)")
            }
        }

        func run() throws {
            var registry = BuiltinNodes.registry()
            try registry.register(EventCollector.type)
            let planner = GraphPlanner(registry: registry)
            let overrides = try parseOverrides(parameters, node: "vad")
            // Parameters are checked once, before any file is read: a mistake there is a usage error.
            do {
                _ = try planner.validate(graph(for: files[0]), overrides: overrides)
            } catch let error as GraphError {
                for d in error.diagnostics where d.severity == .error { printError("speechgraph: error: \(d.message)") }
                throw Reported(code: Exit.usage)
            }

            let status = StatusLine()
            let output = StandardOutput()
            let out = TextOutput.standardOutput(statusLine: status, shared: output)
            try runEachFile(
                files, registry: registry, signals: SignalHandling(status: status), output: output,
                plan: { try planner.plan(graph(for: $0), overrides: overrides) },
                handle: { file, runner in
                    guard let collector = runner.node(named: "out") as? EventCollector else { return }
                    switch format {
                    case .jsonl:
                        for event in collector.events { out.write(JSONLines.line(for: event, source: file) + "\n") }
                    case .tsv:
                        var start: Double?
                        for event in collector.events {
                            switch event {
                            case .speechStarted(_, let time): start = time
                            case .speechEnded(_, let time):
                                guard let s = start else { continue }
                                out.write(
                                    String(format: "%.3f\t%.3f", s, time)
                                        + (files.count > 1 ? "\t\(escapedField(file))\n" : "\n"))
                                start = nil
                            default: break
                            }
                        }
                    }
                    out.flush()
                })
        }

        private func graph(for file: String) -> GraphSpec {
            var g = SyntheticGraph(command: "vad")
            g.node("src", "file.input", [("path", .string(file))])
            g.node("vad", "vad", preset.map { [("preset", .word($0.rawValue))] } ?? [], options: ["preset": "--preset"])
            g.node("out", "collect")
            g.edge("src", to: "vad")
            g.edge("vad", "events", to: "out")
            return g.spec
        }
    }
}

extension VADPreset: ExpressibleByArgument {}
