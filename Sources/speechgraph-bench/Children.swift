import Foundation
import SpeechGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
