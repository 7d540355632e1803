import Foundation
import SpeechGraph

let path = CommandLine.arguments.dropFirst().first ?? "speech.wav"

// Step 1: Modules
guard let locale = SpeechTranscriber.supportedLocale(equivalentTo: Locale.current) else {
    fatalError("unsupported language")
}
let transcriber = SpeechTranscriber(locale: locale, preset: .offlineTranscription)

// Step 2: Input sequence
let (inputSequence, inputBuilder) = AsyncStream.makeStream(of: AnalyzerInput.self)

// Step 3: Analyzer
let audioFormat = await SpeechAnalyzer.bestAvailableAudioFormat(compatibleWith: [transcriber])
let analyzer = SpeechAnalyzer(inputSequence: inputSequence, modules: [transcriber])

// Step 4: Supply audio
let file = try AVAudioFile(forReading: URL(fileURLWithPath: path))
Task {
    while file.framePosition < file.length {
        let pcmBuffer = AVAudioPCMBuffer(pcmFormat: file.processingFormat, frameCapacity: 4096)!
        try file.read(into: pcmBuffer)
        let input = AnalyzerInput(buffer: pcmBuffer)
        inputBuilder.yield(input)
    }
    inputBuilder.finish()
}

// Step 6: Act on results
let printing = Task {
    do {
        for try await result in transcriber.results {
            let bestTranscription = result.text  // an AttributedString
            let plainTextBestTranscription = String(bestTranscription.characters)  // a String
            print(plainTextBestTranscription)
        }
    } catch {
        print("error: \(error)")
    }
}

// Step 5: Perform analysis
let lastSampleTime = try await analyzer.analyzeSequence(inputSequence)

// Step 7: Finish analysis
if let lastSampleTime {
    try await analyzer.finalizeAndFinish(through: lastSampleTime)
} else {
    try analyzer.cancelAndFinishNow()
}
await printing.value
_ = audioFormat
