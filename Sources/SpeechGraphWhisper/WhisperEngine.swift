import Foundation
import SpeechGraphCore

/// One recognizer's use of a shared ``WhisperWorker``: its requests' options, and its transcripts read as words on
/// the graph's clock.
public final class WhisperEngine {
    public let worker: WhisperWorker
    public var options: WhisperOptions

    public init(worker: WhisperWorker, options: WhisperOptions) {
        self.worker = worker
        self.options = options
    }

    /// The transcript's words, each trimmed of Whisper's leading space, timed from `start` (seconds), with
    /// Whisper's probability as its confidence.
    public static func words(of transcript: WhisperTranscript, from start: Double) -> [Word] {
        transcript.segments.flatMap(\.words).compactMap { w in
            let text = w.text.trimmingCharacters(in: .whitespaces)
            guard !text.isEmpty else { return nil }
            return Word(
                text: text, range: TimeRange(start: start + w.start, end: start + max(w.end, w.start)),
                confidence: min(max(w.probability, 0), 1))
        }
    }

    /// What Whisper heard with no speech in it, left out: words squeezed into no audio (``isSqueezed(_:)``), a segment
    /// whose no-speech probability is above 0.6 and whose words are unsure (their mean probability below 0.25; without
    /// words, its mean token log probability below -0.95), and a segment still repeating itself after faster-whisper's
    /// retries (a compression ratio above its own limit, 2.4). Whisper's own rule (no-speech above 0.6 and log
    /// probability below -1) keeps "You" on noise the vad let through (log probability -0.99, a word probability of
    /// 0.02); on speech (AN4's training part, clean and noisy) no segment with a no-speech probability above 0.6 had
    /// its words' mean below 0.46.
    public static func speech(in transcript: WhisperTranscript) -> WhisperTranscript {
        var kept = transcript
        kept.segments = transcript.segments.filter { !isNoSpeech($0) }
        return kept
    }

    /// Words with no audio under them: a segment whose words all lie within a tenth of a second a word (ten words a
    /// second; speech is two to five), that Whisper doubted held speech (a no-speech probability above 0.4).
    /// Whisper writes such a segment after the speech of a window ends ("Thank you.", "Thank you very much for
    /// watching and I'll see you in the next video.", often at a raised temperature), and its word timings squeeze
    /// it into the last frames of the speech. On our development set (AN4's training part, clean and noisy, packed
    /// four ways) each of the 23 such segments was the last thing Whisper wrote for its pack, in the pack's last
    /// 0.4 s; a real word that Whisper timed short ("65." in 0 s) lies inside a segment of real speech, whose
    /// no-speech probability is near 0.
    static func isSqueezed(_ segment: WhisperTranscript.Segment) -> Bool {
        guard segment.noSpeechProbability > 0.4, let first = segment.words.first, let last = segment.words.last
        else { return false }
        return last.end - first.start < 0.1 * Double(segment.words.count)
    }

    /// Whether ``speech(in:)`` leaves the segment out.
    public static func isNoSpeech(_ segment: WhisperTranscript.Segment) -> Bool {
        if segment.compressionRatio > 2.4 { return true }
        if isSqueezed(segment) { return true }
        guard segment.noSpeechProbability > 0.6 else { return false }
        guard !segment.words.isEmpty else { return segment.averageLogProbability < -0.95 }
        let mean = segment.words.map(\.probability).reduce(0, +) / Double(segment.words.count)
        return mean < 0.25
    }

    /// A pack's transcript (several utterances, one after another, `spans` their places in its audio, seconds) as
    /// one transcript each: a word belongs to the utterance its middle falls in (or the silence after it), timed
    /// from that utterance's start; a segment's text is its words'. The segments keep Whisper's signals (log
    /// probability, no-speech probability, compression ratio) for each part.
    public static func split(
        _ transcript: WhisperTranscript, spans: [(offset: Double, length: Double)]
    ) -> [WhisperTranscript] {
        var parts = spans.map { _ in WhisperTranscript(segments: [], cpuSeconds: 0) }
        guard !spans.isEmpty else { return parts }
        parts[0].cpuSeconds = transcript.cpuSeconds
        for segment in transcript.segments {
            var words = spans.map { _ in [WhisperTranscript.WordReading]() }
            for w in segment.words {
                let middle = (w.start + max(w.end, w.start)) / 2
                let k = spans.lastIndex { $0.offset <= middle } ?? 0
                let (offset, length) = spans[k]
                var moved = w
                moved.start = min(max(w.start - offset, 0), length)
                moved.end = min(max(w.end - offset, moved.start), length)
                words[k].append(moved)
            }
            for (k, ws) in words.enumerated() where !ws.isEmpty {
                var part = segment
                part.words = ws
                part.text = ws.map(\.text).joined().trimmingCharacters(in: .whitespaces)
                part.start = ws[0].start
                part.end = ws[ws.count - 1].end
                parts[k].segments.append(part)
            }
        }
        return parts
    }
}
