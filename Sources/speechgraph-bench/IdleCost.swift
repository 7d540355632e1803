// `speechgraph-bench idle-cost`: what an idle spell costs on this machine, apart from speechgraph.

import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// The calling thread's CPU time, in seconds.
func threadCPUTime() -> Double { seconds(on: CLOCK_THREAD_CPUTIME_ID) }

/// Keeps a value from being optimised away.
@inline(never) func keep(_ value: Int) {
    if value == 42 { note("") }
}

/// The same fixed pieces of work, timed on the thread's CPU clock, back to back and then one piece every `period`
/// (a decoder woken for each batch sleeps between them): the median CPU time of a piece each way. Two kinds of
/// work: reading a 16 MB working set (a decoder's models and search, about its size) a byte every 17 cache
/// lines, and arithmetic on registers alone. On a machine whose caches stay warm while it idles the ratios are
/// near 1; `make bench` prints them beside the real-time stream's CPU, which pays the same costs.
func idleCost(pieces: Int = 100, period: Double = 0.1) {
    let size = 16_000_000
    let memory = UnsafeMutableRawBufferPointer.allocate(byteCount: size, alignment: 64)
    defer { memory.deallocate() }
    memory.initializeMemory(as: UInt8.self, repeating: 1)
    func readMemory() {
        var sum = 0
        for pass in 0..<40 {
            var i = (pass * 4096) % size
            while i < size {
                sum &+= Int(memory[i])
                i += 64 * 17
            }
        }
        keep(sum)
    }
    func arithmetic() {
        var x = 1
        for i in 0..<50_000_000 { x = x &* 6_364_136_223_846_793_005 &+ i }
        keep(x)
    }
    func medianCPU(paced: Bool, _ work: () -> Void) -> Double {
        var times: [Double] = []
        var next = monotonic()
        for _ in 0..<pieces {
            if paced {
                next += period
                sleep(until: next)
            }
            let start = threadCPUTime()
            work()
            times.append(threadCPUTime() - start)
        }
        return percentile(times, 0.5)
    }
    note("bench: idle-cost: the same work back to back and once every \(Int(period * 1000)) ms")
    for (name, work) in [("memory", readMemory), ("arithmetic", arithmetic)] as [(String, () -> Void)] {
        let together = medianCPU(paced: false, work)
        let apart = medianCPU(paced: true, work)
        note(
            String(
                format: "bench:   %@: %.3f ms of CPU a piece back to back, %.3f ms after an idle spell", name,
                together * 1000, apart * 1000))
        figure("machine_\(name)_work_after_idle_vs_back_to_back", apart / together, "x")
    }
}
