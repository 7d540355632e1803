import Foundation
import SpeechGraph

@main
struct Hello {
    static func main() async throws {
        let file = CommandLine.arguments.dropFirst().first ?? "call.wav"
        let graph = try SpeechGraph(
            source: """
                node speech = file.input { path: "\(file)" }
                node asr    = recognizer { mode: streaming, alternatives: 3 }
                speech -> asr
                """)
        try graph.start()
        for try await result in graph.results(of: "asr") {
            guard result.isFinal else {
                print("…", result.plainText)  // volatile: may still change
                continue
            }
            for run in result.text.runs {
                guard let range = run.audioTimeRange, let confidence = run.transcriptionConfidence else { continue }
                let word = String(result.text[run.range].characters)
                print(String(format: "%6.2f-%6.2f %.2f ", range.start.seconds, range.end.seconds, confidence) + word)
            }
            if result.matches(["call my mother"]) { print("heard it") }
        }
        graph.stop()
    }
}
