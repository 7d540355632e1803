// The gate example compiled into speechgraph-bench, to compare its cost built in with its cost as a plugin
// (make bench): the same source, Plugins/gate/gate.c.
#include "../../Plugins/gate/gate.c"
#include "CBenchGate.h"

const sg_node_class *bench_builtin_gate(void) { return &gate_class; }

void bench_builtin_gate_process(void *node, const float *input, float *output, uint32_t frames) {
    gate_process(node, input, output, frames);
}
