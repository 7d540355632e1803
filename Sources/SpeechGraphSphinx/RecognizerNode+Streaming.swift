import Foundation
import SpeechGraphCore

/// Streaming mode: the batches decoded as the audio comes, at the gate, with the lookahead's cepstral mean.
extension RecognizerNode {
    /// Streaming mode: decodes the gathered batch. `yielding`: a few frames at a time, letting another graph's
    /// end of utterance (urgent) take the gate's slot in between.
    func decodePending(yielding: Bool = false) throws {
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
                if start > 0 && yielding && batchHoldsSlot && !backlog.hasEvents {
                    gate.yieldToUrgentWork(deadline: batchArrival)
                }
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
    func beginDecoding(_ decoder: SphinxDecoder, head: UnsafeBufferPointer<Int16>?) throws {
        if speculates { meanBefore = decoder.meanState }
        decodedSamples = 0
        if let head, let mean = decoder.cepstralMean(of: head) { decoder.setCepstralMean(mean) }
        try decoder.startUtterance()
    }

    /// One call of the decoder: the samples decoded and, past the lookahead, the mean moved on to that of the
    /// utterance's frames decoded so far, every `meanUpdateSamples`. With the second pass at pauses, its size noted.
    func feed(_ decoder: SphinxDecoder, _ samples: UnsafeBufferPointer<Int16>) throws {
        try decoder.process(samples)
        decodedSamples += samples.count
        if lookaheadSamples > 0 && decodedSamples > lookaheadSamples && decodedSamples % meanUpdateSamples == 0 {
            decoder.updateCepstralMean()
        }
        if speculates { feeds.append(samples.count) }
    }

    /// Runs a batch of decoding at the gate: urgent when an utterance's end already waits behind its audio, or once
    /// an end comes behind it while it waits (on a worker thread: on the graph thread nothing comes behind it).
    ///
    /// While this node's own final pass decodes (holding a slot, and those it found free), the stream's batches go
    /// on beside it without one: a batch is milliseconds of work, and the next utterance's volatile results must not
    /// wait seconds for the phases of a long utterance before it.
    func runBatch<T>(deadline: Double, _ body: () throws -> T) throws -> T {
        if finalPassDecoding {
            batchHoldsSlot = false
            defer { batchHoldsSlot = true }
            return try body()
        }
        let endCame = backlog.isOnWorker ? { [backlog] in backlog.hasEvents } : nil
        return try gate.run(urgent: backlog.hasEvents, deadline: deadline, becomesUrgent: endCame, body)
    }
}
