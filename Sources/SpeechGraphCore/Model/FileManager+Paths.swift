import Foundation

extension FileManager {
    /// Whether `path` names a directory (following symbolic links).
    public func isDirectory(_ path: String) -> Bool {
        var d: ObjCBool = false
        return fileExists(atPath: path, isDirectory: &d) && d.boolValue
    }
}
