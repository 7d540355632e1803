import Foundation
import SpeechGraphCore

/// The second pass at pauses (`second-pass-at-pause`): the final result worked out at speechPaused, and the
/// utterance decoded again, exactly as it was, when the speech resumes.
extension RecognizerNode {
    /// A final result worked out at speechPaused (the decoder's utterance ended there), and how the utterance's
    /// decoding stood then: what the speech resuming restores.
    struct PauseState {
        var result: Transcription
        /// The decoder's calls made before the pause (`feeds`), and the samples still waiting in `pending`.
        var feeds: Int
        var pending: Int
        var lookingAhead: Bool
        var decodedSinceCheck: Bool
        var batchArrival: Double
    }

    /// Whether the final result is worked out at speechPaused: `second-pass-at-pause`, in streaming mode, when the
    /// stream's decoder has the second pass to do (there is little to gain without it).
    var speculates: Bool {
        secondPassAtPause && !audioDuringPauses && !wholeUtterances && !finalPass && models.stream.secondPass
            && models.stream.jsgf == nil && whisperSetup == nil
    }

    /// The speech went on after a pause whose final result was worked out: the decoder starts the utterance over
    /// from the live mean it began with, and makes the calls it made before the pause again, on the same samples
    /// (the same lookahead, the mean moved at the same samples); the samples that waited then wait again. What
    /// follows decodes exactly as if the utterance had not ended.
    func resumeAfterPause() throws {
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
}
