import NIOCore
import NIOEmbedded
import NIOHTTP1
import SpeechGraphTestSupport
import Synchronization
import Testing

@testable import SpeechGraphWeb

/// The caption hub and its viewers, on an embedded channel (no socket).
@Suite(.tags(.fast)) struct CaptionHubTests {
    /// The graph thread publishes to every viewer; a viewer's lock is taken by its event loop too (writing). The
    /// hub's lock is never held while a viewer's is taken, so a viewer busy writing holds up neither the other
    /// viewers nor a new one connecting.
    @Test("the hub's lock is released before a viewer's is taken: publishing, ending, a viewer joining")
    func hubLockIsNotHeldAcrossViewers() throws {
        let loop = EmbeddedEventLoop()
        let hub = CaptionHub(loop: loop, replay: 4, volatile: true)
        let seen = Mutex<[Bool]>([])
        let viewers = (0..<2).map { _ in
            Viewer(
                channel: EmbeddedChannel(loop: loop), transport: .sse, limit: 16,
                onEnqueue: { seen.withLock { $0.append(hub.isLocked) } })
        }
        hub.publish(.speechStarted(node: "vad", time: 0))
        for viewer in viewers { #expect(hub.add(viewer, limit: 4)) }
        hub.publish(.speechEnded(node: "vad", time: 1))
        hub.end()
        try loop.syncShutdownGracefully()
        let during = seen.withLock { $0 }
        // Two viewers, each: the speech event and the end.
        #expect(during.count == 4)
        #expect(during.allSatisfy { !$0 }, "the hub's lock was held while a viewer's was taken: \(during)")
        #expect(hub.viewerCount == 2)
    }

    /// What the graph publishes between the hub's registering a new viewer and its replay is written after the
    /// replay, and nothing is written before the replay.
    @Test("a new viewer's replay goes before what was published meanwhile")
    func replayComesFirst() throws {
        let loop = EmbeddedEventLoop()
        let channel = EmbeddedChannel(loop: loop)
        let viewer = Viewer(channel: channel, transport: .sse, limit: 16)
        func message(_ text: String) -> ViewerMessage { ViewerMessage(kind: .event, json: text, supersededBy: nil) }
        #expect(viewer.enqueue(message("published")))
        viewer.flush()
        #expect(try channel.readOutbound(as: HTTPServerResponsePart.self) == nil, "written before the replay")
        #expect(viewer.join(replay: [message("replayed")]))
        viewer.flush()
        var written: [String] = []
        while case .body(.byteBuffer(let buffer))? = try channel.readOutbound(as: HTTPServerResponsePart.self) {
            written.append(String(buffer: buffer))
        }
        #expect(written == ["data: replayed\n\n", "data: published\n\n"])
        try loop.syncShutdownGracefully()
    }
}
