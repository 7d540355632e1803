import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The cache of language models built from specs on first use (`$XDG_CACHE_HOME/speechgraph/lm/HASH`). Every
/// distinct spec or phrase list adds a directory, and a server whose clients send their own phrases would fill
/// the disk: so the cache keeps the `keep` most recently used models, and removes older ones once they have
/// gone unused for `idle` (a model another process has just found stays until that process has loaded it).
/// Using a model marks it used (its directory's modification time).
public enum SpecCache {
    /// Models kept whatever their age.
    public static let keep = 64
    /// A model beyond those is removed once unused this long; so is a build left half done (a process that
    /// died while building).
    public static let idle: TimeInterval = 3600

    /// Marks a cached model used now.
    public static func markUsed(_ directory: String) {
        _ = utimes(directory, nil)
    }

    /// Removes, from the cache directory `root`, the models beyond the `keep` most recently used that have gone
    /// unused for `idle`, and the half-built ones (`HASH.PID.RANDOM`) older than `idle`. Returns the names
    /// removed. Anything else in `root` is left alone.
    @discardableResult
    public static func prune(
        _ root: String, keep: Int = SpecCache.keep, idle: TimeInterval = SpecCache.idle, now: Date = Date()
    ) -> [String] {
        let fm = FileManager.default
        guard let names = try? fm.contentsOfDirectory(atPath: root) else { return [] }
        var models: [(name: String, used: Date)] = []
        var removed: [String] = []
        for name in names {
            let parts = name.split(separator: ".", omittingEmptySubsequences: false)
            guard let first = parts.first, !first.isEmpty, first.allSatisfy(\.isHexDigit),
                parts.count == 1 || parts.count == 3,
                let attributes = try? fm.attributesOfItem(atPath: "\(root)/\(name)"),
                attributes[.type] as? FileAttributeType == .typeDirectory,
                let used = attributes[.modificationDate] as? Date
            else { continue }
            if parts.count == 3 {
                if now.timeIntervalSince(used) > idle, (try? fm.removeItem(atPath: "\(root)/\(name)")) != nil {
                    removed.append(name)
                }
            } else {
                models.append((name, used))
            }
        }
        models.sort { $0.used > $1.used }
        for model in models.dropFirst(keep) where now.timeIntervalSince(model.used) > idle {
            if (try? fm.removeItem(atPath: "\(root)/\(model.name)")) != nil { removed.append(model.name) }
        }
        return removed
    }
}
