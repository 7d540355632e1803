import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM
import Synchronization

/// Keeps loaded decoders for reuse: loading a model takes far longer than decoding a short file. Each
/// running graph has one (its recognizers find it in the graph's resources); `speechgraph transcribe`
/// hands one pool to the graph of every file, so the model is loaded once for many files. A decoder
/// handed out again is reset first, so what one graph heard never changes what the next computes.
/// Thread-safe.
public final class SphinxDecoderPool: GraphResource {
    public static func make(for resources: GraphResources) -> SphinxDecoderPool? { SphinxDecoderPool() }

    /// Decoders are kept apart by use, so a whole-utterance decoder never inherits a live mean.
    private struct Key: Hashable {
        var model: SphinxModel
        var streaming: Bool
    }

    /// The idle decoders of each model and use, and those models and uses in the order they were last given
    /// decoders back (the latest at the end).
    private let idle = Mutex<(pool: [Key: [SphinxDecoder]], recent: [Key])>(([:], []))
    /// Idle decoders kept per model and use; one given back beyond that is freed.
    public let maxIdle: Int
    /// Idle decoders kept in all; beyond it, those of the model and use given back to longest ago are freed (a
    /// server that builds a model for each request's phrases would otherwise keep 90 MB for each, for ever). `fill`
    /// raises it to what it loads, so that what a server loads before it listens is kept.
    public var maxIdleInAll: Int { inAll.load(ordering: .relaxed) }
    private let inAll: Atomic<Int>

    /// - Parameters:
    ///   - maxIdle: idle decoders kept per model and use (a server bounds what a burst of clients left).
    ///   - maxIdleInAll: idle decoders kept in all.
    public init(maxIdle: Int = .max, maxIdleInAll: Int = .max) {
        self.maxIdle = maxIdle
        inAll = Atomic(maxIdleInAll)
    }

    /// An idle decoder for this model, reset to decode as a newly loaded one (`SphinxDecoder.reset`), or a newly
    /// loaded one.
    public func checkout(_ model: SphinxModel, streaming: Bool = true) throws -> SphinxDecoder {
        let key = Key(model: model, streaming: streaming)
        while let decoder = idle.withLock({ $0.pool[key]?.popLast() }) {
            // One whose files changed since it was loaded (a model built again, in a long-lived server) is dropped.
            guard decoder.isCurrent(for: model) else { continue }
            decoder.reset()
            return decoder
        }
        return try Self.load(key)
    }

    /// A newly loaded decoder for this model and use.
    private static func load(_ key: Key) throws -> SphinxDecoder {
        let decoder = try SphinxDecoder(model: key.model)
        decoder.isStreaming = key.streaming
        return decoder
    }

    /// Loads decoders until `count` (at most `maxIdle`) wait idle for each model and use the pool has held: a
    /// server does it once a first graph has run and before it listens, so that that many clients at once never
    /// wait for a model to load. Meant for a pool nobody else uses yet: it counts first, then loads.
    public func fill(upTo count: Int) throws {
        let have = idle.withLock { $0.pool.mapValues(\.count) }
        let wanted = have.count * min(count, maxIdle)
        if wanted > maxIdleInAll { inAll.store(wanted, ordering: .relaxed) }
        for (key, n) in have {
            for _ in n..<max(n, min(count, maxIdle)) { checkin(try Self.load(key)) }
        }
    }

    /// Decoders waiting in the pool, of every model and use.
    public var idleCount: Int { idle.withLock { $0.pool.values.reduce(0) { $0 + $1.count } } }

    /// Gives a decoder back once its node is done with it (between utterances).
    public func checkin(_ decoder: SphinxDecoder) {
        let key = Key(model: decoder.model, streaming: decoder.isStreaming)
        // Beyond `maxIdle` or `maxIdleInAll`, decoders are freed (on return from here, outside the lock).
        let surplus = idle.withLock { state -> [SphinxDecoder] in
            guard state.pool[key, default: []].count < maxIdle else { return [decoder] }
            state.pool[key, default: []].append(decoder)
            state.recent.removeAll { $0 == key }
            state.recent.append(key)
            var freed: [SphinxDecoder] = []
            var total = state.pool.values.reduce(0) { $0 + $1.count }
            while total > maxIdleInAll, let oldest = state.recent.first {
                if let d = state.pool[oldest]?.popLast() {
                    freed.append(d)
                    total -= 1
                }
                if state.pool[oldest]?.isEmpty ?? true {
                    state.pool[oldest] = nil
                    state.recent.removeFirst()
                }
            }
            return freed
        }
        _ = surplus
    }

}
