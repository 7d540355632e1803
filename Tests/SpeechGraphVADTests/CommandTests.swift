import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Testing

/// `speechgraph vad`: output formats, exit codes, and the scores on the shared long-form corpus.
@Suite(.tags(.model)) struct CommandTests {
    @Test func printsRegionsAsTSV() throws {
        let (_, path) = try NodeTests.speechFile()
        let r = try Run.speechgraph(["vad", path])
        #expect(r.status == 0, Comment(rawValue: r.stderr))
        let lines = r.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count >= 2)
        var regions: [(Double, Double)] = []
        for l in lines {
            guard let m = l.wholeMatch(of: /(\d+\.\d{3})\t(\d+\.\d{3})/) else {
                Issue.record("not 'start<TAB>end' with 3 decimals: \(l)")
                continue
            }
            regions.append((Double(m.1)!, Double(m.2)!))
        }
        // The same regions as the graph gives.
        let graph = VADHarness.regions(try VADHarness.run(file: path).events)
        #expect(regions.count == graph.count)
        for (a, b) in zip(regions, graph) { #expect(abs(a.0 - b.start) < 0.0006 && abs(a.1 - b.end) < 0.0006) }
    }

    @Test func printsEventsAsJSONLines() throws {
        let (_, path) = try NodeTests.speechFile()
        let r = try Run.speechgraph(["vad", "--format", "jsonl", "--preset", "strict", path])
        #expect(r.status == 0, Comment(rawValue: r.stderr))
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count >= 4 && lines.count % 2 == 0)
        #expect(lines.first?.hasPrefix("{\"v\":1,\"type\":\"speechStarted\",\"node\":\"vad\",\"time\":") == true)
        #expect(lines.last?.hasPrefix("{\"v\":1,\"type\":\"speechEnded\",\"node\":\"vad\",\"time\":") == true)
        #expect(lines.allSatisfy { $0.contains("\"source\":") })
    }

    @Test func severalFilesGetAThirdColumn() throws {
        let (_, path) = try NodeTests.speechFile()
        let r = try Run.speechgraph(["vad", path, path])
        #expect(r.status == 0, Comment(rawValue: r.stderr))
        let lines = r.stdout.split(separator: "\n")
        #expect(lines.count >= 4 && lines.allSatisfy { $0.hasSuffix("\t" + path) })
    }

    @Test(arguments: [
        (["--set", "threshold=3"], "missing unit for 'threshold'"),
        (["--set", "hangover"], "--set expects param=value"),
        (["--set", "loudness=3dB"], "unknown parameter 'loudness'"),
        (["--preset", "loud"], "loud"),
    ])
    func usageErrorsExitWith2(arguments: [String], message: String) throws {
        let (_, path) = try NodeTests.speechFile()
        let r = try Run.speechgraph(["vad"] + arguments + [path])
        #expect(r.status == 2)
        #expect(r.stdout.isEmpty)
        #expect(r.stderr.contains(message), Comment(rawValue: r.stderr))
    }

    @Test func noFileIsAUsageError() throws {
        let r = try Run.speechgraph(["vad"])
        #expect(r.status == 2)
    }

    @Test func unreadableFileExitsWith1AndTheOthersStillRun() throws {
        let (_, path) = try NodeTests.speechFile()
        let r = try Run.speechgraph(["vad", "/nonexistent/audio.wav", path])
        #expect(r.status == 1)
        #expect(r.stderr.contains("speechgraph: error:") && r.stderr.contains("/nonexistent/audio.wav"))
        #expect(!r.stdout.isEmpty)
    }

    @Test func parametersChangeTheResult() throws {
        let (_, path) = try NodeTests.speechFile()
        let normal = try Run.speechgraph(["vad", path]).stdout
        let long = try Run.speechgraph(["vad", "--set", "min-speech=2s", path])
        #expect(long.status == 0)
        #expect(long.stdout.isEmpty, "no 2 s burst in two short sentences, yet: \(long.stdout)")
        #expect(!normal.isEmpty)
    }

    // MARK: The corpus

    /// F1 of the regions `speechgraph vad` finds in `wav`, scored by ../shared/tools/vad_score.py.
    static func f1(_ wav: String, shared: URL, in dir: TemporaryDirectory) throws -> Double {
        let r = try Run.speechgraph(["vad", wav])
        guard r.status == 0 else { throw TestSpeech.Failure(description: "speechgraph vad \(wav): \(r.stderr)") }
        let hyp = dir.path(URL(fileURLWithPath: wav).lastPathComponent + ".tsv")
        try r.stdout.write(toFile: hyp, atomically: true, encoding: .utf8)
        let score = try Run.process(
            "/usr/bin/env",
            [
                "python3", shared.appendingPathComponent("tools/vad_score.py").path,
                shared.appendingPathComponent("corpus/long/long.vad-labels.tsv").path, hyp,
            ])
        guard score.status == 0, let m = score.stdout.firstMatch(of: /F1 (\d+\.\d+)/), let f1 = Double(m.1) else {
            throw TestSpeech.Failure(description: "vad_score.py: \(score.stdout) \(score.stderr)")
        }
        return f1
    }

    @Test(
        .enabled(if: TestPaths.corpusTestsWanted, "SPEECHGRAPH_NO_CORPUS=1: corpus tests off"),
        arguments: ["long_clean", "long_white15db", "long_pink15db"])
    func corpusFileScores(name: String) throws {
        let shared = try TestPaths.requireShared()
        let dir = TemporaryDirectory()
        let f1 = try Self.f1(shared.appendingPathComponent("corpus/long/\(name).wav").path, shared: shared, in: dir)
        #expect(f1 >= 0.95, "\(name): frame F1 \(f1)")
    }

    @Test(.enabled(if: TestPaths.corpusTestsWanted, "SPEECHGRAPH_NO_CORPUS=1: corpus tests off"))
    func noisyCorpusScores() throws {
        let shared = try TestPaths.requireShared()
        let dir = TemporaryDirectory()
        let script = TestPaths.packageRoot.appendingPathComponent("scripts/vad-noise.sh").path
        let made = try Run.process(
            "/bin/bash", [script, dir.path("noisy"), "5", "0"],
            environment: ["SHARED": shared.path])
        try #require(made.status == 0, Comment(rawValue: made.stderr))
        let floors = ["long_white5db": 0.90, "long_pink5db": 0.90, "long_white0db": 0.85]
        for (name, floor) in floors.sorted(by: { $0.key < $1.key }) {
            let f1 = try Self.f1(dir.path("noisy/\(name).wav"), shared: shared, in: dir)
            #expect(f1 >= floor, "\(name): frame F1 \(f1), wanted \(floor)")
        }
    }
}
