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
#endif
