import Foundation
import SpeechGraphCore
import Synchronization

/// The `recognizer` node: PocketSphinx over 16-bit audio at the model's rate.
///
/// Without utterance boundaries from upstream, the whole stream is one utterance, and its final
/// result is emitted when the stream ends or the graph stops.
public final class RecognizerNode: GraphNode {
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
        threading: .worker,
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
        .string(
            "model", default: "en-us",
            doc: "Model name on the model search path ($SPEECHGRAPH_MODEL_PATH, "
                + "/usr/share/pocketsphinx/model, /usr/local/share/pocketsphinx/model) or a model directory."),
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
                + "final result waits for the second decoding (about a tenth of the utterance's duration)."),
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
                + "'control') turns it off at the first pause."),
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
            "alternatives", default: 0, range: 0...20,
            doc: "Give each final result the n-best list of this many readings, each with a score, and each "
                + "word the other words those readings have at its time (PocketSphinx's n-best search over "
                + "the utterance's lattice); 0: none."),
        .choice(
            "confidence", ["calibrated", "posterior"], default: "calibrated",
            doc: "Word confidences: calibrated, the probability that the word is right (fitted on synthesised "
                + "speech and AN4's real read speech, clean and noisy; docs/events.md), or posterior, "
                + "PocketSphinx's lattice posterior as it is. A result's confidence is the mean of its words'."),
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
        validate: { try SphinxModel.validate($0) }, advise: advice, make: { try RecognizerNode($0) })

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

    /// The `results` presets.
    public enum Results: String, CaseIterable, Sendable {
        case progressive
        case finalOnly = "final-only"
        case fast
    }

    private let name: String
    private let controlConnected: Bool
    /// The models this recognizer decodes with; replaced whole when the graph is asked to reload them.
    private var models: Models
    /// What building a spec on first use had to say (guessed pronunciations).
    public let notes: [String]
    private let includeWords: Bool
    /// The n-best list's length for final results; 0: none.
    private let alternativeCount: Int
    /// Turns posteriors into probabilities of being right; `nil`: posteriors as they are.
    private let calibration: ConfidenceCalibration?
    private let wholeUtterances: Bool
    /// Streaming mode with `final-pass`: the held utterance is decoded again, whole, for the final result.
    private let finalPass: Bool
    private var wholeDecoder: SphinxDecoder?
    /// With `phases` above 1: a whole-utterance decoder for each phase after the first, decoding beside it.
    private var phaseDecoders: [SphinxDecoder] = []
    private var referenceDecoder: SphinxDecoder?
    private var rejectionDecoder: SphinxDecoder?
    /// Where models loaded after a reload request wait for the next utterance boundary (see `takeNewModels`).
    private let slot = LoadSlot()
    private let volatileFrames: Int64
    private var framesSinceVolatile: Int64 = 0
    private var lastVolatile = ""
    /// Utterance mode, `final-pass` and the second pass at pauses (`speculates`): the samples of the utterance so
    /// far.
    private var held: [Int16] = []
    /// Streaming mode: samples waiting to be decoded as one batch.
    private var pending: [Int16] = []
    /// When the first block of `pending` arrived: its deadline at the gate.
    private var batchArrival = 0.0
    private let batchSamples: Int
    /// Streaming mode with `lookahead`: samples held at the start of each utterance to learn its cepstral mean.
    private let lookaheadSamples: Int
    /// The decoder has not started the utterance yet: its first `lookaheadSamples` are gathering in `pending`.
    private var lookingAhead = false
    /// With a lookahead: samples of the utterance decoded so far, and how often the mean follows them.
    private var decodedSamples = 0
    private let meanUpdateSamples: Int
    /// A batch is decoded this many samples at a time when other graphs' urgent work may need the gate.
    private let yieldSamples: Int
    private let pool: SphinxDecoderPool
    /// Decoding waits for a slot here: ends of utterances first (see ComputeGate).
    private let gate: ComputeGate
    private let backlog: WorkerBacklog
    /// Streaming mode: the decoder has seen audio since the last volatile check.
    private var decodedSinceCheck = false
    private var decoder: SphinxDecoder?
    private var pcm: UnsafeMutableBufferPointer<Int16>
    private var inUtterance = false
    /// `results: fast` with a vad in front: utterances end at speechPaused.
    private let endsAtPauses: Bool
    /// After speechPaused ended the utterance: the audio that follows is the pause's, not speech, until
    /// speechResumed (or speechEnded, or speechStarted).
    private var paused = false
    /// `second-pass-at-pause`: the second pass may run at speechPaused (`speculates` says whether it does).
    private let secondPassAtPause: Bool
    /// A final result worked out at speechPaused (the decoder's utterance ended there), and how the utterance's
    /// decoding stood then: what the speech resuming restores.
    private struct PauseState {
        var result: Transcription
        /// The decoder's calls made before the pause (`feeds`), and the samples still waiting in `pending`.
        var feeds: Int
        var pending: Int
        var lookingAhead: Bool
        var decodedSinceCheck: Bool
        var batchArrival: Double
    }
    /// `nil` when no result waits at a pause.
    private var atPause: PauseState?
    /// With the second pass at pauses: the samples each of the decoder's calls took in this utterance, in order,
    /// and the live mean's state before the utterance began, to decode it again exactly as it was.
    private var feeds: [Int] = []
    private var meanBefore: SphinxDecoder.MeanState?
    /// Audio came while a result waited at a pause: this recognizer's audio does not come through the vad (which
    /// holds a pause's audio back), so pauses no longer work out results here.
    private var audioDuringPauses = false
    /// Samples of this utterance decoded again after pauses: the next pause works out its result only while this is
    /// at most half the utterance so far, so that an utterance's first pass, however many pauses it has, costs at
    /// most 2.5 times what it costs without.
    private var decodedAgainSamples = 0
    /// Final results worked out at a pause, and utterances decoded again because the speech resumed.
    private(set) var resultsAtPauses = 0
    private(set) var decodedAgain = 0
    /// The next utterance begins a new stream (the first one, and the first after a discontinuity).
    private var streamBegins = true
    private var utterance = 0
    private var utteranceStart = 0.0
    private var utteranceEnd = 0.0
    /// Splitting long utterances: energy of each 10 ms of the utterance so far.
    private let maxSamples: Int
    private let lookbackSamples: Int
    private let chunkSamples: Int
    private var chunkEnergies: [Float] = []
    private var chunkSum: Float = 0
    private var chunkFill = 0
    private var utteranceSamples = 0
    /// The largest sample of the utterance so far, in 16-bit steps.
    private var utterancePeak: Float = 0
    private var sampleRate: Int

    public init(_ context: NodeContext) throws {
        let c = context.config
        name = c.name
        let rate = Int(c.number(of: "rate").rounded())
        controlConnected = context.connectedInputs.contains("control")
        includeWords = c.bool(of: "words")
        alternativeCount = c.integer(of: "alternatives")
        calibration = c.string(of: "confidence") == "calibrated" ? .standard : nil
        let results = Results(rawValue: c.string(of: "results")) ?? .progressive
        models = try Models(c, controlConnected: controlConnected)
        notes = models.notes
        wholeUtterances = models.wholeUtterances
        finalPass = models.finalPass
        // Reload requests for this graph (SIGHUP on `speechgraph run`, `RunningGraph.reloadModels`).
        let reloads = context.resources.shared(ModelReloads.self) { ModelReloads() }
        // A reload request loads the new models at once, on the requesting thread; the node switches between
        // utterances.
        let (name, slot, control) = (c.name, slot, controlConnected)
        reloads.observe { parameters in
            var changed = c
            for (key, value) in parameters[name] ?? [:] {
                // Values given in code are checked as a graph file's are: a bad one fails the reload.
                guard let descriptor = RecognizerNode.descriptor.parameters.first(where: { $0.name == key }) else {
                    let failure = "no parameter '\(key)' on a recognizer"
                    let dropped = slot.deliver(.failure(failure), ticket: slot.ticket())
                    return .init(node: name, failure: failure, droppedEarlier: dropped)
                }
                switch descriptor.check(value) {
                case .success(let v): changed.values[key] = v
                case .failure(let e):
                    let dropped = slot.deliver(.failure(e.message), ticket: slot.ticket())
                    return .init(node: name, failure: e.message, droppedEarlier: dropped)
                }
            }
            let (failure, notes, dropped) = RecognizerNode.load(changed, controlConnected: control, into: slot)
            return .init(node: name, failure: failure, notes: notes, droppedEarlier: dropped)
        }
        endsAtPauses = results == .fast && context.connectedInputs.contains("control")
        secondPassAtPause = c.bool(of: "second-pass-at-pause") && controlConnected && !endsAtPauses
        sampleRate = rate
        batchSamples = Int(c.number(of: "batch") * Double(rate))
        lookaheadSamples = models.wholeUtterances ? 0 : Int(c.number(of: "lookahead") * Double(rate))
        meanUpdateSamples = rate / 10
        yieldSamples = rate / 50
        pending.reserveCapacity(max(batchSamples, lookaheadSamples) + max(context.maxBlockFrames, 1))
        maxSamples = Int(c.number(of: "max-utterance") * Double(rate))
        lookbackSamples = min(5 * rate, maxSamples / 2)
        chunkSamples = rate / 100
        let volatile = c.number(of: "volatile")
        volatileFrames =
            wholeUtterances || volatile <= 0 || results == .finalOnly
            ? 0 : max(1, Int64((volatile * Double(rate)).rounded()))
        // The graph's own pool (or one its maker handed it on purpose): never another graph's decoders.
        pool = context.resources.shared(SphinxDecoderPool.self) { SphinxDecoderPool() }
        gate = context.resources.shared(ComputeGate.self) { ComputeGate() }
        backlog = context.backlog
        pcm = .allocate(capacity: max(context.maxBlockFrames, 1))
        pcm.initialize(repeating: 0)
    }

    deinit { pcm.deallocate() }

    /// The audio it takes before its next batch is decoded (streaming; the volatile results follow the batches), or
    /// before a long utterance may be split; an utterance's end comes as an event, which wakes a worker at once.
    public var framesBeforeNextStep: Int {
        let split = inUtterance ? max(0, maxSamples - lookbackSamples - utteranceSamples) : maxSamples
        guard !paused, !wholeUtterances, atPause == nil else { return split }
        return min(split, max(0, (lookingAhead ? lookaheadSamples : batchSamples) - pending.count))
    }

    public func prepare() throws {
        let d = try models.decoders { try pool.checkout($0, streaming: $1) }
        (decoder, wholeDecoder, referenceDecoder, rejectionDecoder) = (d.stream, d.whole, d.reference, d.rejection)
        phaseDecoders = d.phases
        slot.note(d)
        streamBegins = true
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        guard !paused else { return }
        if !inUtterance { try takeNewModels(output: output) }
        guard let decoder else { return }
        if atPause != nil {
            // Audio while a result waits at a pause: it does not come through the vad. Decoded as if the utterance
            // had not ended, and no more results at pauses.
            audioDuringPauses = true
            try resumeAfterPause()
        }
        if !inUtterance {
            feeds.removeAll(keepingCapacity: true)
            if !wholeUtterances {
                if lookaheadSamples > 0 { lookingAhead = true } else { try beginDecoding(decoder, head: nil) }
            }
            inUtterance = true
            utterance += 1
            utteranceStart = block.startTime
            framesSinceVolatile = 0
            lastVolatile = ""
            decodedSinceCheck = false
            chunkEnergies.removeAll(keepingCapacity: true)
            chunkSum = 0
            chunkFill = 0
            utteranceSamples = 0
            utterancePeak = 0
            // Streamed without final-pass, the utterance's samples are held only for pauses (`speculates`).
            if !wholeUtterances && !finalPass { held.removeAll(keepingCapacity: true) }
            decodedAgainSamples = 0
        }
        var offset = 0
        let samples = block.samples
        while offset < samples.count {
            let n = min(pcm.count, samples.count - offset)
            for i in 0..<n {
                // libsndfile reads 16-bit files as s / 32768: this gives back the exact samples.
                let v = (SampleGuard.clean(samples[offset + i]) * 32768).rounded()
                pcm[i] = v >= 32767 ? .max : v <= -32768 ? .min : Int16(v)
                utterancePeak = max(utterancePeak, abs(v))
                chunkSum += v * v
                chunkFill += 1
                if chunkFill == chunkSamples {
                    chunkEnergies.append(chunkSum)
                    chunkSum = 0
                    chunkFill = 0
                }
            }
            utteranceSamples += n
            if wholeUtterances || finalPass || speculates {
                held.append(contentsOf: UnsafeBufferPointer(rebasing: pcm[0..<n]))
            }
            // After a result at a pause, audio waits for speechResumed (the decoder's utterance has ended).
            if !wholeUtterances && atPause == nil {
                if pending.isEmpty { batchArrival = backlog.arrival }
                pending.append(contentsOf: UnsafeBufferPointer(rebasing: pcm[0..<n]))
                if pending.count >= (lookingAhead ? lookaheadSamples : batchSamples) {
                    try runBatch(deadline: batchArrival) { try decodePending(yielding: true) }
                }
            }
            offset += n
        }
        utteranceEnd = block.endTime
        if utteranceSamples >= maxSamples - lookbackSamples { try splitIfLong(output: output) }
        guard inUtterance, atPause == nil else { return }
        if volatileFrames > 0 {
            // At most one volatile result per interval of audio, and only a changed text: once an interval has
            // passed since the last one, the hypothesis is checked after every batch the decoder takes (it
            // cannot change in between) until the text changes.
            framesSinceVolatile += Int64(block.frameCount)
            if framesSinceVolatile >= volatileFrames && decodedSinceCheck {
                decodedSinceCheck = false
                let text = decoder.hypothesis
                if text != lastVolatile {
                    framesSinceVolatile = 0
                    lastVolatile = text
                    try output.emit(
                        .result(
                            Transcription(
                                utterance: utterance, isFinal: false,
                                range: TimeRange(start: utteranceStart, end: utteranceEnd),
                                text: text, node: name)))
                }
            }
        }
    }

    /// Utterance boundaries from a vad node: an utterance ends at speechEnded (or, with `results: fast`, at
    /// speechPaused), and the next block of audio starts a new one.
    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        switch event {
        case .speechStarted:
            paused = false
            try endUtterance(output: output)
        case .speechEnded(_, let time):
            if inUtterance { utteranceEnd = max(utteranceEnd, time) }
            try endUtterance(output: output)
            paused = false
        case .speechPaused(_, let time) where endsAtPauses:
            if inUtterance { utteranceEnd = max(utteranceEnd, time) }
            try endUtterance(output: output)
            paused = true
        case .speechResumed where endsAtPauses:
            // The audio that follows (the pause, then the speech) starts the next utterance.
            paused = false
        case .speechPaused
        where inUtterance && atPause == nil && speculates && 2 * decodedAgainSamples <= held.count:
            // Most pauses this long end speech: the final result is worked out now, from the audio the end of
            // speech would give it (the vad passes none in between), and goes out at speechEnded.
            if let decoder {
                let (calls, waiting, ahead, check) = (feeds.count, pending.count, lookingAhead, decodedSinceCheck)
                let result = try gate.run(urgent: true) { try finalResult(decoder) }
                atPause = PauseState(
                    result: result, feeds: calls, pending: waiting, lookingAhead: ahead, decodedSinceCheck: check,
                    batchArrival: batchArrival)
                resultsAtPauses += 1
            }
        case .speechResumed where atPause != nil:
            try resumeAfterPause()
        default:
            break
        }
    }

    public func finish(output: NodeOutput) throws {
        try endUtterance(output: output)
    }

    /// The audio was interrupted: the utterance in flight ends here and its final result is delivered.
    public func discontinuity(port: Int, output: NodeOutput) throws {
        try endUtterance(output: output)
        paused = false
        streamBegins = true
    }

    /// An utterance near its maximum length ends at a quiet point. Held audio (utterance mode) is cut
    /// exactly at the quietest 10 ms of the last 5 s, and what follows starts the next utterance; streamed
    /// audio is already decoded, so the utterance ends with the first 10 ms in that window that is nearly
    /// as quiet as the quietest of the utterance (or at the maximum).
    private func splitIfLong(output: NodeOutput) throws {
        guard !chunkEnergies.isEmpty else { return }
        if wholeUtterances {
            guard held.count >= maxSamples else { return }
            let first = max(0, (maxSamples - lookbackSamples) / chunkSamples)
            let last = min(chunkEnergies.count, maxSamples / chunkSamples) - 1
            guard first <= last else { return }
            var quietest = first
            for i in first...last where chunkEnergies[i] < chunkEnergies[quietest] { quietest = i }
            let cut = quietest * chunkSamples
            let rest = Array(held[cut...])
            held.removeSubrange(cut...)
            utteranceEnd = utteranceStart + Double(cut) / Double(sampleRate)
            let nextStart = utteranceEnd
            let nextEnd = utteranceStart + Double(cut + rest.count) / Double(sampleRate)
            let restEnergies = Array(chunkEnergies[quietest...])
            try endUtterance(output: output)
            // The rest is the beginning of the next utterance.
            inUtterance = true
            utterance += 1
            utteranceStart = nextStart
            utteranceEnd = nextEnd
            held = rest
            chunkEnergies = restEnergies
            utteranceSamples = rest.count
        } else {
            let quietest = chunkEnergies.min() ?? 0
            let latest = chunkEnergies[chunkEnergies.count - 1]
            if utteranceSamples >= maxSamples || latest <= max(quietest * 2, 1) {
                try endUtterance(output: output)
            }
        }
    }

    /// Streaming mode: decodes the gathered batch. `yielding`: a few frames at a time, letting another graph's
    /// end of utterance (urgent) take the gate's slot in between.
    private func decodePending(yielding: Bool = false) throws {
        guard let decoder else { return }
        if lookingAhead {
            lookingAhead = false
            // Exactly the lookahead (however the audio was cut into blocks): the same audio, the same mean.
            let head = min(pending.count, lookaheadSamples)
            try pending.withUnsafeBufferPointer { try beginDecoding(decoder, head: .init(rebasing: $0[..<head])) }
        }
        guard !pending.isEmpty else { return }
        try pending.withUnsafeBufferPointer { all in
            // Pieces end where urgent work may take the slot (when yielding) and, with a lookahead, where the mean
            // is updated: every `meanUpdateSamples` of the utterance, wherever the batches fall, so that the
            // result depends on the audio alone, not on how it arrived.
            var start = 0
            while start < all.count {
                // A batch whose end has come (before it started or meanwhile) is urgent itself: it keeps its slot.
                if start > 0 && yielding && !backlog.hasEvents { gate.yieldToUrgentWork(deadline: batchArrival) }
                var end = yielding ? min(all.count, start + yieldSamples) : all.count
                if lookaheadSamples > 0 {
                    end = min(end, start + meanUpdateSamples - decodedSamples % meanUpdateSamples)
                }
                try feed(decoder, UnsafeBufferPointer(rebasing: all[start..<end]))
                start = end
            }
        }
        pending.removeAll(keepingCapacity: true)
        decodedSinceCheck = true
    }

    /// Starts the decoder's utterance. With a lookahead, `head` (its first samples): their mean normalises the
    /// utterance from its first frame (counted as one frame, so that from then on the mean is that of the frames
    /// decoded, these first).
    private func beginDecoding(_ decoder: SphinxDecoder, head: UnsafeBufferPointer<Int16>?) throws {
        if speculates { meanBefore = decoder.meanState }
        decodedSamples = 0
        if let head, let mean = decoder.cepstralMean(of: head) { decoder.setCepstralMean(mean) }
        try decoder.startUtterance()
    }

    /// One call of the decoder: the samples decoded and, past the lookahead, the mean moved on to that of the
    /// utterance's frames decoded so far, every `meanUpdateSamples`. With the second pass at pauses, its size noted.
    private func feed(_ decoder: SphinxDecoder, _ samples: UnsafeBufferPointer<Int16>) throws {
        try decoder.process(samples)
        decodedSamples += samples.count
        if lookaheadSamples > 0 && decodedSamples > lookaheadSamples && decodedSamples % meanUpdateSamples == 0 {
            decoder.updateCepstralMean()
        }
        if speculates { feeds.append(samples.count) }
    }

    private func endUtterance(output: NodeOutput) throws {
        guard inUtterance, let decoder else { return }
        inUtterance = false
        if var result = atPause?.result {
            // Worked out at the pause; the utterance's end is now known.
            atPause = nil
            result.range = TimeRange(start: result.range.start, end: max(result.range.end, utteranceEnd))
            try output.emit(.result(result))
            return
        }
        // Someone waits for this result: it goes ahead of other graphs' batches.
        let result = try gate.run(urgent: true) { try finalResult(decoder) }
        try output.emit(.result(result))
    }

    /// Runs a batch of decoding at the gate: urgent when an utterance's end already waits behind its audio, or once
    /// an end comes behind it while it waits (on a worker thread: on the graph thread nothing comes behind it).
    private func runBatch<T>(deadline: Double, _ body: () throws -> T) throws -> T {
        let endCame = backlog.isOnWorker ? { [backlog] in backlog.hasEvents } : nil
        return try gate.run(urgent: backlog.hasEvents, deadline: deadline, becomesUrgent: endCame, body)
    }

    /// Whether the final result is worked out at speechPaused: `second-pass-at-pause`, in streaming mode, when the
    /// stream's decoder has the second pass to do (there is little to gain without it).
    private var speculates: Bool {
        secondPassAtPause && !audioDuringPauses && !wholeUtterances && !finalPass && models.stream.secondPass
            && models.stream.jsgf == nil
    }

    /// The speech went on after a pause whose final result was worked out: the decoder starts the utterance over
    /// from the live mean it began with, and makes the calls it made before the pause again, on the same samples
    /// (the same lookahead, the mean moved at the same samples); the samples that waited then wait again. What
    /// follows decodes exactly as if the utterance had not ended.
    private func resumeAfterPause() throws {
        guard let decoder, let state = atPause else { return }
        atPause = nil
        decodedAgain += 1
        if let meanBefore { decoder.restore(meanBefore) }
        let calls = feeds.prefix(state.feeds)
        feeds.removeAll(keepingCapacity: true)
        pending.removeAll(keepingCapacity: true)
        lookingAhead = state.lookingAhead
        if lookingAhead {
            // The decoder had not started: the utterance's audio gathers for its lookahead again.
            pending.append(contentsOf: held)
        } else {
            let decoded = try runBatch(deadline: backlog.arrival) {
                try held.withUnsafeBufferPointer { all -> Int in
                    let head =
                        lookaheadSamples > 0
                        ? UnsafeBufferPointer(rebasing: all[..<min(all.count, lookaheadSamples)]) : nil
                    try beginDecoding(decoder, head: head)
                    var start = 0
                    for n in calls {
                        if start > 0 && !backlog.hasEvents { gate.yieldToUrgentWork(deadline: backlog.arrival) }
                        try feed(decoder, UnsafeBufferPointer(rebasing: all[start..<(start + n)]))
                        start += n
                    }
                    return start
                }
            }
            decodedAgainSamples += decoded
            pending.append(contentsOf: held[decoded...])
        }
        decodedSinceCheck = state.decodedSinceCheck
        batchArrival = state.batchArrival
    }

    /// The rest of the utterance decoded, and its final result.
    private func finalResult(_ streamed: SphinxDecoder) throws -> Transcription {
        var decoder = streamed
        if !wholeUtterances { try decodePending() }
        if finalPass, let whole = wholeDecoder {
            try decoder.endUtterance()
            decoder = whole
        }
        var text: String
        var words: [Word]
        var nbest: [(text: String, score: Double, words: [Word])] = []
        var rejected = false
        if wholeUtterances || finalPass {
            // Each phase decodes the utterance with its frames shifted by a fraction of a frame.
            var candidates: [(text: String, words: [Word])] = []
            var lists: [[(text: String, score: Double, words: [Word])]] = []
            var scores: [(score: Double, frames: Int)] = []
            let newStream = streamBegins
            streamBegins = false
            // Phase k on decoder k, all at once (each carries its own noise estimate from one utterance to the
            // next, as one decoder does): the final result waits for one decoding, not for `phases` of them.
            let decoders = [decoder] + phaseDecoders
            let skips = decoders.indices.map { min($0 * (sampleRate / 100) / decoders.count, held.count) }
            // As many at once as the gate has slots free (this one holds one): never more than the cores.
            let extra = gate.takeFreeSlots(upTo: decoders.count - 1)
            defer { gate.returnSlots(extra) }
            try held.withUnsafeBufferPointer { samples in
                try RecognizerNode.decodeAtOnce(
                    decoders, samples, skips: skips, newStream: newStream, threads: 1 + extra)
            }
            for (d, skip) in zip(decoders, skips) {
                let start = utteranceStart + Double(skip) / Double(sampleRate)
                candidates.append((d.hypothesis, includeWords ? d.words(frameOffset: start) : []))
                lists.append(d.nbest(alternativeCount, frameOffset: start))
                scores.append(d.hypothesisScore)
            }
            let chosen = RecognizerNode.medoid(candidates.map(\.text))
            (text, words) = candidates[chosen]
            nbest = lists[chosen]
            if let reference = referenceDecoder {
                // The same audio through the general model, as the first phase heard it.
                try decodeHeld(reference, newStream: newStream)
                let general = reference.hypothesisScore
                var domain = scores[0]
                var noEnd = false
                if let spec = rejectionDecoder {
                    try decodeHeld(spec, newStream: newStream)
                    domain = spec.hypothesisScore
                } else {
                    // A grammar search that reached no end, in the phase whose reading is the result (speech that
                    // no sentence fits) has no reading and no score (0, which beat every real score): it explains
                    // nothing the general model heard words in.
                    noEnd = decoders[chosen].reachedNoEnd
                }
                // How much better the domain reading explains the utterance, in nats per 10 ms frame.
                let margin =
                    noEnd && !reference.hypothesis.isEmpty
                    ? -Double.infinity
                    : domain.frames > 0 ? (domain.score - general.score) / Double(domain.frames) : 0
                if let w = models.mixtureWeight {
                    // A sentence-level mixture, its prior odds counted per frame as the acoustic evidence is:
                    // the domain reading is kept when it beats the general one by more than ln((1 - w) / w)
                    // per frame.
                    if margin <= log((1 - w) / w) {
                        text = reference.hypothesis
                        words = includeWords ? reference.words(frameOffset: utteranceStart) : []
                        nbest = reference.nbest(alternativeCount, frameOffset: utteranceStart)
                    }
                } else if models.rejects {
                    rejected = margin < Self.rejectionMargin
                }
            }
            held.removeAll(keepingCapacity: true)
        } else {
            try decoder.endUtterance()
            text = decoder.hypothesis
            words = includeWords ? decoder.words(frameOffset: utteranceStart) : []
            nbest = decoder.nbest(alternativeCount, frameOffset: utteranceStart)
        }
        if utterancePeak <= 1 {
            // Dead air (every sample within one 16-bit step of zero: a muted input, digital silence) holds no
            // speech; decoded with its frames kept (word timings), PocketSphinx reads a word into it ("dog" over
            // 10 s of zeros).
            (text, words, nbest) = ("", [], [])
        }
        if let calibration { words = calibration.calibrate(words) }
        nbest = RecognizerNode.bestFirst(nbest, text: text)
        if !nbest.isEmpty { words = RecognizerNode.wordAlternatives(words, nbest.dropFirst().map(\.words)) }
        var result = Transcription(
            utterance: utterance, isFinal: true,
            range: TimeRange(start: utteranceStart, end: utteranceEnd),
            text: text, words: words, alternatives: nbest.map { Alternative(text: $0.text, score: $0.score) },
            confidence: words.isEmpty ? nil : words.map(\.confidence).reduce(0, +) / Double(words.count), node: name)
        result.rejected = rejected
        return result
    }

    /// Rejection: a result is rejected unless the grammar's (or the domain-only model's) path score beats the
    /// general model's by at least this, in nats per 10 ms frame. Chosen on the chess development set
    /// (scripts/make-chess-set.sh; docs/lm.md): its general sentences reach at most 0.27, its moves at least 0.42.
    static let rejectionMargin = 0.35

    /// The n-best list with the result's own text first (the search over the lattice can rank another reading
    /// a little higher than the best path it came from), then the others by falling score; scores relative to
    /// the best one's, so none is above 0.
    static func bestFirst(_ list: [(text: String, score: Double, words: [Word])], text: String)
        -> [(text: String, score: Double, words: [Word])]
    {
        guard !list.isEmpty else { return [] }
        let top = list.map(\.score).max() ?? 0
        var rest = list.filter { $0.text != text }.map { ($0.text, $0.score - top, $0.words) }
        rest.sort { $0.1 > $1.1 }
        let own = list.first { $0.text == text }.map { ($0.text, $0.score - top, $0.words) } ?? (text, 0, [])
        return Array(([own] + rest).prefix(list.count))
    }

    /// Each word with the words other readings have over most of its time span (half of the shorter of the
    /// two), in the readings' order, without repeats or itself.
    static func wordAlternatives(_ words: [Word], _ readings: [[Word]]) -> [Word] {
        words.map { word in
            var w = word
            for reading in readings {
                for other in reading where other.text != word.text && !w.alternatives.contains(other.text) {
                    let overlap =
                        min(word.range.end, other.range.end) - max(word.range.start, other.range.start)
                    if overlap >= 0.5 * min(word.range.duration, other.range.duration) && overlap > 0 {
                        w.alternatives.append(other.text)
                    }
                }
            }
            return w
        }
    }

    /// The index of the text whose words differ least from the others' (summed word edit distance, the core's
    /// `editDistance` over words); the first of equals.
    static func medoid(_ texts: [String]) -> Int {
        guard texts.count > 2 else { return 0 }
        let words = texts.map { $0.split(separator: " ") }
        var best = 0
        var bestSum = Int.max
        for i in words.indices {
            var sum = 0
            for j in words.indices where j != i { sum += editDistance(words[i], words[j]) }
            if sum < bestSum { (best, bestSum) = (i, sum) }
        }
        return best
    }

    /// Decodes `samples` whole with each decoder, the k-th from `skips[k]` samples on, on up to `threads`
    /// threads (this one alone when it is 1): thread t decodes phases t, t + threads, ...
    static func decodeAtOnce(
        _ decoders: [SphinxDecoder], _ samples: UnsafeBufferPointer<Int16>, skips: [Int], newStream: Bool,
        threads: Int? = nil
    ) throws {
        let shared = SharedSamples(samples: samples)
        @Sendable func decode(_ k: Int) throws {
            let d = decoders[k]
            try d.startUtterance(newStream: newStream)
            try d.process(UnsafeBufferPointer(rebasing: shared.samples[skips[k]...]), wholeUtterance: true)
            try d.endUtterance()
        }
        let count = decoders.count
        let width = min(max(threads ?? count, 1), count)
        guard width > 1 else {
            for k in 0..<count { try decode(k) }
            return
        }
        let outcomes = Mutex<[Int: any Error]>([:])
        DispatchQueue.concurrentPerform(iterations: width) { t in
            for k in stride(from: t, to: count, by: width) {
                do { try decode(k) } catch { outcomes.withLock { $0[k] = error } }
            }
        }
        if let first = outcomes.withLock({ $0.min { $0.key < $1.key }?.value }) { throw first }
    }

    /// The utterance's samples, read by every phase's thread at once.
    struct SharedSamples: @unchecked Sendable {
        // Unchecked: read only, and only while `decodeAtOnce` runs, inside the caller's withUnsafeBufferPointer
        // (concurrentPerform returns when every phase has finished); each decoder is used by one thread.
        let samples: UnsafeBufferPointer<Int16>
    }

    /// Decodes the held utterance whole with `d`.
    private func decodeHeld(_ d: SphinxDecoder, newStream: Bool) throws {
        try held.withUnsafeBufferPointer { try Self.decodeAtOnce([d], $0, skips: [0], newStream: newStream) }
    }

    /// Emitted when new models take over after a reload request, or could not be loaded.
    public static let modelChanged: EventKind = "modelChanged"

    /// Loads the models for `c` into `slot`, on the thread that asked for the reload (never the graph's: the
    /// audio goes on meanwhile); why they could not be loaded, or `nil`; the notes of their loading (a spec
    /// built again: its guessed pronunciations); whether a failure dropped models an earlier request had loaded.
    @discardableResult
    static func load(_ c: NodeConfig, controlConnected: Bool, into slot: LoadSlot) -> (String?, [String], Bool) {
        let requested = Date().timeIntervalSince1970
        let ticket = slot.ticket()
        do {
            let models = try Models(c, controlConnected: controlConnected)
            // A decoder the recognizer holds is kept when its model is the same and its files have not changed
            // (a graph's general model beside a new domain model; everything, when nothing changed); the others
            // are loaded anew, not taken from the pool (its idle decoders can be older than the files).
            var keep = slot.held.withLock { $0 }
            let decoders = try models.decoders { model, streaming -> Pending in
                let current = Held(model: model, streaming: streaming, stamps: model.fileStamps())
                if let i = keep.firstIndex(of: current) {
                    keep.remove(at: i)
                    return .kept(current)
                }
                let d = try SphinxDecoder(model: model)
                d.isStreaming = streaming
                return .loaded(d)
            }
            let loaded = Loaded(
                models: models, decoders: decoders, config: c, loadSeconds: Date().timeIntervalSince1970 - requested)
            slot.deliver(.success(loaded), ticket: ticket)
            return (nil, models.notes, false)
        } catch {
            let dropped = slot.deliver(.failure("\(error)"), ticket: ticket)
            return ("\(error)", [], dropped)
        }
    }

    /// Between utterances: switches to models loaded after a reload request, once they are ready.
    private func takeNewModels(output: NodeOutput) throws {
        guard
            let outcome = slot.value.withLock({ o -> LoadSlot.Outcome? in
                defer { o = nil }
                return o
            })
        else { return }
        switch outcome {
        case .failure(let reason):
            try output.emit(
                .custom(
                    CustomEvent(
                        kind: Self.modelChanged, node: name, time: utteranceEnd,
                        fields: ["ok": .boolean(false), "reason": .string(reason), "lm": .string(models.languageModel)])
                ))
        case .success(let new):
            let started = Date().timeIntervalSince1970
            var old = [decoder, wholeDecoder, referenceDecoder, rejectionDecoder].compactMap { $0 } + phaseDecoders
            var kept = 0
            var chosen = new.decoders.map { pending -> SphinxDecoder? in
                switch pending {
                case .loaded(let d): return d
                case .kept(let wanted):
                    // The one checked then: an earlier reload taken since may have replaced it.
                    guard let i = old.firstIndex(where: { Held($0) == wanted }) else { return nil }
                    kept += 1
                    return old.remove(at: i)
                }
            }
            guard let d = chosen.unwrapped() else {
                // Never load on this thread: the old models stay, and the same request loads again beside the
                // audio (what it would have kept is gone); its outcome comes at a later utterance boundary.
                let (config, control, slot) = (new.config, controlConnected, slot)
                // Those it loaded are freed on that thread too (the box holds their last reference).
                let unused = DecoderBox(chosen.all.compactMap { $0 })
                chosen = DecoderSet(stream: nil)
                Thread.detachNewThread {
                    unused.release()
                    RecognizerNode.load(config, controlConnected: control, into: slot)
                }
                return
            }
            (decoder, wholeDecoder, referenceDecoder, rejectionDecoder) = (d.stream, d.whole, d.reference, d.rejection)
            phaseDecoders = d.phases
            slot.note(d)
            // The others are not pooled (their files may be stale); they are freed on another thread, which holds
            // the last reference (emptying the box there).
            let box = DecoderBox(old)
            old.removeAll()
            Thread.detachNewThread { box.release() }
            models = new.models
            streamBegins = true
            try output.emit(
                .custom(
                    CustomEvent(
                        kind: Self.modelChanged, node: name, time: utteranceEnd,
                        fields: [
                            "ok": .boolean(true), "lm": .string(models.languageModel),
                            "loadSeconds": .number((new.loadSeconds * 1000).rounded() / 1000),
                            "keptDecoders": .integer(kept),
                            "loadedDecoders": .integer(d.all.count - kept),
                            "switchMilliseconds": .number(
                                ((Date().timeIntervalSince1970 - started) * 1e5).rounded() / 100),
                        ])))
        }
    }

    /// Decoders on their way to be freed on another thread.
    final class DecoderBox: @unchecked Sendable {
        // Unchecked: filled on the recognizer's thread, emptied once on the freeing thread, never both at once.
        private var decoders: [SphinxDecoder]
        init(_ decoders: [SphinxDecoder]) { self.decoders = decoders }
        func release() { decoders.removeAll() }
    }

    /// Where the loading thread leaves its decoders.
    final class LoadSlot: Sendable {
        enum Outcome: @unchecked Sendable {
            case success(Loaded)
            case failure(String)
        }
        let value = Mutex<Outcome?>(nil)
        /// What the recognizer's decoders were loaded from: a reload keeps those still current.
        let held = Mutex<[Held]>([])
        /// Reload requests in the order they began, and the latest whose outcome was delivered.
        private let order = Mutex<(issued: Int, delivered: Int)>((0, 0))

        /// A number for a reload request beginning now.
        func ticket() -> Int {
            order.withLock {
                $0.issued += 1
                return $0.issued
            }
        }

        /// Hands the node a request's outcome, unless a request that began later has already handed over its
        /// own (the latest request wins, not the one that finished last). Returns whether it replaced models an
        /// earlier request loaded that the node had not yet taken (they are dropped).
        @discardableResult
        func deliver(_ outcome: Outcome, ticket: Int) -> Bool {
            order.withLock { o in
                guard ticket > o.delivered else { return false }
                o.delivered = ticket
                return value.withLock { old in
                    defer { old = outcome }
                    if case .success? = old { return true }
                    return false
                }
            }
        }

        /// Notes the decoders the recognizer now holds (on its own thread, when it takes them).
        func note(_ d: Decoders) {
            let now = d.all.map(Held.init)
            held.withLock { $0 = now }
        }
    }

    public func close() {
        guard let decoder else { return }
        if inUtterance && !wholeUtterances && atPause == nil { try? decoder.endUtterance() }
        inUtterance = false
        atPause = nil
        held.removeAll()
        pending.removeAll()
        pool.checkin(decoder)
        self.decoder = nil
        if let wholeDecoder { pool.checkin(wholeDecoder) }
        wholeDecoder = nil
        for d in phaseDecoders { pool.checkin(d) }
        phaseDecoders = []
        if let referenceDecoder { pool.checkin(referenceDecoder) }
        referenceDecoder = nil
        if let rejectionDecoder { pool.checkin(rejectionDecoder) }
        rejectionDecoder = nil
    }
}
