import Foundation
import SpeechGraphNodes
import SpeechGraphTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// For these tests: a final result for every 160 frames that begin with a sample of 1 (frames counted from the
/// start of the stream, so however the audio is cut into blocks), numbered from 1; speechStarted for 160 frames
/// that begin with 0.5, speechEnded for -0.5 (as node 'vad').
final class FinalsEmitter: GraphNode {
    static let type = NodeType(
        NodeDescriptor(
            typeName: "test.finals", summary: "Final results on marked audio (tests only).", category: .analysis,
            ports: [
                .audioInput("in", doc: "Audio; 160 frames beginning with 1.0 make a final result."),
                .eventOutput(
                    "events", emits: .only([.result, .speechStarted, .speechEnded]),
                    doc: "Final results, speech events."),
            ], parameters: []),
        make: { _ in FinalsEmitter() })

    private var frame = 0
    private var count = 0

    static func text(_ n: Int) -> String { "final number \(n) with a few more words to make it a line of captions" }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        for i in 0..<block.frameCount {
            let first = block.samples[i * block.format.channelCount]
            let t = Double(frame) / 16000
            if frame % 160 == 0 && abs(first) == 0.5 {
                try output.emit(first > 0 ? .speechStarted(node: "vad", time: t) : .speechEnded(node: "vad", time: t))
            }
            if frame % 160 == 0 && first >= 0.99 {
                count += 1
                try output.emit(
                    .result(
                        Transcription(
                            utterance: count, isFinal: true, range: TimeRange(start: t, end: t + 0.01),
                            text: Self.text(count), node: "asr")))
            }
            frame += 1
        }
    }
}

/// A TCP connection to the server under test, read with timeouts: what a browser sends, byte for byte.
final class TestConnection {
    let fd: Int32

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(fd)
            throw TestSpeech.Failure(description: "cannot connect to port \(port)")
        }
    }

    deinit { Glibc.close(fd) }

    func send(_ text: String) {
        let bytes = Array(text.utf8)
        var offset = 0
        while offset < bytes.count {
            let n = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            offset += n
        }
    }

    /// Reads until `done` says so about everything read so far, the peer closes (`eof`), or `timeout` seconds
    /// pass without it.
    func read(into buffer: inout [UInt8], timeout: Double, until done: ([UInt8]) -> Bool) -> (eof: Bool, done: Bool) {
        let deadline = Date().addingTimeInterval(timeout)
        var chunk = [UInt8](repeating: 0, count: 65536)
        while !done(buffer) {
            let left = deadline.timeIntervalSinceNow
            if left <= 0 { return (false, false) }
            var poller = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if poll(&poller, 1, Int32(min(left, 1) * 1000)) <= 0 { continue }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return (true, done(buffer)) }
            buffer += chunk[..<n]
        }
        return (false, true)
    }

    /// Everything until the server closes the connection (at most `timeout` seconds).
    func readToEnd(timeout: Double = 20) -> (bytes: [UInt8], eof: Bool) {
        var buffer: [UInt8] = []
        let r = read(into: &buffer, timeout: timeout) { _ in false }
        return (buffer, r.eof)
    }

    /// One request on its own connection: the status code and the body.
    static func request(port: Int, _ head: String) throws -> (status: Int, text: String) {
        let c = try TestConnection(port: port)
        c.send(head)
        let (bytes, _) = c.readToEnd()
        let text = String(decoding: bytes, as: UTF8.self)
        let status = Int(text.split(separator: " ", maxSplits: 2).dropFirst().first ?? "") ?? 0
        return (status, text)
    }

    static func get(port: Int, _ path: String, headers: [String] = []) throws -> (status: Int, text: String) {
        try request(
            port: port,
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n" + headers.map { $0 + "\r\n" }.joined()
                + "Connection: close\r\n\r\n")
    }
}

/// A viewer reading `/events` on a thread of its own: over Server-Sent Events or a WebSocket (the handshake and
/// the frames by hand), as fast as the data comes, or not at all (`reading: false`, with a small socket buffer).
final class TestViewer: @unchecked Sendable {
    struct Received: Sendable {
        var hello = 0
        var finals: [Int] = []
        var lastLevelTime = -1.0
        /// Speech events, as their type: speechStarted, speechEnded.
        var speech: [String] = []
        var ended = false
        var closed = false
        var webSocketClose: (code: Int, reason: String)?
    }
    let connection: TestConnection
    let webSocket: Bool
    private let state = Mutex(Received())
    private var thread: Thread?

    init(port: Int, webSocket: Bool = false, reading: Bool = true, token: String? = nil) throws {
        connection = try TestConnection(port: port, receiveBuffer: reading ? nil : 4096)
        self.webSocket = webSocket
        let query = token.map { "?token=\($0)" } ?? ""
        if webSocket {
            connection.send(
                "GET /events\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n")
        } else {
            connection.send(
                "GET /events\(query) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nAccept: text/event-stream\r\n\r\n")
        }
        guard reading else { return }
        let t = Thread { [self] in readLoop() }
        thread = t
        t.start()
    }

    var received: Received { state.withLock { $0 } }

    /// Waits (polling what the reader thread has seen) until `condition` holds, for at most `seconds`.
    @discardableResult
    func wait(seconds: Double = 30, until condition: (Received) -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if condition(received) { return true }
            usleep(5000)
        }
        return condition(received)
    }

    private func readLoop() {
        var buffer: [UInt8] = []
        // The response head.
        let head = connection.read(into: &buffer, timeout: 30) { $0.count >= 4 && findHeadEnd($0) != nil }
        guard head.done, let end = findHeadEnd(buffer) else {
            state.withLock { $0.closed = true }
            return
        }
        buffer.removeFirst(end)
        while true {
            if webSocket {
                while let (opcode, payload, used) = Self.frame(buffer) {
                    buffer.removeFirst(used)
                    if opcode == 8 {
                        let code = payload.count >= 2 ? Int(payload[0]) << 8 | Int(payload[1]) : 0
                        let reason = String(decoding: payload.dropFirst(2), as: UTF8.self)
                        state.withLock {
                            $0.webSocketClose = (code, reason)
                            $0.ended = code == 1000 && reason == "end"
                        }
                    } else if opcode == 1 {
                        handle(json: String(decoding: payload, as: UTF8.self))
                    }
                }
            } else {
                while let range = Self.blankLine(buffer) {
                    let message = String(decoding: buffer[range], as: UTF8.self)
                    buffer.removeFirst(range.upperBound)
                    var event = "message"
                    var data = ""
                    for line in message.split(whereSeparator: \.isNewline) {
                        if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                        if line.hasPrefix("data: ") { data = String(line.dropFirst(6)) }
                    }
                    switch event {
                    case "end": state.withLock { $0.ended = true }
                    case "hello": state.withLock { $0.hello += 1 }
                    case "message" where !data.isEmpty: handle(json: data)
                    default: break
                    }
                }
            }
            let r = connection.read(into: &buffer, timeout: 60) { b in
                webSocket ? Self.frame(b) != nil : Self.blankLine(b) != nil
            }
            if r.eof && !r.done {
                state.withLock { $0.closed = true }
                return
            }
        }
    }

    private func handle(json: String) {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any] else { return }
        state.withLock { s in
            switch object["type"] as? String {
            case "hello": s.hello += 1
            case "result":
                if object["isFinal"] as? Bool == true, let n = object["utterance"] as? Int { s.finals.append(n) }
            case "level": s.lastLevelTime = object["time"] as? Double ?? s.lastLevelTime
            case let type? where type.hasPrefix("speech"): s.speech.append(type)
            default: break
            }
        }
    }

    /// SSE over HTTP/1.1 chunked encoding: the chunk sizes are stripped here by looking for "\n\n" in the data
    /// lines only (chunk-size lines end in "\r\n", messages in "\n\n").
    static func blankLine(_ b: [UInt8]) -> Range<Int>? {
        guard b.count >= 2 else { return nil }
        for i in 0..<(b.count - 1) where b[i] == 10 && b[i + 1] == 10 { return 0..<(i + 2) }
        return nil
    }

    /// One unmasked server frame: opcode, payload, bytes used.
    static func frame(_ b: [UInt8]) -> (Int, [UInt8], Int)? {
        guard b.count >= 2 else { return nil }
        var length = Int(b[1] & 0x7F)
        var offset = 2
        if length == 126 {
            guard b.count >= 4 else { return nil }
            length = Int(b[2]) << 8 | Int(b[3])
            offset = 4
        } else if length == 127 {
            guard b.count >= 10 else { return nil }
            length = (2..<10).reduce(0) { $0 << 8 | Int(b[$1]) }
            offset = 10
        }
        guard b.count >= offset + length else { return nil }
        return (Int(b[0] & 0x0F), Array(b[offset..<(offset + length)]), offset + length)
    }
}

func findHeadEnd(_ b: [UInt8]) -> Int? {
    guard b.count >= 4 else { return nil }
    for i in 0...(b.count - 4) where b[i] == 13 && b[i + 1] == 10 && b[i + 2] == 13 && b[i + 3] == 10 {
        return i + 4
    }
    return nil
}

@Suite("web sink", .tags(.fast))
struct WebSinkTests {
    static let registry: NodeRegistry = {
        var r = BuiltinNodes.registry()
        try! r.register(FinalsEmitter.type)
        return r
    }()

    /// A running graph: pushed audio -> levels and numbered finals -> a `web` node on a free port.
    final class Served {
        let graph: RunningGraph
        let pusher: AudioPusher
        let port: Int
        private var frames = 0

        init(web: String, level: String = "100 ms") throws {
            let spec = try GraphParser.parse(
                """
                node src  = push.input { rate: 16 kHz, buffer: 4 s }
                node lvl  = tap.level { interval: \(level) }
                node asr  = test.finals
                node page = web { listen: "127.0.0.1:0", \(web) }
                src -> lvl -> asr
                lvl.events -> page
                asr -> page
                """, file: "web-test.graph")
            graph = try RunningGraph(
                plan: GraphPlanner(registry: WebSinkTests.registry).plan(spec), registry: WebSinkTests.registry)
            pusher = try #require(graph.input(named: "src"))
            let page = try #require(graph.node(named: "page") as? WebSink)
            graph.start()
            // The server listens once the graph has started (prepare): its port is on the node.
            var port: Int?
            for _ in 0..<6000 where port == nil {
                port = page.port
                if port == nil { usleep(5000) }
            }
            self.port = try #require(port)
        }

        /// speechStarted (`true`) or speechEnded, on 10 ms of audio.
        func push(speech started: Bool) {
            var audio = [Float](repeating: 0, count: 160)
            audio[0] = started ? 0.5 : -0.5
            _ = pusher.write(audio, waitForRoom: true)
            frames += audio.count
        }

        /// `count` final results (10 ms of audio each), then `silence` seconds of audio with levels only.
        func push(finals count: Int, silence: Double = 0) {
            var audio: [Float] = []
            for _ in 0..<count {
                audio.append(1)
                audio += [Float](repeating: 0, count: 159)
            }
            audio += [Float](repeating: 0, count: Int(silence * 16000))
            _ = pusher.write(audio, waitForRoom: true)
            frames += audio.count
        }

        var seconds: Double { Double(frames) / 16000 }

        func health() throws -> [String: Any] {
            let (status, text) = try TestConnection.get(port: port, "/healthz")
            #expect(status == 200)
            let body = text.components(separatedBy: "\r\n\r\n").last ?? ""
            return (try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any]) ?? [:]
        }

        func waitForHealth(seconds: Double = 30, _ condition: ([String: Any]) -> Bool) throws -> [String: Any] {
            let deadline = Date().addingTimeInterval(seconds)
            var h = try health()
            while !condition(h) && Date() < deadline {
                usleep(10000)
                h = try health()
            }
            return h
        }

        func end() async throws {
            pusher.end()
            try await graph.wait()
        }
    }

    @Test("requests outside the embedded files, traversal, huge headers, bad methods and a wrong token get 4xx")
    func hostileRequests() async throws {
        let served = try Served(web: "token: \"s3cret\"")
        let port = served.port
        let host = "Host: 127.0.0.1:\(port)"
        let refused: [(String, String)] = [
            ("traversal", "GET /../../etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("encoded traversal", "GET /%2e%2e/%2e%2e/etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("encoded slashes", "GET /..%2f..%2fetc%2fpasswd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("upper-case escapes", "GET /%2E%2E%2F%2E%2E%2Fetc%2Fpasswd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("double encoding", "GET /%252e%252e/%252e%252e/etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("traversal after a file", "GET /app.js/../../../etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a file that is not embedded", "GET /etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a double slash", "GET //etc/passwd HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a NUL", "GET /%00 HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a bad escape", "GET /%zz HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a huge header", "GET / HTTP/1.1\r\n\(host)\r\nX-Big: \(String(repeating: "a", count: 100_000))\r\n\r\n"),
            (
                "many headers",
                "GET / HTTP/1.1\r\n\(host)\r\n" + (0..<300).map { "X-\($0): 1\r\n" }.joined() + "\r\n"
            ),
            ("no token", "GET / HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a wrong token", "GET /?token=wrong HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a wrong token on the stream", "GET /events?token=s3creT HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a wrong token on a transcript", "GET /transcript.srt?token=x HTTP/1.1\r\n\(host)\r\n\r\n"),
            ("a wrong bearer token", "GET / HTTP/1.1\r\n\(host)\r\nAuthorization: Bearer nope\r\n\r\n"),
            ("a POST", "POST /?token=s3cret HTTP/1.1\r\n\(host)\r\nContent-Length: 2\r\n\r\nhi"),
            ("another host name (DNS rebinding)", "GET /?token=s3cret HTTP/1.1\r\nHost: evil.example:\(port)\r\n\r\n"),
            // Names that only begin like a loopback address are names too.
            (
                "a name that begins as 127.0.0.1 does",
                "GET /?token=s3cret HTTP/1.1\r\nHost: 127.0.0.1.evil.example:\(port)\r\n\r\n"
            ),
            ("a name that begins with 127.", "GET /?token=s3cret HTTP/1.1\r\nHost: 127.attacker.example\r\n\r\n"),
            ("a user before an '@'", "GET /?token=s3cret HTTP/1.1\r\nHost: 127.0.0.1:80@evil\r\n\r\n"),
            (
                "another origin",
                "GET /events?token=s3cret HTTP/1.1\r\n\(host)\r\nOrigin: http://evil.example\r\n\r\n"
            ),
            (
                "a WebSocket from another origin",
                "GET /events?token=s3cret HTTP/1.1\r\n\(host)\r\nOrigin: http://evil.example\r\nUpgrade: websocket\r\n"
                    + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    + "Sec-WebSocket-Version: 13\r\n\r\n"
            ),
            (
                "a WebSocket without the token",
                "GET /events HTTP/1.1\r\n\(host)\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
            ),
        ]
        for (what, request) in refused {
            let (status, text) = try TestConnection.request(port: port, request)
            #expect((400..<500).contains(status), "\(what): \(status) \(text.prefix(200))")
            #expect(!text.contains("root:"), "\(what): a file from the file system")
        }
        // The server is still there, serves what it should with the token, and allows no other origin.
        let page = try TestConnection.get(port: port, "/?token=s3cret")
        #expect(page.status == 200 && page.text.contains("aria-live=\"polite\""))
        #expect(!page.text.lowercased().contains("access-control-allow-origin"))
        #expect(try TestConnection.get(port: port, "/", headers: ["Authorization: Bearer s3cret"]).status == 200)
        #expect(try TestConnection.get(port: port, "/app.js").status == 200)
        #expect(try TestConnection.get(port: port, "/healthz").status == 200)
        for name in ["localhost", "LocalHost", "127.0.0.1", "127.1.2.3", "[::1]"] {
            let (status, _) = try TestConnection.request(
                port: port, "GET /?token=s3cret HTTP/1.1\r\nHost: \(name):\(port)\r\nConnection: close\r\n\r\n")
            #expect(status == 200, "\(name)")
        }
        let head = try TestConnection.request(
            port: port, "HEAD /?token=s3cret HTTP/1.1\r\n\(host)\r\nConnection: close\r\n\r\n")
        #expect(head.status == 200 && !head.text.contains("<html"))
        try await served.end()
    }

    @Test("a request sent a byte at a time is closed as an idle connection is (it held its place for ever)")
    func slowRequestIsClosed() async throws {
        let served = try Served(web: "replay: 5")
        let c = try TestConnection(port: served.port)
        let request = Array(
            "GET / HTTP/1.1\r\nHost: 127.0.0.1:\(served.port)\r\n" + String(repeating: "X-Slow: a\r\n", count: 100))
        let started = Date()
        var closed = false
        var buffer: [UInt8] = []
        for character in request where !closed && Date().timeIntervalSince(started) < 60 {
            c.send(String(character))
            closed = c.read(into: &buffer, timeout: 1) { _ in false }.eof
        }
        #expect(closed, "still open after \(Date().timeIntervalSince(started)) s")
        try await served.end()
    }

    @Test("a viewer that stops reading loses levels first, then is dropped; a reading viewer gets every final")
    func slowViewerIsDropped() async throws {
        let queue = 64
        let served = try Served(web: "queue: \(queue), replay: 10", level: "1 ms")
        let slow = try TestViewer(port: served.port, reading: false)
        let fast = try TestViewer(port: served.port)
        _ = try served.waitForHealth { $0["viewers"] as? Int == 2 }
        // Levels only (one every millisecond of audio, pushed far faster than real time): the one that does not
        // read keeps only the newest level waiting, so it is not dropped.
        served.push(finals: 0, silence: 20)
        #expect(fast.wait { $0.lastLevelTime >= served.seconds - 0.002 })
        var health = try served.health()
        #expect(health["dropped"] as? Int == 0 && health["viewers"] as? Int == 2, "\(health)")
        // Final results cannot be dropped: the slow viewer's queue fills and it is disconnected. The reading one,
        // given time to keep up between batches, gets every final in order.
        var maxQueued = 0
        // Batches well under the queue's bound: the reading viewer keeps up even when the event loop waits for a
        // core on a loaded machine.
        let total = 2000
        let batch = 20
        for n in 0..<(total / batch) {
            served.push(finals: batch)
            #expect(fast.wait { $0.finals.count >= (n + 1) * batch }, "batch \(n): \(fast.received.finals.count)")
            maxQueued = max(maxQueued, try served.health()["maxQueued"] as? Int ?? 0)
        }
        health = try served.waitForHealth { $0["dropped"] as? Int == 1 }
        #expect(health["dropped"] as? Int == 1 && health["viewers"] as? Int == 1, "\(health)")
        #expect(fast.received.finals == Array(1...total))
        #expect(maxQueued <= queue, "a viewer's queue stays bounded")
        // The slow viewer's connection was closed by the server: reading it now ends, without the end of stream.
        let (bytes, eof) = slow.connection.readToEnd()
        #expect(eof)
        #expect(!String(decoding: bytes, as: UTF8.self).contains("event: end"))
        try await served.end()
        #expect(fast.wait { $0.ended && $0.closed })
    }

    @Test("a new viewer gets hello, the last `replay` finals, then live events, over SSE and a WebSocket")
    func replayAndTransports() async throws {
        let served = try Served(web: "replay: 5, title: \"Room <1>\"")
        served.push(finals: 8)
        _ = try served.waitForHealth { $0["finals"] as? Int == 8 }
        let sse = try TestViewer(port: served.port)
        let ws = try TestViewer(port: served.port, webSocket: true)
        for viewer in [sse, ws] {
            #expect(viewer.wait { $0.hello == 1 && $0.finals == [4, 5, 6, 7, 8] }, "\(viewer.received)")
        }
        served.push(finals: 2)
        for viewer in [sse, ws] { #expect(viewer.wait { $0.finals == Array(4...10) }, "\(viewer.received)") }
        // The transcript so far, in three forms.
        let text = try TestConnection.get(port: served.port, "/transcript.txt").text
        #expect(text.hasSuffix((1...10).map { FinalsEmitter.text($0) + "\n" }.joined()))
        let srt = try TestConnection.get(port: served.port, "/transcript.srt").text
        #expect(srt.contains("\r\n\r\n1\n00:00:00,000 --> ") && srt.contains("\n\n10\n00:00:00,"))
        let vtt = try TestConnection.get(port: served.port, "/transcript.vtt").text
        #expect(vtt.contains("\r\n\r\nWEBVTT\n\n00:00:00.000 --> "))
        let page = try TestConnection.get(port: served.port, "/").text
        #expect(page.contains("<title>Room &lt;1&gt;</title>"))
        // The end of the stream: SSE's `end` event, the WebSocket's close frame (1000, "end"); both close.
        try await served.end()
        for viewer in [sse, ws] { #expect(viewer.wait { $0.ended && $0.closed }, "\(viewer.received)") }
        #expect(ws.received.webSocketClose?.code == 1000)
    }

    @Test("a viewer that comes while speech is heard learns it at once, and one that comes after it, that it ended")
    func speechStateIsReplayed() async throws {
        let served = try Served(web: "replay: 5")
        served.push(finals: 2)
        served.push(speech: true)
        _ = try served.waitForHealth { $0["events"] as? Int ?? 0 >= 3 }
        let during = try TestViewer(port: served.port, webSocket: true)
        #expect(during.wait { $0.finals == [1, 2] && $0.speech == ["speechStarted"] }, "\(during.received)")
        served.push(speech: false)
        #expect(during.wait { $0.speech == ["speechStarted", "speechEnded"] }, "\(during.received)")
        let after = try TestViewer(port: served.port)
        #expect(after.wait { $0.finals == [1, 2] && $0.speech == ["speechEnded"] }, "\(after.received)")
        try await served.end()
        for viewer in [during, after] { #expect(viewer.wait { $0.ended && $0.closed }, "\(viewer.received)") }
    }

    @Test("a replay larger than the connection's buffers arrives whole with nothing published after it")
    func largeReplay() async throws {
        let served = try Served(web: "replay: 1000, queue: 1100")
        served.push(finals: 1000)
        _ = try served.waitForHealth { $0["finals"] as? Int == 1000 }
        // About 250 KB of replay: more than a 64 KiB write buffer, written as the socket drains.
        let sse = try TestViewer(port: served.port)
        let ws = try TestViewer(port: served.port, webSocket: true)
        for viewer in [sse, ws] {
            #expect(viewer.wait { $0.finals == Array(1...1000) }, "\(viewer.received.finals.count)")
        }
        try await served.end()
    }

    /// A graph of a pushed input's events into a `web` node with `parameters`, made (not started).
    static func webOnly(_ parameters: String, file: String) throws -> RunningGraph {
        let spec = try GraphParser.parse(
            """
            node src  = push.input { rate: 16 kHz }
            node page = web { \(parameters) }
            src.events -> page
            """, file: file)
        return try RunningGraph(plan: GraphPlanner(registry: registry).plan(spec), registry: registry)
    }

    @Test("a bad listen address, token or replay is a graph error at the parameter's value; a port in use names it")
    func badListenAddress() throws {
        // Graph errors (what `speechgraph check` reports, exit 2), at the value: line 2, after "node page = web { ".
        func column(of parameter: String, in parameters: String) -> Int {
            let start = parameters.range(of: parameter + ": ")!.upperBound
            return "node page = web { ".count + parameters.distance(from: parameters.startIndex, to: start) + 1
        }
        for bad in ["8080", "localhost", "127.0.0.1:99999", ":80", "::1:80"] {
            let parameters = "listen: \"\(bad)\""
            let error = #expect(throws: GraphError.self) { _ = try Self.webOnly(parameters, file: "bad.graph") }
            let at = "bad.graph:2:\(column(of: "listen", in: parameters)): error: "
            #expect(
                error.map { "\($0)".hasPrefix(at) && "\($0)".contains("HOST:PORT") } == true,
                "\(bad): \(String(describing: error))")
        }
        // A token that cannot go in an address as it is, and a replay that does not fit a viewer's queue.
        for (bad, parameter) in [
            ("token: \"a b\"", "token"), ("token: \"x&y\"", "token"), ("queue: 50, replay: 49", "replay"),
        ] {
            let error = #expect(throws: GraphError.self) { _ = try Self.webOnly(bad, file: "bad.graph") }
            let at = "bad.graph:2:\(column(of: parameter, in: bad)): error: "
            #expect(error.map { "\($0)".hasPrefix(at) } == true, "\(bad): \(String(describing: error))")
        }
        // All three at once: each is reported, at its value (only the first was).
        let all = "listen: \"nonsense\", token: \"a b\", queue: 50, replay: 49"
        let error = #expect(throws: GraphError.self) { _ = try Self.webOnly(all, file: "bad.graph") }
        let errors = error?.diagnostics.filter { $0.severity == .error }.compactMap { $0.location?.column }
        #expect(
            errors.map(Set.init) == Set(["listen", "token", "replay"].map { column(of: $0, in: all) }),
            "\(String(describing: error))")
        // Two graphs on one port: the second cannot listen, and says where.
        let served = try Served(web: "")
        let second = try Self.webOnly("listen: \"127.0.0.1:\(served.port)\"", file: "busy.graph")
        second.start()
        let busy = #expect(throws: SpeechGraphError.self) { try second.wait() }
        #expect(
            busy?.message.hasSuffix(":\(served.port): Address already in use") == true, "\(String(describing: busy))")
        #expect(try served.health()["status"] as? String == "live")
        served.pusher.end()
        try served.graph.wait()
    }
}
