import Foundation
import SpeechGraphCore
import SpeechGraphWhisper

/// A recognizer with `engine: whisper`: where its model and Python are (checked before the graph runs, each error
/// at the parameter that caused it), and the options of its requests.
struct WhisperSetup {
    static let defaultModel = "tiny.en"

    var python: String
    var model: String
    var options: WhisperOptions

    init(_ c: NodeConfig) throws {
        python = try WhisperLocations.python()
        model = try WhisperLocations.model(c.string("model") ?? Self.defaultModel, python: python)
        var options = WhisperOptions(beam: c.integer(of: "beam"), words: c.bool(of: "words"))
        options.encoderWindow = c.number(of: "encoder-window")
        // Contextual strings: the words Whisper should favour (its hotwords).
        let phrases = SphinxModel.phraseItems(c).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
            !$0.isEmpty
        }
        if !phrases.isEmpty {
            options.hotwords = phrases.joined(separator: ", ")
        }
        // English (speechgraph's models are English): a multilingual model does not guess.
        options.language = "en"
        self.options = options
    }

    /// What the whisper engine does not do: grammars, domain models (and so rejection) are PocketSphinx's; a
    /// graph puts a grammar recognizer in front of a whisper one instead.
    static func validate(_ c: NodeConfig) throws {
        guard c.string(of: "engine") == "whisper" else {
            for parameter in ["beam", "window", "encoder-window"] where c.locations[parameter] != nil {
                throw SpeechGraphError(
                    "'\(parameter)' is the whisper engine's (engine: whisper)", parameter: parameter)
            }
            return
        }
        for parameter in ["grammar", "jsgf", "lm"] where c.string(parameter) != nil {
            throw SpeechGraphError(
                "the whisper engine decodes without a grammar or a domain model: '\(parameter)' is PocketSphinx's "
                    + "(engine: pocketsphinx); a graph can put a grammar recognizer in front of a whisper one",
                parameter: parameter)
        }
        if c.integer(of: "alternatives") > 0 {
            throw SpeechGraphError(
                "the whisper engine gives no n-best list: 'alternatives' is PocketSphinx's", parameter: "alternatives")
        }
    }

    /// The engine a node decodes its final results with: the process's worker for this model, started if it is
    /// not running.
    func engine() throws -> WhisperEngine {
        WhisperEngine(worker: try WhisperWorker.shared(model: model, python: python), options: options)
    }
}
