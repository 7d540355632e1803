// speechgraph-bench: load figures for `make bench` (issue 10), one 'name value unit' a line on standard
// output, progress on standard error.
//
//   speechgraph-bench realtime-cpu FILE [--seconds S] [--runs R] [--final-pass [--phases N]]
//       The CPU (user + system, getrusage) of one graph, push.input -> vad -> recognizer (streaming,
//       progressive results), fed FILE in 10 ms blocks on the wall clock as JACK would deliver them,
//       against the same graph fed as fast as it takes the audio, just before and just after (their mean: the
//       machine's speed drifts). Each run is a fresh child process; the CPU counted is the run's (from start
//       to end), not the model loading before it. Also the context switches of each (medians). With
//       SPEECHGRAPH_BENCH_THREADS set, each child says on standard error how its CPU divides among its threads.
//   speechgraph-bench streams FILE [--seconds S] [--max N] [--counts 1,2,4,...] [--variants plain,final-pass]
//                                  [--limit MS] [--margin MS] [--phases N]
//       N graphs in one process, each fed FILE in real time (10 ms blocks), for N = 1, 2, 4, 6, ... up to
//       --max; per N the latency from the wall time the sample at a final result's range end was pushed to
//       the wall time the result reached a sink on the graph thread, p50 and p95 over every final result of
//       every stream. Figures: the most streams with p95 <= --limit (400 ms), and the most with p95 at most
//       --margin (100 ms) above one stream's (what the load adds); the sweep stops at the first N past the
//       second, or that drops audio. The streams play the file from staggered starting points (the
//       quietest 10 ms near i/N of the way through, wrapping round), so utterance ends do not coincide. The
//       graphs share one ComputeGate, as a server's graphs would (one decoding slot per core).
//       With and without `final-pass: true` and `phases: N` (the shipped live graph's settings; --phases,
//       default 1). Other processes' CPU use
//       during each run is reported on standard error (the bench machine is shared).
//
//   speechgraph-bench idle-cost
//       What an idle spell costs this machine, apart from speechgraph: the same fixed work (reading a 16 MB working
//       set; arithmetic alone) on the thread's CPU clock, once every 100 ms against back to back (IdleCost.swift).
//
//   speechgraph-bench plugin-gate PLUGIN
//       The gate example's cost per 256-frame block loaded from PLUGIN against the same source built in
//       (issue 12).
//
// --seconds S uses the first S seconds of FILE (default: all of it). Hidden modes `child-cpu` and
// `child-streams` are the child processes.

import Foundation
import SpeechGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

// MARK: - Clocks

func monotonic() -> Double { seconds(on: CLOCK_MONOTONIC) }

/// What `clock` reads, in seconds.
func seconds(on clock: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(clock, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// Sleeps until the monotonic clock reads `deadline`; returns at once when it has passed.
func sleep(until deadline: Double) {
    var ts = timespec(tv_sec: Int(deadline), tv_nsec: Int((deadline - Double(Int(deadline))) * 1e9))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Busy and total jiffies of the whole machine, from /proc/stat.
func machineJiffies() -> (busy: Double, total: Double) {
    guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8),
        let line = text.split(separator: "\n").first
    else { return (0, 0) }
    let v = line.split(separator: " ").dropFirst().prefix(8).compactMap { Double($0) }
    guard v.count == 8 else { return (0, 0) }
    return (v.reduce(0, +) - v[3] - v[4], v.reduce(0, +))
}

/// The cores other processes kept busy since `start`, on average: the machine's busy cores less this
/// process's `cpu` seconds over `wall` seconds.
func othersCores(since start: (busy: Double, total: Double), cpu: Double, wall: Double) -> Double {
    let now = machineJiffies()
    let cores = Double(ProcessInfo.processInfo.activeProcessorCount)
    let busy = (now.busy - start.busy) / max(now.total - start.total, 1) * cores
    return max(0, busy - cpu / wall)
}

/// The most memory this process has held, in MB.
func maxResidentMB() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_maxrss) / 1024
}

/// Context switches of this process, every thread: voluntary (a thread went to sleep) and involuntary.
func contextSwitches() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    return Double(usage.ru_nvcsw + usage.ru_nivcsw)
}

/// CPU seconds (user + system) of this process, every thread.
func processCPU() -> Double {
    var usage = rusage()
    getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
    func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

func note(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}

func fail(_ text: String) -> Never {
    note("speechgraph-bench: error: \(text)")
    exit(2)
}

func percentile(_ values: [Double], _ p: Double) -> Double {
    guard !values.isEmpty else { return .nan }
    let v = values.sorted()
    let k = Double(v.count - 1) * p
    let f = Int(k)
    return v[f] + (v[min(f + 1, v.count - 1)] - v[f]) * (k - Double(f))
}

func median(_ values: [Double]) -> Double { percentile(values, 0.5) }

// MARK: - The graph

/// A sink that notes, on the graph thread, when each final result arrives: the synchronous way to see
/// events (an `events(of:)` stream is read by a task, which waits for a thread of the cooperative pool).
final class FinalsProbe: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "bench.finals", summary: "Notes when each final result arrives (speechgraph-bench).",
        category: .sink,
        ports: [.eventInput("in", accepts: .only([.result, .speechEnded]), doc: "Result and speechEnded events.")],
        parameters: [])
    static let type = NodeType(descriptor, make: { _ in FinalsProbe() })

    struct Final {
        var arrival: Double
        var range: TimeRange
    }

    private(set) var finals: [Final] = []
    /// When each speechEnded arrived, by its time on the audio clock: where the vad's share of the latency
    /// ends and the recognizer's begins.
    private(set) var speechEnds: [Double: Double] = [:]

    init() { finals.reserveCapacity(1024) }

    func handle(_ event: GraphEvent, port: Int, output: NodeOutput) throws {
        switch event {
        case .result(let t) where t.isFinal: finals.append(Final(arrival: monotonic(), range: t.range))
        case .speechEnded(_, let time): speechEnds[time] = monotonic()
        default: break
        }
    }
}

let blockFrames = 160
let sampleRate = 16000

func graphText(finalPass: Bool) -> String {
    """
    node mic   = push.input { rate: 16 kHz, block: \(blockFrames), buffer: 10 s }
    node vad   = vad
    node asr   = recognizer { mode: streaming\(finalPass ? ", final-pass: true, phases: \(phases)" : "") }
    node probe = bench.finals
    mic.out    -> vad.in
    vad.out    -> asr.in
    vad.events -> probe
    vad.events -> asr.control
    asr        -> probe
    """
}

let registry: NodeRegistry = {
    var r = BuiltinNodes.registry()
    try! r.register(FinalsProbe.type)
    return r
}()

func makePlan(finalPass: Bool) -> GraphPlan {
    do {
        let spec = try GraphParser.parse(graphText(finalPass: finalPass), file: "<bench>")
        return try GraphPlanner(registry: registry).plan(spec)
    } catch let error as GraphError {
        fail(error.diagnostics.map(\.description).joined(separator: "\n"))
    } catch {
        fail("\(error)")
    }
}

/// The first `seconds` of a 16 kHz mono file.
func loadAudio(_ path: String, seconds: Double?) -> [Float] {
    do {
        let file = try AudioFile(path: path)
        guard file.sampleRate == sampleRate, file.channelCount == 1 else {
            fail("\(path): expected 16 kHz mono, found \(file.sampleRate) Hz, \(file.channelCount) channels")
        }
        var frames = Int(file.frameCount)
        if let seconds { frames = min(frames, Int(seconds * Double(sampleRate))) }
        var samples = [Float](repeating: 0, count: frames)
        let read = try samples.withUnsafeMutableBufferPointer { try file.read(into: $0.baseAddress!, frames: frames) }
        return Array(samples[0..<read])
    } catch {
        fail("\(path): \(error)")
    }
}

/// Where stream `index` of `count` starts playing the audio: the quietest 10 ms within 2 s of
/// index/count of the way through (0 for the first).
func startFrame(_ audio: [Float], index: Int, count: Int) -> Int {
    guard index > 0 else { return 0 }
    let target = audio.count * index / count
    let window = 2 * sampleRate
    var best = target
    var bestEnergy = Float.infinity
    var b = max(0, target - window) / blockFrames * blockFrames
    while b + blockFrames <= min(audio.count, target + window) {
        var e: Float = 0
        for i in b..<(b + blockFrames) { e += audio[i] * audio[i] }
        if e < bestEnergy { (best, bestEnergy) = (b, e) }
        b += blockFrames
    }
    return best
}

/// One graph and the thread that feeds it.
final class Stream: @unchecked Sendable {
    // @unchecked: `pushedAt` is written by the feeder thread only, and read after `fed` has been waited on.
    let graph: RunningGraph
    let pusher: AudioPusher
    let audio: [Float]
    let offset: Int
    let blocks: Int
    var pushedAt: [Double]
    var endedAt = 0.0
    let fed = DispatchSemaphore(value: 0)

    init(plan: GraphPlan, audio: [Float], offset: Int, gate: ComputeGate? = nil) throws {
        graph = try RunningGraph(
            plan: plan, registry: registry, resources: GraphResources(providing: gate.map { [$0] } ?? []))
        guard let pusher = graph.input(named: "mic") else { fail("no push.input node 'mic'") }
        self.pusher = pusher
        self.audio = audio
        self.offset = offset
        blocks = (audio.count + blockFrames - 1) / blockFrames
        pushedAt = [Double](repeating: 0, count: blocks)
    }

    /// Feeds the audio on a thread of its own: block k (10 ms) is pushed once its last sample is due, at
    /// `start` plus its end on the audio clock (a feeder that falls behind catches up); unpaced, as fast
    /// as the graph takes it.
    func feed(start: Double, paced: Bool) {
        let thread = Thread { [self] in
            var scratch = [Float](repeating: 0, count: blockFrames)
            for k in 0..<blocks {
                let first = k * blockFrames
                let n = min(blockFrames, audio.count - first)
                for i in 0..<n { scratch[i] = audio[(offset + first + i) % audio.count] }
                if paced { sleep(until: start + Double(first + n) / Double(sampleRate)) }
                scratch.withUnsafeBufferPointer {
                    _ = pusher.write(UnsafeBufferPointer(rebasing: $0[0..<n]), waitForRoom: !paced)
                }
                pushedAt[k] = monotonic()
            }
            endedAt = monotonic()
            pusher.end()
            fed.signal()
        }
        thread.name = "bench feeder"
        thread.start()
    }

    var probe: FinalsProbe {
        guard let p = graph.node(named: "probe") as? FinalsProbe else { fail("no probe node") }
        return p
    }
}

// MARK: - Child processes

/// `child-cpu realtime|offline FILE [--seconds S] [--final-pass]`: one stream; prints `cpu`, `wall`, `finals`,
/// `switches` (context switches).
func childCPU(paced: Bool, path: String, seconds: Double?, finalPass: Bool) throws {
    let audio = loadAudio(path, seconds: seconds)
    let stream = try Stream(plan: makePlan(finalPass: finalPass), audio: audio, offset: 0)
    let monitor = ProcessInfo.processInfo.environment["SPEECHGRAPH_BENCH_THREADS"] != nil ? ThreadMonitor() : nil
    let cpu0 = processCPU()
    let switches0 = contextSwitches()
    let wall0 = monotonic()
    let machine0 = machineJiffies()
    stream.graph.start()
    stream.feed(start: monotonic() + 0.05, paced: paced)
    stream.fed.wait()
    try stream.graph.wait()
    let cpu = processCPU() - cpu0
    let wall = monotonic() - wall0
    print("cpu \(cpu)")
    print("wall \(wall)")
    print("others \(othersCores(since: machine0, cpu: cpu, wall: wall))")
    print("finals \(stream.probe.finals.count)")
    print("dropped \(stream.pusher.droppedFrames)")
    print("switches \(contextSwitches() - switches0)")
    monitor?.report()
}

/// With SPEECHGRAPH_BENCH_THREADS set, `child-cpu` says on standard error how its CPU divides among its threads
/// (the feeder, the graph thread, the worker): a diagnostic, which itself costs a little CPU (it samples every
/// 100 ms).
final class ThreadMonitor: Sendable {
    private let seen = Mutex<[String: Double]>([:])

    init() {
        let t = Thread { [self] in
            while true {
                let now = threadCPU()
                seen.withLock { seen in for (tid, cpu) in now { seen[tid] = cpu } }
                usleep(100_000)
            }
        }
        t.name = "bench thread monitor"
        t.start()
    }

    func report() {
        let threads = seen.withLock { $0 }.filter { $0.value >= 0.01 }.sorted { $0.key < $1.key }
        note("bench: CPU by thread (s): " + threads.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }
}

/// CPU seconds of each live thread of this process, by thread id.
func threadCPU() -> [(String, Double)] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    let hz = Double(sysconf(Int32(_SC_CLK_TCK)))
    return tasks.compactMap { tid in
        guard let stat = try? String(contentsOfFile: "/proc/self/task/\(tid)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        let fields = stat[stat.index(close, offsetBy: 2)...].split(separator: " ")
        let cpu = (Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)
        return (tid, cpu / hz)
    }
}

/// `child-streams N FILE [--seconds S] [--final-pass]`: N streams in real time; prints the latency figures.
func childStreams(count: Int, path: String, seconds: Double?, finalPass: Bool) throws {
    let audio = loadAudio(path, seconds: seconds)
    let plan = makePlan(finalPass: finalPass)
    // The streams share the machine as a server's graphs would: one gate for all their decoding.
    let gate = ComputeGate()
    let streams = try (0..<count).map {
        try Stream(plan: plan, audio: audio, offset: startFrame(audio, index: $0, count: count), gate: gate)
    }
    for s in streams { s.graph.start() }
    let cpu0 = processCPU()
    let switches0 = contextSwitches()
    let wall0 = monotonic()
    let machine0 = machineJiffies()
    let start = monotonic() + 0.2
    for s in streams { s.feed(start: start, paced: true) }
    for s in streams { s.fed.wait() }
    for s in streams { try s.graph.wait() }
    let cpu = processCPU() - cpu0
    let wall = monotonic() - wall0
    let others = othersCores(since: machine0, cpu: cpu, wall: wall)

    // The latency, and its two shares: from the push to the vad's speechEnded, and from there to the final.
    var latencies: [Double] = []
    var vadShare: [Double] = []
    var recognizerShare: [Double] = []
    var late: [Double] = []
    var afterEnd = 0
    var dropped = 0
    for s in streams {
        for f in s.probe.finals {
            // Finals that the end of the input made (not the vad) say nothing about the live latency.
            if f.arrival >= s.endedAt {
                afterEnd += 1
                continue
            }
            let endFrame = Int((f.range.end * Double(sampleRate)).rounded())
            let block = min(max(endFrame - 1, 0) / blockFrames, s.blocks - 1)
            latencies.append(f.arrival - s.pushedAt[block])
            if let ended = s.probe.speechEnds[f.range.end] {
                vadShare.append(ended - s.pushedAt[block])
                recognizerShare.append(f.arrival - ended)
            }
        }
        for k in 0..<s.blocks {
            let due = start + Double(min((k + 1) * blockFrames, audio.count)) / Double(sampleRate)
            late.append(s.pushedAt[k] - due)
        }
        dropped += s.pusher.droppedFrames
    }
    print("finals \(latencies.count)")
    print("finals_after_end \(afterEnd)")
    print("p50 \(percentile(latencies, 0.5))")
    print("p95 \(percentile(latencies, 0.95))")
    print("max \(latencies.max() ?? .nan)")
    print("vad_p50 \(percentile(vadShare, 0.5))")
    print("vad_p95 \(percentile(vadShare, 0.95))")
    print("recognizer_p50 \(percentile(recognizerShare, 0.5))")
    print("recognizer_p95 \(percentile(recognizerShare, 0.95))")
    print("split \(vadShare.count)")
    print("dropped \(dropped)")
    print("feeder_late_p99 \(percentile(late, 0.99))")
    print("feeder_late_max \(late.max() ?? .nan)")
    print("cpu \(cpu)")
    print("wall \(wall)")
    print("switches \(contextSwitches() - switches0)")
    print("rss \(maxResidentMB())")
    print("others \(others)")
}

// MARK: - The parent

/// Runs this program again with `arguments`; returns the `name value` lines it printed.
func child(_ arguments: [String]) -> [String: Double] {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: selfPath)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    do { try process.run() } catch { fail("cannot run \(selfPath): \(error)") }
    let data = pipe.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { fail("child \(arguments.joined(separator: " ")) failed") }
    var values: [String: Double] = [:]
    for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
        let parts = line.split(separator: " ")
        if parts.count == 2, let v = Double(parts[1]) { values[String(parts[0])] = v }
    }
    return values
}

let selfPath: String = {
    var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
    let n = readlink("/proc/self/exe", &buffer, buffer.count - 1)
    guard n > 0 else { return CommandLine.arguments[0] }
    return String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
}()

/// One figure on standard output, at once (the parent's output may be a pipe).
func output(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func figure(_ name: String, _ value: Double, _ unit: String, digits: Int = 2) {
    output("\(name) \(String(format: "%.\(digits)f", value)) \(unit)")
}

func realtimeCPU(path: String, seconds: Double?, runs: Int, finalPass: Bool) {
    var common = [path]
    if let seconds { common += ["--seconds", String(seconds)] }
    if finalPass { common += ["--final-pass", "--phases", String(phases)] }
    var live: [Double] = []
    var offline: [Double] = []
    var ratios: [Double] = []
    var liveSwitches: [Double] = []
    var offlineSwitches: [Double] = []
    // The machine's speed drifts (a shared VM: its caches and cores are the host's): each real-time run is
    // compared with the mean of an offline run just before and one just after it.
    for run in 1...runs {
        note(
            "bench: realtime-cpu: run \(run)/\(runs): one stream as fast as it goes, in real time (10 ms blocks), "
                + "as fast as it goes again")
        let before = child(["child-cpu", "offline"] + common)
        let r = child(["child-cpu", "realtime"] + common)
        let after = child(["child-cpu", "offline"] + common)
        let o = ((before["cpu"] ?? .nan) + (after["cpu"] ?? .nan)) / 2
        let others = [before, r, after].map { $0["others"] ?? 0 }
        note(
            String(
                format: "bench:   realtime %.2f s CPU over %.1f s; offline %.2f and %.2f s CPU over %.1f s; "
                    + "%d/%d finals; other processes kept %.2f / %.2f / %.2f cores busy",
                r["cpu"] ?? .nan, r["wall"] ?? .nan, before["cpu"] ?? .nan, after["cpu"] ?? .nan,
                before["wall"] ?? .nan, Int(r["finals"] ?? 0), Int(before["finals"] ?? 0), others[0], others[1],
                others[2]))
        if others.max()! > 0.1 { note("bench:   warning: other processes used the CPU") }
        live.append(r["cpu"] ?? .nan)
        offline.append(o)
        liveSwitches.append(r["switches"] ?? .nan)
        offlineSwitches.append(((before["switches"] ?? .nan) + (after["switches"] ?? .nan)) / 2)
        ratios.append((r["cpu"] ?? .nan) / o)
    }
    let prefix = finalPass ? "final_pass_" : ""
    figure("\(prefix)realtime_stream_cpu", median(live), "s")
    figure("\(prefix)offline_stream_cpu", median(offline), "s")
    figure("\(prefix)realtime_vs_offline_cpu_ratio", median(ratios), "x", digits: 3)
    // How often its threads slept and woke (or were preempted): each wake-up costs CPU, on this VM tens of
    // microseconds and a cold cache after it.
    figure("\(prefix)realtime_stream_context_switches", median(liveSwitches), "switches", digits: 0)
    figure("\(prefix)offline_stream_context_switches", median(offlineSwitches), "switches", digits: 0)
}

func streams(path: String, seconds: Double?, counts: [Int], finalPass: Bool, limit: Double, margin: Double) {
    let prefix = finalPass ? "final_pass_" : ""
    let variant = finalPass ? "final-pass: true" : "no final pass"
    // Two figures: the most streams whose p95 is within `limit`, and the most whose p95 is within `margin`
    // of the first count's (one stream's): what the load adds. The sweep goes on while the second holds.
    var withinLimit = 0
    var withinMargin = 0
    var limitFailed = false
    var baseline: Double?
    for n in counts {
        var arguments = ["child-streams", String(n), path]
        if let seconds { arguments += ["--seconds", String(seconds)] }
        if finalPass { arguments += ["--final-pass", "--phases", String(phases)] }
        note("bench: streams (\(variant)): \(n) stream\(n == 1 ? "" : "s") in real time")
        let r = child(arguments)
        let p50 = 1000 * (r["p50"] ?? .nan)
        let p95 = 1000 * (r["p95"] ?? .nan)
        let dropped = Int(r["dropped"] ?? 0)
        let busy = (r["cpu"] ?? .nan) / (r["wall"] ?? .nan)
        note(
            String(
                format: "bench:   %d finals (%d more after the input ended), max %.0f ms, %d frames dropped, "
                    + "feeder late p99 %.1f ms max %.1f ms",
                Int(r["finals"] ?? 0), Int(r["finals_after_end"] ?? 0), 1000 * (r["max"] ?? .nan), dropped,
                1000 * (r["feeder_late_p99"] ?? .nan), 1000 * (r["feeder_late_max"] ?? .nan)))
        note(
            String(
                format: "bench:   push -> vad's speechEnded p50 %.0f p95 %.0f ms, speechEnded -> final "
                    + "p50 %.0f p95 %.0f ms (%d of the finals)",
                1000 * (r["vad_p50"] ?? .nan), 1000 * (r["vad_p95"] ?? .nan),
                1000 * (r["recognizer_p50"] ?? .nan), 1000 * (r["recognizer_p95"] ?? .nan), Int(r["split"] ?? 0)))
        note(
            String(
                format: "bench:   %.2f cores busy in this process, %.2f in others; peak memory %.0f MB", busy,
                r["others"] ?? .nan, r["rss"] ?? .nan))
        if (r["others"] ?? 0) > 0.1 { note("bench:   warning: other processes used the CPU meanwhile") }
        figure("\(prefix)streams_\(n)_end_to_final_p50", p50, "ms", digits: 0)
        figure("\(prefix)streams_\(n)_end_to_final_p95", p95, "ms", digits: 0)
        figure("\(prefix)streams_\(n)_cpu_busy", busy, "cores")
        let kept = dropped == 0 && (r["finals"] ?? 0) > 0
        if kept && p95 <= limit && !limitFailed { withinLimit = n } else { limitFailed = true }
        let first = baseline ?? p95
        baseline = first
        guard kept, p95 <= first + margin else {
            note("bench:   \(n) streams: p95 \(Int(p95)) ms, \(dropped) frames dropped: the sweep stops")
            break
        }
        withinMargin = n
    }
    if withinMargin == counts.last { note("bench: every count tried held (raise --max to find the limit)") }
    output("\(prefix)realtime_streams_at_p95_\(Int(limit))ms \(withinLimit) streams")
    output("\(prefix)realtime_streams_at_p95_\(counts.first ?? 1)_stream_plus_\(Int(margin))ms \(withinMargin) streams")
}

// MARK: - Arguments

/// Takes `--name` out of `arguments`; whether it was there.
func flag(_ name: String, _ arguments: inout [String]) -> Bool {
    guard let i = arguments.firstIndex(of: name) else { return false }
    arguments.remove(at: i)
    return true
}

/// Takes `--name value` out of `arguments`, converted; nil when absent.
func option<T>(_ name: String, _ arguments: inout [String], _ convert: (String) -> T?) -> T? {
    guard let i = arguments.firstIndex(of: name) else { return nil }
    guard i + 1 < arguments.count, let value = convert(arguments[i + 1]) else { fail("\(name) needs a value") }
    arguments.removeSubrange(i...(i + 1))
    return value
}

let usage = """
    usage: speechgraph-bench realtime-cpu FILE [--seconds S] [--runs R] [--final-pass [--phases N]]
           speechgraph-bench idle-cost
           speechgraph-bench plugin-gate PLUGIN
           speechgraph-bench streams FILE [--seconds S] [--max N] [--counts 1,2,4,...] [--variants plain,final-pass]
                                          [--limit MS] [--margin MS] [--phases N]
    """

var arguments = Array(CommandLine.arguments.dropFirst())
let finalPass = flag("--final-pass", &arguments)
/// With the final pass: its `phases` (graphs/live.graph's setting, which scripts/bench-streams.sh passes).
let phases = option("--phases", &arguments) { Int($0) } ?? 1
let seconds = option("--seconds", &arguments) { Double($0) }.flatMap { $0 > 0 ? $0 : nil }
let runs = option("--runs", &arguments) { Int($0) } ?? 1
let maxStreams = option("--max", &arguments) { Int($0) } ?? 12
let countList = option("--counts", &arguments) { $0.split(separator: ",").compactMap { Int($0) } }
let variants =
    option("--variants", &arguments) { $0.split(separator: ",").map(String.init) } ?? ["plain", "final-pass"]
let limit = option("--limit", &arguments) { Double($0) } ?? 400
let margin = option("--margin", &arguments) { Double($0) } ?? 100

guard arguments.count >= 2 || arguments.first == "plugin-gate" || arguments.first == "idle-cost" else {
    note(usage)
    exit(2)
}

do {
    switch arguments[0] {
    case "child-cpu" where arguments.count == 3:
        try childCPU(paced: arguments[1] == "realtime", path: arguments[2], seconds: seconds, finalPass: finalPass)
    case "child-streams" where arguments.count == 3:
        try childStreams(count: Int(arguments[1]) ?? 1, path: arguments[2], seconds: seconds, finalPass: finalPass)
    case "realtime-cpu" where arguments.count == 2:
        realtimeCPU(path: arguments[1], seconds: seconds, runs: max(runs, 1), finalPass: finalPass)
    case "idle-cost" where arguments.count == 1:
        idleCost()
    case "plugin-gate" where arguments.count == 2:
        gateCost(plugin: arguments[1])
    case "streams" where arguments.count == 2:
        // 1, 2, then every even count up to --max.
        let counts = countList ?? [1, 2] + Array(stride(from: 4, through: maxStreams, by: 2))
        for v in variants {
            guard v == "plain" || v == "final-pass" else { fail("--variants: plain or final-pass, not '\(v)'") }
            streams(
                path: arguments[1], seconds: seconds, counts: counts.filter { $0 <= maxStreams },
                finalPass: v == "final-pass", limit: limit, margin: margin)
        }
    default:
        note(usage)
        exit(2)
    }
} catch {
    fail("\(error)")
}
