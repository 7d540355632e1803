import Foundation
import SpeechGraphCore

/// One recognizer's use of a shared ``WhisperWorker``: the utterance's samples gathered, decoded whole when it ends,
/// its transcript read as words on the graph's clock.
public final class WhisperEngine {
    public let worker: WhisperWorker
    public var options: WhisperOptions
    private var samples: [Int16] = []
    /// The last utterance's transcript (empty before the first).
    public private(set) var transcript = WhisperTranscript(segments: [], cpuSeconds: 0)

    public init(worker: WhisperWorker, options: WhisperOptions) {
        self.worker = worker
        self.options = options
    }

    public func start() { samples.removeAll(keepingCapacity: true) }

    public func append(_ buffer: UnsafeBufferPointer<Int16>) { samples.append(contentsOf: buffer) }

    /// Decodes the utterance gathered (a process that hangs is stopped: ``WhisperWorker/transcribe(_:options:)``).
    public func finish() throws {
        transcript = try worker.transcribe(samples, options: options)
    }

    /// Hands the utterance gathered to the engine without waiting; `completion` gets its transcript on another
    /// thread. The gathered samples are handed over, not copied.
    public func finishLater(_ completion: @escaping WhisperWorker.Completion) {
        var taken: [Int16] = []
        swap(&taken, &samples)
        worker.submit(taken, options: options, completion: completion)
    }

    /// The transcript's words, each trimmed of Whisper's leading space, timed from `start` (seconds), with
    /// Whisper's probability as its confidence.
    public func words(from start: Double) -> [Word] { Self.words(of: transcript, from: start) }

    public static func words(of transcript: WhisperTranscript, from start: Double) -> [Word] {
        transcript.segments.flatMap(\.words).compactMap { w in
            let text = w.text.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return nil }
            return Word(
                text: text, range: TimeRange(start: start + w.start, end: start + max(w.end, w.start)),
                confidence: min(max(w.probability, 0), 1))
        }
    }
}
