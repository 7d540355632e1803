import CMallocCounter
import Foundation
import SpeechGraphNodes
import SpeechGraphPlugins
import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphJACK

/// Every test that talks to JACK, one at a time (libjack in one process talks to one server at a time),
/// each against a private dummy server of its own.
@Suite(.serialized, .tags(.jack)) final class JackTests {
    let server = JackServer()
    let dir = TemporaryDirectory()
    let sentence = "please call my mother at seven in the evening"

    init() throws {
        setenv("JACK_DEFAULT_SERVER", server.name, 1)
        setenv("JACK_NO_AUDIO_RESERVATION", "1", 1)
    }

    deinit { server.stop() }

    var env: [String: String] { ["JACK_DEFAULT_SERVER": server.name] }

    /// The period of the server in the tests that transcribe speech played through it: 1024 frames (21 ms, as
    /// `make run`'s private server). Its threads are not real-time (`jackd --no-realtime`), and with other tests'
    /// decoders beside it on two cores, 256-frame (5 ms) periods were missed in bursts (xruns) that lost words.
    /// The tests of the process callback itself keep the default and smaller periods.
    static let speechPeriod = 1024

    func speech(repeats: Int = 1) throws -> String {
        let one = dir.path("call.wav")
        if !FileManager.default.fileExists(atPath: one) { try TestSpeech.synthesize(sentence, to: one) }
        guard repeats > 1 else { return one }
        let many = dir.path("call\(repeats).wav")
        try TestSpeech.sox(Array(repeating: one, count: repeats) + [many])
        return many
    }

    @Test func withoutAServerRunFailsWithOneClearMessage() throws {
        server.stop()
        let r = try Run.speechgraph(
            ["run", "graphs/live.graph"], environment: ["JACK_DEFAULT_SERVER": "speechgraph-absent"],
            timeout: 30)
        #expect(r.status == 1)
        #expect(r.stderr.contains("no JACK server is running named 'speechgraph-absent'"))
        #expect(r.stderr.split(separator: "\n").count == 1, "\(r.stderr)")
        #expect(!r.signaled)
    }

    /// A taken name too long for JACK to make unique (jack2 refuses it with the status of a missing server):
    /// the error says so, not that no server runs.
    @Test func aTakenNameTooLongToRenameIsNamedAsSuch() throws {
        try server.start()
        let graph = dir.path("quiet.graph")
        try """
        node mic = jack.input
        node vad = vad
        mic.out -> vad.in
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let name = String(repeating: "n", count: 62)
        let first = try Process.launchSpeechgraph(
            ["run", graph, "--name", name], environment: env, output: dir.path("first.out"))
        defer {
            if first.isRunning { kill(first.processIdentifier, SIGTERM) }
            first.waitUntilExit()
        }
        let deadline = Date().addingTimeInterval(60)
        while try !server.lsp().contains("\(name):in_1") && first.isRunning && Date() < deadline { usleep(50_000) }
        try #require(try server.lsp().contains("\(name):in_1"), "\(contents(dir.path("first.out.err")))")
        let second = try Run.speechgraph(["run", graph, "--name", name], environment: env, timeout: 60)
        #expect(second.status == 1)
        #expect(
            second.stderr.contains(
                "JACK refused the client name '\(name)': another client has it, and at 62 bytes it leaves no room"),
            "\(second.stderr)")
        #expect(!second.stderr.contains("no JACK server"), "\(second.stderr)")
        #expect(second.stderr.split(separator: "\n").count == 1, "\(second.stderr)")
    }

    /// JACK's terminal flag: the input ports of a graph that only listens, the output ports of one that only
    /// plays; neither when a graph has ports both ways (it may pass its input on).
    @Test func portsAreTerminalUnlessTheGraphGoesBothWays() throws {
        try server.start()
        let graphs = [
            ("listens", "node mic = jack.input\nnode vad = vad\nmic.out -> vad.in\n"),
            (
                "plays",
                "node f = file.input { path: \"\(try speech(repeats: 8))\", realtime: true }\n"
                    + "node o = jack.output\nf -> o\n"
            ),
            ("both", "node mic = jack.input\nnode o = jack.output\nmic.out -> o\n"),
        ]
        var running: [Process] = []
        defer {
            for p in running where p.isRunning { kill(p.processIdentifier, SIGTERM) }
            for p in running { p.waitUntilExit() }
        }
        for (name, text) in graphs {
            try text.write(toFile: dir.path("\(name).graph"), atomically: true, encoding: .utf8)
            running.append(
                try Process.launchSpeechgraph(
                    ["run", dir.path("\(name).graph"), "--name", "sgt-\(name)"], environment: env,
                    output: dir.path("\(name).out")))
        }
        let wanted = ["sgt-listens:in_1", "sgt-plays:out_1", "sgt-both:in_1", "sgt-both:out_1"]
        var listing = ""
        let deadline = Date().addingTimeInterval(60)
        repeat {
            listing = try server.lsp(["-p"])
            if wanted.allSatisfy({ listing.contains($0 + "\n") }) { break }
            usleep(50_000)
        } while Date() < deadline && running.allSatisfy(\.isRunning)
        #expect(listing.contains("sgt-listens:in_1\n\tproperties: input,terminal,"), "\(listing)")
        #expect(listing.contains("sgt-plays:out_1\n\tproperties: output,terminal,"), "\(listing)")
        #expect(listing.contains("sgt-both:in_1\n\tproperties: input,\n"), "\(listing)")
        #expect(listing.contains("sgt-both:out_1\n\tproperties: output,\n"), "\(listing)")
    }

    /// A graph that passes its input on to a `jack.output` delays it by the output's prebuffer, up to a period more,
    /// and tells JACK so: its outputs' capture latency is its inputs' plus that, its inputs' playback latency its
    /// outputs' plus that (a DAW recording its output lines it up). The dummy server's capture ports report 256
    /// frames (a period), its playback ports 512.
    @Test func aGraphThatPassesItsInputOnReportsItsLatency() throws {
        try server.start(period: 256)
        let client = "sgt-latency-\(getpid())"
        try """
        node mic = jack.input { connect: "system:capture_1" }
        node o = jack.output { prebuffer: 100 ms, connect: "system:playback_1" }
        mic.out -> o
        """.write(toFile: dir.path("latency.graph"), atomically: true, encoding: .utf8)
        let p = try Process.launchSpeechgraph(
            ["run", dir.path("latency.graph"), "--name", client], environment: env, output: dir.path("latency.out"))
        defer {
            if p.isRunning { kill(p.processIdentifier, SIGTERM) }
            p.waitUntilExit()
        }
        // 100 ms at 48 kHz is 4800 frames.
        let outputs =
            "\(client):out_1\n\tport playback latency = [ 512 512 ] frames\n"
            + "\tport capture latency = [ \(256 + 4800) \(256 + 4800 + 256) ] frames\n"
        let inputs =
            "\(client):in_1\n\tport playback latency = [ \(512 + 4800) \(512 + 4800 + 256) ] frames\n"
            + "\tport capture latency = [ 256 256 ] frames\n"
        var listing = ""
        // Once connected, JACK asks the client for its latency (a deadline only bounds a hang).
        let deadline = Date().addingTimeInterval(60)
        repeat {
            listing = try server.lsp(["-l"])
            if listing.contains(outputs) && listing.contains(inputs) { break }
            usleep(50_000)
        } while Date() < deadline && p.isRunning
        #expect(listing.contains(outputs), "\(listing)")
        #expect(listing.contains(inputs), "\(listing)")
    }

    /// Waits until a final line of `output` shows the sentence's last word (the deadline only bounds a hang),
    /// stops the run with SIGTERM, and returns its transcript: the final lines, joined.
    func finishAfterTheSentence(_ p: Process, output out: String, deadline: Date) -> String {
        while p.isRunning && Date() < deadline
            && !contents(out).split(separator: "\n").contains(where: { $0.hasPrefix("[") && $0.contains("evening") })
        {
            usleep(20_000)
        }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        return contents(out).split(separator: "\n").filter { $0.hasPrefix("[") }.joined(separator: " ")
    }

    /// Also with the smallest 'buffer' under a large period: a period larger than the ring was dropped whole, every
    /// time, and all the audio was lost without a word.
    @Test(arguments: [(48000, Self.speechPeriod, nil), (16000, 2048, "50 ms")])
    func speechPlayedThroughJackIsTranscribed(rate: Int, period: Int, buffer: String?) throws {
        try server.start(rate: rate, period: period)
        let wav = try speech()
        // A second of silence first: a loaded machine's xruns while the clients start fall on it, not on speech.
        try TestSpeech.sox([wav, "-r", "44100", dir.path("call44.wav"), "pad", "1", "0"])
        let log = dir.path("live.jsonl")
        let out = dir.path("live.out")
        let buffers = buffer.map { ["--set", "mic.buffer=\($0)", "--set", "speak.buffer=\($0)"] } ?? []
        let p = try Process.launchSpeechgraph(
            ["run", "graphs/jack-demo.graph"] + buffers,
            environment: env.merging(["DEMO_AUDIO": dir.path("call44.wav"), "DEMO_LOG": log]) { $1 },
            output: out)
        // Runs until a final result shows the sentence's last word (a deadline only bounds a hang), then SIGTERM.
        let deadline = Date().addingTimeInterval(120)
        let text = finishAfterTheSentence(p, output: out, deadline: deadline)
        #expect(p.terminationStatus == 0, "\(contents(out + ".err"))")
        #expect(
            wordErrorRate(reference: sentence, hypothesis: text.replacing(/\[[^\]]*\]/, with: "")) <= 0.25,
            "\(contents(out))")
        let lines = contents(log).split(separator: "\n")
        #expect(lines.contains { $0.contains(#""type":"result""#) && $0.contains(#""isFinal":true"#) })
    }

    /// graphs/gate.graph: the C example plugin between the JACK input and the vad, in the process callback.
    @Test func gateGraphTranscribesLiveSpeech() throws {
        try server.start(period: Self.speechPeriod)
        let wav = try speech()
        // Speech over a noise floor the gate removes (-70 dBFS), with a second of it first.
        try TestSpeech.sox([
            "-n", "-r", "16000", "-c", "1", dir.path("floor.wav"), "synth", "1", "whitenoise", "vol", "0.0003",
        ])
        try TestSpeech.sox([dir.path("floor.wav"), wav, dir.path("gated-in.wav")])
        let out = dir.path("gate.out")
        let built = TestPaths.binary.deletingLastPathComponent().path
        let client = "sg-gate-\(getpid())"
        let p = try Process.launchSpeechgraph(
            ["run", "--plugin-path", built, "--name", client, "graphs/gate.graph"],
            environment: env.merging(["SPEECHGRAPH_CAPTURE": "gplayer:play_1", "XDG_CACHE_HOME": dir.path("cache")]) {
                $1
            }, output: out)
        // The player starts once speechgraph's port exists (a deadline only bounds a hang).
        let deadline = Date().addingTimeInterval(120)
        while p.isRunning && Date() < deadline && !((try? server.lsp()) ?? "").contains("\(client):in_1") {
            usleep(20_000)
        }
        try """
        node player = file.input { path: "\(dir.path("gated-in.wav"))", realtime: true }
        node speak = jack.output { port: "play", connect: "\(client):in_1" }
        player -> speak
        """.write(toFile: dir.path("player.graph"), atomically: true, encoding: .utf8)
        let player = try Run.speechgraph(["run", "--name", "gplayer", dir.path("player.graph")], environment: env)
        #expect(player.status == 0, "\(player.stderr)")
        let text = finishAfterTheSentence(p, output: out, deadline: deadline)
        #expect(p.terminationStatus == 0, "\(contents(out + ".err"))")
        #expect(
            wordErrorRate(reference: sentence, hypothesis: text.replacing(/\[[^\]]*\]/, with: "")) <= 0.25,
            "\(contents(out)) \(contents(out + ".err"))")
    }

    /// A real-time safe plugin node that crashes in the process callback is named, as in a worker.
    @Test func pluginCrashInTheProcessCallbackIsNamed() throws {
        // The fixture crashes at 22050 Hz only (its validation runs it at other rates).
        try server.start(rate: 22050)
        let plugins = dir.path("plugins")
        try FileManager.default.createDirectory(atPath: plugins, withIntermediateDirectories: true)
        let cc = try Run.process(
            "/usr/bin/env",
            [
                "clang", "-shared", "-fPIC", "-O2", "-I", "Sources/CSpeechGraphPlugin/include", "-DCRASH_AT_22050",
                "Tests/PluginFixtures/fixture.c", "-o", plugins + "/crash.so",
            ], currentDirectory: TestPaths.packageRoot)
        try #require(cc.status == 0, "\(cc.stderr)")
        try """
        node mic = jack.input
        node p = fixture.pass
        node rec = tap.record { path: "\(dir.path("rt.wav"))" }
        mic -> p -> rec
        """.write(toFile: dir.path("rt.graph"), atomically: true, encoding: .utf8)
        let r = try Run.speechgraph(
            ["run", "--plugin-path", plugins, "--name", "sg-crash-\(getpid())", dir.path("rt.graph")],
            environment: env.merging(["XDG_CACHE_HOME": dir.path("cache")]) { $1 }, timeout: 120)
        #expect(r.signaled && r.status == SIGSEGV, "\(r.status) \(r.stderr)")
        #expect(
            r.stderr.split(separator: "\n").first.map(String.init)
                == "speechgraph: error: node 'p' (fixture.pass, plugin \(plugins)/crash.so) crashed in its process "
                + "function (Segmentation fault)", "\(r.stderr)")
        // In the process callback (Swift's backtracer, where it could read the process, names the function that
        // called the plugin).
        if r.stderr.contains("*** Program crashed") {
            #expect(r.stderr.contains("speechgraphProcess"), "\(r.stderr)")
        }
    }

    @Test func portsNamesMetadataAndConnections() throws {
        try server.start()
        var listing = ""
        var properties = ""
        var connections = ""
        var lateConnections = ""
        // Two clients asking for the same name: JACK makes the second unique. The first connects to
        // system:capture_1 at start, and to jack-play:out_* when such a port appears later.
        let first = try Process.launchSpeechgraph(
            ["run", "graphs/live.graph", "--name", "sgt"],
            environment: env.merging(["SPEECHGRAPH_CAPTURE": "system:capture_1,jack-play*:out_*"]) { $1 },
            output: dir.path("first.out"))
        // Deadlines here only bound a hang; every wait ends as soon as JACK shows what it waits for.
        let registered = Date().addingTimeInterval(60)
        while try !server.lsp().contains("sgt:in_1") && Date() < registered { usleep(50_000) }
        let second = try Process.launchSpeechgraph(
            ["run", "graphs/live.graph", "--name", "sgt"],
            environment: env, output: dir.path("second.out"))
        let ready = Date().addingTimeInterval(60)
        while Date() < ready {
            listing = try server.lsp()
            connections = try server.lsp(["-c"])
            if listing.contains("sgt-01:in_1") && connections.contains("system:capture_1\n   sgt:in_1") { break }
            usleep(50_000)
        }
        properties = try Run.process(
            "/usr/bin/jack_property", ["--port", "-l", "sgt:in_1"], environment: env, timeout: 10
        ).stdout
        // A connection removed in a patchbay stays removed when other ports appear (the patterns connect new
        // ports only).
        try Run.process("/usr/bin/jack_disconnect", ["system:capture_1", "sgt:in_1"], environment: env, timeout: 10)
        // A client that appears later: jack-play (jack-tools), whose port is jack-play-PID:out_1.
        let third = Process()
        third.executableURL = URL(fileURLWithPath: "/usr/bin/jack-play")
        third.arguments = [try speech(repeats: 4)]
        third.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
        third.standardOutput = FileHandle.nullDevice
        third.standardError = FileHandle.nullDevice
        try third.run()
        let deadline = Date().addingTimeInterval(60)
        repeat {
            usleep(100_000)
            lateConnections = try server.lsp(["-c"])
        } while lateConnections.firstMatch(of: /jack-play-\d+:out_1\n   sgt:in_1/) == nil && Date() < deadline
        // A player that stops and starts again under the same name has new ports: connected again, each time.
        var replays: [String] = []
        let player = dir.path("player.graph")
        try """
        node f = file.input { path: "\(try speech(repeats: 4))", realtime: true }
        node o = jack.output
        f -> o
        """.write(toFile: player, atomically: true, encoding: .utf8)
        for _ in 0..<2 {
            let replay = try Process.launchSpeechgraph(
                ["run", player, "--name", "jack-play-again"], environment: env, output: dir.path("replay.out"))
            var now = ""
            let connectedAgain = Date().addingTimeInterval(60)
            repeat {
                usleep(100_000)
                now = try server.lsp(["-c"])
            } while !now.contains("jack-play-again:out_1\n   sgt:in_1") && Date() < connectedAgain
            replays.append(now)
            kill(replay.processIdentifier, SIGTERM)
            replay.waitUntilExit()
            let gone = Date().addingTimeInterval(60)
            while try server.lsp().contains("jack-play-again:") && Date() < gone { usleep(50_000) }
        }
        // The second instance says which name JACK gave it, once its graph runs (its models loaded).
        let renamed = Date().addingTimeInterval(60)
        var secondOut = ""
        repeat {
            secondOut = (try? String(contentsOfFile: dir.path("second.out"), encoding: .utf8)) ?? ""
            if secondOut.contains("this graph's client is 'sgt-01'") { break }
            usleep(50_000)
        } while Date() < renamed
        // A graph that routes its input's events nowhere: the same news on standard error, as it happens.
        let quietGraph = dir.path("quiet.graph")
        try """
        node mic = jack.input { connect: "nothing:here_*" }
        node vad = vad
        mic.out -> vad.in
        """.write(toFile: quietGraph, atomically: true, encoding: .utf8)
        let fourth = try Process.launchSpeechgraph(
            ["run", quietGraph, "--name", "sgt"], environment: env, output: dir.path("fourth.out"))
        let told = Date().addingTimeInterval(60)
        var fourthErr = ""
        repeat {
            fourthErr = (try? String(contentsOfFile: dir.path("fourth.out.err"), encoding: .utf8)) ?? ""
            if fourthErr.contains("this graph's client is 'sgt-02'") && fourthErr.contains("matches no JACK port") {
                break
            }
            usleep(50_000)
        } while Date() < told && fourth.isRunning
        // Stop the four processes this test started (SIGTERM: speechgraph finishes and exits 0).
        for p in [first, second, third, fourth] where p.isRunning { kill(p.processIdentifier, SIGTERM) }
        for p in [first, second, third, fourth] { p.waitUntilExit() }
        #expect(
            fourthErr.contains(
                "speechgraph: warning: node 'mic': another JACK client is called 'sgt': this graph's client is 'sgt-02'"
            ),
            "\(fourthErr)")
        #expect(
            fourthErr.contains(
                "speechgraph: warning: node 'mic': 'connect' pattern 'nothing:here_*' matches no JACK port"),
            "\(fourthErr)")
        #expect(fourth.terminationStatus == 0, "\(fourthErr)")
        /// The ports `port` is connected to, in a `jack_lsp -c` listing.
        func connected(_ port: String, in listing: String) -> [Substring] {
            let lines = listing.split(separator: "\n")
            guard let at = lines.firstIndex(of: Substring(port)) else { return [] }
            return Array(lines[(at + 1)...].prefix { $0.hasPrefix("   ") }.map { $0.dropFirst(3) })
        }
        #expect(!connected("system:capture_1", in: lateConnections).contains("sgt:in_1"), "\(lateConnections)")
        #expect(secondOut.contains("this graph's client is 'sgt-01'"), "\(secondOut)")
        #expect(listing.contains("sgt:in_1"))
        #expect(listing.contains("sgt-01:in_1"))
        #expect(properties.contains("pretty-name") && properties.contains("mic 1"), "\(properties)")
        #expect(properties.contains("port-group"))
        #expect(connections.contains("system:capture_1\n   sgt:in_1"), "\(connections)")
        #expect(lateConnections.firstMatch(of: /jack-play-\d+:out_1\n   sgt:in_1/) != nil, "\(lateConnections)")
        for replay in replays { #expect(replay.contains("jack-play-again:out_1\n   sgt:in_1"), "\(replay)") }
        #expect(replays.count == 2)
        #expect(first.terminationStatus == 0 && second.terminationStatus == 0)
    }

    /// graphs/captions.graph as shipped (a free port instead of 8080): what JACK hears is on its page's transcript.
    @Test func captionsGraphServesWhatJackHears() throws {
        try server.start(period: Self.speechPeriod)
        // A second of silence first, as in the tests above: a loaded machine's xruns while jack-play's client starts
        // fall on it, not on speech.
        let wav = dir.path("captions-in.wav")
        try TestSpeech.sox([try speech(), wav, "pad", "1", "0"])
        let out = dir.path("captions.out")
        let p = try Process.launchSpeechgraph(
            ["run", "graphs/captions.graph", "--name", "sgcap", "--set", "page.listen=127.0.0.1:0"],
            environment: env.merging(["SPEECHGRAPH_CAPTURE": "jack-play*:out_*"]) { $1 }, output: out)
        var port: String?
        let started = Date().addingTimeInterval(60)
        while port == nil && p.isRunning && Date() < started {
            port = contents(out + ".err").firstMatch(of: /captions at http:\/\/127\.0\.0\.1:(\d+)\//).map {
                String($0.1)
            }
            if port == nil { usleep(50_000) }
        }
        // The page's transcript, read as a browser would (over HTTP).
        func transcript(_ port: String) -> String {
            (try? Run.process(
                "/usr/bin/python3",
                [
                    "-c",
                    "import urllib.request; print(urllib.request.urlopen("
                        + "'http://127.0.0.1:\(port)/transcript.txt').read().decode())",
                ],
                timeout: 10
            ).stdout) ?? ""
        }
        // The console's final results and the xruns it reported (the dummy server's, which lose audio when a loaded
        // machine does not run its thread in time: not ours, and said so).
        func finals() -> Int { contents(out).matches(of: #/(?m)^\[\d\d:\d\d\.\d{3} - /#).count }
        func xruns() -> Int { contents(out).matches(of: #/(?m)^-- (\d+ )?JACK xruns? at /#).count }
        // The sentence played once, and again (at most three times in all) only when the server reported xruns
        // while it played and the page has no sentence's last word: every play but the last one lost audio to JACK.
        var text = ""
        var plays = 0
        while let port, p.isRunning && plays < 3 && !text.contains("evening") {
            plays += 1
            let (finalsBefore, xrunsBefore) = (finals(), xruns())
            let player = Process()
            player.executableURL = URL(fileURLWithPath: "/usr/bin/jack-play")
            player.arguments = [wav]
            player.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
            player.standardOutput = FileHandle.nullDevice
            player.standardError = FileHandle.nullDevice
            try player.run()
            // A player that does not end (the sentence is 4 s) is stopped: a deadline only bounds a hang.
            Run.wait(for: player, seconds: 60) { false }
            if player.isRunning { kill(player.processIdentifier, SIGTERM) }
            player.waitUntilExit()
            // The final result of what it played (the vad ends the utterance in the silence after it), then the
            // page's transcript until it has it.
            let deadline = Date().addingTimeInterval(60)
            while p.isRunning && finals() == finalsBefore && Date() < deadline { usleep(50_000) }
            repeat {
                text = transcript(port)
                if !text.contains("evening") { usleep(200_000) }
            } while p.isRunning && !text.contains("evening") && contents(out).contains("evening") && Date() < deadline
            if xruns() == xrunsBefore { break }
        }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        // The last utterance on the page: the last play's.
        let last = text.split(separator: "\n").last { !$0.trimmingCharacters(in: .whitespaces).isEmpty }
        let heard = last.map(String.init) ?? ""
        #expect(port != nil, "\(contents(out + ".err"))")
        // The console's lines beside it: they say when JACK lost audio (xruns, gaps).
        #expect(
            wordErrorRate(reference: sentence, hypothesis: heard) <= 0.25, "\(plays) plays: \(text) \(contents(out))")
        #expect(contents(out).contains("evening"), "the console shows it too: \(contents(out))")
        #expect(p.terminationStatus == 0, "\(contents(out + ".err"))")
    }

    @Test func serverLossFinishesTheUtteranceAndReturnIsFollowed() throws {
        try server.start()
        let wav = try speech(repeats: 10)
        let out = dir.path("loss.out")
        let log = dir.path("loss.jsonl")
        let p = try Process.launchSpeechgraph(
            ["run", "graphs/jack-demo.graph"],
            environment: env.merging(["DEMO_AUDIO": wav, "DEMO_LOG": log]) { $1 }, output: out)
        // Deadlines here only bound a hang: each wait ends when the output shows what it waits for.
        func waitFor(_ what: (String) -> Bool) {
            let deadline = Date().addingTimeInterval(120)
            while !what(contents(out)) && Date() < deadline && p.isRunning { usleep(20_000) }
        }
        // The first sentence's result, then the server goes away while the demo goes on speaking.
        waitFor { $0.split(separator: "\n").contains { $0.hasPrefix("[") && $0.contains("please") } }
        server.stop()
        waitFor { $0.contains("recognition not available") }
        try server.start()
        waitFor { $0.contains("-- recognition available") }
        // Then it transcribes again.
        waitFor { text in
            let lines = text.split(separator: "\n")
            guard let back = lines.firstIndex(where: { $0.contains("-- recognition available") }) else { return false }
            return lines[back...].contains { $0.hasPrefix("[") && $0.contains("mother") }
        }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        let stdout = contents(out)
        #expect(p.terminationStatus == 0)
        // The utterance in flight was delivered, then the loss was shown, then the return.
        let lines = stdout.split(separator: "\n").map(String.init)
        let lostIndex = try #require(lines.firstIndex { $0.contains("recognition not available") }, "\(stdout)")
        #expect(lines[..<lostIndex].contains { $0.hasPrefix("[") && $0.contains("please") }, "\(stdout)")
        let backIndex = try #require(lines.firstIndex { $0.contains("-- recognition available") }, "\(stdout)")
        #expect(backIndex > lostIndex)
        // And it transcribes again afterwards.
        #expect(lines[backIndex...].contains { $0.hasPrefix("[") && $0.contains("mother") }, "\(stdout)")
        let events = contents(log).split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let availability = events.filter { $0["type"] as? String == "availability" }.map { $0["isAvailable"] as? Bool }
        #expect(availability == [false, true])
        #expect(
            events.contains {
                $0["type"] as? String == "gap" && ($0["reason"] as? String)?.contains("unavailable") == true
            })
    }

    /// The server gone under a jack.output: the audio it had queued (up to 'buffer') is lost with the rest, and
    /// counted with it (the warning left it out: 5.85 s said of about 8.5 s lost).
    @Test func audioQueuedForAServerThatWentIsCountedAsNotPlayed() throws {
        try server.start()
        let wav = try speech(repeats: 4)
        let graph = dir.path("play.graph")
        try """
        node speech = file.input { path: "\(wav)" }
        node speak  = jack.output { port: "play" }
        speech -> speak
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let out = dir.path("play.out")
        let p = try Process.launchSpeechgraph(
            ["run", graph, "--stats", "--name", "sgplay"], environment: env, output: out)
        // Deadlines here only bound a hang: the server goes once the port is there (the ring fills at once, the
        // file being read as fast as the ring takes it).
        let registered = Date().addingTimeInterval(60)
        while try !server.lsp().contains("sgplay:play_1") && Date() < registered && p.isRunning { usleep(20_000) }
        server.stop()
        // The file's audio goes nowhere once the server is gone: the run ends as fast as it is read.
        let ended = Date().addingTimeInterval(120)
        while p.isRunning && Date() < ended { usleep(20_000) }
        if p.isRunning { kill(p.processIdentifier, SIGKILL) }
        p.waitUntilExit()
        let stderr = contents(out + ".err")
        #expect(p.terminationStatus == 1, "\(stderr)")
        let file = try AudioFile(path: wav)
        let total = Double(file.frameCount) / Double(file.sampleRate)
        let unplayed = try #require(
            stderr.firstMatch(of: /([0-9.]+) s of audio were not played/).flatMap { Double($0.1) }, "\(stderr)")
        // What JACK can have played: every callback a period (an upper bound: the first ones play the prebuffer's
        // silence).
        let period = try #require(stderr.firstMatch(of: /period (\d+) frames/).flatMap { Double($0.1) }, "\(stderr)")
        let rate = try #require(stderr.firstMatch(of: /, (\d+) Hz,/).flatMap { Double($0.1) }, "\(stderr)")
        let callbacks = stderr.firstMatch(of: /over (\d+) callbacks/).flatMap { Double($0.1) } ?? 0
        #expect(unplayed + callbacks * period / rate >= total - 0.1, "\(total) s in all; \(stderr)")
        #expect(unplayed <= total + 0.1, "\(stderr)")
    }

    /// JACK restarted at another rate: said once (not every 250 ms while the server stays so), and when a
    /// server at our rate is back, transcription goes on, with the lost audio as a gap.
    @Test func aServerBackAtAnotherRateIsReportedOnce() throws {
        try server.start()
        let out = dir.path("rate.out")
        let log = dir.path("rate.jsonl")
        let graph = dir.path("rate.graph")
        try """
        node mic    = jack.input { connect: "system:capture_1" }
        node screen = console
        node log    = jsonl { path: "\(log)" }
        mic.events -> screen, log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let p = try Process.launchSpeechgraph(["run", graph], environment: env, output: out)
        func waitFor(_ what: (String) -> Bool) {
            let deadline = Date().addingTimeInterval(120)
            while !what(contents(out)) && Date() < deadline && p.isRunning { usleep(20_000) }
        }
        waitFor { _ in (try? self.server.lsp().contains("speechgraph:in_1")) == true }
        server.stop()
        waitFor { $0.contains("recognition not available") }
        try server.start(rate: 44100, period: 1024)
        waitFor { $0.contains("came back at 44100 Hz") }
        // The client tries again every 250 ms while the server runs at the other rate: each try is a client that
        // registers with the server and goes, which jack_evmon prints. Four more tries are waited for, so the
        // report could have been repeated four times.
        let tries = dir.path("rate.evmon")
        FileManager.default.createFile(atPath: tries, contents: nil)
        // jack_evmon started again (appending) if it goes before the tries are seen: on a loaded machine its
        // client can fail to open while the server settles at the new rate (CI: it ended at once, none seen).
        var monitors = 0
        func monitor() throws -> Process {
            let monitor = Process()
            monitor.executableURL = URL(fileURLWithPath: "/usr/bin/stdbuf")
            monitor.arguments = ["-oL", "/usr/bin/jack_evmon"]
            monitor.environment = ProcessInfo.processInfo.environment.merging(env) { $1 }
            let output = try FileHandle(forWritingTo: URL(fileURLWithPath: tries))
            output.seekToEndOfFile()
            monitor.standardOutput = output
            monitor.standardError = FileHandle.nullDevice
            try monitor.run()
            monitors += 1
            return monitor
        }
        var current = try monitor()
        let deadline = Date().addingTimeInterval(120)
        while contents(tries).components(separatedBy: "Client speechgraph registered").count - 1 < 4,
            Date() < deadline, p.isRunning
        {
            if !current.isRunning { current = try monitor() }
            usleep(20_000)
        }
        // SIGKILL: a test's child may have SIGTERM blocked (the runner thread's signal mask is inherited).
        if current.isRunning { kill(current.processIdentifier, SIGKILL) }
        current.waitUntilExit()
        if monitors > 1 { print("jack_evmon started \(monitors) times") }
        #expect(contents(tries).components(separatedBy: "Client speechgraph registered").count - 1 >= 4)
        server.stop()
        try server.start()
        waitFor { $0.contains("-- recognition available") }
        if p.isRunning { kill(p.processIdentifier, SIGTERM) }
        p.waitUntilExit()
        #expect(p.terminationStatus == 0, "\(contents(out + ".err"))")
        let lines = contents(out).split(separator: "\n")
        #expect(lines.filter { $0.contains("came back at 44100 Hz") }.count == 1, "\(contents(out))")
        #expect(lines.contains { $0.contains("-- recognition available") })
        #expect(contents(log).contains(#""type":"gap""#), "the audio lost while no server ran at our rate")
    }

    /// The process callback allocates nothing: every allocation on JACK's process thread is counted
    /// for 10 s of a graph that plays speech out and records it back in, with recognition running.
    @Test func theProcessThreadDoesNotAllocate() throws {
        try server.start()
        // The counter is in place: it sees this thread's allocations when watching it.
        sg_malloc_counter_watch(pthread_self())
        let probe = malloc(64)
        free(probe)
        #expect(sg_malloc_counter_count() >= 1)
        sg_malloc_counter_unwatch()

        let wav = try speech(repeats: 4)
        var registry = BuiltinNodes.registry()
        try registry.register(EventCollector.type)
        // The gate example plugin (C), run by the process callback itself: it too must not allocate there.
        let built = TestPaths.binary.deletingLastPathComponent().path
        var catalog = PluginCatalog(directories: [built], scanner: .inProcess, cachePath: nil)
        catalog.register(into: &registry)
        try #require(registry["gate"] != nil, "libspeechgraph-gate.so in \(built): \(catalog.warnings)")
        let spec = try GraphParser.parse(
            """
            node player = file.input { path: "\(wav)", realtime: true }
            node speak = jack.output { port: "play", connect: "speechgraph-alloc:in_1" }
            node mic = jack.input
            node g = gate { threshold: -50 dB }
            node asr = recognizer
            node out = collect
            player -> speak
            mic -> g -> asr -> out
            """, file: "alloc.graph", environment: [:])
        // Measured (as `run --stats` does): the callback counts its periods, which the watch below waits on; the
        // measuring adds two clock reads to the callback's work, which must not allocate either.
        let resources = GraphResources(providing: [JackClientOptions(name: "speechgraph-alloc", measureCallback: true)])
        let plan = try GraphPlanner(registry: registry).plan(spec, resources: resources)
        let runner = try RunningGraph(plan: plan, registry: registry, resources: resources)
        let gate = try #require(runner.node(named: "g") as? PluginAudioNode)
        #expect(gate.isHostedInRealtime, "the gate runs in the process callback")
        runner.start()
        // A test that throws before it stops the runner stops it here, before the server goes (a client left open on
        // a stopped server is one libjack frees at the next open).
        defer {
            runner.stop()
            try? runner.wait()
        }
        let session = try #require(resources.optional(JackSession.self))
        // Watched past start-up (half a second of callbacks) for 10 s of callbacks, counted by the session itself;
        // the deadlines only bound a server that stops calling.
        let period = 256.0 / 48000  // the test server's period and rate (JackServer.start)
        func waitForCallbacks(_ n: Int) {
            let deadline = Date().addingTimeInterval(120)
            while session.callbackDurations().count < n && Date() < deadline { usleep(10_000) }
        }
        let startUp = Int(0.5 / period)
        waitForCallbacks(startUp)
        // The process thread, once it calls back (an inactive client has none).
        let thread = try #require(session.processThread)
        sg_malloc_counter_watch(thread)
        let watched = session.callbackDurations().count
        waitForCallbacks(watched + Int(10 / period))
        let allocations = sg_malloc_counter_count()
        sg_malloc_counter_unwatch()
        runner.stop()
        #expect(throws: Never.self) { try runner.wait() }
        print("allocations on the JACK process thread over 10 s: \(allocations)")
        #expect(allocations == 0)
        let collector = runner.node(named: "out") as! EventCollector
        // The sentence was recognised (an xrun of the dummy server on a loaded machine may split it in two).
        #expect(collector.finalResults.contains { $0.text.contains("mother") }, "\(collector.finalResults)")
    }

    /// When the graph cannot keep up, periods are dropped on the JACK side (the RT thread never waits)
    /// and gap events say which stretch of audio was lost; stream time stays on the audio clock.
    @Test func fallingBehindBecomesGapEvents() throws {
        try server.start()
        let (runner, slow) = try micGraph(into: SlowSink.self, buffer: "50 ms", client: "speechgraph-slow-\(getpid())")
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) { runner.stop() }
        try runner.run()
        let gaps = (runner.node(named: "out") as! EventCollector).events.compactMap { e -> TimeRange? in
            if case .gap(_, let r, let reason) = e, reason.hasPrefix("overrun") { return r }
            return nil
        }
        #expect(!gaps.isEmpty)
        #expect(gaps.allSatisfy { $0.duration > 0 })
        // Audio and gaps tile the timeline: each block starts where the audio before it, plus any gap, ended.
        var expected: Int64 = 0
        var gapIndex = 0
        for (start, count) in slow.blocks {
            while gapIndex < gaps.count, Int64((gaps[gapIndex].start * 48000).rounded()) == expected {
                expected += Int64((gaps[gapIndex].duration * 48000).rounded())
                gapIndex += 1
            }
            #expect(start == expected)
            expected = start + Int64(count)
        }
        // Gaps not reached by a block came after the last one.
        #expect(gaps[gapIndex...].allSatisfy { Int64(($0.start * 48000).rounded()) >= expected })
    }
    /// Two jack.input nodes share the graph's JACK client: each hears of the periods dropped (its rings lost them
    /// too), not only the one that asked first, and each one's blocks and gaps tile its timeline.
    @Test func twoInputsEachHearOfTheGaps() throws {
        try server.start()
        var registry = BuiltinNodes.registry()
        try registry.register(EventCollector.type)
        try registry.register(SlowSink.type)
        let spec = try GraphParser.parse(
            """
            node a = jack.input { port: "a", buffer: 50 ms }
            node b = jack.input { port: "b", buffer: 50 ms }
            node slowA = test.slow
            node slowB = test.slow
            node outA = collect
            node outB = collect
            a -> slowA
            b -> slowB
            a.events -> outA
            b.events -> outB
            """, file: "two.graph", environment: [:])
        let resources = GraphResources(providing: [JackClientOptions(name: "sg-two-\(getpid())")])
        let plan = try GraphPlanner(registry: registry).plan(spec, resources: resources)
        let runner = try RunningGraph(plan: plan, registry: registry, resources: resources)
        DispatchQueue.global().asyncAfter(deadline: .now() + 3) { runner.stop() }
        try runner.run()
        func gaps(_ out: String) -> [TimeRange] {
            (runner.node(named: out) as! EventCollector).events.compactMap { e -> TimeRange? in
                if case .gap(_, let r, let reason) = e, reason.hasPrefix("overrun") { return r }
                return nil
            }
        }
        // The two ports dropped the same periods: each node says every gap, at the same place in its timeline (each
        // once said only the gaps it happened to read first, and its clock missed the others). The one the stop
        // reached last may have said a few more.
        let (a, b) = (gaps("outA"), gaps("outB"))
        #expect(a.starts(with: b) || b.starts(with: a), "\(a.count) and \(b.count) gaps, not the same ones")
        for (sink, out) in [("slowA", "outA"), ("slowB", "outB")] {
            let gaps = gaps(out)
            #expect(!gaps.isEmpty, "\(out) heard of no gap")
            var expected: Int64 = 0
            var gapIndex = 0
            for (start, count) in (runner.node(named: sink) as! SlowSink).blocks {
                while gapIndex < gaps.count, Int64((gaps[gapIndex].start * 48000).rounded()) == expected {
                    expected += Int64((gaps[gapIndex].duration * 48000).rounded())
                    gapIndex += 1
                }
                #expect(start == expected, "\(sink)")
                expected = start + Int64(count)
            }
        }
    }

    /// libjack's state is the process's: once a client's server has gone away, its next open of any client frees
    /// every client of the process (JACK2), here a live one of another server, whose session would then crash on
    /// it. A client of another server is not opened while that lasts: it is refused with a clear error, the live
    /// client stays the server's, and the next open once it has closed succeeds.
    @Test func aServerThatGoesDoesNotTakeAnotherServersClientWithIt() throws {
        let other = JackServer()
        defer { other.stop() }
        try server.start()
        try other.start()
        func session(_ name: String, on server: JackServer, openWait: Double = 10) throws -> JackSession {
            let s = JackSession(
                name: "\(name)-\(getpid())", server: server.name, measureCallback: true, openWait: openWait)
            try s.addPort(
                name: "in_1", prettyName: "in", group: "in", order: 0, isInput: true, connect: [],
                ring: AudioRing(minimumCapacity: 48000))
            try s.start()
            return s
        }
        let lost = try session("sg-lost", on: server)
        let live = try session("sg-live", on: other)
        defer { live.close() }
        server.stop()
        // The lost client is seen and closed (on a thread of its own); deadlines only bound a hang.
        let deadline = Date().addingTimeInterval(60)
        while (lost.isAvailable || lost.abandoned.closing) && Date() < deadline {
            lost.poll()
            usleep(10_000)
        }
        #expect(!lost.isAvailable && !lost.abandoned.closing)
        lost.close()
        // A third client, of the server that is still there: refused, and said why.
        let refused = JackSession(name: "sg-third-\(getpid())", server: other.name, openWait: 0.5)
        #expect {
            try refused.start()
        } throws: { error in
            "\(error)".contains("1 client of another JACK server stays open")
        }
        // The live client is still the server's (libjack's cleanup would have closed it: its ports gone). (Its process
        // callback is another matter: libjack keeps one table of wait objects for the process, by client number, and
        // the two servers' clients share a number; the server that went took the live client's with it.)
        #expect(try other.lsp().contains("sg-live-\(getpid()):in_1"))
        // Once it has closed, a client of that server opens.
        live.close()
        let next = try session("sg-next", on: other)
        #expect(next.isAvailable)
        next.close()
    }

    /// A graph with only jack.output has nobody to take the session's changes (its server lost and back): the
    /// session keeps none of them, where it once kept every one for as long as the graph ran.
    @Test func aGraphWithOnlyOutputsKeepsNoChanges() throws {
        try server.start()
        let wav = try speech(repeats: 8)
        let registry = BuiltinNodes.registry()
        let client = "sg-outonly-\(getpid())"
        let spec = try GraphParser.parse(
            """
            node player = file.input { path: "\(wav)", realtime: true }
            node speak = jack.output { port: "play" }
            player -> speak
            """, file: "out.graph", environment: [:])
        let resources = GraphResources(providing: [JackClientOptions(name: client)])
        let plan = try GraphPlanner(registry: registry).plan(spec, resources: resources)
        let runner = try RunningGraph(plan: plan, registry: registry, resources: resources)
        runner.start()
        // Stopped before the server goes, when the test throws first (as in every test here).
        defer {
            runner.stop()
            try? runner.wait()
        }
        func waitForPort(_ present: Bool) throws {
            let deadline = Date().addingTimeInterval(120)
            while try server.lsp().contains("\(client):play_1") != present && Date() < deadline { usleep(20_000) }
        }
        try waitForPort(true)
        server.stop(keepingLock: true)
        try server.start()
        // The session sees the server gone and reconnects: two changes (lost, restored) nobody takes.
        try waitForPort(true)
        runner.stop()
        try runner.wait()
        let session = try #require(resources.optional(JackSession.self))
        #expect(session.retainedChanges == 0)
    }

    /// `jack_freewheel y|n` on the test's server.
    func freewheel(_ on: Bool) throws {
        let r = try Run.process("/usr/bin/jack_freewheel", [on ? "y" : "n"], environment: env, timeout: 60)
        try #require(r.status == 0, "jack_freewheel: \(r.stderr)")
    }

    /// While the server freewheels (an export from a DAW), periods come as fast as the clients take them: the
    /// process callback waits for a graph slower than the audio instead of dropping periods, and every frame
    /// arrives, in order. It keeps half the input buffer free meanwhile, so that a graph still slow when real time
    /// resumes has room to catch up in.
    @Test func freewheelingWaitsForTheGraphInsteadOfDroppingAudio() throws {
        try server.start()
        let (runner, slow) = try micGraph(
            into: SlowWhenTold.self, buffer: "2 s", client: "sg-freewheel-\(getpid())")
        runner.start()
        // Stopped before the server goes, when the test throws first (as in every test here).
        defer {
            runner.stop()
            try? runner.wait()
        }
        // Once audio flows, freewheel, and only then make the node slower than the audio (half its pace): in real
        // time that loses periods at once (fallingBehindBecomesGapEvents). A deadline only bounds a hang.
        let deadline = Date().addingTimeInterval(120)
        while slow.frames.load(ordering: .relaxed) < 4800 && Date() < deadline { usleep(10_000) }
        try freewheel(true)
        slow.isSlow.store(true, ordering: .relaxed)
        let from = slow.frames.load(ordering: .relaxed)
        // Three seconds of audio through the slow node.
        while slow.frames.load(ordering: .relaxed) < from + 3 * 48000 && Date() < deadline { usleep(10_000) }
        // Real time again, the node still slow for half a second of audio (about a second, in which a second of
        // audio comes): the half of the 2 s buffer kept free takes it, where a full one would lose periods at once.
        try freewheel(false)
        let resumed = slow.frames.load(ordering: .relaxed)
        while slow.frames.load(ordering: .relaxed) < resumed + 48000 / 2 && Date() < deadline { usleep(10_000) }
        slow.isSlow.store(false, ordering: .relaxed)
        // Then read on past what the buffer held and what came meanwhile, where a gap would be reported.
        while slow.frames.load(ordering: .relaxed) < resumed + 4 * 48000 && Date() < deadline { usleep(10_000) }
        runner.stop()
        try runner.wait()
        #expect(slow.frames.load(ordering: .relaxed) >= from + 3 * 48000)
        let overruns = try #require(runner.node(named: "out") as? EventCollector).events.filter {
            if case .gap(_, _, let reason) = $0 { return reason.hasPrefix("overrun") }
            return false
        }
        #expect(overruns.isEmpty, "\(overruns.count) overruns, the first \(String(describing: overruns.first))")
        // Every block starts where the one before it ended.
        var breaks: [(expected: Int64, start: Int64)] = []
        var expected = slow.blocks.first?.0 ?? 0
        for (start, count) in slow.blocks {
            if start != expected { breaks.append((expected, start)) }
            expected = start + Int64(count)
        }
        #expect(breaks.isEmpty, "\(breaks.count) blocks do not follow on, the first \(breaks.prefix(1))")
    }

    /// Speech exported through a freewheeling server (a player graph as the DAW) into graphs/live.graph: every
    /// period waits for both graphs, so the recognizer hears the whole sentence, with no audio lost on either side.
    @Test func speechPlayedWhileFreewheelingIsTranscribedWhole() throws {
        try server.start(period: Self.speechPeriod)
        let wav = try speech()
        let client = "sg-fwlive-\(getpid())"
        let playerName = "sg-fwplay-\(getpid())"
        let out = dir.path("fw.out")
        let p = try Process.launchSpeechgraph(
            ["run", "--name", client, "graphs/live.graph"],
            environment: env.merging(["SPEECHGRAPH_CAPTURE": "\(playerName):play_1"]) { $1 }, output: out)
        // The client is active once every node is prepared (a deadline only bounds a hang).
        let deadline = Date().addingTimeInterval(180)
        while p.isRunning && Date() < deadline && !((try? server.lsp()) ?? "").contains("\(client):in_1") {
            usleep(20_000)
        }
        try freewheel(true)
        // As fast as JACK takes it (file.input is not paced), the speech and a second of silence after it.
        try TestSpeech.sox([wav, dir.path("fw-in.wav"), "pad", "0", "1"])
        try """
        node player = file.input { path: "\(dir.path("fw-in.wav"))" }
        node speak = jack.output { port: "play", connect: "\(client):in_1" }
        player -> speak
        """.write(toFile: dir.path("fw-player.graph"), atomically: true, encoding: .utf8)
        let player = try Run.speechgraph(["run", "--name", playerName, dir.path("fw-player.graph")], environment: env)
        try freewheel(false)
        #expect(player.status == 0, "\(player.stderr)")
        let text = finishAfterTheSentence(p, output: out, deadline: deadline)
        #expect(p.terminationStatus == 0, "\(contents(out + ".err"))")
        #expect(
            wordErrorRate(reference: sentence, hypothesis: text.replacing(/\[[^\]]*\]/, with: "")) <= 0.25,
            "\(contents(out))")
        #expect(!contents(out).contains("overrun"), "\(contents(out))")
        #expect(!player.stderr.contains("not played"), "\(player.stderr)")
    }

    /// `jack.input { buffer: BUFFER } -> under` (a node of type `Node`; the input's events collected in `out`), as
    /// JACK client `client`, not started.
    func micGraph<Node: TestNode>(into type: Node.Type, buffer: String, client: String) throws -> (RunningGraph, Node) {
        var registry = BuiltinNodes.registry()
        try registry.register(EventCollector.type)
        try registry.register(Node.type)
        let spec = try GraphParser.parse(
            """
            node mic = jack.input { buffer: \(buffer) }
            node under = \(Node.type.descriptor.typeName)
            node out = collect
            mic -> under
            mic.events -> out
            """, file: "mic.graph", environment: [:])
        let resources = GraphResources(providing: [JackClientOptions(name: client)])
        let plan = try GraphPlanner(registry: registry).plan(spec, resources: resources)
        let runner = try RunningGraph(plan: plan, registry: registry, resources: resources)
        return (runner, try #require(runner.node(named: "under") as? Node))
    }

    /// `jack.input { buffer: BUFFER } -> node` (its events collected in `out`), run until `until` says so about the
    /// node (a deadline only bounds a hang), then stopped.
    func runMicInto<Node: TestNode>(_ type: Node.Type, buffer: String, until: (Node) -> Bool) throws
        -> (RunningGraph, Node)
    {
        let (runner, node) = try micGraph(into: type, buffer: buffer, client: "speechgraph-mic-\(getpid())")
        runner.start()
        let deadline = Date().addingTimeInterval(60)
        while !until(node) && Date() < deadline { usleep(10_000) }
        runner.stop()
        try runner.wait()
        return (runner, node)
    }

    /// A JACK client activates only once every other node is prepared: audio queued while a recognizer loads its
    /// models (here a node that takes 2 s to prepare) would overflow a small buffer before the graph ran.
    @Test func audioIsNotLostWhileOtherNodesPrepare() throws {
        try server.start()
        let (runner, loading) = try runMicInto(SlowToPrepare.self, buffer: "500 ms") {
            // Until a second of audio has arrived.
            $0.frames.load(ordering: .relaxed) >= 48000
        }
        #expect(loading.frames.load(ordering: .relaxed) >= 48000)
        // Overruns (audio the graph did not take); the dummy server's own xruns on a loaded machine are not ours.
        let gaps = (runner.node(named: "out") as! EventCollector).events.filter {
            if case .gap(_, _, let reason) = $0 { return reason.hasPrefix("overrun") }
            return false
        }
        #expect(gaps.isEmpty, "\(gaps.count) gaps, the first \(gaps.first.map { "\($0)" } ?? "")")
        #expect(loading.firstFrame == 0)
    }

    /// A stall of the graph (3 s; with 500 ms of buffer, more periods lost than the 256 gap records the callback
    /// could queue at this period) is one gap event, at most the stall less the buffer, and the audio after it
    /// is placed after it on the stream's clock. The buffer keeps a loaded machine's slow start from overrunning.
    @Test func aStallIsOneGapOfItsLength() throws {
        try server.start()
        let (runner, stall) = try runMicInto(StallOnce.self, buffer: "500 ms") {
            // Until the 500 ms buffered during the stall and a second after it have come: audio after the gap.
            $0.framesAfter.load(ordering: .relaxed) >= 72000
        }
        let gaps = (runner.node(named: "out") as! EventCollector).events.compactMap { e -> TimeRange? in
            if case .gap(_, let r, let reason) = e, reason.hasPrefix("overrun") { return r }
            return nil
        }
        #expect(gaps.count == 1, "\(gaps.count) gaps")
        // At most the stall less the buffer (2.5 s of the server's audio). The dummy server's clock is the
        // machine's sleeps, and a loaded machine slows it: a fresh clone's run under the other tiers counted 1.46 s
        // of its audio in the 3 s stall, where a quiet one counts 2.5 s. So at least half the buffer, not 2 s.
        #expect((0.25...2.6).contains(gaps.first?.duration ?? 0), "\(gaps)")
        // Audio and the gap tile the timeline.
        var expected: Int64 = 0
        for (start, count) in stall.blocks {
            if let g = gaps.first, Int64((g.start * 48000).rounded()) == expected, start != expected {
                expected += Int64((g.duration * 48000).rounded())
            }
            #expect(start == expected)
            expected = start + Int64(count)
        }
    }

    /// Any JACK client can write NaN into our port: a player in this process sends speech with NaN and
    /// infinite samples in it (from a source of its own: file.input would clean them first).
    @Test func notANumberFromAJackClientIsConcealedAndTheRunGoesOn() async throws {
        try server.start(period: Self.speechPeriod)
        let wav = try speech()
        let file = try AudioFile(path: wav)
        let speech = try file.readAll()
        // A second of silence first (a loaded machine's xruns while the clients start fall on it), then the
        // sentence with a lone NaN, a run of them and infinities a third of the way in, then silence.
        var audio = [Float](repeating: 0, count: file.sampleRate) + speech + [Float](repeating: 0, count: 8000)
        let k = file.sampleRate + speech.count / 3
        audio[k] = .nan
        for i in (k + 400)..<(k + 440) { audio[i] = .nan }
        audio[k + 900] = .infinity
        audio[k + 901] = -.infinity
        var registry = BuiltinNodes.registry()
        try registry.register(EventCollector.type)
        try registry.register(PoisonedSource.type(audio))
        let client = "speechgraph-nan-\(getpid())"
        let spec = try GraphParser.parse(
            """
            node player = test.poisoned { rate: \(file.sampleRate) Hz }
            node speak  = jack.output { port: "play", connect: "\(client):in_1" }
            node mic    = jack.input { buffer: 10 s }
            node vad    = vad
            node asr    = recognizer
            node out    = collect
            player     -> speak
            mic.out    -> vad.in
            vad.out    -> asr.in
            vad.events -> asr.control
            asr        -> out
            mic.events -> out
            """, file: "nan.graph", environment: [:])
        let resources = GraphResources(providing: [JackClientOptions(name: client)])
        let plan = try GraphPlanner(registry: registry).plan(spec, resources: resources)
        let runner = try RunningGraph(plan: plan, registry: registry, resources: resources)
        let results = runner.events(of: "asr")
        runner.start()
        // Stopped before the server goes, when the test throws first (as in every test here).
        defer {
            runner.stop()
            try? runner.wait()
        }
        // A deadline only bounds a hang: the run stops once a final result shows the sentence's last word.
        DispatchQueue.global().asyncAfter(deadline: .now() + 120) { runner.stop() }
        var finals: [String] = []
        for await event in results {
            guard case .result(let t) = event, t.isFinal else { continue }
            finals.append(t.text)
            if t.text.contains("evening") { break }
        }
        runner.stop()
        try await runner.wait()
        let text = finals.joined(separator: " ")
        #expect(wordErrorRate(reference: sentence, hypothesis: text) <= 0.25, "\(finals)")
        let events = try #require(runner.node(named: "out") as? EventCollector).events
        let warnings = events.filter { $0.kind == .warning }
        #expect(warnings.count == 1, "one warning event, the first time")
        #expect(warnings.first?.node == "mic")
        #expect(runner.warnings.count == 1)
        #expect(runner.warnings.first?.contains("were not a number (NaN or infinite)") == true, "\(runner.warnings)")
    }
}

/// A source that plays the samples it was made with, paced like live audio, without cleaning them.
final class PoisonedSource: SourceNode {
    static func type(_ samples: [Float]) -> NodeType {
        NodeType(
            NodeDescriptor(
                typeName: "test.poisoned", summary: "", category: .input,
                ports: [.audioOutput("out", format: .parameters(rate: "rate", channels: "channels"), doc: "")],
                parameters: [
                    ParameterDescriptor(
                        "rate", kind: .quantity(.frequency), default: .number(16000), range: 1000...384_000,
                        doc: ""),
                    .integer("channels", default: 1, range: 1...1, doc: ""),
                ]),
            maxOutputFrames: { _, _, _ in 1024 },
            make: { PoisonedSource(samples, rate: Int($0.config.number(of: "rate"))) })
    }

    let samples: [Float]
    let rate: Int
    var emitted = 0
    var started: Date?

    init(_ samples: [Float], rate: Int) {
        self.samples = samples
        self.rate = rate
    }

    var position: Double { Double(emitted) / Double(rate) }

    func pull(output: NodeOutput) throws -> Bool {
        guard emitted < samples.count else { return false }
        let n = min(1024, samples.count - emitted)
        try samples[emitted..<(emitted + n)].withUnsafeBufferPointer {
            try output.emit(
                AudioBlock(
                    samples: $0, format: AudioFormat(sampleRate: rate, channelCount: 1), startFrame: Int64(emitted)))
        }
        emitted += n
        let start = started ?? Date()
        started = start
        let due = start.addingTimeInterval(position).timeIntervalSinceNow
        if due > 0 { Thread.sleep(forTimeInterval: due) }
        return true
    }
}

/// A sink too slow for live audio: 40 ms per block.
final class SlowSink: TestNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.slow", summary: "", category: .sink,
            ports: [.audioInput("in", .any, doc: "")], parameters: []),
        make: { _ in SlowSink() })
    var blocks: [(Int64, Int)] = []
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks.append((block.startFrame, block.frameCount))
        usleep(40_000)
    }
}

/// A sink that counts its frames and, while told to, takes 40 ms per block (slower than the audio).
final class SlowWhenTold: TestNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.slowwhentold", summary: "", category: .sink,
            ports: [.audioInput("in", .any, doc: "")], parameters: []),
        make: { _ in SlowWhenTold() })
    let frames = Atomic<Int>(0)
    let isSlow = Atomic<Bool>(false)
    /// Graph thread only; read after the run.
    var blocks: [(Int64, Int)] = []
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        blocks.append((block.startFrame, block.frameCount))
        if isSlow.load(ordering: .relaxed) { usleep(40_000) }
        frames.add(block.frameCount, ordering: .relaxed)
    }
}

/// A test node type with its registration.
protocol TestNode: GraphNode {
    static var type: NodeType { get }
}

/// A node that takes 2 s to prepare, as a recognizer loading its models does, and counts the frames it gets.
final class SlowToPrepare: TestNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.slowprepare", summary: "", category: .sink,
            ports: [.audioInput("in", .any, doc: "")], parameters: []),
        make: { _ in SlowToPrepare() })
    let frames = Atomic<Int>(0)
    var firstFrame: Int64?
    func prepare() throws { usleep(2_000_000) }
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        if firstFrame == nil { firstFrame = block.startFrame }
        frames.add(block.frameCount, ordering: .relaxed)
    }
}

/// A node that stalls for 3 s on its first block, then counts the frames that follow.
final class StallOnce: TestNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.stallonce", summary: "", category: .sink,
            ports: [.audioInput("in", .any, doc: "")], parameters: []),
        make: { _ in StallOnce() })
    var blocks: [(Int64, Int)] = []
    let framesAfter = Atomic<Int>(0)
    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        if blocks.isEmpty { usleep(3_000_000) } else { framesAfter.add(block.frameCount, ordering: .relaxed) }
        blocks.append((block.startFrame, block.frameCount))
    }
}

extension Process {
    /// Starts speechgraph with stdout to a file (read while it runs) and stderr to the same file + ".err".
    static func launchSpeechgraph(_ arguments: [String], environment: [String: String], output: String) throws
        -> Process
    {
        let p = Process()
        p.executableURL = TestPaths.binary
        p.arguments = arguments
        p.currentDirectoryURL = TestPaths.packageRoot
        p.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        FileManager.default.createFile(atPath: output, contents: nil)
        FileManager.default.createFile(atPath: output + ".err", contents: nil)
        p.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: output))
        p.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: output + ".err"))
        p.standardInput = FileHandle.nullDevice
        try p.run()
        return p
    }
}

/// Port patterns as JACK matches them (POSIX extended regular expressions, as jack_get_ports compiles them).
@Suite(.tags(.fast)) struct JackPatternTests {
    func matches(_ glob: String, _ name: String) -> Bool {
        var re = regex_t()
        guard regcomp(&re, JackSession.regex(forGlob: glob), REG_EXTENDED | REG_NOSUB) == 0 else { return false }
        defer { regfree(&re) }
        return regexec(&re, name, 0, nil, 0) == 0
    }

    @Test("a pattern without a client names this graph's own port, whatever characters its client name holds")
    func ownClientNamesAreNotPatterns() {
        for client in ["speechgraph", "demo [1]", "de*mo", "what?", "a[b"] {
            let own = JackSession.globEscaped(client) + ":in_1"
            #expect(matches(own, "\(client):in_1"), "\(client)")
        }
        #expect(!matches(JackSession.globEscaped("demo [1]") + ":in_1", "demo 1:in_1"))
        #expect(!matches(JackSession.globEscaped("de*mo") + ":in_1", "demo:in_1"))
        #expect(matches("system:capture_*", "system:capture_2") && !matches("system:capture_[!2]", "system:capture_2"))
    }
}
