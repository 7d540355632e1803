import Foundation
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphSphinx

/// sphinxbase's log, captured to say why a model load failed.
@Suite(.tags(.fast)) struct SphinxLogTests {
    /// The descriptors open on unlinked temporary files (tmpfile(3): /tmp/#INODE (deleted)), which only the log
    /// capture opens in this process.
    static func temporaryFiles() -> Int {
        let fds = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return fds.filter { fd in
            let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/\(fd)")) ?? ""
            return target.contains("/#") && target.hasSuffix("(deleted)")
        }.count
    }

    /// Every capture used to open a temporary file and never close it: a Wyoming server whose requests each
    /// brought phrases (an interpolated model, loaded with its log captured) lost a descriptor a request.
    @Test("capturing the log again and again opens one temporary file, not one a capture")
    func captureReusesOneFile() throws {
        let dir = TemporaryDirectory()
        let arpa = dir.path("lm.arpa")
        try """
        \\data\\
        ngram 1=3

        \\1-grams:
        -0.4771 <s> 0
        -0.4771 </s> 0
        -0.4771 hello 0

        \\end\\

        """.write(toFile: arpa, atomically: true, encoding: .utf8)
        try SphinxLanguageModels.writeBinary(arpa: arpa, to: dir.path("lm.bin"))
        let before = Self.temporaryFiles()
        for k in 0..<20 { try SphinxLanguageModels.writeBinary(arpa: arpa, to: dir.path("lm\(k).bin")) }
        let after = Self.temporaryFiles()
        // At most the one capture file of the process, if a test beside this one made the first capture meanwhile.
        #expect(after - before <= 1, "\(after - before) temporary files left open by 20 captures")
        // And a capture still says why: a file PocketSphinx cannot read.
        let bad = dir.path("bad.arpa")
        try "not a model\n".write(toFile: bad, atomically: true, encoding: .utf8)
        #expect(throws: (any Error).self) { try SphinxLanguageModels.writeBinary(arpa: bad, to: dir.path("bad.bin")) }
    }
}
