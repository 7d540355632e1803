import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// Plugins as a user meets them: built out of tree against the installed header, found on the search path,
/// validated in a child process and cached, refused with a message, checked by `plugin check`.
@Suite(.tags(.model)) struct PluginTests {
    let dir = TemporaryDirectory()
    static let fixture = TestPaths.packageRoot.appendingPathComponent("Tests/PluginFixtures/fixture.c").path
    static let built = TestPaths.binary.deletingLastPathComponent()

    /// Each test's own cache and plugin directory (unique paths; nothing shared between tests).
    var environment: [String: String] {
        ["XDG_CACHE_HOME": dir.path("cache"), "SPEECHGRAPH_PLUGIN_PATH": dir.path("plugins"), "HOME": dir.path("home")]
    }

    /// The header and pkg-config file as `make install` puts them, in a temporary prefix.
    func installedCFlags() throws -> [String] {
        let prefix = dir.path("prefix")
        let install = try Run.process(
            "/bin/bash",
            [TestPaths.packageRoot.appendingPathComponent("scripts/install.sh").path, "--dev-only", prefix])
        try #require(install.status == 0, "\(install.stderr)")
        let flags = try Run.process(
            "/usr/bin/pkg-config", ["--cflags", "speechgraph-plugin"],
            environment: ["PKG_CONFIG_PATH": prefix + "/lib/pkgconfig"])
        try #require(flags.status == 0, "\(flags.stderr)")
        let cflags = flags.stdout.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(cflags.contains("-I\(prefix)/include"))
        return cflags.filter { !$0.isEmpty }
    }

    /// Compiles `source` with `defines` into the plugin directory (or `into`) as `name`.
    @discardableResult
    func compile(_ source: String, _ name: String, defines: [String] = [], flags: [String] = [], into: String? = nil)
        throws -> String
    {
        let out = (into ?? dir.path("plugins")) + "/" + name
        try FileManager.default.createDirectory(
            atPath: (out as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let result = try Run.process(
            "/usr/bin/env",
            ["clang", "-shared", "-fPIC", "-O2"] + (try installedCFlags()) + flags + defines.map { "-D\($0)" } + [
                source, "-o", out, "-lm",
            ])
        try #require(result.status == 0, "\(result.stderr)")
        return out
    }

    /// A graph file `name`: `input` through a `fixture.pass` node called `p` (with `parameters`), recorded to `output`.
    func passGraph(_ name: String, from input: String, to output: String, parameters: String = "") throws -> String {
        let graph = dir.path(name)
        try """
        node tone = file.input { path: "\(input)" }
        node p = fixture.pass \(parameters)
        node rec = tap.record { path: "\(output)" }
        tone -> p -> rec
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        return graph
    }

    func speechgraph(_ arguments: [String], extra: [String: String] = [:]) throws -> ProcessResult {
        try Run.speechgraph(arguments, environment: environment.merging(extra) { $1 })
    }

    @Test("the gate, built out of tree with the installed header and pkg-config, runs in a graph over real speech")
    func outOfTreeGate() throws {
        let shared = try TestPaths.requireShared()
        let source = dir.path("src/gate.c")
        try FileManager.default.createDirectory(atPath: dir.path("src"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: TestPaths.packageRoot.appendingPathComponent("Plugins/gate/gate.c").path, toPath: source)
        let plugin = try compile(source, "gate.so")

        let listed = try speechgraph(["nodes"])
        #expect(listed.status == 0, "\(listed.stderr)")
        #expect(listed.stdout.contains("gate") && listed.stdout.contains("(plugin: \(plugin))"), "\(listed.stdout)")

        // Real speech: the first utterance of the corpus, with and without the gate.
        let manifest = try String(
            contentsOf: shared.appendingPathComponent("corpus/real/manifest.tsv"), encoding: .utf8)
        let row = try #require(manifest.split(separator: "\n").dropFirst().first).split(separator: "\t")
        let wav = shared.appendingPathComponent("corpus/real/\(row[0])").path
        let reference = String(row[1])
        func transcript(gate: Bool) throws -> String {
            let graph = dir.path("speech-\(gate).graph")
            try """
            node speech = file.input { path: "\(wav)" }
            \(gate ? "node g = gate { threshold: -50 dB }" : "")
            node vad = vad
            node asr = recognizer { mode: utterance }
            node screen = console { timestamps: false }
            \(gate ? "speech -> g\ng.out -> vad.in" : "speech.out -> vad.in")
            vad.out -> asr.in
            vad.events -> asr.control
            asr -> screen
            """.write(toFile: graph, atomically: true, encoding: .utf8)
            let run = try speechgraph(["run", graph])
            #expect(run.status == 0, "\(run.stderr)")
            return run.stdout.split(separator: "\n").joined(separator: " ")
        }
        let gated = try transcript(gate: true)
        let plain = try transcript(gate: false)
        let words = Double(reference.split(separator: " ").count)
        #expect(!gated.isEmpty)
        // The gate lets speech through: at most one word worse than the same graph without it.
        #expect(
            wordErrorRate(reference: reference, hypothesis: gated)
                <= wordErrorRate(reference: reference, hypothesis: plain) + 1 / words + 1e-9, "\(gated) | \(plain)")
    }

    /// The fixture, as `name` in the plugin directory, linked against libsgdep.so, which is in a folder of its own
    /// outside the library path (returned: LD_LIBRARY_PATH finds it there).
    func pluginNeedingALibrary(_ name: String) throws -> (plugin: String, libraryFolder: String) {
        let depDir = dir.path("dep")
        try FileManager.default.createDirectory(atPath: depDir, withIntermediateDirectories: true)
        try "int sg_dep_value(void) { return 1; }\n".write(
            toFile: dir.path("dep/dep.c"), atomically: true, encoding: .utf8)
        let lib = try Run.process(
            "/usr/bin/env", ["clang", "-shared", "-fPIC", dir.path("dep/dep.c"), "-o", depDir + "/libsgdep.so"])
        try #require(lib.status == 0, "\(lib.stderr)")
        let plugin = try compile(Self.fixture, name, flags: ["-L", depDir, "-Wl,--no-as-needed", "-lsgdep"])
        return (plugin, depDir)
    }

    @Test("a plugin whose library is missing is skipped, and loads once LD_LIBRARY_PATH finds it: not cached")
    func missingLibraryIsNotCached() throws {
        let (plugin, depDir) = try pluginNeedingALibrary("needsdep.so")
        let without = try speechgraph(["nodes"])
        #expect(
            without.stderr.contains("plugin \(plugin) skipped: it cannot be loaded: libsgdep.so"), "\(without.stderr)")
        #expect(!without.stdout.contains("fixture.pass"))
        let with = try speechgraph(["nodes"], extra: ["LD_LIBRARY_PATH": depDir])
        #expect(!with.stderr.contains("skipped"), "\(with.stderr)")
        #expect(with.stdout.contains("fixture.pass"), "\(with.stdout)")
    }

    @Test("a C++ plugin: the gate compiled as C++, its entry point without SG_EXTERN_C, passes plugin check")
    func cplusplusPlugin() throws {
        let gate = try String(
            contentsOf: TestPaths.packageRoot.appendingPathComponent("Plugins/gate/gate.c"), encoding: .utf8)
        let cpp = gate.replacingOccurrences(
            of: "SG_EXTERN_C SG_EXPORT const sg_plugin *speechgraph_plugin_entry",
            with: "const sg_plugin *speechgraph_plugin_entry")
        #expect(cpp != gate)
        try FileManager.default.createDirectory(atPath: dir.path("src"), withIntermediateDirectories: true)
        try cpp.write(toFile: dir.path("src/gate.cpp"), atomically: true, encoding: .utf8)
        let out = dir.path("cpp/gate.so")
        try FileManager.default.createDirectory(atPath: dir.path("cpp"), withIntermediateDirectories: true)
        let built = try Run.process(
            "/usr/bin/env",
            ["clang++", "-std=c++20", "-shared", "-fPIC", "-O2"] + (try installedCFlags()) + [
                dir.path("src/gate.cpp"), "-o", out,
            ])
        try #require(built.status == 0, "\(built.stderr)")
        // The header declares the entry point with C linkage: its name is not mangled.
        let check = try speechgraph(["plugin", "check", out])
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        #expect(check.stdout.contains("PASS"), "\(check.stdout)")
    }

    /// A file that is no shared library (a WAV given by mistake): one line saying so, not a note on real-time
    /// checks before the loader's "invalid ELF header".
    @Test func pluginCheckOfAFileThatIsNoLibrary() throws {
        let wav = dir.path("talk.wav")
        try TestSpeech.sox(["-n", "-r", "16000", wav, "trim", "0", "0.1"])
        let check = try speechgraph(["plugin", "check", wav])
        #expect(check.status == 1)
        #expect(check.stdout.contains("FAIL loading: it is not a shared library"), "\(check.stdout)")
        #expect(!check.stdout.contains("real-time rules"), "\(check.stdout)")
        // Found in a plugin folder: the same words (it said the loader's 'file too short', 'invalid ELF header').
        let folder = dir.path("notplugins")
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "not a library\n".write(toFile: folder + "/fake.so", atomically: true, encoding: .utf8)
        let nodes = try speechgraph(["nodes", "--plugin-path", folder])
        #expect(nodes.stderr.contains("fake.so skipped: it is not a shared library"), "\(nodes.stderr)")
    }

    @Test("the gate silences what stays below its threshold and passes what goes above it")
    func gateSilences() throws {
        let plugin = try compile(TestPaths.packageRoot.appendingPathComponent("Plugins/gate/gate.c").path, "gate.so")
        _ = plugin
        // 1 s of noise at -60 dBFS, then 1 s of a tone at -10 dBFS.
        let input = dir.path("in.wav")
        try TestSpeech.sox([
            "-n", "-r", "16000", "-c", "1", "-b", "16", dir.path("noise.wav"), "synth", "1", "whitenoise", "vol",
            "0.001",
        ])
        try TestSpeech.sox([
            "-n", "-r", "16000", "-c", "1", "-b", "16", dir.path("tone.wav"), "synth", "1", "sine", "440", "vol",
            "0.316",
        ])
        try TestSpeech.sox([dir.path("noise.wav"), dir.path("tone.wav"), input])
        let graph = dir.path("gate.graph")
        let output = dir.path("out.wav")
        try """
        node speech = file.input { path: "\(input)" }
        node g = gate { threshold: -30 dB, attack: 1 ms }
        node rec = tap.record { path: "\(output)" }
        speech -> g -> rec
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try speechgraph(["run", graph])
        #expect(run.status == 0, "\(run.stderr)")
        func peak(_ start: Double, _ length: Double) throws -> Double {
            let stat = try Run.process("/usr/bin/sox", [output, "-n", "trim", "\(start)", "\(length)", "stat"])
            let line = try #require(stat.stderr.split(separator: "\n").first { $0.hasPrefix("Maximum amplitude") })
            return try #require(Double(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)))
        }
        #expect(try peak(0.3, 0.6) < 1e-5)  // the noise: below -100 dBFS
        #expect(try peak(1.1, 0.8) > 0.3)  // the tone: through
    }

    @Test("the Swift example (match) hears its phrases in graphs/match.graph, and both examples pass plugin check")
    func matchExample() throws {
        let speech = dir.path("speech.wav")
        try TestSpeech.synthesize("good morning please call my mother at seven", to: speech)
        let log = dir.path("match.jsonl")
        let run = try Run.speechgraph(
            ["run", "--plugin-path", Self.built.path, "graphs/match.graph"],
            environment: ["DEMO_AUDIO": speech, "MATCH_LOG": log, "XDG_CACHE_HOME": dir.path("cache")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.contains("match: heard 'call my mother'"), "\(run.stderr)")
        let events = Run.lines(of: log)
        #expect(events.count == 1, "\(events)")
        #expect(events.first?.contains(#""type":"phraseHeard""#) == true)
        #expect(events.first?.contains(#""phrase":"call my mother""#) == true)
        for example in ["gate", "match"] {
            let check = try speechgraph(["plugin", "check", Self.built.path + "/libspeechgraph-\(example).so"])
            #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
            #expect(check.stdout.contains("PASS") && !check.stdout.contains("FAIL"), "\(check.stdout)")
        }
    }

    @Test("match acts on no result marked rejected (speech outside the grammar) unless 'rejected' is on")
    func matchIgnoresRejected() throws {
        var parts: [String] = []
        for (i, text) in ["lights on", "the weather today is cold and windy"].enumerated() {
            let part = dir.path("part\(i).wav")
            try TestSpeech.synthesize(text, to: part)
            parts.append(part)
        }
        let speech = dir.path("two.wav")
        try TestSpeech.sox(parts + [speech, "pad", "0.5", "1.5"])
        let grammar = dir.path("commands.jsgf")
        try """
        #JSGF V1.0;
        grammar commands;
        public <command> = lights on | lights off | next slide;
        """.write(toFile: grammar, atomically: true, encoding: .utf8)
        func heard(rejected: Bool, phrases: Bool = true) throws -> (phrases: [String], results: [String]) {
            let log = dir.path("heard-\(rejected)-\(phrases).jsonl")
            let graph = dir.path("heard-\(rejected)-\(phrases).graph")
            let list = phrases ? #"phrases: "lights on|lights off|next slide", "# : ""
            try """
            node speech = file.input { path: "\(speech)" }
            node vad = vad
            node asr = recognizer { mode: utterance, grammar: "\(grammar)" }
            node m = match { \(list)rejected: \(rejected) }
            node log = jsonl { path: "\(log)" }
            speech -> vad
            vad.out -> asr.in
            vad.events -> asr.control
            asr -> m
            asr -> log
            m -> log
            """.write(toFile: graph, atomically: true, encoding: .utf8)
            let run = try speechgraph(["run", "--plugin-path", Self.built.path, graph])
            #expect(run.status == 0, "\(run.stderr)")
            let lines: [String] = Run.lines(of: log).map { String($0) }
            let phrases = lines.filter { $0.contains(#""type":"phraseHeard""#) }
            let finals = lines.filter { $0.contains(#""type":"result""#) && $0.contains(#""isFinal":true"#) }
            return (phrases, finals)
        }
        let strict = try heard(rejected: false)
        // The sentence outside the grammar was read as a command, and marked rejected.
        try #require(strict.results.count == 2, "\(strict.results)")
        #expect(!strict.results[0].contains(#""rejected":true"#), "\(strict.results)")
        try #require(strict.results[1].contains(#""rejected":true"#), "\(strict.results)")
        #expect(strict.phrases.count == 1 && strict.phrases[0].contains(#""phrase":"lights on""#), "\(strict.phrases)")
        let all = try heard(rejected: true)
        #expect(all.phrases.count == 2, "\(all.phrases)")
        // Without phrases, each accepted command is heard whole: the grammar's list is not kept twice.
        let every = try heard(rejected: false, phrases: false)
        #expect(
            every.phrases.count == 1 && every.phrases[0].contains(#""phrase":"lights on""#), "\(every.phrases)")
        // ... from final results only: every partial reading would be a phrase of its own.
        let partial = dir.path("partial.graph")
        try """
        node speech = file.input { path: "\(speech)" }
        node asr = recognizer
        node m = match { results: volatile }
        speech -> asr -> m
        """.write(toFile: partial, atomically: true, encoding: .utf8)
        let refused = try speechgraph(["run", "--plugin-path", Self.built.path, partial])
        #expect(refused.status == 1)
        #expect(refused.stderr.contains("'results: volatile' needs 'phrases'"), "\(refused.stderr)")
    }

    /// A refused plugin: `plugin check` fails with `message`, `nodes` and `run` still work and name it once.
    func expectRefused(
        _ defines: [String], _ message: String, check checkMessage: String? = nil,
        sourceLocation: Testing.SourceLocation = #_sourceLocation
    ) throws {
        let plugin = try compile(Self.fixture, "bad.so", defines: defines)
        let check = try speechgraph(["plugin", "check", plugin])
        #expect(check.status == 1, "\(check.stdout)", sourceLocation: sourceLocation)
        #expect(
            (check.stdout + check.stderr).contains(checkMessage ?? message), "\(check.stdout)",
            sourceLocation: sourceLocation)
        let nodes = try speechgraph(["nodes"])
        #expect(nodes.status == 0, "\(nodes.stderr)", sourceLocation: sourceLocation)
        #expect(nodes.stdout.contains("recognizer"), sourceLocation: sourceLocation)
        let warnings = nodes.stderr.split(separator: "\n").filter { $0.contains("plugin \(plugin) skipped") }
        #expect(warnings.count == 1, "\(nodes.stderr)", sourceLocation: sourceLocation)
        #expect(warnings.first?.contains(message) == true, "\(nodes.stderr)", sourceLocation: sourceLocation)
        // A graph that names its type: the type is unknown, and the warning says why.
        let graph = try passGraph("uses.graph", from: dir.path("none.wav"), to: dir.path("x.wav"))
        let uses = try speechgraph(["check", graph])
        #expect(uses.status == 2, sourceLocation: sourceLocation)
        #expect(
            uses.stderr.contains("unknown node type 'fixture.pass'"), "\(uses.stderr)", sourceLocation: sourceLocation)
        #expect(uses.stderr.contains(message), sourceLocation: sourceLocation)
    }

    @Test("a plugin built for another major ABI, or a newer minor, is refused before any of its code runs")
    func abiMismatch() throws {
        try expectRefused(["ABI_MAJOR=2", "ABI_MINOR=0", "CRASH_IN_ENTRY"], "built for plugin ABI 2.0")
        try expectRefused(["ABI_MAJOR=1", "ABI_MINOR=99", "CRASH_IN_ENTRY"], "minor version is newer")
    }

    @Test("a missing entry point, and a descriptor that does not validate, are refused")
    func badEntryAndDescriptor() throws {
        try expectRefused(["NO_ENTRY"], "exports no entry point 'speechgraph_plugin_entry'")
        try expectRefused(["BAD_DEFAULT"], "parameter 'gain''s default 5.0 is outside its range (0.0 to 2.0)")
        try expectRefused(
            ["BAD_PARAMS"],
            "boolean parameter 'loud' has default 2.0: expected 0 or 1; choice parameter 'mode' offers 'a' twice; "
                + "two of its parameters are named 'gain'")
    }

    @Test(
        "a plugin that crashes while loading, in its entry point or in a node's constructor, or hangs, is skipped",
        .tags(.realtime))
    func crashesAndHangs() throws {
        try expectRefused(["CRASH_IN_CONSTRUCTOR"], "crashed while loading (Segmentation fault)")
        try expectRefused(["CRASH_IN_ENTRY"], "crashed while loading (Segmentation fault)")
        try expectRefused(
            ["CRASH_IN_CREATE"], "crashed while loading (Segmentation fault)",
            check: "fixture.pass: 8000 Hz, blocks of 1, 7, 64, 1024, 4096 frames, silence, full-scale noise, NaN and "
                + "infinities, denormals: it crashed (Segmentation fault)")
        try expectRefused(["HANG_IN_ENTRY"], "hung while loading")
        // A graph without plugin nodes still runs beside the crashing plugin, naming it once.
        try compile(Self.fixture, "bad.so", defines: ["CRASH_IN_ENTRY"])
        let speech = dir.path("s.wav")
        try TestSpeech.synthesize("good morning", to: speech)
        let graph = dir.path("plain.graph")
        try """
        node speech = file.input { path: "\(speech)" }
        node asr = recognizer { mode: utterance }
        node screen = console { timestamps: false }
        speech -> asr -> screen
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try speechgraph(["run", graph])
        #expect(run.status == 0 && run.stdout.contains("good morning"), "\(run.stderr)")
        #expect(run.stderr.split(separator: "\n").filter { $0.contains("bad.so skipped") }.count == 1, "\(run.stderr)")
    }

    @Test("a node type that clashes with a built-in one is refused")
    func clash() throws {
        let plugin = try compile(Self.fixture, "clash.so", defines: ["CLASH"])
        let check = try speechgraph(["plugin", "check", plugin])
        #expect(check.status == 1)
        #expect(check.stdout.contains("FAIL vad: the type name clashes with the built-in node type 'vad'"))
        let nodes = try speechgraph(["nodes", "vad"])
        #expect(nodes.status == 0)
        #expect(!nodes.stdout.contains("plugin:"), "the built-in vad stays")
        #expect(nodes.stderr.contains("node type 'vad' clashes with the built-in node type of that name"))
    }

    @Test("a plugin file, or a directory above it, that other users can write to is not loaded")
    func permissions() throws {
        let plugin = try compile(Self.fixture, "open.so", defines: ["LOAD_LOG"])
        let loads = dir.path("loads.log")
        chmod(plugin, 0o757)
        var nodes = try speechgraph(["nodes"], extra: ["FIXTURE_LOAD_LOG": loads])
        #expect(nodes.stderr.contains("the file can be written by any user"), "\(nodes.stderr)")
        let check = try speechgraph(["plugin", "check", plugin])
        #expect(check.status == 1 && check.stdout.contains("FAIL permissions: the file can be written by any user"))
        chmod(plugin, 0o755)
        chmod(dir.path("plugins"), 0o777)
        nodes = try speechgraph(["nodes"], extra: ["FIXTURE_LOAD_LOG": loads])
        #expect(
            nodes.stderr.contains("its directory \(dir.path("plugins")) can be written by any user"), "\(nodes.stderr)")
        #expect(!FileManager.default.fileExists(atPath: loads), "the plugin's code never ran")
        chmod(dir.path("plugins"), 0o755)
        nodes = try speechgraph(["nodes"], extra: ["FIXTURE_LOAD_LOG": loads])
        #expect(nodes.stdout.contains("fixture.pass"), "\(nodes.stderr)")
    }

    @Test("a plugin is validated once in a child process and cached until its file changes")
    func cache() throws {
        let plugin = try compile(Self.fixture, "counted.so", defines: ["LOAD_LOG"])
        let loads = dir.path("loads.log")
        let extra = ["FIXTURE_LOAD_LOG": loads]
        for _ in 0..<3 {
            let nodes = try speechgraph(["nodes"], extra: extra)
            #expect(nodes.status == 0 && nodes.stdout.contains("fixture.pass"), "\(nodes.stderr)")
        }
        var lines = Run.lines(of: loads)
        #expect(lines.count == 1, "loaded once, in the child: \(lines)")
        // A change of the file (its modification time) validates it again.
        let later = Date().addingTimeInterval(5)
        try FileManager.default.setAttributes([.modificationDate: later], ofItemAtPath: plugin)
        _ = try speechgraph(["nodes"], extra: extra)
        lines = Run.lines(of: loads)
        #expect(lines.count == 2, "\(lines)")
        // A graph that uses it loads it in the running process too, and runs it.
        let input = dir.path("tone.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", input, "synth", "0.5", "sine", "440", "vol", "0.5"])
        let graph = try passGraph("pass.graph", from: input, to: dir.path("x.wav"), parameters: "{ gain: 0.5 }")
        let run = try speechgraph(["run", graph], extra: extra)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(Run.lines(of: loads).count == 3)
        #expect(FileManager.default.fileExists(atPath: dir.path("x.wav")))
    }

    @Test(
        "RealtimeSanitizer: the gate built with -fsanitize=realtime passes; a node that calls malloc in process fails")
    func realtimeSanitizer() throws {
        let gate = try compile(
            TestPaths.packageRoot.appendingPathComponent("Plugins/gate/gate.c").path, "gate-rt.so",
            flags: ["-fsanitize=realtime"], into: dir.path("rt"))
        let good = try speechgraph(["plugin", "check", gate])
        #expect(good.status == 0, "\(good.stdout) \(good.stderr)")
        #expect(good.stdout.contains("real-time rules: checked by RealtimeSanitizer"), "\(good.stdout)")
        let bad = try compile(
            Self.fixture, "malloc-rt.so", defines: ["MALLOC_IN_PROCESS"], flags: ["-fsanitize=realtime"],
            into: dir.path("rt"))
        let caught = try speechgraph(["plugin", "check", bad])
        #expect(caught.status == 1)
        #expect(
            caught.stdout.contains("RealtimeSanitizer: Intercepted call to real-time unsafe function `malloc`"),
            "\(caught.stdout) \(caught.stderr)")
        // Without the sanitizer the same plugin passes: only RealtimeSanitizer sees the malloc.
        let plain = try compile(Self.fixture, "malloc.so", defines: ["MALLOC_IN_PROCESS"], into: dir.path("rt"))
        let unchecked = try speechgraph(["plugin", "check", plain])
        #expect(unchecked.status == 0 && unchecked.stdout.contains("real-time rules: not checked"))
        // Built with the sanitizer and put on the path, it is skipped with the reason (its runtime is only there
        // under `plugin check`), not with a linker's undefined symbol.
        try FileManager.default.createDirectory(atPath: dir.path("plugins"), withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: bad, toPath: dir.path("plugins/malloc-rt.so"))
        let listed = try speechgraph(["nodes"])
        #expect(
            listed.stderr.contains(
                "it was built with -fsanitize=realtime, which is for `speechgraph plugin check` only"),
            "\(listed.stderr)")
    }

    /// Checked (and cached) while a library it needs was there, used after it has gone: said as one error naming
    /// the plugin, not the argument parser's bare 'Error: it cannot be loaded'.
    @Test("a plugin whose library has gone since it was checked: one error naming the plugin and the library")
    func aLibraryGoneSinceTheCheck() throws {
        let (plugin, libs) = try pluginNeedingALibrary("needs.so")
        let listed = try speechgraph(["nodes"], extra: ["LD_LIBRARY_PATH": libs])
        #expect(listed.status == 0 && listed.stdout.contains("fixture.pass"), "\(listed.stderr)")
        let wav = dir.path("tone.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", "0.2", "sine", "440"])
        let graph = try passGraph("needs.graph", from: wav, to: dir.path("out.wav"))
        let ran = try speechgraph(["run", graph])
        #expect(ran.status == 1)
        #expect(
            ran.stderr.hasPrefix(
                "\(graph):2:1: error: node 'p' (fixture.pass): plugin \(plugin) cannot be used: it cannot be loaded: "
                    + "libsgdep.so"), "\(ran.stderr)")
        #expect(!ran.stderr.contains("Error:"), "\(ran.stderr)")
    }

    @Test("plugin check sees an event node emit what a graph refuses, or fail on an event, before a graph does")
    func eventNodeChecks() throws {
        let good = try compile(Self.fixture, "count.so", defines: ["EVENT_NODE"], into: dir.path("ev"))
        let passed = try speechgraph(["plugin", "check", good])
        #expect(passed.status == 0 && !passed.stdout.contains("FAIL"), "\(passed.stdout)")
        #expect(!passed.stdout.contains("note"), "\(passed.stdout)")
        // A kind nobody defines is no failure (another plugin may add it), but gets a note.
        let misspelt = try compile(
            Self.fixture, "misspelt.so", defines: ["EVENT_NODE", "MISSPELT_KIND"], into: dir.path("ev"))
        let noted = try speechgraph(["plugin", "check", misspelt])
        #expect(noted.status == 0, "\(noted.stdout)")
        #expect(
            noted.stdout.contains(
                "note fixture.count: 'in' accepts 'levle', which neither speechgraph nor this plugin defines"),
            "\(noted.stdout)")
        for (define, message) in [
            (
                "BAD_EMIT_KIND",
                "it emitted 'nope' on 'out', which declares only count (in a graph, the event is dropped and the run "
                    + "ends with a warning)"
            ),
            // What a graph would refuse in create, as it does in handle_event.
            ("EMIT_IN_CREATE", "in create: it emitted 'count' outside handle_event and reset (in a graph, the event"),
            ("BAD_EMIT_PORT", "it emitted 'count' on port 3, but has 1 event output"),
            ("FAIL_EVENT", "handle_event failed on result (in a graph, that stops it): final results are not for me"),
            // Every kind its input accepts is tried, not only results and speech events.
            ("FAIL_ON_LEVEL", "handle_event failed on level (in a graph, that stops it): levels are not for me"),
        ] {
            let bad = try compile(Self.fixture, "\(define).so", defines: ["EVENT_NODE", define], into: dir.path("ev"))
            let check = try speechgraph(["plugin", "check", bad])
            #expect(check.status == 1, "\(define): \(check.stdout)")
            #expect(check.stdout.contains("FAIL fixture.count: ") && check.stdout.contains(message), "\(check.stdout)")
        }
    }

    @Test(
        "plugin check: a process that sleeps 20 ms a call fails as too slow within seconds, not at the timeout",
        .tags(.realtime))
    func slowProcess() throws {
        let plugin = try compile(Self.fixture, "slow.so", defines: ["SLOW_PROCESS"], into: dir.path("slow"))
        let check = try speechgraph(["plugin", "check", plugin])
        #expect(check.status == 1, "\(check.stdout)")
        #expect(check.stdout.contains("FAIL fixture.pass: 8000 Hz"), "\(check.stdout)")
        #expect(check.stdout.contains("process is too slow: "), "\(check.stdout)")
        #expect(check.stdout.contains("FAIL fixture.pass: the other checks: not run: process is too slow"))
        #expect(!check.stdout.contains("did not finish within"), "\(check.stdout)")
    }

    @Test("a plugin node whose process never returns holds the graph: the second SIGTERM ends it and names the node")
    func hangIsNamed() throws {
        try compile(Self.fixture, "hang.so", defines: ["HANG_AT_22050"])
        let wav = dir.path("t22.wav")
        try TestSpeech.sox(["-n", "-r", "22050", "-c", "1", "-b", "16", wav, "synth", "2", "sine", "440"])
        let graph = try passGraph("hang.graph", from: wav, to: dir.path("out.wav"))
        let mark = dir.path("hang.log")
        let errPath = dir.path("hang.err")
        FileManager.default.createFile(atPath: errPath, contents: nil)
        let process = Process()
        process.executableURL = TestPaths.binary
        process.arguments = ["run", graph]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }.merging([
            "FIXTURE_LOAD_LOG": mark
        ]) { $1 }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: errPath))
        try process.run()
        defer { if process.isRunning { kill(process.processIdentifier, SIGKILL) } }
        func stderr() -> String { (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "" }
        // Once the node is inside its process, never to return.
        Run.wait(for: process, seconds: 120) { Run.lines(of: mark).contains("hanging") }
        #expect(Run.lines(of: mark).contains("hanging"), "\(stderr())")
        kill(process.processIdentifier, SIGTERM)
        Run.wait(for: process, seconds: 60) { stderr().contains("speechgraph: stopping (") }
        kill(process.processIdentifier, SIGTERM)
        process.waitUntilExit()
        #expect(process.terminationStatus == 128 + SIGTERM, "\(stderr())")
        #expect(stderr().contains("speechgraph: stopping now (node 'p' had not returned)"), "\(stderr())")
    }

    @Test("a plugin node that crashes in process is named in one line before Swift's backtrace, and ends the run")
    func crashIsNamed() throws {
        let plugin = try compile(Self.fixture, "crash.so", defines: ["CRASH_AT_22050"])
        let wav = dir.path("t22.wav")
        try TestSpeech.sox(["-n", "-r", "22050", "-c", "1", "-b", "16", wav, "synth", "2", "sine", "440"])
        let graph = try passGraph("crash.graph", from: wav, to: dir.path("out.wav"))
        // Swift's backtracer as a user has it (on): the line comes first, then the backtrace, which names the
        // plugin's function; the process ends with the signal.
        let run = try speechgraph(["run", graph])
        #expect(run.signaled && run.status == SIGSEGV, "\(run.status) \(run.stderr)")
        let line =
            "speechgraph: error: node 'p' (fixture.pass, plugin \(plugin)) crashed in its process function "
            + "(Segmentation fault)"
        let lines = run.stderr.split(separator: "\n").map(String.init)
        #expect(lines.first == line, "\(run.stderr)")
        // Swift's backtrace, where the backtracer could read the process (it needs ptrace), names the plugin's code.
        if run.stderr.contains("*** Program crashed") {
            #expect(run.stderr.contains("pass_process"), "\(run.stderr)")
        }
        // With the backtracer off, that line is all.
        let quiet = try speechgraph(["run", graph], extra: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(quiet.signaled && quiet.status == SIGSEGV, "\(quiet.stderr)")
        #expect(quiet.stderr.split(separator: "\n").map(String.init) == [line], "\(quiet.stderr)")
    }

    @Test("a plugin event node that aborts in handle_event is named too")
    func abortIsNamed() throws {
        let plugin = try compile(Self.fixture, "late.so", defines: ["EVENT_NODE", "CRASH_LATE"])
        let wav = dir.path("tone.wav")
        try TestSpeech.sox(["-n", "-r", "16000", "-c", "1", "-b", "16", wav, "synth", "12", "sine", "440"])
        let graph = dir.path("late.graph")
        try """
        node tone = file.input { path: "\(wav)" }
        node levels = tap.level
        node c = fixture.count
        tone -> levels
        levels.events -> c
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let run = try speechgraph(["run", graph], extra: ["SWIFT_BACKTRACE": "enable=no"])
        #expect(run.signaled && run.status == SIGABRT, "\(run.status) \(run.stderr)")
        #expect(
            run.stderr.split(separator: "\n").map(String.init) == [
                "speechgraph: error: node 'c' (fixture.count, plugin \(plugin)) crashed in its handle_event function "
                    + "(Aborted)"
            ], "\(run.stderr)")
    }

    @Test("in a graph, an event a plugin node emits that the host refuses is dropped and said, exit 1")
    func refusedEmitIsSaid() throws {
        try compile(Self.fixture, "count.so", defines: ["EVENT_NODE", "BAD_EMIT_KIND", "IGNORE_REFUSAL"])
        let speech = dir.path("c.wav")
        try TestSpeech.synthesize("good morning", to: speech)
        let graph = dir.path("count.graph")
        try """
        node speech = file.input { path: "\(speech)" }
        node asr = recognizer { mode: utterance }
        node c = fixture.count
        node log = jsonl { path: "\(dir.path("count.jsonl"))" }
        speech -> asr -> c -> log
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let r = try speechgraph(["run", graph])
        #expect(r.status == 1, "\(r.stderr)")
        #expect(
            r.stderr.contains("it emitted 'nope' on 'out', which declares only count: the event was dropped"),
            "\(r.stderr)")
    }

    @Test("plugin check gives an audio node that takes any channel count two: one that writes mono only fails")
    func stereoChecked() throws {
        let good = try speechgraph(["plugin", "check", try compile(Self.fixture, "pass.so", into: dir.path("st"))])
        #expect(good.status == 0 && good.stdout.contains("PASS fixture.pass: 2 channels at 16000 Hz"), "\(good.stdout)")
        let bad = try compile(Self.fixture, "mono.so", defines: ["FRAMES_ONLY"], into: dir.path("st"))
        let check = try speechgraph(["plugin", "check", bad])
        #expect(check.status == 1, "\(check.stdout)")
        #expect(
            check.stdout.contains(
                "FAIL fixture.pass: 2 channels at 16000 Hz (its input takes any channel count): "
                    + "in blocks of 7: its output holds nan"), "\(check.stdout)")
    }

    @Test("a plugin's audio ports may have any names; what it writes that is not a number goes no further")
    func audioPortNamesAndNaN() throws {
        let speech = dir.path("s.wav")
        try TestSpeech.synthesize("good morning", to: speech)
        try compile(Self.fixture, "named.so", defines: ["PORT_NAMES"])
        let graph = dir.path("named.graph")
        try """
        node speech = file.input { path: "\(speech)" }
        node p = fixture.pass
        node asr = recognizer { mode: utterance }
        node screen = console { timestamps: false }
        speech -> p.audio
        p.processed -> asr -> screen
        """.write(toFile: graph, atomically: true, encoding: .utf8)
        let named = try speechgraph(["run", graph])
        #expect(named.status == 0 && named.stdout.contains("good morning"), "\(named.stderr)")

        let nanDir = dir.path("nan")
        try compile(Self.fixture, "nan.so", defines: ["NAN_OUTPUT"], into: nanDir)
        let plain = try passGraph("plain.graph", from: speech, to: dir.path("nan.wav"))
        let nan = try speechgraph(["run", "--plugin-path", nanDir, plain])
        #expect(nan.status == 1)
        #expect(nan.stderr.contains("warning: node 'p': its output: "), "\(nan.stderr)")
        #expect(nan.stderr.contains("not a number (NaN or infinite) and were faded out to silence"))
        let samples = try AudioFile(path: dir.path("nan.wav")).readAll()
        #expect(!samples.isEmpty)
        #expect(samples.allSatisfy { $0.isFinite })
    }

    @Test("plugin check of a file named without a directory, and a --plugin-path that is not a directory")
    func pathsAsTyped() throws {
        let plugin = try compile(Self.fixture, "here.so", into: dir.path("cwd"))
        let check = try Run.process(
            TestPaths.binary.path, ["plugin", "check", "here.so"], environment: environment,
            currentDirectory: URL(fileURLWithPath: dir.path("cwd")))
        #expect(check.status == 0, "\(check.stdout) \(check.stderr)")
        let listed = try speechgraph(["nodes", "--plugin-path", plugin, "--plugin-path", dir.path("none")])
        #expect(listed.stderr.contains("--plugin-path \(plugin): is a file, not a directory"), "\(listed.stderr)")
        #expect(listed.stderr.contains("--plugin-path \(dir.path("none")): no such directory"))
    }
}
