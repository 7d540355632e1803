import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphSphinx

/// The tests that decode with the real model. Each graph has decoders of its own, so their results do not
/// depend on the order, and they run side by side with the rest of the suite (run one at a time, they were the
/// last tests of `make test` to finish, with one core idle).
@Suite(.tags(.model)) enum Decoding {
    /// `path` through a vad that ends speech after 1 s of silence and reports pauses of 150 ms (its events collected
    /// beside the results), into a streaming recognizer with `settings`: the events, and the recognizer node.
    static func throughPauses(_ path: String, block: Int? = nil, recognizer settings: String) throws -> (
        events: [GraphEvent], node: RecognizerNode
    ) {
        let blocks = block.map { ", block: \($0)" } ?? ""
        let (events, runner) = try Harness.run(
            """
            node src = file.input { path: "\(path)"\(blocks) }
            node vad = vad { min-silence: 1 s, hangover: 1 s, pause: 150 ms }
            node asr = recognizer { mode: streaming, \(settings) }
            node out = collect
            src -> vad -> asr -> out
            vad.events -> asr.control, out
            """)
        return (events, try #require(runner.node(named: "asr") as? RecognizerNode))
    }
}

/// The real PocketSphinx with Debian's en-us model, on speech synthesised by the test.
extension Decoding {
    @Suite(.tags(.model)) struct RecognizerTests {
        let dir = TemporaryDirectory()

        @Test(arguments: ["streaming", "utterance", "streaming, lookahead: 1000 ms, second-pass: true"])
        func transcribesSynthesisedSpeech(mode: String) throws {
            let wav = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer { mode: \(mode) }
                node out = collect
                src -> asr -> out
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            #expect(finals.count == 1)
            let result = try #require(finals.first)
            let wer = wordErrorRate(reference: Sentences.call, hypothesis: result.text)
            #expect(wer <= 0.25, "'\(result.text)' is too far from '\(Sentences.call)' (WER \(wer))")
            #expect(result.utterance == 1)
            #expect(result.node == "asr")
            // The utterance covers the whole file: flite's audio is 16 kHz.
            #expect(result.range.start == 0)
            let seconds = try fileSeconds(wav)
            #expect(abs(result.range.end - seconds) < 0.001)
            // Words: in order, inside the utterance, with confidences in 0...1, and they spell the text.
            #expect(!result.words.isEmpty)
            #expect(result.words.map(\.text).joined(separator: " ") == result.text)
            for (a, b) in zip(result.words, result.words.dropFirst()) { #expect(a.range.end <= b.range.start + 0.0001) }
            for w in result.words {
                #expect(w.range.start >= 0 && w.range.end <= seconds + 0.01 && w.range.start < w.range.end)
                #expect((0...1).contains(w.confidence))
            }
        }

        /// The call sentence synthesised, and a copy with `before` seconds of silence before it and 0.5 s after.
        func paddedCall(before: Double) throws -> (wav: String, padded: String) {
            let wav = dir.path("call.wav")
            let padded = dir.path("padded.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            try TestSpeech.sox([wav, padded, "pad", "\(before)", "0.5"])
            return (wav, padded)
        }

        /// Word times are on the audio clock: silence before the speech moves every word by as much.
        @Test(arguments: ["streaming", "utterance"])
        func wordTimesFollowTheAudio(mode: String) throws {
            let (wav, padded) = try paddedCall(before: 1.5)
            func words(_ path: String) throws -> [Word] {
                let (events, _) = try Harness.run(
                    """
                    node src = file.input { path: "\(path)" }
                    node asr = recognizer { mode: \(mode) }
                    node out = collect
                    src -> asr -> out
                    """)
                return events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }.flatMap(\.words)
            }
            let plain = try words(wav)
            let shifted = try words(padded)
            #expect(plain.map(\.text) == shifted.map(\.text))
            for (i, (a, b)) in zip(plain, shifted).enumerated() {
                // Except where the plain file's first word starts: at the very start of the audio, where the
                // decoder has no silence before it to tell the two apart (a fresh decoder puts it at 0.03 s).
                if i > 0 {
                    #expect(
                        abs((b.range.start - a.range.start) - 1.5) <= 0.05,
                        "\(a.text): \(a.range.start) -> \(b.range.start)")
                }
                #expect(abs((b.range.end - a.range.end) - 1.5) <= 0.05, "\(a.text): \(a.range.end) -> \(b.range.end)")
            }
            // And the first word starts where the sound does (flite leaves a little silence first).
            let onset = try firstSoundTime(padded)
            #expect(
                abs(shifted[0].range.start - onset) <= 0.15,
                "first word at \(shifted[0].range.start), sound at \(onset)")
        }

        /// `phases: 3` decodes each utterance three times, shifted by a third of a frame each time, and keeps
        /// the transcription that agrees most with the others; its word times stay on the audio clock.
        @Test(arguments: ["utterance", "streaming"])
        func phasesDecodeShiftedCopiesAndKeepTheMedoid(mode: String) throws {
            let wav = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            func final(phases: Int) throws -> Transcription {
                let (events, _) = try Harness.run(
                    """
                    node src = file.input { path: "\(wav)" }
                    node asr = recognizer { mode: \(mode), final-pass: true, phases: \(phases) }
                    node out = collect
                    src -> asr -> out
                    """)
                let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
                #expect(finals.count == 1)
                return try #require(finals.first)
            }
            let one = try final(phases: 1)
            let three = try final(phases: 3)
            let wer = wordErrorRate(reference: Sentences.call, hypothesis: three.text)
            #expect(wer <= 0.25, "'\(three.text)' is too far from '\(Sentences.call)' (WER \(wer))")
            #expect(three.words.map(\.text).joined(separator: " ") == three.text)
            if three.text == one.text {
                for (a, b) in zip(one.words, three.words) {
                    #expect(abs(a.range.end - b.range.end) <= 0.05, "\(a.text): \(a.range.end) -> \(b.range.end)")
                }
            }
        }

        /// The final pass of one utterance never holds back the next one's volatile results: it decodes on a queue
        /// of its own while the stream goes on. Here the queue waits (suspended) until the second utterance has
        /// shown a volatile result (or, at the latest, has ended): the first utterance's final result then comes
        /// after it, and both finals, in order, are what they are when nothing waits.
        @Test func theFinalPassDoesNotHoldBackTheNextUtterance() throws {
            let wav = try Sentences.both(in: dir, gap: 1.5, trailing: 1.0)
            var registry = Harness.registry
            try registry.register(EventHook.type)
            func run(holding: Bool) throws -> [GraphEvent] {
                let spec = try GraphParser.parse(
                    """
                    node src = file.input { path: "\(wav)" }
                    node vad = vad
                    node asr = recognizer { mode: streaming, final-pass: true, phases: 3 }
                    node out = collect
                    node hook = hook
                    src -> vad -> asr -> out
                    vad.events -> asr.control
                    asr -> hook
                    vad.events -> hook
                    """, file: "test.graph", environment: [:])
                let graph = try InlineGraph(plan: GraphPlanner(registry: registry).plan(spec), registry: registry)
                let asr = try #require(graph.node(named: "asr") as? RecognizerNode)
                let hook = try #require(graph.node(named: "hook") as? EventHook)
                if holding {
                    asr.finalPasses.suspend()
                    var held = true
                    var ends = 0
                    hook.when = { event in
                        guard held else { return }
                        if case .speechEnded = event { ends += 1 }
                        if case .result(let t) = event, !t.isFinal, t.utterance == 2 { ends = 2 }
                        if ends == 2 {
                            held = false
                            asr.finalPasses.resume()
                        }
                    }
                }
                _ = try graph.run()
                return try #require(graph.node(named: "out") as? EventCollector).events
            }
            let held = try run(holding: true)
            let results = held.compactMap { if case .result(let t) = $0 { t } else { nil } }
            let finals = results.filter(\.isFinal)
            #expect(finals.map(\.utterance) == [1, 2], "\(results)")
            let firstFinal = try #require(results.firstIndex { $0.isFinal })
            #expect(
                results[..<firstFinal].contains { $0.utterance == 2 },
                "the second utterance's volatile results waited for the first one's final pass: \(results)")
            let free = try run(holding: false).compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            #expect(finals.map(\.text) == free.map(\.text))
            #expect(finals.map(\.range) == free.map(\.range))
        }

        /// A synthesised file's samples as the recognizer hands them to PocketSphinx.
        private func pcm(_ wav: String) throws -> [Int16] {
            let f = try AudioFile(path: wav)
            var floats = [Float](repeating: 0, count: Int(f.frameCount))
            _ = try floats.withUnsafeMutableBufferPointer { try f.read(into: $0.baseAddress!, frames: $0.count) }
            return floats.map { Int16(max(-32768, min(32767, ($0 * 32768).rounded()))) }
        }

        /// The phases decode at once, each on its own decoder and thread: each gives exactly what it gives alone.
        @Test func phasesDecodedAtOnceGiveWhatEachGivesAlone() throws {
            let wav = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            let samples = try pcm(wav)
            let pool = SphinxDecoderPool()
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            let decoders = try (0..<3).map { _ in try pool.checkout(model, streaming: false) }
            #expect(Set(decoders.map(ObjectIdentifier.init)).count == 3)
            let skips = [0, 53, 106]
            try samples.withUnsafeBufferPointer {
                try RecognizerNode.decodeAtOnce(decoders, $0, skips: skips, newStream: true)
            }
            let atOnce = decoders.map(\.hypothesis)
            for (k, d) in decoders.enumerated() {
                try samples.withUnsafeBufferPointer {
                    try RecognizerNode.decodeAtOnce([d], $0, skips: [skips[k]], newStream: true)
                }
                #expect(d.hypothesis == atOnce[k], "phase \(k)")
            }
            for text in atOnce {
                #expect(wordErrorRate(reference: Sentences.call, hypothesis: text) <= 0.25, "\(text)")
            }
        }

        /// `alternatives: 5`: the n-best list, best first with score 0 and falling scores, different texts, and
        /// words that name what the other readings have at their time.
        @Test(arguments: ["utterance", "streaming"])
        func alternativesGiveTheNBestList(mode: String) throws {
            let wav = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer { mode: \(mode), alternatives: 5 }
                node out = collect
                src -> asr -> out
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            let result = try #require(finals.first)
            #expect((2...5).contains(result.alternatives.count), "\(result.alternatives)")
            // The result's own text first, then the other readings by falling score, none above 0.
            #expect(result.alternatives.first?.text == result.text)
            #expect(Set(result.alternatives.map(\.text)).count == result.alternatives.count)
            for a in result.alternatives { #expect(a.score <= 0) }
            let others = result.alternatives.dropFirst()
            for (a, b) in zip(others, others.dropFirst()) { #expect(a.score >= b.score) }
            #expect(result.words.contains { !$0.alternatives.isEmpty }, "\(result.words)")
            for w in result.words { #expect(!w.alternatives.contains(w.text)) }
            let confidence = try #require(result.confidence)
            #expect((0...1).contains(confidence))
            // Volatile results carry none.
            for case .result(let t) in events where !t.isFinal { #expect(t.alternatives.isEmpty) }
        }

        /// `first-batch`: until an utterance's first volatile result, the decoder is woken every 20 ms of audio, not
        /// every 100 ms: the first words show within 20 ms of the audio the decoder needs for them (as with 10 ms
        /// batches throughout), and the results are those of 100 ms batches.
        @Test func theFirstVolatileResultComesAtTheFirstSmallBatchThatHasAWord() throws {
            let (_, padded) = try paddedCall(before: 1)
            func run(_ batches: String) throws -> [Transcription] {
                let (events, _) = try Harness.run(
                    """
                    node src = file.input { path: "\(padded)", block: 160 }
                    node vad = vad
                    node asr = recognizer { mode: streaming, \(batches) }
                    node out = collect
                    src -> vad -> asr -> out
                    vad.events -> asr.control
                    """)
                return results(events)
            }
            let first = try run("batch: 100 ms")
            let without = try run("batch: 100 ms, first-batch: 0 ms")
            let finest = try run("batch: 10 ms, first-batch: 0 ms")
            func firstVolatileEnd(_ r: [Transcription]) throws -> Double {
                try #require(r.first { !$0.isFinal && !$0.text.isEmpty }).range.end
            }
            let (a, b, c) = (try firstVolatileEnd(first), try firstVolatileEnd(without), try firstVolatileEnd(finest))
            print("first volatile result's audio ends at \(a) s (first-batch 20 ms), \(b) s (100 ms), \(c) s (10 ms)")
            #expect(a <= c + 0.02 + 0.0001, "\(a) against \(c)")
            #expect(a < b, "\(a) against \(b)")
            // The same final results, words and all.
            #expect(first.filter(\.isFinal) == without.filter(\.isFinal))
            #expect(!first.filter(\.isFinal).isEmpty)
        }

        /// With the second pass, the final result is worked out at the vad's speechPaused: the pause that ends
        /// speech finds it ready, and speech that resumes after a shorter pause is decoded again from the start of
        /// its utterance. Either way every result, volatile and final, is the one it is without: with a lookahead
        /// or without one (the live mean carried from before), whatever the blocks, and when the stream ends inside
        /// the last pause (0.3 s after the speech: the vad ends speech where the pause began).
        @Test(arguments: [
            (1.5, "lookahead: 1000 ms", 1024), (0.3, "lookahead: 1000 ms", 333), (1.5, "lookahead: 0 ms", 777),
        ])
        func theSecondPassAtAPauseChangesNoResult(trailingSilence: Double, lookahead: String, block: Int) throws {
            let both = try pausedSpeech(trailingSilence: trailingSilence)
            func run(_ atPause: Bool) throws -> (events: [GraphEvent], node: RecognizerNode) {
                try Decoding.throughPauses(
                    both, block: block,
                    recognizer: "\(lookahead), second-pass: true, second-pass-at-pause: \(atPause)")
            }
            let on = try run(true)
            let off = try run(false)
            let pauses = on.events.filter { if case .speechPaused = $0 { true } else { false } }
            let resumes = on.events.filter { if case .speechResumed = $0 { true } else { false } }
            #expect(pauses.count == 2 && resumes.count == 1, "\(pauses.count) pauses, \(resumes.count) resumed")
            // Both pauses had their final result worked out; the first was dropped when the speech went on.
            #expect(on.node.resultsAtPauses == 2)
            #expect(on.node.decodedAgain == 1)
            #expect(off.node.resultsAtPauses == 0 && off.node.decodedAgain == 0)
            let finals = results(on.events).filter(\.isFinal)
            try #require(finals.count == 1)
            let said = Sentences.call + " " + Sentences.weather
            #expect(wordErrorRate(reference: said, hypothesis: finals[0].text) <= 0.25, "\(finals[0].text)")
            #expect(!finals[0].words.isEmpty)
            #expect(results(on.events) == results(off.events))
            #expect(results(on.events).filter { !$0.isFinal }.count >= 3)
        }

        /// Audio that does not come through the vad (its events alone on 'control') goes on during a pause: the
        /// first such pause's result is dropped and the utterance decoded again, and later pauses work out nothing.
        /// The results are still the ones without.
        @Test func audioBesideTheVadEndsResultsAtPauses() throws {
            let both = try pausedSpeech(trailingSilence: 1.5)
            func run(_ atPause: Bool) throws -> (events: [GraphEvent], node: RecognizerNode) {
                let (events, runner) = try Harness.run(
                    """
                    node src = file.input { path: "\(both)" }
                    node vad = vad { min-silence: 1 s, hangover: 1 s, pause: 150 ms }
                    node asr = recognizer {
                        mode: streaming, lookahead: 1000 ms, second-pass: true, second-pass-at-pause: \(atPause)
                    }
                    node out = collect
                    src -> vad
                    src -> asr -> out
                    vad.events -> asr.control
                    """)
                return (events, try #require(runner.node(named: "asr") as? RecognizerNode))
            }
            let on = try run(true)
            let off = try run(false)
            #expect(on.node.resultsAtPauses == 1 && on.node.decodedAgain == 1)
            #expect(results(on.events).contains { $0.isFinal })
            #expect(results(on.events) == results(off.events))
        }

        /// Two synthesised sentences 0.4 s apart (a pause inside one utterance when the vad holds pauses of 1 s),
        /// 1 s of silence before, `trailingSilence` after.
        func pausedSpeech(trailingSilence: Double) throws -> String {
            try Sentences.both(in: dir, gap: 0.4, trailing: trailingSilence)
        }

        func results(_ events: [GraphEvent]) -> [Transcription] {
            events.compactMap { if case .result(let t) = $0 { t } else { nil } }
        }

        @Test func calibrationIsAProbabilityThatRisesWithThePosterior() {
            let c = ConfidenceCalibration.standard
            var last = 0.0
            for p in stride(from: 0.0, through: 1.0, by: 0.05) {
                let v = c.confidence(posterior: p, utteranceMean: 0.8, duration: 0.3)
                #expect(v > 0 && v < 1 && v >= last)
                last = v
            }
            // A sure word in an unsure utterance is less likely right than in a sure one.
            #expect(
                c.confidence(posterior: 0.99, utteranceMean: 0.3, duration: 0.3)
                    < c.confidence(posterior: 0.99, utteranceMean: 0.95, duration: 0.3))
        }

        @Test func wordAlternativesComeFromOverlappingWords() {
            func w(_ text: String, _ start: Double, _ end: Double) -> Word {
                Word(text: text, range: TimeRange(start: start, end: end), confidence: 0.5)
            }
            let best = [w("memo", 0, 0.5), w("is", 0.5, 0.7)]
            let others = [[w("nemo", 0.02, 0.48), w("is", 0.5, 0.7)], [w("me", 0, 0.2), w("mo", 0.2, 0.5)]]
            let words = FinalResultComposer.wordAlternatives(best, others)
            #expect(words[0].alternatives == ["nemo", "me", "mo"])
            #expect(words[1].alternatives.isEmpty)
        }

        @Test func theMedoidIsTheTranscriptionClosestToTheOthers() {
            #expect(FinalResultComposer.medoid(["a b c", "a x c", "a b c d"]) == 0)
            #expect(FinalResultComposer.medoid(["a b", "a b c", "a b c"]) == 1)
            #expect(FinalResultComposer.medoid(["one", "two"]) == 0)
            #expect(FinalResultComposer.medoid(["", "a", "a"]) == 1)
            #expect(editDistance(["a", "b"], [Substring]()) == 2)
            #expect(editDistance(["a", "b", "c"] as [Substring], ["a", "c"]) == 1)
        }

        @Test func grammarRestrictsTheVocabulary() throws {
            let wav = dir.path("call.wav")
            let grammar = dir.path("g.jsgf")
            try TestSpeech.synthesize("call my mother", to: wav)
            try """
            #JSGF V1.0;
            grammar calls;
            public <call> = call my ( mother | father | sister );
            """.write(toFile: grammar, atomically: true, encoding: .utf8)
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer { jsgf: "\(grammar)", mode: utterance }
                node out = collect
                src -> asr -> out
                """)
            #expect(Harness.transcript(events) == "call my mother")
        }

        @Test("check warns of a grammar streamed without rejection, and only then")
        func grammarStreamedWithoutRejectionIsAWarning() throws {
            let grammar = dir.path("w.jsgf")
            try "#JSGF V1.0;\ngrammar w;\npublic <w> = lights on | lights off;\n".write(
                toFile: grammar, atomically: true, encoding: .utf8)
            func warnings(_ parameters: String) throws -> [String] {
                let plan = try GraphPlanner(registry: Harness.registry).validate(
                    GraphParser.parse(
                        """
                        node src = push.input
                        node asr = recognizer { grammar: "\(grammar)"\(parameters) }
                        node out = collect
                        src -> asr -> out
                        """, file: "w.graph"))
                return plan.warnings.filter { $0.severity == .warning }.map(\.description)
            }
            let streamed = try warnings("")
            #expect(streamed.count == 1, "\(streamed)")
            #expect(streamed.first?.hasPrefix("w.graph:2:") == true, "\(streamed)")
            #expect(streamed.first?.contains("streaming mode without final-pass marks nothing rejected") == true)
            for fine in [", mode: utterance", ", final-pass: true", ", reject: false"] {
                #expect(try warnings(fine).isEmpty, "\(fine)")
            }
        }

        @Test func silenceGivesAnEmptyFinalResult() throws {
            let wav = dir.path("silence.wav")
            try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "trim", "0", "1.0"])
            let (events, _) = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer
                node out = collect
                src -> asr -> out
                """)
            let finals = events.compactMap { if case .result(let t) = $0, t.isFinal { t } else { nil } }
            #expect(finals.count == 1)
            #expect(finals.first?.text == "")
        }

        @Test func missingModelPartsAreNamed() throws {
            #expect {
                try SphinxModel.resolve(
                    model: "/no/such/model", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            } throws: { ($0 as? SpeechGraphError)?.message == "model directory not found: /no/such/model" }
            #expect {
                try SphinxModel.resolve(model: "xx-nowhere", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            } throws: { ($0 as? SpeechGraphError)?.message.hasPrefix("model 'xx-nowhere' not found in") == true }
            #expect {
                try SphinxModel.resolve(
                    model: "en-us", hmm: nil, lm: "/no/such.lm.bin", dict: nil, jsgf: nil, sampleRate: 16000)
            } throws: { ($0 as? SpeechGraphError)?.message == "language model not found: /no/such.lm.bin" }
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            #expect(model.hmm.hasSuffix("/en-us/en-us"))
            #expect(model.lm?.hasSuffix("en-us.lm.bin") == true)
            #expect(model.dict.hasSuffix("cmudict-en-us.dict"))
        }

        @Test func aDamagedModelFailsWithPocketSphinxsReason() throws {
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            let badDict = dir.path("bad.dict")
            try "hello\n".write(toFile: badDict, atomically: true, encoding: .utf8)
            var broken = model
            broken.dict = badDict
            broken.hmm = dir.url.path  // no mdef here
            #expect(throws: SpeechGraphError.self) { try SphinxDecoder(model: broken) }
        }

        @Test func thePoolReusesDecoders() throws {
            let pool = SphinxDecoderPool()
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            let a = try pool.checkout(model)
            let b = try pool.checkout(model)
            #expect(a !== b)
            pool.checkin(a)
            let c = try pool.checkout(model)
            #expect(c === a)
        }

        /// A decoder handed out again starts as a newly loaded one: the live cepstral mean's whole state (the mean,
        /// its sum, the sum's frame count) and the front end's feature buffer (the context of an utterance's first
        /// frames), so the same audio gives the same text and score, whatever the decoder heard before.
        @Test func aReusedDecoderStartsAsANewlyLoadedOne() throws {
            let weather = dir.path("weather.wav")
            let call = dir.path("call.wav")
            try TestSpeech.synthesize(Sentences.weather, to: weather)
            try TestSpeech.synthesize(Sentences.call, to: call)
            let (a, b) = (try pcm(weather), try pcm(call))
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            // Fed as the recognizer feeds a stream: 20 ms at a time (the first piece of an utterance makes no frame).
            func decode(_ decoder: SphinxDecoder, _ samples: [Int16]) throws -> (text: String, score: Double) {
                try decoder.startUtterance()
                var fed = 0
                while fed < samples.count {
                    let n = min(320, samples.count - fed)
                    try samples.withUnsafeBufferPointer { try decoder.process(.init(rebasing: $0[fed..<(fed + n)])) }
                    fed += n
                }
                try decoder.endUtterance()
                return (decoder.hypothesis, decoder.hypothesisScore.score)
            }
            let pool = SphinxDecoderPool()
            let used = try pool.checkout(model)
            let loaded = used.meanState
            let first = try decode(used, a)
            #expect(used.meanState != loaded, "the audio moved the live mean")
            pool.checkin(used)
            let reused = try pool.checkout(model)
            #expect(reused === used)
            #expect(reused.meanState == loaded)
            // The other sentence after the first, and on a newly loaded decoder: the same to the last bit of score.
            let fresh = try decode(SphinxDecoder(model: model), b)
            let again = try decode(reused, b)
            #expect(again == fresh)
            #expect(wordErrorRate(reference: Sentences.weather, hypothesis: first.text) <= 0.25, "\(first)")
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: fresh.text) <= 0.25, "\(fresh)")
            // Given back mid-utterance (its node failed): handed out again, it starts an utterance and decodes as new.
            try reused.startUtterance()
            try a.withUnsafeBufferPointer { try reused.process(.init(rebasing: $0[..<16000])) }
            pool.checkin(reused)
            let afterFailure = try pool.checkout(model)
            #expect(afterFailure === reused)
            #expect(try decode(afterFailure, b) == fresh)
        }

        @Test func aPoolDropsADecoderWhoseFilesChangedSinceItWasLoaded() throws {
            let pool = SphinxDecoderPool()
            var model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            let dict = dir.path("words.dict")
            try FileManager.default.copyItem(atPath: model.dict, toPath: dict)
            model.dict = dict
            let a = try pool.checkout(model)
            #expect(a.isCurrent(for: model))
            pool.checkin(a)
            #expect(try pool.checkout(model) === a)
            pool.checkin(a)
            // The same file written again (a model rebuilt under the same name): a later modification time.
            let later = Date().addingTimeInterval(60)
            try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: dict)
            #expect(!a.isCurrent(for: model))
            let b = try pool.checkout(model)
            #expect(b !== a)
            #expect(b.isCurrent(for: model))
            #expect(pool.idleCount == 0)
        }

        /// A server's pool keeps so many idle decoders in all: those of the model given back to longest ago go first
        /// (one model built per request's phrases kept 90 MB each, for ever).
        @Test func aPoolKeepsSoManyIdleDecodersInAll() throws {
            let pool = SphinxDecoderPool(maxIdle: 2, maxIdleInAll: 2)
            let base = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            // Three models (as three phrase models would be): the same files, other settings.
            let models = [1000, 2000, 3000].map { hmms in
                var m = base
                m.maxHMMs = hmms
                return m
            }
            let decoders = try models.map { try pool.checkout($0) }
            for d in decoders { pool.checkin(d) }
            #expect(pool.idleCount == 2)
            // The first one given back is gone; the two later ones wait.
            #expect(try pool.checkout(models[2]) === decoders[2])
            #expect(try pool.checkout(models[1]) === decoders[1])
            #expect(try pool.checkout(models[0]) !== decoders[0])
            // What a server loads before it listens is kept: `fill` raises the bound in all to it.
            let server = SphinxDecoderPool(maxIdle: 2, maxIdleInAll: 2)
            for m in models.prefix(2) { server.checkin(try server.checkout(m)) }
            try server.fill(upTo: 2)
            #expect(server.idleCount == 4 && server.maxIdleInAll == 4)
        }

        /// Of two reload requests, the one that began later wins, also when the earlier one finishes last.
        @Test func theLatestReloadRequestWins() {
            let slot = RecognizerNode.LoadSlot()
            let first = slot.ticket()
            let second = slot.ticket()
            slot.deliver(.failure("second"), ticket: second)
            slot.deliver(.failure("first"), ticket: first)
            let outcome = slot.value.withLock { $0 }
            guard case .failure(let reason)? = outcome else {
                Issue.record("no outcome")
                return
            }
            #expect(reason == "second")
            slot.deliver(.failure("third"), ticket: slot.ticket())
            guard case .failure(let later)? = slot.value.withLock({ $0 }) else { return }
            #expect(later == "third")
        }

        @Test func aPoolFilledAheadHandsOutDecodersItLoadedBefore() throws {
            let pool = SphinxDecoderPool(maxIdle: 4)
            let model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            pool.checkin(try pool.checkout(model))
            #expect(pool.idleCount == 1)
            // Loaded now, for the one use the pool has seen (streaming): no whole-utterance decoder.
            try pool.fill(upTo: 3)
            #expect(pool.idleCount == 3)
            let loaded = try (0..<3).map { _ in try pool.checkout(model) }
            #expect(Set(loaded.map(ObjectIdentifier.init)).count == 3)
            #expect(pool.idleCount == 0)
            for d in loaded { pool.checkin(d) }
            // Never beyond the bound.
            try pool.fill(upTo: 10)
            #expect(pool.idleCount == 4)
        }

        /// The second pass of a streamed utterance renormalises its features: it takes each frame's cepstrum back
        /// to what the front end computed (adding the live mean it was decoded with, which moved as the node moves
        /// it) and finds the mean of them all, the mean batch normalisation would use.
        @Test func theSecondPassFindsTheWholeUtterancesMean() throws {
            let wav = dir.path("weather.wav")
            try TestSpeech.synthesize(Sentences.weather, to: wav)
            let samples = try pcm(wav)
            #expect(samples.count > 3 * 16000)
            var model = try SphinxModel.resolve(
                model: "en-us", hmm: nil, lm: nil, dict: nil, jsgf: nil, sampleRate: 16000)
            model.removesSilence = false
            model.secondPass = true
            let decoder = try SphinxDecoder(model: model)
            // As the recognizer's lookahead does: the first second's mean, then the mean of what was decoded, every
            // 100 ms, in pieces of another size.
            let head = try #require(
                samples.withUnsafeBufferPointer { decoder.cepstralMean(of: .init(rebasing: $0[..<16000])) })
            decoder.setCepstralMean(head)
            try decoder.startUtterance()
            var fed = 0
            while fed < samples.count {
                let n = min(1600 - fed % 1600, samples.count - fed, 700)
                try samples.withUnsafeBufferPointer { try decoder.process(.init(rebasing: $0[fed..<(fed + n)])) }
                fed += n
                if fed > 16000 && fed % 1600 == 0 { decoder.updateCepstralMean() }
            }
            let renormalised = try #require(decoder.renormaliseForSecondPass())
            // The rows the second pass will read, before it runs.
            let (feat, frames, size) = try #require(decoder.features())
            let rows = (0..<frames).map { f in (0..<size).map { feat[f]![0]![$0] } }
            // Done once: endUtterance, which would do it, finds nothing left to do.
            #expect(decoder.renormaliseForSecondPass() == nil)
            try decoder.endUtterance()
            let wer = wordErrorRate(reference: Sentences.weather, hypothesis: decoder.hypothesis)
            #expect(wer <= 0.25, "'\(decoder.hypothesis)' (WER \(wer))")
            let whole = try #require(samples.withUnsafeBufferPointer { decoder.cepstralMean(of: $0) })
            // The same but for the few last frames still in the front end's delta window.
            let far = zip(renormalised, whole).map { abs($0 - $1) }.max() ?? .infinity
            #expect(far < 0.25, "\(renormalised) against \(whole)")
            // Every row is now the front end's cepstrum less that mean, as batch normalisation makes it.
            let cepstra = try #require(samples.withUnsafeBufferPointer { decoder.cepstra(of: $0) })
            #expect(frames > 250 && frames <= cepstra.count)
            var worst: Float = 0
            for f in 0..<frames {
                for i in 0..<size { worst = max(worst, abs(rows[f][i] - (cepstra[f][i] - renormalised[i]))) }
            }
            #expect(worst < 0.001, "a row is \(worst) from its cepstrum less the mean")
            // Those live means were far from it: taking them as the raw cepstra would be wrong by this much.
            #expect((zip(head, whole).map { abs($0 - $1) }.max() ?? 0) > 1)
            // Without the second pass there is nothing to renormalise.
            model.secondPass = false
            let plain = try SphinxDecoder(model: model)
            try plain.startUtterance()
            try samples.withUnsafeBufferPointer { try plain.process($0) }
            #expect(plain.renormaliseForSecondPass() == nil)
        }

        /// The first 10 ms frame whose mean absolute level exceeds 1% of full scale.
        private func firstSoundTime(_ path: String) throws -> Double {
            let f = try AudioFile(path: path)
            var samples = [Float](repeating: 0, count: Int(f.frameCount))
            _ = try samples.withUnsafeMutableBufferPointer { try f.read(into: $0.baseAddress!, frames: $0.count) }
            let frame = f.sampleRate / 100
            for start in stride(from: 0, to: samples.count - frame, by: frame) {
                let level = samples[start..<(start + frame)].map(abs).reduce(0, +) / Float(frame)
                if level > 0.01 { return Double(start) / Double(f.sampleRate) }
            }
            return 0
        }

        private func fileSeconds(_ path: String) throws -> Double {
            let f = try AudioFile(path: path)
            return Double(f.frameCount) / Double(f.sampleRate)
        }
    }
}

/// Calls a test's closure with each event it receives (on the inline executor: the graph's one thread).
final class EventHook: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "hook", summary: "Calls a test's closure with each event.", category: .sink,
        ports: [.eventInput("in", accepts: .any, doc: "Any events.")], parameters: [])
    static let type = NodeType(descriptor, make: { _ in EventHook() })
    var when: ((GraphEvent) -> Void)?
    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws { when?(event) }
}
