#ifndef SPEECHGRAPH_CMPG123_SHIM_H
#define SPEECHGRAPH_CMPG123_SHIM_H
#include <stdio.h>
#include <mpg123.h>

// mpg123.h renames some functions by macro (mpg123_param to mpg123_param2; mpg123_length to mpg123_length_64
// where _FILE_OFFSET_BITS is set), which Swift does not follow: these call them by the names the header gives.
static inline int sg_mpg123_open(mpg123_handle *mh, const char *path) { return mpg123_open(mh, path); }
static inline long sg_mpg123_length(mpg123_handle *mh) { return (long)mpg123_length(mh); }
static inline int sg_mpg123_param(mpg123_handle *mh, enum mpg123_parms type, long value) {
    return mpg123_param(mh, type, value, 0);
}
/// The encoder delay an Info (LAME) header gives, -1 if the file has none.
static inline long sg_mpg123_encoder_delay(mpg123_handle *mh) {
    long value = -1;
    double ignored = 0;
    if (mpg123_getstate(mh, MPG123_ENC_DELAY, &value, &ignored) != MPG123_OK) return -1;
    return value;
}
#endif
