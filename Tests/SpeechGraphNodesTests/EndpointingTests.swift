import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

extension Decoding {
    /// The vad node cuts a stream into utterances; the recognizer gives volatile results while each lasts
    /// and one final result when it ends.
    @Suite(.tags(.model)) struct EndpointingTests {
        let dir = TemporaryDirectory()

        /// 1 s of silence, sentence, 1.5 s of silence, sentence, 1 s of silence.
        func twoSentences() throws -> String { try Sentences.both(in: dir, gap: 1.5, trailing: 1.0) }

        @Test func eachSpeechRegionIsOneUtteranceWithVolatileThenFinalResults() throws {
            let wav = try twoSentences()
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node vad = vad
                node asr = recognizer { mode: streaming }
                node out = collect
                src -> vad -> asr -> out
                vad.events -> asr.control, out
                """)
            let results = events.compactMap { if case .result(let t) = $0 { t } else { nil } }
            let finals = results.filter(\.isFinal)
            #expect(finals.count == 2)
            #expect(finals.map(\.utterance) == [1, 2])
            try #require(finals.count == 2)
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: finals.first?.text ?? "") <= 0.25)
            #expect(wordErrorRate(reference: Sentences.weather, hypothesis: finals.last?.text ?? "") <= 0.25)
            // The first utterance lies around the first sentence (1 s in), the second after the pause.
            #expect(finals[0].range.start > 0.5 && finals[0].range.start < 1.2, "\(finals[0].range)")
            #expect(finals[1].range.start > finals[0].range.end)
            // Volatile results come before their final, belong to its utterance, and change every time.
            for final in finals {
                let volatile = results.filter { !$0.isFinal && $0.utterance == final.utterance }
                #expect(volatile.count >= 3, "utterance \(final.utterance): \(volatile.count) volatile results")
                for (a, b) in zip(volatile, volatile.dropFirst()) { #expect(a.text != b.text) }
                let lastVolatile = try #require(results.lastIndex { !$0.isFinal && $0.utterance == final.utterance })
                let finalIndex = try #require(results.firstIndex { $0.isFinal && $0.utterance == final.utterance })
                #expect(lastVolatile < finalIndex)
            }
            // Each utterance's speechEnded and final result both come before the next speechStarted (which of
            // the two a sink sees first depends on the order of the edges from vad.events).
            let order = events.compactMap { e -> String? in
                switch e {
                case .speechStarted: return "start"
                case .speechEnded: return "end"
                case .result(let t) where t.isFinal: return "final"
                default: return nil
                }
            }
            #expect(order.count == 6)
            #expect(order[0] == "start" && order[3] == "start")
            #expect(Set(order[1...2]) == ["end", "final"] && Set(order[4...5]) == ["end", "final"])
        }

        @Test func volatileResultsCanBeTurnedOffAndUtteranceModeHasNone() throws {
            let wav = try twoSentences()
            for settings in [
                "mode: streaming, volatile: 0 ms", "mode: streaming, results: final-only", "mode: utterance",
            ] {
                let (events, _) = try Harness.run(
                    """
                    node src = file.input { path: "\(wav)" }
                    node vad = vad
                    node asr = recognizer { \(settings) }
                    node out = collect
                    src -> vad -> asr -> out
                    vad.events -> asr.control
                    """)
                let results = events.compactMap { if case .result(let t) = $0 { t } else { nil } }
                #expect(results.count == 2, "\(settings)")
                #expect(results.allSatisfy { $0.isFinal })
            }
        }

        /// `results: fast` ends the utterance where the vad reports a pause, before the longer pause that ends
        /// speech: two sentences 0.4 s apart (0.6 s from voice to voice), with the vad holding pauses of 1 s, are one
        /// utterance in progressive mode and two in fast mode, the first final before the second sentence begins.
        @Test func fastResultsEndTheUtteranceAtAPause() throws {
            let both = try Sentences.both(in: dir, gap: 0.4, trailing: 1.0)
            let firstEnd = 1.0 + (try TestSpeech.duration(dir.path("call.wav")))
            func run(_ results: String) throws -> (finals: [Transcription], events: [GraphEvent]) {
                let (events, _) = try Harness.run(
                    """
                    node src = file.input { path: "\(both)" }
                    node vad = vad { min-silence: 1 s, hangover: 1 s, pause: 150 ms }
                    node asr = recognizer { mode: streaming, results: \(results) }
                    node out = collect
                    src -> vad -> asr -> out
                    vad.events -> asr.control, out
                    """)
                return (events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }, events)
            }
            let progressive = try run("progressive")
            #expect(progressive.finals.count == 1, "\(progressive.finals.map(\.text))")
            let fast = try run("fast")
            #expect(fast.events.contains { if case .speechPaused = $0 { true } else { false } })
            #expect(fast.events.contains { if case .speechResumed = $0 { true } else { false } })
            try #require(fast.finals.count == 2, "\(fast.finals.map(\.text))")
            #expect(fast.finals.map(\.utterance) == [1, 2])
            #expect(fast.finals[0].range.end < firstEnd + 0.4, "\(fast.finals[0].range), sentence ends at \(firstEnd)")
            #expect(
                wordErrorRate(reference: Sentences.call, hypothesis: fast.finals[0].text) <= 0.25,
                "\(fast.finals[0].text)")
            #expect(
                wordErrorRate(reference: Sentences.weather, hypothesis: fast.finals[1].text) <= 0.25,
                "\(fast.finals[1].text)")
            // Volatile results in fast mode too, each before its utterance's final.
            let results = fast.events.compactMap { if case .result(let t) = $0 { t } else { nil } }
            for final in fast.finals {
                let finalIndex = try #require(results.firstIndex { $0.isFinal && $0.utterance == final.utterance })
                #expect(results[..<finalIndex].contains { !$0.isFinal && $0.utterance == final.utterance })
                #expect(!results[finalIndex...].contains { !$0.isFinal && $0.utterance == final.utterance })
            }
        }

        /// Unbroken speech longer than 'max-utterance' is split at quiet points into utterances no longer than
        /// the maximum, each with its final result, and together they still say it all.
        @Test(arguments: ["utterance", "streaming"])
        func longUtterancesAreSplit(mode: String) throws {
            var parts: [String] = []
            for (i, text) in [Sentences.call, Sentences.weather, Sentences.call, Sentences.weather].enumerated() {
                let part = dir.path("p\(i).wav")
                try TestSpeech.synthesize(text, to: part)
                parts.append(part)
            }
            let long = dir.path("long.wav")
            try TestSpeech.sox(parts + [long])
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(long)" }
                node asr = recognizer { mode: \(mode), max-utterance: 4 s, volatile: 0 ms }
                node out = collect
                src -> asr -> out
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            #expect(finals.count >= 3, "\(finals.map(\.range))")
            for f in finals { #expect(f.range.duration <= 4.0 + 0.07, "\(f.range)") }
            for (a, b) in zip(finals, finals.dropFirst()) {
                #expect(abs(b.range.start - a.range.end) < 0.07, "\(a.range) then \(b.range)")
                #expect(b.utterance == a.utterance + 1)
            }
            let reference = [Sentences.call, Sentences.weather, Sentences.call, Sentences.weather].joined(
                separator: " ")
            let wer = wordErrorRate(reference: reference, hypothesis: finals.map(\.text).joined(separator: " "))
            #expect(wer <= 0.35, "\(finals.map(\.text))")
        }
    }
}
