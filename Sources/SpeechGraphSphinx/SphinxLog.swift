import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM
import Synchronization

/// PocketSphinx logs through sphinxbase's process-global log stream. It is switched off for good
/// (or sent to the file `SPEECHGRAPH_SPHINX_LOG` names); a failed model load is retried with the log
/// captured in a temporary file. That file is one for the process, emptied before each capture: it is never
/// closed, since another thread's decoder may still hold it as its log stream.
enum SphinxLog {
    static let loading = NSLock()

    /// The capture file (an unlinked temporary file), opened once; only used under `loading`.
    nonisolated(unsafe) private static let captureFile: UnsafeMutablePointer<FILE>? = tmpfile()

    static func silence() {
        if let path = ProcessInfo.processInfo.environment["SPEECHGRAPH_SPHINX_LOG"], err_set_logfile(path) == 0 {
            return
        }
        err_set_logfp(nil)
    }

    /// Runs `body` with the log captured; returns its error lines. Called under `loading`.
    static func capture(_ body: () -> Void) -> String {
        guard let file = captureFile else {
            body()
            return "no reason given"
        }
        rewind(file)
        _ = ftruncate(fileno(file), 0)
        err_set_logfp(file)
        body()
        // Detached before silence() sets a log file: sphinxbase closes the stream a new log file replaces.
        err_set_logfp(nil)
        silence()
        fflush(file)
        rewind(file)
        var lines: [String] = []
        var buffer = [CChar](repeating: 0, count: 4096)
        while fgets(&buffer, Int32(buffer.count), file) != nil {
            let line = String(cString: buffer).trimmingCharacters(in: .whitespacesAndNewlines)
            if line.hasPrefix("ERROR") || line.hasPrefix("FATAL") { lines.append(line) }
        }
        return lines.isEmpty ? "no reason given" : lines.suffix(3).joined(separator: "; ")
    }
}
