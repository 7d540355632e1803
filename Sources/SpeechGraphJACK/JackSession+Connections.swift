import CJack
import Foundation
import SpeechGraphCore
import Synchronization

/// The `connect` patterns: applied when the client opens and to the ports that appear later.
extension JackSession {
    /// Connects our ports to the ports matching their `connect` patterns: every match when the client opens
    /// (`onlyNew` false), then, when ports appear, the matches that are new. A pattern that matches nothing when
    /// the client opens is said once (a typo would otherwise connect nothing in silence).
    func connectAll(onlyNew: Bool) {
        guard let c = client else { return }
        if !onlyNew { matched = [:] }
        // The ports registered since the last time, by name: new even when a port of the name was matched before.
        // Only the ids are taken under the lock (the notification thread takes it too); libjack is asked outside it.
        var ids: [jack_port_id_t] = []
        notifications.pointee.registered.withLock { swap(&$0, &ids) }
        let appeared = Set(ids.compactMap { jack_port_by_id(c, $0).map { String(cString: jack_port_name($0)) } })
        var key = 0
        for (spec, port) in zip(specs, ports) where !spec.connect.isEmpty {
            guard let port else { continue }
            let mine = String(cString: jack_port_name(port))
            for given in spec.connect {
                defer { key += 1 }
                // A pattern without a client ("in_1") names a port of this graph's own client, whatever JACK
                // named it ("speechgraph-01" when another speechgraph runs).
                let pattern = given.contains(":") ? given : "\(Self.globEscaped(clientName)):\(given)"
                let want = UInt(spec.isInput ? JackPortIsOutput.rawValue : JackPortIsInput.rawValue)
                var now = Set<String>()
                if let names = jack_get_ports(c, Self.regex(forGlob: pattern), JACK_DEFAULT_AUDIO_TYPE, want) {
                    var i = 0
                    while let name = names[i] {
                        now.insert(String(cString: name))
                        i += 1
                    }
                    jack_free(UnsafeMutableRawPointer(mutating: names))
                }
                now.remove(mine)
                for other in now.sorted() where !(matched[key]?.contains(other) ?? false) || appeared.contains(other) {
                    if spec.isInput { _ = jack_connect(c, other, mine) } else { _ = jack_connect(c, mine, other) }
                }
                if !onlyNew && now.isEmpty && !unmatchedReported.contains(pattern) {
                    unmatchedReported.insert(pattern)
                    report(.unmatched(pattern: pattern, port: mine), group: spec.group)
                }
                matched[key] = now
            }
        }
    }

    /// `text` as a glob that matches only itself: a client called "demo [1]" or "a*b" is not a pattern.
    static func globEscaped(_ text: String) -> String {
        text.map { "*?[".contains($0) ? "[\($0)]" : String($0) }.joined()
    }

    /// A shell glob (`*`, `?`, `[...]`) as the regular expression JACK matches port names with.
    static func regex(forGlob glob: String) -> String {
        var out = "^"
        var inClass = false
        var classStart = false
        for ch in glob {
            if inClass {
                if classStart && ch == "!" {
                    out += "^"  // [!a] is the shell's "not a"
                } else {
                    if ch == "]" && !classStart { inClass = false }
                    out += ch == "\\" ? "\\\\" : String(ch)
                }
                classStart = false
                continue
            }
            switch ch {
            case "*": out += ".*"
            case "?": out += "."
            case "[" where glob.contains("]"):
                inClass = true
                classStart = true
                out += "["
            default: out += NSRegularExpression.escapedPattern(for: String(ch))
            }
        }
        return out + "$"
    }
}
