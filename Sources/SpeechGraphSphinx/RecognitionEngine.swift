import SpeechGraphCore

/// The seam between the recognizer node and a recognition engine: what reads an utterance's audio. The node decodes
/// whole utterances (utterance mode, the final pass and its phases, the general model beside a domain one, the
/// rejection score) only through this protocol, and `FinalResultComposer` decides the final result from the
/// readings, whatever engine made them. PocketSphinx's decoder is one (`SphinxDecoder`). Streaming (volatile
/// results, the live cepstral mean, the second pass at pauses) is PocketSphinx's own: the stream's decoder is a
/// `SphinxDecoder`.
///
/// An engine is used by one thread at a time (the node's, or one of the phase threads while the node waits).
public protocol RecognitionEngine: AnyObject {
    /// Starts an utterance. `newStream`: the first of a stream or the first after a discontinuity: what the engine
    /// carries from one utterance to the next (a noise estimate, a cepstral mean) starts over.
    func startUtterance(newStream: Bool) throws
    /// Decodes the utterance's next samples (16-bit, at the model's rate). `wholeUtterance`: these are all of it,
    /// given at once.
    func process(_ samples: UnsafeBufferPointer<Int16>, wholeUtterance: Bool) throws
    /// Ends the utterance: `reading` reads its result.
    func endUtterance() throws
    /// The utterance just ended as the engine read it: its text, its path score; with `words`, each word timed from
    /// `start` (seconds) with its posterior; up to `alternatives` readings best first.
    func reading(from start: Double, words: Bool, alternatives: Int) -> Reading
}

/// An engine's reading of an utterance: its best text and words (timed from the utterance's start), its n-best
/// list, its path score and whether its search reached no end (a grammar none of whose sentences fits).
public struct Reading: Sendable {
    public var text: String
    public var words: [Word]
    public var nbest: [(text: String, score: Double, words: [Word])]
    /// Natural log, and the frames (10 ms) it spans: comparable between engines of one acoustic model.
    public var score: (score: Double, frames: Int)
    public var reachedNoEnd: Bool

    public init(
        text: String, words: [Word], nbest: [(text: String, score: Double, words: [Word])],
        score: (score: Double, frames: Int) = (0, 0), reachedNoEnd: Bool = false
    ) {
        self.text = text
        self.words = words
        self.nbest = nbest
        self.score = score
        self.reachedNoEnd = reachedNoEnd
    }
}

extension SphinxDecoder: RecognitionEngine {
    public func reading(from start: Double, words: Bool, alternatives: Int) -> Reading {
        Reading(
            text: hypothesis, words: words ? self.words(frameOffset: start) : [],
            nbest: nbest(alternatives, frameOffset: start), score: hypothesisScore, reachedNoEnd: reachedNoEnd)
    }
}
