import Foundation
import Synchronization

/// What one running graph owns besides its nodes: shared objects found by their type (the JACK session
/// of its jack.* nodes, the recognizers' decoder pool), the settings its command line gave, the wake
/// signal its live sources post, and the wall-clock epoch of paced audio.
///
/// Every graph has its own; nothing here is shared between graphs unless a caller hands the same object
/// to several on purpose (`transcribe` hands one decoder pool to the graph of each file). Any thread: the
/// mutable parts are behind a `Mutex` or atomic.
public final class GraphResources: Sendable {
    /// Objects by type (Sendable: each object's own thread contract governs how it is used once handed out).
    private let objects: Mutex<[ObjectIdentifier: any AnyObject & Sendable]>
    /// The audio epoch's `bitPattern`, or `unsetEpoch`: set once, read by any thread without a lock.
    private let epoch = Atomic<UInt64>(GraphResources.unsetEpoch)
    /// A NaN's bit pattern: never a time.
    private static let unsetEpoch = UInt64.max
    /// Audio sources that run real-time processors, by node name (``RealtimeProcessorHost``).
    let realtimeHosts = Mutex<[String: any RealtimeProcessorHost]>([:])
    /// Settings from the command line (`--name` sets "jack.name").
    public let settings: [String: String]
    /// Posted by live sources (the JACK process callback, a pushed input) when audio arrives; the graph
    /// thread sleeps on it when no source has anything for it.
    public let wake = WakeSignal()

    /// - Parameter providing: objects the graph should use instead of making its own, found by their type.
    public init(settings: [String: String] = [:], providing: [any AnyObject & Sendable] = []) {
        self.settings = settings
        var byType: [ObjectIdentifier: any AnyObject & Sendable] = [:]
        for object in providing { byType[ObjectIdentifier(type(of: object))] = object }
        objects = Mutex(byType)
    }

    /// When the graph is paced like live audio: the wall-clock time (seconds since 1970) at which audio
    /// time 0 was due. Set once, by the runner or a self-pacing source.
    public var audioEpoch: Double? {
        let bits = epoch.load(ordering: .acquiring)
        return bits == Self.unsetEpoch ? nil : Double(bitPattern: bits)
    }

    public func setAudioEpochIfUnset(_ value: Double) {
        _ = epoch.compareExchange(
            expected: Self.unsetEpoch, desired: value.bitPattern, ordering: .acquiringAndReleasing)
    }

    /// The epoch from audio that has just been heard, `seconds` of it since audio time 0 (a live source's
    /// newest audio, a paced file's first block): audio time 0 was due that long ago. Once it is set, a load and
    /// nothing more (`seconds` is not worked out): live sources call it on each drain that has audio.
    public func setAudioEpochIfUnset(heard seconds: @autoclosure () -> Double) {
        guard epoch.load(ordering: .relaxed) == Self.unsetEpoch else { return }
        setAudioEpochIfUnset(Date().timeIntervalSince1970 - seconds())
    }

    /// The graph's object of type `T`, if one was made or provided.
    public func existing<T: AnyObject & Sendable>(_ type: T.Type) -> T? {
        objects.withLock { $0[ObjectIdentifier(type)] as? T }
    }

    /// The graph's object of type `T`, made by `create` the first time it is asked for.
    public func shared<T: AnyObject & Sendable>(_ type: T.Type, create: () throws -> T) rethrows -> T {
        try objects.withLock { objects in
            if let existing = objects[ObjectIdentifier(type)] as? T { return existing }
            let made = try create()
            objects[ObjectIdentifier(type)] = made
            return made
        }
    }
}
