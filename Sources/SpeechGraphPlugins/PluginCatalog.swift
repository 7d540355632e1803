import Foundation
import SpeechGraphCore

#if canImport(Glibc)
    import Glibc
#endif

/// The plugins on the search path: found, checked for safe permissions, validated first in a child process
/// (cached by path, size and modification time), and registered as node types. A plugin that crashed, hung
/// or failed validation is skipped with one warning naming it, until its file changes.
public struct PluginCatalog: Sendable {
    /// How a new or changed plugin file is validated before this process loads it.
    public enum Scanner: Sendable {
        /// `EXECUTABLE plugin scan FILE` in a child process (the speechgraph CLI): a plugin that crashes or
        /// hangs there costs the child, not the host.
        case process(executable: String)
        /// In this process: only for plugins already trusted (tests of the loader itself).
        case inProcess
    }

    /// A plugin file found on the path, and what became of it.
    public struct Entry: Sendable {
        public var path: String
        public var manifest: PluginManifest?
        /// Why it was skipped.
        public var problem: String?
    }

    public private(set) var entries: [Entry] = []
    /// One line per skipped plugin or refused node type, for standard error.
    public private(set) var warnings: [String] = []
    public let loader = PluginLoader()

    /// The directories searched, in order: `extra` (`--plugin-path`), SPEECHGRAPH_PLUGIN_PATH (colon-separated),
    /// $XDG_DATA_HOME-style ~/.local/lib/speechgraph/plugins, /usr/local/lib/speechgraph/plugins,
    /// /usr/lib/speechgraph/plugins.
    public static func searchPath(extra: [String] = [], environment: [String: String]) -> [String] {
        var dirs = extra.flatMap { $0.split(separator: ":").map(String.init) }
        dirs += (environment["SPEECHGRAPH_PLUGIN_PATH"] ?? "").split(separator: ":").map(String.init)
        if let home = environment["HOME"], !home.isEmpty { dirs.append(home + "/.local/lib/speechgraph/plugins") }
        dirs += ["/usr/local/lib/speechgraph/plugins", "/usr/lib/speechgraph/plugins"]
        var seen = Set<String>()
        return dirs.filter { !$0.isEmpty && seen.insert($0).inserted }
    }

    /// The cache file: $XDG_CACHE_HOME (or ~/.cache)/speechgraph/plugins-abiMAJOR.MINOR.json: a new host ABI version
    /// validates every plugin again (a plugin refused for a newer minor may load now).
    public static func cachePath(environment: [String: String]) -> String? {
        UserCache.directory(environment: environment).map { "\($0)/plugins-abi\(PluginABI.text).json" }
    }

    /// Finds, checks and validates the plugins in `directories`. Each directory that does not exist is
    /// passed over silently (the default ones usually do not).
    public init(directories: [String], scanner: Scanner, cachePath: String?) {
        var cache = cachePath.map(PluginCache.read) ?? PluginCache()
        var changed = false
        var seenTypes = Set<String>()
        let here = FileManager.default.currentDirectoryPath
        for given in directories {
            // By absolute path, so that the cache and the listings mean the same from any directory.
            let dir = given.hasPrefix("/") ? given : (here as NSString).appendingPathComponent(given)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: dir) else { continue }
            for name in names.sorted() where name.hasSuffix(".so") {
                let path = (dir as NSString).appendingPathComponent(name)
                var entry = Entry(path: path)
                if let unsafe = PluginPermissions.problem(path: path) {
                    entry.problem = unsafe
                } else if case let stamp = FileStamp(path), stamp.exists {
                    if let cached = cache.entries[path], cached.stamp == stamp {
                        entry.manifest = cached.manifest
                        entry.problem = cached.problem
                    } else {
                        let result = Self.validate(path: path, scanner: scanner)
                        entry.manifest = result.manifest
                        entry.problem = result.problem
                        // A hang may be a busy machine's, and a missing library or a refusing init may be put
                        // right without the file changing: not remembered, tried again next time.
                        if !result.hung && !(result.problem.map(PluginError.mayPassLater) ?? false) {
                            cache.entries[path] = PluginCache.Record(
                                stamp: stamp, manifest: result.manifest, problem: result.problem)
                            changed = true
                        }
                    }
                } else {
                    entry.problem = "it cannot be read"
                }
                if let problem = entry.problem {
                    warnings.append("warning: plugin \(path) skipped: \(problem)")
                }
                if let manifest = entry.manifest {
                    for node in manifest.nodes where !seenTypes.insert(node.typeName).inserted {
                        warnings.append(
                            "warning: plugin \(path): node type '\(node.typeName)' is also offered by a plugin "
                                + "earlier on the path; this one is skipped")
                    }
                }
                entries.append(entry)
            }
        }
        if changed, let cachePath { cache.write(to: cachePath) }
    }

    /// Registers every valid plugin node type; a type whose name is taken (a built-in type, or a plugin's
    /// earlier on the path) is refused with a warning.
    public mutating func register(into registry: inout NodeRegistry) {
        for entry in entries {
            guard let manifest = entry.manifest else { continue }
            for node in manifest.nodes {
                if let existing = registry[node.typeName] {
                    if existing.descriptor.origin == nil {
                        warnings.append(
                            "warning: plugin \(entry.path): node type '\(node.typeName)' clashes with the built-in "
                                + "node type of that name; it is skipped")
                    }
                    continue
                }
                try? registry.register(node.nodeType(path: entry.path, loader: loader))
            }
        }
    }

    /// Seconds a plugin may take to load (and make each node once) before it counts as hung: far above what a
    /// plugin needs (milliseconds), so that a loaded machine does not make a slow one look hung.
    public static let loadTimeout = 5.0

    /// Why loading `path` would be unsafe (another user could write to it or to a directory above it), or `nil`.
    public static func permissionProblem(path: String) -> String? { PluginPermissions.problem(path: path) }

    /// Validates one plugin file: its manifest, or why it is refused.
    static func validate(path: String, scanner: Scanner) -> (manifest: PluginManifest?, problem: String?, hung: Bool) {
        switch scanner {
        case .inProcess:
            do { return (try PluginLibrary(path: path).manifest(), nil, false) } catch {
                return (nil, "\(error)", false)
            }
        case .process(let executable):
            let outcome = ChildScan.run(executable: executable, plugin: path, timeout: loadTimeout)
            switch outcome {
            case .manifest(let m): return (m, nil, false)
            case .refused(let why): return (nil, why, false)
            case .hung(let why): return (nil, why, true)
            }
        }
    }
}

/// What earlier runs learnt of each plugin file, by the file's stamp (`FileStamp`: a rebuilt or replaced plugin
/// is validated again).
struct PluginCache: Codable {
    struct Record: Codable {
        var stamp: FileStamp
        var manifest: PluginManifest?
        var problem: String?
    }
    var entries: [String: Record] = [:]

    static func read(_ path: String) -> PluginCache {
        guard let data = FileManager.default.contents(atPath: path),
            let cache = try? JSONDecoder().decode(PluginCache.self, from: data)
        else { return PluginCache() }
        return cache
    }

    /// Written to a temporary file and renamed, so that two speechgraph processes never see half a cache.
    func write(to path: String) {
        let dir = PathNames.folder(of: path)
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        guard let data = try? JSONEncoder().encode(self) else { return }
        let temporary = "\(path).\(getpid()).tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: data) else { return }
        if rename(temporary, path) != 0 { unlink(temporary) }
    }
}

/// A plugin file, or a directory above it, that a user other than root and the one running speechgraph may
/// write to: loading it would run their code.
enum PluginPermissions {
    static func problem(path: String) -> String? {
        let me = geteuid()
        // What would be loaded: the file a symbolic link points to, by its absolute path.
        guard let resolved = realpath(path, nil) else { return nil }
        var current = String(cString: resolved)
        free(resolved)
        var isFile = true
        while true {
            var st = stat()
            guard stat(current, &st) == 0 else { return nil }
            let what = isFile ? "the file" : "its directory \(current)"
            if st.st_uid != 0 && st.st_uid != me {
                return "\(what) belongs to another user (uid \(st.st_uid)), who could put any code in it"
            }
            let sticky = !isFile && st.st_mode & S_ISVTX != 0
            if st.st_mode & S_IWOTH != 0 && !sticky {
                return "\(what) can be written by any user, who could put any code in it"
            }
            if st.st_mode & S_IWGRP != 0 && st.st_gid != 0 && !sticky {
                return "\(what) can be written by group \(st.st_gid), whose members could put any code in it"
            }
            if current == "/" { return nil }
            let parent = PathNames.folder(of: current)
            current = parent.isEmpty ? "/" : parent
            isFile = false
        }
    }
}
