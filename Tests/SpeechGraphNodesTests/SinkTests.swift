import CFFTW
import CJack
import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

@Suite(.tags(.model)) struct SinkTests {
    let result = Transcription(
        utterance: 2, isFinal: true, range: TimeRange(start: 1.25, end: 3.5), text: "say \"hi\"\n",
        words: [
            Word(text: "say", range: TimeRange(start: 1.3, end: 1.6), confidence: 0.91234, alternatives: ["see"])
        ],
        alternatives: [Alternative(text: "say \"hi\"\n", score: 0), Alternative(text: "see hi", score: -2.5)],
        confidence: 0.91234, node: "asr")

    @Test func resultLineHasFieldsInOrderAndEscapes() throws {
        let line = JSONLines.line(for: .result(result), source: "a.wav")
        #expect(
            line
                == #"{"v":1,"type":"result","node":"asr","utterance":2,"isFinal":true,"#
                + #""range":{"start":1.250,"end":3.500},"text":"say \"hi\"\n","confidence":0.9123,"#
                + #""words":[{"text":"say","start":1.300,"end":1.600,"confidence":0.9123,"alternatives":["see"]}],"#
                + #""alternatives":[{"text":"say \"hi\"\n","score":0.000},{"text":"see hi","score":-2.500}],"#
                + #""source":"a.wav"}"#
        )
        // It is JSON that a standard parser reads back.
        let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: Any]
        #expect(object["text"] as? String == "say \"hi\"\n")
        #expect((object["range"] as? [String: Double])?["end"] == 3.5)
    }

    @Test func otherEventsAreJSONToo() throws {
        let events: [GraphEvent] = [
            .speechStarted(node: "vad", time: 0.5),
            .speechEnded(node: "vad", time: 1.0),
            .gap(node: "mic", range: TimeRange(start: 2, end: 2.25), reason: "overrun"),
            .availability(node: "mic", isAvailable: false, reason: "JACK server stopped"),
        ]
        let types = try events.map { e -> String in
            let o = try JSONSerialization.jsonObject(with: Data(JSONLines.line(for: e).utf8)) as! [String: Any]
            return o["type"] as! String
        }
        #expect(types == ["speechStarted", "speechEnded", "gap", "availability"])
        #expect(
            JSONLines.line(for: events[3])
                == #"{"v":1,"type":"availability","node":"mic","isAvailable":false,"reason":"JACK server stopped"}"#)
        #expect(JSONLines.quote("\u{1}") == #""\u0001""#)
    }

    @Test("a kind a plugin adds is written with its fields, by a sink that has never heard of it")
    func customEventsAreJSON() throws {
        let beep = GraphEvent.custom(
            CustomEvent(
                kind: "beep", node: "detector", time: 1.25,
                fields: [
                    "count": .integer(2), "pitch": .number(440.5), "loud": .boolean(true), "label": .string("a \"b\""),
                    "node": .string("ignored: the common key wins"),
                ]))
        #expect(beep.kind == "beep")
        #expect(beep.node == "detector")
        #expect(
            JSONLines.line(for: beep, source: "x.wav")
                == #"{"v":1,"type":"beep","node":"detector","time":1.250,"count":2,"label":"a \"b\"","#
                + #""loud":true,"pitch":440.5,"source":"x.wav"}"#
        )
        let o = try #require(
            try JSONSerialization.jsonObject(with: Data(JSONLines.line(for: beep).utf8)) as? [String: Any])
        #expect(o["pitch"] as? Double == 440.5)
        #expect(JSONLines.audioEnd(of: beep) == 1.25)
    }

    /// Two JACK nodes that would register the same ports: `check` refuses the graph at the second's value (only
    /// `run` found it, when the client registered its ports), and opens no JACK client to do so.
    @Test func twoJackNodesWithOnePortNameAreAGraphError() throws {
        let graph = """
            node a = jack.input { port: "in" }
            node b = jack.input { port: "in" }
            node c = jack.output { port: "play" }
            node o = console
            a -> c
            b -> o
            """
        #expect {
            _ = try GraphPlanner(registry: Harness.registry).validate(GraphParser.parse(graph, file: "test.graph"))
        } throws: { error in
            let lines = (error as? GraphError)?.diagnostics.map(\.description) ?? []
            return lines == [
                "test.graph:2:29: error: node 'a' (line 1) gives the JACK port name 'in' too: give the nodes "
                    + "different 'port' names"
            ]
        }
        // Both by default ('in'): said so.
        let defaults = "node a = jack.input\nnode b = jack.input\nnode o = console\na -> o\nb -> o\n"
        #expect {
            _ = try GraphPlanner(registry: Harness.registry).validate(GraphParser.parse(defaults, file: "test.graph"))
        } throws: { error in
            let lines = (error as? GraphError)?.diagnostics.map(\.description) ?? []
            return lines.count == 1 && lines[0].hasPrefix("test.graph:2:1: error: ")
                && lines[0].contains("(the default of 'port')")
        }
        _ = try GraphPlanner(registry: Harness.registry).validate(
            GraphParser.parse(
                graph.replacingOccurrences(
                    of: "b = jack.input { port: \"in\" }", with: "b = jack.input { port: \"in2\" }"), file: "test.graph"
            ))
    }

    @Test func jsonlSinkReportsAnUnwritablePath() throws {
        let dir = TemporaryDirectory()
        let wav = dir.path("silence.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "trim", "0", "0.1"])
        #expect {
            _ = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer
                node out = jsonl { path: "\(wav)/x.jsonl" }
                src -> asr -> out
                """)
        } throws: { error in
            // A folder that cannot be made: its parent is a file.
            "\(error)".contains("cannot write \(wav)/x.jsonl: \(wav) is not a folder")
        }
    }

    @Test(
        "a sink that would write over the file an input reads, or two sinks one file: located errors, nothing written")
    func filesWrittenAreNotFilesRead() throws {
        let dir = TemporaryDirectory()
        let wav = dir.path("speech.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "trim", "0", "0.1"])
        let size = try #require(try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int)
        try FileManager.default.createSymbolicLink(atPath: dir.path("link.wav"), withDestinationPath: wav)
        let graph = """
            node src = file.input { path: "\(wav)" }
            node vad = vad
            node rec = tap.record { path: "\(dir.path("link.wav"))" }
            node log = jsonl { path: "\(dir.path("log.jsonl"))" }
            node two = jsonl { path: "\(dir.path("./log.jsonl"))" }
            node out = jsonl { path: "/dev/null" }
            node end = jsonl { path: "/dev/null" }
            src -> vad.in
            vad.out -> rec.in
            vad.events -> log, two, out, end
            """
        #expect {
            _ = try Harness.plan(graph)
        } throws: { error in
            let lines = (error as? GraphError)?.diagnostics.map(\.description) ?? []
            // The writer's own value is located; a link leads to its file, a file still to be written is named
            // by its folder; standard devices (/dev/null) may be shared.
            return lines.count == 2
                && lines[0].hasPrefix("test.graph:3:")
                && lines[0].contains("node 'rec' writes")
                && lines[0].hasSuffix(
                    "which node 'src' reads ('path' at line 1): it would be overwritten while it is read")
                && lines[1].hasPrefix("test.graph:5:")
                && lines[1].hasSuffix("which node 'log' writes too ('path' at line 4)")
        }
        // Nothing ran: the input is whole.
        #expect(try FileManager.default.attributesOfItem(atPath: wav)[.size] as? Int == size)
        // Without the clashes, the same graph plans.
        _ = try Harness.plan(
            graph.replacingOccurrences(of: "link.wav", with: "copy.wav")
                .replacingOccurrences(of: "./log.jsonl", with: "two.jsonl"))
    }

    @Test("two sinks one file in folders still to be made: an error too; a one-letter folder is no trap")
    func filesInNewFolders() throws {
        let dir = TemporaryDirectory()
        let wav = dir.path("speech.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "trim", "0", "0.1"])
        let graph = """
            node src = file.input { path: "\(wav)" }
            node vad = vad
            node log = jsonl { path: "\(dir.path("new/o/log.jsonl"))" }
            node two = jsonl { path: "\(dir.path("new/x/../o/./log.jsonl"))" }
            node one = jsonl { path: "o/l.txt" }
            src -> vad.in
            vad.events -> log, two, one
            """
        #expect {
            _ = try Harness.plan(graph)
        } throws: { error in
            let lines = (error as? GraphError)?.diagnostics.map(\.description) ?? []
            return lines.count == 1 && lines[0].hasPrefix("test.graph:4:")
                && lines[0].hasSuffix("which node 'log' writes too ('path' at line 3)")
        }
        _ = try Harness.plan(graph.replacingOccurrences(of: "../o/./log", with: "log"))
        #expect(PathNames.folder(of: "o") == "")
        #expect(PathNames.folder(of: "o/") == "")
        #expect(PathNames.folder(of: "o/l.txt") == "o")
        #expect(PathNames.folder(of: "/a//b/") == "/a")
        #expect(PathNames.folder(of: "/a") == "/")
        #expect(PathNames.folder(of: "/") == "/")
        #expect(OutputPath.problem("x") == nil && OutputPath.problem("x/y/l.txt") == nil)
    }

    @Test func consoleClock() {
        #expect(ConsoleSink.clock(0) == "00:00.000")
        #expect(ConsoleSink.clock(61.2345) == "01:01.235")
    }
}

/// The C libraries the later node families build on link and answer.
@Suite(.tags(.model)) struct SystemLibraryTests {
    @Test func fftwTransformsADCSignal() {
        let n = 8
        let input = fftwf_alloc_real(n)!
        let output = fftwf_alloc_complex(n / 2 + 1)!
        defer {
            fftwf_free(input)
            fftwf_free(output)
        }
        let plan = fftwf_plan_dft_r2c_1d(Int32(n), input, output, UInt32(FFTW_ESTIMATE))
        defer { fftwf_destroy_plan(plan) }
        for i in 0..<n { input[i] = 1 }
        fftwf_execute(plan)
        #expect(output[0].0 == Float(n))
        #expect(abs(output[1].0) < 1e-5 && abs(output[1].1) < 1e-5)
    }

    @Test func jackReportsItsVersion() {
        let version = String(cString: jack_get_version_string())
        #expect(version.first?.isNumber == true)
    }
}

extension Decoding {
    @Suite(.tags(.model)) struct JSONLinesFileTests {
        @Test func jsonlSinkWritesAFileOneEventPerLine() throws {
            let dir = TemporaryDirectory()
            let wav = dir.path("call.wav")
            let log = dir.path("log.jsonl")
            try TestSpeech.synthesize(Sentences.call, to: wav)
            _ = try Harness.run(
                """
                node src = file.input { path: "\(wav)" }
                node asr = recognizer
                node log = jsonl { path: "\(log)" }
                node out = collect
                src -> asr -> log, out
                """)
            let all = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
            // Volatile results while the utterance lasts, then one final result, last.
            let lines = all.filter { $0.contains(#""isFinal":true"#) }
            #expect(lines.count == 1)
            #expect(all.last == lines.first)
            #expect(all.dropLast().allSatisfy { $0.contains(#""isFinal":false"#) })
            let line = try #require(lines.first)
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(o["type"] as? String == "result")
            #expect(o["isFinal"] as? Bool == true)
            #expect(wordErrorRate(reference: Sentences.call, hypothesis: o["text"] as? String ?? "") <= 0.25)
        }
    }
}

/// Subtitle cues from final results (the srt and vtt sinks).
@Suite(.tags(.fast)) struct CueTests {
    @Test("cues: at most 2 lines of 42 characters and 7 s, cut at the pause first, in order")
    func cuesKeepTheLimits() throws {
        // 40 words of 0.3 s, a 0.6 s pause after the 12th, and a 9-letter word in the middle.
        var words: [Word] = []
        var t = 1.0
        for i in 0..<40 {
            if i == 12 { t += 0.6 }
            let text = i == 20 ? "wonderful" : ["the", "cat", "sat", "on", "a", "mat"][i % 6]
            words.append(Word(text: text, range: TimeRange(start: t, end: t + 0.28), confidence: 0.9))
            t += 0.3
        }
        let result = Transcription(
            utterance: 1, isFinal: true, range: TimeRange(start: 1, end: t),
            text: words.map(\.text).joined(separator: " "),
            words: words, node: "asr")
        let cues = CueMaker().cues(for: result)
        #expect(cues.count >= 3)
        #expect(cues.flatMap(\.lines).joined(separator: " ") == result.text)
        for cue in cues {
            #expect(cue.lines.count <= 2 && cue.lines.allSatisfy { $0.count <= 42 }, "\(cue.lines)")
            #expect(cue.end - cue.start <= 7 && cue.end > cue.start)
            #expect(!(cue.start < words[12].range.start && cue.end > words[12].range.start), "a cue spans the pause")
        }
        for (a, b) in zip(cues, cues.dropFirst()) { #expect(a.end <= b.start) }
        #expect(SubtitleSink.timestamp(3725.5, .srt) == "01:02:05,500")
        #expect(SubtitleSink.timestamp(0.0405, .vtt) == "00:00:00.041")
    }

    @Test("a one-word result's cue stays up 5/6 s when the next speech leaves room or at the end, never over the next")
    func oneWordCuesStayUp() throws {
        func result(_ n: Int, _ word: String, _ start: Double, _ end: Double) -> Transcription {
            Transcription(
                utterance: n, isFinal: true, range: TimeRange(start: start - 0.1, end: end + 0.1), text: word,
                words: [Word(text: word, range: TimeRange(start: start, end: end), confidence: 0.9)], node: "asr")
        }
        var writer = SubtitleWriter(format: .srt)
        // Held until the next result says how long it may stay (5/6 s if none came).
        #expect(writer.text(for: result(1, "yes", 1.0, 1.3)) == "")
        #expect(writer.pending == "1\n00:00:01,000 --> 00:00:01,833\nyes\n\n")
        // The next speech comes 2 s later: 5/6 s up. Then one 0.3 s after its end: up until it starts.
        #expect(writer.text(for: result(2, "no", 3.0, 3.2)) == "1\n00:00:01,000 --> 00:00:01,833\nyes\n\n")
        #expect(writer.text(for: result(3, "maybe", 3.5, 3.9)) == "2\n00:00:03,000 --> 00:00:03,500\nno\n\n")
        // An empty result settles nothing; at the end, the last cue stays up 5/6 s too.
        let empty = Transcription(
            utterance: 4, isFinal: true, range: TimeRange(start: 5, end: 6), text: "", node: "asr")
        #expect(writer.text(for: empty) == "")
        #expect(writer.finish() == "3\n00:00:03,500 --> 00:00:04,333\nmaybe\n\n")
        #expect(writer.finish() == "")
    }

    @Test("a long result's last cue is never a word or two left over: the last two cues share the words")
    func noLeftoverWord() throws {
        // 18 words without a pause: 17 fill the first cue (2 lines of 42), one would be left over.
        let texts = "the quick brown fox jumps over the lazy dog and runs to the fence behind the old house".split(
            separator: " ")
        #expect(texts.count == 18)
        var words: [Word] = []
        var t = 0.0
        for text in texts {
            words.append(Word(text: String(text), range: TimeRange(start: t, end: t + 0.25), confidence: 0.9))
            t += 0.27
        }
        let result = Transcription(
            utterance: 1, isFinal: true, range: TimeRange(start: 0, end: t), text: texts.joined(separator: " "),
            words: words, node: "asr")
        let cues = CueMaker().cues(for: result)
        #expect(cues.count == 2, "\(cues.map(\.lines))")
        #expect(cues.flatMap(\.lines).joined(separator: " ") == result.text)
        let counts = cues.map { $0.lines.joined(separator: " ").split(separator: " ").count }
        #expect(counts.allSatisfy { $0 >= 3 }, "\(cues.map(\.lines))")
        #expect(abs(counts[0] - counts[1]) <= 4, "\(counts)")
        for cue in cues { #expect(cue.lines.count <= 2 && cue.lines.allSatisfy { $0.count <= 42 }) }
    }
}
