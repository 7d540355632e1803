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
    init(_ r: TimeRange) { self.init(start: CMTime(seconds: r.start), end: CMTime(seconds: r.end)) }
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
    /// The best transcription; each word's run carries `audioTimeRange` and `transcriptionConfidence`.
    public let text: AttributedString
    /// The other readings (the recognizer's n-best list), best first.
    public let alternatives: [AttributedString]
    public let range: CMTimeRange
    public let isFinal: Bool
    /// Audio up to this time will not change any more.
    public let resultsFinalizationTime: CMTime

    init(_ r: SpeechResult) {
        text = r.text
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

    init(locale: Locale, progressive: Bool, recognizer extra: [String: String] = [:]) {
        self.locale = locale
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
    public static func supportedLocale(equivalentTo locale: Locale) -> Locale? {
        let language = locale.language.languageCode?.identifier
        return installed().first { $0.language.languageCode?.identifier == language }
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
        let language = locale.language.languageCode?.identifier
        let models = Self.models()
        guard let model = models.first(where: { $0.locale.language.languageCode?.identifier == language }) else {
            let have = models.map(\.locale.identifier).joined(separator: ", ")
            throw SpeechGraph.Error.failed(
                "no model for locale \(locale.identifier) (installed: \(have.isEmpty ? "none" : have))")
        }
        return model.name
    }
}

/// Speech to text, as Apple's `SpeechTranscriber`.
public final class SpeechTranscriber: TranscriberCore, SpeechModule, @unchecked Sendable {
    public struct Preset: Sendable, Equatable {
        let progressive: Bool
        /// Final results only, each utterance decoded whole: the most accurate.
        public static let offlineTranscription = Preset(progressive: false)
        public static let transcription = Preset(progressive: false)
        /// Volatile results while speaking, then final ones.
        public static let progressiveTranscription = Preset(progressive: true)
        public static let progressiveLiveTranscription = Preset(progressive: true)
        public static let timeIndexedProgressiveTranscription = Preset(progressive: true)
    }

    public enum TranscriptionOption: Hashable, Sendable { case etiquetteReplacements }
    public enum ReportingOption: Hashable, Sendable { case volatileResults, alternativeTranscriptions, fastResults }
    public enum ResultAttributeOption: Hashable, Sendable { case audioTimeRange, transcriptionConfidence }

    public init(locale: Locale, preset: Preset) { super.init(locale: locale, progressive: preset.progressive) }

    /// Volatile results with `.volatileResults`, and each final result's `alternatives` with
    /// `.alternativeTranscriptions` (the recognizer's n-best list). The attributes are always there;
    /// `.etiquetteReplacements` and `.fastResults` change nothing.
    public init(
        locale: Locale, transcriptionOptions: Set<TranscriptionOption>, reportingOptions: Set<ReportingOption>,
        attributeOptions: Set<ResultAttributeOption>
    ) {
        super.init(
            locale: locale, progressive: reportingOptions.contains(.volatileResults),
            recognizer: reportingOptions.contains(.alternativeTranscriptions) ? Self.alternatives : [:])
    }
}

/// Dictation, as Apple's `DictationTranscriber`.
public final class DictationTranscriber: TranscriberCore, SpeechModule, @unchecked Sendable {
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
        super.init(locale: locale, progressive: reportingOptions.contains(.volatileResults), recognizer: extra)
    }
}

/// Runs modules over audio, as Apple's `SpeechAnalyzer`: one speechgraph graph, push.input -> vad ->
/// recognizer, made when the first buffer shows the audio's format.
public final class SpeechAnalyzer: Sendable {
    private let modules: [TranscriberCore]
    private struct State {
        var graph: SpeechGraph?
        var input: AudioInput?
        var forwarders: [Task<Void, Never>] = []
        var frames: Int64 = 0
        var rate: Double = 0
        var finished = false
    }
    private let state = Mutex(State())

    public init(modules: [any SpeechModule]) {
        self.modules = modules.compactMap { $0 as? TranscriberCore }
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
            try feed(input.buffer)
        }
        return state.withLock { $0.graph == nil ? nil : CMTime(seconds: Double($0.frames) / $0.rate) }
    }

    private func feed(_ buffer: AVAudioPCMBuffer) throws {
        let input: AudioInput? = try state.withLock { s in
            if s.finished { return nil }
            if s.graph == nil {
                s.rate = buffer.format.sampleRate
                let graph: SpeechGraph
                do { graph = try makeGraph(buffer.format) } catch {
                    // The session is finished: the modules' results throw the same error.
                    s.finished = true
                    for m in modules { m.continuation.finish(throwing: error) }
                    throw error
                }
                s.input = try graph.input("mic")
                for (i, module) in modules.enumerated() {
                    let results = graph.results(of: "asr\(i)")
                    s.forwarders.append(
                        Task {
                            do {
                                for try await r in results { module.continuation.yield(SpeechTranscriptionResult(r)) }
                                module.continuation.finish()
                            } catch {
                                module.continuation.finish(throwing: error)
                            }
                        })
                }
                try graph.start()
                s.graph = graph
            }
            s.frames += Int64(buffer.frameLength)
            return s.input
        }
        input?.push(buffer.interleaved())
    }

    private func makeGraph(_ format: AVAudioFormat) throws -> SpeechGraph {
        var b = GraphBuilder()
        b.node(
            "mic", "push.input",
            ["rate": "\(Int(format.sampleRate)) Hz", "channels": "\(format.channelCount)", "buffer": "30 s"])
        b.node("vad", "vad")
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
        let (graph, input, forwarders) = state.withLock { s in
            s.finished = true
            return (s.graph, s.input, s.forwarders)
        }
        guard let graph else {
            for m in modules { m.continuation.finish() }
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
    }
}
