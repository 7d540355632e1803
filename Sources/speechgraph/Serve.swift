import ArgumentParser
import Dispatch
import Foundation
import SpeechGraph
import SpeechGraphWyoming
import Synchronization

extension SpeechgraphCommand {
    struct Serve: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Serve speech recognition to voice assistants: a Wyoming server (Home Assistant).",
            discussion: """
                Each transcription a client asks for runs in a graph of its own (graphs/wyoming.graph unless \
                --graph names another): the client's audio in, a vad that ends the command after its pause, a \
                recognizer, and the protocol's sink, which streams transcript chunks and sends the transcript as \
                soon as the command ends. A stream in which nobody speaks for 8 s gets an empty transcript then \
                (the vad's no-speech), and speech that goes on for 30 s is cut there (the recognizer's \
                max-utterance). The server listens on loopback unless the address says otherwise. \
                Ctrl-C, SIGTERM or SIGHUP stops taking connections, lets transcriptions in flight send their \
                transcript, then exits. See docs/wyoming.md (Home Assistant, systemd, haproxy).
                """)

        @Option(
            help: ArgumentHelp(
                "Where to listen: tcp://HOST:PORT (port 0: any free port, printed at start).", valueName: "uri"))
        var wyoming = "tcp://127.0.0.1:10300"
        @Option(
            help: ArgumentHelp(
                "The graph each transcription runs (default: graphs/wyoming.graph, built in).", valueName: "file"))
        var graph: String?
        @Option(
            name: .customLong("model"),
            help: ArgumentHelp(
                "Another model to offer, by name: a graph file (a domain language model, say); clients choose it "
                    + "with transcribe's 'name' (repeatable).", valueName: "name=file"))
        var models: [String] = []
        @Option(help: "The default model's name, as info lists it and clients choose it.") var name = "en-us"
        @Option(help: "The language of the models' speech (info and transcripts).") var language = "en"
        @Option(help: "Connections served at once; the next gets an error event and is closed.")
        var maxConnections = 16
        @Option(
            help: ArgumentHelp(
                "Decoders of each model loaded at start: that many clients at once never wait for a model to load "
                    + "(each holds its own copy of the model, about 90 MB). Between connections, this many are kept, "
                    + "or 4 if that is more.",
                valueName: "n"))
        var decoders = 1
        @Option(
            help: ArgumentHelp(
                "Close a connection that sends nothing for this long (also mid-stream), unless it waits for the "
                    + "transcript of audio it has ended (above 0, at most 86400).",
                valueName: "seconds"))
        var idleTimeout = 60.0
        @Flag(
            help: ArgumentHelp(
                "Favour each request's transcript_names and transcript_terms (the recognizer's phrases): a model "
                    + "built once per set of names, and answers that come later. Off: they are ignored."))
        var phrasesFromRequests = false
        @Flag(help: "Announce the server on the local network (_wyoming._tcp, through avahi-daemon).")
        var zeroconf = false
        @OptionGroup var plugins: PluginOptions

        func validate() throws {
            guard (1...4096).contains(maxConnections) else { throw ValidationError("--max-connections: 1 to 4096") }
            guard (1...256).contains(decoders) else { throw ValidationError("--decoders: 1 to 256") }
            // A client chooses a model by its name: one of no letters could not be told apart or typed.
            guard !name.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                throw ValidationError("--name: a name, not an empty one")
            }
            guard idleTimeout.isFinite && idleTimeout > 0 && idleTimeout <= 86400 else {
                throw ValidationError("--idle-timeout: seconds, above 0 and at most 86400")
            }
            guard Self.endpoint(wyoming) != nil else {
                throw ValidationError(
                    "--wyoming expects tcp://HOST:PORT with a port from 0 to 65535, got '\(wyoming)'")
            }
        }

        static func endpoint(_ uri: String) -> (host: String, port: Int)? {
            guard uri.hasPrefix("tcp://") else { return nil }
            let rest = uri.dropFirst(6)
            guard let colon = rest.lastIndex(of: ":"), let port = Int(rest[rest.index(after: colon)...]),
                (0...65535).contains(port)
            else { return nil }
            var host = String(rest[..<colon])
            if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
            return host.isEmpty ? nil : (host, port)
        }

        func run() throws {
            let registry = plugins.registry()
            let (host, port) = Self.endpoint(wyoming)!
            var offered: [WyomingModel] = []
            let sources =
                [(name, graph)]
                + models.map { m -> (String, String?) in
                    let parts = m.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                    guard parts.count == 2, !parts[0].trimmingCharacters(in: .whitespaces).isEmpty, !parts[1].isEmpty
                    else {
                        return (m, nil)
                    }
                    return (String(parts[0]), String(parts[1]))
                }
            for (index, (modelName, file)) in sources.enumerated() {
                if file == nil && modelName != name {
                    printError("speechgraph: error: --model expects name=file, got '\(modelName)'")
                    throw Reported(code: Exit.usage)
                }
                // A client chooses by name: two of one name, and the second could never be chosen.
                if sources[..<index].contains(where: { $0.0 == modelName }) {
                    printError(
                        "speechgraph: error: two models named '\(modelName)' (--name is the default graph's, "
                            + "\(name) unless given; each --model needs a name of its own)")
                    throw Reported(code: Exit.usage)
                }
                do {
                    let spec =
                        try file.map { try GraphParser.parse(contentsOf: $0) }
                        ?? GraphParser.parse(WyomingServer.defaultGraph, file: "wyoming.graph (built in)")
                    offered.append(
                        try WyomingModel(
                            name: modelName,
                            description: file.map { "speechgraph graph \($0)" }
                                ?? "PocketSphinx US English (Debian's pocketsphinx-en-us, "
                                + "BSD-2-Clause, CMU and Alpha Cephei)",
                            languages: [language], attribution: ("CMU Sphinx", "https://cmusphinx.github.io"),
                            version: file == nil ? "0.8+5prealpha" : nil, graph: spec, registry: registry))
                } catch let error as GraphError {
                    printGraphErrors(error, in: file ?? "the built-in graph")
                    throw Reported(code: Exit.usage)
                } catch let error as SpeechGraphError {
                    // A resource the graph names (a model, a dictionary) that is missing: a runtime failure,
                    // as for run.
                    reportFailure(error, status: nil)
                    throw Reported(code: Exit.failure)
                }
            }
            var configuration = WyomingServer.Configuration(models: offered, registry: registry)
            configuration.host = host
            configuration.port = port
            configuration.maxConnections = maxConnections
            configuration.decoders = decoders
            configuration.phrasesFromRequests = phrasesFromRequests
            configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
            configuration.version = speechgraphVersion
            configuration.log = { printError($0) }
            // Each transcription allocates its buffers anew, on threads of its own: glibc would keep what they free
            // in one heap per thread (up to 8 per core) and raise its mmap threshold after the first large free, so
            // that a long-running server only ever grows. Two heaps, a fixed threshold (large blocks go back to
            // the system when freed) and a trim after each transcription keep it flat.
            _ = glibcMallopt(-3, 128 * 1024)  // M_MMAP_THRESHOLD
            _ = glibcMallopt(-8, 2)  // M_ARENA_MAX
            configuration.afterTranscription = { _ = glibcMallocTrim(0) }
            let server = WyomingServer(configuration)
            do {
                try server.warmUp()
            } catch {
                printError("speechgraph: error: cannot load the model: \(error)")
                throw Reported(code: Exit.failure)
            }
            if !["127.0.0.1", "::1", "localhost"].contains(host) {
                printError(
                    "speechgraph: warning: listening on \(host), not loopback: anyone who can reach it can send "
                        + "audio and read transcripts")
            }
            let outcome = Mutex<Int32?>(nil)
            let done = DispatchSemaphore(value: 0)
            let stopRequested = Atomic<Bool>(false)
            // The avahi-publish child (--zeroconf): ended on the way out, however the server stops.
            let publisher = Mutex<Process?>(nil)
            // A closed terminal (SIGHUP) drains as SIGTERM does; a second one stops at once, as with `run`.
            var signalSources = SignalHandling.handle([SIGINT, SIGTERM, SIGHUP]) { sig in
                if stopRequested.exchange(true, ordering: .relaxed) {
                    publisher.withLock { $0?.terminate() }
                    SignalHandling.stopNow(sig)
                }
                printError("speechgraph: stopping (transcriptions in flight finish; again to stop at once)")
                server.drain()
            }
            signalSources += SignalHandling.handle([SIGQUIT]) { _ in
                publisher.withLock { $0?.terminate() }
                SignalHandling.quit()
            }
            signal(SIGPIPE, SIG_IGN)
            let idle = server.decoders.idleCount
            let loaded = idle == 1 ? "1 decoder loaded" : "\(idle) decoders loaded"
            let zeroconfName = "speechgraph on \(ProcessInfo.processInfo.hostName)"
            let announce = zeroconf
            Task {
                do {
                    let bound = try await server.start()
                    printError(
                        "speechgraph: Wyoming server on tcp://\(host.contains(":") ? "[\(host)]" : host):\(bound) "
                            + "(models: \(offered.map(\.name).joined(separator: ", ")); \(loaded)); "
                            + "Ctrl-C or SIGTERM stops it")
                    let announced = announce ? Zeroconf.announce(name: zeroconfName, port: bound) : nil
                    publisher.withLock { $0 = announced }
                    try await server.wait()
                    publisher.withLock { $0?.terminate() }
                    outcome.withLock { $0 = Exit.ok }
                } catch {
                    printError(
                        "speechgraph: error: cannot listen on \(host):\(port): \(WyomingServer.listenFailure(error))")
                    outcome.withLock { $0 = Exit.failure }
                }
                done.signal()
            }
            done.wait()
            _ = signalSources
            let code = outcome.withLock { $0 } ?? Exit.failure
            if code != Exit.ok { throw Reported(code: code) }
        }
    }
}

/// `--zeroconf`: the server announced as `_wyoming._tcp` by avahi-daemon (through avahi-publish, Debian's
/// avahi-utils), for as long as it runs.
enum Zeroconf {
    static func announce(name: String, port: Int) -> Process? {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/sbin/avahi-daemon")
        check.arguments = ["--check"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else {
            printError(
                "speechgraph: zeroconf: avahi-daemon is not installed (Debian: avahi-daemon avahi-utils): not announced"
            )
            return nil
        }
        check.waitUntilExit()
        guard check.terminationStatus == 0 else {
            printError(
                "speechgraph: zeroconf: avahi-daemon is not running (systemctl start avahi-daemon): not announced")
            return nil
        }
        let publish = Process()
        publish.executableURL = URL(fileURLWithPath: "/usr/bin/avahi-publish")
        publish.arguments = ["-s", name, "_wyoming._tcp", String(port)]
        publish.standardOutput = FileHandle.nullDevice
        do {
            try publish.run()
        } catch {
            printError("speechgraph: zeroconf: avahi-publish is not installed (Debian: avahi-utils): not announced")
            return nil
        }
        printError("speechgraph: zeroconf: announced as '\(name)' (_wyoming._tcp, port \(port))")
        return publish
    }
}

/// glibc's mallopt (malloc.h, which the Glibc module does not export).
@_silgen_name("mallopt") private func glibcMallopt(_ parameter: Int32, _ value: Int32) -> Int32

/// glibc's malloc_trim: gives the free memory at the top of each heap back to the system.
@_silgen_name("malloc_trim") private func glibcMallocTrim(_ pad: Int) -> Int32
