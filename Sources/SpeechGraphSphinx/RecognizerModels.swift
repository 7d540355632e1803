import Foundation
import SpeechGraphCore
import Synchronization

extension RecognizerNode {
    /// The models a recognizer decodes with, from its parameters: the streamed (or utterance) model, the
    /// whole-utterance one, and with a domain model or a grammar the general model beside it.
    struct Models: Sendable {
        /// The streaming decoder's model (in utterance mode, the whole-utterance one).
        var stream: SphinxModel
        var whole: SphinxModel
        /// With a domain model or a grammar: the general model, which decodes each whole utterance too, for the
        /// sentence-level mixture (`weight` below 1) or for rejection.
        var reference: SphinxModel?
        /// With a grammar from a spec: the spec's n-gram model, whose reading rejection compares with the
        /// general one (a grammar's path score carries almost no language-model cost, the general model's does).
        var rejection: SphinxModel?
        /// `weight` below 1: the domain model's share in the sentence-level mixture of final results.
        var mixtureWeight: Double?
        /// Mark results that fit the grammar or the domain-only model much worse than general speech.
        var rejects: Bool
        /// What `lm` (or `grammar`, or `phrases`) named, for events.
        var languageModel: String
        /// Utterance mode, or streaming with `final-pass`: which whole-utterance decoders are needed.
        var wholeUtterances: Bool
        var finalPass: Bool
        /// Whole-utterance decodings of each utterance (`phases`), each with a decoder of its own.
        var phases: Int

        /// What building `lm`, `grammar` or `phrases` on first use had to say (guessed pronunciations).
        var notes: [String]

        init(_ c: NodeConfig, controlConnected: Bool) throws {
            let notes = BuildNotes()
            var model = try SphinxModel.resolve(c, notes: notes)
            self.notes = notes.lines
            let includeWords = c.bool(of: "words")
            wholeUtterances = c.string(of: "mode") == "utterance"
            phases = c.integer(of: "phases")
            finalPass = !wholeUtterances && c.bool(of: "final-pass")
            let results = Results(rawValue: c.string(of: "results")) ?? .progressive
            // Streaming with `second-pass`: the streamed decoder runs PocketSphinx's second pass, on renormalised
            // features (`SphinxDecoder.endUtterance`), when an utterance ends.
            let streamSecondPass = !wholeUtterances && !finalPass && results != .fast && c.bool(of: "second-pass")
            // Word times need every frame numbered on the audio clock, and so does the second pass's
            // renormalisation; and when a vad node already cuts the audio into utterances, PocketSphinx's own
            // silence removal only loses speech (on the long noisy files: 66.5% instead of 67.8% WER in white
            // noise, 56.1% instead of 58.6% in pink).
            model.removesSilence = !includeWords && !controlConnected && !streamSecondPass
            model.maxHMMs = c.integer(of: "max-hmms")
            // PocketSphinx's second pass (-fwdflat) searches the whole utterance again when it ends, and the
            // final result waits for it: about 40 ms per second of the utterance. Whole utterances keep it
            // (utterance mode and the final pass: pocketsphinx_batch's setting). Streamed decoding skips it unless
            // `second-pass` asks for it (on renormalised features, docs/endpointing.md): on the synthesised
            // development set (scripts/make-dev-set.sh) the plain second pass gives 35.7% WER with it and 32.0%
            // without, and the final result comes as soon as the first pass ends. `results: fast` skips it
            // everywhere.
            model.secondPass = results != .fast
            var whole = model
            let weight = model.domain?.weight ?? 1
            reference = nil
            rejection = nil
            mixtureWeight = nil
            rejects = false
            if model.domain != nil || model.jsgf != nil {
                // Whole utterances are decoded twice: with the domain model alone (or the grammar) and with
                // the general model; the sentence-level mixture (or the rejection test) chooses between them.
                whole.domain?.weight = 1
                var general = whole
                general.domain = nil
                general.jsgf = nil
                general.grammarDict = nil
                general.grammarModel = nil
                reference = general
                if whole.jsgf != nil, let grammarModel = whole.grammarModel {
                    var spec = general
                    spec.domain = grammarModel
                    rejection = spec
                }
                mixtureWeight = weight < 1 ? weight : nil
                rejects = weight >= 1 && c.bool(of: "reject") && general.lm != nil
            }
            self.whole = whole
            if wholeUtterances {
                model = whole
            } else {
                model.secondPass = streamSecondPass
                // The streamed second pass runs after the end of speech, while someone waits for the result: it
                // tries each word within 10 frames of where the first pass found it start, not PocketSphinx's 25.
                // The pass costs 20% less on AN4's training utterances and 25% less on synthesised sentences, with
                // the same WER there decoded whole (40.43%, 18.42%); through the Wyoming server AN4 gives 42.83%
                // against 42.23% and pairs of synthesised sentences 42.81% against 42.98% (docs/endpointing.md).
                // Whole utterances keep pocketsphinx_batch's setting.
                if streamSecondPass { model.secondPassWordWindow = 10 }
            }
            stream = model
            languageModel =
                c.string("grammar") ?? c.string("jsgf") ?? c.string("lm") ?? c.string("phrases").map {
                    "phrases: \($0)"
                }
                ?? "general"
        }

        /// The decoders these models need, each from `get` (model, streaming): the stream's; the final pass's;
        /// with whole-utterance decoding and a mixture or rejection, the general model's and the spec's; with
        /// `phases` above 1, one more whole-utterance decoder for each phase after the first.
        func decoders<D>(_ get: (SphinxModel, Bool) throws -> D) throws -> DecoderSet<D> {
            let reference = (wholeUtterances || finalPass) && (mixtureWeight != nil || rejects)
            let extra = wholeUtterances || finalPass ? phases - 1 : 0
            return DecoderSet(
                stream: try get(stream, !wholeUtterances),
                whole: finalPass ? try get(whole, false) : nil,
                reference: reference ? try self.reference.map { try get($0, false) } : nil,
                rejection: reference && rejects ? try rejection.map { try get($0, false) } : nil,
                phases: try (0..<max(extra, 0)).map { _ in try get(whole, false) })
        }
    }

    /// A recognizer's decoders (or what stands for them), by role.
    struct DecoderSet<D> {
        var stream: D
        var whole: D?
        var reference: D?
        var rejection: D?
        /// Whole-utterance decoders for the phases after the first (`phases`).
        var phases: [D] = []

        var all: [D] { [stream] + [whole, reference, rejection].compactMap { $0 } + phases }

        func map<E>(_ f: (D) throws -> E) rethrows -> DecoderSet<E> {
            DecoderSet<E>(
                stream: try f(stream), whole: try whole.map(f), reference: try reference.map(f),
                rejection: try rejection.map(f), phases: try phases.map(f))
        }

        /// The set with every role filled, or nil when one is missing.
        func unwrapped<W>() -> DecoderSet<W>? where D == W? {
            guard all.allSatisfy({ $0 != nil }) else { return nil }
            return map { $0! }
        }
    }

    typealias Decoders = DecoderSet<SphinxDecoder>

    /// A decoder a reload needs: newly loaded, or one the recognizer already holds, still current (the same
    /// model, its files unchanged), which it keeps.
    enum Pending {
        case loaded(SphinxDecoder)
        case kept(Held)
    }

    /// Decoders for a set of models, loaded on another thread after a reload request.
    struct Loaded: @unchecked Sendable {
        // Unchecked: the decoders are handed over once, through a Mutex, to the recognizer's own thread.
        var models: Models
        var decoders: DecoderSet<Pending>
        /// The parameters they were loaded for: loaded again if the decoders to keep are gone by the switch.
        var config: NodeConfig
        /// How long loading took.
        var loadSeconds: Double
    }

    /// What a recognizer's decoder was loaded from (its model, use and files), for reloads to tell which they
    /// can keep: equal means still current.
    struct Held: Sendable, Equatable {
        var model: SphinxModel
        var streaming: Bool
        var stamps: [FileStamp]

        init(model: SphinxModel, streaming: Bool, stamps: [FileStamp]) {
            (self.model, self.streaming, self.stamps) = (model, streaming, stamps)
        }

        init(_ d: SphinxDecoder) { self.init(model: d.model, streaming: d.isStreaming, stamps: d.stamps) }
    }
}
