import Foundation
import SpeechGraphCore
import SpeechGraphVAD
import SpeechGraphWhisper
import Synchronization

/// Final results decoded on another thread, on live input: the utterance's audio goes to the whisper engine, or to
/// the final pass's queue (PocketSphinx's whole-utterance decoding), when it ends, and the recognizer goes on at once
/// with the next utterance's audio (its volatile results go out meanwhile). Each final result goes out, in utterance
/// order, as soon as it and those before it are decoded: the decoding's end posts the node's wakeup (the graph then
/// calls `wake(output:)` on the node's thread), and every call into the node looks too. `finish` waits for them all.
extension RecognizerNode {
    /// An utterance whose final result another thread decodes.
    final class LaterFinal: Sendable {
        let utterance: Int
        let range: TimeRange
        let peak: Float
        private let outcome = Mutex<Result<Transcription, any Error>?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(utterance: Int, range: TimeRange, peak: Float) {
            (self.utterance, self.range, self.peak) = (utterance, range, peak)
        }

        func complete(_ result: Result<Transcription, any Error>) {
            outcome.withLock { $0 = result }
            done.signal()
        }

        /// Completes it with what Whisper heard as speech in its audio (its words timed from the utterance's start).
        func complete(_ speech: WhisperTranscript, composer: FinalResultComposer, includeWords: Bool) {
            let reading = Reading(
                text: speech.text, words: includeWords ? WhisperEngine.words(of: speech, from: range.start) : [],
                nbest: [])
            complete(.success(composer.compose(phases: [reading], peak: peak, utterance: utterance, range: range)))
        }

        /// Its final result or failure, once decoded; `waiting`: waits for it (the whisper engine's own watchdog
        /// ends a hang).
        func result(waiting: Bool) -> Result<Transcription, any Error>? {
            if waiting, outcome.withLock({ $0 == nil }) {
                done.wait()
                done.signal()
            }
            return outcome.withLock { $0 }
        }
    }

    /// The final pass of the utterance, on the final pass's queue (one job at a time, in order: the whole-utterance
    /// decoders are its while a job runs); its streamed reading ends here.
    func finishOnQueue(_ whole: SphinxDecoder, streamed: SphinxDecoder) throws {
        try decodePending()
        try streamed.endUtterance()
        let later = LaterFinal(
            utterance: utterance, range: TimeRange(start: utteranceStart, end: utteranceEnd), peak: utterancePeak)
        laterFinals.append(later)
        let (decoding, composer, gate, wakeup) = (wholeDecoding(first: whole), composer, gate, wakeup)
        let (samples, newStream) = (held, streamBegins)
        streamBegins = false
        held.removeAll(keepingCapacity: true)
        finalPasses.async {
            // Someone waits for this result: it goes ahead of other graphs' batches.
            let result = Result {
                let readings = try gate.run(urgent: true) {
                    try samples.withUnsafeBufferPointer {
                        try decoding.decode($0, from: later.range.start, newStream: newStream)
                    }
                }
                return composer.compose(
                    phases: readings.phases, general: readings.general, domainScore: readings.domainScore,
                    peak: later.peak, utterance: later.utterance, range: later.range)
            }
            later.complete(result)
            wakeup.post()
        }
    }

    /// A final pass is queued or decoding (they decode in order: the last one is the last to end).
    var finalPassDecoding: Bool {
        guard finalPass, whisper == nil, let last = laterFinals.last else { return false }
        return last.result(waiting: false) == nil
    }

    /// Waits for the final pass's jobs queued so far (their results wait in `laterFinals`): before the node
    /// touches the whole-utterance decoders again.
    func waitForFinalPasses() { finalPasses.sync {} }

    /// Hands the utterance to the engine without waiting for its final result; its streamed reading ends here.
    /// With `window: packed` it waits in the pack until the next would not fit (or the input ends: `submitPack`).
    func finishLater(_ whisper: WhisperEngine, streamed: SphinxDecoder) throws {
        if !wholeUtterances {
            try decodePending()
            try streamed.endUtterance()
        }
        let later = LaterFinal(
            utterance: utterance, range: TimeRange(start: utteranceStart, end: utteranceEnd), peak: utterancePeak)
        laterFinals.append(later)
        if packSamples > 0 && SustainedTones.hold(held) {
            // Tones the vad took for speech: read alone, outside the pack and its context, where Whisper keeps
            // silent on them (in a pack, each the context of the next, it writes words).
            var alone = WhisperPack()
            alone.add(later, held)
            submit(alone, to: whisper, inContext: false)
            held.removeAll(keepingCapacity: true)
            tonesReadAlone += 1
            return
        }
        if !pack.members.isEmpty && pack.samples.count + WhisperPack.gapSamples + held.count > packSamples {
            submitPack(whisper)
        }
        pack.add(later, held)
        held.removeAll(keepingCapacity: true)
        if pack.samples.count >= packSamples { submitPack(whisper) }
    }

    /// Whether the whisper engine begins an utterance's final result at speechPaused (`second-pass-at-pause`, one
    /// utterance at a time: not with `window: packed`, whose packs wait anyway).
    var whispersAtPauses: Bool { secondPassAtPause && !audioDuringPauses && whisper != nil && packSamples == 0 }

    /// The utterance so far to the engine, at a pause: its final result if the speech ends there.
    func beginWhisperAtPause(at time: Double) {
        guard let whisper else { return }
        let later = LaterFinal(
            utterance: utterance, range: TimeRange(start: utteranceStart, end: max(utteranceEnd, time)),
            peak: utterancePeak)
        var one = WhisperPack()
        one.add(later, held)
        submit(one, to: whisper)
        whisperAtPause = later
    }

    /// The speech went on after the pause: what the engine began there is not this utterance's final result (its
    /// answer goes nowhere), and the utterance goes to the engine when it ends.
    func dropWhisperAtPause() {
        guard whisperAtPause != nil else { return }
        whisperAtPause = nil
        whisperPausesDropped += 1
    }

    /// The speech ended at the pause: the decoding begun there is the utterance's final result; its streamed
    /// reading ends here.
    func finishBegunAtPause(_ later: LaterFinal, streamed: SphinxDecoder) throws {
        if !wholeUtterances {
            try decodePending()
            try streamed.endUtterance()
        }
        laterFinals.append(later)
        held.removeAll(keepingCapacity: true)
        whisperPausesTaken += 1
    }

    /// The utterances packed so far, to the engine as one request; each gets its own part of the transcript.
    func submitPack(_ whisper: WhisperEngine) {
        guard !pack.members.isEmpty else { return }
        var taken = WhisperPack()
        swap(&taken, &pack)
        submit(taken, to: whisper)
    }

    /// Utterances to the engine as one request; each gets its own part of the transcript. `inContext`: read after
    /// (and remembered as) what Whisper wrote for this stream's packs (`window: packed`).
    func submit(_ taken: WhisperPack, to whisper: WhisperEngine, inContext: Bool = true) {
        let members = taken.members
        let rate = Double(WhisperPack.sampleRate)
        let spans = members.map { (offset: Double($0.offset) / rate, length: Double($0.count) / rate) }
        let (wakeup, composer, includeWords) = (wakeup, composer, includeWords)
        let (worker, aloneOptions) = (whisper.worker, whisper.options)
        var options = whisper.options
        // Each utterance's words are found in the pack by their times.
        if members.count > 1 { options.words = true }
        // Each pack read after what Whisper wrote for the stream's packs before it, as faster-whisper reads a
        // recording's windows: the same writing (of digits, spelled words) throughout.
        options.context = inContext ? packContext : nil
        whisper.worker.submit(taken.samples, options: options) { result in
            switch result {
            case .success(let transcript):
                let parts = members.count == 1 ? [transcript] : WhisperEngine.split(transcript, spans: spans)
                // Segments Whisper heard no speech in go no further (invented words on noise).
                let speeches = parts.map { WhisperEngine.speech(in: $0) }
                let again = WhisperPack.readsAgainAlone(empty: speeches.map(\.segments.isEmpty))
                for (member, speech) in zip(members, speeches) {
                    if again && speech.segments.isEmpty {
                        // The engine's own options: no stream context.
                        let audio = Array(taken.samples[member.offset..<(member.offset + member.count)])
                        RecognizerNode.readAlone(
                            audio, member.later, worker: worker, options: aloneOptions, composer: composer,
                            includeWords: includeWords, wakeup: wakeup)
                    } else {
                        member.later.complete(speech, composer: composer, includeWords: includeWords)
                    }
                }
            case .failure(let error):
                for member in members { member.later.complete(.failure(error)) }
            }
            wakeup.post()
        }
    }

    /// One utterance of a pack read again alone, outside the stream's context (`WhisperPack.readsAgainAlone`): its
    /// final result is what that reading gives.
    static func readAlone(
        _ audio: [Int16], _ later: LaterFinal, worker: WhisperWorker, options: WhisperOptions,
        composer: FinalResultComposer, includeWords: Bool, wakeup: NodeWakeup
    ) {
        worker.submit(audio, options: options) { result in
            switch result {
            case .success(let transcript):
                later.complete(WhisperEngine.speech(in: transcript), composer: composer, includeWords: includeWords)
            case .failure(let error):
                later.complete(.failure(error))
            }
            wakeup.post()
        }
    }

    /// Emits the final results decoded so far, in order (`waiting`: all of them, waiting for each); a failed one
    /// fails the node, after those before it went out.
    func emitLaterFinals(output: NodeOutput, waiting: Bool = false) throws {
        while let first = laterFinals.first, let result = first.result(waiting: waiting) {
            laterFinals.removeFirst()
            try output.emit(.result(result.get()))
        }
    }

    public func wake(output: NodeOutput) throws { try emitLaterFinals(output: output) }
}

/// Utterances gathered for one request to the whisper engine (`window: packed`), each after the one before and a
/// short silence, so that Whisper reads them in one window of up to 30 s, with each other for context, as it reads
/// a recording: more accurate than one utterance at a time, and one encoder pass for them all.
struct WhisperPack {
    /// Whisper's rate.
    static let sampleRate = 16000
    /// Silence between two utterances in a pack (0.5 s).
    static let gapSamples = sampleRate / 2
    /// A pack's audio at most (28 s: Whisper's window is 30 s).
    static let windowSamples = 28 * sampleRate

    var members: [(later: RecognizerNode.LaterFinal, offset: Int, count: Int)] = []
    var samples: [Int16] = []

    /// Whether a pack's utterances that got no words are read again, each alone: when more than half of them got
    /// none. Whisper now and then reads (almost) nothing into a whole window of speech: read again, dev0_pink5's 50
    /// deleted words became 29 (23.93% -> 18.23%; the other five long development files unchanged). One utterance
    /// it skips among others that got words is most often one whose words Whisper timed into its neighbour's: read
    /// again too, they were written twice (dev1 14.45% -> 16.18%, dev0 11.68% -> 12.25%).
    static func readsAgainAlone(empty: [Bool]) -> Bool {
        empty.count > 1 && 2 * empty.filter { $0 }.count > empty.count
    }

    mutating func add(_ later: RecognizerNode.LaterFinal, _ audio: [Int16]) {
        if !members.isEmpty { samples.append(contentsOf: repeatElement(0, count: Self.gapSamples)) }
        members.append((later, samples.count, audio.count))
        samples.append(contentsOf: audio)
    }
}
