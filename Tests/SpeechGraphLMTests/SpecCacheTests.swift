import Foundation
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphLM

/// The cache of models built from specs on first use keeps the recent ones and removes the rest, and
/// half-built ones left by a process that died.
@Suite(.tags(.fast)) struct SpecCacheTests {
    /// A fresh directory of its own under the system's temporary directory.
    func makeRoot() throws -> String {
        let root = NSTemporaryDirectory() + "speechgraph-spec-cache-\(getpid())-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        return root
    }

    func entry(_ root: String, _ name: String, usedSecondsAgo age: TimeInterval, now: Date) throws {
        let path = "\(root)/\(name)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try "x".write(toFile: "\(path)/lm.bin", atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-age)], ofItemAtPath: path)
    }

    func names(_ root: String) -> Set<String> {
        Set((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
    }

    @Test("Beyond the most recently used models, those unused for the idle time are removed; nothing else")
    func prunesOldModelsBeyondTheKept() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let now = Date()
        // Used 1, 2, 3, 4 and 5 hours ago, and two just now.
        for (i, hours) in [1.0, 2, 3, 4, 5].enumerated() {
            try entry(root, "a\(i)", usedSecondsAgo: hours * 3600, now: now)
        }
        try entry(root, "b0", usedSecondsAgo: 10, now: now)
        try entry(root, "b1", usedSecondsAgo: 20, now: now)
        // A half-built model (HASH.PID.RANDOM) of a process that died, one being built now, and things
        // that are no model of ours.
        try entry(root, "c0.123.456", usedSecondsAgo: 7200, now: now)
        try entry(root, "c1.124.457", usedSecondsAgo: 5, now: now)
        try entry(root, "notes", usedSecondsAgo: 7200, now: now)
        try "x".write(toFile: "\(root)/d0", atomically: false, encoding: .utf8)
        try FileManager.default.setAttributes(
            [.modificationDate: now.addingTimeInterval(-7200)], ofItemAtPath: "\(root)/d0")

        let removed = SpecCache.prune(root, keep: 3, idle: 1800, now: now)
        // Kept: the three most recently used (b0, b1, a0) whatever their age; a1 to a4 are older than
        // 30 minutes and beyond them.
        #expect(Set(removed) == ["a1", "a2", "a3", "a4", "c0.123.456"])
        #expect(names(root) == ["b0", "b1", "a0", "c1.124.457", "notes", "d0"])
    }

    @Test("A model beyond the kept ones but used within the idle time stays (another process may be loading it)")
    func keepsRecentlyUsedBeyondTheCount() throws {
        let root = try makeRoot()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let now = Date()
        for i in 0..<5 { try entry(root, "e\(i)", usedSecondsAgo: Double(i) * 60, now: now) }
        #expect(SpecCache.prune(root, keep: 2, idle: 3600, now: now).isEmpty)
        #expect(names(root).count == 5)
        // Marked used: it counts as the most recent.
        try entry(root, "f0", usedSecondsAgo: 7200, now: now)
        try entry(root, "f1", usedSecondsAgo: 7300, now: now)
        SpecCache.markUsed("\(root)/f1")
        let removed = SpecCache.prune(root, keep: 2, idle: 3600)
        #expect(removed == ["f0"])
        #expect(names(root).contains("f1"))
    }
}
