import Foundation
import SpeechGraphCore
import Synchronization

/// What one request to the engine asks for.
public struct WhisperOptions: Sendable, Hashable {
    /// Beam search width (faster-whisper's beam_size; 5 as its default).
    public var beam = 5
    /// Word timestamps and probabilities (faster-whisper's word_timestamps).
    public var words = true
    /// Text Whisper reads as what came before (the initial prompt): vocabulary to favour.
    public var prompt: String?
    /// Words to favour (faster-whisper's hotwords).
    public var hotwords: String?
    /// The language spoken (ISO code); `nil` for an English-only model, or to let a multilingual one detect it.
    public var language: String?
    /// A stream's name: Whisper reads what it wrote for the stream's earlier requests (the engine keeps their text)
    /// as what came before, as faster-whisper does from one 30 s window of a recording to the next; `nil`: each
    /// request on its own.
    public var context: String?
    /// The encoder's window (seconds) for audio at least 10 s shorter: below Whisper's own 30 s, its work shrinks
    /// with it; a doubtful reading is read again in the 30 s window (`WhisperWorkerScript`). 30: always Whisper's.
    public var encoderWindow = 30.0

    public init(
        beam: Int = 5, words: Bool = true, prompt: String? = nil, hotwords: String? = nil, language: String? = nil
    ) {
        (self.beam, self.words, self.prompt, self.hotwords, self.language) = (beam, words, prompt, hotwords, language)
    }
}

/// Whisper's reading of a stretch of audio: its segments, times in seconds from the audio's start.
public struct WhisperTranscript: Sendable {
    public struct WordReading: Sendable, Hashable {
        public var start: Double
        public var end: Double
        /// As Whisper writes it: with its leading space, capitals and punctuation.
        public var text: String
        public var probability: Double
    }
    public struct Segment: Sendable {
        public var start: Double
        public var end: Double
        public var text: String
        public var averageLogProbability: Double
        public var noSpeechProbability: Double
        public var compressionRatio: Double
        public var tokens: Int
        public var words: [WordReading]
    }
    public var segments: [Segment]
    /// CPU seconds the engine's process spent on it.
    public var cpuSeconds: Double
    /// How much of its context's earlier text (characters) Whisper read before it (`WhisperOptions.context`).
    public var contextCharacters = 0
    /// The encoder window (seconds) its text was read in, and whether a shorter one's reading was read again in
    /// the 30 s window (`WhisperOptions.encoderWindow`).
    public var window = 30.0
    public var redecoded = false

    /// The segments' text, each trimmed, joined by spaces.
    public var text: String {
        segments.map { $0.text.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}

/// The engine's process (faster-whisper on CTranslate2, `WhisperWorkerScript`): one per model and setting in a
/// process, shared by every graph in it (``shared(model:compute:threads:python:)``), so memory does not grow by a
/// model per stream. It decodes one request at a time, in the order they came; a request never waits on its
/// sender's thread for another's audio to be written (a writer thread does that). A process that exits or stops
/// answering fails every request it holds, with one error that says so; the next graph starts a new one.
/// Thread-safe.
public final class WhisperWorker: @unchecked Sendable {
    // Unchecked: `process` (Foundation's, not Sendable) is only read (its state, waitUntilExit); the mutable state
    // is behind `state`'s lock.
    public typealias Completion = @Sendable (Result<WhisperTranscript, SpeechGraphError>) -> Void

    /// What names a worker: a graph with the same model and settings shares it.
    public struct Key: Sendable, Hashable {
        public var model: String
        public var compute: String
        public var threads: Int
        public var python: String
    }

    public let key: Key
    public let pid: Int32
    /// CPU seconds the model's load took in the process.
    public let loadSeconds: Double
    private let socket: Int32
    private let process: Process
    private struct State {
        var next = 1
        var waiting: [Int: Completion] = [:]
        /// Each waiting request's allowance (seconds: a minute plus ten times its audio's duration), and when the
        /// process last made progress (an answer, or a request into an empty queue): the watchdog's clock.
        var allowance: [Int: Double] = [:]
        var progress = 0.0
        /// Set once the process is gone or failed: every later request fails with it.
        var failure: SpeechGraphError?
        /// The process's last lines on standard error, for the error that says why it ended.
        var log: [String] = []
    }
    /// The state, in a box the worker's threads share from its start.
    private final class Box: Sendable {
        let state = Mutex(State())
    }
    private let box: Box
    /// Requests are written in order, on this queue, never on the caller's thread.
    private let writer = DispatchQueue(label: "speechgraph.whisper.writer")

    private static let workers = Mutex<[Key: WhisperWorker]>([:])

    /// The process's worker for this model and settings, started (the model loaded) on first use.
    public static func shared(model: String, compute: String = "int8", threads: Int = 1, python: String) throws
        -> WhisperWorker
    {
        let key = Key(model: model, compute: compute, threads: threads, python: python)
        // One start at a time: two graphs asking at once share one load.
        startLock.lock()
        defer { startLock.unlock() }
        if let running = workers.withLock({ $0[key] }), running.isAlive { return running }
        let worker = try WhisperWorker(key)
        workers.withLock { $0[key] = worker }
        return worker
    }
    private static let startLock = NSLock()

    /// The process IDs of the shared engines running now, one per model and setting in use: what memory holds of
    /// Whisper in this process is one model for each.
    public static var sharedProcessIDs: [Int32] {
        workers.withLock { running in running.values.filter(\.isAlive).map(\.pid) }
    }

    /// Ends every shared engine's process and waits for each to exit (at most `seconds`, then kills it), at the end
    /// of a command: the engine's CPU is then counted with the command's (`time speechgraph transcribe ...`: a
    /// process's children count once it has waited for them), and none outlives it.
    public static func stopShared(waiting seconds: Double = 5) {
        let all = workers.withLock { running -> [WhisperWorker] in
            defer { running.removeAll() }
            return Array(running.values)
        }
        for worker in all { worker.stop(waiting: seconds) }
    }

    /// Closes the engine's input (it exits at its end) and waits for the process, killing it after `seconds`.
    public func stop(waiting seconds: Double = 5) {
        shutdown(socket, Int32(SHUT_WR))
        reap(within: seconds)
    }

    /// Waits for the process to exit, killing it after `seconds`.
    private func reap(within seconds: Double) {
        let deadline = monotonicSeconds() + seconds
        while process.isRunning && monotonicSeconds() < deadline { usleep(10_000) }
        if process.isRunning { kill(pid, SIGKILL) }
        process.waitUntilExit()
    }

    /// glibc's malloc for the engine's process: each decoding allocates and frees buffers of megabytes (the 30 s
    /// window's features and spectrum), which glibc maps and unmaps each time above its default threshold (128 KB,
    /// raised as it goes), so every call faulted its pages in again: over a quarter of the engine's CPU went to
    /// the kernel. Kept on the heap instead, up to 32 MB an allocation, and not given back below 256 MB free:
    /// measured on long_clean (release, alternating runs), `transcribe --engine whisper` 37.1 and 35.5 -> 33.3 and
    /// 34.8 s of CPU, `--window packed` median of 3 11.9 -> 11.4 s, the same text. The user's own tunables go
    /// after these (a later setting of the same one wins).
    static func tunables(after own: String?) -> String {
        let ours = "glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=268435456"
        guard let own, !own.isEmpty else { return ours }
        return ours + ":" + own
    }

    /// A worker of its own, shared with nobody (a test that stops it).
    public static func unshared(model: String, compute: String = "int8", threads: Int = 1, python: String) throws
        -> WhisperWorker
    {
        try WhisperWorker(Key(model: model, compute: compute, threads: threads, python: python))
    }

    /// Whether the process still runs and has not failed.
    public var isAlive: Bool { box.state.withLock { $0.failure == nil } }

    private init(_ key: Key) throws {
        self.key = key
        let box = Box()
        self.box = box
        var fds: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw SpeechGraphError("the whisper engine: socketpair: \(String(cString: strerror(errno)))")
        }
        let child = FileHandle(fileDescriptor: fds[1], closeOnDealloc: true)
        let errors = Pipe()
        let p = Process()
        p.executableURL = URL(fileURLWithPath: key.python)
        p.arguments = ["-c", WhisperWorkerScript.source, key.model, key.compute, String(key.threads)]
        p.standardInput = child
        p.standardOutput = child
        p.standardError = errors
        var environment = ProcessInfo.processInfo.environment
        environment["HF_HUB_OFFLINE"] = "1"
        environment["PYTHONUNBUFFERED"] = "1"
        environment["GLIBC_TUNABLES"] = Self.tunables(after: environment["GLIBC_TUNABLES"])
        p.environment = environment
        do { try p.run() } catch {
            close(fds[0])
            throw SpeechGraphError("the whisper engine could not start \(key.python): \(error.localizedDescription)")
        }
        try? child.close()
        socket = fds[0]
        process = p
        pid = p.processIdentifier
        // Its log: kept (the last lines) for the error that says why it ended.
        let log = errors.fileHandleForReading
        Thread.detachNewThread {
            var pending = Data()
            while true {
                let chunk = log.availableData
                if chunk.isEmpty { break }
                pending.append(chunk)
                while let newline = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                    pending.removeSubrange(pending.startIndex...newline)
                    box.state.withLock {
                        $0.log.append(line)
                        if $0.log.count > 12 { $0.log.removeFirst() }
                    }
                }
            }
        }
        // Ready, or why not: the model loads (a second or so for tiny.en).
        let lines = LineReader(fd: socket)
        guard let first = lines.next(timeout: 300) else {
            let why = Self.ended(p, log: box.state.withLock { $0.log })
            p.terminate()
            close(socket)
            throw SpeechGraphError("the whisper engine did not load \(key.model): \(why)", parameter: "model")
        }
        let ready = (try? JSONSerialization.jsonObject(with: Data(first.utf8))) as? [String: Any]
        guard ready?["ready"] as? Bool == true else {
            let message = ready?["error"] as? String ?? first
            p.waitUntilExit()
            close(socket)
            throw SpeechGraphError("the whisper engine could not load \(key.model): \(message)", parameter: "model")
        }
        loadSeconds = ready?["load_s"] as? Double ?? 0
        // Answers, in order.
        nonisolated(unsafe) let reader = lines
        Thread.detachNewThread { [self] in readAnswers(reader) }
    }

    deinit {
        close(socket)
    }

    /// Why the process is gone: its exit status or signal, and its last words.
    private static func ended(_ p: Process, log: [String]) -> String {
        var why = "it did not answer"
        if !p.isRunning {
            why =
                p.terminationReason == .uncaughtSignal
                ? "it was killed by signal \(p.terminationStatus)" : "it exited with status \(p.terminationStatus)"
        }
        let last = log.suffix(3).joined(separator: " | ")
        return last.isEmpty ? why : "\(why) (\(last))"
    }

    private func readAnswers(_ lines: LineReader) {
        while true {
            guard let line = lines.next(timeout: 1) else {
                if lines.ended { break }
                // The watchdog: the oldest request (they are decoded in order) has had its allowance since the
                // process last made progress.
                let overdue = box.state.withLock { s -> Double? in
                    guard let oldest = s.waiting.keys.min(), let allowed = s.allowance[oldest] else { return nil }
                    return monotonicSeconds() - s.progress > allowed ? allowed : nil
                }
                if let overdue {
                    fail(
                        SpeechGraphError(
                            "the whisper engine (pid \(pid)) did not answer in \(Int(overdue)) s: stopped it"))
                }
                continue
            }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any],
                let id = object["id"] as? Int
            else { continue }
            let completion = box.state.withLock { s -> Completion? in
                s.progress = monotonicSeconds()
                s.allowance[id] = nil
                return s.waiting.removeValue(forKey: id)
            }
            guard let completion else { continue }
            if let error = object["error"] as? String {
                completion(.failure(SpeechGraphError("the whisper engine failed: \(error)")))
            } else {
                completion(.success(Self.transcript(object)))
            }
        }
        // The process closed its end: it exited, or was killed (one that lives on without its socket is stopped).
        reap(within: 5)
        fail(SpeechGraphError("the whisper engine (pid \(pid)) ended: " + Self.ended(process, log: logLines)))
    }

    private var logLines: [String] { box.state.withLock { $0.log } }

    /// Fails every request waiting, and all later ones, with `error`; stops the process.
    private func fail(_ error: SpeechGraphError) {
        let waiting = box.state.withLock { s -> [Completion] in
            if s.failure == nil { s.failure = error }
            defer {
                s.waiting.removeAll()
                s.allowance.removeAll()
            }
            return Array(s.waiting.values)
        }
        Self.workers.withLock { if $0[key] === self { $0[key] = nil } }  // the next graph starts a new one
        if process.isRunning { kill(pid, SIGKILL) }
        for completion in waiting { completion(.failure(box.state.withLock { $0.failure } ?? error)) }
    }

    static func transcript(_ object: [String: Any]) -> WhisperTranscript {
        let segments = (object["segments"] as? [[String: Any]] ?? []).map { s in
            WhisperTranscript.Segment(
                start: s["start"] as? Double ?? 0, end: s["end"] as? Double ?? 0, text: s["text"] as? String ?? "",
                averageLogProbability: s["avg_logprob"] as? Double ?? 0,
                noSpeechProbability: s["no_speech_prob"] as? Double ?? 0,
                compressionRatio: s["compression_ratio"] as? Double ?? 0, tokens: s["tokens"] as? Int ?? 0,
                words: (s["words"] as? [[String: Any]] ?? []).map { w in
                    WhisperTranscript.WordReading(
                        start: w["start"] as? Double ?? 0, end: w["end"] as? Double ?? 0,
                        text: w["word"] as? String ?? "", probability: w["probability"] as? Double ?? 0)
                })
        }
        var transcript = WhisperTranscript(segments: segments, cpuSeconds: object["cpu_s"] as? Double ?? 0)
        transcript.contextCharacters = object["context_chars"] as? Int ?? 0
        transcript.window = object["window"] as? Double ?? 30
        transcript.redecoded = object["redecoded"] as? Bool ?? false
        return transcript
    }

    /// Queues `samples` (16-bit, 16 kHz) for decoding; `completion` is called on the engine's reader thread with
    /// its transcript, or with the error that ended the process.
    public func submit(_ samples: [Int16], options: WhisperOptions, completion: @escaping Completion) {
        let id = box.state.withLock { s -> Int? in
            guard s.failure == nil else { return nil }
            defer { s.next += 1 }
            if s.waiting.isEmpty { s.progress = monotonicSeconds() }
            s.waiting[s.next] = completion
            s.allowance[s.next] = Self.patience ?? 60 + 10 * Double(samples.count) / 16000
            return s.next
        }
        guard let id else {
            completion(.failure(box.state.withLock { $0.failure } ?? SpeechGraphError("the whisper engine ended")))
            return
        }
        var header: [String: Any] = ["id": id, "samples": samples.count, "beam": options.beam, "words": options.words]
        if let prompt = options.prompt { header["prompt"] = prompt }
        if let hotwords = options.hotwords { header["hotwords"] = hotwords }
        if let language = options.language { header["language"] = language }
        if let context = options.context { header["context"] = context }
        if options.encoderWindow < 30 { header["window"] = options.encoderWindow }
        var data = (try? JSONSerialization.data(withJSONObject: header)) ?? Data()
        data.append(10)
        samples.withUnsafeBytes { data.append(contentsOf: $0) }  // little-endian, as Linux's machines are
        let socket = self.socket
        // A process that stops reading has closed its end (it exited, or was killed): the reader sees that end and
        // says why; one that still runs but does not answer is stopped by the watchdog.
        writer.async { [data] in
            _ = data.withUnsafeBytes { raw -> Bool in
                var done = 0
                while done < raw.count {
                    let n = send(socket, raw.baseAddress! + done, raw.count - done, Int32(MSG_NOSIGNAL))
                    if n < 0 && errno == EINTR { continue }
                    if n <= 0 { return false }
                    done += n
                }
                return true
            }
        }
    }

    /// How long a request may wait for its answer, in seconds, whatever its audio: `$SPEECHGRAPH_WHISPER_PATIENCE`
    /// (read once; for a slow machine, or a test that hangs the engine on purpose); nil: a minute plus ten times the
    /// audio's duration.
    static let patience = ProcessInfo.processInfo.environment["SPEECHGRAPH_WHISPER_PATIENCE"].flatMap(Double.init)
        .flatMap { $0 > 0 ? $0 : nil }

    /// Decodes `samples` and waits for the transcript. A process that takes longer than a minute plus ten times the
    /// audio's duration since it last answered hangs: it is stopped, and every request it holds fails.
    public func transcribe(_ samples: [Int16], options: WhisperOptions) throws -> WhisperTranscript {
        let answer = Mutex<Result<WhisperTranscript, SpeechGraphError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        submit(samples, options: options) { result in
            answer.withLock { $0 = result }
            done.signal()
        }
        done.wait()
        return try answer.withLock { $0! }.get()
    }
}

/// Lines from a socket, read with poll(2): `next(timeout:)` gives the next one, `nil` at its end or after the
/// timeout.
final class LineReader {
    private let fd: Int32
    /// The other end closed the socket (or it failed): no more lines.
    private(set) var ended = false
    private var buffer: [UInt8] = []
    private var chunk = [UInt8](repeating: 0, count: 65536)

    init(fd: Int32) { self.fd = fd }

    func next(timeout: Double?) -> String? {
        let deadline = timeout.map { monotonicSeconds() + $0 }
        while true {
            if let newline = buffer.firstIndex(of: 10) {
                let line = String(decoding: buffer[..<newline], as: UTF8.self)
                buffer.removeSubrange(...newline)
                return line
            }
            var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let wait = deadline.map { Int32(max(0, ($0 - monotonicSeconds()) * 1000)) } ?? -1
            let ready = poll(&p, 1, wait)
            if ready < 0 && errno == EINTR { continue }
            if ready == 0 { return nil }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 {
                ended = true
                return nil
            }
            buffer.append(contentsOf: chunk[0..<n])
        }
    }
}
