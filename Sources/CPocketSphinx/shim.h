#ifndef SPEECHGRAPH_CPOCKETSPHINX_SHIM_H
#define SPEECHGRAPH_CPOCKETSPHINX_SHIM_H
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
 * what the public API returns (the front end and feature module pointers, the frame count) and answers NULL when
 * they disagree, so a different library version turns the feature off instead of reading the wrong memory. */
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

/* The utterance's feature frames decoded so far, frame 0 its first (NULL when the buffer is not the whole
 * utterance or the mirror does not match): *frames is set to their count. Each frame's first stream holds the
 * normalised cepstrum. */
static inline mfcc_t ***sg_ps_features(ps_decoder_t *ps, int32 *frames) {
    sg_acmod_mirror *acmod = ((sg_ps_decoder_mirror *)ps)->acmod;
    if (acmod == NULL || acmod->fe != ps_get_fe(ps) || acmod->fcb != ps_get_feat(ps)) return NULL;
    if (acmod->output_frame + 1 != ps_get_n_frames(ps)) return NULL;
    if (!acmod->grow_feat || acmod->output_frame > acmod->n_feat_alloc || acmod->feat_buf == NULL) return NULL;
    *frames = acmod->output_frame;
    return acmod->feat_buf;
}
#endif
