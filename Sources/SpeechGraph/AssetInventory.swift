import Foundation

/// What the modules need installed, as Apple's `AssetInventory` reports it. speechgraph downloads nothing (it is
/// on-device): the models are Debian's packages (`pocketsphinx-en-us`) or directories in the model search path
/// (`SPEECHGRAPH_MODEL_PATH`, docs/cli.md). An installation request is nil when everything is installed; otherwise
/// its `downloadAndInstall()` throws an error that says what to install.
public enum AssetInventory {
    public enum Status: Int, Comparable, Sendable, CustomStringConvertible {
        /// No model of the language exists for speechgraph.
        case unsupported = 0
        /// A model exists (Debian packages it) but is not installed.
        case supported = 1
        /// Never here: nothing is downloaded.
        case downloading = 2
        case installed = 3

        public static func < (a: Status, b: Status) -> Bool { a.rawValue < b.rawValue }
        public var description: String {
            switch self {
            case .unsupported: "unsupported"
            case .supported: "supported"
            case .downloading: "downloading"
            case .installed: "installed"
            }
        }
    }

    /// The languages whose models Debian packages, and the package of each.
    static let packaged = ["en": "pocketsphinx-en-us"]

    /// The least installed of the modules' assets (a speech detector needs none).
    public static func status(forModules modules: [any SpeechModule]) async -> Status {
        modules.map(status(of:)).min() ?? .installed
    }

    static func status(of module: any SpeechModule) -> Status {
        guard let transcriber = module as? TranscriberCore else { return .installed }
        let language = transcriber.locale.language.languageCode?.identifier ?? ""
        if TranscriberCore.model(for: transcriber.locale) != nil { return .installed }
        return packaged[language] != nil ? .supported : .unsupported
    }

    /// Nil when every module's model is installed; a request that explains what to install when one is not; an
    /// error when a module's language has no model at all.
    public static func assetInstallationRequest(
        supporting modules: [any SpeechModule]
    ) async throws -> AssetInstallationRequest? {
        var missing: [String] = []
        for module in modules {
            guard let transcriber = module as? TranscriberCore else { continue }
            let language = transcriber.locale.language.languageCode?.identifier ?? ""
            switch status(of: module) {
            case .installed, .downloading: continue
            case .supported: missing.append(packaged[language]!)
            case .unsupported:
                throw SpeechGraph.Error.unsupportedLocale(transcriber.locale, installed: TranscriberCore.installed())
            }
        }
        guard !missing.isEmpty else { return nil }
        return AssetInstallationRequest(packages: Array(Set(missing)).sorted())
    }

    /// The locales whose models are installed: all of them are kept, nothing needs reserving.
    public static var reservedLocales: [Locale] {
        get async { TranscriberCore.installed() }
    }
    public static var maximumReservedLocales: Int { TranscriberCore.installed().count }
    /// Whether the locale's model is installed (nothing is reserved or downloaded).
    public static func reserve(locale: Locale) async throws -> Bool {
        TranscriberCore.model(for: locale) != nil
    }
    public static func release(reservedLocale locale: Locale) async -> Bool { false }
}

/// Models to install, which speechgraph cannot install itself.
public final class AssetInstallationRequest: @unchecked Sendable {
    // Unchecked: `progress` is Foundation's, thread-safe.
    /// The Debian packages to install.
    public let packages: [String]
    /// Stays at 0 of 1: nothing is downloaded.
    public let progress = Progress(totalUnitCount: 1)

    init(packages: [String]) { self.packages = packages }

    /// Throws: speechgraph downloads nothing; the error says what to install.
    public func downloadAndInstall() async throws {
        throw SpeechGraph.Error.failed(
            "speechgraph downloads no models: install \(packages.joined(separator: " ")) "
                + "(sudo apt install \(packages.joined(separator: " "))), or give a model directory in "
                + "SPEECHGRAPH_MODEL_PATH")
    }
}
