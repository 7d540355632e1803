import Foundation
import SpeechGraph
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

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
