import Foundation
import SpeechGraph

func createDictationTranscriber(locale: Locale) -> DictationTranscriber {
    let preset = DictationTranscriber.Preset.progressiveLongDictation
    let contentHints = preset.contentHints
    return DictationTranscriber(
        locale: locale,
        contentHints: contentHints,
        transcriptionOptions: preset.transcriptionOptions,
        reportingOptions: preset.reportingOptions,
        attributeOptions: preset.attributeOptions
    )
}

let path = CommandLine.arguments.dropFirst().first ?? "speech.wav"
let locale = await DictationTranscriber.supportedLocales.first ?? Locale(identifier: "en_US")
let transcriber = createDictationTranscriber(locale: locale)
let modules: [any SpeechModule] = [transcriber]
let analyzer = SpeechAnalyzer(modules: modules)

let (audioSequence, continuation) = AsyncStream.makeStream(of: AnalyzerInput.self)
let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
Task {
    while file.framePosition < file.length {
        let buffer = AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: 1600)!
        try file.read(into: buffer)
        continuation.yield(AnalyzerInput(buffer: buffer))
    }
    continuation.finish()
}
let transcripts = Task {
    for try await result in transcriber.results {
        print(result.isFinal ? "final:" : "volatile:", String(result.text.characters))
    }
}
let lastAudioTime = try await analyzer.analyzeSequence(audioSequence)
if let lastAudioTime {
    try await analyzer.finalizeAndFinish(through: lastAudioTime)
}
try await transcripts.value
