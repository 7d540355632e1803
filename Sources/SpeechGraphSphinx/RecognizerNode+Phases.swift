import Foundation
import SpeechGraphCore
import Synchronization

/// Whole-utterance decoding (utterance mode, the final pass): the held utterance through several decoders at once,
/// one a phase, on as many threads as the compute gate has slots.
extension RecognizerNode {
    /// Decodes `samples` whole with each decoder, the k-th from `skips[k]` samples on, on up to `threads`
    /// threads (this one alone when it is 1): thread t decodes phases t, t + threads, ...
    static func decodeAtOnce(
        _ decoders: [any RecognitionEngine], _ samples: UnsafeBufferPointer<Int16>, skips: [Int], newStream: Bool,
        threads: Int? = nil
    ) throws {
        let shared = SharedSamples(samples: samples)
        let engines = Engines(engines: decoders)
        @Sendable func decode(_ k: Int) throws {
            let d = engines.engines[k]
            try d.startUtterance(newStream: newStream)
            try d.process(UnsafeBufferPointer(rebasing: shared.samples[skips[k]...]), wholeUtterance: true)
            try d.endUtterance()
        }
        let count = decoders.count
        let width = min(max(threads ?? count, 1), count)
        guard width > 1 else {
            for k in 0..<count { try decode(k) }
            return
        }
        let outcomes = Mutex<[Int: any Error]>([:])
        DispatchQueue.concurrentPerform(iterations: width) { t in
            for k in stride(from: t, to: count, by: width) {
                do { try decode(k) } catch { outcomes.withLock { $0[k] = error } }
            }
        }
        if let first = outcomes.withLock({ $0.min { $0.key < $1.key }?.value }) { throw first }
    }

    /// The utterance's samples, read by every phase's thread at once.
    struct SharedSamples: @unchecked Sendable {
        // Unchecked: read only, and only while `decodeAtOnce` runs, inside the caller's withUnsafeBufferPointer
        // (concurrentPerform returns when every phase has finished); each decoder is used by one thread.
        let samples: UnsafeBufferPointer<Int16>
    }

    /// The engines of the phases, each used by one thread.
    struct Engines: @unchecked Sendable {
        // Unchecked: while `decodeAtOnce` runs, thread t alone uses engines t, t + threads, ...
        let engines: [any RecognitionEngine]
    }

    /// Decodes the held utterance whole with `d`.
    func decodeHeld(_ d: any RecognitionEngine, newStream: Bool) throws {
        try held.withUnsafeBufferPointer { try Self.decodeAtOnce([d], $0, skips: [0], newStream: newStream) }
    }
}
