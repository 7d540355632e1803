import Foundation
import SpeechGraphCore
import SpeechGraphWhisper
import Synchronization

/// The `recognizer` node: PocketSphinx over 16-bit audio at the model's rate.
///
/// Without utterance boundaries from upstream, the whole stream is one utterance, and its final
/// result is emitted when the stream ends or the graph stops.
public final class RecognizerNode: GraphNode {

    /// The `results` presets.
    public enum Results: String, CaseIterable, Sendable {
        case progressive
        case finalOnly = "final-only"
        case fast
    }

    let name: String
    let controlConnected: Bool
    /// The models this recognizer decodes with; replaced whole when the graph is asked to reload them.
    var models: Models
    /// What building a spec on first use had to say (guessed pronunciations).
    public let notes: [String]
    let includeWords: Bool
    /// The n-best list's length for final results; 0: none.
    let alternativeCount: Int
    /// Turns posteriors into probabilities of being right; `nil`: posteriors as they are.
    let calibration: ConfidenceCalibration?
    /// With `engine: whisper`: what decodes each utterance for its final result (PocketSphinx streams the volatile
    /// ones), from its setup (the model and Python found, the options of its requests).
    var whisper: WhisperEngine?
    let whisperSetup: WhisperSetup?
    /// With Whisper, and with the final pass: final results are decoded on another thread while the recognizer goes
    /// on (live input: the next utterance streams; `RecognizerNode+LaterFinals`); `laterFinals` waits for them, in
    /// order.
    var laterFinals: [LaterFinal] = []
    /// The final pass's jobs, one at a time, in order.
    let finalPasses = DispatchQueue(label: "speechgraph.recognizer.final-pass")
    /// The batch being decoded holds a slot at the gate (see `runBatch`).
    var batchHoldsSlot = true
    /// Utterances waiting to go to the whisper engine together (`window: packed`), and how much audio a pack
    /// holds before it goes (0: each utterance goes alone, when it ends).
    var pack = WhisperPack()
    let packSamples: Int
    /// With `window: packed`: this stream's name at the engine, which reads each pack after what it wrote for the
    /// packs before (`WhisperOptions.context`); the node's own, so no other stream's text is read.
    let packContext: String?
    let wakeup: NodeWakeup
    /// Decides each final result from what the decoders read (`FinalResultComposer`).
    var composer: FinalResultComposer {
        FinalResultComposer(
            node: name, mixtureWeight: models.mixtureWeight, rejects: models.rejects, calibration: calibration)
    }
    let wholeUtterances: Bool
    /// Streaming mode with `final-pass`: the held utterance is decoded again, whole, for the final result.
    let finalPass: Bool
    var wholeDecoder: SphinxDecoder?
    /// With `phases` above 1: a whole-utterance decoder for each phase after the first, decoding beside it.
    var phaseDecoders: [SphinxDecoder] = []
    var referenceDecoder: SphinxDecoder?
    var rejectionDecoder: SphinxDecoder?
    /// Where models loaded after a reload request wait for the next utterance boundary (see `takeNewModels`).
    let slot = LoadSlot()
    let volatileFrames: Int64
    var framesSinceVolatile: Int64 = 0
    var lastVolatile = ""
    /// Utterance mode, `final-pass` and the second pass at pauses (`speculates`): the samples of the utterance so
    /// far.
    var held: [Int16] = []
    /// Streaming mode: samples waiting to be decoded as one batch.
    var pending: [Int16] = []
    /// When the first block of `pending` arrived: its deadline at the gate.
    var batchArrival = 0.0
    let batchSamples: Int
    /// `first-batch`: the batch until the utterance's first volatile result, within its first second.
    let firstBatchSamples: Int
    /// The batch gathered before the decoder is woken now: the lookahead, the first batch, or the batch.
    var nextBatchSamples: Int {
        if lookingAhead { return lookaheadSamples }
        guard firstBatchSamples > 0, volatileFrames > 0, lastVolatile.isEmpty, utteranceSamples < sampleRate else {
            return batchSamples
        }
        return min(firstBatchSamples, batchSamples)
    }
    /// Streaming mode with `lookahead`: samples held at the start of each utterance to learn its cepstral mean.
    let lookaheadSamples: Int
    /// The decoder has not started the utterance yet: its first `lookaheadSamples` are gathering in `pending`.
    var lookingAhead = false
    /// With a lookahead: samples of the utterance decoded so far, and how often the mean follows them.
    var decodedSamples = 0
    let meanUpdateSamples: Int
    /// A batch is decoded this many samples at a time when other graphs' urgent work may need the gate.
    let yieldSamples: Int
    let pool: SphinxDecoderPool
    /// Decoding waits for a slot here: ends of utterances first (see ComputeGate).
    let gate: ComputeGate
    let backlog: WorkerBacklog
    /// Streaming mode: the decoder has seen audio since the last volatile check.
    var decodedSinceCheck = false
    var decoder: SphinxDecoder?
    var pcm: UnsafeMutableBufferPointer<Int16>
    var inUtterance = false
    /// `results: fast` with a vad in front: utterances end at speechPaused.
    let endsAtPauses: Bool
    /// After speechPaused ended the utterance: the audio that follows is the pause's, not speech, until
    /// speechResumed (or speechEnded, or speechStarted).
    var paused = false
    /// `second-pass-at-pause`: the second pass may run at speechPaused (`speculates` says whether it does).
    let secondPassAtPause: Bool
    /// `nil` when no result waits at a pause.
    var atPause: PauseState?
    /// With the second pass at pauses: the samples each of the decoder's calls took in this utterance, in order,
    /// and the live mean's state before the utterance began, to decode it again exactly as it was.
    var feeds: [Int] = []
    var meanBefore: SphinxDecoder.MeanState?
    /// Audio came while a result waited at a pause: this recognizer's audio does not come through the vad (which
    /// holds a pause's audio back), so pauses no longer work out results here.
    var audioDuringPauses = false
    /// Samples of this utterance decoded again after pauses: the next pause works out its result only while this is
    /// at most half the utterance so far, so that an utterance's first pass, however many pauses it has, costs at
    /// most 2.5 times what it costs without.
    var decodedAgainSamples = 0
    /// Final results worked out at a pause, and utterances decoded again because the speech resumed.
    var resultsAtPauses = 0
    var decodedAgain = 0
    /// With the whisper engine and `second-pass-at-pause`: the engine's decoding of the utterance begun at
    /// speechPaused (its final result if the speech ends there); `nil` when none. Audio after the pause drops it,
    /// so while it is set the utterance's audio is what the engine was given.
    var whisperAtPause: LaterFinal?
    /// Whisper decodings begun at pauses: taken at the end of speech, and dropped (the speech went on).
    var whisperPausesTaken = 0
    var whisperPausesDropped = 0
    /// With `window: packed`: utterances of sustained tones read alone, outside the packs (`SustainedTones`).
    var tonesReadAlone = 0
    /// The next utterance begins a new stream (the first one, and the first after a discontinuity).
    var streamBegins = true
    var utterance = 0
    var utteranceStart = 0.0
    var utteranceEnd = 0.0
    /// Splitting long utterances: energy of each 10 ms of the utterance so far.
    let maxSamples: Int
    let lookbackSamples: Int
    var energies: ChunkEnergies
    var utteranceSamples = 0
    /// The largest sample of the utterance so far, in 16-bit steps.
    var utterancePeak: Float = 0
    var sampleRate: Int

    public init(_ context: NodeContext) throws {
        let c = context.config
        name = c.name
        let rate = Int(c.number(of: "rate").rounded())
        controlConnected = context.connectedInputs.contains("control")
        includeWords = c.bool(of: "words")
        alternativeCount = c.integer(of: "alternatives")
        whisperSetup = c.string(of: "engine") == "whisper" ? try WhisperSetup(c) : nil
        // PocketSphinx's posteriors and Whisper's word probabilities each have a calibration of their own.
        calibration = c.string(of: "confidence") == "calibrated" ? (whisperSetup == nil ? .standard : .whisper) : nil
        packSamples = c.string(of: "window") == "packed" ? WhisperPack.windowSamples : 0
        packContext = packSamples > 0 ? UUID().uuidString : nil
        wakeup = context.wakeup
        let results = Results(rawValue: c.string(of: "results")) ?? .progressive
        models = try Models(c, controlConnected: controlConnected)
        notes = models.notes
        wholeUtterances = models.wholeUtterances
        finalPass = models.finalPass
        // Reload requests for this graph (SIGHUP on `speechgraph run`, `RunningGraph.reloadModels`).
        let reloads = context.resources.required(ModelReloads.self)
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
        firstBatchSamples = Int(c.number(of: "first-batch") * Double(rate))
        lookaheadSamples = models.wholeUtterances ? 0 : Int(c.number(of: "lookahead") * Double(rate))
        meanUpdateSamples = rate / 10
        yieldSamples = rate / 50
        pending.reserveCapacity(max(batchSamples, lookaheadSamples) + max(context.maxBlockFrames, 1))
        maxSamples = Int(c.number(of: "max-utterance") * Double(rate))
        lookbackSamples = min(5 * rate, maxSamples / 2)
        energies = ChunkEnergies(chunkSamples: rate / 100)
        let volatile = c.number(of: "volatile")
        volatileFrames =
            wholeUtterances || volatile <= 0 || results == .finalOnly
            ? 0 : max(1, Int64((volatile * Double(rate)).rounded()))
        // The graph's own pool (or one its maker handed it on purpose): never another graph's decoders.
        pool = context.resources.required(SphinxDecoderPool.self)
        gate = context.resources.required(ComputeGate.self)
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
        return min(split, max(0, nextBatchSamples - pending.count))
    }

    public func prepare() throws {
        let d = try models.decoders { try pool.checkout($0, streaming: $1) }
        (decoder, wholeDecoder, referenceDecoder, rejectionDecoder) = (d.stream, d.whole, d.reference, d.rejection)
        phaseDecoders = d.phases
        slot.note(d)
        whisper = try whisperSetup?.engine()
        streamBegins = true
    }

    public func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        if !laterFinals.isEmpty { try emitLaterFinals(output: output) }
        guard !paused else { return }
        if !inUtterance { try takeNewModels(output: output) }
        guard let decoder else { return }
        if whisperAtPause != nil {
            // Audio during a pause: it does not come through the vad; what the engine began is not the end.
            audioDuringPauses = true
            dropWhisperAtPause()
        }
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
            energies.reset()
            utteranceSamples = 0
            utterancePeak = 0
            // Streamed without final-pass or Whisper, the utterance's samples are held only for pauses
            // (`speculates`).
            if !wholeUtterances && !finalPass && whisper == nil { held.removeAll(keepingCapacity: true) }
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
            }
            energies.add(UnsafeBufferPointer(rebasing: pcm[0..<n]))
            utteranceSamples += n
            if wholeUtterances || finalPass || speculates || whisper != nil {
                held.append(contentsOf: UnsafeBufferPointer(rebasing: pcm[0..<n]))
            }
            // After a result at a pause, audio waits for speechResumed (the decoder's utterance has ended).
            if !wholeUtterances && atPause == nil {
                if pending.isEmpty { batchArrival = backlog.arrival }
                pending.append(contentsOf: UnsafeBufferPointer(rebasing: pcm[0..<n]))
                if pending.count >= nextBatchSamples {
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
        if !laterFinals.isEmpty { try emitLaterFinals(output: output) }
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
        case .speechPaused(_, let time) where inUtterance && whisperAtPause == nil && whispersAtPauses:
            // Most pauses this long end speech: Whisper begins the utterance's final result now, from the audio
            // the end of speech would give it; the end of speech takes it.
            beginWhisperAtPause(at: time)
        case .speechResumed where whisperAtPause != nil:
            dropWhisperAtPause()
        default:
            break
        }
    }

    public func finish(output: NodeOutput) throws {
        try endUtterance(output: output)
        if let whisper { submitPack(whisper) }
        try emitLaterFinals(output: output, waiting: true)
    }

    /// The audio was interrupted: the utterance in flight ends here and its final result is delivered.
    public func discontinuity(port: Int, output: NodeOutput) throws {
        try endUtterance(output: output)
        // What follows is another stream: no context from this one.
        if let whisper { submitPack(whisper) }
        paused = false
        streamBegins = true
    }

    func endUtterance(output: NodeOutput) throws {
        guard inUtterance, let decoder else { return }
        inUtterance = false
        if var result = atPause?.result {
            // Worked out at the pause; the utterance's end is now known.
            atPause = nil
            result.range = TimeRange(start: result.range.start, end: max(result.range.end, utteranceEnd))
            try output.emit(.result(result))
            return
        }
        // Whisper decodes on its own process's thread: the recognizer goes on meanwhile (live input: the next
        // utterance streams), and each final result goes out when it is decoded, in order.
        if let whisper {
            if let begun = whisperAtPause {
                whisperAtPause = nil
                // Begun at the pause, with the audio the end of speech gives it, and ending where the speech did.
                if begun.range.end == utteranceEnd {
                    try finishBegunAtPause(begun, streamed: decoder)
                    return
                }
                whisperPausesDropped += 1
            }
            try finishLater(whisper, streamed: decoder)
            return
        }
        // So does the final pass, on a queue of its own: the next utterance's volatile results do not wait for it.
        if finalPass, let wholeDecoder {
            try finishOnQueue(wholeDecoder, streamed: decoder)
            return
        }
        // Someone waits for this result: it goes ahead of other graphs' batches.
        let result = try gate.run(urgent: true) { try finalResult(decoder) }
        try output.emit(.result(result))
    }

    public func close() {
        guard let decoder else { return }
        waitForFinalPasses()
        if inUtterance && !wholeUtterances && atPause == nil { try? decoder.endUtterance() }
        inUtterance = false
        atPause = nil
        whisperAtPause = nil
        held.removeAll()
        pack = WhisperPack()
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
