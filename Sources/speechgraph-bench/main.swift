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
           speechgraph-bench apple-urls [--lm SPEC] FILE...
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
let customLM = option("--lm", &arguments) { $0 }

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
    case "apple-urls":
        appleURLs(Array(arguments.dropFirst()), lm: customLM)
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
