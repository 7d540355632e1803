import Foundation
import SpeechGraph

/// `speechgraph-bench apple-urls [--lm SPEC] FILE...`: each file through Apple's classic API (an
/// `SFSpeechURLRecognitionRequest`, final result only), with the custom language model SPEC prepared as the SpokenWord
/// sample prepares one (`prepareCustomLanguageModel`, the configuration's default weight) when given; prints
/// `file<TAB>text` a line, for wer.py.
func appleURLs(_ files: [String], lm: String?) {
    let done = DispatchSemaphore(value: 0)
    Task.detached {
        defer { done.signal() }
        var configuration: SFSpeechLanguageModel.Configuration?
        if let lm {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent(
                "speechgraph-bench-lm-\(getpid())")
            defer { try? FileManager.default.removeItem(at: directory) }
            let c = SFSpeechLanguageModel.Configuration(languageModel: directory)
            do {
                try await SFSpeechLanguageModel.prepareCustomLanguageModel(
                    for: URL(fileURLWithPath: lm), clientIdentifier: "speechgraph-bench", configuration: c)
            } catch {
                fail("\(lm): \(error)")
            }
            configuration = c
            await read(files, configuration)
        } else {
            await read(files, nil)
        }
    }
    done.wait()
}

private func read(_ files: [String], _ configuration: SFSpeechLanguageModel.Configuration?) async {
    guard let recognizer = SFSpeechRecognizer(locale: Locale(identifier: "en-US")) else { fail("no en-US model") }
    recognizer.queue = OperationQueue()
    for file in files {
        let request = SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: file))
        request.shouldReportPartialResults = false
        request.customizedLanguageModel = configuration
        let text = await withCheckedContinuation { (c: CheckedContinuation<String, Never>) in
            recognizer.recognitionTask(with: request) { result, error in
                if let error {
                    note("\(file): \(error.localizedDescription)")
                    c.resume(returning: "")
                } else if let result, result.isFinal {
                    c.resume(returning: result.bestTranscription.formattedString)
                }
            }
        }
        print("\(file)\t\(text)")
    }
}
