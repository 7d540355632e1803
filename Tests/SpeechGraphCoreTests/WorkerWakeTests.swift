import Foundation
import SpeechGraphTestSupport
import Testing

@testable import SpeechGraphCore

/// A worker node that asks to be woken only every `step` frames (`framesBeforeNextStep`), as a recognizer
/// gathering batches does: the audio pushed in blocks must still all reach it, in order, each step on time,
/// and the finish must find nothing left in the worker's rings.
final class StepperNode: GraphNode {
    static let descriptor = NodeDescriptor(
        typeName: "test.stepper",
        summary: "Counts the frames it takes; a volatile result at every 'step' frames, a final one at the finish.",
        category: .recognizer,
        ports: [
            .audioInput("in", .any, doc: "Mono audio whose sample n is n modulo 4096."),
            .eventOutput("results", emits: .only([.result]), doc: "Frames taken so far, as text."),
        ],
        parameters: [
            .integer(
                "step", default: 0, range: 0...1_000_000,
                doc: "Frames between results; 0: no results before the finish (and no wake-up asked for).")
        ],
        threading: .worker)
    static let type = NodeType(descriptor, make: { StepperNode(step: $0.config.integer(of: "step")) })

    let step: Int
    private var taken = 0
    private var outOfOrder = 0

    init(step: Int) { self.step = step }

    var framesBeforeNextStep: Int { step > 0 ? step - taken % step : Int.max }

    func process(_ block: AudioBlock, port: Int, output: NodeOutput) throws {
        for sample in block.samples {
            if sample != Float(taken % 4096) { outOfOrder += 1 }
            taken += 1
            if step > 0 && taken % step == 0 { try emit("\(taken)", isFinal: false, output) }
        }
    }

    func finish(output: NodeOutput) throws { try emit("\(taken) \(outOfOrder)", isFinal: true, output) }

    private func emit(_ text: String, isFinal: Bool, _ output: NodeOutput) throws {
        try output.emit(
            .result(
                Transcription(
                    utterance: 1, isFinal: isFinal, range: TimeRange(start: 0, end: Double(taken) / 16000), text: text,
                    node: "stepper")))
    }
}

@Suite(.tags(.fast)) struct WorkerWakeTests {
    /// Pushes `frames` frames (sample n is n modulo 4096) in chunks of 1 to 600 frames from another thread (a
    /// millisecond apart when `paced`), waiting for room, into `push.input -> test.stepper { step } -> collect`
    /// (160-frame blocks); the collected results' texts, and how often the stepper's worker thread woke.
    func run(step: Int, frames: Int, seed: UInt64, paced: Bool) throws -> (results: [String], wakeUps: Int, missed: Int)
    {
        var registry = NodeRegistry()
        try registry.register(PushInputNode.type)
        try registry.register(EventCollector.type)
        try registry.register(StepperNode.type)
        let text = """
            node mic = push.input { rate: 16 kHz, block: 160, buffer: 1 s }
            node s   = test.stepper { step: \(step) }
            node out = collect
            mic -> s -> out
            """
        let plan = try negotiatedPlan(text, registry: registry)
        let graph = try RunningGraph(plan: plan, registry: registry)
        let pusher = try #require(graph.input(named: "mic"))
        graph.start()
        let fed = DispatchSemaphore(value: 0)
        let feeder = Thread {
            var random = SplitMix64(seed: seed)
            var at = 0
            while at < frames {
                let n = min(frames - at, 1 + Int(random.next() % 600))
                let chunk = (at..<(at + n)).map { Float($0 % 4096) }
                _ = chunk.withUnsafeBufferPointer { pusher.write($0, waitForRoom: true) }
                at += n
                // Paced a little, as a live source is (not to synchronise: nothing asserted depends on it), so that a
                // worker woken for every block would be woken hundreds of times.
                if paced { usleep(1000) }
            }
            pusher.end()
            fed.signal()
        }
        feeder.start()
        fed.wait()
        try graph.wait()
        let collector = try #require(graph.node(named: "out") as? EventCollector)
        let wakeUps = try #require(graph.workerWakeUps(of: "s"))
        let missed = try #require(graph.workerMissedWakes(of: "s"))
        let texts = collector.events.compactMap { if case .result(let t) = $0 { t.text } else { nil } }
        return (texts, wakeUps, missed)
    }

    @Test("a worker woken every batch, not every block, gets every frame in order and each step when it is due")
    func stepsOnTime() throws {
        let (results, wakeUps, _) = try run(step: 1600, frames: 16000 * 3 + 77, seed: 7, paced: true)
        // 30 steps of 1600 frames, then the finish with every frame and none out of order.
        #expect(results == (1...30).map { "\($0 * 1600)" } + ["\(16000 * 3 + 77) 0"])
        // Woken for each step and the finish, not for each of the 301 blocks (221 when it was). At most twice a step: a
        // block queued before the worker has said what it needs next is measured against what it needed before
        // (early, never late). A few more if the machine is so loaded that the worker's 2 s ring fills.
        #expect(wakeUps <= 70)
    }

    @Test("a worker that asks for more audio than its ring holds is woken when the ring is full, and gets it all")
    func moreThanTheRing() throws {
        // The worker's sample ring holds 2 s; 5 s are pushed with no step ever due before the finish.
        let (results, _, missed) = try run(step: 0, frames: 16000 * 5 + 3, seed: 11, paced: false)
        #expect(results == ["\(16000 * 5 + 3) 0"])
        // Each full ring wakes it at once: it never sleeps out its own 1 s timeout while the graph thread waits for
        // room. (How often it sleeps at all depends on the machine: on a loaded one the worker may never catch up
        // with the feeder, and never sleep; on a quiet one, without the full ring's wake, it missed one.)
        #expect(missed == 0)
    }
}
