// Apple's SpokenWord sample (iOS 17: "Recognizing speech in live audio") as a terminal program: its audio session,
// input node and tap, request (partial results, on-device, the customized chess model), recognition task,
// availability delegate and custom language model, with `import SpeechGraph` in place of `import Speech` and
// `import AVFoundation`, and the terminal as its text view: each result is printed as a line (`partial: ...`,
// `final: ...`), availability as `available: true|false`. Return (or the end of standard input) is its Stop
// Recording button. The input node is a JACK client (docs/api.md): SPEECHGRAPH_CAPTURE names the ports it connects
// to. `--no-custom-lm` leaves the chess model out.
import Foundation
import SpeechGraph

// Unchecked Sendable, as the sample's view controller is Sendable by being the main actor's: the terminal's own
// code below hands it to the thread that reads Return.
final class SpokenWord: SFSpeechRecognizerDelegate, @unchecked Sendable {
    // MARK: Properties

    private let speechRecognizer = SFSpeechRecognizer(locale: Locale(identifier: "en-US"))!

    private var recognitionRequest: SFSpeechAudioBufferRecognitionRequest?

    private var recognitionTask: SFSpeechRecognitionTask?

    private let audioEngine = AVAudioEngine()

    private var lmConfiguration: SFSpeechLanguageModel.Configuration {
        let outputDir = FileManager.default.temporaryDirectory.appendingPathComponent("SpokenWord-\(getuid())")
        let dynamicLanguageModel = outputDir.appendingPathComponent("LM")
        let dynamicVocabulary = outputDir.appendingPathComponent("Vocab")
        return SFSpeechLanguageModel.Configuration(languageModel: dynamicLanguageModel, vocabulary: dynamicVocabulary)
    }

    private let useCustomLM: Bool
    private let finished = DispatchSemaphore(value: 0)

    init(useCustomLM: Bool) { self.useCustomLM = useCustomLM }

    // MARK: The sample's viewDidLoad: the delegate, and the custom language model prepared off the main thread

    func load() async {
        speechRecognizer.delegate = self
        guard useCustomLM else { return }
        do {
            // The sample's datagenerator, run here: its output is the asset the app ships.
            let assetUrl = FileManager.default.temporaryDirectory.appendingPathComponent("CustomLMData-\(getuid()).bin")
            try await SpokenWord.trainingData.export(to: assetUrl)
            try await SFSpeechLanguageModel.prepareCustomLanguageModel(
                for: assetUrl,
                clientIdentifier: "com.apple.SpokenWord",
                configuration: self.lmConfiguration)
        } catch {
            FileHandle.standardError.write(Data("Failed to prepare custom LM: \(error.localizedDescription)\n".utf8))
        }
    }

    /// The sample's datagenerator (`SFCustomLanguageModelData`): chess moves and openings.
    static var trainingData: SFCustomLanguageModelData {
        SFCustomLanguageModelData(
            locale: Locale(identifier: "en_US"), identifier: "com.apple.SpokenWord", version: "1.0"
        ) {
            SFCustomLanguageModelData.PhraseCount(phrase: "Play the Albin counter gambit", count: 10)
            SFCustomLanguageModelData.PhraseCountsFromTemplates(classes: [
                "piece": ["pawn", "rook", "knight", "bishop", "queen", "king"],
                "royal": ["queen", "king"],
                "rank": Array(1...8).map({ String($0) }),
            ]) {
                SFCustomLanguageModelData.TemplatePhraseCountGenerator.Template(
                    "<piece> to <royal> <piece> <rank>",
                    count: 10_000
                )
            }
            SFCustomLanguageModelData.CustomPronunciation(grapheme: "Winawer", phonemes: ["w I n aU @r"])
            SFCustomLanguageModelData.CustomPronunciation(grapheme: "Tartakower", phonemes: ["t A r t @ k aU @r"])
            SFCustomLanguageModelData.PhraseCount(phrase: "Play the Winawer variation", count: 10)
            SFCustomLanguageModelData.PhraseCount(phrase: "Play the Tartakower", count: 10)
        }
    }

    // MARK: The sample's startRecording

    func startRecording() throws {
        // Cancel the previous task if it's running.
        recognitionTask?.cancel()
        self.recognitionTask = nil

        // Configure the audio session for the app.
        let audioSession = AVAudioSession.sharedInstance()
        try audioSession.setCategory(.record, mode: .measurement, options: .duckOthers)
        try audioSession.setActive(true, options: .notifyOthersOnDeactivation)
        let inputNode = audioEngine.inputNode

        // Create and configure the speech recognition request.
        recognitionRequest = SFSpeechAudioBufferRecognitionRequest()
        guard let recognitionRequest = recognitionRequest else {
            fatalError("Unable to created a SFSpeechAudioBufferRecognitionRequest object")
        }
        recognitionRequest.shouldReportPartialResults = true

        // Keep speech recognition data on device
        if #available(iOS 13, *) {
            recognitionRequest.requiresOnDeviceRecognition = true
            if #available(iOS 17, *), useCustomLM {
                recognitionRequest.customizedLanguageModel = self.lmConfiguration
            }
        }

        // Create a recognition task for the speech recognition session.
        // Keep a reference to the task so that it can be canceled.
        recognitionTask = speechRecognizer.recognitionTask(with: recognitionRequest) { result, error in
            var isFinal = false

            if let result = result {
                // Update the text view with the results.
                isFinal = result.isFinal
                show("\(isFinal ? "final" : "partial"): \(result.bestTranscription.formattedString)")
            }

            if error != nil || isFinal {
                if let error { show("error: \(error.localizedDescription)") }
                // Stop recognizing speech if there is a problem.
                self.audioEngine.stop()
                inputNode.removeTap(onBus: 0)

                self.recognitionRequest = nil
                self.recognitionTask = nil

                self.finished.signal()
            }
        }

        // Configure the microphone input.
        let recordingFormat = inputNode.outputFormat(forBus: 0)
        inputNode.installTap(onBus: 0, bufferSize: 1024, format: recordingFormat) {
            (buffer: AVAudioPCMBuffer, when: AVAudioTime) in
            self.recognitionRequest?.append(buffer)
        }

        audioEngine.prepare()
        try audioEngine.start()

        // Let the user know to start talking.
        FileHandle.standardError.write(Data("(Go ahead, I'm listening; Return stops)\n".utf8))
    }

    // MARK: SFSpeechRecognizerDelegate

    public func speechRecognizer(_ speechRecognizer: SFSpeechRecognizer, availabilityDidChange available: Bool) {
        show("available: \(available)")
    }

    // MARK: The sample's recordButtonTapped, when recording

    func stopRecording() {
        audioEngine.stop()
        recognitionRequest?.endAudio()
    }

    /// Waits for the final result (or an error), on a thread of its own (not one of the system pool's few, which
    /// the recognizer's deliveries use).
    func waitForTheEnd() async {
        let finished = finished
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                finished.wait()
                c.resume()
            }
        }
    }
}

/// The text view: a line on standard output, written at once.
func show(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let app = SpokenWord(useCustomLM: !CommandLine.arguments.contains("--no-custom-lm"))
await app.load()
let status = await withCheckedContinuation { c in SFSpeechRecognizer.requestAuthorization { c.resume(returning: $0) } }
guard status == .authorized else { fatalError("speech recognition not authorized") }
do {
    try app.startRecording()
} catch {
    FileHandle.standardError.write(Data("SpokenWord: \(error)\n".utf8))
    exit(1)
}
// The Stop Recording button: a line (or the end) of standard input, handled on the main queue as a tap would be.
Thread.detachNewThread {
    _ = readLine()
    DispatchQueue.main.async { app.stopRecording() }
}
await app.waitForTheEnd()
