import ArgumentParser
import Foundation
import SpeechGraph

extension SpeechgraphCommand {
    struct LMCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "lm",
            abstract: "Custom language models: build a model directory from a spec (.lmspec).",
            discussion: """
                A spec holds phrases with counts, templates over classes, custom pronunciations and a locale \
                (docs/lm.md). The recognizer's 'lm' takes the spec itself (built on first use) or the directory \
                'lm build' writes.
                """,
            subcommands: [Build.self])

        struct Build: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Build a language model and its dictionary from a spec.",
                discussion: """
                    Expands the templates, estimates an n-gram model (interpolated Kneser-Ney, written as \
                    back-off ARPA), and writes DIR/lm.arpa, DIR/lm.bin (PocketSphinx's binary form), \
                    DIR/words.dict (every word's pronunciation: the spec's own, the model's dictionary, or for \
                    words in neither a guess from espeak-ng, with a warning naming the word), DIR/grammar.jsgf \
                    (the spec's phrases and templates as a grammar) and DIR/spec.lmspec. Spec errors are reported \
                    as file:line:col: error: and exit 2; a failed build exits 1.
                    """)

            @Argument(help: "The spec (.lmspec).") var spec: String
            @Option(name: [.customShort("o"), .long], help: "The model directory to write.") var output: String
            @Option(help: "Model name or directory whose dictionary pronounces the words.")
            var model = "en-us"
            @Option(help: "Pronunciation dictionary to take words from (default: the model's).") var dict: String?
            @Option(
                help: ArgumentHelp(
                    "Also write the training text here: one sentence a line, as often as its count, between <s> "
                        + "and </s> (for another estimator, such as IRSTLM's tlm).", valueName: "file"))
            var corpus: String?

            func validate() throws {
                if output.isEmpty { throw ValidationError("-o: the model directory's name is empty") }
                if corpus?.isEmpty == true { throw ValidationError("--corpus: the file name is empty") }
            }

            func run() throws {
                let started = Date()
                let parsed: LMSpec
                do { parsed = try LMSpec(contentsOf: spec) } catch let error as GraphError {
                    // With the count, as check and transcribe --lm end the same errors.
                    printGraphErrors(error, in: spec)
                    throw Reported(code: Exit.usage)
                }
                for warning in parsed.warnings { printError(warning.description) }
                // The build writes the spec into the directory as spec.lmspec: never over the spec itself.
                let copy = URL(fileURLWithPath: output).appendingPathComponent("spec.lmspec").standardizedFileURL
                if copy.resolvingSymlinksInPath().path == URL(fileURLWithPath: spec).resolvingSymlinksInPath().path {
                    printError(
                        "speechgraph: error: -o \(output): the build writes spec.lmspec there, which is the spec "
                            + "itself: choose another directory")
                    throw Reported(code: Exit.usage)
                }
                do {
                    let general = try SphinxModel.resolve(
                        model: model, hmm: nil, lm: nil, dict: dict, jsgf: nil, sampleRate: 16000)
                    let report = try SphinxLanguageModels.build(parsed, into: output, dictionary: general.dict)
                    if let corpus {
                        var text = ""
                        for (words, count) in LMCorpus(parsed).sentences {
                            let line = "<s> " + words.joined(separator: " ") + " </s>\n"
                            for _ in 0..<count { text += line }
                        }
                        do { try OutputPath.write(text, to: corpus) } catch let e as SpeechGraphError {
                            throw LMBuildError(e.message)
                        }
                    }
                    for warning in report.guessWarnings(parsed, file: spec) { printError(warning) }
                    let grams = report.ngramCounts.enumerated().map { "\($0.element) \($0.offset + 1)-grams" }
                    printError(
                        "speechgraph: built \(output): \(report.vocabularySize) words, "
                            + grams.joined(separator: ", ") + " from \(report.sampleCount) samples ("
                            + "\(report.sentenceCount) different sentences) in "
                            + String(format: "%.2f s", Date().timeIntervalSince(started)))
                } catch {
                    printError("speechgraph: error: \(error)")
                    throw Reported(code: Exit.failure)
                }
            }
        }
    }
}
