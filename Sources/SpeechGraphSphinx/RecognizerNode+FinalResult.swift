import Foundation
import SpeechGraphCore
import Synchronization

/// An utterance's end: its final result, from the engines' readings of it (`RecognitionEngine`), composed by
/// `FinalResultComposer`; whole-utterance decoding (utterance mode, the final pass: `WholeDecoding`): the held
/// utterance through several decoders at once, one a phase, on as many threads as the compute gate has slots free.
extension RecognizerNode {
    /// The rest of the utterance decoded, and its final result: the engines read the utterance (the strategy this
    /// node's mode and settings choose; whole utterances only through `RecognitionEngine`), `composer` decides
    /// what the result is.
    /// (The final pass's: `finishOnQueue`.)
    func finalResult(_ decoder: SphinxDecoder) throws -> Transcription {
        if !wholeUtterances { try decodePending() }
        let range = TimeRange(start: utteranceStart, end: utteranceEnd)
        func reading(_ d: any RecognitionEngine, from start: Double) -> Reading {
            d.reading(from: start, words: includeWords, alternatives: alternativeCount)
        }
        guard wholeUtterances else {
            try decoder.endUtterance()
            return composer.compose(
                phases: [reading(decoder, from: utteranceStart)], peak: utterancePeak, utterance: utterance,
                range: range)
        }
        let newStream = streamBegins
        streamBegins = false
        let whole = try held.withUnsafeBufferPointer {
            try wholeDecoding(first: decoder).decode($0, from: utteranceStart, newStream: newStream)
        }
        held.removeAll(keepingCapacity: true)
        return composer.compose(
            phases: whole.phases, general: whole.general, domainScore: whole.domainScore, peak: utterancePeak,
            utterance: utterance, range: range)
    }

    /// The decoders that read an utterance whole, `first` the first phase's.
    func wholeDecoding(first: any RecognitionEngine) -> WholeDecoding {
        WholeDecoding(
            phases: [first] + phaseDecoders.map { $0 as any RecognitionEngine }, reference: referenceDecoder,
            rejection: rejectionDecoder, mixes: models.mixtureWeight != nil, words: includeWords,
            alternatives: alternativeCount, sampleRate: sampleRate, gate: gate)
    }

    /// Decodes `samples` whole with each decoder, the k-th from `skips[k]` samples on, on up to `threads`
    /// threads (this one alone when it is 1): thread t decodes phases t, t + threads, ...
    static func decodeAtOnce(
        _ decoders: [any RecognitionEngine], _ samples: UnsafeBufferPointer<Int16>, skips: [Int], newStream: Bool,
        threads: Int? = nil
    ) throws {
        let shared = SharedSamples(samples: samples)
        let engines = Engines(engines: decoders)
        @Sendable func decode(_ k: Int) throws {
            let d = engines.engines[k]
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

    /// The engines of the phases, each used by one thread.
    struct Engines: @unchecked Sendable {
        // Unchecked: while `decodeAtOnce` runs, thread t alone uses engines t, t + threads, ...
        let engines: [any RecognitionEngine]
    }
}

/// An utterance read whole: each phase's decoder, all at once (each carries its own noise estimate from one utterance
/// to the next, as one engine does: the final result waits for one decoding, not for `phases` of them); with a
/// domain model, the general one beside it, and the rejection spec.
struct WholeDecoding: @unchecked Sendable {
    // Unchecked: the decoders are used by one thread at a time: the node's, or (the final pass) the final-pass
    // queue's, while its job runs; the node waits for the queue before it touches them again.
    let phases: [any RecognitionEngine]
    let reference: (any RecognitionEngine)?
    let rejection: (any RecognitionEngine)?
    /// The mixture may choose the general reading: its words are needed too.
    let mixes: Bool
    let words: Bool
    let alternatives: Int
    let sampleRate: Int
    let gate: ComputeGate

    struct Readings: Sendable {
        var phases: [Reading]
        var general: Reading?
        var domainScore: (score: Double, frames: Int)?
    }

    /// What each decoder read of `held`, an utterance that starts at `start` s. Only inside a `gate.run` body:
    /// the phases take the gate's free slots.
    func decode(_ held: UnsafeBufferPointer<Int16>, from start: Double, newStream: Bool) throws -> Readings {
        // Each phase decodes the utterance with its frames shifted by a fraction of a frame.
        let skips = phases.indices.map { min($0 * (sampleRate / 100) / phases.count, held.count) }
        // As many at once as the gate has slots free (this one holds one): never more than the cores.
        let extra = gate.takeFreeSlots(upTo: phases.count - 1)
        defer { gate.returnSlots(extra) }
        try RecognizerNode.decodeAtOnce(phases, held, skips: skips, newStream: newStream, threads: 1 + extra)
        var readings = Readings(
            phases: zip(phases, skips).map { d, skip in
                d.reading(from: start + Double(skip) / Double(sampleRate), words: words, alternatives: alternatives)
            })
        if let reference {
            // The same audio through the general model, as the first phase heard it; its words only when the
            // mixture may choose its reading.
            try RecognizerNode.decodeAtOnce([reference], held, skips: [0], newStream: newStream)
            readings.general =
                mixes
                ? reference.reading(from: start, words: words, alternatives: alternatives)
                : reference.reading(from: start, words: false, alternatives: 0)
            if let rejection {
                try RecognizerNode.decodeAtOnce([rejection], held, skips: [0], newStream: newStream)
                readings.domainScore = rejection.reading(from: start, words: false, alternatives: 0).score
            }
        }
        return readings
    }
}
