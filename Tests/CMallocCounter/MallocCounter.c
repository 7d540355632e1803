#define _GNU_SOURCE
#include "CMallocCounter.h"
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

static _Atomic(unsigned long) watched = 0;
static _Atomic(int) watching = 0;
static _Atomic(uint64_t) counted = 0;
static _Atomic(uint64_t) total = 0;

static inline void note(void) {
    atomic_fetch_add_explicit(&total, 1, memory_order_relaxed);
    if (atomic_load_explicit(&watching, memory_order_acquire) &&
        (unsigned long)pthread_self() == atomic_load_explicit(&watched, memory_order_relaxed)) {
        atomic_fetch_add_explicit(&counted, 1, memory_order_relaxed);
    }
}

void sg_malloc_counter_watch(pthread_t thread) {
    atomic_store(&counted, 0);
    atomic_store(&watched, (unsigned long)thread);
    atomic_store_explicit(&watching, 1, memory_order_release);
}
void sg_malloc_counter_unwatch(void) { atomic_store(&watching, 0); }
uint64_t sg_malloc_counter_count(void) { return atomic_load(&counted); }
uint64_t sg_malloc_counter_total(void) { return atomic_load(&total); }

/* ThreadSanitizer has its own malloc, which these would break at start-up: in sanitizer builds the
   counter does not interpose (and the allocation test is not run there). */
#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define SG_NO_INTERPOSE 1
#  endif
#endif
#ifndef SG_NO_INTERPOSE
void *malloc(size_t size) { note(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { note(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { note(); return __libc_realloc(p, size); }
void *memalign(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { note(); return __libc_memalign(alignment, size); }
int posix_memalign(void **out, size_t alignment, size_t size) {
    note();
    void *p = __libc_memalign(alignment, size);
    if (p == NULL) return ENOMEM;
    *out = p;
    return 0;
}
#endif
