import Foundation
import SpeechGraph
import SpeechGraphTestSupport
import Testing

/// Calibrated word confidences, scored by scripts/reliability.py (the calibration was fitted on synthesised
/// speech and AN4's training partition, never on the shared test sets). The corpus tests (CLITests.swift) call
/// these on their own decoding.
enum Reliability {
    /// `name value unit` lines of reliability.py, by name.
    static func figures(_ references: String, _ jsonl: String, name: String) throws -> [String: Double] {
        let r = try Run.process(
            "/usr/bin/python3",
            [
                TestPaths.packageRoot.appendingPathComponent("scripts/reliability.py").path, references, jsonl,
                "--name", name,
            ])
        guard r.status == 0 else { throw TestSpeech.Failure(description: "reliability.py: \(r.stderr)") }
        var figures: [String: Double] = [:]
        for line in r.stdout.split(separator: "\n") {
            let f = line.split(separator: " ")
            if f.count == 3, let v = Double(f[1]) { figures[String(f[0])] = v }
        }
        return figures
    }

    /// The shares right of the bins that hold words, lowest bin first.
    static func shares(_ figures: [String: Double], _ name: String) -> [Double] {
        ["0.0_0.2", "0.2_0.4", "0.4_0.6", "0.6_0.8", "0.8_1.0"].compactMap { bin in
            (figures["confidence_\(name)_bin_\(bin)_words"] ?? 0) > 0
                ? figures["confidence_\(name)_bin_\(bin)_right"] : nil
        }
    }

    /// Each file's transcript (its final results' texts, in order) from `transcribe --format jsonl` output.
    static func transcripts(_ jsonl: String) throws -> [(file: String, text: String)] {
        var order: [String] = []
        var texts: [String: [String]] = [:]
        for line in jsonl.split(separator: "\n") {
            let o = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard o["type"] as? String == "result", o["isFinal"] as? Bool == true, let source = o["source"] as? String
            else { continue }
            if texts[source] == nil {
                order.append(source)
                texts[source] = []
            }
            if let text = o["text"] as? String, !text.isEmpty { texts[source]!.append(text) }
        }
        return order.map { ($0, texts[$0]!.joined(separator: " ")) }
    }

    /// The real set's table: words at 0.8 or more right at least 92% of the time, every bin more than the one
    /// below, and an expected calibration error of at most 0.05 (0.174 for the raw posteriors).
    static func expectCalibrated(references: String, jsonl: String) throws {
        let figures = try figures(references, jsonl, name: "real")
        let high = try #require(figures["confidence_real_at_least_0.8_right"])
        #expect(high >= 92, "\(figures)")
        let s = shares(figures, "real")
        #expect(s.count >= 4 && zip(s, s.dropFirst()).allSatisfy { $0 < $1 }, "\(s)")
        #expect(try #require(figures["confidence_real_expected_calibration_error"]) <= 0.05, "\(figures)")
    }
}
