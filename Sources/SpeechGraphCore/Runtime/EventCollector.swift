/// A sink that keeps every event it receives in memory, in order. `speechgraph transcribe` and the
/// tests use it; it is not meant for graph files (it is not in the built-in registry).
public final class EventCollector: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "collect",
        summary: "Keeps every event in memory (for programs and tests).",
        category: .sink,
        ports: [.eventInput("in", accepts: .any, doc: "Any events.")],
        parameters: [])

    public static let type = NodeType(descriptor, make: { _ in EventCollector() })

    public private(set) var events: [GraphEvent] = []
    public private(set) var isFinished = false

    public init() {}

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        events.append(event)
    }

    public func finish(output: NodeOutput) throws { isFinished = true }

    /// The final results, in order.
    public var finalResults: [Transcription] {
        events.compactMap { if case .result(let t) = $0, t.isFinal { return t } else { return nil } }
    }
}
