#ifndef SPEECHGRAPH_MALLOC_COUNTER_H
#define SPEECHGRAPH_MALLOC_COUNTER_H
#include <pthread.h>
#include <stdint.h>

/* Counts every malloc, calloc, realloc, posix_memalign, aligned_alloc and memalign made by one
   watched thread (the JACK process thread, in the tests). Linked into the test binary only: its
   definitions of those functions stand in front of glibc's and forward to glibc's own. */
void sg_malloc_counter_watch(pthread_t thread);
void sg_malloc_counter_unwatch(void);
uint64_t sg_malloc_counter_count(void);
/* Allocations by any thread, to show that the interposer is in place at all. */
uint64_t sg_malloc_counter_total(void);
#endif
