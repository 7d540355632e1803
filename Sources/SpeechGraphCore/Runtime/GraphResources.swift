import Foundation
import Synchronization

/// A kind of object the nodes of one running graph share: the JACK client of its jack.* nodes, the standard output
/// its text sinks take turns at, the recognizers' decoder pool. Each module declares its own; a node type lists
/// those it uses in its descriptor (`NodeDescriptor.requires`), and the planner makes the graph's one of each
/// before the node is made, unless the graph's caller provided one (`GraphResources(providing:)`).
public protocol GraphResource: AnyObject, Sendable {
    /// The graph's own, when its caller provided none. `nil` for one only a caller can give (the terminal's status
    /// line, a Wyoming connection's outlet): the nodes that use it go without, or say what they miss.
    static func make(for resources: GraphResources) throws -> Self?
}

extension GraphResource {
    /// The key a descriptor lists it by.
    public static var key: GraphResourceKey { GraphResourceKey(Self.self) }
}

/// A resource as a node type's descriptor requires it (`JackSession.key`).
public struct GraphResourceKey: Sendable, Hashable, CustomStringConvertible {
    let id: ObjectIdentifier
    /// The resource's type name.
    public let description: String
    let prepare: @Sendable (GraphResources) throws -> Void

    init<R: GraphResource>(_ type: R.Type) {
        id = ObjectIdentifier(type)
        description = String(describing: type)
        prepare = { _ = try $0.prepare(R.self) }
    }

    public static func == (a: Self, b: Self) -> Bool { a.id == b.id }
    public func hash(into hasher: inout Hasher) { hasher.combine(id) }
}

/// What one running graph owns besides its nodes: its resources (``GraphResource``: one of each kind its nodes
/// require, made by the planner or provided by its caller), the wake signal its live sources post, and the
/// wall-clock epoch of paced audio.
///
/// Every graph has its own; nothing here is shared between graphs unless a caller hands the same object
/// to several on purpose (`transcribe` hands one decoder pool to the graph of each file). Any thread: the
/// mutable parts are behind a `Mutex` or atomic.
public final class GraphResources: Sendable {
    /// The resources made or provided so far, one per kind (Sendable: each object's own thread contract governs how
    /// it is used once handed out).
    private let objects: Mutex<[ObjectIdentifier: any GraphResource]>
    /// The audio epoch's `bitPattern`, or `unsetEpoch`: set once, read by any thread without a lock.
    private let epoch = Atomic<UInt64>(GraphResources.unsetEpoch)
    /// A NaN's bit pattern: never a time.
    private static let unsetEpoch = UInt64.max
    /// Posted by live sources (the JACK process callback, a pushed input) when audio arrives; the graph
    /// thread sleeps on it when no source has anything for it.
    public let wake = WakeSignal()

    /// - Parameter providing: resources the graph should use instead of making its own (one of each kind).
    public init(providing: [any GraphResource] = []) {
        var byType: [ObjectIdentifier: any GraphResource] = [:]
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

    /// Makes the graph's `R` (`R.make`) unless it has one already, made or provided; returns it (`nil`: none, and
    /// only a caller can give one). The planner calls it for each resource a node's descriptor requires, before the
    /// node is planned or made.
    @discardableResult
    public func prepare<R: GraphResource>(_ type: R.Type) throws -> R? {
        if let existing = optional(type) { return existing }
        // Made outside the lock: making one may prepare another (a JACK session its client's options).
        guard let made = try R.make(for: self) else { return nil }
        return objects.withLock { objects in
            if let existing = objects[ObjectIdentifier(type)] as? R { return existing }
            objects[ObjectIdentifier(type)] = made
            return made
        }
    }

    /// Prepares each of `keys` (a node type's `requires`).
    public func prepare(_ keys: [GraphResourceKey]) throws {
        for key in keys { try key.prepare(self) }
    }

    /// The graph's `R`, which the node asking requires in its descriptor (so the planner made it, or the caller
    /// provided it). Asking for a kind no descriptor requires is a programming error.
    public func required<R: GraphResource>(_ type: R.Type) -> R {
        guard let object = optional(type) else {
            preconditionFailure(
                "\(type) was asked for, but it was neither provided nor made: the node type that uses it must list "
                    + "\(type).key in its descriptor's 'requires'")
        }
        return object
    }

    /// The graph's `R` if it has one: made, or provided by its caller (a resource only a caller can give).
    public func optional<R: GraphResource>(_ type: R.Type) -> R? {
        objects.withLock { $0[ObjectIdentifier(type)] as? R }
    }
}
