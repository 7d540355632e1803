import Foundation
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

/// Golden diagnostics: every `Golden/NAME.graph` is parsed and validated with the fake registry, and its
/// diagnostics (`NAME.graph:line:col: severity: message`, one per line) must equal `Golden/NAME.expected`.
/// A valid graph has an empty `.expected` (or only warnings).
///
/// To regenerate: `UPDATE_GOLDEN=1 swift test --filter GoldenDiagnosticsTests` writes the actual output
/// into the source folder instead of comparing (then rebuild so the bundle gets the new files, and read
/// every changed `.expected` before committing it).
@Suite("Golden diagnostics", .tags(.fast))
struct GoldenDiagnosticsTests {
    /// Where the bundled copies are (what the tests read).
    static let bundleFolder: URL? = Bundle.module.url(forResource: "Golden", withExtension: nil)

    /// Where the sources are (what UPDATE_GOLDEN=1 writes).
    static let sourceFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Golden")

    static let updating = ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1"

    static let graphNames: [String] = {
        guard let folder = bundleFolder,
            let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path)
        else { return [] }
        return names.filter { $0.hasSuffix(".graph") }.sorted()
    }()

    /// A golden file whose `.expected` was written by hand: the output the code SHOULD give, which it
    /// does not yet. The exact comparison runs inside `withKnownIssue`, so when the bug is fixed the test
    /// fails with "known issue was not recorded": then remove the entry. UPDATE_GOLDEN=1 never
    /// overwrites these files.
    struct KnownIssue {
        var reason: String
        /// The bug only adds or reorders lines: every expected line must still be in the actual output
        /// (checked outside `withKnownIssue`, so the right messages stay guarded meanwhile).
        var expectedLinesPresent: Bool
    }

    static let knownIssues: [String: KnownIssue] = [:]

    static func actualDiagnostics(of name: String) throws -> [String] {
        let url = try #require(bundleFolder).appendingPathComponent(name)
        let text = try String(contentsOf: url, encoding: .utf8)
        return diagnostics(of: text, file: name)
    }

    static func expectedURL(_ name: String, in folder: URL) -> URL {
        folder.appendingPathComponent(String(name.dropLast(".graph".count)) + ".expected")
    }

    @Test("the golden folder is bundled and holds every kind of error")
    func folderIsComplete() throws {
        let folder = try #require(Self.bundleFolder, "Golden/ is not in Bundle.module")
        #expect(Self.graphNames.count >= 25, "found only \(Self.graphNames.count) .graph files in \(folder.path)")
        for name in Self.graphNames where !Self.updating {
            #expect(
                FileManager.default.fileExists(atPath: Self.expectedURL(name, in: folder).path),
                "\(name) has no .expected file (run once with UPDATE_GOLDEN=1, then read it)")
        }
        for name in Self.knownIssues.keys {
            #expect(Self.graphNames.contains(name), "known issue listed for a missing file \(name)")
        }
    }

    @Test("diagnostics match the .expected file", arguments: graphNames)
    func golden(_ name: String) throws {
        let actual = try Self.actualDiagnostics(of: name)
        if Self.updating {
            if let issue = Self.knownIssues[name] {
                print("UPDATE_GOLDEN: not rewriting \(name), it is a known issue: \(issue.reason)")
                return
            }
            let text = actual.isEmpty ? "" : actual.joined(separator: "\n") + "\n"
            try text.write(to: Self.expectedURL(name, in: Self.sourceFolder), atomically: true, encoding: .utf8)
            print("UPDATE_GOLDEN: wrote \(Self.expectedURL(name, in: Self.sourceFolder).lastPathComponent)")
            return
        }
        let expectedURL = Self.expectedURL(name, in: try #require(Self.bundleFolder))
        let expectedText = try String(contentsOf: expectedURL, encoding: .utf8)
        let expected = expectedText.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            .reversed().drop { $0.isEmpty }.reversed().map { $0 }
        let compare = {
            #expect(
                actual == expected,
                """
                \(name): diagnostics differ from \(expectedURL.lastPathComponent)
                \(lineDiff(expected: expected, actual: actual))
                """
            )
        }
        if let issue = Self.knownIssues[name] {
            withKnownIssue(Comment(rawValue: issue.reason)) { compare() }
            if issue.expectedLinesPresent {
                for line in expected {
                    #expect(
                        actual.contains(line),
                        "\(name): missing \(line)\n\(lineDiff(expected: expected, actual: actual))")
                }
            }
        } else {
            compare()
        }
    }

    @Test("valid graphs produce no errors")
    func validGraphs() throws {
        let valid = Self.graphNames.filter { $0.hasPrefix("valid") }
        #expect(valid.count >= 2)
        for name in valid {
            let actual = try Self.actualDiagnostics(of: name)
            #expect(!actual.contains { $0.contains(": error: ") }, "\(name):\n\(actual.joined(separator: "\n"))")
        }
    }

    @Test("invalid graphs produce at least one error, each with a location")
    func invalidGraphs() throws {
        for name in Self.graphNames where !name.hasPrefix("valid") && !name.hasPrefix("warning") {
            let actual = try Self.actualDiagnostics(of: name)
            #expect(actual.contains { $0.contains(": error: ") }, "\(name) gave no error")
            for line in actual {
                #expect(line.hasPrefix(name + ":"), "\(name): diagnostic without its file and place: \(line)")
            }
        }
    }
}

/// A small line diff (longest common subsequence): "  same", "- expected only", "+ actual only".
func lineDiff(expected: [String], actual: [String]) -> String {
    let n = expected.count
    let m = actual.count
    var lcs = [[Int]](repeating: [Int](repeating: 0, count: m + 1), count: n + 1)
    for i in stride(from: n - 1, through: 0, by: -1) {
        for j in stride(from: m - 1, through: 0, by: -1) {
            lcs[i][j] = expected[i] == actual[j] ? lcs[i + 1][j + 1] + 1 : max(lcs[i + 1][j], lcs[i][j + 1])
        }
    }
    var out: [String] = ["--- expected", "+++ actual"]
    var i = 0
    var j = 0
    while i < n || j < m {
        if i < n, j < m, expected[i] == actual[j] {
            out.append("  " + expected[i])
            i += 1
            j += 1
        } else if j < m, i == n || lcs[i][j + 1] >= lcs[i + 1][j] {
            out.append("+ " + actual[j])
            j += 1
        } else {
            out.append("- " + expected[i])
            i += 1
        }
    }
    return out.joined(separator: "\n")
}
