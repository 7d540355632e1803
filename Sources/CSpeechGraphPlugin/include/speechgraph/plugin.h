/*
 * speechgraph/plugin.h: the speechgraph plugin ABI, version 1.0.
 *
 * A plugin is a shared library (.so) in a plugin directory (docs/plugins.md). It exports two symbols:
 *
 *   const sg_abi_version speechgraph_plugin_abi;          data: the ABI it was built against
 *   const sg_plugin *speechgraph_plugin_entry(void);       its descriptors and factories
 *
 * The host reads `speechgraph_plugin_abi` first, without running any plugin code, and refuses the plugin
 * when its major differs from the host's or its minor is newer than the host's (SG_ABI_IS_COMPATIBLE).
 * Only then does it call `speechgraph_plugin_entry`. Declare the first with SG_PLUGIN_ABI_VERSION.
 *
 * Threads. Every function pointer below says which thread may call it:
 *   [main-thread]   the thread that loads plugins and builds or tears down graphs (a graph's nodes are
 *                   destroyed on its graph thread as it ends). Never concurrently with another [main-thread]
 *                   call into the same plugin: the host makes them one at a time.
 *   [graph-thread]  a running graph's own thread (one per graph; several graphs may run at once, so two
 *                   instances may be called at the same time from two threads, one instance never).
 *   [audio-thread]  the audio server's real-time thread (the JACK process callback), only for audio nodes
 *                   that set SG_NODE_REALTIME_SAFE; otherwise the graph thread calls them.
 *
 * Real-time rules for `process` when SG_NODE_REALTIME_SAFE is set: it must not allocate or free memory,
 * take a lock that another thread may hold, wait, sleep, do I/O (no printf, no files, no sockets), call into
 * the host other than through what it is handed, or take time that grows other than with the block size.
 * Allocate in `create` and `prepare`. `speechgraph plugin check` runs `process` under RealtimeSanitizer when
 * the plugin is built with `-fsanitize=realtime`: mark `process` SG_NONBLOCKING so that it checks it.
 *
 * Strings the plugin hands to the host (descriptors, error messages) are UTF-8 and stay valid as long as
 * the library is loaded, except error messages, which are copied during the call. Strings the host hands to
 * the plugin are valid during the call only.
 *
 * This header is C99 and C++ compatible. Structures may only grow at their end, in a new minor version.
 */
#ifndef SPEECHGRAPH_PLUGIN_H
#define SPEECHGRAPH_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SG_ABI_MAJOR 1
#define SG_ABI_MINOR 0

/* A plugin built against MAJOR.MINOR loads in a host whose major is equal and whose minor is not older. */
#define SG_ABI_IS_COMPATIBLE(host_major, host_minor, plugin_major, plugin_minor) \
    ((plugin_major) == (host_major) && (plugin_minor) <= (host_minor))

#if defined(__GNUC__) || defined(__clang__)
#define SG_EXPORT __attribute__((visibility("default")))
#else
#define SG_EXPORT
#endif

/* Marks a function that must be real-time safe; RealtimeSanitizer (-fsanitize=realtime) checks it. */
#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(nonblocking)
#define SG_NONBLOCKING __attribute__((nonblocking))
#endif
#endif
#ifndef SG_NONBLOCKING
#define SG_NONBLOCKING
#endif

typedef struct sg_abi_version {
    uint32_t major;
    uint32_t minor;
} sg_abi_version;

#ifdef __cplusplus
#define SG_EXTERN_C extern "C"
#else
#define SG_EXTERN_C
#endif

/* In exactly one C file of a plugin: `SG_PLUGIN_ABI_VERSION;` */
#define SG_PLUGIN_ABI_VERSION \
    SG_EXTERN_C SG_EXPORT const sg_abi_version speechgraph_plugin_abi = {SG_ABI_MAJOR, SG_ABI_MINOR}

/* ---- Descriptors: everything the host knows of a node type without running it. ---- */

typedef enum sg_port_direction { SG_PORT_INPUT = 0, SG_PORT_OUTPUT = 1 } sg_port_direction;
typedef enum sg_port_kind { SG_PORT_AUDIO = 0, SG_PORT_EVENTS = 1 } sg_port_kind;

/* One port. Audio is 32-bit float, interleaved, in -1...1. */
typedef struct sg_port_descriptor {
    const char *name;           /* "in", "out", "events": lower case, letters, digits, '-' */
    uint32_t direction;         /* sg_port_direction */
    uint32_t kind;              /* sg_port_kind */
    /* Audio inputs: the rate it accepts (0: any) and its channel count (0: any). The host converts the rate,
       and mixes several channels down to one; it makes no more channels than the audio has. */
    uint32_t rate;
    uint32_t channels;
    /* Audio outputs: the name of the audio input whose format it has, with `channels` replacing the
       channel count when non-zero. (Version 1 audio nodes keep the rate.) */
    const char *format_of;
    /* Event ports: the kinds an output emits or an input accepts, a NULL-terminated list; NULL: any kind. */
    const char *const *event_kinds;
    uint32_t required;          /* inputs: the graph is invalid while it is unconnected */
    const char *doc;
} sg_port_descriptor;

typedef enum sg_param_type {
    SG_PARAM_NUMBER = 0,   /* a plain number: number_default, min, max */
    SG_PARAM_INTEGER = 1,  /* a whole number: number_default, min, max */
    SG_PARAM_BOOLEAN = 2,  /* number_default 0 or 1 */
    SG_PARAM_STRING = 3,   /* string_default (NULL: none) */
    SG_PARAM_CHOICE = 4,   /* one of `choices` (NULL-terminated); string_default */
    SG_PARAM_QUANTITY = 5  /* a number with a unit: `unit`; number_default, min, max in that unit */
} sg_param_type;

typedef struct sg_param_descriptor {
    const char *name;
    uint32_t type;               /* sg_param_type */
    const char *unit;            /* quantities: "Hz", "kHz", "s", "ms", "us" or "dB" */
    double number_default;
    const char *string_default;
    double min, max;             /* numbers, integers and quantities: the range the host enforces */
    const char *const *choices;  /* SG_PARAM_CHOICE */
    uint32_t required;           /* no default: the graph must set it */
    const char *doc;
} sg_param_descriptor;

/* An event kind the plugin adds (a name like "phraseHeard"), with what it means. */
typedef struct sg_event_kind_descriptor {
    const char *name;
    const char *doc;
} sg_event_kind_descriptor;

typedef enum sg_node_kind {
    /* Audio in, audio out: `process`. Exactly one audio input and one audio output (any names; "in" and "out"
       by convention). */
    SG_NODE_AUDIO = 0,
    /* Events in, events out: `handle_event`; never on the real-time thread. No audio ports. */
    SG_NODE_EVENT = 1
} sg_node_kind;

enum {
    /* An audio node whose `process` keeps the real-time rules above: the host may run it on the audio
       server's real-time thread (straight after a jack.input). */
    SG_NODE_REALTIME_SAFE = 1u << 0
};

typedef enum sg_category {
    SG_CATEGORY_INPUT = 0, SG_CATEGORY_CONVERTER = 1, SG_CATEGORY_ANALYSIS = 2,
    SG_CATEGORY_RECOGNIZER = 3, SG_CATEGORY_SINK = 4
} sg_category;

typedef struct sg_node_descriptor {
    const char *type_name;  /* how graph files name it: "vendor.thing" or "thing"; must not clash */
    const char *summary;    /* one line */
    const char *doc;        /* a paragraph, or "" */
    uint32_t kind;          /* sg_node_kind */
    uint32_t category;      /* sg_category */
    uint32_t flags;         /* SG_NODE_REALTIME_SAFE */
    const sg_port_descriptor *ports;
    uint32_t port_count;
    const sg_param_descriptor *params;
    uint32_t param_count;
    const sg_event_kind_descriptor *event_kinds;
    uint32_t event_kind_count;
} sg_node_descriptor;

/* ---- Values, configuration and events. ---- */

typedef enum sg_value_type {
    SG_VALUE_NUMBER = 0, SG_VALUE_INTEGER = 1, SG_VALUE_BOOLEAN = 2, SG_VALUE_STRING = 3
} sg_value_type;

/* A named value: a parameter as configured, or a field of an event. Quantities are in their canonical
   unit (Hz, s, dB). */
typedef struct sg_value {
    const char *name;
    uint32_t type;       /* sg_value_type */
    double number;       /* NUMBER */
    int64_t integer;     /* INTEGER, BOOLEAN (0 or 1) */
    const char *string;  /* STRING */
} sg_value;

/* A node's parameters: every parameter of its descriptor that has a value (defaults filled in, ranges
   checked by the host). */
typedef struct sg_config {
    const char *node_name;  /* the name the graph gives the node */
    const sg_value *values;
    uint32_t value_count;
} sg_config;

/* An event on an event port. `json` is its JSON Lines form (docs/events.md) and is always set; the other
   fields spare a C plugin from parsing it. */
typedef struct sg_event {
    const char *kind;         /* "result", "speechStarted", ..., or a kind a node type added */
    const char *node;         /* the node that emitted it */
    double time;              /* seconds of audio time: the moment, or a result's start; NaN when none */
    double end_time;          /* results and gaps: the end; NaN otherwise */
    const char *text;         /* results: the transcript; NULL otherwise */
    int32_t is_final;         /* results: 1 when final */
    int32_t utterance;        /* results: the utterance number; 0 otherwise */
    const sg_value *fields;   /* events a node type added: their fields; results: text, isFinal, utterance,
                                 start, end and rejected (1: speech outside the grammar or domain model, which a
                                 voice-control node should not act on) */
    uint32_t field_count;
    const char *json;
} sg_event;

/* What the host hands a node when it is created. Valid until `destroy`. */
typedef struct sg_host {
    sg_abi_version abi;    /* the host's ABI version */
    void *context;         /* pass it back to the functions below */
    /* [graph-thread] Event nodes, during `handle_event` or `reset`: emit an event of `kind` (one the
       output port declares) on event output `port` (index among the node's outputs), at audio time `time`
       (NaN: none), with `count` fields. Returns 0, or -1 when the kind or the port is refused. */
    int (*emit)(void *context, uint32_t port, const char *kind, double time, const sg_value *fields,
                uint32_t count);
    /* [main-thread, graph-thread] Tell the user something that did not stop the node (once per cause). It is
       printed when the run ends, after the node's name, and makes the run's exit status 1. */
    void (*warn)(void *context, const char *message);
} sg_host;

/* The audio format of a prepared audio node. */
typedef struct sg_audio_setup {
    uint32_t sample_rate;
    uint32_t input_channels;
    uint32_t output_channels;
    uint32_t max_frames;     /* `process` is never called with more frames than this */
} sg_audio_setup;

/* ---- Factories: one per node type. ---- */

typedef struct sg_node_class {
    const sg_node_descriptor *descriptor;

    /* [main-thread] Make a node. Returns NULL and writes a sentence to `error` (at most `error_size`
       bytes, NUL-terminated) when it cannot. */
    void *(*create)(const sg_host *host, const sg_config *config, char *error, size_t error_size);

    /* [main-thread] Audio nodes: the format is now fixed; allocate what `process` needs. Called again
       (after `reset`) when the format changes. Returns 0, or -1 with a sentence in `error`. Event nodes:
       may be NULL. */
    int (*prepare)(void *node, const sg_audio_setup *setup, char *error, size_t error_size);

    /* [audio-thread] with SG_NODE_REALTIME_SAFE, else [graph-thread]. Audio nodes: `frames` frames of
       `input` (input_channels interleaved) to `output` (output_channels interleaved); 1 <= frames <=
       max_frames. `output` may equal `input` when the channel counts are equal (process in place).
       Input may hold NaN, infinities and denormals; output must not. */
    void (*process)(void *node, const float *input, float *output, uint32_t frames);

    /* [graph-thread] Event nodes: an event arriving on event input `port` (index among the inputs).
       Returns 0, or -1 with a sentence in `error` to stop the graph. */
    int (*handle_event)(void *node, uint32_t port, const sg_event *event, char *error, size_t error_size);

    /* [graph-thread] The input ended (or the audio was interrupted): emit what is still held and forget
       the stream's state, so that the node can start on a new stream. May be NULL. */
    void (*reset)(void *node);

    /* [main-thread] Free the node. */
    void (*destroy)(void *node);
} sg_node_class;

/* ---- The plugin. ---- */

typedef struct sg_plugin {
    const char *name;          /* "noise-gate" */
    const char *version;       /* the plugin's own version, "1.2.0" */
    const char *description;
    const char *url;           /* may be NULL */
    /* [main-thread] Called before any node is created; may be called more than once, each call balanced by
       `deinit`. Returns 0, or -1 to refuse to load. May be NULL. */
    int (*init)(void);
    /* [main-thread] May be NULL. */
    void (*deinit)(void);
    const sg_node_class *const *node_classes;
    uint32_t node_class_count;
} sg_plugin;

/* [main-thread] The plugin's one entry point. */
typedef const sg_plugin *(*sg_plugin_entry_fn)(void);
#define SG_PLUGIN_ENTRY_SYMBOL "speechgraph_plugin_entry"
#define SG_PLUGIN_ABI_SYMBOL "speechgraph_plugin_abi"

#ifdef __cplusplus
}
#endif

/* The entry point's prototype: a plugin defines it as `SG_EXTERN_C SG_EXPORT const sg_plugin
   *speechgraph_plugin_entry(void) { ... }`. Declared here with C linkage, so that in a C++ plugin the
   definition keeps the name the host looks for even without `SG_EXTERN_C` (not a mangled one), and a C plugin
   built with -Wmissing-prototypes gets no warning. Swift plugins define it with
   `@_cdecl("speechgraph_plugin_entry")` under another Swift name (`entry`), beside the imported declaration. */
#ifndef SG_NO_ENTRY_PROTOTYPE
SG_EXTERN_C SG_EXPORT const sg_plugin *speechgraph_plugin_entry(void);
#endif

#endif /* SPEECHGRAPH_PLUGIN_H */
