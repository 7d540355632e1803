// noise-gate: a speechgraph plugin in C (docs/plugins.md). One audio node, `gate`, that silences audio
// below a threshold, opening in `attack` and closing in `release` after `hold`. It keeps the real-time rules
// (no allocation, lock, I/O or wait in `process`), so the host may run it on the JACK real-time thread.
//
// Built by the package (libspeechgraph-gate.so), or out of tree:
//   cc -shared -fPIC -O2 $(pkg-config --cflags speechgraph-plugin) gate.c -o gate.so -lm
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <speechgraph/plugin.h>

SG_PLUGIN_ABI_VERSION;

typedef struct gate {
    double threshold_db, attack_s, release_s, hold_s, floor_db;
    // Set by prepare.
    float open_level, close_level;  // linear; close 3 dB below open (hysteresis)
    float attack_step, release_step;  // gain change per frame
    float floor_gain;
    uint32_t hold_frames, channels;
    // State.
    float gain;
    uint32_t held;
    int open;
} gate;

static double value_of(const sg_config *config, const char *name, double fallback) {
    for (uint32_t i = 0; i < config->value_count; i++) {
        const sg_value *v = &config->values[i];
        if (strcmp(v->name, name) == 0) return v->type == SG_VALUE_INTEGER ? (double)v->integer : v->number;
    }
    return fallback;
}

static void *gate_create(const sg_host *host, const sg_config *config, char *error, size_t error_size) {
    (void)host;
    gate *g = (gate *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(error, error_size, "out of memory");
        return NULL;
    }
    g->threshold_db = value_of(config, "threshold", -45);
    g->attack_s = value_of(config, "attack", 0.002);
    g->release_s = value_of(config, "release", 0.15);
    g->hold_s = value_of(config, "hold", 0.2);
    g->floor_db = value_of(config, "floor", -80);
    return g;
}

static int gate_prepare(void *node, const sg_audio_setup *setup, char *error, size_t error_size) {
    gate *g = (gate *)node;
    if (setup->sample_rate == 0 || setup->input_channels == 0 || setup->input_channels != setup->output_channels) {
        snprintf(error, error_size, "the gate needs as many output channels as input channels");
        return -1;
    }
    double rate = setup->sample_rate;
    g->channels = setup->input_channels;
    g->open_level = (float)pow(10, g->threshold_db / 20);
    g->close_level = (float)pow(10, (g->threshold_db - 3) / 20);
    g->floor_gain = (float)pow(10, g->floor_db / 20);
    g->attack_step = (float)(1.0 / fmax(1, g->attack_s * rate));
    g->release_step = (float)(1.0 / fmax(1, g->release_s * rate));
    g->hold_frames = (uint32_t)(g->hold_s * rate);
    g->gain = g->floor_gain;
    g->held = 0;
    g->open = 0;
    return 0;
}

// Real-time safe: arithmetic on memory prepared beforehand, nothing else. Aligned to a cache line, so that its
// loop costs the same wherever the linker puts it (built in or loaded as a plugin).
__attribute__((aligned(64))) static void gate_process(void *node, const float *input, float *output,
                                                     uint32_t frames) SG_NONBLOCKING {
    gate *g = (gate *)node;
    const uint32_t channels = g->channels;
    float gain = g->gain;
    for (uint32_t f = 0; f < frames; f++) {
        const float *in = input + (size_t)f * channels;
        float *out = output + (size_t)f * channels;
        float peak = 0;
        float clean[64];
        for (uint32_t c = 0; c < channels && c < 64; c++) {
            float x = in[c];
            // NaN and infinities become silence; denormals become zero.
            if (!isfinite(x) || fabsf(x) < 1e-30f) x = 0;
            clean[c] = x;
            float a = fabsf(x);
            if (a > peak) peak = a;
        }
        if (peak >= g->open_level) {
            g->open = 1;
            g->held = 0;
        } else if (g->open && peak < g->close_level) {
            if (++g->held > g->hold_frames) g->open = 0;
        }
        if (g->open) {
            gain += g->attack_step;
            if (gain > 1) gain = 1;
        } else {
            gain -= g->release_step;
            if (gain < g->floor_gain) gain = g->floor_gain;
        }
        for (uint32_t c = 0; c < channels; c++) out[c] = c < 64 ? clean[c] * gain : 0;
    }
    g->gain = gain;
}

static void gate_reset(void *node) {
    gate *g = (gate *)node;
    g->gain = g->floor_gain;
    g->held = 0;
    g->open = 0;
}

static void gate_destroy(void *node) { free(node); }

static const sg_port_descriptor ports[] = {
    {.name = "in", .direction = SG_PORT_INPUT, .kind = SG_PORT_AUDIO, .required = 1,
     .doc = "Audio to gate, any rate, 1 to 64 channels."},
    {.name = "out", .direction = SG_PORT_OUTPUT, .kind = SG_PORT_AUDIO, .format_of = "in",
     .doc = "The same audio, silenced while it stays below the threshold."},
};

static const sg_param_descriptor params[] = {
    {.name = "threshold", .type = SG_PARAM_QUANTITY, .unit = "dB", .number_default = -45, .min = -120, .max = 0,
     .doc = "Peak level (dBFS) that opens the gate; it closes 3 dB below."},
    {.name = "attack", .type = SG_PARAM_QUANTITY, .unit = "ms", .number_default = 2, .min = 0, .max = 1000,
     .doc = "Time to open fully."},
    {.name = "hold", .type = SG_PARAM_QUANTITY, .unit = "ms", .number_default = 200, .min = 0, .max = 5000,
     .doc = "Time the level must stay below the threshold before the gate closes."},
    {.name = "release", .type = SG_PARAM_QUANTITY, .unit = "ms", .number_default = 150, .min = 1, .max = 5000,
     .doc = "Time to close fully."},
    {.name = "floor", .type = SG_PARAM_QUANTITY, .unit = "dB", .number_default = -80, .min = -120, .max = 0,
     .doc = "Gain while closed."},
};

static const sg_node_descriptor gate_descriptor = {
    .type_name = "gate",
    .summary = "Noise gate: silences audio below a threshold (a C plugin; real-time safe).",
    .doc = "Opens when the peak level reaches 'threshold', stays open for 'hold' after it falls 3 dB below, and "
           "fades in over 'attack' and out over 'release'. Samples that are not numbers become silence. Placed "
           "straight after a jack.input, it runs on the JACK real-time thread.",
    .kind = SG_NODE_AUDIO,
    .category = SG_CATEGORY_CONVERTER,
    .flags = SG_NODE_REALTIME_SAFE,
    .ports = ports,
    .port_count = sizeof ports / sizeof ports[0],
    .params = params,
    .param_count = sizeof params / sizeof params[0],
};

static const sg_node_class gate_class = {
    .descriptor = &gate_descriptor,
    .create = gate_create,
    .prepare = gate_prepare,
    .process = gate_process,
    .reset = gate_reset,
    .destroy = gate_destroy,
};

static const sg_node_class *const classes[] = {&gate_class};

static const sg_plugin plugin = {
    .name = "noise-gate",
    .version = "1.0.0",
    .description = "A noise gate for speech: silence between words stays silent.",
    .url = NULL,
    .node_classes = classes,
    .node_class_count = 1,
};

SG_EXTERN_C SG_EXPORT const sg_plugin *speechgraph_plugin_entry(void) { return &plugin; }
