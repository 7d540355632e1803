/// The JSON Lines form of every event: one object per line, keys in a fixed order. See docs/events.md.
public enum JSONLines {
    /// The format's version, the `v` of every line: 1 until a field changes meaning or goes away (new
    /// fields may appear without a new version).
    public static let version = 1

    /// `extra`: fields added at the end, as name and raw JSON value (`("latency", "0.120")`).
    public static func line(for event: GraphEvent, source: String? = nil, extra: [(String, String)] = []) -> String {
        var o = JSONObject()
        o.add("v", version)
        o.add("type", event.typeName)
        o.add("node", event.node)
        var eventSource = source
        switch event {
        case .result(let t):
            o.add("utterance", t.utterance)
            o.add("isFinal", t.isFinal)
            o.addRaw("range", range(t.range))
            o.add("text", t.text)
            if let confidence = t.confidence { o.addRaw("confidence", fixed(confidence, 4)) }
            if t.rejected { o.addRaw("rejected", "true") }
            if !t.words.isEmpty {
                o.addRaw(
                    "words",
                    "["
                        + t.words.map { w in
                            var wo = JSONObject()
                            wo.add("text", w.text)
                            wo.addTime("start", w.range.start)
                            wo.addTime("end", w.range.end)
                            wo.addRaw("confidence", fixed(w.confidence, 4))
                            if !w.alternatives.isEmpty {
                                wo.addRaw("alternatives", strings(w.alternatives))
                            }
                            return wo.text
                        }.joined(separator: ",") + "]")
            }
            if !t.alternatives.isEmpty {
                o.addRaw(
                    "alternatives",
                    "["
                        + t.alternatives.map { a in
                            var ao = JSONObject()
                            ao.add("text", a.text)
                            ao.addRaw("score", fixed(a.score, 3))
                            return ao.text
                        }.joined(separator: ",") + "]")
            }
            eventSource = t.source ?? source
        case .speechStarted(_, let time), .speechEnded(_, let time), .speechPaused(_, let time),
            .speechResumed(_, let time):
            o.addTime("time", time)
        case .gap(_, let r, let reason):
            o.addRaw("range", range(r))
            o.add("reason", reason)
        case .availability(_, let available, let reason):
            o.add("isAvailable", available)
            o.add("reason", reason)
        case .level(_, let time, let rms, let peak):
            o.addTime("time", time)
            o.addRaw("rms", "[" + rms.map { fixed(max($0, -200), 2) }.joined(separator: ",") + "]")
            o.addRaw("peak", "[" + peak.map { fixed(max($0, -200), 2) }.joined(separator: ",") + "]")
        case .noSpeech(_, let time):
            o.addTime("time", time)
        case .warning(_, let time, let reason):
            if let time { o.addTime("time", time) }
            o.add("reason", reason)
        case .custom(let e):
            // A kind a plugin added: its fields after the common ones, in name order (a field named like a
            // common key is left out: the common key wins).
            if let time = e.time { o.addTime("time", time) }
            for (key, value) in e.fields.sorted(by: { $0.key < $1.key })
            where !commonKeys.contains(key) {
                switch value {
                case .number(let v): o.addRaw(key, v.isFinite ? "\(v)" : "null")
                case .integer(let v): o.add(key, v)
                case .boolean(let v): o.add(key, v)
                case .string(let v): o.add(key, v)
                }
            }
        }
        if let eventSource { o.add("source", eventSource) }
        for (name, raw) in extra { o.addRaw(name, raw) }
        return o.text
    }

    /// The keys every event may have: a custom event's field of the same name is left out.
    private static let commonKeys: Set<String> = ["v", "type", "node", "time", "source"]

    /// The audio time an event is about the end of: a result's range end, a speech edge's time, the `end` field of
    /// an event a node added that has one (a plugin's `phraseHeard` is at its result's start, and ends with it).
    public static func audioEnd(of event: GraphEvent) -> Double? {
        switch event {
        case .result(let t): return t.range.end
        case .speechStarted(_, let time), .speechEnded(_, let time), .speechPaused(_, let time),
            .speechResumed(_, let time):
            return time
        case .gap(_, let r, _): return r.end
        case .level(_, let time, _, _): return time
        case .noSpeech(_, let time): return time
        case .warning(_, let time, _): return time
        case .availability: return nil
        case .custom(let e):
            switch e.fields["end"] {
            case .number(let end)?: return end
            case .integer(let end)?: return Double(end)
            default: return e.time
            }
        }
    }

    static func range(_ r: TimeRange) -> String {
        var o = JSONObject()
        o.addTime("start", r.start)
        o.addTime("end", r.end)
        return o.text
    }

    /// A JSON array of strings.
    static func strings(_ values: [String]) -> String { "[" + values.map(quote).joined(separator: ",") + "]" }

    /// A JSON string literal.
    public static func quote(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20:
                let hex = String(u.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }

    public static func fixed(_ v: Double, _ digits: Int) -> String {
        guard v.isFinite else { return "0" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let n = Int64((abs(v) * scale).rounded())
        let whole = n / Int64(scale)
        let frac = n % Int64(scale)
        var f = String(frac)
        f = String(repeating: "0", count: digits - f.count) + f
        return (v < 0 && n != 0 ? "-" : "") + "\(whole).\(f)"
    }
}

struct JSONObject {
    private var fields: [String] = []
    mutating func add(_ key: String, _ value: String) {
        fields.append("\(JSONLines.quote(key)):\(JSONLines.quote(value))")
    }
    mutating func add(_ key: String, _ value: Int) { fields.append("\(JSONLines.quote(key)):\(value)") }
    mutating func add(_ key: String, _ value: Bool) { fields.append("\(JSONLines.quote(key)):\(value)") }
    mutating func addTime(_ key: String, _ seconds: Double) { addRaw(key, JSONLines.fixed(seconds, 3)) }
    mutating func addRaw(_ key: String, _ json: String) { fields.append("\(JSONLines.quote(key)):\(json)") }
    var text: String { "{" + fields.joined(separator: ",") + "}" }
}
