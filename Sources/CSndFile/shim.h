#ifndef SPEECHGRAPH_CSNDFILE_SHIM_H
#define SPEECHGRAPH_CSNDFILE_SHIM_H
#include <sndfile.h>
#endif
