import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphCore

/// Typed resources: a node type lists what it shares with the graph's other nodes; the planner makes the graph's one
/// of each before the node is planned or made, unless the graph's maker provided it.
@Suite("GraphResources", .tags(.fast))
struct ResourceTests {
    /// How many `Counted` were made for the graph that was given it.
    final class Tally: GraphResource {
        let made = Atomic<Int>(0)
        static func make(for resources: GraphResources) -> Tally? { nil }
    }

    /// A resource that counts, in its graph's `Tally`, how many were made.
    final class Counted: GraphResource {
        let label: String
        init(label: String) { self.label = label }
        static func make(for resources: GraphResources) -> Counted? {
            resources.optional(Tally.self)?.made.add(1, ordering: .relaxed)
            return Counted(label: "made")
        }
        static func count(_ resources: GraphResources) -> Int {
            resources.optional(Tally.self)?.made.load(ordering: .relaxed) ?? -1
        }
    }

    /// Only a caller can give one.
    final class Given: GraphResource {
        static func make(for resources: GraphResources) -> Given? { nil }
    }

    /// Made from another resource (as a JACK session from its client's options).
    final class Dependent: GraphResource {
        let from: Counted
        init(from: Counted) { self.from = from }
        static func make(for resources: GraphResources) throws -> Dependent? {
            try resources.prepare(Counted.self).map(Dependent.init)
        }
    }

    /// What each `fake.sharer` found when it was made.
    final class Seen: Sendable {
        let lines = Mutex<[String]>([])
    }

    /// The fakes and one that requires `Counted` and `Given`, and says in `seen` what it found when it was made.
    static func registry(seen: Seen) throws -> NodeRegistry {
        var registry = Fake.registry()
        try registry.register(
            NodeType(
                NodeDescriptor(
                    typeName: "fake.sharer", summary: "", category: .sink,
                    ports: [.eventInput("in", accepts: .any, doc: "")], parameters: [],
                    requires: [Counted.key, Given.key]),
                make: { context in
                    let counted = context.resources.required(Counted.self)
                    let given = context.resources.optional(Given.self) != nil
                    seen.lines.withLock { $0.append("\(counted.label), given: \(given)") }
                    return EventCollector()
                }))
        return registry
    }

    @Test("prepare makes the graph's one once; a provided one is used instead; one only a caller can give stays nil")
    func prepareMakesOnce() throws {
        let resources = GraphResources(providing: [Tally()])
        let first = try #require(try resources.prepare(Counted.self))
        let second = try #require(try resources.prepare(Counted.self))
        #expect(first === second)
        #expect(Counted.count(resources) == 1)
        #expect(resources.required(Counted.self) === first)
        #expect(try resources.prepare(Given.self) == nil)
        #expect(resources.optional(Given.self) == nil)

        let mine = Counted(label: "provided")
        let given = Given()
        let provided = GraphResources(providing: [mine, given, Tally()])
        #expect(try provided.prepare(Counted.self) === mine)
        #expect(provided.optional(Given.self) === given)
        #expect(Counted.count(provided) == 0)
    }

    @Test("a resource made from another prepares that one first, and both are the graph's")
    func dependentResources() throws {
        let resources = GraphResources(providing: [Tally()])
        let dependent = try #require(try resources.prepare(Dependent.self))
        #expect(dependent.from === resources.required(Counted.self))
        #expect(Counted.count(resources) == 1)
    }

    @Test("the planner makes what a node requires before the node is made; the node finds it, and what was provided")
    func plannerMakesRequiredResources() throws {
        let text = """
            node mic = fake.source { path: "a.wav", duration: 0.1 s }
            node asr = fake.recognizer
            node out = fake.sharer
            mic -> asr -> out
            """
        // Planned to run: made while planning.
        let seen = Seen()
        let registry = try Self.registry(seen: seen)
        let resources = GraphResources(providing: [Tally()])
        let plan = try GraphPlanner(registry: registry).negotiate(
            validatePlan(text, registry: registry), resources: resources)
        #expect(Counted.count(resources) == 1)
        _ = try InlineGraph(plan: plan, registry: registry, resources: resources).run()
        #expect(Counted.count(resources) == 1, "made once, at planning")
        #expect(seen.lines.withLock { $0 } == ["made, given: false"])

        // Planned without resources (`check`'s plan), then run: made when the engine makes the node.
        let later = GraphResources(providing: [Tally()])
        let checked = try negotiatedPlan(text, registry: registry)
        #expect(Counted.count(later) == 0)
        _ = try InlineGraph(plan: checked, registry: registry, resources: later).run()
        #expect(Counted.count(later) == 1)

        // A graph whose maker provided both: nothing made.
        let given = GraphResources(providing: [Counted(label: "provided"), Given(), Tally()])
        _ = try InlineGraph(plan: checked, registry: registry, resources: given).run()
        #expect(Counted.count(given) == 0)
        #expect(seen.lines.withLock { $0 }.last == "provided, given: true")
    }

    @Test("a graph whose nodes require nothing makes nothing")
    func nothingRequiredNothingMade() throws {
        let resources = GraphResources(providing: [Tally()])
        let plan = try GraphPlanner(registry: Fake.registry()).negotiate(
            validatePlan(
                """
                node mic = fake.source { path: "a.wav", duration: 0.1 s }
                node asr = fake.recognizer
                node out = fake.sink
                mic -> asr -> out
                """, registry: Fake.registry()), resources: resources)
        _ = try InlineGraph(plan: plan, registry: Fake.registry(), resources: resources).run()
        #expect(Counted.count(resources) == 0)
        #expect(resources.optional(Counted.self) == nil)
    }
}
