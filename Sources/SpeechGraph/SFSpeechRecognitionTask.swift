import Foundation
import Synchronization

/// One request's recognition, made by `SFSpeechRecognizer.recognitionTask`: its state, and the means to end it.
public final class SFSpeechRecognitionTask: @unchecked Sendable {
    // Unchecked: its state is behind a lock; `listener` is called on the recognizer's queue only.
    struct Listener {
        var handler: Unchecked<(SFSpeechRecognitionResult?, (any Error)?) -> Void>?
        var delegate: Unchecked<any SFSpeechRecognitionTaskDelegate>?
        init(handler: Unchecked<(SFSpeechRecognitionResult?, (any Error)?) -> Void>) { self.handler = handler }
        init(delegate: Unchecked<any SFSpeechRecognitionTaskDelegate>) { self.delegate = delegate }
    }

    private struct State {
        var state: SFSpeechRecognitionTaskState = .starting
        var isFinishing = false
        var isCancelled = false
        /// complete() has run: its outcome stands.
        var isCompleting = false
        var error: (any Error)?
        /// Until the task completes (then dropped: the delegate is kept no longer).
        var listener: Listener?
        /// Its graph and audio, until it completes.
        var recognition: Recognition?
    }
    private let lock: Mutex<State>
    private let queue: OperationQueue
    /// Deliveries in order, each waiting for the recognizer's queue to run it.
    private let deliveries = DispatchQueue(label: "speechgraph.recognition-task")
    /// Set once, by the recognizer, before the task is handed out; dropped when it completes.
    var recognition: Recognition? {
        get { lock.withLock { $0.recognition } }
        set { lock.withLock { $0.recognition = newValue } }
    }

    init(listener: Listener, queue: OperationQueue) {
        lock = Mutex(State(listener: listener))
        self.queue = queue
    }

    public var state: SFSpeechRecognitionTaskState { lock.withLock { $0.state } }
    /// `finish()` or `endAudio()` was called, or the file was read to its end.
    public var isFinishing: Bool { lock.withLock { $0.isFinishing } }
    public var isCancelled: Bool { lock.withLock { $0.isCancelled } }
    /// What ended the task, if an error did.
    public var error: (any Error)? { lock.withLock { $0.error } }

    /// Takes no more audio, and finishes recognising what it has: the final result follows.
    public func finish() { recognition?.finish() }

    /// Stops at once: no more results; the result handler gets a cancellation error, the delegate
    /// `speechRecognitionTaskWasCancelled` and `didFinishSuccessfully(false)`.
    public func cancel() {
        let first = lock.withLock { s -> Bool in
            guard s.state != .completed, !s.isCompleting, !s.isCancelled else { return false }
            s.isCancelled = true
            s.state = .canceling
            return true
        }
        if first { recognition?.cancel() }
    }

    // MARK: Called by the recognition

    func running() {
        lock.withLock { s in if s.state == .starting { s.state = .running } }
    }

    /// No more audio will come.
    func finishedReadingAudio() {
        let first = lock.withLock { s -> Bool in
            guard !s.isFinishing, s.state != .completed, !s.isCancelled else { return false }
            s.isFinishing = true
            s.state = .finishing
            return true
        }
        if first { deliver { task, l in l.delegate?.value.speechRecognitionTaskFinishedReadingAudio(task) } }
    }

    func detectedSpeech() {
        deliver { task, l in l.delegate?.value.speechRecognitionDidDetectSpeech(task) }
    }

    func partial(_ result: SFSpeechRecognitionResult, processed: TimeInterval) {
        deliver { task, l in
            l.delegate?.value.speechRecognitionTask(task, didProcessAudioDuration: processed)
            l.delegate?.value.speechRecognitionTask(task, didHypothesizeTranscription: result.bestTranscription)
            l.handler?.value(result, nil)
        }
    }

    func processed(_ duration: TimeInterval) {
        deliver { task, l in l.delegate?.value.speechRecognitionTask(task, didProcessAudioDuration: duration) }
    }

    /// The last delivery: the final result, or the error (a cancellation's, when cancelled).
    func complete(_ outcome: Result<SFSpeechRecognitionResult, any Error>) {
        let (listener, cancelled) = lock.withLock { s -> (Listener?, Bool) in
            guard s.state != .completed, !s.isCompleting else { return (nil, false) }
            s.isCompleting = true
            let cancelled = s.isCancelled
            if cancelled {
                s.error = SFSpeechError.cancelled()
            } else if case .failure(let error) = outcome {
                s.error = error
            }
            s.isFinishing = true
            defer {
                s.listener = nil
                s.recognition = nil
            }
            return (s.listener, cancelled)
        }
        guard let listener else { return }
        let outcome: Result<SFSpeechRecognitionResult, any Error> =
            cancelled ? .failure(SFSpeechError.cancelled()) : outcome
        deliver(listener) { task, l in
            // Completed before the last call, as Apple's: a handler that looks at the task sees it done.
            task.lock.withLock { $0.state = .completed }
            switch outcome {
            case .success(let result):
                l.delegate?.value.speechRecognitionTask(task, didFinishRecognition: result)
                l.handler?.value(result, nil)
                l.delegate?.value.speechRecognitionTask(task, didFinishSuccessfully: true)
            case .failure(let error):
                if cancelled { l.delegate?.value.speechRecognitionTaskWasCancelled(task) }
                l.handler?.value(nil, error)
                l.delegate?.value.speechRecognitionTask(task, didFinishSuccessfully: false)
            }
        }
    }

    /// Runs `call` on the recognizer's queue after every delivery before it (none after the task completed, nor
    /// after a cancellation but its error).
    private func deliver(_ call: @escaping (SFSpeechRecognitionTask, Listener) -> Void) {
        guard let listener = lock.withLock({ $0.isCancelled ? nil : $0.listener }) else { return }
        // Not after a cancellation made while it waited to run.
        deliver(listener) { task, l in if !task.isCancelled { call(task, l) } }
    }

    private func deliver(_ listener: Listener, _ call: @escaping (SFSpeechRecognitionTask, Listener) -> Void) {
        let work = Unchecked((self, listener, call))
        let queue = queue
        deliveries.async {
            if queue === OperationQueue.main {
                // The main thread itself (swift-corelibs-foundation's main operation queue need not run there).
                DispatchQueue.main.sync { work.value.2(work.value.0, work.value.1) }
            } else {
                let operation = BlockOperation { work.value.2(work.value.0, work.value.1) }
                queue.addOperations([operation], waitUntilFinished: true)
            }
        }
    }
}

/// A task's graph and what it has recognised: buffers pushed or a file read, results gathered into the task's
/// transcriptions.
final class Recognition: @unchecked Sendable {
    // Unchecked: its state is behind a lock.
    private struct State {
        var graph: SpeechGraph?
        var input: AudioInput?
        var format: AVAudioFormat?
        var ended = false
        var cancelled = false
        /// A file's graph, which `finish()` stops.
        var readsFile = false
    }
    private let state = Mutex(State())
    /// Held by a push (the first makes the graph, outside `state`) and by the end of audio: one at a time.
    private let pushing = NSLock()
    private let task: SFSpeechRecognitionTask
    private let settings: [String: String]
    /// The request's `shouldReportPartialResults`.
    private let partials: Bool

    init(task: SFSpeechRecognitionTask, settings: [String: String], partials: Bool) {
        self.task = task
        self.settings = settings
        self.partials = partials
    }

    /// A file: read as `speechgraph transcribe` reads it.
    func read(_ url: URL) {
        guard FileManager.default.isReadableFile(atPath: url.path) else {
            fail(SFSpeechError.audioReadFailed("\(url.path): no such file, or not readable"))
            return
        }
        var b = GraphBuilder()
        b.file("src", path: url.path)
        connect(&b, vad: FileTranscription.cutsIntoUtterances(path: url.path))
        state.withLock { $0.readsFile = true }
        run(b, thenEnd: true)
    }

    /// A buffer's samples, interleaved: the first makes the graph in their format.
    func push(_ samples: [Float], format bufferFormat: AVAudioFormat) {
        pushing.lock()
        defer { pushing.unlock() }
        var b: GraphBuilder?
        let outcome: Result<AudioInput?, NSError> = state.withLock { s in
            if s.ended || s.cancelled { return .success(nil) }
            if let format = s.format {
                guard format == bufferFormat else {
                    return .failure(
                        SFSpeechError.audioReadFailed(
                            "a buffer in \(bufferFormat) after buffers in \(format): every buffer of a request "
                                + "must have the first one's format"))
                }
                return .success(s.input)
            }
            s.format = bufferFormat
            var builder = GraphBuilder()
            builder.pushInput("src", format: bufferFormat)
            b = builder
            return .success(nil)
        }
        switch outcome {
        case .failure(let error):
            fail(error)
            return
        case .success(let input?):
            input.push(samples)
            return
        case .success(nil):
            guard var b else { return }
            connect(&b, vad: true)
            run(b, thenEnd: false)
            state.withLock { $0.input }?.push(samples)
        }
    }

    private func connect(_ b: inout GraphBuilder, vad: Bool) {
        b.node("asr", "recognizer", settings)
        if vad {
            b.node("vad", "vad")
            b.connect("src", "vad")
            b.connect("vad.out", "asr.in")
            b.connect("vad.events", "asr.control")
        } else {
            b.connect("src", "asr")
        }
    }

    /// No more audio; with none at all, the task ends with no speech.
    func endAudio() {
        pushing.lock()
        defer { pushing.unlock() }
        let (input, hadAudio) = state.withLock { s -> (AudioInput?, Bool) in
            if s.ended || s.cancelled { return (nil, true) }
            s.ended = true
            return (s.input, s.graph != nil)
        }
        task.finishedReadingAudio()
        input?.end()
        if !hadAudio { task.complete(.failure(SFSpeechError.noSpeech())) }
    }

    /// `finish()`: a buffer request's end of audio; a file's reading stopped where it is.
    func finish() {
        let (readsFile, graph) = state.withLock { ($0.readsFile, $0.graph) }
        if readsFile {
            task.finishedReadingAudio()
            graph?.stop()
        } else {
            endAudio()
        }
    }

    func cancel() {
        let graph = state.withLock { s -> SpeechGraph? in
            s.cancelled = true
            return s.graph
        }
        if let graph { graph.stop() } else { task.complete(.failure(SFSpeechError.cancelled())) }
    }

    func fail(_ error: any Error) {
        let graph = state.withLock { s -> SpeechGraph? in
            s.ended = true
            return s.graph
        }
        graph?.stop()
        task.complete(.failure(error))
    }

    /// Makes and starts the graph, and follows its events to the task's end (`thenEnd`: a file's, which ends
    /// itself).
    private func run(_ b: GraphBuilder, thenEnd: Bool) {
        let graph: SpeechGraph
        do {
            graph = try SpeechGraph(b)
        } catch {
            fail(SFSpeechError.failed("\(error)"))
            return
        }
        let events = graph.events()
        let cancelled = state.withLock { s -> Bool in
            s.graph = graph
            s.input = try? graph.input("src")
            return s.cancelled
        }
        if cancelled {
            graph.stop()
            task.complete(.failure(SFSpeechError.cancelled()))
            return
        }
        do { try graph.start() } catch {
            fail(SFSpeechError.failed("\(error)"))
            return
        }
        task.running()
        let (task, partials) = (task, partials)
        Task.detached {
            var transcript = Transcript()
            var detected = false
            for await event in events {
                switch event {
                case .speechStarted where !detected:
                    detected = true
                    task.detectedSpeech()
                case .result(let t) where t.node == "asr":
                    if !detected && !t.text.isEmpty {
                        detected = true
                        task.detectedSpeech()
                    }
                    transcript.take(SpeechResult(t))
                    if partials && !transcript.isEmpty {
                        task.partial(transcript.result(isFinal: false), processed: t.range.end)
                    } else {
                        task.processed(t.range.end)
                    }
                default: break
                }
            }
            if thenEnd { task.finishedReadingAudio() }
            do {
                try await graph.running.wait()
                task.complete(
                    transcript.isEmpty ? .failure(SFSpeechError.noSpeech()) : .success(transcript.result(isFinal: true))
                )
            } catch {
                task.complete(.failure(SFSpeechError.failed("\(error)")))
            }
        }
    }
}

/// A task's results so far: each utterance's final result, and the volatile one of the utterance going on.
struct Transcript {
    /// Each utterance's final result (its number, in order), and the volatile ones of utterances not final yet:
    /// with a final pass, an utterance's final comes after the next one's first volatile results.
    private var finals: [Int: SpeechResult] = [:]
    private var volatiles: [Int: SpeechResult] = [:]

    mutating func take(_ r: SpeechResult) {
        if r.isFinal {
            volatiles[r.utterance] = nil
            if !r.plainText.isEmpty { finals[r.utterance] = r }
        } else if finals[r.utterance] == nil {
            volatiles[r.utterance] = r
        }
    }

    var isEmpty: Bool { finals.isEmpty && volatiles.values.allSatisfy { $0.plainText.isEmpty } }

    /// The best transcription (every utterance's words in order; a partial result's words at confidence 0, as
    /// Apple's), then the others: the k-th of each utterance's n-best list (its best where the list is shorter),
    /// those words timed evenly over their utterance.
    func result(isFinal: Bool) -> SFSpeechRecognitionResult {
        let finals = finals.sorted { $0.key < $1.key }.map(\.value)
        let all =
            isFinal ? finals : self.finals.merging(volatiles) { a, _ in a }.sorted { $0.key < $1.key }.map(\.value)
        let best = all.flatMap { r -> [Word] in
            guard !r.words.isEmpty else { return Self.spread(r.plainText, over: r.range) }
            return isFinal
                ? r.words
                : r.words.map { Word(text: $0.text, range: $0.range, confidence: 0, alternatives: $0.alternatives) }
        }
        var transcriptions = [SFTranscription(words: best)]
        let others = finals.map { $0.alternatives.count }.max() ?? 0
        if isFinal && others > 1 {
            for k in 1..<others {
                let words = finals.flatMap { r in
                    k < r.alternatives.count ? Self.spread(r.alternatives[k].text, over: r.range) : r.words
                }
                transcriptions.append(SFTranscription(words: words))
            }
        }
        return SFSpeechRecognitionResult(transcriptions: transcriptions, isFinal: isFinal)
    }

    /// A text's words spread evenly over a span, at confidence 0 (words with no timings of their own).
    static func spread(_ text: String, over range: TimeRange) -> [Word] {
        let words = text.split(separator: " ").map(String.init)
        guard !words.isEmpty else { return [] }
        let step = (range.end - range.start) / Double(words.count)
        return words.enumerated().map { i, w in
            Word(
                text: w,
                range: TimeRange(start: range.start + Double(i) * step, end: range.start + Double(i + 1) * step),
                confidence: 0)
        }
    }
}
