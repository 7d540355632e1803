#include <speechgraph/plugin.h>

/// The gate's node class, compiled into the bench program.
const sg_node_class *bench_builtin_gate(void);
/// Its process, called directly (not through a function pointer).
void bench_builtin_gate_process(void *node, const float *input, float *output, uint32_t frames);
