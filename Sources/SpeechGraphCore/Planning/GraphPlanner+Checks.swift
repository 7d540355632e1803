import Foundation

/// The checks of a whole graph that no single node can make: unique names, files written twice.
extension GraphPlanner {
    /// Values that must differ across the graph's nodes (`ParameterDescriptor.uniqueIn`): the second use of one
    /// is an error at its value, naming the first.
    func checkUniqueNames(_ nodes: [PlannedNode], _ diagnostics: inout DiagnosticList) {
        var first: [String: (node: String, location: SourceLocation?)] = [:]
        for node in nodes {
            guard let type = registry[node.typeName] else { continue }
            for p in type.descriptor.parameters {
                guard let namespace = p.uniqueIn, let value = node.config.string(p.name) else { continue }
                // Where the value was given: its place, the option that gave it, or neither (the default).
                let (option, at) = node.config.origin(of: p.name)
                let given = option != nil || node.config.locations[p.name] != nil
                let here = at ?? node.location
                if let earlier = first["\(namespace)\n\(value)"] {
                    let place = earlier.location.map { $0.file == here?.file ? " (line \($0.line))" : " (\($0))" }
                    diagnostics.error(
                        (option.map { "\($0): " } ?? "")
                            + "node '\(earlier.node)'\(place ?? "") gives the \(namespace) name '\(value)' too"
                            + (given ? "" : " (the default of '\(p.name)')") + ": give the nodes different '\(p.name)' "
                            + "names", at: option == nil ? here : nil)
                } else {
                    first["\(namespace)\n\(value)"] = (node.name, node.config.locations[p.name] ?? node.location)
                }
            }
        }
    }

    /// A file a node writes must not be one that another path parameter names: a sink would overwrite the
    /// audio file an input reads (while it reads it), or two sinks would write one file over each other.
    /// Standard output (`-`) may be shared.
    func checkFilesWritten(_ nodes: [PlannedNode], _ diagnostics: inout DiagnosticList) {
        struct Use {
            var node: String
            var parameter: String
            var path: String
            var writes: Bool
            var location: SourceLocation?
        }
        var uses: [Use] = []
        for node in nodes {
            guard let type = registry[node.typeName] else { continue }
            // Defaults are in the config already.
            for p in type.descriptor.parameters where p.kind == .path {
                guard let value = node.config.string(p.name), !value.isEmpty, value != "-" else { continue }
                // A value from --set has no location: the node's declaration stands for it.
                uses.append(
                    Use(
                        node: node.name, parameter: p.name, path: value, writes: p.writes,
                        location: node.config.locations[p.name] ?? node.location))
            }
        }
        let identities = uses.map { Self.fileIdentity($0.path) }
        // The uses of each file, so that a graph of thousands of sinks is checked in linear time.
        var byIdentity: [String: [Int]] = [:]
        for (u, identity) in identities.enumerated() { if let identity { byIdentity[identity, default: []].append(u) } }
        for (w, writer) in uses.enumerated() where writer.writes && identities[w] != nil {
            for o in byIdentity[identities[w]!] ?? [] where o != w {
                let other = uses[o]
                // Two writers: reported once, at the second.
                if other.writes && o > w { continue }
                let place = other.location.map {
                    $0.file == writer.location?.file ? " at line \($0.line)" : " at \($0)"
                }
                let at = " ('\(other.parameter)'\(place ?? ""))"
                let what =
                    other.writes
                    ? "which node '\(other.node)' writes too\(at)"
                    : "which node '\(other.node)' reads\(at): it would be overwritten while it is read"
                diagnostics.error(
                    "node '\(writer.node)' writes '\(writer.path)', \(what)", at: writer.location)
                break
            }
        }
    }

    /// What tells two paths apart: the device and inode of a file or folder that exists; for one that does not
    /// exist yet, the real path (links followed) of the nearest folder above it that exists, and the names below
    /// it (a sink makes the folders it needs). `nil` for a device, pipe or socket, or a standard stream by name
    /// (`/dev/null`, `/dev/stdout`, `/dev/fd/1`: any number of nodes may share one, as `-`).
    static func fileIdentity(_ path: String) -> String? {
        if path.hasPrefix("/dev/std") || path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/") { return nil }
        var info = stat()
        if stat(path, &info) == 0 {
            let kind = info.st_mode & S_IFMT
            guard kind == S_IFREG || kind == S_IFDIR else { return nil }
            return "\(info.st_dev):\(info.st_ino)"
        }
        // The names below the nearest folder that exists, without "." and with ".." taken back where it can be.
        let absolute = path.hasPrefix("/") ? path : FileManager.default.currentDirectoryPath + "/" + path
        var folder = PathNames.folder(of: absolute)
        var below = [String(absolute.split(separator: "/").last ?? "")]
        while folder != "/" && access(folder, F_OK) != 0 {
            below.insert(String(folder.split(separator: "/").last ?? ""), at: 0)
            folder = PathNames.folder(of: folder)
        }
        guard let real = realpath(folder, nil) else { return nil }
        defer { free(real) }
        var names = String(cString: real).split(separator: "/").map(String.init)
        for name in below where name != "." {
            if name == ".." { _ = names.popLast() } else { names.append(name) }
        }
        return "/" + names.joined(separator: "/")
    }
}
