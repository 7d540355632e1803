// The code of the blog post "Speech Framework — Live Transcription: Building Voice-Controlled Features"
// (../shared/reference/apple-speech/live-transcription-blog-post.txt) with `import SpeechGraph` in place of
// `import Speech` and `import AVFoundation`, and its TranscriptionEngine without `ObservableObject` and `@Published`
// (Combine and SwiftUI do not port), then a driver of this program's own (below the line): `LiveTranscription
// FILE` prints the file's final transcription, its segments and whether it said "Nemo".
import Foundation
import SpeechGraph

// MARK: - The blog post's code

func transcribeAudioFile(url: URL) {
    let recognizer = SFSpeechRecognizer()
    let request = SFSpeechURLRecognitionRequest(url: url)
    recognizer?.recognitionTask(with: request) { result, error in
        if let result {
            print(result.bestTranscription.formattedString)
        }
    }
}

func requestSpeechAuthorization() async -> Bool {
    let speechStatus = await withCheckedContinuation { continuation in
        SFSpeechRecognizer.requestAuthorization { status in
            continuation.resume(returning: status)
        }
    }
    guard speechStatus == .authorized else {
        print("Speech recognition not authorized: \(speechStatus)")
        return false
    }
    // Microphone access uses AVAudioSession's AVFoundation permission
    let micGranted = await AVAudioApplication.requestRecordPermission()
    return micGranted
}

@MainActor
final class TranscriptionEngine {
    private(set) var transcript = ""
    private(set) var isListening = false
    private let speechRecognizer =
        SFSpeechRecognizer(locale: Locale(identifier: "en-US"))!
    private let audioEngine = AVAudioEngine()
    private var recognitionRequest: SFSpeechAudioBufferRecognitionRequest?
    private var recognitionTask: SFSpeechRecognitionTask?

    func startListening() throws {
        // Cancel any in-flight task before starting a new one
        stopListening()
        let request = SFSpeechAudioBufferRecognitionRequest()
        request.shouldReportPartialResults = true
        request.addsPunctuation = true  // iOS 16+
        recognitionRequest = request
        let inputNode = audioEngine.inputNode
        let recordingFormat = inputNode.outputFormat(forBus: 0)
        inputNode.installTap(
            onBus: 0,
            bufferSize: 1024,
            format: recordingFormat
        ) { [weak request] buffer, _ in
            request?.append(buffer)
        }
        audioEngine.prepare()
        try audioEngine.start()
        isListening = true
        recognitionTask = speechRecognizer.recognitionTask(
            with: request
        ) { [weak self] result, error in
            guard let self else { return }
            if let result {
                Task { @MainActor in
                    self.transcript =
                        result.bestTranscription.formattedString
                }
            }
            if error != nil || result?.isFinal == true {
                Task { @MainActor in
                    self.stopListening()
                }
            }
        }
    }

    func stopListening() {
        audioEngine.stop()
        audioEngine.inputNode.removeTap(onBus: 0)
        recognitionRequest?.endAudio()
        recognitionTask?.cancel()
        recognitionRequest = nil
        recognitionTask = nil
        isListening = false
    }

    // Word-Level Timestamps and Segments
    func printSegments(request: SFSpeechAudioBufferRecognitionRequest) {
        recognitionTask = speechRecognizer.recognitionTask(with: request) {
            [weak self] result, _ in
            guard let self, let result else { return }
            let transcription = result.bestTranscription
            for segment in transcription.segments {
                let word = segment.substring
                let timestamp = segment.timestamp  // TimeInterval from start
                let duration = segment.duration  // How long the word lasted
                let confidence = segment.confidence  // 0.0 to 1.0
                print("\(word) at \(timestamp)s (\(duration)s, \(confidence))")
            }
            _ = self
        }
    }
}

// Alternative Interpretations
func printAlternatives(_ transcription: SFTranscription) {
    for segment in transcription.segments {
        if !segment.alternativeSubstrings.isEmpty {
            print("'\(segment.substring)' alternatives: \(segment.alternativeSubstrings)")
        }
    }
}

func matchesCharacterName(
    _ target: String,
    in transcription: SFTranscription
) -> Bool {
    let lowered = target.lowercased()
    for segment in transcription.segments {
        let candidates =
            [segment.substring] + segment.alternativeSubstrings
        if candidates.contains(where: { $0.lowercased() == lowered }) {
            return true
        }
    }
    return false
}

// On-Device vs. Server-Based Recognition
func configureOnDevice(_ request: SFSpeechAudioBufferRecognitionRequest) {
    let recognizer = SFSpeechRecognizer(
        locale: Locale(identifier: "en-US")
    )
    if recognizer?.supportsOnDeviceRecognition == true {
        request.requiresOnDeviceRecognition = true
    } else {
        // Fall back to server-based. The device may not have
        // downloaded the on-device model for this locale yet.
        request.requiresOnDeviceRecognition = false
    }
}

// Task-Level Control with Async/Await
func transcriptionStream(
    recognizer: SFSpeechRecognizer,
    request: SFSpeechAudioBufferRecognitionRequest
) -> AsyncStream<String> {
    AsyncStream { continuation in
        recognizer.recognitionTask(with: request) { result, error in
            if let result {
                continuation.yield(
                    result.bestTranscription.formattedString
                )
                if result.isFinal {
                    continuation.finish()
                }
            }
            if error != nil {
                continuation.finish()
            }
        }
        continuation.onTermination = { _ in
            request.endAudio()
        }
    }
}

// Handling Interruptions and Audio Route Changes (in a listener of its own: the post shows no enclosing type)
final class InterruptionListener: @unchecked Sendable {
    private(set) var interruptions: [String] = []
    func stopListening() { interruptions.append("stopped") }
    func startListening() throws { interruptions.append("restarted") }

    func observe() {
        NotificationCenter.default.addObserver(
            forName: AVAudioSession.interruptionNotification,
            object: nil,
            queue: .main
        ) { notification in
            guard let info = notification.userInfo,
                let typeValue = info[
                    AVAudioSessionInterruptionTypeKey
                ] as? UInt,
                let type = AVAudioSession.InterruptionType(
                    rawValue: typeValue
                )
            else { return }
            switch type {
            case .began:
                // Audio was interrupted — pause recognition
                self.stopListening()
            case .ended:
                // Interruption ended — safe to restart if needed
                let options =
                    info[
                        AVAudioSessionInterruptionOptionKey
                    ] as? UInt ?? 0
                if AVAudioSession.InterruptionOptions(
                    rawValue: options
                ).contains(.shouldResume) {
                    try? self.startListening()
                }
            @unknown default:
                break
            }
        }
    }
}

// MARK: - This program's driver

guard await requestSpeechAuthorization() else { exit(1) }
guard let path = CommandLine.arguments.dropFirst().first else {
    FileHandle.standardError.write(Data("usage: LiveTranscription FILE\n".utf8))
    exit(2)
}
let recognizer = SFSpeechRecognizer(locale: Locale(identifier: "en-US"))!
let final = await withCheckedContinuation { (c: CheckedContinuation<SFSpeechRecognitionResult?, Never>) in
    recognizer.recognitionTask(with: SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: path))) {
        result, error in
        if let error {
            FileHandle.standardError.write(Data("LiveTranscription: \(error.localizedDescription)\n".utf8))
            c.resume(returning: nil)
        } else if let result, result.isFinal {
            c.resume(returning: result)
        }
    }
}
guard let final else { exit(1) }
print("final: \(final.bestTranscription.formattedString)")
for segment in final.bestTranscription.segments {
    print("segment: \(segment.substring) \(segment.timestamp) \(segment.duration) \(segment.confidence)")
}
printAlternatives(final.bestTranscription)
print("nemo: \(matchesCharacterName("Nemo", in: final.bestTranscription))")
