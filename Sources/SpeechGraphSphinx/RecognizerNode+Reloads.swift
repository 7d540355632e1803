import Foundation
import SpeechGraphCore
import Synchronization

/// Model reloads (SIGHUP, `setLanguageModel`): new decoders loaded on a thread of their own while the audio goes
/// on, taken over between two utterances.
extension RecognizerNode {
    /// Emitted when new models take over after a reload request, or could not be loaded.
    public static let modelChanged: EventKind = "modelChanged"

    /// Loads the models for `c` into `slot`, on the thread that asked for the reload (never the graph's: the
    /// audio goes on meanwhile); why they could not be loaded, or `nil`; the notes of their loading (a spec
    /// built again: its guessed pronunciations); whether a failure dropped models an earlier request had loaded.
    @discardableResult
    static func load(_ c: NodeConfig, controlConnected: Bool, into slot: LoadSlot) -> (String?, [String], Bool) {
        let requested = Date().timeIntervalSince1970
        let ticket = slot.ticket()
        do {
            let models = try Models(c, controlConnected: controlConnected)
            // A decoder the recognizer holds is kept when its model is the same and its files have not changed
            // (a graph's general model beside a new domain model; everything, when nothing changed); the others
            // are loaded anew, not taken from the pool (its idle decoders can be older than the files).
            var keep = slot.held.withLock { $0 }
            let decoders = try models.decoders { model, streaming -> Pending in
                let current = Held(model: model, streaming: streaming, stamps: model.fileStamps())
                if let i = keep.firstIndex(of: current) {
                    keep.remove(at: i)
                    return .kept(current)
                }
                let d = try SphinxDecoder(model: model)
                d.isStreaming = streaming
                return .loaded(d)
            }
            let loaded = Loaded(
                models: models, decoders: decoders, config: c, loadSeconds: Date().timeIntervalSince1970 - requested)
            slot.deliver(.success(loaded), ticket: ticket)
            return (nil, models.notes, false)
        } catch {
            let dropped = slot.deliver(.failure("\(error)"), ticket: ticket)
            return ("\(error)", [], dropped)
        }
    }

    /// Between utterances: switches to models loaded after a reload request, once they are ready.
    func takeNewModels(output: NodeOutput) throws {
        guard
            let outcome = slot.value.withLock({ o -> LoadSlot.Outcome? in
                defer { o = nil }
                return o
            })
        else { return }
        switch outcome {
        case .failure(let reason):
            try output.emit(
                .custom(
                    CustomEvent(
                        kind: Self.modelChanged, node: name, time: utteranceEnd,
                        fields: ["ok": .boolean(false), "reason": .string(reason), "lm": .string(models.languageModel)])
                ))
        case .success(let new):
            // The final passes still running use the decoders that go now: their results go out first.
            waitForFinalPasses()
            try emitLaterFinals(output: output)
            let started = Date().timeIntervalSince1970
            var old = [decoder, wholeDecoder, referenceDecoder, rejectionDecoder].compactMap { $0 } + phaseDecoders
            var kept = 0
            var chosen = new.decoders.map { pending -> SphinxDecoder? in
                switch pending {
                case .loaded(let d): return d
                case .kept(let wanted):
                    // The one checked then: an earlier reload taken since may have replaced it.
                    guard let i = old.firstIndex(where: { Held($0) == wanted }) else { return nil }
                    kept += 1
                    return old.remove(at: i)
                }
            }
            guard let d = chosen.unwrapped() else {
                // Never load on this thread: the old models stay, and the same request loads again beside the
                // audio (what it would have kept is gone); its outcome comes at a later utterance boundary.
                let (config, control, slot) = (new.config, controlConnected, slot)
                // Those it loaded are freed on that thread too (the box holds their last reference).
                let unused = DecoderBox(chosen.all.compactMap { $0 })
                chosen = DecoderSet(stream: nil)
                Thread.detachNewThread {
                    unused.release()
                    RecognizerNode.load(config, controlConnected: control, into: slot)
                }
                return
            }
            (decoder, wholeDecoder, referenceDecoder, rejectionDecoder) = (d.stream, d.whole, d.reference, d.rejection)
            phaseDecoders = d.phases
            slot.note(d)
            // The others are not pooled (their files may be stale); they are freed on another thread, which holds
            // the last reference (emptying the box there).
            let box = DecoderBox(old)
            old.removeAll()
            Thread.detachNewThread { box.release() }
            models = new.models
            streamBegins = true
            try output.emit(
                .custom(
                    CustomEvent(
                        kind: Self.modelChanged, node: name, time: utteranceEnd,
                        fields: [
                            "ok": .boolean(true), "lm": .string(models.languageModel),
                            "loadSeconds": .number((new.loadSeconds * 1000).rounded() / 1000),
                            "keptDecoders": .integer(kept),
                            "loadedDecoders": .integer(d.all.count - kept),
                            "switchMilliseconds": .number(
                                ((Date().timeIntervalSince1970 - started) * 1e5).rounded() / 100),
                        ])))
        }
    }

    /// Decoders on their way to be freed on another thread.
    final class DecoderBox: @unchecked Sendable {
        // Unchecked: filled on the recognizer's thread, emptied once on the freeing thread, never both at once.
        var decoders: [SphinxDecoder]
        init(_ decoders: [SphinxDecoder]) { self.decoders = decoders }
        func release() { decoders.removeAll() }
    }

    /// Where the loading thread leaves its decoders.
    final class LoadSlot: Sendable {
        enum Outcome: @unchecked Sendable {
            case success(Loaded)
            case failure(String)
        }
        let value = Mutex<Outcome?>(nil)
        /// What the recognizer's decoders were loaded from: a reload keeps those still current.
        let held = Mutex<[Held]>([])
        /// Reload requests in the order they began, and the latest whose outcome was delivered.
        let order = Mutex<(issued: Int, delivered: Int)>((0, 0))

        /// A number for a reload request beginning now.
        func ticket() -> Int {
            order.withLock {
                $0.issued += 1
                return $0.issued
            }
        }

        /// Hands the node a request's outcome, unless a request that began later has already handed over its
        /// own (the latest request wins, not the one that finished last). Returns whether it replaced models an
        /// earlier request loaded that the node had not yet taken (they are dropped).
        @discardableResult
        func deliver(_ outcome: Outcome, ticket: Int) -> Bool {
            order.withLock { o in
                guard ticket > o.delivered else { return false }
                o.delivered = ticket
                return value.withLock { old in
                    defer { old = outcome }
                    if case .success? = old { return true }
                    return false
                }
            }
        }

        /// Notes the decoders the recognizer now holds (on its own thread, when it takes them).
        func note(_ d: Decoders) {
            let now = d.all.map(Held.init)
            held.withLock { $0 = now }
        }
    }
}
