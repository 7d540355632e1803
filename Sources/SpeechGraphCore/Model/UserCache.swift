import Foundation

/// speechgraph's folder in the user's cache: $XDG_CACHE_HOME/speechgraph, or ~/.cache/speechgraph (the plugin
/// manifest, built language models).
public enum UserCache {
    /// nil when neither $XDG_CACHE_HOME nor $HOME is set.
    public static func directory(environment: [String: String] = ProcessInfo.processInfo.environment) -> String? {
        let base =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["HOME"].map { $0 + "/.cache" }
        return base.map { $0 + "/speechgraph" }
    }
}
