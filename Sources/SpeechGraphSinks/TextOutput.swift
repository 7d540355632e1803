import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a sink writes text: standard output or a file. Written with `write(2)`, flushed per event,
/// so a consumer reading a pipe sees each result as soon as it is made.
///
/// A write that fails (a full disk, a closed pipe: the program ignores SIGPIPE) is not retried: its text and
/// everything written after it are dropped, and `failure` says what happened, once, so that the sink can
/// report it as a warning while the graph's other sinks go on. Standard output's failure is also kept in
/// the program's ``StandardOutput``, so that the other writers to it stop too, without a message of their own.
public final class TextOutput {
    public let path: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    /// The program's status line on the same terminal, cleared before results go to standard output.
    private let statusLine: StatusLine?
    /// Standard output's shared state (only when writing there).
    private let standardOutput: StandardOutput?
    /// The first write of this output that failed, as a message for the user.
    public private(set) var failure: String?
    /// A file opened to be rewritten keeps what it held until this output writes or `finish`es: a graph that
    /// fails before it runs (another node cannot start) leaves the user's file as it was.
    private var truncatePending = false

    /// The output of a sink node: its `path` parameter ("-": standard output), with the graph's status line and
    /// the program's standard output state.
    public static func forSink(_ context: NodeContext) throws -> TextOutput {
        try TextOutput(
            path: context.config.string(of: "path"), statusLine: context.resources.optional(StatusLine.self),
            shared: context.resources.required(StandardOutput.self))
    }

    /// Standard output. `shared`: the program's state of it (which failure every writer to it sees).
    /// What a sink that writes through one requires: standard output as the program shares it, and the terminal's
    /// status line when there is one.
    static let requires = [StandardOutput.key, StatusLine.key]

    public static func standardOutput(statusLine: StatusLine? = nil, shared: StandardOutput? = nil) -> TextOutput {
        TextOutput(fd: 1, path: "-", statusLine: statusLine, shared: shared ?? StandardOutput())
    }

    private init(fd: Int32, path: String, statusLine: StatusLine?, shared: StandardOutput?) {
        self.fd = fd
        self.path = path
        self.ownsDescriptor = false
        self.statusLine = statusLine
        self.standardOutput = shared
    }

    /// Opens (creating) a file, or standard output for "-" or "". Unless `append`, the file is emptied when the
    /// first text is written, or at `finish` (a run that wrote nothing), not before.
    public init(
        path: String, append: Bool = false, statusLine: StatusLine? = nil, shared: StandardOutput? = nil
    ) throws {
        self.path = path
        self.statusLine = statusLine
        if path == "-" || path.isEmpty {
            fd = 1
            ownsDescriptor = false
            standardOutput = shared ?? StandardOutput()
            return
        }
        standardOutput = nil
        try OutputPath.makeFolders(for: path)
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : 0)
        let opened = open(path, flags, 0o644)
        guard opened >= 0 else {
            throw SpeechGraphError("cannot write \(path): \(String(cString: strerror(errno)))", parameter: "path")
        }
        fd = opened
        ownsDescriptor = true
        var info = stat()
        truncatePending = !append && fstat(opened, &info) == 0 && info.st_mode & S_IFMT == S_IFREG
    }

    /// The graph has run (to its end, or until it failed): flushes, and empties a file it was to rewrite if
    /// nothing was written to it. Sinks call it from their `finish`.
    public func finish() {
        flush()
        truncateIfPending()
    }

    private func truncateIfPending() {
        guard truncatePending, failure == nil, !closed else { return }
        truncatePending = false
        if ftruncate(fd, 0) != 0 {
            failure = describe(errno)
        }
    }

    deinit {
        close()
    }

    /// Flushes, and closes a file (standard output stays open). A failure to close is a write failure. A file that
    /// was to be rewritten and that nothing was written to (its sink was never `finish`ed: the graph did not run)
    /// is left as it was, and what was held for it (a subtitle header) is dropped.
    public func close() {
        if truncatePending { buffer.removeAll() }
        flush()
        guard ownsDescriptor, fd >= 0, !closed else { return }
        closed = true
        if Glibc.close(fd) != 0 && failure == nil { failure = describe(errno) }
    }
    private var closed = false

    public var isTerminal: Bool { isatty(fd) == 1 }

    /// Tells `failure` as a `warning` event (``NodeOutput/warn(_:time:)``, which tells it once), so that a user
    /// hears of a full disk when it happens, not when the run ends. Called by the sink after `flush`.
    public func tellFailure(_ output: NodeOutput, at time: Double?) throws {
        if let failure { try output.warn(failure, time: time) }
    }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    public func flush() {
        defer { buffer.removeAll(keepingCapacity: true) }
        guard failure == nil, standardOutput?.failure == nil, !closed else { return }
        // A progress line on the same terminal goes first, so results never land on it.
        if fd == 1, !buffer.isEmpty { statusLine?.clear() }
        if !buffer.isEmpty { truncateIfPending() }
        guard failure == nil else { return }
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                let message = describe(errno)
                failure = message
                standardOutput?.fail(message)
                return
            }
            offset += n
        }
    }

    private func describe(_ code: Int32) -> String {
        "cannot write \(fd == 1 ? "standard output" : path): \(String(cString: strerror(code)))"
    }
}

/// Standard output as every writer in one program shares it: once a write to it failed (a closed pipe, a
/// full disk), the others stop writing there too, and the program can stop work whose only output it was.
/// The program makes one and hands it to its graphs in their resources (`GraphResources(providing:)`),
/// where the sinks find it; a graph without one makes its own.
public final class StandardOutput: GraphResource {
    private let failed = Mutex<String?>(nil)

    public init() {}

    public static func make(for resources: GraphResources) -> StandardOutput? { StandardOutput() }

    /// What the first failed write to standard output said, or `nil`.
    public var failure: String? { failed.withLock { $0 } }

    func fail(_ message: String) {
        failed.withLock { if $0 == nil { $0 = message } }
    }
}

/// The one-line status (progress) a program shows on standard error when it is a terminal. Whatever
/// writes results to standard output clears it first, so the two never share a line: the program makes
/// one and hands it to its graphs in their resources (`GraphResources(providing: [statusLine])`), where the
/// sinks find it.
public final class StatusLine: GraphResource {
    private let shown = Mutex<Bool>(false)
    private let enabled = isatty(2) == 1

    public init() {}

    /// Only a program with a terminal has one.
    public static func make(for resources: GraphResources) -> StatusLine? { nil }

    public func show(_ text: String) {
        guard enabled else { return }
        shown.withLock { shown in
            Self.write("\r\u{1B}[2K" + text)
            shown = true
        }
    }

    public func clear() {
        guard enabled else { return }
        shown.withLock { shown in
            if shown { Self.write("\r\u{1B}[2K") }
            shown = false
        }
    }

    private static func write(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.write(2, $0.baseAddress, $0.count - 1) }
    }
}
