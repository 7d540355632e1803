#ifndef SPEECHGRAPH_CPOCKETSPHINX_SHIM_H
#define SPEECHGRAPH_CPOCKETSPHINX_SHIM_H
#include <string.h>
#include <pocketsphinx.h>
#include <sphinxbase/err.h>
#include <sphinxbase/cmd_ln.h>
#include <sphinxbase/feat.h>
#include <sphinxbase/cmn.h>
#include <sphinxbase/fe.h>
#include <sphinxbase/ngram_model.h>
#include <sphinxbase/logmath.h>

/* PocketSphinx keeps the features of the utterance being decoded in its acoustic model (acmod_t, internal to
 * libpocketsphinx) for its second pass (-fwdflat), which runs inside ps_end_utt. These mirror the layout of the
 * fields up to that buffer in Debian's libpocketsphinx3 0.8+5prealpha+1 (src/libpocketsphinx/acmod.h, unchanged
 * since 2014, and the head of ps_decoder_s in pocketsphinx_internal.h). sg_ps_features checks the mirror against
 * what the public API returns (the front end and feature module pointers, the frame count, the rows' spacing)
 * and answers NULL when they disagree, so that another library version most likely turns the second pass's
 * renormalisation off; the head of ps_decoder_s (config, refcount, acmod) is trusted. */
typedef struct sg_acmod_mirror {
    cmd_ln_t *config;
    logmath_t *lmath;
    void *strings;
    fe_t *fe;
    feat_t *fcb;
    void *mdef;
    void *tmat;
    void *mgau;
    void *mllr;
    int16 *senone_scores;
    uint32 *senone_active_vec;
    uint8 *senone_active;
    int senscr_frame;
    int n_senone_active;
    int log_zero;
    mfcc_t **mfc_buf;
    mfcc_t ***feat_buf;
    void *rawfh;
    void *mfcfh;
    void *senfh;
    void *insenfh;
    long *framepos;
    int16 *rawdata;
    int32 rawdata_size;
    int32 rawdata_pos;
    uint8 state;
    uint8 compallsen;
    uint8 grow_feat;
    uint8 insen_swap;
    int32 utt_start_frame;
    int32 output_frame;
    int32 n_mfc_alloc;
    int32 n_mfc_frame;
    int32 mfc_outidx;
    int32 n_feat_alloc;
    int32 n_feat_frame;
    int32 feat_outidx;
} sg_acmod_mirror;

typedef struct sg_ps_decoder_mirror {
    cmd_ln_t *config;
    int refcount;
    sg_acmod_mirror *acmod;
} sg_ps_decoder_mirror;

/* Whether the feature module makes what the renormalisation assumes: 1s_c_d_dd, whose first cepsize values
 * are the live-normalised cepstrum (no AGC, variance normalisation or linear transform, subvectors that keep
 * the cepstrum first and in order). */
static inline int sg_feat_is_plain_cepstra(feat_t *fcb) {
    if (fcb == NULL || fcb->name == NULL || strcmp(fcb->name, "1s_c_d_dd") != 0) return 0;
    if (fcb->lda != NULL || fcb->agc != AGC_NONE || fcb->varnorm || fcb->cmn == CMN_NONE) return 0;
    if (fcb->n_sv > 0) {
        if (fcb->subvecs == NULL || fcb->sv_len == NULL || (int32)fcb->sv_len[0] < fcb->cepsize) return 0;
        for (int32 i = 0; i < fcb->cepsize; i++)
            if (fcb->subvecs[0][i] != i) return 0;
    }
    return 1;
}

/* The utterance's feature frames decoded so far, frame 0 its first (NULL when the buffer is not the whole
 * utterance, the features are not plain cepstra, or the mirror does not match): *frames is set to their count.
 * Each frame's first stream (or subvector) starts with the normalised cepstrum. */
static inline mfcc_t ***sg_ps_features(ps_decoder_t *ps, int32 *frames) {
    sg_acmod_mirror *acmod = ((sg_ps_decoder_mirror *)ps)->acmod;
    if (acmod == NULL || acmod->fe != ps_get_fe(ps) || acmod->fcb != ps_get_feat(ps)) return NULL;
    if (acmod->output_frame + 1 != ps_get_n_frames(ps) || acmod->feat_outidx != acmod->output_frame) return NULL;
    if (acmod->grow_feat != 1 || acmod->output_frame > acmod->n_feat_alloc || acmod->feat_buf == NULL) return NULL;
    if (!sg_feat_is_plain_cepstra(acmod->fcb)) return NULL;
    /* One block of rows, as feat_array_alloc lays them out: each the streams' lengths summed (39 for 1s_c_d_dd). */
    int32 row = 0;
    for (int32 i = 0; i < acmod->fcb->n_stream; i++) row += (int32)acmod->fcb->stream_len[i];
    if (acmod->output_frame > 1 && acmod->feat_buf[1][0] - acmod->feat_buf[0][0] != row) return NULL;
    *frames = acmod->output_frame;
    return acmod->feat_buf;
}
#endif
