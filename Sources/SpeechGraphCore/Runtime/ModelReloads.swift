import Synchronization

/// Requests to load a graph's models again: `speechgraph run` on SIGHUP (the files its graph names are read
/// again: a changed spec is built again), or `RunningGraph.reloadModels`, which may also give a recognizer
/// new parameters (`lm`, `weight`, `grammar`). Recognizers load the new models on the requesting thread while
/// the audio goes on (`request` returns when they are loaded), and switch to them between utterances: nothing
/// is lost, and the utterance in flight finishes with the models it began with. Thread-safe.
public final class ModelReloads: GraphResource {
    public static func make(for resources: GraphResources) -> ModelReloads? { ModelReloads() }

    /// What one node made of a request.
    public struct Outcome: Sendable {
        public var node: String
        /// Why the new models could not be loaded (the old ones go on); `nil`: loaded.
        public var failure: String?
        /// What loading them has to say besides (a spec built again: each word whose pronunciation was guessed),
        /// as the node's `notes` say it when the graph is made.
        public var notes: [String]
        /// A failure that also dropped new models an earlier request had loaded and that had not yet taken over:
        /// the models in use go on, not those.
        public var droppedEarlier: Bool

        public init(node: String, failure: String?, notes: [String] = [], droppedEarlier: Bool = false) {
            self.node = node
            self.failure = failure
            self.notes = notes
            self.droppedEarlier = droppedEarlier
        }
    }

    /// Loads a node's new models; returns what came of it.
    public typealias Observer = @Sendable ([String: [String: ParameterValue]]) -> Outcome
    private struct State {
        var parameters: [String: [String: ParameterValue]] = [:]
        var observers: [Observer] = []
    }
    private let state = Mutex(State())

    public init() {}

    /// Asks for a reload; `parameters` (by node name) replace those nodes' parameters from now on. Every
    /// observer is called, on this thread, with all the parameters given so far; returns when they return, with
    /// each reloading node's outcome.
    /// A node whose new models could not be loaded keeps its earlier parameters: the values it refused are not
    /// asked for again by the next request.
    @discardableResult
    public func request(parameters: [String: [String: ParameterValue]] = [:]) -> [Outcome] {
        let (observers, all, before) = state.withLock {
            s -> ([Observer], [String: [String: ParameterValue]], [String: [String: ParameterValue]]) in
            let before = s.parameters
            for (node, values) in parameters { s.parameters[node, default: [:]].merge(values) { $1 } }
            return (s.observers, s.parameters, before)
        }
        let outcomes = observers.map { $0(all) }
        let refused = outcomes.filter { $0.failure != nil && parameters[$0.node] != nil }.map(\.node)
        if !refused.isEmpty {
            state.withLock { s in
                for node in refused { s.parameters[node] = before[node] }
            }
        }
        return outcomes
    }

    /// Called on every request (a node that reloads starts loading from it).
    public func observe(_ observer: @escaping Observer) { state.withLock { $0.observers.append(observer) } }
}
