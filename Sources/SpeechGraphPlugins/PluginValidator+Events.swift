import CSpeechGraphPlugin
import Dispatch
import SpeechGraphCore

/// `plugin check` for event nodes: the events they emit and take, hostile fields included.
extension PluginValidator {
    // MARK: Event nodes.

    mutating func checkEvent(_ node: NodeManifest, _ cls: UnsafePointer<sg_node_class>) {
        let t = node.typeName
        let host = TestHost(node)
        let inputs = node.ports.filter(\.isInput)
        let samples: [GraphEvent] =
            [
                .speechStarted(node: "vad", time: 0.5),
                .result(
                    Transcription(
                        utterance: 1, isFinal: false, range: TimeRange(start: 0.5, end: 1), text: "hello",
                        node: "asr")),
                .result(
                    Transcription(
                        utterance: 1, isFinal: true, range: TimeRange(start: 0.5, end: 1.8), text: "hello world",
                        node: "asr")),
                .speechEnded(node: "vad", time: 1.9),
                .gap(node: "mic", range: TimeRange(start: 2, end: 2.1), reason: "overrun"),
                .custom(
                    CustomEvent(kind: "unknownKind", node: "x", time: 3, fields: ["text": .string("\u{0}\u{1}é")])),
            ]
            // Every kind an input names, and for an input that takes any kind, every built-in one.
            + Set(inputs.flatMap { $0.eventKinds ?? EventKind.builtIn.map(\.rawValue) }).sorted().map {
                Self.sample(of: EventKind($0))
            }
        check("\(t): made with its defaults, fed every event kind its inputs accept, reset, made again") {
            for round in 0..<2 {
                // Each refusal blamed on the call that made it.
                host.refused.removeAll()
                let made = Self.create(cls, node, host, Self.values(node))
                guard let instance = made.instance else { return "create refused the defaults: \(made.error)" }
                var destroyed = false
                defer { if !destroyed { cls.pointee.destroy?(instance) } }
                if let refused = host.refused.first { return "in create: \(refused) \(Self.dropped)" }
                for (index, port) in inputs.enumerated() {
                    for event in samples where port.eventKinds.map({ $0.contains(event.kind.rawValue) }) ?? true {
                        var error = [CChar](repeating: 0, count: 512)
                        host.inEventCall = true
                        let status = Self.deliver(cls, instance, port: index, event, &error)
                        host.inEventCall = false
                        if let refused = host.refused.first {
                            return "on \(event.kind): \(refused) \(Self.dropped)"
                        }
                        if status != 0 {
                            // In a graph, a failed handle_event stops the graph: an event a node does not want
                            // is one to ignore (return 0), not a failure.
                            return "handle_event failed on \(event.kind) (in a graph, that stops it): "
                                + PluginNodeBase.sentence(error, or: "it gave no reason")
                        }
                    }
                }
                host.inEventCall = true
                cls.pointee.reset?(instance)
                host.inEventCall = false
                if let refused = host.refused.first { return "in reset: \(refused) \(Self.dropped)" }
                cls.pointee.destroy?(instance)
                destroyed = true
                if let refused = host.refused.first { return "in destroy: \(refused) \(Self.dropped)" }
                _ = round
            }
            return nil
        }
        check("\(t): two instances at once") {
            let a = Self.create(cls, node, host, Self.values(node))
            let b = Self.create(cls, node, host, Self.values(node))
            defer {
                if let x = a.instance { cls.pointee.destroy?(x) }
                if let x = b.instance { cls.pointee.destroy?(x) }
            }
            return a.instance != nil && b.instance != nil ? nil : "create refused a second instance"
        }
    }

    /// An event of `kind` as a graph would deliver it: every kind an input accepts is tried (the fixed samples
    /// above cover results, speech starts and ends, gaps, and a kind nobody declared).
    static func sample(of kind: EventKind) -> GraphEvent {
        switch kind {
        case .speechStarted: .speechStarted(node: "vad", time: 3.1)
        case .speechEnded: .speechEnded(node: "vad", time: 3.6)
        case .speechPaused: .speechPaused(node: "vad", time: 1.2)
        case .speechResumed: .speechResumed(node: "vad", time: 1.4)
        case .gap: .gap(node: "mic", range: TimeRange(start: 3.7, end: 3.8), reason: "overrun")
        case .availability: .availability(node: "mic", isAvailable: false, reason: "the audio server went away")
        case .level: .level(node: "tap", time: 1, rms: [-30.5, -200], peak: [-12.25, -200])
        case .result:
            .result(
                Transcription(
                    utterance: 2, isFinal: true, range: TimeRange(start: 4, end: 4.5), text: "", node: "asr"))
        default:
            // A warning, noSpeech, another node's or plugin's kind: its time and a field with odd characters.
            .custom(CustomEvent(kind: kind, node: "x", time: 2.5, fields: ["reason": .string("\u{0}\u{1}é")]))
        }
    }

    static func deliver(
        _ cls: UnsafePointer<sg_node_class>, _ instance: UnsafeMutableRawPointer, port: Int,
        _ event: GraphEvent, _ error: inout [CChar]
    ) -> Int32 {
        var values = CValues(PluginEventNode.fields(of: event).sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        var e = PluginEventNode.cEvent(event, json: JSONLines.line(for: event), &values)
        return cls.pointee.handle_event?(instance, UInt32(port), &e, &error, error.count) ?? 0
    }
}
