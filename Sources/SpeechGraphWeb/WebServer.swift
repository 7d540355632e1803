import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOWebSocket
import SpeechGraphCore
import Synchronization

/// The `web` sink's HTTP server, on SwiftNIO: the embedded page, `/events` over Server-Sent Events and
/// WebSocket, the transcript downloads and `/healthz`. One event-loop thread of its own; nothing from a
/// request reaches the file system (the only files are the embedded ones).
final class WebServer: Sendable {
    struct Configuration: Sendable {
        var host: String
        var port: Int
        var token: String?
        var maxViewers: Int
        /// Final results a new viewer gets first.
        var replay: Int
        /// Messages a viewer may have waiting before it is disconnected (after dropping what newer ones replace).
        var queue: Int
        /// Volatile results go out too.
        var volatile: Bool
        var page: WebPage
    }

    let configuration: Configuration
    let hub: CaptionHub
    private let group: MultiThreadedEventLoopGroup
    private let listener = Mutex<(any Channel)?>(nil)
    /// Open connections, viewers or not: bounded (viewers plus room for page loads and downloads).
    private let connections = Atomic<Int>(0)
    private var maxConnections: Int { configuration.maxViewers + 32 }
    /// How long a connection may stay silent before its request is complete (or, kept alive, between requests).
    static let requestTimeout = TimeAmount.seconds(15)
    static let keepAliveInterval = TimeAmount.seconds(15)

    init(configuration: Configuration) {
        self.configuration = configuration
        group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        hub = CaptionHub(loop: group.next(), replay: configuration.replay, volatile: configuration.volatile)
    }

    /// Binds and listens; returns the bound port (useful with port 0).
    func start() throws -> Int {
        let bootstrap = ServerBootstrap(group: group)
            .serverChannelOption(.backlog, value: 64)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(.tcpOption(.tcp_nodelay), value: 1)
            // A viewer's socket holds little: text comes a few lines a second, and a viewer that does not read
            // should fill its bounded queue (and be dropped) rather than kernel buffers.
            .childChannelOption(.socketOption(.so_sndbuf), value: 64 * 1024)
            .childChannelOption(.writeBufferWaterMark, value: .init(low: 16 * 1024, high: 64 * 1024))
            .childChannelInitializer { [self] channel in
                channel.eventLoop.makeCompletedFuture { try self.initialize(channel) }
            }
        let bound: any Channel
        do {
            bound = try bootstrap.bind(host: configuration.host, port: configuration.port).wait()
        } catch {
            try? group.syncShutdownGracefully()
            // The system's words (`Address already in use`), not NIO's (`bind(descriptor:ptr:bytes:): ...`).
            let reason = (error as? IOError).map { String(cString: strerror($0.errnoCode)) } ?? "\(error)"
            throw SpeechGraphError(
                "cannot listen on \(configuration.host):\(configuration.port): \(reason)", parameter: "listen")
        }
        listener.withLock { $0 = bound }
        return bound.localAddress?.port ?? configuration.port
    }

    /// Stops listening, lets viewers take the end of their stream (at most 2 s), and stops the event loop.
    /// Call `hub.end()` first.
    func shutdown() {
        if let channel = listener.withLock({ $0 }) {
            try? channel.close().wait()
        }
        let loop = group.next()
        let viewers = hub.viewers
        if !viewers.isEmpty {
            let closed = EventLoopFuture.andAllComplete(viewers.map { $0.channel.closeFuture }, on: loop)
            let timeout = loop.scheduleTask(in: .seconds(2)) { for v in viewers { v.channel.close(promise: nil) } }
            try? closed.wait()
            timeout.cancel()
        }
        try? group.syncShutdownGracefully()
    }

    private func initialize(_ channel: any Channel) throws {
        guard connections.wrappingAdd(1, ordering: .relaxed).newValue <= maxConnections else {
            connections.wrappingSubtract(1, ordering: .relaxed)
            channel.close(promise: nil)
            return
        }
        channel.closeFuture.whenComplete { [self] _ in connections.wrappingSubtract(1, ordering: .relaxed) }
        let requests = WebRequestHandler(server: self)
        let upgrader = NIOWebSocketServerUpgrader(
            maxFrameSize: 4096,
            shouldUpgrade: { [self] channel, head in
                // Refused (nil): the request goes on to WebRequestHandler as plain HTTP, which says why.
                let ok = route(head).allowsUpgrade && hub.viewerCount < configuration.maxViewers
                return channel.eventLoop.makeSucceededFuture(ok ? HTTPHeaders() : nil)
            },
            upgradePipelineHandler: { [self] channel, _ in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(WebSocketViewerHandler(server: self))
                }
            })
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderFieldSize = 8 * 1024
        limits.maxHeaderListSize = 16 * 1024
        limits.maxHeaderFieldCount = 100
        // A client that sends requests (or pings) and never reads the answers: stop reading from it while its
        // answers cannot be written, so that they do not pile up.
        try channel.pipeline.syncOperations.addHandler(BackPressureHandler())
        try channel.pipeline.syncOperations.configureHTTPServerPipeline(
            withServerUpgrade: (
                upgraders: [upgrader],
                completionHandler: { context in
                    context.pipeline.removeHandler(name: WebRequestHandler.name, promise: nil)
                }
            ),
            withErrorHandling: true, withOutboundHeaderValidation: true, withEncoderConfiguration: .init(),
            withDecoderLimitConfiguration: limits)
        // After the HTTP decoder: a request that never completes (a header a byte at a time) is no activity, and is
        // closed after `requestTimeout` like a connection that says nothing.
        try channel.pipeline.syncOperations.addHandler(IdleStateHandler(readTimeout: Self.requestTimeout))
        try channel.pipeline.syncOperations.addHandler(requests, name: WebRequestHandler.name)
    }

    // MARK: routing

    enum Resource: Hashable {
        case page, script, style, icon, events
        case transcript(CaptionHub.Transcript)
        case health
    }

    /// What a request asks for, or the error it gets.
    enum Route: Equatable {
        case serve(Resource)
        case error(HTTPResponseStatus, String)

        var allowsUpgrade: Bool { self == .serve(.events) }
    }

    /// The route of a request: method, path (only the embedded resources exist), token and origin.
    func route(_ head: HTTPRequestHead) -> Route {
        guard head.method == .GET || head.method == .HEAD else {
            return .error(.methodNotAllowed, "only GET and HEAD")
        }
        // DNS rebinding: a site whose name resolves to 127.0.0.1 would be "same origin" with this server in a
        // viewer's browser. On loopback, only loopback names are answered.
        if Self.isLoopback(configuration.host), let host = head.headers.first(name: "host"),
            !Self.isLoopback(Self.hostName(host))
        {
            return .error(.forbidden, "this server answers only to loopback names (localhost, 127.0.0.1, [::1])")
        }
        let (rawPath, query) = Self.split(head.uri)
        guard let path = String(rawPath).removingPercentEncoding, path.hasPrefix("/"),
            !path.contains(".."), !path.contains("\\"), !path.contains("\0"), !path.contains("//")
        else {
            return .error(.badRequest, "bad path")
        }
        let resource: Resource
        switch path {
        case "/", "/index.html": resource = .page
        case "/app.js": resource = .script
        case "/app.css": resource = .style
        case "/favicon.svg", "/favicon.ico": resource = .icon
        case "/events": resource = .events
        case "/transcript.txt": resource = .transcript(.txt)
        case "/transcript.srt": resource = .transcript(.srt)
        case "/transcript.vtt": resource = .transcript(.vtt)
        case "/healthz": resource = .health
        default: return .error(.notFound, "not found")
        }
        // The page's own files and the health check need no token: they hold no captions.
        let open: Set<Resource> = [.script, .style, .icon, .health]
        if let token = configuration.token, !open.contains(resource) {
            let given = Self.queryValue("token", in: query) ?? Self.bearer(head.headers)
            guard let given, Self.constantTimeEqual(given, token) else {
                return .error(.unauthorized, given == nil ? "a token is needed: add ?token=" : "wrong token")
            }
        }
        // No CORS: a page from another origin may not open the event stream (a WebSocket is not bound by the
        // same-origin rule, so the server checks).
        if resource == .events, let origin = head.headers.first(name: "origin"),
            let host = head.headers.first(name: "host"), !Self.sameOrigin(origin, host: host)
        {
            return .error(.forbidden, "cross-origin request")
        }
        return .serve(resource)
    }

    /// `localhost`, `::1` or an IPv4 address 127.x.y.z, as the address itself: a name that only begins like one
    /// (`127.0.0.1.evil.example`) is a name a DNS rebinding site may give.
    static func isLoopback(_ host: String) -> Bool {
        if host.lowercased() == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127"
            && octets.allSatisfy { octet in
                octet.count <= 3 && octet.allSatisfy { $0.isASCII && $0.isNumber } && (UInt8(octet) != nil)
            }
    }

    /// The name in a Host header, without its port and brackets.
    static func hostName(_ host: String) -> String {
        if host.hasPrefix("["), let close = host.firstIndex(of: "]") {
            return String(host[host.index(after: host.startIndex)..<close])
        }
        if let colon = host.firstIndex(of: ":"), host[host.index(after: colon)...].allSatisfy(\.isNumber) {
            return String(host[..<colon])
        }
        return host
    }

    static func split(_ uri: String) -> (path: Substring, query: Substring) {
        guard let q = uri.firstIndex(of: "?") else { return (Substring(uri), "") }
        return (uri[..<q], uri[uri.index(after: q)...])
    }

    static func queryValue(_ name: String, in query: Substring) -> String? {
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2, parts[0] == name else { continue }
            return parts[1].replacingOccurrences(of: "+", with: " ").removingPercentEncoding
        }
        return nil
    }

    static func bearer(_ headers: HTTPHeaders) -> String? {
        guard let value = headers.first(name: "authorization"), value.lowercased().hasPrefix("bearer ") else {
            return nil
        }
        return String(value.dropFirst(7))
    }

    static func constantTimeEqual(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8)
        let y = Array(b.utf8)
        var difference = UInt8(x.count == y.count ? 0 : 1)
        for i in 0..<max(x.count, y.count) { difference |= (i < x.count ? x[i] : 0) ^ (i < y.count ? y[i] : 0) }
        return difference == 0
    }

    static func sameOrigin(_ origin: String, host: String) -> Bool {
        guard let scheme = origin.range(of: "://") else { return false }
        return origin[scheme.upperBound...].lowercased() == host.lowercased()
    }

    /// Response headers every answer carries: no caching of captions, no sniffing, no referrer, a policy that
    /// lets the page load only its own files and talk only to this server.
    func commonHeaders(contentType: String, length: Int?, host: String?) -> HTTPHeaders {
        var headers = HTTPHeaders()
        headers.add(name: "Content-Type", value: contentType)
        if let length { headers.add(name: "Content-Length", value: String(length)) }
        headers.add(name: "Cache-Control", value: "no-store")
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        var connect = "'self'"
        if let host, host.allSatisfy({ $0.isLetter || $0.isNumber || ".:-[]".contains($0) }), host.count < 300 {
            connect += " ws://\(host) wss://\(host)"
        }
        headers.add(
            name: "Content-Security-Policy",
            value: "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
                + "connect-src \(connect); base-uri 'none'; form-action 'none'")
        return headers
    }
}

/// One HTTP connection until it becomes a viewer (SSE) or is upgraded to a WebSocket.
final class WebRequestHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart
    static let name = "speechgraph-web-requests"

    private let server: WebServer
    // On the channel's event loop only, as every handler.
    private var head: HTTPRequestHead?
    /// Answers being written (a slow client reading a long transcript is not idle).
    private var responding = 0
    /// Set once the connection is an event stream (the hub forgets it when the connection closes).
    private var viewer: Viewer?

    init(server: WebServer) { self.server = server }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break  // requests here have no body worth reading; it is discarded as it comes
        case .end:
            guard let head, viewer == nil else { return }
            respond(to: head, context: context)
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { viewer?.flush() }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            // A viewer sends nothing after its request: that is normal. A request that never completes is not.
            if viewer == nil && responding == 0 { context.close(promise: nil) }
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        // A refused WebSocket upgrade (a wrong token, another path): the request goes on as plain HTTP, and its
        // answer says why.
        if error is NIOWebSocketUpgradeError { return }
        context.close(promise: nil)
    }

    private func respond(to head: HTTPRequestHead, context: ChannelHandlerContext) {
        let host = head.headers.first(name: "host")
        switch server.route(head) {
        case .error(let status, let why):
            let allow = status == .methodNotAllowed ? [("Allow", "GET, HEAD")] : []
            sendText(status, why, extra: allow, head: head, context: context)
        case .serve(.events):
            openStream(head: head, context: context)
        case .serve(let resource):
            let (type, body) = content(resource)
            let headers = server.commonHeaders(contentType: type, length: body.utf8.count, host: host)
            send(.ok, headers: headers, body: body, head: head, context: context)
        }
    }

    private func content(_ resource: WebServer.Resource) -> (String, String) {
        let page = server.configuration.page
        switch resource {
        case .page: return ("text/html; charset=utf-8", page.html)
        case .script: return ("text/javascript; charset=utf-8", WebPage.script)
        case .style: return ("text/css; charset=utf-8", WebPage.style)
        case .icon: return ("image/svg+xml", WebPage.icon)
        case .transcript(let kind): return (kind.contentType, server.hub.transcript(kind))
        case .health: return ("application/json", server.hub.health + "\n")
        case .events: return ("text/plain", "")
        }
    }

    /// An answer that is one line of plain text: what went wrong.
    private func sendText(
        _ status: HTTPResponseStatus, _ text: String, extra: [(String, String)] = [], head: HTTPRequestHead,
        context: ChannelHandlerContext
    ) {
        var headers = server.commonHeaders(
            contentType: "text/plain; charset=utf-8", length: text.utf8.count + 1,
            host: head.headers.first(name: "host"))
        headers.add(contentsOf: extra)
        send(status, headers: headers, body: text + "\n", head: head, context: context)
    }

    private func send(
        _ status: HTTPResponseStatus, headers: HTTPHeaders, body: String, head: HTTPRequestHead,
        context: ChannelHandlerContext
    ) {
        var headers = headers
        let keepAlive = head.isKeepAlive && status.code < 400
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: status, headers: headers))),
            promise: nil)
        if head.method != .HEAD {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        }
        responding += 1
        let done = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        done.assumeIsolated().whenComplete { _ in self.responding -= 1 }
        self.head = nil
        if !keepAlive {
            let channel = context.channel
            done.whenComplete { _ in channel.close(promise: nil) }
        }
    }

    /// `/events` over Server-Sent Events: the response never ends while the graph runs.
    private func openStream(head: HTTPRequestHead, context: ChannelHandlerContext) {
        var headers = server.commonHeaders(
            contentType: "text/event-stream; charset=utf-8", length: nil, host: head.headers.first(name: "host"))
        headers.add(name: "X-Accel-Buffering", value: "no")
        guard head.method == .GET else {
            send(.ok, headers: headers, body: "", head: head, context: context)
            return
        }
        guard server.hub.viewerCount < server.configuration.maxViewers else {
            let why = "too many viewers (\(server.configuration.maxViewers))"
            return sendText(.serviceUnavailable, why, extra: [("Retry-After", "5")], head: head, context: context)
        }
        let viewer = Viewer(channel: context.channel, transport: .sse, limit: server.configuration.queue)
        self.viewer = viewer
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: head.version, status: .ok, headers: headers))), promise: nil
        )
        // The browser's EventSource retries after this long when the connection drops (the page retries too).
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: "retry: 1000\n\n")))), promise: nil)
        guard server.hub.add(viewer, limit: server.configuration.maxViewers) else {
            context.close(promise: nil)  // another viewer took the last place since the check above
            return
        }
    }
}

/// A viewer on a WebSocket: text frames of events; pings answered, the client's close answered and closed.
final class WebSocketViewerHandler: ChannelInboundHandler {
    typealias InboundIn = WebSocketFrame
    typealias OutboundOut = WebSocketFrame

    private let server: WebServer
    /// The hub forgets it when the connection closes.
    private var viewer: Viewer?

    init(server: WebServer) { self.server = server }

    func handlerAdded(context: ChannelHandlerContext) {
        let viewer = Viewer(channel: context.channel, transport: .webSocket, limit: server.configuration.queue)
        self.viewer = viewer
        guard server.hub.add(viewer, limit: server.configuration.maxViewers) else {
            var reason = ByteBuffer()
            reason.write(webSocketErrorCode: .unknown(1013))
            reason.writeString("busy")
            let channel = context.channel
            context.writeAndFlush(wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: reason)))
                .whenComplete { _ in channel.close(promise: nil) }
            return
        }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let frame = unwrapInboundIn(data)
        switch frame.opcode {
        case .connectionClose:
            // The client closes: answer with a close frame, then close.
            let channel = context.channel
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .connectionClose, data: ByteBuffer()))
            )
            .whenComplete { _ in channel.close(promise: nil) }
        case .ping where context.channel.isWritable:  // a client that pings but never reads gets no more
            context.writeAndFlush(
                wrapOutboundOut(WebSocketFrame(fin: true, opcode: .pong, data: frame.unmaskedData)), promise: nil)
        default:
            break  // viewers have nothing to say; what they send is ignored
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { viewer?.flush() }
        context.fireChannelWritabilityChanged()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event is IdleStateHandler.IdleStateEvent { return }  // a viewer sends nothing: not an error
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        context.close(promise: nil)
    }
}
