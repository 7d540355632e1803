#if canImport(Glibc)
    import Glibc
#endif

/// What identifies the version of a file: a file written again (by `lm build`, an editor, a package upgrade, a
/// plugin rebuilt) gets a new modification time, and one replaced by a rename a new inode. Two stamps of one path
/// are equal while the file is the same. The one stamp of speechgraph: the decoder pool knows a stale decoder by
/// its model files' stamps, the plugin cache a plugin it must validate again by its file's.
public struct FileStamp: Hashable, Sendable, Codable {
    public var path: String
    var device: UInt64 = 0
    var inode: UInt64 = 0
    var size: Int64 = -1
    var modified: Int64 = 0
    var modifiedNanoseconds: Int = 0

    /// The file as it is now; a file that cannot be read gets a stamp of its own (size -1: `exists` is false).
    public init(_ path: String) {
        self.path = path
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modified = Int64(info.st_mtim.tv_sec)
        modifiedNanoseconds = Int(info.st_mtim.tv_nsec)
    }

    /// The file could be read when the stamp was made.
    public var exists: Bool { size >= 0 }
}

extension FileStamp: CustomStringConvertible {
    /// Every field, on one line: what a cache key made of stamps holds (the model cache's, `SphinxLanguageModels`).
    public var description: String { "\(path) \(device):\(inode) \(size) \(modified).\(modifiedNanoseconds)" }
}
