import CPocketSphinx
import Foundation
import SpeechGraphCore
import SpeechGraphLM
import Synchronization

/// The live cepstral mean of a decoder, and the second pass's renormalisation: PocketSphinx's CMN state and
/// feature buffer, reached through its structures (Debian's 0.8+5prealpha layout: `sg_ps_features`).
extension SphinxDecoder {
    /// The mean of the cepstra PocketSphinx's front end computes from these samples (silence left out, as the
    /// front end leaves it out), or `nil` when they hold no frame. Uses the decoder's own front end between
    /// utterances; the next `startUtterance(newStream: true)` starts it over.
    public func cepstralMean(of samples: UnsafeBufferPointer<Int16>) -> [Float]? {
        guard let frames = cepstra(of: samples), let size = frames.first?.count else { return nil }
        var sum = [Double](repeating: 0, count: size)
        var count = 0
        // As PocketSphinx's normalisation does: frames of no energy (c0 below 0) are left out.
        for row in frames where row[0] >= 0 {
            for i in 0..<size { sum[i] += Double(row[i]) }
            count += 1
        }
        guard count > 0 else { return nil }
        return sum.map { Float($0 / Double(count)) }
    }

    /// The cepstra PocketSphinx's front end computes from these samples, one row per 10 ms frame, without the
    /// last one it makes of the samples left over (between utterances, as `cepstralMean`).
    func cepstra(of samples: UnsafeBufferPointer<Int16>) -> [[Float]]? {
        guard let fe = ps_get_fe(ps), let base = samples.baseAddress, !samples.isEmpty else { return nil }
        let size = Int(fe_get_output_size(fe))
        var rows: [[Float]] = []
        func add(_ cep: UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?, _ frames: Int32) {
            guard let cep else { return }
            for f in 0..<Int(frames) {
                guard let row = cep[f] else { continue }
                rows.append(Array(UnsafeBufferPointer(start: row, count: size)))
            }
        }
        fe_start_stream(fe)
        guard fe_start_utt(fe) == 0 else { return nil }
        var block: UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?
        var frames: Int32 = 0
        if fe_process_utt(fe, base, samples.count, &block, &frames) == 0 { add(block, frames) }
        if let block { fe_free_2d(block) }
        var last = [mfcc_t](repeating: 0, count: size)
        var lastFrames: Int32 = 0
        _ = fe_end_utt(fe, &last, &lastFrames)  // the frame of the samples left over: not counted
        return rows.isEmpty ? nil : rows
    }

    /// Sets the live cepstral mean, counted as one frame of evidence: `updateCepstralMean` then moves it to the mean
    /// of the frames decoded since.
    public func setCepstralMean(_ mean: [Float]) {
        let cmn = Self.cmn(ps)
        guard mean.count == Int(cmn.pointee.veclen) else { return }
        for i in mean.indices {
            cmn.pointee.cmn_mean[i] = mean[i]
            cmn.pointee.sum[i] = mean[i]
        }
        cmn.pointee.nframe = 1
        noteMean()
    }

    /// The live cepstral mean's whole state: the mean, the sum it comes from and that sum's frame count.
    public struct MeanState: Sendable, Equatable {
        let mean: [Float]
        let sum: [Float]
        let frames: Int32
    }

    /// The live cepstral mean's state now (to `restore` it).
    public var meanState: MeanState { Self.meanState(ps) }

    static func meanState(_ ps: OpaquePointer) -> MeanState {
        let cmn = Self.cmn(ps)
        let n = Int(cmn.pointee.veclen)
        return MeanState(
            mean: Array(UnsafeBufferPointer(start: cmn.pointee.cmn_mean, count: n)),
            sum: Array(UnsafeBufferPointer(start: cmn.pointee.sum, count: n)), frames: cmn.pointee.nframe)
    }

    /// Puts the live cepstral mean back as `meanState` found it.
    public func restore(_ state: MeanState) {
        setMeanState(state)
        noteMean()
    }

    func setMeanState(_ state: MeanState) {
        let cmn = Self.cmn(ps)
        guard state.mean.count == Int(cmn.pointee.veclen) else { return }
        for i in state.mean.indices {
            cmn.pointee.cmn_mean[i] = state.mean[i]
            cmn.pointee.sum[i] = state.sum[i]
        }
        cmn.pointee.nframe = state.frames
    }

    /// The cepstral frames the front end has computed from this utterance's samples so far: a window of 410
    /// samples (at 16 kHz) every 160.
    var framesComputed: Int {
        guard let fe = ps_get_fe(ps) else { return 0 }
        var shift: Int32 = 0
        var size: Int32 = 0
        fe_get_input_size(fe, &shift, &size)
        guard shift > 0, samplesFed >= Int(size) else { return 0 }
        return (samplesFed - Int(size)) / Int(shift) + 1
    }

    /// Streamed decoding with the second pass: records the live mean when it has changed (set, updated, or moved
    /// by PocketSphinx itself while decoding), from the next frame the front end computes.
    func noteMean() {
        guard model.secondPass, isStreaming else { return }
        let cmn = Self.cmn(ps)
        let live = UnsafeBufferPointer(start: cmn.pointee.cmn_mean, count: Int(cmn.pointee.veclen))
        if let last = meanHistory.last?.mean, last.elementsEqual(live) { return }
        meanHistory.append((frame: framesComputed, mean: Array(live)))
    }

    /// Streamed decoding with the second pass (`SphinxModel.secondPass`), done by `endUtterance`: gives the
    /// utterance's features the normalisation of utterance mode, the mean of all its frames, in place of the live
    /// means they were decoded with, so that PocketSphinx's second pass, which `endUtterance` runs over the words
    /// its first pass found, scores them as utterance mode would. Returns that mean, or `nil` when PocketSphinx's
    /// feature buffer could not be reached (a libpocketsphinx other than Debian's 0.8+5prealpha, features other
    /// than plain cepstra, or a grammar, whose search has no second pass; see `sg_ps_features`): the second pass
    /// then runs on the features as they are.
    ///
    /// Each frame's raw cepstrum is its stored one plus the live mean it was normalised with, except for frames of
    /// no energy (c0 below 0), which live normalisation leaves as they are and batch normalisation leaves out of
    /// the mean. A live mean that PocketSphinx moved inside one `process` call is counted from the end of that
    /// call (its frames taken back with the mean before: at most one batch late). The last few frames (the delta
    /// window's delay) are still in PocketSphinx's front end and keep their live mean, and the deltas of frames
    /// next to a change of the live mean keep its step. Once done, the utterance's features are no longer those the
    /// mean history describes: a second call does nothing.
    @discardableResult
    func renormaliseForSecondPass() -> [Float]? {
        guard !meanHistory.isEmpty, let (feat, frames, size) = features() else { return nil }
        defer { meanHistory.removeAll(keepingCapacity: true) }
        var sum = [Double](repeating: 0, count: size)
        var counted = 0
        forEachFrame(frames) { f, used in
            guard let row = feat[f]?[0], !Self.leftAsItWas(row, used) else { return }
            for i in 0..<size { sum[i] += Double(row[i] + used[i]) }
            counted += 1
        }
        guard counted > 0 else { return nil }
        let mean = sum.map { Float($0 / Double(counted)) }
        forEachFrame(frames) { f, used in
            guard let row = feat[f]?[0] else { return }
            // A frame of no energy was left as it was: batch normalisation subtracts the mean from it too.
            let kept = Self.leftAsItWas(row, used)
            for i in 0..<size { row[i] += (kept ? 0 : used[i]) - mean[i] }
        }
        return mean
    }

    /// The utterance's stored feature rows so far, their count and the cepstrum's size, when the second pass's
    /// renormalisation can reach them.
    func features() -> (UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<mfcc_t>?>?>, Int, Int)? {
        var count: Int32 = 0
        guard model.secondPass, isStreaming, let feat = sg_ps_features(ps, &count), count > 0 else { return nil }
        return (feat, Int(count), Int(Self.cmn(ps).pointee.veclen))
    }

    /// Each frame of the utterance so far with the live mean it was normalised with.
    func forEachFrame(_ frames: Int, _ body: (Int, [Float]) -> Void) {
        var k = 0
        for f in 0..<frames {
            while k + 1 < meanHistory.count && meanHistory[k + 1].frame <= f { k += 1 }
            body(f, meanHistory[k].mean)
        }
    }

    /// Whether a stored row is a frame of no energy, which live normalisation left as it was (its raw cepstrum is
    /// the row; any other row's is the row plus the mean it was normalised with): its c0, stored as it was, is
    /// below 0 and below what any normalised frame's can be (-used c0).
    static func leftAsItWas(_ row: UnsafeMutablePointer<mfcc_t>, _ used: [Float]) -> Bool {
        row[0] < 0 && row[0] < -used[0]
    }

    /// Moves the live cepstral mean to the mean of what it has counted (PocketSphinx itself only does it every
    /// 8 s of speech).
    public func updateCepstralMean() {
        cmn_live_update(Self.cmn(ps))
        noteMean()
    }

    /// The decoder's cepstral mean normalisation state.
    static func cmn(_ ps: OpaquePointer) -> UnsafeMutablePointer<cmn_t> { ps_get_feat(ps).pointee.cmn_struct! }
}
