import Foundation

extension FileManager {
    /// Whether `path` names a directory (following symbolic links).
    public func isDirectory(_ path: String) -> Bool {
        var d: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }
}

/// A path a node will write (a sink's file or folder), checked before anything is written.
public enum OutputPath {
    /// Why `path` cannot be written, in words, or `nil` when it can (as far as can be told without writing):
    /// standard output (`-`), an existing file or folder that may be written, or a new name in a folder that
    /// exists and may be written.
    public static func problem(_ path: String) -> String? {
        if path.isEmpty || path == "-" { return nil }
        if access(path, F_OK) == 0 {
            return access(path, W_OK) == 0 ? nil : "cannot write \(path): \(String(cString: strerror(errno)))"
        }
        let folder = (path as NSString).deletingLastPathComponent
        let parent = folder.isEmpty ? "." : folder
        guard FileManager.default.isDirectory(parent) else {
            return "cannot write \(path): there is no folder \(parent)"
        }
        guard access(parent, W_OK) == 0 else {
            return "cannot write \(path): \(parent): \(String(cString: strerror(errno)))"
        }
        return nil
    }
}
