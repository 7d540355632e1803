/// A real-time safe audio processor: a C function and its instance (a plugin audio node that declared itself
/// real-time safe), that an audio source may run on the audio server's real-time thread (docs/plugins.md,
/// docs/realtime.md).
public struct RealtimeProcessor: @unchecked Sendable {
    // Unchecked: `instance` is only ever used by the thread that runs `function` (the real-time thread, once
    // handed over), then by `release`, after that thread can no longer call it.
    public typealias Function =
        @convention(c) (
            UnsafeMutableRawPointer?, UnsafePointer<Float>?, UnsafeMutablePointer<Float>?, UInt32
        ) -> Void

    /// Called with the instance, interleaved input, interleaved output of the same channel count, frames.
    /// Never allocates, locks, waits or does I/O.
    public var function: Function
    public var instance: UnsafeMutableRawPointer?
    public var channels: Int
    /// The largest block `function` was prepared for.
    public var maxFrames: Int
    /// Frees the instance; called once the real-time thread can no longer call `function`.
    public var release: @Sendable () -> Void

    public init(
        function: Function, instance: UnsafeMutableRawPointer?, channels: Int, maxFrames: Int,
        release: @escaping @Sendable () -> Void
    ) {
        self.function = function
        self.instance = instance
        self.channels = channels
        self.maxFrames = maxFrames
        self.release = release
    }
}

/// An audio source that can run a ``RealtimeProcessor`` on the audio server's real-time thread over its
/// output, before the audio reaches the graph (jack.input). It registers itself in its graph's resources
/// under its node's name, when it is made.
public protocol RealtimeProcessorHost: AnyObject, Sendable {
    /// Takes `processor` to run in the real-time thread; `false` when it cannot (it has started, it has one
    /// already, the channel counts differ). Called on the thread that makes the graph, before it starts.
    func host(_ processor: RealtimeProcessor) -> Bool
}

extension GraphResources {
    /// Registers `host` as the real-time host of node `node`'s audio output.
    public func registerRealtimeHost(_ host: any RealtimeProcessorHost, for node: String) {
        realtimeHosts.withLock { $0[node] = host }
    }

    /// The real-time host of node `node`'s audio output, if it has one.
    public func realtimeHost(for node: String) -> (any RealtimeProcessorHost)? {
        realtimeHosts.withLock { $0[node] }
    }
}
