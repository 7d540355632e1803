// swift-tools-version:6.0
import Foundation
import PackageDescription

let package = Package(
    name: "speechgraph",
    products: [
        .executable(name: "speechgraph", targets: ["speechgraph"]),
        // For apps: the runtime and every built-in node, without the CLI (`import SpeechGraph`).
        .library(name: "SpeechGraph", targets: ["SpeechGraph"]),
        // For node and plugin authors: the core alone (no C library).
        .library(name: "SpeechGraphCore", targets: ["SpeechGraphCore"]),
        // For plugins written in Swift: the plugin ABI with a Swift layer, linked into the plugin.
        .library(name: "SpeechGraphPluginKit", targets: ["SpeechGraphPluginKit"]),
        // The example plugins (Plugins/), loadable at run time: libspeechgraph-gate.so, libspeechgraph-match.so.
        .library(name: "speechgraph-gate", type: .dynamic, targets: ["GatePlugin"]),
        .library(name: "speechgraph-match", type: .dynamic, targets: ["MatchPlugin"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        // Thin system-library targets, one per C library (Debian -dev packages, found by pkg-config).
        .systemLibrary(
            name: "CPocketSphinx", pkgConfig: "pocketsphinx",
            providers: [.apt(["libpocketsphinx-dev", "libsphinxbase-dev"])]),
        .systemLibrary(name: "CSndFile", pkgConfig: "sndfile", providers: [.apt(["libsndfile1-dev"])]),
        .systemLibrary(name: "CMpg123", pkgConfig: "libmpg123", providers: [.apt(["libmpg123-dev"])]),
        .systemLibrary(name: "CSoxr", pkgConfig: "soxr", providers: [.apt(["libsoxr-dev"])]),
        .systemLibrary(name: "CFFTW", pkgConfig: "fftw3f", providers: [.apt(["libfftw3-dev"])]),
        .systemLibrary(name: "CJack", pkgConfig: "jack", providers: [.apt(["libjack-jackd2-dev"])]),

        // The core: graph language, descriptors, registry, planner, runtime, events. No C libraries.
        .target(name: "SpeechGraphCore"),
        // Audio nodes on libsndfile and libsoxr: file.input, resample, downmix, taps, clips.
        // (clips writes each result's JSON Lines form beside its WAV: the event format of SpeechGraphCore.)
        .target(
            name: "SpeechGraphAudio",
            dependencies: ["SpeechGraphCore", "CSndFile", "CMpg123", "CSoxr"]),
        // Custom language models: the .lmspec language, template expansion, n-gram estimation, pronunciations.
        .target(name: "SpeechGraphLM", dependencies: ["SpeechGraphCore"]),
        // The Whisper engine: faster-whisper (PyPI) on CTranslate2 in a process of its own, shared by every graph in
        // the process; no C library.
        .target(name: "SpeechGraphWhisper", dependencies: ["SpeechGraphCore"]),
        // The recognizer node: PocketSphinx, and Whisper for final results (`engine: whisper`).
        .target(
            name: "SpeechGraphSphinx",
            dependencies: [
                "SpeechGraphCore", "SpeechGraphLM", "SpeechGraphWhisper", "SpeechGraphVAD", "CPocketSphinx",
            ]),
        // Sinks: console, jsonl, tsv, srt and vtt subtitles, the Wyoming transcript.
        .target(name: "SpeechGraphSinks", dependencies: ["SpeechGraphCore"]),
        // Live audio: the JACK client, jack.input, jack.output, taps.
        .target(name: "SpeechGraphJACK", dependencies: ["SpeechGraphCore", "CJack"]),
        // Voice activity detection on FFTW.
        .target(name: "SpeechGraphVAD", dependencies: ["SpeechGraphCore", "CFFTW"]),
        // The plugin ABI: one C header, speechgraph/plugin.h (installed by `make install`).
        .target(name: "CSpeechGraphPlugin"),
        // Names the plugin node a crash happened in: a per-thread mark around each call into a plugin.
        .target(name: "CPluginGuard"),
        // Plugin loading: search path, validation in a child process, cache, plugin node types.
        .target(
            name: "SpeechGraphPlugins",
            dependencies: ["SpeechGraphCore", "CSpeechGraphPlugin", "CPluginGuard"]),
        // For plugins in Swift: the exported ABI version (C) and the Swift layer over the ABI.
        .target(name: "SpeechGraphPluginABI", dependencies: ["CSpeechGraphPlugin"]),
        .target(name: "SpeechGraphPluginKit", dependencies: ["CSpeechGraphPlugin", "SpeechGraphPluginABI"]),
        // The example plugins.
        .target(name: "GatePlugin", dependencies: ["CSpeechGraphPlugin"], path: "Plugins/gate", publicHeadersPath: "."),
        .target(name: "MatchPlugin", dependencies: ["SpeechGraphPluginKit"], path: "Plugins/match"),
        // Every built-in node family, registered in one place.
        .target(
            name: "SpeechGraphNodes",
            dependencies: [
                "SpeechGraphCore", "SpeechGraphAudio", "SpeechGraphSphinx", "SpeechGraphLM", "SpeechGraphSinks",
                "SpeechGraphJACK", "SpeechGraphVAD", "SpeechGraphWeb",
            ]),
        // The `web` sink: a live captions page, the event stream (Server-Sent Events and WebSocket) and
        // transcript downloads, served on SwiftNIO's HTTP/1 and WebSocket modules.
        .target(
            name: "SpeechGraphWeb",
            dependencies: [
                "SpeechGraphCore", "SpeechGraphSinks",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOWebSocket", package: "swift-nio"),
            ]),
        // The Wyoming speech-to-text server (Home Assistant), on SwiftNIO: one graph per transcription.
        .target(
            name: "SpeechGraphWyoming",
            dependencies: [
                "SpeechGraphCore", "SpeechGraphSinks", "SpeechGraphSphinx",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // The library product apps depend on.
        .target(name: "SpeechGraph", dependencies: ["SpeechGraphNodes", "SpeechGraphPlugins"]),
        // The thin CLI.
        .executableTarget(
            name: "speechgraph",
            dependencies: [
                "SpeechGraph", "SpeechGraphWyoming", "SpeechGraphWhisper",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]),
        // Load figures for `make bench` (scripts/bench-streams.sh): not a product, nothing installs it.
        .executableTarget(name: "speechgraph-bench", dependencies: ["SpeechGraph", "CBenchGate"]),
        // The gate example compiled in, for the bench's plugin-against-built-in figure.
        .target(name: "CBenchGate", dependencies: ["CSpeechGraphPlugin"]),
        // The programs docs/api.md shows, as an app would write them: each depends on the SpeechGraph library
        // alone (not products: nothing installs them; names no app would take). APIExampleTests runs them.
        .executableTarget(name: "SpeechGraphExampleHello", dependencies: ["SpeechGraph"], path: "Examples/Hello"),
        .executableTarget(name: "SpeechGraphExampleSeven", dependencies: ["SpeechGraph"], path: "Examples/Seven"),
        .executableTarget(
            name: "SpeechGraphExampleDictation", dependencies: ["SpeechGraph"], path: "Examples/Dictation"),
        .executableTarget(
            name: "SpeechGraphExampleSpokenWord", dependencies: ["SpeechGraph"], path: "Examples/SpokenWord"),
        .executableTarget(
            name: "SpeechGraphExampleLiveTranscription", dependencies: ["SpeechGraph"],
            path: "Examples/LiveTranscription"),
        // The same two programs (their files linked), in the Swift 5 language mode: Apple's code builds in both.
        .executableTarget(
            name: "SpeechGraphExampleSpokenWord5", dependencies: ["SpeechGraph"], path: "Examples/Swift5/SpokenWord",
            swiftSettings: [.swiftLanguageMode(.v5)]),
        .executableTarget(
            name: "SpeechGraphExampleLiveTranscription5", dependencies: ["SpeechGraph"],
            path: "Examples/Swift5/LiveTranscription", swiftSettings: [.swiftLanguageMode(.v5)]),

        .testTarget(
            name: "SpeechGraphCoreTests", dependencies: ["SpeechGraphCore", "SpeechGraphTestSupport"],
            resources: [.copy("Golden")]),
        // Counts allocations on one thread (the JACK process thread); linked into the test binary only.
        .target(name: "CMallocCounter", path: "Tests/CMallocCounter"),
        .testTarget(
            name: "SpeechGraphJACKTests",
            dependencies: [
                "SpeechGraph", "SpeechGraphNodes", "SpeechGraphJACK", "SpeechGraphPlugins", "SpeechGraphTestSupport",
                "CMallocCounter",
            ]),
        .testTarget(name: "SpeechGraphLMTests", dependencies: ["SpeechGraphLM", "SpeechGraphTestSupport"]),
        .testTarget(
            name: "SpeechGraphVADTests",
            dependencies: ["SpeechGraphNodes", "SpeechGraphTestSupport", "CMallocCounter"]),
        // Helpers shared by the end-to-end tests: synthesised speech, processes, word error rate.
        .target(
            name: "SpeechGraphTestSupport", dependencies: ["SpeechGraphCore"], path: "Tests/SpeechGraphTestSupport"),
        .testTarget(
            name: "SpeechGraphNodesTests",
            dependencies: [
                "SpeechGraphNodes", "SpeechGraphWhisper", "SpeechGraphTestSupport", "CFFTW", "CJack",
                .product(name: "NIOEmbedded", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio"),
            ]),
        .testTarget(
            name: "speechgraphCLITests",
            dependencies: ["SpeechGraph", "SpeechGraphTestSupport", "SpeechGraphWyoming", "CSndFile"]),
    ],
    swiftLanguageModes: [.v6]
)

// `make fuzz` (SPEECHGRAPH_FUZZ=1): libFuzzer targets over the graph language and the audio readers. Built
// with -sanitize=fuzzer,address for every target (scripts/fuzz.sh); absent from every other build.
if ProcessInfo.processInfo.environment["SPEECHGRAPH_FUZZ"] == "1" {
    package.targets += [
        .target(name: "FuzzSupport", path: "Fuzz/Support"),
        .executableTarget(
            name: "fuzz-graph-parser", dependencies: ["SpeechGraph", "FuzzSupport"], path: "Fuzz/GraphParser"),
        .executableTarget(
            name: "fuzz-audio-input", dependencies: ["SpeechGraph", "FuzzSupport"], path: "Fuzz/AudioInput"),
    ]
}
