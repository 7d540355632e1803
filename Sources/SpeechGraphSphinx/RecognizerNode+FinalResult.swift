import Foundation
import SpeechGraphCore
import Synchronization

/// An utterance's end: its final result, from the engines' readings of it (`RecognitionEngine`), composed by
/// `FinalResultComposer`; whole-utterance decoding (utterance mode, the final pass): the held utterance through
/// several decoders at once, one a phase, on as many threads as the compute gate has slots.
extension RecognizerNode {
    /// The rest of the utterance decoded, and its final result: the engines read the utterance (the strategy this
    /// node's mode and settings choose; whole utterances only through `RecognitionEngine`), `composer` decides
    /// what the result is.
    func finalResult(_ streamed: SphinxDecoder) throws -> Transcription {
        var decoder: any RecognitionEngine = streamed
        if !wholeUtterances { try decodePending() }
        if finalPass, let whole = wholeDecoder {
            try streamed.endUtterance()
            decoder = whole
        }
        let range = TimeRange(start: utteranceStart, end: utteranceEnd)
        func reading(_ d: any RecognitionEngine, from start: Double) -> Reading {
            d.reading(from: start, words: includeWords, alternatives: alternativeCount)
        }
        guard wholeUtterances || finalPass else {
            try decoder.endUtterance()
            return composer.compose(
                phases: [reading(decoder, from: utteranceStart)], peak: utterancePeak, utterance: utterance,
                range: range)
        }
        // Each phase decodes the utterance with its frames shifted by a fraction of a frame.
        let newStream = streamBegins
        streamBegins = false
        // Phase k on engine k, all at once (each carries its own noise estimate from one utterance to the next, as
        // one engine does): the final result waits for one decoding, not for `phases` of them.
        let decoders = [decoder] + phaseDecoders.map { $0 as any RecognitionEngine }
        let skips = decoders.indices.map { min($0 * (sampleRate / 100) / decoders.count, held.count) }
        // As many at once as the gate has slots free (this one holds one): never more than the cores.
        let extra = gate.takeFreeSlots(upTo: decoders.count - 1)
        defer { gate.returnSlots(extra) }
        try held.withUnsafeBufferPointer { samples in
            try RecognizerNode.decodeAtOnce(decoders, samples, skips: skips, newStream: newStream, threads: 1 + extra)
        }
        let phases = zip(decoders, skips).map { d, skip in
            reading(d, from: utteranceStart + Double(skip) / Double(sampleRate))
        }
        var general: Reading?
        var domainScore: (score: Double, frames: Int)?
        if let reference = referenceDecoder as (any RecognitionEngine)? {
            // The same audio through the general model, as the first phase heard it; its words only when the
            // mixture may choose its reading.
            try decodeHeld(reference, newStream: newStream)
            general =
                models.mixtureWeight != nil
                ? reading(reference, from: utteranceStart)
                : reference.reading(from: utteranceStart, words: false, alternatives: 0)
            if let spec = rejectionDecoder as (any RecognitionEngine)? {
                try decodeHeld(spec, newStream: newStream)
                domainScore = spec.reading(from: utteranceStart, words: false, alternatives: 0).score
            }
        }
        held.removeAll(keepingCapacity: true)
        return composer.compose(
            phases: phases, general: general, domainScore: domainScore, peak: utterancePeak, utterance: utterance,
            range: range)
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

    /// Decodes the held utterance whole with `d`.
    func decodeHeld(_ d: any RecognitionEngine, newStream: Bool) throws {
        try held.withUnsafeBufferPointer { try Self.decodeAtOnce([d], $0, skips: [0], newStream: newStream) }
    }
}
