// Apple's shape, for people porting an app: the names and flow of Apple's SpeechAnalyzer (Speech framework,
// iOS and macOS 26) over speechgraph's runtime, and the small subset of AVFAudio's types such code uses, so
// that it compiles with `import SpeechGraph` in place of `import Speech` and `import AVFoundation`
// (docs/api.md). Underneath, each analyzer runs one graph: push.input -> vad -> recognizer.
import Foundation
import Synchronization

// MARK: - Time, as Core Media names it

/// A time in seconds (Core Media's `CMTime`, reduced to what speech analysis uses).
public struct CMTime: Sendable, Hashable, Comparable {
    public var seconds: Double
    public init(seconds: Double, preferredTimescale: Int32 = 1_000) { self.seconds = seconds }
    public static let zero = CMTime(seconds: 0)
    public static func < (a: CMTime, b: CMTime) -> Bool { a.seconds < b.seconds }
}

/// A span of audio time (Core Media's `CMTimeRange`).
public struct CMTimeRange: Sendable, Hashable {
    public var start: CMTime
    public var duration: CMTime
    public var end: CMTime { CMTime(seconds: start.seconds + duration.seconds) }
    public init(start: CMTime, duration: CMTime) {
        self.start = start
        self.duration = duration
    }
    public init(start: CMTime, end: CMTime) {
        self.init(start: start, duration: CMTime(seconds: end.seconds - start.seconds))
    }
    public init(_ r: TimeRange) { self.init(start: CMTime(seconds: r.start), end: CMTime(seconds: r.end)) }
    public static let zero = CMTimeRange(start: .zero, duration: .zero)
    public static let invalid = CMTimeRange(start: CMTime(seconds: -1), duration: .zero)
    public func containsTime(_ time: CMTime) -> Bool { time >= start && time < end }
}

// MARK: - Audio buffers, as AVFAudio names them

public typealias AVAudioFrameCount = UInt32
public typealias AVAudioFramePosition = Int64
public typealias AVAudioChannelCount = UInt32

/// A PCM format: 32-bit float, deinterleaved (AVFAudio's standard format).
public final class AVAudioFormat: Sendable, Equatable, CustomStringConvertible {
    public let sampleRate: Double
    public let channelCount: AVAudioChannelCount

    public init?(standardFormatWithSampleRate sampleRate: Double, channels: AVAudioChannelCount) {
        guard sampleRate > 0, channels > 0, channels <= 64 else { return nil }
        self.sampleRate = sampleRate
        self.channelCount = channels
    }

    public static func == (a: AVAudioFormat, b: AVAudioFormat) -> Bool {
        a.sampleRate == b.sampleRate && a.channelCount == b.channelCount
    }
    public var description: String { "\(channelCount) ch, \(sampleRate) Hz, Float32, deinterleaved" }
}

/// A buffer of PCM audio: one float array per channel.
public final class AVAudioPCMBuffer: @unchecked Sendable {
    // Unchecked, as AVFAudio's: a buffer is filled by one task, then handed over and only read.
    public let format: AVAudioFormat
    public let frameCapacity: AVAudioFrameCount
    public var frameLength: AVAudioFrameCount = 0
    private let channels: UnsafeMutablePointer<UnsafeMutablePointer<Float>>

    public init?(pcmFormat format: AVAudioFormat, frameCapacity: AVAudioFrameCount) {
        self.format = format
        self.frameCapacity = frameCapacity
        let count = Int(format.channelCount)
        channels = .allocate(capacity: count)
        for c in 0..<count {
            let samples = UnsafeMutablePointer<Float>.allocate(capacity: max(1, Int(frameCapacity)))
            samples.initialize(repeating: 0, count: max(1, Int(frameCapacity)))
            (channels + c).initialize(to: samples)
        }
    }

    deinit {
        for c in 0..<Int(format.channelCount) { channels[c].deallocate() }
        channels.deallocate()
    }

    /// One pointer per channel, each to `frameCapacity` samples.
    public var floatChannelData: UnsafePointer<UnsafeMutablePointer<Float>>? { UnsafePointer(channels) }

    /// The first `frameLength` frames, interleaved.
    func interleaved() -> [Float] {
        let n = Int(frameLength)
        let c = Int(format.channelCount)
        var out = [Float](repeating: 0, count: n * c)
        for ch in 0..<c {
            for f in 0..<n { out[f * c + ch] = channels[ch][f] }
        }
        return out
    }
}

/// An audio file read as PCM buffers (AVFAudio's `AVAudioFile`, reading only), through libsndfile.
public final class AVAudioFile {
    public let url: URL
    public let processingFormat: AVAudioFormat
    public let length: AVAudioFramePosition
    public private(set) var framePosition: AVAudioFramePosition = 0
    private let file: AudioFile

    public init(forReading url: URL) throws {
        self.url = url
        do { file = try AudioFile(path: url.path) } catch { throw SpeechGraph.Error.unreadable("\(error)") }
        guard
            let format = AVAudioFormat(
                standardFormatWithSampleRate: Double(file.sampleRate), channels: AVAudioChannelCount(file.channelCount))
        else { throw SpeechGraph.Error.unreadable("\(url.path): no audio") }
        processingFormat = format
        length = AVAudioFramePosition(file.frameCount)
    }

    /// Reads up to the buffer's capacity; `frameLength` says how much came (0 at the end).
    public func read(into buffer: AVAudioPCMBuffer) throws {
        try read(into: buffer, frameCount: buffer.frameCapacity)
    }

    public func read(into buffer: AVAudioPCMBuffer, frameCount: AVAudioFrameCount) throws {
        let c = Int(processingFormat.channelCount)
        let want = Int(min(frameCount, buffer.frameCapacity))
        var interleaved = [Float](repeating: 0, count: want * c)
        let got = try interleaved.withUnsafeMutableBufferPointer { try file.read(into: $0.baseAddress!, frames: want) }
        if let channels = buffer.floatChannelData {
            for ch in 0..<min(c, Int(buffer.format.channelCount)) {
                for f in 0..<got { channels[ch][f] = interleaved[f * c + ch] }
            }
        }
        buffer.frameLength = AVAudioFrameCount(got)
        framePosition += AVAudioFramePosition(got)
    }
}

// MARK: - Speech analysis, as the Speech framework names it

/// Audio for an analyzer: a buffer, and optionally where it starts.
public struct AnalyzerInput: Sendable {
    public let buffer: AVAudioPCMBuffer
    public let bufferStartTime: CMTime?
    public init(buffer: AVAudioPCMBuffer) { self.init(buffer: buffer, bufferStartTime: nil) }
    public init(buffer: AVAudioPCMBuffer, bufferStartTime: CMTime?) {
        self.buffer = buffer
        self.bufferStartTime = bufferStartTime
    }
}

/// A module an analyzer runs: a transcriber.
public protocol SpeechModule: AnyObject, Sendable {}

/// What a transcriber's `results` yield.
public struct SpeechTranscriptionResult: Sendable {
    /// The best transcription; each word's run carries `audioTimeRange` (a `CMTimeRange`) and
    /// `transcriptionConfidence` when the module's `attributeOptions` ask for them.
    public let text: AttributedString
    /// The other readings (the recognizer's n-best list), best first.
    public let alternatives: [AttributedString]
    public let range: CMTimeRange
    public let isFinal: Bool
    /// Audio up to this time will not change any more.
    public let resultsFinalizationTime: CMTime

    /// `timeRanges`, `confidences`: whether the runs keep their `audioTimeRange` and `transcriptionConfidence`
    /// (the module's attribute options).
    init(_ r: SpeechResult, timeRanges: Bool = true, confidences: Bool = true) {
        var text = r.text
        if !timeRanges || !confidences {
            for run in text.runs {
                if !timeRanges { text[run.range].audioTimeRange = nil }
                if !confidences { text[run.range].transcriptionConfidence = nil }
            }
        }
        self.text = text
        alternatives = r.alternatives.dropFirst().map { AttributedString($0.text) }
        range = CMTimeRange(r.range)
        isFinal = r.isFinal
        resultsFinalizationTime = CMTime(seconds: r.isFinal ? r.range.end : r.range.start)
    }
}

/// The part both transcribers share: the recognizer settings and the results stream.
public class TranscriberCore: @unchecked Sendable {
    // Unchecked: `results` and its continuation are Sendable; `locale` and the settings never change.
    public let locale: Locale
    /// The transcriber's results, volatile then final, as the analyzer produces them.
    public let results: AsyncThrowingStream<SpeechTranscriptionResult, any Error>
    let continuation: AsyncThrowingStream<SpeechTranscriptionResult, any Error>.Continuation
    /// Recognizer parameters: `mode`, `results`, `final-pass`.
    let recognizer: [String: String]
    /// What `.alternativeTranscriptions` asks of the recognizer: an n-best list of 5 readings (the best and 4 others).
    static let alternatives = ["alternatives": "5"]

    /// Whether result runs carry `audioTimeRange` and `transcriptionConfidence` (the attribute options).
    let timeRanges: Bool
    let confidences: Bool

    init(
        locale: Locale, progressive: Bool, recognizer extra: [String: String] = [:], timeRanges: Bool,
        confidences: Bool
    ) {
        self.locale = locale
        self.timeRanges = timeRanges
        self.confidences = confidences
        (results, continuation) = AsyncThrowingStream.makeStream(of: SpeechTranscriptionResult.self)
        recognizer =
            (progressive
            ? ["mode": "streaming", "results": "progressive", "final-pass": "true"]
            : ["mode": "utterance", "results": "final-only"]).merging(extra) { $1 }
    }

    /// The locales of the models installed (en-us is Debian's pocketsphinx-en-us).
    public static var supportedLocales: [Locale] {
        get async { installed() }
    }
    public static var installedLocales: [Locale] {
        get async { installed() }
    }

    /// The installed locale with the same language, if any.
    public static func supportedLocale(equivalentTo locale: Locale) -> Locale? { model(for: locale)?.locale }

    /// The installed model of the locale's language, if any: what every Apple-shaped type decodes a locale with.
    static func model(for locale: Locale) -> (locale: Locale, name: String)? {
        let language = locale.language.languageCode?.identifier
        return models().first { $0.locale.language.languageCode?.identifier == language }
    }

    static func installed() -> [Locale] { models().map(\.locale) }

    /// The models installed, by locale: each the name the recognizer's `model` takes (`en-us`).
    static func models() -> [(locale: Locale, name: String)] {
        // The directories the recognizer looks model names up in.
        var out: [(locale: Locale, name: String)] = []
        for dir in SphinxModel.searchPath {
            for name in ((try? FileManager.default.contentsOfDirectory(atPath: dir)) ?? []).sorted() {
                let parts = name.split(separator: "-")
                guard parts.count == 2, parts[0].count == 2, parts[1].count == 2 else { continue }
                let locale = Locale(identifier: "\(parts[0].lowercased())_\(parts[1].uppercased())")
                if !out.contains(where: { $0.locale == locale }) { out.append((locale, name)) }
            }
        }
        return out
    }

    /// The model for this transcriber's locale (one of the same language), or an error naming those installed.
    func modelName() throws -> String {
        guard let model = Self.model(for: locale) else {
            throw SpeechGraph.Error.unsupportedLocale(locale, installed: Self.installed())
        }
        return model.name
    }
}

/// Speech to text, as Apple's `SpeechTranscriber`.
public final class SpeechTranscriber: TranscriberCore, SpeechModule, @unchecked Sendable {
    /// What `results` yields (Apple's nested name).
    public typealias Result = SpeechTranscriptionResult

    /// Options together, as Apple's presets bundle them.
    public struct Preset: Sendable, Equatable {
        public var transcriptionOptions: Set<TranscriptionOption>
        public var reportingOptions: Set<ReportingOption>
        public var attributeOptions: Set<ResultAttributeOption>
        public init(
            transcriptionOptions: Set<TranscriptionOption>, reportingOptions: Set<ReportingOption>,
            attributeOptions: Set<ResultAttributeOption>
        ) {
            self.transcriptionOptions = transcriptionOptions
            self.reportingOptions = reportingOptions
            self.attributeOptions = attributeOptions
        }
        /// Final results only, each utterance decoded whole: the most accurate.
        public static let transcription = Preset(transcriptionOptions: [], reportingOptions: [], attributeOptions: [])
        public static let transcriptionWithAlternatives = Preset(
            transcriptionOptions: [], reportingOptions: [.alternativeTranscriptions], attributeOptions: [])
        public static let timeIndexedTranscriptionWithAlternatives = Preset(
            transcriptionOptions: [], reportingOptions: [.alternativeTranscriptions],
            attributeOptions: [.audioTimeRange])
        /// Volatile results while speaking, then final ones.
        public static let progressiveTranscription = Preset(
            transcriptionOptions: [], reportingOptions: [.volatileResults, .fastResults], attributeOptions: [])
        public static let timeIndexedProgressiveTranscription = Preset(
            transcriptionOptions: [], reportingOptions: [.volatileResults, .fastResults],
            attributeOptions: [.audioTimeRange])
        /// The names of Apple's first betas: `.transcription` and `.progressiveTranscription`.
        public static let offlineTranscription = transcription
        public static let progressiveLiveTranscription = progressiveTranscription
    }

    public enum TranscriptionOption: Hashable, Sendable { case etiquetteReplacements }
    public enum ReportingOption: Hashable, Sendable { case volatileResults, alternativeTranscriptions, fastResults }
    public enum ResultAttributeOption: Hashable, Sendable { case audioTimeRange, transcriptionConfidence }

    public convenience init(locale: Locale, preset: Preset) {
        self.init(
            locale: locale, transcriptionOptions: preset.transcriptionOptions,
            reportingOptions: preset.reportingOptions, attributeOptions: preset.attributeOptions)
    }

    /// Volatile results with `.volatileResults`, each final result's `alternatives` with
    /// `.alternativeTranscriptions` (the recognizer's n-best list), and each word's run with its `audioTimeRange`
    /// and `transcriptionConfidence` as `attributeOptions` ask; `.etiquetteReplacements` and `.fastResults` change
    /// nothing.
    public init(
        locale: Locale, transcriptionOptions: Set<TranscriptionOption>, reportingOptions: Set<ReportingOption>,
        attributeOptions: Set<ResultAttributeOption>
    ) {
        super.init(
            locale: locale, progressive: reportingOptions.contains(.volatileResults),
            recognizer: reportingOptions.contains(.alternativeTranscriptions) ? Self.alternatives : [:],
            timeRanges: attributeOptions.contains(.audioTimeRange),
            confidences: attributeOptions.contains(.transcriptionConfidence))
    }
}

/// Dictation, as Apple's `DictationTranscriber`.
public final class DictationTranscriber: TranscriberCore, SpeechModule, @unchecked Sendable {
    /// What `results` yields (Apple's nested name).
    public typealias Result = SpeechTranscriptionResult

    public struct ContentHint: Hashable, Sendable {
        let name: String
        var languageModel: SFSpeechLanguageModel.Configuration?
        public static let shortForm = ContentHint(name: "shortForm")
        public static let farField = ContentHint(name: "farField")
        public static let atypicalSpeech = ContentHint(name: "atypicalSpeech")
        /// A custom language model (a spec or a model directory; `SFCustomLanguageModelData` writes both): the
        /// recognizer's `lm` and `weight` (docs/lm.md).
        public static func customizedLanguage(modelConfiguration: SFSpeechLanguageModel.Configuration) -> ContentHint {
            ContentHint(name: "customizedLanguage", languageModel: modelConfiguration)
        }
    }
    public enum TranscriptionOption: Hashable, Sendable { case punctuation, emoji, etiquetteReplacements }
    public enum ReportingOption: Hashable, Sendable {
        case volatileResults, alternativeTranscriptions, frequentFinalization
    }
    public enum ResultAttributeOption: Hashable, Sendable { case audioTimeRange, transcriptionConfidence }
    public struct Preset: Sendable {
        public var contentHints: Set<ContentHint>
        public var transcriptionOptions: Set<TranscriptionOption>
        public var reportingOptions: Set<ReportingOption>
        public var attributeOptions: Set<ResultAttributeOption>

        /// Volatile results at once, then final ones, for long dictation (the SpokenWord sample's).
        public static let progressiveLongDictation = Preset(
            contentHints: [], transcriptionOptions: [.punctuation], reportingOptions: [.volatileResults],
            attributeOptions: [.audioTimeRange])
        public static let longDictation = Preset(
            contentHints: [], transcriptionOptions: [.punctuation], reportingOptions: [], attributeOptions: [])
        public static let shortDictation = Preset(
            contentHints: [.shortForm], transcriptionOptions: [.punctuation], reportingOptions: [], attributeOptions: []
        )
        public static let progressiveShortDictation = Preset(
            contentHints: [.shortForm], transcriptionOptions: [.punctuation], reportingOptions: [.volatileResults],
            attributeOptions: [.audioTimeRange])
    }

    public convenience init(locale: Locale, preset: Preset) {
        self.init(
            locale: locale, contentHints: preset.contentHints, transcriptionOptions: preset.transcriptionOptions,
            reportingOptions: preset.reportingOptions, attributeOptions: preset.attributeOptions)
    }

    /// Volatile results when `reportingOptions` has `.volatileResults`. Punctuation and emoji are not
    /// produced (PocketSphinx's models have none). Of the content hints, `customizedLanguage` gives the
    /// recognizer a custom language model; the others are accepted and have no effect yet.
    public init(
        locale: Locale, contentHints: Set<ContentHint>, transcriptionOptions: Set<TranscriptionOption>,
        reportingOptions: Set<ReportingOption>, attributeOptions: Set<ResultAttributeOption>
    ) {
        var extra: [String: String] = [:]
        if let lm = contentHints.compactMap(\.languageModel).first {
            extra = ["lm": graphQuoted(lm.languageModel.path), "weight": String(lm.weight)]
        }
        if reportingOptions.contains(.alternativeTranscriptions) { extra.merge(Self.alternatives) { $1 } }
        super.init(
            locale: locale, progressive: reportingOptions.contains(.volatileResults), recognizer: extra,
            timeRanges: attributeOptions.contains(.audioTimeRange),
            confidences: attributeOptions.contains(.transcriptionConfidence))
    }
}

/// Where speech is, as Apple's `SpeechDetector`: the analyzer's vad (docs/vad.md), its results each span of the audio
/// with or without speech. In an analyzer with transcribers it reports the spans their utterances come from.
public final class SpeechDetector: SpeechModule, @unchecked Sendable {
    // Unchecked: `results` and its continuation are Sendable; the options never change.
    public enum SensitivityLevel: Sendable, Hashable { case low, medium, high }
    public struct DetectionOptions: Sendable, Hashable {
        public var sensitivityLevel: SensitivityLevel
        public init(sensitivityLevel: SensitivityLevel) { self.sensitivityLevel = sensitivityLevel }
    }
    /// A span of the audio, and whether it holds speech.
    public struct Result: Sendable {
        public let range: CMTimeRange
        public let speechDetected: Bool
        public let resultsFinalizationTime: CMTime
    }

    public let detectionOptions: DetectionOptions
    public let reportResults: Bool
    /// The spans, in order: without speech, then with, and so on (with `reportResults`; else none).
    public let results: AsyncThrowingStream<Result, any Error>
    let continuation: AsyncThrowingStream<Result, any Error>.Continuation

    /// `sensitivityLevel` sets the vad's preset (docs/vad.md): `.low` strict (fewer false alarms), `.medium`
    /// normal, `.high` sensitive (misses less).
    public init(detectionOptions: DetectionOptions, reportResults: Bool) {
        self.detectionOptions = detectionOptions
        self.reportResults = reportResults
        (results, continuation) = AsyncThrowingStream.makeStream(of: Result.self)
    }

    public convenience init() { self.init(detectionOptions: .init(sensitivityLevel: .medium), reportResults: true) }

    /// The vad's `preset` for the sensitivity.
    var preset: String {
        switch detectionOptions.sensitivityLevel {
        case .low: "strict"
        case .medium: "normal"
        case .high: "sensitive"
        }
    }

    /// Follows the vad's events: each change from silence to speech or back ends a span.
    func follow(_ events: AsyncStream<GraphEvent>, end: @escaping @Sendable () -> Double?) -> Task<Void, Never> {
        let (continuation, report) = (continuation, reportResults)
        return Task {
            var from = 0.0
            var speaking = false
            func span(to time: Double) {
                guard report, time > from else { return }
                continuation.yield(
                    Result(
                        range: CMTimeRange(start: CMTime(seconds: from), end: CMTime(seconds: time)),
                        speechDetected: speaking, resultsFinalizationTime: CMTime(seconds: time)))
                from = time
            }
            for await event in events {
                switch event {
                case .speechStarted(_, let time) where !speaking:
                    span(to: time)
                    speaking = true
                case .speechEnded(_, let time) where speaking:
                    span(to: time)
                    speaking = false
                default: break
                }
            }
            if let last = end() { span(to: last) }
            continuation.finish()
        }
    }
}

/// Runs modules over audio, as Apple's `SpeechAnalyzer`: one speechgraph graph, push.input -> vad ->
/// recognizer, made when the first buffer shows the audio's format.
public final class SpeechAnalyzer: Sendable {
    private let modules: [TranscriberCore]
    private let detectors: [SpeechDetector]
    private struct State {
        var graph: SpeechGraph?
        var input: AudioInput?
        var forwarders: [Task<Void, Never>] = []
        var rate: Double = 0
        /// The first buffer's format: the graph's; later buffers in another are converted to it.
        var format: AVAudioFormat?
        var converter: StreamResampler?
        /// The audio given so far, in frames at the graph's rate (fractional: converted buffers).
        var inputFrames: Double = 0
        /// Its time.
        var seconds: Double { inputFrames / rate }
        var finished = false
    }
    private let state = Mutex(State())

    public init(modules: [any SpeechModule]) {
        self.modules = modules.compactMap { $0 as? TranscriberCore }
        detectors = modules.compactMap { $0 as? SpeechDetector }
    }

    /// Starts analysing `inputSequence` at once (Apple's autonomous analysis): finish with
    /// `finalizeAndFinishThroughEndOfInput()`. Apple's seven steps also call `analyzeSequence(_:)` with this same
    /// sequence: that call then waits for this analysis and returns its time (an `AsyncStream` takes one reader).
    public convenience init<S: AsyncSequence & Sendable>(inputSequence: S, modules: [any SpeechModule])
    where S.Element == AnalyzerInput {
        self.init(modules: modules)
        let analysis = Task { try await self.read(inputSequence) }
        autonomous.withLock { $0 = analysis }
    }

    /// The analysis `init(inputSequence:modules:)` started.
    private let autonomous = Mutex<Task<CMTime?, any Error>?>(nil)

    /// The format the modules take without conversion: 16 kHz mono (any format is converted anyway).
    public static func bestAvailableAudioFormat(compatibleWith modules: [any SpeechModule]) async -> AVAudioFormat? {
        AVAudioFormat(standardFormatWithSampleRate: 16000, channels: 1)
    }

    /// Analyses the sequence until it ends; returns the time of its last sample (nil when it held none).
    /// The analysis is not finished: call `finalizeAndFinish(through:)`.
    public func analyzeSequence<S: AsyncSequence>(_ inputSequence: S) async throws -> CMTime?
    where S.Element == AnalyzerInput {
        if let analysis = autonomous.withLock({ $0 }) { return try await analysis.value }
        return try await read(inputSequence)
    }

    private func read<S: AsyncSequence>(_ inputSequence: S) async throws -> CMTime? where S.Element == AnalyzerInput {
        for try await input in inputSequence {
            try feed(input)
        }
        return lastSampleTime
    }

    /// The time of the last sample given (nil when none was).
    private var lastSampleTime: CMTime? {
        state.withLock { $0.graph == nil ? nil : CMTime(seconds: $0.seconds) }
    }

    /// Reads a file's buffers to its end.
    private func read(_ file: AVAudioFile) throws -> CMTime? {
        while true {
            guard let buffer = AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: 4096) else { break }
            try file.read(into: buffer)
            if buffer.frameLength == 0 { break }
            try feed(AnalyzerInput(buffer: buffer))
        }
        return lastSampleTime
    }

    /// Analyses an audio file to its end (Apple's `analyzeSequence(from:)`); returns the time of its last sample.
    /// The analysis is not finished: call `finalizeAndFinish(through:)`.
    public func analyzeSequence(from audioFile: AVAudioFile) async throws -> CMTime? {
        try read(audioFile)
    }

    /// Starts analysing `inputSequence` at once (autonomous analysis); finish with
    /// `finalizeAndFinishThroughEndOfInput()`.
    public func start<S: AsyncSequence & Sendable>(inputSequence: S) async throws where S.Element == AnalyzerInput {
        let analysis = Task { try await self.read(inputSequence) }
        autonomous.withLock { $0 = analysis }
    }

    /// Starts analysing a file at once (autonomous analysis); with `finishAfterFile` the analysis finishes at its
    /// end (the modules' results end), else finish with `finalizeAndFinishThroughEndOfInput()`.
    public func start(inputAudioFile audioFile: AVAudioFile, finishAfterFile: Bool = false) async throws {
        // The file is the analyzer's from here on, as Apple's takes it.
        let file = Unchecked(audioFile)
        let analysis = Task.detached {
            let time = try self.read(file.value)
            if finishAfterFile { try await self.finish() }
            return time
        }
        autonomous.withLock { $0 = analysis }
    }

    /// An analyzer that reads `inputAudioFile` at once (Apple's file initialiser).
    public convenience init(
        inputAudioFile: AVAudioFile, modules: [any SpeechModule], finishAfterFile: Bool = false
    ) async throws {
        self.init(modules: modules)
        try await start(inputAudioFile: inputAudioFile, finishAfterFile: finishAfterFile)
    }

    /// Pushes a buffer: in the first buffer's format (another is converted to it), and at its `bufferStartTime`
    /// when it has one (a gap before it is silence; audio before the time already given is dropped).
    private func feed(_ analyzerInput: AnalyzerInput) throws {
        let buffer = analyzerInput.buffer
        let input: AudioInput? = try state.withLock { s in
            if s.finished { return nil }
            if s.graph == nil {
                s.rate = buffer.format.sampleRate
                s.format = buffer.format
                let graph: SpeechGraph
                do { graph = try makeGraph(buffer.format) } catch {
                    // The session is finished: the modules' results throw the same error.
                    s.finished = true
                    for m in modules { m.continuation.finish(throwing: error) }
                    for d in detectors { d.continuation.finish(throwing: error) }
                    throw error
                }
                s.input = try graph.input("mic")
                for detector in detectors {
                    // The last span ends with the audio given.
                    let end: @Sendable () -> Double? = { [weak self] in
                        self?.state.withLock { $0.rate > 0 ? $0.seconds : nil }
                    }
                    s.forwarders.append(detector.follow(graph.events(of: "vad"), end: end))
                }
                for (i, module) in modules.enumerated() {
                    let results = graph.results(of: "asr\(i)")
                    s.forwarders.append(
                        Task {
                            do {
                                for try await r in results {
                                    module.continuation.yield(
                                        SpeechTranscriptionResult(
                                            r, timeRanges: module.timeRanges, confidences: module.confidences))
                                }
                                module.continuation.finish()
                            } catch {
                                module.continuation.finish(throwing: error)
                            }
                        })
                }
                try graph.start()
                s.graph = graph
            }
            return s.input
        }
        guard let input else { return }
        let samples = try state.withLock { s in try Self.converted(analyzerInput, &s) }
        if !samples.isEmpty { input.push(samples) }
    }

    /// The buffer's samples in the graph's format, placed at its start time; counts them.
    private static func converted(_ analyzerInput: AnalyzerInput, _ s: inout State) throws -> [Float] {
        let buffer = analyzerInput.buffer
        guard let format = s.format else { return [] }
        var samples = buffer.interleaved()
        let from = Int(buffer.format.channelCount)
        let to = Int(format.channelCount)
        if from != to {
            // To one channel: their mean; to more: channel c from the buffer's channel c, or its last.
            let frames = samples.count / from
            var mapped = [Float](repeating: 0, count: frames * to)
            for f in 0..<frames {
                if to == 1 {
                    var sum: Float = 0
                    for c in 0..<from { sum += samples[f * from + c] }
                    mapped[f] = sum / Float(from)
                } else {
                    for c in 0..<to { mapped[f * to + c] = samples[f * from + min(c, from - 1)] }
                }
            }
            samples = mapped
        }
        // Placed in input time (the converter's output lags by its filter's delay): `s.inputFrames` counts the
        // audio given, at the graph's rate; a gap before the buffer is silence given at the buffer's own rate,
        // and audio before the time already given is dropped from the buffer, so order and times hold either way.
        let ratio = format.sampleRate / buffer.format.sampleRate
        if let start = analyzerInput.bufferStartTime {
            let at = start.seconds * s.rate
            let given = s.inputFrames
            if at - given > 0.5 {
                guard at - given <= 60 * s.rate else {
                    throw SpeechGraph.Error.failed(
                        "a buffer's start time, \(start.seconds) s, is over a minute after the audio given so far "
                            + "(\(given / s.rate) s): bufferStartTime counts from the start of the analysis")
                }
                let silence = Int(((at - given) / ratio).rounded())
                samples = [Float](repeating: 0, count: silence * to) + samples
            } else if given - at > 0.5 {
                let overlap = Int(((given - at) / ratio).rounded())
                samples = Array(samples.dropFirst(min(samples.count, overlap * to)))
            }
        }
        s.inputFrames += Double(samples.count / to) * ratio
        var flushed: [Float] = []
        if let converter = s.converter, converter.inputRate != buffer.format.sampleRate {
            // Another rate than the converter's: what it holds comes first.
            flushed = try converter.flush()
            s.converter = nil
        }
        if buffer.format.sampleRate != format.sampleRate {
            if s.converter == nil {
                s.converter = try StreamResampler(from: buffer.format.sampleRate, to: format.sampleRate, channels: to)
            }
            samples = try s.converter!.process(samples)
        }
        return flushed + samples
    }

    private func makeGraph(_ format: AVAudioFormat) throws -> SpeechGraph {
        var b = GraphBuilder()
        b.pushInput("mic", format: format)
        // The first detector's sensitivity is the vad's preset.
        b.node("vad", "vad", detectors.first.map { ["preset": $0.preset] } ?? [:])
        b.connect("mic.out", "vad.in")
        for (i, module) in modules.enumerated() {
            var settings = module.recognizer
            // The model of the module's locale: another language's would transcribe into the wrong one.
            settings["model"] = graphQuoted(try module.modelName())
            b.node("asr\(i)", "recognizer", settings)
            b.connect("vad.out", "asr\(i).in")
            b.connect("vad.events", "asr\(i).control")
        }
        return try SpeechGraph(b)
    }

    /// Ends the input, waits for every result, and ends the modules' result sequences. `time` is taken for
    /// Apple's signature: all the audio given so far is analysed, also after it. The reading of the input
    /// sequence of `init(inputSequence:modules:)` stops here (a live sequence need not end first).
    public func finalizeAndFinish(through time: CMTime) async throws {
        if let analysis = autonomous.withLock({ $0 }) {
            analysis.cancel()
            _ = try? await analysis.value
        }
        try await finish()
    }

    /// Ends the input (after the input sequence of `init(inputSequence:modules:)` ends), waits for every result,
    /// and ends the modules' result sequences.
    public func finalizeAndFinishThroughEndOfInput() async throws {
        if let analysis = autonomous.withLock({ $0 }) { _ = try await analysis.value }
        try await finish()
    }

    private func finish() async throws {
        let (graph, input, forwarders, tail) = state.withLock { s in
            s.finished = true
            // What a converter's filter still holds: the end of the last converted buffer (counted already).
            let tail = (try? s.converter?.flush()) ?? []
            s.converter = nil
            return (s.graph, s.input, s.forwarders, tail)
        }
        if !tail.isEmpty { input?.push(tail) }
        guard let graph else {
            for m in modules { m.continuation.finish() }
            for d in detectors { d.continuation.finish() }
            return
        }
        input?.end()
        try await graph.finish()
        for f in forwarders { await f.value }
    }

    /// Stops at once: results in flight are dropped, the modules' result sequences end.
    public func cancelAndFinishNow() throws {
        let graph = state.withLock { s in
            s.finished = true
            return s.graph
        }
        graph?.stop()
        for m in modules { m.continuation.finish() }
        for d in detectors { d.continuation.finish() }
    }
}

extension GraphBuilder {
    /// A `push.input` node for buffers of this format, holding 30 s of them: the Apple-shaped types' input (an
    /// analyzer's, a buffer request's).
    mutating func pushInput(_ name: String, format: AVAudioFormat) {
        node(
            name, "push.input",
            ["rate": "\(Int(format.sampleRate)) Hz", "channels": "\(format.channelCount)", "buffer": "30 s"])
    }
}
