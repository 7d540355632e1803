import SpeechGraphCore

/// The energy of each 10 ms (`chunkSamples`) of an utterance so far: where a long utterance may be split.
struct ChunkEnergies {
    let chunkSamples: Int
    /// The sums of squares of each whole chunk, in order.
    private(set) var chunks: [Float] = []
    /// The chunk being filled.
    private var sum: Float = 0
    private var fill = 0

    init(chunkSamples: Int) { self.chunkSamples = chunkSamples }

    /// A new utterance.
    mutating func reset() {
        chunks.removeAll(keepingCapacity: true)
        sum = 0
        fill = 0
    }

    /// The next samples of the utterance (16-bit, as the decoder gets them).
    mutating func add(_ samples: UnsafeBufferPointer<Int16>) {
        for sample in samples {
            let v = Float(sample)
            sum += v * v
            fill += 1
            if fill == chunkSamples {
                chunks.append(sum)
                sum = 0
                fill = 0
            }
        }
    }

    /// The first of the quietest chunks in `range`.
    func quietest(in range: ClosedRange<Int>) -> Int {
        var quietest = range.lowerBound
        for i in range where chunks[i] < chunks[quietest] { quietest = i }
        return quietest
    }

    /// The utterance now begins `count` chunks later (the chunk being filled goes on).
    mutating func removeFirst(_ count: Int) { chunks.removeFirst(count) }
}

/// Long utterances (`max-utterance`): split at a quiet point.
extension RecognizerNode {
    /// An utterance near its maximum length ends at a quiet point. Held audio (utterance mode) is cut
    /// exactly at the quietest 10 ms of the last 5 s, and what follows starts the next utterance; streamed
    /// audio is already decoded, so the utterance ends with the first 10 ms in that window that is nearly
    /// as quiet as the quietest of the utterance (or at the maximum).
    func splitIfLong(output: NodeOutput) throws {
        let chunkSamples = energies.chunkSamples
        guard !energies.chunks.isEmpty else { return }
        if wholeUtterances {
            guard held.count >= maxSamples else { return }
            let first = max(0, (maxSamples - lookbackSamples) / chunkSamples)
            let last = min(energies.chunks.count, maxSamples / chunkSamples) - 1
            guard first <= last else { return }
            let quietest = energies.quietest(in: first...last)
            let cut = quietest * chunkSamples
            let rest = Array(held[cut...])
            held.removeSubrange(cut...)
            utteranceEnd = utteranceStart + Double(cut) / Double(sampleRate)
            let nextStart = utteranceEnd
            let nextEnd = utteranceStart + Double(cut + rest.count) / Double(sampleRate)
            try endUtterance(output: output)
            // The rest is the beginning of the next utterance.
            inUtterance = true
            utterance += 1
            utteranceStart = nextStart
            utteranceEnd = nextEnd
            held = rest
            energies.removeFirst(quietest)
            utteranceSamples = rest.count
        } else {
            let quietest = energies.chunks.min() ?? 0
            let latest = energies.chunks[energies.chunks.count - 1]
            if utteranceSamples >= maxSamples || latest <= max(quietest * 2, 1) {
                try endUtterance(output: output)
            }
        }
    }
}
