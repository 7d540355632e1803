import SpeechGraphAudio

/// How a recording is read when nothing says otherwise: one place for `speechgraph transcribe` and the Apple API's
/// file request (`SFSpeechURLRecognitionRequest`), so that both give the same text.
public enum FileTranscription {
    /// Input longer than this is cut into utterances by the vad node; shorter input is one utterance.
    public static let vadThresholdSeconds = 30.0

    /// Whether audio of this length is cut into utterances by the vad.
    public static func cutsIntoUtterances(seconds: Double) -> Bool { seconds > vadThresholdSeconds }

    /// Whether the file at `path` is cut into utterances by the vad (`false` when it cannot be read: its reader
    /// says why).
    public static func cutsIntoUtterances(path: String) -> Bool {
        guard let f = try? AudioFile(path: path), f.sampleRate > 0 else { return false }
        return cutsIntoUtterances(seconds: Double(f.frameCount) / Double(f.sampleRate))
    }
}
