import SpeechGraphCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Where a sink writes text: standard output or a file. Written with `write(2)`, flushed per event,
/// so a consumer reading a pipe sees each result as soon as it is made.
public final class TextOutput {
    public let path: String
    private let fd: Int32
    private let ownsDescriptor: Bool
    private var buffer: [UInt8] = []
    /// The program's status line on the same terminal, cleared before results go to standard output.
    private let statusLine: StatusLine?

    public static func standardOutput(statusLine: StatusLine? = nil) -> TextOutput {
        TextOutput(fd: 1, path: "-", statusLine: statusLine)
    }

    private init(fd: Int32, path: String, statusLine: StatusLine?) {
        self.fd = fd
        self.path = path
        self.ownsDescriptor = false
        self.statusLine = statusLine
    }

    /// Opens (creating or truncating) a file, or standard output for "-" or "".
    public init(path: String, append: Bool = false, statusLine: StatusLine? = nil) throws {
        self.path = path
        self.statusLine = statusLine
        if path == "-" || path.isEmpty {
            fd = 1
            ownsDescriptor = false
            return
        }
        let flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC)
        let opened = open(path, flags, 0o644)
        guard opened >= 0 else {
            throw SpeechGraphError("cannot write \(path): \(String(cString: strerror(errno)))", parameter: "path")
        }
        fd = opened
        ownsDescriptor = true
    }

    deinit {
        flush()
        if ownsDescriptor { Glibc.close(fd) }
    }

    public var isTerminal: Bool { isatty(fd) == 1 }

    public func write(_ text: String) {
        buffer.append(contentsOf: text.utf8)
    }

    public func flush() {
        // A progress line on the same terminal goes first, so results never land on it.
        if fd == 1, !buffer.isEmpty { statusLine?.clear() }
        var offset = 0
        while offset < buffer.count {
            let n = buffer.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + offset, $0.count - offset) }
            if n < 0 {
                if errno == EINTR { continue }
                break  // a closed pipe: nothing more can be delivered there
            }
            offset += n
        }
        buffer.removeAll(keepingCapacity: true)
    }
}

/// The one-line status (progress) a program shows on standard error when it is a terminal. Whatever
/// writes results to standard output clears it first, so the two never share a line: the program makes
/// one and hands it to its graphs in their resources (`GraphResources(providing: [statusLine])`), where the
/// sinks find it.
public final class StatusLine: Sendable {
    private let shown = Mutex<Bool>(false)
    private let enabled = isatty(2) == 1

    public init() {}

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
