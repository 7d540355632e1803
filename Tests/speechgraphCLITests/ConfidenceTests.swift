import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// Calibrated word confidences on the shared test sets (the calibration was fitted on synthesised speech,
/// never on these): scored by scripts/reliability.py.
@Suite struct ConfidenceTests {
    let dir = TemporaryDirectory()

    /// `name value unit` lines of reliability.py, by name.
    func reliability(_ references: String, _ jsonl: String, name: String) throws -> [String: Double] {
        let r = try Run.process(
            "/usr/bin/python3",
            [
                TestPaths.packageRoot.appendingPathComponent("scripts/reliability.py").path, references, jsonl,
                "--name", name,
            ])
        try #require(r.status == 0, "\(r.stderr)")
        var figures: [String: Double] = [:]
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 3, let v = Double(f[1]) { figures[String(f[0])] = v }
        }
        return figures
    }

    /// The shares right of the bins that hold words, lowest bin first.
    func shares(_ figures: [String: Double], _ name: String) -> [Double] {
        ["0.0_0.2", "0.2_0.4", "0.4_0.6", "0.6_0.8", "0.8_1.0"].compactMap { bin in
            (figures["confidence_\(name)_bin_\(bin)_words"] ?? 0) > 0
                ? figures["confidence_\(name)_bin_\(bin)_right"] : nil
        }
    }

    @Test("real speech: words at 0.8 or more are right at least 92% of the time, every bin more than the one below")
    func realSetIsCalibrated() throws {
        let shared = try TestPaths.requireShared()
        let corpus = shared.appendingPathComponent("corpus/real")
        let manifest = try String(contentsOf: corpus.appendingPathComponent("manifest.tsv"), encoding: .utf8)
        let files = manifest.split(separator: "\n").dropFirst().map {
            corpus.appendingPathComponent(String($0.split(separator: "\t")[0])).path
        }
        let run = try Run.speechgraph(["transcribe", "--format", "jsonl"] + files)
        #expect(run.status == 0, "\(run.stderr)")
        try run.stdout.write(toFile: dir.path("real.jsonl"), atomically: true, encoding: .utf8)
        let figures = try reliability(
            corpus.appendingPathComponent("manifest.tsv").path, dir.path("real.jsonl"), name: "real")
        let high = try #require(figures["confidence_real_at_least_0.8_right"])
        #expect(high >= 92, "\(figures)")
        let s = shares(figures, "real")
        #expect(s.count >= 4 && zip(s, s.dropFirst()).allSatisfy { $0 < $1 }, "\(s)")
        // Far better calibrated than the raw posteriors (expected calibration error 0.174 on this set).
        #expect(try #require(figures["confidence_real_expected_calibration_error"]) <= 0.08, "\(figures)")
    }

    @Test("white noise at 15 dB (long_white15db): the table stays monotonic")
    func noisyLongFileStaysMonotonic() throws {
        let shared = try TestPaths.requireShared()
        let wav = shared.appendingPathComponent("corpus/long/long_white15db.wav").path
        let reference = try String(
            contentsOf: shared.appendingPathComponent("corpus/long/long_white15db.txt"), encoding: .utf8)
        try "long_white15db\t\(reference.trimmingCharacters(in: .whitespacesAndNewlines))\n".write(
            toFile: dir.path("ref.tsv"), atomically: true, encoding: .utf8)
        let run = try Run.speechgraph(["transcribe", "--format", "jsonl", wav])
        #expect(run.status == 0, "\(run.stderr)")
        try run.stdout.write(toFile: dir.path("white.jsonl"), atomically: true, encoding: .utf8)
        let figures = try reliability(dir.path("ref.tsv"), dir.path("white.jsonl"), name: "white")
        let s = shares(figures, "white")
        #expect(s.count >= 4 && zip(s, s.dropFirst()).allSatisfy { $0 < $1 }, "\(s)")
    }
}
