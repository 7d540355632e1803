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
