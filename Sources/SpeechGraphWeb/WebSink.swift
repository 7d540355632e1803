import SpeechGraphCore
import SpeechGraphSinks
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The `web` sink: live captions in a browser. Serves the captions page, the graph's events over Server-Sent
/// Events and WebSocket, the transcript so far as text, SubRip and WebVTT, and a health check (docs/web.md).
public final class WebSink: GraphNode {
    public static let descriptor = NodeDescriptor(
        typeName: "web",
        summary: "Serves live captions to browsers: the captions page, the event stream and transcript downloads.",
        doc: """
            An HTTP server on SwiftNIO with everything embedded in the binary (docs/web.md). '/' is the captions \
            page: volatile text dimmed and rewritten in place, final text solid, the newest line at the bottom, \
            a level meter and a speech indicator from tap.level and vad events, large type with a size setting, \
            light and dark themes, '?obs=1' for a transparent background (OBS browser sources), '?transport=ws' \
            for a WebSocket instead of Server-Sent Events; it reconnects by itself when the connection is lost. \
            '/events' is the stream of the graph's events, the same JSON as the jsonl sink's lines, over \
            Server-Sent Events or, with an Upgrade, a WebSocket; a new viewer first gets a 'hello' and the last \
            'replay' final results. '/transcript.txt', '/transcript.srt' and '/transcript.vtt' are the session \
            so far; '/healthz' the server's state as JSON. Each viewer has a bounded queue: a newer volatile \
            result or level replaces one still waiting, and a viewer whose queue is full anyway is disconnected; \
            the graph never waits for a viewer. Loopback unless 'listen' says otherwise (with a warning); with \
            'token', every request but the health check, the script, the style sheet and the icon must carry \
            '?token=' (or 'Authorization: Bearer'). The address is printed on standard error when the graph \
            starts.
            """,
        category: .sink,
        ports: [
            .eventInput(
                "in", accepts: .any,
                doc: "Any events: results for the captions and the transcript, speech activity and levels for the "
                    + "indicators; all of them go out on /events.")
        ],
        parameters: [
            .string(
                "listen", default: "127.0.0.1:8080",
                doc: "Address and port: HOST:PORT ([::1]:PORT for IPv6; port 0 picks a free one). Anything but "
                    + "loopback is reachable from other machines: a warning says so."),
            .string(
                "token", default: nil,
                doc: "A secret viewers must present as ?token= (the page passes it on): letters, digits and . _ ~ -; "
                    + "none by default. ${VARIABLE} in the graph file keeps it out of the file."),
            .string("title", default: "Live captions", doc: "The page's title."),
            .integer(
                "replay", default: 100, range: 0...2000,
                doc: "Final results a new viewer (or a reloaded page) gets first (at most 'queue' - 2; the page "
                    + "keeps 2000 lines)."),
            .integer(
                "queue", default: 256, range: 8...100_000,
                doc: "Messages a viewer may have waiting; past it, volatile results and levels are dropped, "
                    + "and a viewer still over it is disconnected."),
            .integer("max-viewers", default: 100, range: 1...10_000, doc: "Viewers connected at once."),
            .boolean("volatile", default: true, doc: "Send volatile (not yet final) results too."),
        ],
        requires: [StatusLine.key])

    public static let type = NodeType(descriptor, validate: { try validate($0) }, make: { try WebSink($0) })

    private let name: String
    private let configuration: WebServer.Configuration
    private let statusLine: StatusLine?
    /// Made when the graph starts (`prepare`): planning a graph binds nothing.
    private var server: WebServer?
    private let boundPort = Atomic<Int>(-1)
    /// The port the server listens on once the graph has started (the one chosen with port 0); any thread.
    public var port: Int? {
        let p = boundPort.load(ordering: .acquiring)
        return p >= 0 ? p : nil
    }

    init(_ context: NodeContext) throws {
        let config = context.config
        name = config.name
        try Self.validate(config)
        let (host, port) = try Self.parseListen(config.string(of: "listen"))
        let token = config.string("token")
        configuration = .init(
            host: host, port: port, token: token, maxViewers: config.integer(of: "max-viewers"),
            replay: config.integer(of: "replay"), queue: config.integer(of: "queue"),
            volatile: config.bool(of: "volatile"),
            page: WebPage(title: config.string(of: "title")))
        statusLine = context.resources.optional(StatusLine.self)
    }

    /// What `check` finds wrong in the settings: the address, the token, a replay that does not fit the queue.
    static func validate(_ config: NodeConfig) throws {
        // Each problem, not only the first.
        var problems = SpeechGraphErrors([])
        do { _ = try parseListen(config.string(of: "listen")) } catch let error as SpeechGraphError {
            problems.errors.append(error)
        }
        if let token = config.string("token"),
            token.isEmpty || !token.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._~-".contains($0)) })
        {
            problems.errors.append(
                SpeechGraphError(
                    "a token is letters, digits and . _ ~ - (it goes in addresses as ?token=), and not empty",
                    parameter: "token"))
        }
        if config.integer(of: "replay") + 2 > config.integer(of: "queue") {
            problems.errors.append(
                SpeechGraphError(
                    "'replay' (\(config.integer(of: "replay"))) must leave room in a viewer's 'queue' "
                        + "(\(config.integer(of: "queue"))): a new viewer gets the replay first",
                    parameter: "replay"))
        }
        try problems.throwIfAny()
    }

    /// `HOST:PORT`, `[IPV6]:PORT`.
    static func parseListen(_ text: String) throws -> (String, Int) {
        let bad = SpeechGraphError(
            "'\(text)' is not an address to listen on: expected HOST:PORT, as in \"127.0.0.1:8080\" or \"[::1]:8080\"",
            parameter: "listen")
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65535).contains(port)
        else { throw bad }
        var host = String(text[..<colon])
        if host.hasPrefix("[") && host.hasSuffix("]") {
            host = String(host.dropFirst().dropLast())
        } else if host.contains(":") {
            throw bad
        }
        guard !host.isEmpty else { throw bad }
        return (host, port)
    }

    public func prepare() throws {
        let server = WebServer(configuration: configuration)
        let bound = try server.start()
        self.server = server
        boundPort.store(bound, ordering: .releasing)
        let host = configuration.host
        let shown = host.contains(":") ? "[\(host)]" : host
        let token = configuration.token.map { "?token=\($0)" } ?? ""
        var message = "speechgraph: node '\(name)': captions at http://\(shown):\(bound)/\(token)\n"
        if !WebServer.isLoopback(host) {
            message +=
                "speechgraph: warning: node '\(name)' listens on \(host), not loopback: anyone who can reach it "
                + (configuration.token == nil
                    ? "can read the captions (a 'token' limits that)\n" : "with the token can read the captions\n")
        }
        statusLine?.clear()
        _ = message.utf8CString.withUnsafeBufferPointer { write(2, $0.baseAddress, $0.count - 1) }
    }

    public func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        server?.hub.publish(event)
    }

    /// The input ended: viewers get the end of the stream (the page says so and keeps its text).
    public func finish(output: NodeOutput) throws {
        server?.hub.end()
    }

    /// Viewers take the rest of their stream (at most 2 s), then the server stops.
    public func close() {
        guard let server else { return }
        self.server = nil
        server.hub.end()
        server.shutdown()
    }
}
