import Foundation
import SpeechGraphCore
import SpeechGraphWhisper
import Synchronization

/// Final results decoded on another thread: with the whisper engine on live input, an utterance's audio goes to the
/// engine when it ends, and the recognizer goes on at once with the next utterance's audio (its volatile results go
/// out meanwhile). Each final result goes out, in utterance order, as soon as it and those before it are decoded: the
/// engine's answer posts the node's wakeup (the graph then calls `wake(output:)` on the node's thread), and every
/// call into the node looks too. `finish` waits for them all.
extension RecognizerNode {
    /// An utterance whose final result another thread decodes.
    final class LaterFinal: Sendable {
        let utterance: Int
        let range: TimeRange
        let peak: Float
        private let outcome = Mutex<Result<WhisperTranscript, SpeechGraphError>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(utterance: Int, range: TimeRange, peak: Float) {
            (self.utterance, self.range, self.peak) = (utterance, range, peak)
        }

        func complete(_ result: Result<WhisperTranscript, SpeechGraphError>) {
            outcome.withLock { $0 = result }
            done.signal()
        }

        /// Its transcript or failure, once decoded; `waiting`: waits for it (the engine's own watchdog ends a hang).
        func result(waiting: Bool) -> Result<WhisperTranscript, SpeechGraphError>? {
            if waiting, outcome.withLock({ $0 == nil }) {
                done.wait()
                done.signal()
            }
            return outcome.withLock { $0 }
        }
    }

    /// Hands the utterance to the engine without waiting for its final result; its streamed reading ends here.
    func finishLater(_ whisper: WhisperEngine, streamed: SphinxDecoder) throws {
        if !wholeUtterances {
            try decodePending()
            try streamed.endUtterance()
        }
        let later = LaterFinal(
            utterance: utterance, range: TimeRange(start: utteranceStart, end: utteranceEnd), peak: utterancePeak)
        laterFinals.append(later)
        whisper.start()
        held.withUnsafeBufferPointer { whisper.append($0) }
        held.removeAll(keepingCapacity: true)
        let wakeup = self.wakeup
        whisper.finishLater { result in
            later.complete(result)
            wakeup.post()
        }
    }

    /// Emits the final results decoded so far, in order (`waiting`: all of them, waiting for each); a failed one
    /// fails the node, after those before it went out.
    func emitLaterFinals(output: NodeOutput, waiting: Bool = false) throws {
        while let first = laterFinals.first, let result = first.result(waiting: waiting) {
            laterFinals.removeFirst()
            let transcript = try result.get()
            let reading = Reading(
                text: transcript.text,
                words: includeWords ? WhisperEngine.words(of: transcript, from: first.range.start) : [], nbest: [])
            try output.emit(
                .result(
                    composer.compose(
                        phases: [reading], peak: first.peak, utterance: first.utterance, range: first.range)))
        }
    }

    public func wake(output: NodeOutput) throws { try emitLaterFinals(output: output) }
}
