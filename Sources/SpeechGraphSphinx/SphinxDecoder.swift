import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM
import Synchronization

/// One PocketSphinx decoder. Not thread-safe: it is used by one node at a time, on the graph thread;
/// `SphinxDecoderPool` hands it out and takes it back.
public final class SphinxDecoder: @unchecked Sendable {
    // @unchecked: a decoder is used by one node at a time (the pool's lock orders hand-overs); the C
    // decoder it wraps is never touched by two threads at once.
    let ps: OpaquePointer
    public let model: SphinxModel
    /// Which pool it belongs to: streamed or whole-utterance decoding.
    var isStreaming = true
    /// The live cepstral mean's whole state as loaded (the model's `-cmninit` as the mean, no frames counted
    /// yet): `reset` puts it back.
    private var initialMean: MeanState
    /// The model's files as they were when loading began (`isCurrent`).
    public let stamps: [FileStamp]

    /// Loads the model. PocketSphinx's own log goes nowhere unless `SPEECHGRAPH_SPHINX_LOG` names a file;
    /// when loading fails, its error lines are part of the thrown message.
    public init(model: SphinxModel) throws {
        self.model = model
        stamps = model.fileStamps()  // before loading: a file written during the load makes the decoder stale
        // sphinxbase's log stream is process-global: one model load at a time, and the log stays off
        // while other decoders run (they would write into whatever stream is set).
        SphinxLog.loading.lock()
        defer { SphinxLog.loading.unlock() }
        SphinxLog.silence()
        if let ps = Self.load(model) {
            self.ps = ps
            if let domain = model.domain, domain.weight < 1 {
                var ready = false
                let reason = SphinxLog.capture { ready = Self.interpolate(ps, general: model.lm, domain: domain) }
                guard ready else {
                    ps_free(ps)
                    throw SpeechGraphError("PocketSphinx could not use the language model \(domain.lm): \(reason)")
                }
            }
            initialMean = Self.meanState(ps)
            return
        }
        // Load again with the log captured, to say why.
        let reason = SphinxLog.capture { _ = Self.load(model).map { ps_free($0) } }
        // PocketSphinx names the first word of a grammar its dictionary lacks: name them all, where they are.
        if let jsgf = model.jsgf, reason.contains("is missing in the dictionary") {
            let missing = Self.wordsMissing(from: model.dict, in: jsgf)
            if !missing.isEmpty {
                let listed =
                    missing.prefix(10).map {
                        "'\($0.text)' (\($0.location.line):\($0.location.column)"
                            + ($0.lowercaseKnown ? "; the dictionary has '\($0.text.lowercased())')" : ")")
                    }
                    .joined(separator: ", ") + (missing.count > 10 ? ", ..." : "")
                throw SpeechGraphError(
                    "the grammar \(jsgf) says \(missing.count == 1 ? "a word" : "\(missing.count) words") that the "
                        + "dictionary (\(model.dict)) does not have: \(listed). Give "
                        + (missing.count == 1 ? "it a pronunciation" : "them pronunciations")
                        + " in a dictionary ('dict'), or write the grammar as a .lmspec spec, whose new words "
                        + "espeak-ng pronounces (docs/lm.md)", parameter: "grammar")
            }
        }
        // A grammar's words are checked against the dictionary as it loads: name it, or the acoustic model is blamed.
        let grammar = model.jsgf.map { ", with the grammar \($0)" } ?? ""
        throw SpeechGraphError("PocketSphinx could not load the model (\(model.hmm)\(grammar)): \(reason)")
    }

    /// The grammar's words (each once, in order) that `dictionary` has no entry for (case counts, as for
    /// PocketSphinx), and whether it has the word in lower case.
    static func wordsMissing(from dictionary: String, in grammar: String)
        -> [(text: String, location: SourceLocation, lowercaseKnown: Bool)]
    {
        let said = JSGFCheck.words(file: grammar)
        let asked = Set(said.flatMap { [$0.text, $0.text.lowercased()] })
        guard let known = try? Lexicon(dictionary: dictionary, words: asked).entries else { return [] }
        var seen = Set<String>()
        return said.filter { known[$0.text] == nil && seen.insert($0.text).inserted }
            .map { ($0.text, $0.location, known[$0.text.lowercased()] != nil) }
    }

    private static func load(_ model: SphinxModel) -> OpaquePointer? {
        let args = model.arguments
        let argv = args.map { strdup($0) }
        defer { for a in argv { free(a) } }
        var pointers: [UnsafeMutablePointer<CChar>?] = argv
        let config = pointers.withUnsafeMutableBufferPointer { buffer in
            cmd_ln_parse_r(nil, ps_args(), Int32(buffer.count), buffer.baseAddress, 1)
        }
        guard let config else { return nil }
        defer { cmd_ln_free_r(config) }  // the decoder keeps its own reference
        return ps_init(config)
    }

    deinit { ps_free(ps) }

    /// This decoder decodes as one newly loaded for `model` would: the same model, its files unchanged since it
    /// was loaded.
    public func isCurrent(for model: SphinxModel) -> Bool { model == self.model && model.fileStamps() == stamps }

    /// Forgets what earlier audio taught the decoder: the live cepstral mean goes back to the state it was
    /// loaded in, so that a reused decoder decodes exactly as a newly loaded one. The whole state: the mean,
    /// its running sum and that sum's frame count, which a newly loaded decoder has at 0, so that the first
    /// update takes the mean of the frames heard alone (`cmn_live_set` would count the initial mean as 500
    /// frames, and a reused decoder's mean would then follow the speech more slowly). (The noise estimate and
    /// the front end's frame count start over with every new stream, see `startUtterance`.)
    ///
    /// Also the live feature buffer, which gives the first frames of an utterance their delta context when the
    /// utterance's first samples make no frame (a 20 ms piece): zeros and empty, as loaded, not the last frames
    /// of the previous utterance. And an utterance left open (a node that failed mid-utterance) is ended, or
    /// PocketSphinx would refuse to start the next.
    public func reset() {
        if utteranceOpen {
            _ = ps_end_utt(ps)
            utteranceOpen = false
        }
        setMeanState(initialMean)
        let feat = ps_get_feat(ps)!
        if let rows = feat.pointee.cepbuf {
            for r in 0..<Int(LIVEBUFBLOCKSIZE) { rows[r]?.update(repeating: 0, count: Int(feat.pointee.cepsize)) }
        }
        feat.pointee.bufpos = 0
        feat.pointee.curpos = 0
    }

    /// Between `startUtterance` and `endUtterance`.
    private var utteranceOpen = false
    /// With the second pass: the live means this utterance's frames were normalised with, each from `frame` on.
    var meanHistory: [(frame: Int, mean: [Float])] = []
    /// Samples of this utterance fed so far.
    var samplesFed = 0

    /// Starts an utterance. With `newStream`, on a fresh front-end stream: PocketSphinx's noise estimate
    /// and frame count start over (as `pocketsphinx_batch` does for every file). Streamed decoding needs
    /// that for every utterance, since it numbers word frames from the start of the stream; whole-utterance
    /// decoding numbers them per utterance and keeps the noise estimate from one utterance to the next of
    /// the same stream, which matters in steady noise. The live cepstral mean is kept either way.
    public func startUtterance(newStream: Bool = true) throws {
        if newStream { _ = ps_start_stream(ps) }
        guard ps_start_utt(ps) == 0 else { throw SpeechGraphError("PocketSphinx could not start an utterance") }
        utteranceOpen = true
        samplesFed = 0
        meanHistory.removeAll(keepingCapacity: true)
        noteMean()
    }

    /// Feeds 16-bit samples at the model's rate. `wholeUtterance`: these samples are the entire
    /// utterance, so cepstral mean normalisation can use their mean (PocketSphinx's batch mode).
    public func process(_ samples: UnsafeBufferPointer<Int16>, wholeUtterance: Bool = false) throws {
        guard ps_process_raw(ps, samples.baseAddress, samples.count, 0, wholeUtterance ? 1 : 0) >= 0 else {
            throw SpeechGraphError("PocketSphinx failed to decode audio")
        }
        samplesFed += samples.count
        noteMean()
    }

    /// Ends the utterance: PocketSphinx finishes its search (with the second pass, if the model has it, over
    /// renormalised features when streamed, see `renormaliseForSecondPass`).
    public func endUtterance() throws {
        if model.secondPass && isStreaming { renormaliseForSecondPass() }
        utteranceOpen = false
        guard ps_end_utt(ps) == 0 else { throw SpeechGraphError("PocketSphinx could not end the utterance") }
    }

    /// The best hypothesis so far (partial while an utterance runs, final after `endUtterance`).
    public var hypothesis: String {
        var score: Int32 = 0
        guard let hyp = ps_get_hyp(ps, &score) else { return "" }
        return String(cString: hyp)
    }

    /// Whether the search reached no end at all (a grammar none of whose sentences fits the audio): no
    /// hypothesis and no score, not an empty reading (an n-gram model's silence) with a score of its own.
    public var reachedNoEnd: Bool {
        var score: Int32 = 0
        return ps_get_hyp(ps, &score) == nil
    }

    /// The best hypothesis's path score (natural log: acoustic log-likelihood plus the language model's score
    /// raised to its weight), and the frames it spans. Two decoders with the same acoustic model that saw the same
    /// audio give comparable scores.
    public var hypothesisScore: (score: Double, frames: Int) {
        var score: Int32 = 0
        _ = ps_get_hyp(ps, &score)
        // Search scores are in log-math units shifted right by SENSCR_SHIFT (10 bits).
        return (Double(score) * 1024 * log(logmath_get_base(ps_get_logmath(ps))), Int(ps_get_n_frames(ps)))
    }

    /// Words of the best hypothesis with their frames (100 per second) and posterior probabilities,
    /// fillers and silences left out.
    public func words(frameOffset: Double) -> [Word] { Self.words(ps_seg_iter(ps), ps: ps, frameOffset: frameOffset) }

    /// Up to `count` different readings of the utterance just ended, best first, from PocketSphinx's n-best
    /// search over its lattice: each with its score (natural log, relative to the best) and its words
    /// (confidences of the best reading's lattice). Readings that differ only in fillers or pronunciation
    /// variants count once. Empty when the utterance has no lattice.
    public func nbest(_ count: Int, frameOffset: Double) -> [(text: String, score: Double, words: [Word])] {
        guard count > 0, var iterator = ps_nbest(ps) else { return [] }
        let logmath = ps_get_logmath(ps)
        let scale = log(logmath_get_base(logmath))
        var out: [(text: String, score: Double, words: [Word])] = []
        var seen = Set<String>()
        var best: Int32?
        // A* yields many paths that read the same: look a little further than `count`.
        for _ in 0..<(count * 20) {
            var score: Int32 = 0
            _ = ps_nbest_hyp(iterator, &score)  // its text has fillers; the words below have none
            let words = Self.words(ps_nbest_seg(iterator), ps: ps, frameOffset: frameOffset)
            let text = words.map(\.text).joined(separator: " ")
            if best == nil { best = score }
            if seen.insert(text).inserted {
                out.append((text, Double(score - (best ?? score)) * scale, words))
                if out.count == count { break }
            }
            guard let next = ps_nbest_next(iterator) else { return out }  // it freed itself at the end
            iterator = next
        }
        ps_nbest_free(iterator)
        return out
    }

    /// The words of a segment iteration (of the best hypothesis, or of an n-best entry); frees the iterator.
    static func words(_ first: OpaquePointer?, ps: OpaquePointer, frameOffset: Double) -> [Word] {
        var result: [Word] = []
        let logmath = ps_get_logmath(ps)
        var seg = first
        while let s = seg {
            if let w = ps_seg_word(s) {
                let text = String(cString: w)
                // Fillers, and "(NULL)": a grammar's empty transitions (an optional word left out) are segments.
                if !(text.hasPrefix("<") || text.hasPrefix("[") || text.hasPrefix("++") || text == "(NULL)") {
                    var sf: Int32 = 0
                    var ef: Int32 = 0
                    ps_seg_frames(s, &sf, &ef)
                    var a: Int32 = 0
                    var l: Int32 = 0
                    var b: Int32 = 0
                    let post = ps_seg_prob(s, &a, &l, &b)
                    let confidence = min(1, max(0, logmath_exp(logmath, post)))
                    let bare = text.replacingOccurrences(of: #"\(\d+\)$"#, with: "", options: .regularExpression)
                    result.append(
                        Word(
                            text: bare,
                            range: TimeRange(
                                start: frameOffset + Double(sf) / 100,
                                end: frameOffset + Double(ef + 1) / 100),
                            confidence: confidence))
                }
            }
            seg = ps_seg_next(s)
        }
        return result
    }
}
