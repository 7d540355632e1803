import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Synchronization
import Testing

/// Apple's classic Speech API (SFSpeechRecognizer and its requests, tasks and results), as apps use it.
@Suite(.tags(.model)) struct ClassicAPITests {
    let dir = TemporaryDirectory()

    /// Something that happens once, waited for without blocking a thread: the handlers run on OperationQueues,
    /// whose operations need the few threads of the system's pool (a waiter parked on one of them, in several
    /// tests at once, left none to deliver with).
    final class Ending: Sendable {
        private let state = Mutex<(ended: Bool, waiter: CheckedContinuation<Void, Never>?)>((false, nil))

        func end() {
            let waiter = state.withLock { s -> CheckedContinuation<Void, Never>? in
                s.ended = true
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume()
        }

        func wait() async {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let now = state.withLock { s -> Bool in
                    if !s.ended { s.waiter = c }
                    return s.ended
                }
                if now { c.resume() }
            }
        }
    }

    /// What a task delivered to its result handler, in order.
    final class Deliveries: @unchecked Sendable {
        private let lock = Mutex<[(SFSpeechRecognitionResult?, (any Error)?)]>([])
        private let ending = Ending()
        var all: [(SFSpeechRecognitionResult?, (any Error)?)] { lock.withLock { $0 } }
        var partials: [SFSpeechRecognitionResult] { all.compactMap { $0.0 }.filter { !$0.isFinal } }
        var finals: [SFSpeechRecognitionResult] { all.compactMap { $0.0 }.filter(\.isFinal) }
        var errors: [NSError] { all.compactMap { $0.1 as NSError? } }

        func take(_ result: SFSpeechRecognitionResult?, _ error: (any Error)?) {
            lock.withLock { $0.append((result, error)) }
            if error != nil || result?.isFinal == true { ending.end() }
        }

        /// Waits for the final result or the error.
        func wait() async { await ending.wait() }
    }

    func recognizer() throws -> SFSpeechRecognizer {
        let r = try #require(SFSpeechRecognizer(locale: Locale(identifier: "en-US")))
        r.queue = OperationQueue()
        return r
    }

    /// Speech in a file: two sentences, or (`long`) enough of them with pauses to be over 30 s, which
    /// `transcribe` cuts into utterances with its vad.
    func speechFile(_ name: String, long: Bool = false) throws -> String {
        let sentences =
            long
            ? [
                "please call my mother at seven in the evening", "the weather today is sunny and warm",
                "open the door to the kitchen", "turn off the lights in the living room",
                "what time does the train leave", "send a message to my brother",
            ] : ["please call my mother at seven in the evening", "the weather today is sunny and warm"]
        let file = dir.path("\(name).wav")
        try TestSpeech.sentences(sentences, pause: long ? 3.5 : 1, to: file)
        if long { #expect(try TestSpeech.duration(file) > 30) }
        return file
    }

    @Test(
        "a file through SFSpeechURLRecognitionRequest gives transcribe's text, partial results first, one final",
        arguments: [false, true])
    func urlRequestIsTranscribe(long: Bool) async throws {
        let file = try speechFile(long ? "long" : "short", long: long)
        // The text of transcribe's formats with word timings (the plain text format leaves them out, and with
        // them the frames PocketSphinx takes for silence: a word may differ).
        let transcribe = try Run.speechgraph(["transcribe", "--format", "jsonl", file])
        #expect(transcribe.status == 0, "\(transcribe.stderr)")
        let expected = TestSpeech.finalTexts(jsonl: transcribe.stdout)[file, default: []].joined(separator: " ")
        #expect(expected.contains("mother") && expected.contains("weather"))
        for partials in [true, false] {
            let request = SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: file))
            request.shouldReportPartialResults = partials
            let got = Deliveries()
            let task = try recognizer().recognitionTask(with: request, resultHandler: got.take)
            await got.wait()
            #expect(got.errors.isEmpty, "\(got.errors)")
            let final = try #require(got.finals.first)
            #expect(got.finals.count == 1 && got.all.last?.0 === final)
            #expect(final.bestTranscription.formattedString == expected, "partial results: \(partials)")
            #expect(task.state == .completed && task.error == nil && task.isFinishing && !task.isCancelled)
            if partials {
                #expect(got.partials.count >= 2)
                // Partial results grow: each is the text so far.
                let texts = got.partials.map(\.bestTranscription.formattedString)
                #expect(texts.last.map { expected.hasPrefix($0.split(separator: " ").first ?? "") } == true)
                // An utterance's text, once there, stays in every later partial result (with the final pass, the
                // next utterance's volatile results come before its final one).
                if long, let first = texts.firstIndex(where: { $0.hasPrefix("please call my mother") }) {
                    #expect(texts[first...].allSatisfy { $0.hasPrefix("please call my mother") }, "\(texts)")
                    #expect(texts.contains { $0.contains("weather") })
                }
            } else {
                #expect(got.partials.isEmpty)
            }
            // Segments: the words of the text, where they are in it, timed within the file, with confidences.
            let segments = final.bestTranscription.segments
            #expect(segments.map(\.substring).joined(separator: " ") == expected)
            let text = final.bestTranscription.formattedString as NSString
            for s in segments { #expect(text.substring(with: s.substringRange) == s.substring) }
            let seconds = try TestSpeech.duration(file)
            for (a, b) in zip(segments, segments.dropFirst()) { #expect(a.timestamp <= b.timestamp) }
            #expect(segments.allSatisfy { $0.duration > 0 && $0.timestamp + $0.duration <= seconds + 0.05 })
            #expect(
                segments.allSatisfy { (0...1).contains($0.confidence) } && segments.contains { $0.confidence > 0.3 })
            let metadata = try #require(final.speechRecognitionMetadata)
            #expect(metadata.speechDuration > 1 && metadata.speakingRate > 30)
            #expect(final.transcriptions.first === final.bestTranscription && final.transcriptions.count >= 2)
        }
    }

    @Test("the blog post's code and the SpokenWord sample build in Swift 6 and Swift 5 modes; the post's runs")
    func blogPostProgram() throws {
        let built = TestPaths.binary.deletingLastPathComponent()
        // The Swift 5 targets' files are the Swift 6 ones, linked.
        for example in ["SpokenWord", "LiveTranscription"] {
            let five = TestPaths.packageRoot.appendingPathComponent("Examples/Swift5/\(example)/main.swift")
            let six = TestPaths.packageRoot.appendingPathComponent("Examples/\(example)/main.swift")
            #expect(try String(contentsOf: five, encoding: .utf8) == String(contentsOf: six, encoding: .utf8))
            #expect(
                FileManager.default.isExecutableFile(
                    atPath: built.appendingPathComponent("SpeechGraphExample\(example)5").path))
        }
        let file = try speechFile("blog")
        var outputs: [String] = []
        for program in ["SpeechGraphExampleLiveTranscription", "SpeechGraphExampleLiveTranscription5"] {
            let r = try Run.process(built.appendingPathComponent(program).path, [file])
            #expect(r.status == 0, "\(r.stderr)")
            outputs.append(r.stdout)
        }
        #expect(outputs[0] == outputs[1])
        let lines = outputs[0].split(separator: "\n")
        let final = try #require(lines.first { $0.hasPrefix("final: ") }).dropFirst("final: ".count)
        #expect(final.contains("mother") && final.contains("weather"))
        let segments = lines.filter { $0.hasPrefix("segment: ") }
        #expect(segments.count == final.split(separator: " ").count)
        #expect(lines.contains("nemo: false"))
    }

    @Test("buffers at 48 kHz from a tap, some before the task: partial results grow, one final after endAudio")
    func bufferRequest() async throws {
        let file = try speechFile("buffers")
        let wav48 = dir.path("buffers48.wav")
        try TestSpeech.sox([file, "-r", "48000", wav48])
        let audio = try AVAudioFile(forReading: URL(fileURLWithPath: wav48))
        var buffers: [AVAudioPCMBuffer] = []
        while true {
            let b = try #require(AVAudioPCMBuffer(pcmFormat: audio.processingFormat, frameCapacity: 1024))
            try audio.read(into: b)
            if b.frameLength == 0 { break }
            buffers.append(b)
        }
        let request = SFSpeechAudioBufferRecognitionRequest()
        #expect(request.nativeAudioFormat.sampleRate == 16000)
        // The tap starts before the task is made, as in Apple's sample.
        for b in buffers.prefix(20) { request.append(b) }
        let got = Deliveries()
        let task = try recognizer().recognitionTask(with: request, resultHandler: got.take)
        for b in buffers.dropFirst(20) { request.append(b) }
        request.endAudio()
        #expect(task.isFinishing)
        request.append(buffers[0])  // ignored: after endAudio
        await got.wait()
        #expect(got.errors.isEmpty, "\(got.errors)")
        let final = try #require(got.finals.first)
        #expect(got.finals.count == 1)
        let text = final.bestTranscription.formattedString
        let wer = wordErrorRate(
            reference: "please call my mother at seven in the evening the weather today is sunny and warm",
            hypothesis: text)
        #expect(wer <= 0.25, "\(text)")
        #expect(got.partials.count >= 2)
        // A partial result's segments have no confidence yet, as Apple's.
        #expect(got.partials.allSatisfy { $0.bestTranscription.segments.allSatisfy { $0.confidence == 0 } })
        #expect(task.state == .completed)
    }

    /// A delegate's calls, in order.
    final class Calls: SFSpeechRecognitionTaskDelegate, @unchecked Sendable {
        private let lock = Mutex<[String]>([])
        private let ending = Ending()
        var all: [String] { lock.withLock { $0 } }
        func add(_ s: String, last: Bool = false) {
            lock.withLock { $0.append(s) }
            if last { ending.end() }
        }
        /// Waits for the last call.
        func wait() async { await ending.wait() }
        func speechRecognitionDidDetectSpeech(_ task: SFSpeechRecognitionTask) { add("detect") }
        func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didHypothesizeTranscription t: SFTranscription) {
            add("hypothesize")
        }
        func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didFinishRecognition r: SFSpeechRecognitionResult) {
            add("finish:\(r.bestTranscription.formattedString)")
        }
        func speechRecognitionTaskFinishedReadingAudio(_ task: SFSpeechRecognitionTask) { add("read") }
        func speechRecognitionTaskWasCancelled(_ task: SFSpeechRecognitionTask) { add("cancelled") }
        func speechRecognitionTask(_ task: SFSpeechRecognitionTask, didFinishSuccessfully ok: Bool) {
            add("done:\(ok)", last: true)
        }
    }

    @Test("a task's delegate: speech detected, hypotheses, audio read, the final recognition, success last")
    func taskDelegate() async throws {
        let file = try speechFile("delegate")
        let calls = Calls()
        let task = try recognizer().recognitionTask(
            with: SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: file)), delegate: calls)
        await calls.wait()
        let all = calls.all
        #expect(all.first == "detect" && all.filter { $0 == "detect" }.count == 1)
        #expect(all.contains("hypothesize") && all.filter { $0 == "read" }.count == 1)
        let finish = try #require(all.firstIndex { $0.hasPrefix("finish:") })
        #expect(all[finish].contains("mother") && all.last == "done:true" && finish == all.count - 2)
        #expect(all.firstIndex(of: "read")! < finish && task.state == .completed)
    }

    @Test("errors: a missing file, no audio, silence only, a cancelled task, a buffer in another format")
    func errors() async throws {
        let r = try recognizer()
        let missing = Deliveries()
        let t1 = r.recognitionTask(
            with: SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: dir.path("nothing.wav"))),
            resultHandler: missing.take)
        await missing.wait()
        #expect(missing.all.count == 1 && missing.errors.first?.domain == SFSpeechError.domain)
        #expect("\(missing.errors.first!.localizedDescription)".contains("nothing.wav"))
        #expect(t1.state == .completed && t1.error != nil)

        // endAudio with no audio, and audio of silence: no speech, Apple's error 1110.
        let empty = SFSpeechAudioBufferRecognitionRequest()
        let none = Deliveries()
        r.recognitionTask(with: empty, resultHandler: none.take)
        empty.endAudio()
        await none.wait()
        #expect(none.errors.map(\.code) == [1110] && none.errors.first?.domain == SFSpeechError.assistantDomain)
        let format = try #require(AVAudioFormat(standardFormatWithSampleRate: 16000, channels: 1))
        let quiet = SFSpeechAudioBufferRecognitionRequest()
        let silence = Deliveries()
        r.recognitionTask(with: quiet, resultHandler: silence.take)
        for _ in 0..<40 { quiet.append(try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1600)).full) }
        quiet.endAudio()
        await silence.wait()
        #expect(silence.errors.map(\.code) == [1110] && silence.finals.isEmpty)

        // Cancelled while the file is read: one cancellation error, nothing after it.
        let file = try speechFile("cancel", long: true)
        let cancelled = Deliveries()
        let request = SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: file))
        let task = r.recognitionTask(with: request, resultHandler: cancelled.take)
        task.cancel()
        #expect(task.isCancelled && task.state == .canceling)
        await cancelled.wait()
        #expect(cancelled.errors.map(\.code) == [216] && cancelled.finals.isEmpty)
        #expect(cancelled.all.last?.1 != nil && task.state == .completed)

        // Buffers of another format after the first: the task ends with an error that says so.
        let mixed = SFSpeechAudioBufferRecognitionRequest()
        let wrong = Deliveries()
        r.recognitionTask(with: mixed, resultHandler: wrong.take)
        let stereo = try #require(AVAudioFormat(standardFormatWithSampleRate: 44100, channels: 2))
        mixed.append(try #require(AVAudioPCMBuffer(pcmFormat: format, frameCapacity: 1600)).full)
        mixed.append(try #require(AVAudioPCMBuffer(pcmFormat: stereo, frameCapacity: 1600)).full)
        await wrong.wait()
        #expect(wrong.errors.count == 1 && wrong.errors[0].localizedDescription.contains("first one's format"))
    }

    @Test("the recognizer: locales, availability, authorization on another queue, results on the main queue")
    func recognizerItself() async throws {
        #expect(SFSpeechRecognizer.supportedLocales().contains { $0.identifier == "en_US" })
        #expect(SFSpeechRecognizer(locale: Locale(identifier: "xx-YY")) == nil)
        let r = try #require(SFSpeechRecognizer(locale: Locale(identifier: "en-GB")))
        #expect(r.locale.identifier == "en_US" && r.isAvailable && r.supportsOnDeviceRecognition)
        #expect(SFSpeechRecognizer.authorizationStatus() == .authorized)
        // Whether code runs on the main queue (after dispatchMain, which an async program's start calls, Linux
        // serves it from a worker thread: the queue, not the thread, is what main-actor code runs on).
        let key = DispatchSpecificKey<Int>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        // Authorization answers on an arbitrary queue, not the main one.
        let (status, authorizedOnMain) = await withCheckedContinuation { c in
            SFSpeechRecognizer.requestAuthorization {
                c.resume(returning: ($0, DispatchQueue.getSpecific(key: key) == 1))
            }
        }
        #expect(status == .authorized && !authorizedOnMain)
        // The default queue is the main queue, as on Apple platforms.
        #expect(r.queue === OperationQueue.main)
        let file = try speechFile("main")
        let onMain = Mutex<[Bool]>([])
        let got = Deliveries()
        r.recognitionTask(with: SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: file))) { result, error in
            onMain.withLock { $0.append(DispatchQueue.getSpecific(key: key) == 1) }
            got.take(result, error)
        }
        await got.wait()
        #expect(got.finals.count == 1 && onMain.withLock { $0.allSatisfy { $0 } && !$0.isEmpty })
    }

    @Test("a custom language model prepared as in SpokenWord and given to a request: its phrases recognised")
    func customLanguageModel() async throws {
        let data = SFCustomLanguageModelData(
            locale: Locale(identifier: "en_US"), identifier: "com.example.chess", version: "1.0"
        ) {
            SFCustomLanguageModelData.PhraseCount(phrase: "Play the Albin counter gambit", count: 10)
            SFCustomLanguageModelData.PhraseCountsFromTemplates(classes: [
                "piece": ["pawn", "rook", "knight", "bishop", "queen", "king"], "royal": ["queen", "king"],
                "rank": Array(1...8).map { String($0) },
            ]) {
                SFCustomLanguageModelData.TemplatePhraseCountGenerator.Template(
                    "<piece> to <royal> <piece> <rank>", count: 10_000)
            }
        }
        let asset = dir.url.appendingPathComponent("CustomLMData.bin")
        try await data.export(to: asset)
        let configuration = SFSpeechLanguageModel.Configuration(
            languageModel: dir.url.appendingPathComponent("chess-lm"),
            vocabulary: dir.url.appendingPathComponent("chess.vocab"))
        try await SFSpeechLanguageModel.prepareCustomLanguageModel(
            for: asset, clientIdentifier: "com.example.chess", configuration: configuration)
        let built = configuration.languageModel.appendingPathComponent("lm.bin").path
        #expect(FileManager.default.fileExists(atPath: built))
        #expect(FileManager.default.fileExists(atPath: configuration.vocabulary!.path))
        // The same data again is built already; the completion form says so with nil.
        let stamp = try FileManager.default.attributesOfItem(atPath: built)[.modificationDate] as? Date
        let error = await withCheckedContinuation { c in
            SFSpeechLanguageModel.prepareCustomLanguageModel(
                for: asset, clientIdentifier: "com.example.chess", configuration: configuration
            ) { c.resume(returning: $0.map { "\($0)" }) }
        }
        #expect(error == nil)
        #expect(try FileManager.default.attributesOfItem(atPath: built)[.modificationDate] as? Date == stamp)

        let wav = dir.path("chess.wav")
        try TestSpeech.synthesize("knight to queen bishop three", to: wav)
        let request = SFSpeechURLRecognitionRequest(url: URL(fileURLWithPath: wav))
        request.requiresOnDeviceRecognition = true
        request.customizedLanguageModel = configuration
        let got = Deliveries()
        try recognizer().recognitionTask(with: request, resultHandler: got.take)
        await got.wait()
        let text = try #require(got.finals.first).bestTranscription.formattedString
        #expect(text == "knight to queen bishop three", "\(got.errors)")

        // Data that is not a spec: the error says where.
        try "<piece> to".write(to: asset, atomically: true, encoding: .utf8)
        await #expect(throws: (any Error).self) {
            try await SFSpeechLanguageModel.prepareCustomLanguageModel(
                for: asset, clientIdentifier: "x", configuration: configuration, ignoresCache: true)
        }
    }
}

extension AVAudioPCMBuffer {
    /// Its whole capacity, as filled (zeros: silence).
    fileprivate var full: AVAudioPCMBuffer {
        frameLength = frameCapacity
        return self
    }
}
