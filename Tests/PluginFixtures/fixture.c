// A test plugin (PluginTests): an audio pass-through node, `fixture.pass`, and variants that break the rules,
// each chosen with one -D flag: ABI_MAJOR/ABI_MINOR, NO_ENTRY, BAD_DEFAULT, BAD_PARAMS, CLASH, CRASH_IN_CONSTRUCTOR,
// CRASH_IN_ENTRY, CRASH_IN_CREATE, HANG_IN_ENTRY, MALLOC_IN_PROCESS, FIXTURE_TYPE (another type name; make
// bench builds 20), LOAD_LOG (appends a line to the file named
// by $FIXTURE_LOAD_LOG each time the library is loaded), PORT_NAMES (audio ports named 'audio' and
// 'processed'), NAN_OUTPUT (writes NaN), FRAMES_ONLY (writes only the first `frames` samples, not frames times
// channels), SLOW_PROCESS (sleeps 20 ms in each process call), HANG_AT_22050 (process
// never returns at 22050 Hz, after a line in $FIXTURE_LOAD_LOG), CRASH_AT_22050 (process crashes at 22050 Hz), EVENT_NODE (adds `fixture.count`, an event node that emits a `count`
// for each final result; with BAD_EMIT_KIND it emits a kind it did not declare, with BAD_EMIT_PORT on a port it
// does not have, with FAIL_EVENT it fails on every final result, with FAIL_ON_LEVEL its input accepts results and
// levels and it fails on a level, with CRASH_LATE it also accepts levels and aborts on an event after 10 s, with IGNORE_REFUSAL it does not look at what emit returns, with MISSPELT_KIND its input
// accepts 'levle').
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <speechgraph/plugin.h>

#if defined(ABI_MAJOR)
SG_EXPORT const sg_abi_version speechgraph_plugin_abi = {ABI_MAJOR, ABI_MINOR};
#else
SG_PLUGIN_ABI_VERSION;
#endif

#ifdef CRASH_IN_CONSTRUCTOR
__attribute__((constructor)) static void crash_on_load(void) {
    volatile int *p = NULL;
    *p = 1;
}
#endif

#ifdef LOAD_LOG
__attribute__((constructor)) static void log_load(void) {
    const char *path = getenv("FIXTURE_LOAD_LOG");
    if (!path) return;
    FILE *f = fopen(path, "a");
    if (f) {
        fprintf(f, "loaded in %d\n", (int)getpid());
        fclose(f);
    }
}
#endif

typedef struct pass {
    float gain;
    uint32_t channels;
    uint32_t rate;
} pass;

static void *pass_create(const sg_host *host, const sg_config *config, char *error, size_t error_size) {
    (void)host;
    (void)error;
    (void)error_size;
#ifdef CRASH_IN_CREATE
    volatile int *p = NULL;
    *p = 1;
#endif
    pass *node = calloc(1, sizeof *node);
    node->gain = 1;
    for (uint32_t i = 0; i < config->value_count; i++)
        if (strcmp(config->values[i].name, "gain") == 0) node->gain = (float)config->values[i].number;
    return node;
}

static int pass_prepare(void *node, const sg_audio_setup *setup, char *error, size_t error_size) {
    (void)error;
    (void)error_size;
    ((pass *)node)->channels = setup->input_channels;
    ((pass *)node)->rate = setup->sample_rate;
    return 0;
}

static void pass_process(void *node, const float *input, float *output, uint32_t frames) SG_NONBLOCKING {
    pass *p = node;
#ifdef MALLOC_IN_PROCESS
    void *volatile scratch = malloc(64);
    free(scratch);
#endif
#ifdef SLOW_PROCESS
    usleep(20000);  // 20 ms a call, whatever the block
#endif
#ifdef HANG_AT_22050
    // Never returns at 22050 Hz (validation runs it at other rates): says so in $FIXTURE_LOAD_LOG first.
    if (p->rate == 22050) {
        const char *mark = getenv("FIXTURE_LOAD_LOG");
        FILE *f = mark ? fopen(mark, "a") : NULL;
        if (f) {
            fputs("hanging\n", f);
            fclose(f);
        }
        for (;;) sleep(1);
    }
#endif
#ifdef CRASH_AT_22050
    // Crashes at 22050 Hz (validation runs it at other rates), after its first call.
    static int calls;
    if (p->rate == 22050 && ++calls > 1) {
        volatile int *null = NULL;
        *null = 1;
    }
#endif
#ifdef FRAMES_ONLY
    uint32_t count = frames;  // the mistake: samples are frames times channels
#else
    uint32_t count = frames * p->channels;
#endif
    for (uint32_t i = 0; i < count; i++) {
        float x = input[i] * p->gain;
        output[i] = x == x && x < 1e30f && x > -1e30f ? x : 0;
#ifdef NAN_OUTPUT
        output[i] = __builtin_nanf("");
#endif
    }
}

static void pass_destroy(void *node) { free(node); }

#ifdef PORT_NAMES
static const sg_port_descriptor ports[] = {
    {.name = "audio", .direction = SG_PORT_INPUT, .kind = SG_PORT_AUDIO, .required = 1, .doc = "Audio."},
    {.name = "processed", .direction = SG_PORT_OUTPUT, .kind = SG_PORT_AUDIO, .format_of = "audio",
     .doc = "The same audio."},
};
#else
static const sg_port_descriptor ports[] = {
    {.name = "in", .direction = SG_PORT_INPUT, .kind = SG_PORT_AUDIO, .required = 1, .doc = "Audio."},
    {.name = "out", .direction = SG_PORT_OUTPUT, .kind = SG_PORT_AUDIO, .format_of = "in", .doc = "The same audio."},
};
#endif

static const sg_param_descriptor params[] = {
#ifdef BAD_DEFAULT
    {.name = "gain", .type = SG_PARAM_NUMBER, .number_default = 5, .min = 0, .max = 2, .doc = "Gain."},
#else
    {.name = "gain", .type = SG_PARAM_NUMBER, .number_default = 1, .min = 0, .max = 2, .doc = "Gain."},
#endif
#ifdef BAD_PARAMS
    {.name = "loud", .type = SG_PARAM_BOOLEAN, .number_default = 2, .doc = "A boolean whose default is 2."},
    {.name = "mode", .type = SG_PARAM_CHOICE, .choices = (const char *const[]){"a", "b", "a", NULL},
     .string_default = "a", .doc = "A choice offered twice."},
    {.name = "gain", .type = SG_PARAM_NUMBER, .number_default = 1, .min = 0, .max = 2, .doc = "Again."},
#endif
};

static const sg_node_descriptor descriptor = {
#ifdef CLASH
    .type_name = "vad",
#elif defined(FIXTURE_TYPE)
    .type_name = FIXTURE_TYPE,
#else
    .type_name = "fixture.pass",
#endif
    .summary = "Passes audio through, times a gain (a test plugin).",
    .doc = "",
    .kind = SG_NODE_AUDIO,
    .category = SG_CATEGORY_CONVERTER,
    .flags = SG_NODE_REALTIME_SAFE,
    .ports = ports,
    .port_count = 2,
    .params = params,
    .param_count = sizeof params / sizeof params[0],
};

static const sg_node_class pass_class = {
    .descriptor = &descriptor,
    .create = pass_create,
    .prepare = pass_prepare,
    .process = pass_process,
    .destroy = pass_destroy,
};

#ifdef EVENT_NODE
typedef struct counter {
    const sg_host *host;
    double count;
} counter;

static void *count_create(const sg_host *host, const sg_config *config, char *error, size_t error_size) {
    (void)config;
    (void)error;
    (void)error_size;
    counter *node = calloc(1, sizeof *node);
    node->host = host;
#ifdef EMIT_IN_CREATE
    // A graph takes events only from handle_event and reset: this one is refused.
    sg_value field = {.name = "count", .type = SG_VALUE_NUMBER, .number = 0};
    host->emit(host->context, 0, "count", 0, &field, 1);
#endif
    return node;
}

static int count_handle(void *node, uint32_t port, const sg_event *event, char *error, size_t error_size) {
    (void)port;
    counter *c = node;
#ifdef CRASH_LATE
    // plugin check's events are all within the first 4 s.
    if (event->time > 10) abort();
#endif
#ifdef FAIL_ON_LEVEL
    if (strcmp(event->kind, "level") == 0) {
        snprintf(error, error_size, "levels are not for me");
        return -1;
    }
#endif
    if (strcmp(event->kind, "result") != 0 || !event->is_final) return 0;
#ifdef FAIL_EVENT
    snprintf(error, error_size, "final results are not for me");
    return -1;
#else
    (void)error;
    (void)error_size;
#endif
    c->count += 1;
    sg_value field = {.name = "count", .type = SG_VALUE_NUMBER, .number = c->count};
#if defined(BAD_EMIT_KIND)
    const char *kind = "nope";
#else
    const char *kind = "count";
#endif
#if defined(BAD_EMIT_PORT)
    uint32_t out = 3;
#else
    uint32_t out = 0;
#endif
    int refused = c->host->emit(c->host->context, out, kind, event->time, &field, 1) != 0;
#ifndef IGNORE_REFUSAL
    if (refused) {
        snprintf(error, error_size, "emit of '%s' on port %u returned -1", kind, out);
        return -1;
    }
#else
    (void)refused;
#endif
    return 0;
}

static const char *const count_kinds[] = {"count", NULL};
#if defined(FAIL_ON_LEVEL) || defined(CRASH_LATE)
static const char *const count_accepts[] = {"result", "level", NULL};
#define COUNT_ACCEPTS count_accepts
#elif defined(MISSPELT_KIND)
static const char *const count_accepts[] = {"result", "levle", NULL};
#define COUNT_ACCEPTS count_accepts
#else
#define COUNT_ACCEPTS NULL
#endif
static const sg_port_descriptor count_ports[] = {
    {.name = "in", .direction = SG_PORT_INPUT, .kind = SG_PORT_EVENTS, .event_kinds = COUNT_ACCEPTS,
     .doc = "Events (with FAIL_ON_LEVEL: results and levels)."},
    {.name = "out", .direction = SG_PORT_OUTPUT, .kind = SG_PORT_EVENTS, .event_kinds = count_kinds,
     .doc = "A count per final result."},
};
static const sg_event_kind_descriptor count_kind_docs[] = {{.name = "count", .doc = "Final results so far."}};

static const sg_node_descriptor count_descriptor = {
    .type_name = "fixture.count",
    .summary = "Counts final results (a test plugin).",
    .doc = "",
    .kind = SG_NODE_EVENT,
    .category = SG_CATEGORY_ANALYSIS,
    .ports = count_ports,
    .port_count = 2,
    .event_kinds = count_kind_docs,
    .event_kind_count = 1,
};

static const sg_node_class count_class = {
    .descriptor = &count_descriptor,
    .create = count_create,
    .handle_event = count_handle,
    .destroy = pass_destroy,
};

static const sg_node_class *const classes[] = {&pass_class, &count_class};
#else
static const sg_node_class *const classes[] = {&pass_class};
#endif

static const sg_plugin plugin = {
    .name = "fixture",
    .version = "0.1",
    .description = "A test plugin.",
    .node_classes = classes,
    .node_class_count = sizeof classes / sizeof classes[0],
};

#ifndef NO_ENTRY
SG_EXTERN_C SG_EXPORT const sg_plugin *speechgraph_plugin_entry(void) {
#ifdef CRASH_IN_ENTRY
    volatile int *p = NULL;
    *p = 1;
#endif
#ifdef HANG_IN_ENTRY
    sleep(30);
#endif
    return &plugin;
}
#endif
