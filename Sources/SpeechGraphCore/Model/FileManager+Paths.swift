import Foundation

extension FileManager {
    /// Whether `path` names a directory (following symbolic links).
    public func isDirectory(_ path: String) -> Bool {
        var d: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }
}

/// Path names taken apart by hand: Foundation's `NSString.deletingLastPathComponent` traps on a one-character
/// name ("o", "o/", "."), which a user's relative path reaches ("o/log.jsonl").
public enum PathNames {
    /// Why a file operation failed, as the system says it (`No such file or directory`, `No space left on
    /// device`): Foundation's own text on Linux is "The operation could not be completed" and a guess.
    public static func reason(_ error: any Error) -> String {
        if let underlying = (error as NSError).userInfo[NSUnderlyingErrorKey] as? any Error {
            if let posix = underlying as? POSIXError { return String(cString: strerror(posix.code.rawValue)) }
            let ns = underlying as NSError
            if ns.domain == NSPOSIXErrorDomain { return String(cString: strerror(Int32(ns.code))) }
        }
        return error.localizedDescription
    }

    /// Why a file that exists gave no contents: the system's reason for a refused open, or, for a device or pipe
    /// such as /dev/null, that it is not a file.
    public static func unreadableReason(_ path: String) -> String {
        if isPipeOrDevice(path) { return "it is a device or a pipe, not a file" }
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        if fd < 0 { return String(cString: strerror(errno)).lowercased() }
        close(fd)
        return "it cannot be read"
    }

    /// Whether `path` (its links followed) is a pipe, a device or a socket: something that exists and is neither a
    /// file nor a folder, which is read (or written) as it comes, once.
    public static func isPipeOrDevice(_ path: String) -> Bool {
        var info = stat()
        guard stat(path, &info) == 0 else { return false }
        return info.st_mode & S_IFMT != S_IFREG && info.st_mode & S_IFMT != S_IFDIR
    }

    /// The folder part of `path`, as `dirname` without its "." (`a/b` → `a`, `/a` → `/`, `a` → ``, `/` → `/`).
    public static func folder(of path: String) -> String {
        var name = Substring(path)
        while name.count > 1 && name.hasSuffix("/") { name = name.dropLast() }
        guard let slash = name.lastIndex(of: "/") else { return "" }
        var head = name[..<slash]
        while head.count > 1 && head.hasSuffix("/") { head = head.dropLast() }
        return head.isEmpty ? "/" : String(head)
    }
}

/// A path a node will write (a sink's file or folder), checked before anything is written.
public enum OutputPath {
    /// Why `path` cannot be written, in words, or `nil` when it can (as far as can be told without writing):
    /// standard output (`-`), an existing file or folder that may be written, or a new name under folders that
    /// exist or can be made (the nearest one that exists may be written).
    public static func problem(_ path: String) -> String? {
        if path.isEmpty || path == "-" { return nil }
        if access(path, F_OK) == 0 {
            return access(path, W_OK) == 0 ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
        }
        var folder = PathNames.folder(of: path)
        while !folder.isEmpty && access(folder, F_OK) != 0 { folder = PathNames.folder(of: folder) }
        let parent = folder.isEmpty ? "." : folder
        guard FileManager.default.isDirectory(parent) else { return "cannot write \(path): \(parent) is not a folder" }
        guard access(parent, W_OK) == 0 else {
            return "cannot write \(path): \(parent): \(String(cString: strerror(errno)))"
        }
        return nil
    }

    /// Writes `text` to `path` as a user expects of a named output: a regular file (or a new one) is replaced whole
    /// (through a temporary file, so a failed write leaves it as it was), at the end of a symbolic link if it is
    /// one (the link stays); anything else (a device such as /dev/stdout, a pipe) is written into, not replaced.
    public static func write(_ text: String, to path: String) throws {
        // A standard stream by name is written where it goes, as it is (it may be a file opened to append to).
        let number = path.split(separator: "/").last.flatMap { Int32($0) }
        let standard: Int32? =
            path == "/dev/stdout"
            ? 1
            : path == "/dev/stderr" ? 2 : path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/") ? number : nil
        let target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        if standard != nil || PathNames.isPipeOrDevice(target) {
            let handle =
                standard.map { FileHandle(fileDescriptor: $0, closeOnDealloc: false) }
                ?? FileHandle(forWritingAtPath: target)
            guard let handle else {
                throw SpeechGraphError("cannot write \(path): \(String(cString: strerror(errno)))")
            }
            defer { if standard == nil { try? handle.close() } }
            do { try handle.write(contentsOf: Data(text.utf8)) } catch {
                throw SpeechGraphError("cannot write \(path): \(PathNames.reason(error))")
            }
            return
        }
        do { try text.write(toFile: target, atomically: true, encoding: .utf8) } catch {
            throw SpeechGraphError("cannot write \(path): \(PathNames.reason(error))")
        }
    }

    /// Makes the folders `path` is to be written in, when they do not exist yet (as `mkdir -p`).
    public static func makeFolders(for path: String) throws {
        let folder = PathNames.folder(of: path)
        guard !folder.isEmpty, access(folder, F_OK) != 0 else { return }
        do {
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        } catch {
            throw SpeechGraphError("cannot make the folder \(folder) for \(path): \(PathNames.reason(error))")
        }
    }
}
