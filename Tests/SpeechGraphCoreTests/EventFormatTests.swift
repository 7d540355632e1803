import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

/// The event format (docs/events.md) lives in the core: every module writes events through `JSONLines`.
@Suite(.tags(.fast)) struct EventFormatTests {
    @Test("noSpeech and warning are typed events; a node type's event of those kinds becomes the typed one")
    func typedKinds() {
        let warning = GraphEvent(CustomEvent(kind: .warning, node: "p", time: 2.5, fields: ["reason": .string("odd")]))
        #expect(warning == .warning(node: "p", time: 2.5, reason: "odd"))
        #expect(GraphEvent(CustomEvent(kind: .noSpeech, node: "v", time: 8)) == .noSpeech(node: "v", time: 8))
        // A warning with no reason stays the node type's own event, as any other kind does.
        let odd = CustomEvent(kind: .warning, node: "p", time: 1, fields: ["why": .string("?")])
        #expect(GraphEvent(odd) == .custom(odd))
        let beep = CustomEvent(kind: "beep", node: "p", time: 1)
        #expect(GraphEvent(beep) == .custom(beep))
    }

    @Test("a typed warning and noSpeech are written as they were when they were custom events")
    func sameLines() {
        #expect(
            JSONLines.line(for: .warning(node: "mic", time: 1.25, reason: "samples that are not numbers"))
                == #"{"v":1,"type":"warning","node":"mic","time":1.250,"reason":"samples that are not numbers"}"#)
        #expect(
            JSONLines.line(for: .warning(node: "log", time: nil, reason: "cannot write"))
                == #"{"v":1,"type":"warning","node":"log","reason":"cannot write"}"#)
        #expect(
            JSONLines.line(for: .noSpeech(node: "v", time: 8)) == #"{"v":1,"type":"noSpeech","node":"v","time":8.000}"#)
        let custom = CustomEvent(kind: .warning, node: "mic", time: 1.25, fields: ["reason": .string("x")])
        #expect(
            JSONLines.line(for: .custom(custom)) == JSONLines.line(for: .warning(node: "mic", time: 1.25, reason: "x")))
    }
}
