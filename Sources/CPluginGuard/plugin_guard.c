// See include/plugin_guard.h. Everything the handler does is async-signal-safe: write(2), sigaction(2), raise(3).
#include "plugin_guard.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static _Thread_local const char *marked_node;
static _Thread_local int marked_call = -1;

static const int guarded_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, SIGTRAP};
#define GUARDED_COUNT (sizeof guarded_signals / sizeof guarded_signals[0])
// The handler each signal had before: set once, in sg_guard_install, before ours can run.
static struct sigaction previous_actions[GUARDED_COUNT];
static int stderr_is_terminal;
static pthread_once_t installed = PTHREAD_ONCE_INIT;

static const char *const call_names[] = {"create", "prepare", "process", "handle_event", "reset", "destroy"};

static const char *signal_name(int signal) {
    switch (signal) {
    case SIGSEGV: return "Segmentation fault";
    case SIGBUS: return "Bus error";
    case SIGILL: return "Illegal instruction";
    case SIGFPE: return "Floating point exception";
    case SIGABRT: return "Aborted";
    case SIGTRAP: return "Trace/breakpoint trap";
    default: return "a fatal signal";
    }
}

static void say(const char *text) {
    size_t left = strlen(text);
    while (left > 0) {
        ssize_t n = write(2, text, left);
        if (n <= 0) return;
        text += n;
        left -= (size_t)n;
    }
}

static void on_fatal_signal(int signal, siginfo_t *info, void *context) {
    (void)context;
    const char *node = marked_node;
    int call = marked_call;
    size_t index = 0;
    while (index < GUARDED_COUNT && guarded_signals[index] != signal) index++;
    // The plugin's own doing: a fault (the kernel's si_code > 0), or abort() or raise() in this process. A signal
    // sent from outside (kill -SEGV) is not blamed on whatever node this thread happens to be in.
    int own = info == NULL || info->si_code > 0 || info->si_code == SI_KERNEL
              || ((info->si_code == SI_TKILL || info->si_code == SI_USER) && info->si_pid == getpid());
    if (node && own) {
        marked_node = NULL;
        if (stderr_is_terminal) say("\r\033[2K");
        say("speechgraph: error: ");
        say(node);
        say(" crashed in its ");
        say(call >= 0 && call <= SG_GUARD_DESTROY ? call_names[call] : "code");
        say(" function (");
        say(signal_name(signal));
        say(")\n");
    }
    // On to the handler that was there before (or the default action, which ends the process).
    if (index < GUARDED_COUNT) sigaction(signal, &previous_actions[index], NULL);
    else {
        struct sigaction fallback;
        memset(&fallback, 0, sizeof fallback);
        fallback.sa_handler = SIG_DFL;
        sigaction(signal, &fallback, NULL);
    }
    // A fault happens again when the handler returns, into that handler. A signal that was sent (abort, kill),
    // and a trap whose instruction does not run again (x86's int3: SIGTRAP past it, si_code SI_KERNEL), is sent
    // again: it arrives at that handler once this one returns.
    if (info == NULL || info->si_code <= 0 || info->si_code == SI_KERNEL || signal == SIGABRT || signal == SIGTRAP)
        raise(signal);
}

static void install_once(void) {
    stderr_is_terminal = isatty(2);
    for (size_t i = 0; i < GUARDED_COUNT; i++) {
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_sigaction = on_fatal_signal;
        action.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&action.sa_mask);
        sigaction(guarded_signals[i], &action, &previous_actions[i]);
    }
}

void sg_guard_install(void) { pthread_once(&installed, install_once); }

sg_guard_mark sg_guard_enter(const char *node, sg_guard_call call) {
    sg_guard_mark previous = {marked_node, marked_call};
    marked_node = node;
    marked_call = (int)call;
    return previous;
}

void sg_guard_leave(sg_guard_mark previous) {
    marked_node = previous.node;
    marked_call = previous.call;
}

void sg_guarded_process(void *processor, const float *input, float *output, uint32_t frames) {
    const sg_guarded_processor *p = processor;
    sg_guard_mark previous = sg_guard_enter(p->node, SG_GUARD_PROCESS);
    p->process(p->instance, input, output, frames);
    sg_guard_leave(previous);
}
