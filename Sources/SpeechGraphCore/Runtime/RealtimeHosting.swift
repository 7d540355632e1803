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
/// output, before the audio reaches the graph (jack.input's). The engine hands it to the node the plan places in
/// that source's callback (`NodeContext.realtimeHost`).
public protocol RealtimeProcessorHost: AnyObject, Sendable {
    /// Takes `processor` to run in the real-time thread; `false` when it cannot (it has started, it has one
    /// already, the channel counts differ). Called on the thread that makes the graph, before it starts.
    func host(_ processor: RealtimeProcessor) -> Bool
}

/// A node whose audio output can have a real-time processor run over it: the node's own host.
public protocol RealtimeProcessorHosting {
    var realtimeHost: any RealtimeProcessorHost { get }
}
