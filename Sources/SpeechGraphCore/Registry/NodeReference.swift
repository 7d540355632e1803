/// The reference text of node types, from their descriptors: what `speechgraph nodes` prints and what
/// docs/nodes.md holds (a test checks the two agree).
public enum NodeReference {
    /// One line per type, grouped by category.
    public static func list(_ registry: NodeRegistry) -> String {
        let types = registry.sortedTypes
        let width = types.map(\.descriptor.typeName.count).max() ?? 10
        var lines: [String] = []
        var category: NodeDescriptor.Category?
        for t in types {
            if t.descriptor.category != category {
                category = t.descriptor.category
                if !lines.isEmpty { lines.append("") }
                lines.append("\(t.descriptor.category.rawValue):")
            }
            lines.append(
                "  " + t.descriptor.typeName.padding(toLength: width, withPad: " ", startingAt: 0) + "  "
                    + t.descriptor.summary)
            if let origin = t.descriptor.origin {
                lines.append("  " + String(repeating: " ", count: width) + "  (plugin: \(origin))")
            }
        }
        lines.append("")
        lines.append("'speechgraph nodes TYPE' shows a type's ports and parameters.")
        return lines.joined(separator: "\n") + "\n"
    }

    /// Everything about one type, for a terminal.
    public static func detail(_ d: NodeDescriptor) -> String {
        var lines = ["\(d.typeName) (\(d.category.rawValue)): \(d.summary)"]
        if !d.doc.isEmpty { lines += ["", wrap(d.doc, indent: "")] }
        if let origin = d.origin { lines += ["", "plugin: \(origin)"] }
        lines += ["", "runs on: \(threadingText(d.threading))"]
        lines += ["", "ports:"]
        let width = d.ports.map(\.name.count).max() ?? 0
        for p in d.ports {
            let name = p.name.padding(toLength: width, withPad: " ", startingAt: 0)
            var line = "  \(name)  \(p.direction.rawValue), \(p.kind.rawValue)"
            if let what = portContract(p) { line += " (\(what))" }
            if p.direction == .input && !p.isRequired { line += ", optional" }
            lines.append(line)
            lines.append("      " + p.doc)
        }
        if !d.eventKinds.isEmpty {
            lines += ["", "event kinds it adds:"]
            for k in d.eventKinds { lines.append("  \(k.kind): \(k.doc)") }
        }
        lines += ["", "parameters:"]
        if d.parameters.isEmpty { lines.append("  (none)") }
        for p in d.parameters {
            var line = "  \(p.name): \(p.kind.summary) = \(p.defaultText)"
            if let r = p.rangeText { line += ", \(r)" }
            lines.append(line)
            lines.append(wrap(p.doc, indent: "      "))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// docs/nodes.md: every type, in Markdown.
    public static func markdown(_ registry: NodeRegistry) -> String {
        var out = """
            # Node reference

            Generated from the node descriptors by `speechgraph nodes --markdown`; a test fails when this file \
            and the descriptors disagree. `speechgraph nodes TYPE` prints the same on a terminal.

            Audio between nodes is always 32-bit float, interleaved. Quantities carry units in a graph file: \
            frequencies in `Hz` or `kHz`, durations in `s`, `ms` or `us`, levels in `dB`.


            """
        for t in registry.sortedTypes { out += markdown(t.descriptor) }
        return out
    }

    /// One type's section of docs/nodes.md (`speechgraph nodes --markdown TYPE`: a plugin's too).
    public static func markdown(_ d: NodeDescriptor) -> String {
        var out = "## `\(d.typeName)` (\(d.category.rawValue))\n\n\(d.summary)\n\n"
        if !d.doc.isEmpty { out += d.doc + "\n\n" }
        out += "Runs on \(threadingText(d.threading)).\n\n"
        out += "| port | direction | kind | accepts / gives | |\n|---|---|---|---|---|\n"
        for p in d.ports {
            let contract = portContract(p) ?? ""
            let note = p.direction == .input && !p.isRequired ? "optional. " : ""
            out +=
                "| `\(p.name)` | \(p.direction.rawValue) | \(p.kind.rawValue) | \(cell(contract)) | "
                + "\(cell(note + p.doc)) |\n"
        }
        out += "\n"
        if !d.eventKinds.isEmpty {
            out +=
                "Event kinds it adds: " + d.eventKinds.map { "`\($0.kind)` (\($0.doc))" }.joined(separator: ", ")
                + "\n\n"
        }
        if d.parameters.isEmpty {
            out += "No parameters.\n\n"
        } else {
            out += "| parameter | type | default | range | |\n|---|---|---|---|---|\n"
            for p in d.parameters {
                let type = cell(p.kind.summary.replacingOccurrences(of: "|", with: " | "))
                out +=
                    "| `\(p.name)` | \(type) | `\(cell(p.defaultText))` | \(cell(p.rangeText ?? "")) | "
                    + "\(cell(p.doc)) |\n"
            }
            out += "\n"
        }
        return out
    }

    /// Text in a table cell: a '|' in it would end the cell (GitHub's tables take `\|` for one, in code too).
    static func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }

    /// What a port's contract says: an audio input's requirement, an audio output's format rule, the event
    /// kinds an event port emits or accepts.
    static func portContract(_ p: PortDescriptor) -> String? {
        switch (p.kind, p.direction) {
        case (.audio, .input): return p.requirement.description
        case (.audio, .output): return p.format.map { "format: \($0.description)" } ?? "format: not stated"
        case (.events, .input): return "accepts \(p.eventKinds.description)"
        case (.events, .output): return "emits \(p.eventKinds.description)"
        }
    }

    static func threadingText(_ t: ThreadingDomain) -> String {
        switch t {
        case .any: return "the graph thread"
        case .worker:
            return
                "a worker thread of its own when the graph has several such nodes or live input, else the graph thread"
        case .realtime:
            return "the audio server's real-time thread for its per-period work (JACK ports; a real-time safe plugin "
                + "node fed by a jack.input alone), the graph thread for the rest, between them SPSC rings"
        }
    }

    static func wrap(_ text: String, indent: String, width: Int = 96) -> String {
        var lines: [String] = []
        var line = indent
        for word in text.split(separator: " ") {
            if line.count + word.count + 1 > width, line.count > indent.count {
                lines.append(line)
                line = indent
            }
            line += (line.count > indent.count ? " " : "") + word
        }
        if line.count > indent.count { lines.append(line) }
        return lines.joined(separator: "\n")
    }
}
