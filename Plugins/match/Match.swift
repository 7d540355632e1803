// match: a speechgraph plugin in Swift (docs/plugins.md). An event node that emits `phraseHeard` when a
// result contains one of its phrases, and can run a command each time.
import SpeechGraphPluginKit

#if canImport(Glibc)
    import Glibc
#endif

final class Match: EventNode {
    static let descriptor = NodeTypeDescriptor(
        typeName: "match",
        summary: "Emits phraseHeard when a result contains one of its phrases; can run a command (a Swift plugin).",
        doc: "Words are compared without case or punctuation, as whole words in order: the phrase 'lights on' is "
            + "heard in 'turn the lights on please'. Each phrase is reported at most once per utterance. Without "
            + "'phrases', every result is heard whole (its text is the phrase): behind a recognizer with a grammar, "
            + "every command the grammar accepts, with no list to keep twice. Results marked rejected (speech outside "
            + "the recognizer's grammar or domain model) are not looked at unless 'rejected' is on.",
        category: .analysis,
        ports: [
            .eventInput("in", accepts: ["result"], doc: "Results from a recognizer."),
            .eventOutput("events", emits: ["phraseHeard"], doc: "One phraseHeard event per phrase heard."),
        ],
        parameters: [
            .string(
                "phrases", default: nil,
                doc: "The phrases to listen for, separated by '|': \"lights on|lights off\". Not given: every final "
                    + "result's whole text."),
            .choice(
                "results", ["final", "volatile"], default: "final",
                doc: "final: look in final results only; volatile: also in volatile ones (sooner, may be wrong, and "
                    + "never marked rejected: speech outside the grammar can run a command)."),
            .boolean(
                "rejected", default: false,
                doc: "Also look in results marked rejected: speech outside the grammar or domain model, read as the "
                    + "nearest thing in it (off: a command is not run for what was not said)."),
            .string(
                "command", default: nil,
                doc: "A shell command run for each phrase heard, with SPEECHGRAPH_PHRASE and SPEECHGRAPH_TEXT in "
                    + "its environment. It runs beside the graph; its output goes to speechgraph's standard error."),
        ],
        eventKinds: [
            (
                "phraseHeard",
                "A phrase of a match node was heard: fields phrase, text, utterance, start, end (seconds)"
            )
        ])

    private let host: PluginHost
    /// `nil`: every result's whole text is the phrase.
    private let phrases: [(text: String, words: [String])]?
    private let volatileToo: Bool
    private let rejectedToo: Bool
    private let command: String?
    /// Phrases already reported in the current utterance.
    private var reported: Set<String> = []
    private var utterance = -1
    private var children: [pid_t] = []

    init(config: PluginConfig, host: PluginHost) throws {
        self.host = host
        if let given = config["phrases"]?.string {
            let list = given.split(separator: "|").map { String($0).trimmingCharacters() }.filter { !$0.isEmpty }
            guard !list.isEmpty else {
                throw PluginFailure(
                    "'phrases' names no phrase: write \"first phrase|second\" (or leave it out: every result)")
            }
            phrases = list.map { ($0, Self.words($0)) }
        } else {
            phrases = nil
        }
        volatileToo = config["results"]?.string == "volatile"
        if phrases == nil && volatileToo {
            // Every partial reading would be a phrase of its own ('lights', then 'lights on'), each running the
            // command.
            throw PluginFailure("'results: volatile' needs 'phrases': without them every partial reading is heard")
        }
        rejectedToo = config["rejected"] == .boolean(true)
        command = config["command"]?.string.flatMap { $0.isEmpty ? nil : $0 }
    }

    static func words(_ text: String) -> [String] {
        text.lowercased().split { !$0.isLetter && !$0.isNumber && $0 != "'" }.map(String.init)
    }

    func handle(_ event: PluginEvent, port: Int) throws {
        guard event.kind == "result", let text = event.text else { return }
        guard event.isFinal || volatileToo, !event.isRejected || rejectedToo else { return }
        if event.utterance != utterance {
            utterance = event.utterance
            reported = []
        }
        let heard = Self.words(text)
        // Without phrases, the result's whole text (when it has words).
        let candidates = phrases ?? (heard.isEmpty ? [] : [(text, heard)])
        for phrase in candidates where !reported.contains(phrase.text) && Self.contains(heard, phrase.words) {
            reported.insert(phrase.text)
            var fields: [String: PluginValue] = [
                "phrase": .string(phrase.text), "text": .string(text), "utterance": .integer(event.utterance),
            ]
            if let start = event.time { fields["start"] = .number(start) }
            if let end = event.endTime { fields["end"] = .number(end) }
            try host.emit("phraseHeard", time: event.time, fields: fields)
            if let command { run(command, phrase: phrase.text, text: text) }
        }
        reap(waiting: false)
    }

    static func contains(_ words: [String], _ phrase: [String]) -> Bool {
        guard !phrase.isEmpty, words.count >= phrase.count else { return false }
        for start in 0...(words.count - phrase.count) where Array(words[start..<start + phrase.count]) == phrase {
            return true
        }
        return false
    }

    /// Starts `/bin/sh -c command` without waiting for it.
    private func run(_ command: String, phrase: String, text: String) {
        var environment = ProcessEnvironment.current
        environment["SPEECHGRAPH_PHRASE"] = phrase
        environment["SPEECHGRAPH_TEXT"] = text
        let argv: [UnsafeMutablePointer<CChar>?] = [String](["/bin/sh", "-c", command]).map { strdup($0) } + [nil]
        let envp: [UnsafeMutablePointer<CChar>?] = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for p in argv { free(p) }
            for p in envp { free(p) }
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // Its output must not mix with results on standard output.
        posix_spawn_file_actions_adddup2(&actions, STDERR_FILENO, STDOUT_FILENO)
        var pid: pid_t = 0
        if posix_spawn(&pid, "/bin/sh", &actions, nil, argv, envp) == 0 {
            children.append(pid)
        } else {
            host.warn("the command could not be started: \(String(cString: strerror(errno)))")
        }
    }

    private func reap(waiting: Bool) {
        children.removeAll { pid in
            var status: Int32 = 0
            return waitpid(pid, &status, waiting ? 0 : WNOHANG) == pid
        }
    }

    func reset() {
        utterance = -1
        reported = []
        // The graph is ending: wait for the commands it started, so that none is left behind.
        reap(waiting: true)
    }
}

/// The process's environment, as a dictionary (no Foundation in a plugin).
enum ProcessEnvironment {
    static var current: [String: String] {
        var out: [String: String] = [:]
        var p = environ
        while let entry = p.pointee {
            let s = String(cString: entry)
            if let eq = s.firstIndex(of: "=") { out[String(s[..<eq])] = String(s[s.index(after: eq)...]) }
            p += 1
        }
        return out
    }
}

extension String {
    func trimmingCharacters() -> String {
        var s = Substring(self)
        while s.first?.isWhitespace == true { s.removeFirst() }
        while s.last?.isWhitespace == true { s.removeLast() }
        return String(s)
    }
}

let plugin = Plugin(
    name: "match", version: "1.1.0", description: "Listens for phrases in results: events and commands.",
    nodes: [Match.self])

@_cdecl("speechgraph_plugin_entry")
public func speechgraphPluginEntry() -> UnsafeRawPointer { plugin.entry }
