// Names the plugin node a crash happened in (docs/plugins.md, "At run time"). The host marks the calling thread
// around each call into a plugin node; a fault (or abort) while the mark is set prints one line naming the node
// and the call on standard error, then goes on to the handler that was there before (Swift's backtracer, or the
// default: the process ends with the signal). Marks are per thread, so graphs running at once do not mix.
#ifndef SPEECHGRAPH_PLUGIN_GUARD_H
#define SPEECHGRAPH_PLUGIN_GUARD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// The call into a plugin node that a mark names.
typedef enum sg_guard_call {
    SG_GUARD_CREATE = 0,
    SG_GUARD_PREPARE,
    SG_GUARD_PROCESS,
    SG_GUARD_HANDLE_EVENT,
    SG_GUARD_RESET,
    SG_GUARD_DESTROY,
} sg_guard_call;

/// What the calling thread's mark was before `sg_guard_enter`, to give back to `sg_guard_leave`.
typedef struct sg_guard_mark {
    const char *node;
    int call;
} sg_guard_mark;

/// Installs the handlers once per process (later calls do nothing). Also tells whether standard error is a
/// terminal, which decides if the line first clears a status line.
void sg_guard_install(void);

/// Marks the calling thread as being inside `call` of the node described by `node` (a C string that outlives the
/// call, e.g. "node 'g' (gate, plugin /usr/lib/.../gate.so)"), or as outside any plugin when `node` is NULL (the
/// host's code a plugin calls back into). Never allocates, locks or makes a system call: safe on a real-time
/// thread.
sg_guard_mark sg_guard_enter(const char *node, sg_guard_call call);

/// Puts back the mark `sg_guard_enter` returned.
void sg_guard_leave(sg_guard_mark previous);

/// A plugin's real-time `process`, its instance and its description, run by `sg_guarded_process` on the audio
/// server's thread with the mark set.
typedef struct sg_guarded_processor {
    void (*process)(void *node, const float *input, float *output, uint32_t frames);
    void *instance;
    const char *node;
} sg_guarded_processor;

/// Calls `((sg_guarded_processor *)processor)->process` with its instance, marked as the node's `process`.
void sg_guarded_process(void *processor, const float *input, float *output, uint32_t frames);

#ifdef __cplusplus
}
#endif

#endif
