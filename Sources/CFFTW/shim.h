#ifndef SPEECHGRAPH_CFFTW_SHIM_H
#define SPEECHGRAPH_CFFTW_SHIM_H
#include <fftw3.h>
#endif
