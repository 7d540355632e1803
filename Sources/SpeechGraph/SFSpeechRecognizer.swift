// Apple's classic Speech API (SFSpeechRecognizer, iOS 10 and later), for people porting an app: its recognizer,
// requests, tasks and results over speechgraph's runtime, with Apple's names, argument labels and optionality
// (docs/api.md). Underneath, each task runs one graph: push.input (a buffer request) or file.input (a URL request)
// -> vad -> recognizer.
import Foundation
import Synchronization

// MARK: - Authorization, hints and states

/// Whether the app may recognise speech. On Linux nothing asks the user: speech recognition here is on the device,
/// and the answer is always `.authorized`.
public enum SFSpeechRecognizerAuthorizationStatus: Int, Sendable {
    case notDetermined = 0
    case denied = 1
    case restricted = 2
    case authorized = 3
}

/// What kind of speech a request expects. Accepted, and changes nothing here (the recognizer's models decide).
public enum SFSpeechRecognitionTaskHint: Int, Sendable {
    case unspecified = 0
    case dictation = 1
    case search = 2
    case confirmation = 3
}

/// Where a task is.
public enum SFSpeechRecognitionTaskState: Int, Sendable {
    /// Made, no audio taken yet.
    case starting = 0
    /// Taking audio.
    case running = 1
    /// No more audio (`endAudio()`, `finish()` or the file's end): the last results are being decoded.
    case finishing = 2
    /// `cancel()` was called.
    case canceling = 3
    /// Done: its last result or error has been delivered.
    case completed = 4
}

/// Told when the recognizer's availability changes.
public protocol SFSpeechRecognizerDelegate: AnyObject {
    func speechRecognizer(_ speechRecognizer: SFSpeechRecognizer, availabilityDidChange available: Bool)
}

extension SFSpeechRecognizerDelegate {
    public func speechRecognizer(_ speechRecognizer: SFSpeechRecognizer, availabilityDidChange available: Bool) {}
}

/// A task's progress, told to its delegate (`recognitionTask(with:delegate:)`); every method is optional.
public protocol SFSpeechRecognitionTaskDelegate: AnyObject {
    /// The vad heard speech begin, the first time in the task.
    func speechRecognitionDidDetectSpeech(_ task: SFSpeechRecognitionTask)
    /// A partial transcription of all the audio so far (with `shouldReportPartialResults`).
    func speechRecognitionTask(
        _ task: SFSpeechRecognitionTask, didHypothesizeTranscription transcription: SFTranscription)
    /// The final result, once, covering all the task's audio.
    func speechRecognitionTask(
        _ task: SFSpeechRecognitionTask, didFinishRecognition recognitionResult: SFSpeechRecognitionResult)
    /// No more audio will be taken.
    func speechRecognitionTaskFinishedReadingAudio(_ task: SFSpeechRecognitionTask)
    func speechRecognitionTaskWasCancelled(_ task: SFSpeechRecognitionTask)
    /// The last call: `successfully` is false after an error or a cancellation (`task.error` says which).
    func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didFinishSuccessfully successfully: Bool)
    /// How much audio the task has decoded, in seconds, as it goes.
    func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didProcessAudioDuration duration: TimeInterval)
}

extension SFSpeechRecognitionTaskDelegate {
    public func speechRecognitionDidDetectSpeech(_ task: SFSpeechRecognitionTask) {}
    public func speechRecognitionTask(
        _ task: SFSpeechRecognitionTask, didHypothesizeTranscription transcription: SFTranscription
    ) {}
    public func speechRecognitionTask(
        _ task: SFSpeechRecognitionTask, didFinishRecognition recognitionResult: SFSpeechRecognitionResult
    ) {}
    public func speechRecognitionTaskFinishedReadingAudio(_ task: SFSpeechRecognitionTask) {}
    public func speechRecognitionTaskWasCancelled(_ task: SFSpeechRecognitionTask) {}
    public func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didFinishSuccessfully successfully: Bool) {}
    public func speechRecognitionTask(
        _ task: SFSpeechRecognitionTask, didProcessAudioDuration duration: TimeInterval
    ) {}
}

// MARK: - Results

/// One word of a transcription, with where it was heard.
public final class SFTranscriptionSegment: Sendable, CustomStringConvertible {
    public let substring: String
    /// Where `substring` is in the transcription's `formattedString` (UTF-16 offsets, as NSString counts).
    public let substringRange: NSRange
    /// Seconds from the start of the request's audio.
    public let timestamp: TimeInterval
    public let duration: TimeInterval
    /// The probability that the word is right (calibrated, docs/confidence.md); 0 in partial results, as Apple's.
    public let confidence: Float
    /// Other words the recognizer's n-best readings have at the same time, most likely first.
    public let alternativeSubstrings: [String]
    /// Always nil: no voice analytics here.
    public var voiceAnalytics: SFVoiceAnalytics? { nil }

    init(
        substring: String, substringRange: NSRange, timestamp: TimeInterval, duration: TimeInterval,
        confidence: Float, alternativeSubstrings: [String]
    ) {
        self.substring = substring
        self.substringRange = substringRange
        self.timestamp = timestamp
        self.duration = duration
        self.confidence = confidence
        self.alternativeSubstrings = alternativeSubstrings
    }

    public var description: String {
        "\(substring) at \(timestamp) s (\(duration) s, confidence \(confidence))"
    }
}

/// Never made here (Apple's jitter, shimmer, pitch and voicing measures); the type exists for code that names it.
public final class SFVoiceAnalytics: Sendable {
    private init() {}
}

/// A reading of the request's audio: its text and its words.
public final class SFTranscription: Sendable, CustomStringConvertible {
    /// The text, each utterance's after the one before, separated by a space.
    public let formattedString: String
    public let segments: [SFTranscriptionSegment]
    /// Words a minute over the speech (`speechRecognitionMetadata` has it too).
    public let speakingRate: Double
    /// The mean pause between words, in seconds.
    public let averagePauseDuration: TimeInterval

    /// `words`: each word's text, audio range, confidence and alternatives, in order.
    init(words: [Word]) {
        var text = ""
        var segments: [SFTranscriptionSegment] = []
        for w in words where !w.text.isEmpty {
            if !text.isEmpty { text += " " }
            let location = text.utf16.count
            text += w.text
            segments.append(
                SFTranscriptionSegment(
                    substring: w.text, substringRange: NSRange(location: location, length: w.text.utf16.count),
                    timestamp: w.range.start, duration: max(0, w.range.end - w.range.start),
                    confidence: Float(w.confidence),
                    alternativeSubstrings: w.alternatives))
        }
        formattedString = text
        self.segments = segments
        (speakingRate, averagePauseDuration) = Self.pace(segments)
    }

    static func pace(_ segments: [SFTranscriptionSegment]) -> (rate: Double, pause: TimeInterval) {
        guard let first = segments.first, let last = segments.last else { return (0, 0) }
        let span = last.timestamp + last.duration - first.timestamp
        let pauses = zip(segments, segments.dropFirst()).map { max(0, $1.timestamp - ($0.timestamp + $0.duration)) }
        return (
            span > 0 ? Double(segments.count) * 60 / span : 0,
            pauses.isEmpty ? 0 : pauses.reduce(0, +) / Double(pauses.count)
        )
    }

    public var description: String { formattedString }
}

/// Timing of the speech a final result covers.
public final class SFSpeechRecognitionMetadata: Sendable {
    /// Words a minute.
    public let speakingRate: Double
    public let averagePauseDuration: TimeInterval
    /// Seconds from the start of the audio to the first word.
    public let speechStartTimestamp: TimeInterval
    /// From the first word's start to the last word's end.
    public let speechDuration: TimeInterval
    public var voiceAnalytics: SFVoiceAnalytics? { nil }

    init(_ best: SFTranscription) {
        speakingRate = best.speakingRate
        averagePauseDuration = best.averagePauseDuration
        let first = best.segments.first
        speechStartTimestamp = first?.timestamp ?? 0
        speechDuration = best.segments.last.map { $0.timestamp + $0.duration - (first?.timestamp ?? 0) } ?? 0
    }
}

/// What a task has recognised so far (partial) or in all (final).
public final class SFSpeechRecognitionResult: Sendable, CustomStringConvertible {
    public let bestTranscription: SFTranscription
    /// The best transcription first, then the others of the recognizer's n-best lists.
    public let transcriptions: [SFTranscription]
    /// Whether this is the task's final result: once, after all its audio.
    public let isFinal: Bool
    /// The final result's speech timing (nil in partial results, as Apple's).
    public let speechRecognitionMetadata: SFSpeechRecognitionMetadata?

    init(transcriptions: [SFTranscription], isFinal: Bool) {
        self.transcriptions = transcriptions
        bestTranscription = transcriptions[0]
        self.isFinal = isFinal
        speechRecognitionMetadata = isFinal ? SFSpeechRecognitionMetadata(transcriptions[0]) : nil
    }

    public var description: String { "\(isFinal ? "final" : "partial"): \(bestTranscription.formattedString)" }
}

// MARK: - Requests

/// What a task recognises, and how: use ``SFSpeechAudioBufferRecognitionRequest`` or
/// ``SFSpeechURLRecognitionRequest``. Set the properties before the task is made.
open class SFSpeechRecognitionRequest: @unchecked Sendable {
    // Unchecked, as Apple's: an app sets the properties, then hands the request to a recognizer.
    /// Partial results while the audio comes (volatile results, from the recognizer's streaming decoding; each
    /// utterance's final text from its decoding whole, as `speechgraph transcribe` decodes it). Default true.
    public var shouldReportPartialResults = true
    /// Always satisfied: speechgraph recognises on the device.
    public var requiresOnDeviceRecognition = false
    /// Phrases to favour (the recognizer's `phrases`): names and terms the app expects.
    public var contextualStrings: [String] = []
    /// Accepted; changes nothing.
    public var taskHint: SFSpeechRecognitionTaskHint = .unspecified
    /// Accepted: PocketSphinx writes no punctuation (its text is words in lower case).
    public var addsPunctuation = false
    /// A custom language model prepared by `SFSpeechLanguageModel.prepareCustomLanguageModel`, mixed with the
    /// general model at the configuration's weight.
    public var customizedLanguageModel: SFSpeechLanguageModel.Configuration?
    /// Kept for the app; not used.
    public var interactionIdentifier: String?

    init() {}

    /// The recognizer's parameters this request asks for.
    func recognizerSettings(model: String) -> [String: String] {
        var settings =
            shouldReportPartialResults
            ? ["mode": "streaming", "results": "progressive", "final-pass": "true"]
            : ["mode": "utterance", "results": "final-only"]
        settings["model"] = graphQuoted(model)
        // Each segment's alternativeSubstrings and the result's other transcriptions: an n-best list of 5.
        settings["alternatives"] = "5"
        let phrases = contextualStrings.map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        if !phrases.isEmpty { settings["phrases"] = graphQuoted(phrases.joined(separator: "|")) }
        if let lm = customizedLanguageModel {
            settings["lm"] = graphQuoted(lm.languageModel.path)
            settings["weight"] = String(lm.weight)
        }
        return settings
    }
}

/// Audio an app captures (a tap on `AVAudioEngine.inputNode`) or has in buffers: `append(_:)` them, then
/// `endAudio()`. Buffers appended before the task is made wait for it.
public final class SFSpeechAudioBufferRecognitionRequest: SFSpeechRecognitionRequest, @unchecked Sendable {
    private struct State {
        var pending: [(format: AVAudioFormat, samples: [Float])] = []
        var recognition: Recognition?
        var ended = false
    }
    private let state = Mutex(State())

    public override init() { super.init() }

    /// The format the recognizer reads without conversion: 16 kHz mono. Buffers in any rate and channel count are
    /// taken (the graph converts them); every buffer of a request must have the first one's format.
    public var nativeAudioFormat: AVAudioFormat { AVAudioFormat(standardFormatWithSampleRate: 16000, channels: 1)! }

    /// Adds audio, from any thread; it is copied. After `endAudio()` it is ignored.
    public func append(_ audioPCMBuffer: AVAudioPCMBuffer) {
        let samples = audioPCMBuffer.interleaved()
        let recognition: Recognition? = state.withLock { s in
            if s.ended { return nil }
            if let r = s.recognition { return r }
            s.pending.append((audioPCMBuffer.format, samples))
            return nil
        }
        recognition?.push(samples, format: audioPCMBuffer.format)
    }

    /// No more audio: the task finishes what it has and delivers its final result.
    public func endAudio() {
        let recognition: Recognition? = state.withLock { s in
            if s.ended { return nil }
            s.ended = true
            return s.recognition
        }
        recognition?.endAudio()
    }

    /// The task takes the request's audio: what waited, then what comes. Buffers a tap appends meanwhile wait
    /// behind those: the recognition is the appenders' only once nothing waits any more, so that audio keeps its
    /// order.
    func attach(_ recognition: Recognition) {
        while true {
            let (pending, ended) = state.withLock { s -> ([(format: AVAudioFormat, samples: [Float])], Bool) in
                if s.pending.isEmpty { s.recognition = recognition }
                defer { s.pending = [] }
                return (s.pending, s.ended)
            }
            if pending.isEmpty {
                if ended { recognition.endAudio() }
                return
            }
            for p in pending { recognition.push(p.samples, format: p.format) }
        }
    }
}

/// A recorded audio file, recognised as `speechgraph transcribe` reads it (a file longer than 30 s cut into
/// utterances by the vad): its final result's text is `transcribe`'s.
public final class SFSpeechURLRecognitionRequest: SFSpeechRecognitionRequest, @unchecked Sendable {
    public let url: URL
    public init(url URL: URL) {
        self.url = URL
        super.init()
    }
}

// MARK: - The recognizer

/// Recognises speech in one locale's installed model (`en-US`: Debian's pocketsphinx-en-us).
open class SFSpeechRecognizer: @unchecked Sendable {
    // Unchecked, as Apple's: `delegate`, `queue` and `defaultTaskHint` are set by the app before use.
    public let locale: Locale
    private let modelName: String
    /// Told when `isAvailable` changes.
    public weak var delegate: (any SFSpeechRecognizerDelegate)?
    public var defaultTaskHint: SFSpeechRecognitionTaskHint = .unspecified
    /// Where result handlers and delegate methods run: the main queue by default, as on Apple platforms (a
    /// terminal program then needs its main queue served: an async `main`, `dispatchMain()` or `RunLoop.main`).
    public var queue: OperationQueue = .main
    /// Whether this recognizer recognises on the device: always, when its model is installed.
    public var supportsOnDeviceRecognition: Bool

    /// The user's locale (`LANG`), or English when that is `C`/`POSIX`; nil when no model of it is installed.
    public convenience init?() {
        let current = Locale.current
        let posix = ["", "C", "POSIX", "en_US_POSIX"].contains(current.identifier)
        self.init(locale: posix ? Locale(identifier: "en_US") : current)
    }

    /// Nil when no model of the locale's language is installed (`supportedLocales()` lists those that are).
    public init?(locale: Locale) {
        guard let model = TranscriberCore.model(for: locale) else { return nil }
        self.locale = model.locale
        modelName = model.name
        supportsOnDeviceRecognition = true
        // The audio going away and coming back (an AVAudioEngine's JACK server): recognition is unavailable,
        // then available again.
        observer = NotificationCenter.default.addObserver(
            forName: AVAudioSession.interruptionNotification, object: nil, queue: nil
        ) { [weak self] note in
            guard let self, let raw = note.userInfo?[AVAudioSessionInterruptionTypeKey] as? UInt,
                let type = AVAudioSession.InterruptionType(rawValue: raw)
            else { return }
            self.audioInterrupted.withLock { $0 = type == .began }
            self.queue.addOperation { [weak self] in
                guard let self else { return }
                self.delegate?.speechRecognizer(self, availabilityDidChange: type == .ended && self.isAvailable)
            }
        }
    }

    deinit { observer.map { NotificationCenter.default.removeObserver($0) } }

    private var observer: (any NSObjectProtocol)?
    /// An engine's audio server went away and has not come back.
    private let audioInterrupted = Mutex(false)

    /// Whether the recognizer's model is installed now, and the audio of an `AVAudioEngine` (its JACK server) is
    /// not interrupted.
    public var isAvailable: Bool {
        TranscriberCore.model(for: locale)?.name == modelName && !audioInterrupted.withLock { $0 }
    }

    /// The locales of the installed models.
    public class func supportedLocales() -> Set<Locale> { Set(TranscriberCore.installed()) }

    public class func authorizationStatus() -> SFSpeechRecognizerAuthorizationStatus { .authorized }

    /// Answers `.authorized` at once, on an arbitrary queue (as Apple's: not the main queue): nothing to ask.
    public class func requestAuthorization(
        _ handler: @escaping (SFSpeechRecognizerAuthorizationStatus) -> Void
    ) {
        let handler = Unchecked(handler)
        DispatchQueue.global().async { handler.value(.authorized) }
    }

    /// Starts recognising the request's audio; `resultHandler` gets each partial result (with
    /// `shouldReportPartialResults`), then the final one (`isFinal`), or an error, on `queue`.
    @discardableResult
    public func recognitionTask(
        with request: SFSpeechRecognitionRequest,
        resultHandler: @escaping (SFSpeechRecognitionResult?, (any Error)?) -> Void
    ) -> SFSpeechRecognitionTask {
        start(request, SFSpeechRecognitionTask.Listener(handler: Unchecked(resultHandler)))
    }

    /// Starts recognising the request's audio; the delegate is told its progress on `queue` (and kept until the
    /// task completes).
    public func recognitionTask(
        with request: SFSpeechRecognitionRequest, delegate: any SFSpeechRecognitionTaskDelegate
    ) -> SFSpeechRecognitionTask {
        start(request, SFSpeechRecognitionTask.Listener(delegate: Unchecked(delegate)))
    }

    private func start(
        _ request: SFSpeechRecognitionRequest, _ listener: SFSpeechRecognitionTask.Listener
    ) -> SFSpeechRecognitionTask {
        let task = SFSpeechRecognitionTask(listener: listener, queue: queue)
        let recognition = Recognition(
            task: task, settings: request.recognizerSettings(model: modelName),
            partials: request.shouldReportPartialResults)
        task.recognition = recognition
        switch request {
        case let file as SFSpeechURLRecognitionRequest: recognition.read(file.url)
        case let buffers as SFSpeechAudioBufferRecognitionRequest: buffers.attach(recognition)
        default: recognition.fail(SFSpeechError.missingParameter("a request of another kind than buffers or a URL"))
        }
        return task
    }
}

/// The errors a task ends with, in Apple's domain for them (`kAFAssistantErrorDomain`: 1110 no speech, 216
/// cancelled; `SFSpeechErrorDomain`: the rest).
public enum SFSpeechError {
    public static let assistantDomain = "kAFAssistantErrorDomain"
    public static let domain = "SFSpeechErrorDomain"

    static func noSpeech() -> NSError {
        NSError(domain: assistantDomain, code: 1110, userInfo: [NSLocalizedDescriptionKey: "No speech detected"])
    }
    static func cancelled() -> NSError {
        NSError(
            domain: assistantDomain, code: 216,
            userInfo: [NSLocalizedDescriptionKey: "Recognition request was canceled"])
    }
    /// The audio could not be read (a missing file, a buffer in another format than the first).
    static func audioReadFailed(_ why: String) -> NSError {
        NSError(domain: domain, code: 2, userInfo: [NSLocalizedDescriptionKey: why])
    }
    static func missingParameter(_ why: String) -> NSError {
        NSError(domain: domain, code: 9, userInfo: [NSLocalizedDescriptionKey: why])
    }
    /// The recognizer failed (a model that is missing or would not load, a graph error): speechgraph's message.
    static func failed(_ why: String) -> NSError {
        NSError(domain: domain, code: 1, userInfo: [NSLocalizedDescriptionKey: why])
    }
}

/// A value handed to another thread that the compiler cannot see is safe to hand: a caller's closure or delegate
/// (Apple's take neither as Sendable), called only on the recognizer's queue.
struct Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
