#ifndef SPEECHGRAPH_CSOXR_SHIM_H
#define SPEECHGRAPH_CSOXR_SHIM_H
#include <soxr.h>
#endif
