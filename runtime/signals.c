/* SPDX-License-Identifier: MIT */
/* signals.c: the signal flags, their handlers and the wakeup (signals.h). It knows the input
 * delivered alone only as a runtime flag (wr_rt_alone_live), never by name. */
#include "signals.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "out.h"
#include "rt.h"

/* One runtime at a time owns SIGINT, SIGTERM and SIGUSR1; the handlers only touch these
 * flags and uv_async_send, which is async-signal-safe. SIGUSR1 has its own flag: it asks for a
 * status report, never for a stop, and does not count towards "interrupted again". */
static weir_rt_t *volatile signal_rt;
static volatile sig_atomic_t signal_count;
static volatile sig_atomic_t status_requested;

/* REPL mode (a live REPL on signal_rt): SIGINT never stops the job. Inside weir_loop_poll (the
 * user is at the prompt, or the job is waiting) it asks for an INPUT event flagged INTERRUPT;
 * between polls (Lua runs a command) it raises the flag weir_repl_interrupted takes, and a flag
 * Lua has not taken by the next poll becomes that INTERRUPT event. The third Ctrl-C that Lua
 * has not taken exits, as a second stop signal does: Lua is stuck where no hook runs (compiled
 * code, a C call), and the user has no other way out. */
enum { WR_UNTAKEN_INTERRUPTS_MAX = 2 };
static volatile sig_atomic_t repl_sigint;       /* REPL mode is on */
static volatile sig_atomic_t in_poll;           /* weir_loop_poll is running */
static volatile sig_atomic_t prompt_interrupt;  /* an INTERRUPT event is due */
static volatile sig_atomic_t command_interrupt; /* Ctrl-Cs between polls Lua has not taken */
/* The operator running now: Lua stores its id through weir_op_slot, once per operator call
 * (a plain store in compiled code); the second-signal handler reads it. */
static volatile int32_t op_running = -1;

/* How long a stop waits for a stalled stdout (from the first signal), and how long the exit
 * on a second signal waits to write out what is pending (docs/API.md, Signals). */
enum { WR_STOP_WAIT_S = 5, WR_EXIT_WAIT_MS = 2000 };

static void say(const char *text, size_t len)
{
    if (write(2, text, len) < 0) {
        /* nothing left to tell anyone */
    }
}

static void say_str(const char *text)
{
    say(text, strlen(text)); /* strlen is async-signal-safe */
}

/* Decimal digits without stdio (async-signal-safe). */
static void say_size(size_t v)
{
    char d[24];
    size_t i = sizeof d;
    do {
        d[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0 && i > 0);
    say(d + i, sizeof d - i);
}

/* From the handler: writes out weir's pending stdout, names the operator that was running
 * (the driver keeps rt->op_running current per operator call) and exits 1. */
static void exit_interrupted_again(void)
{
    size_t unwritten = wr_out_dump(WR_EXIT_WAIT_MS);
    weir_rt_t *rt = signal_rt;
    int32_t op = op_running;
    if (unwritten > 0) {
        say_str("weir: interrupted again: ");
        say_size(unwritten);
        say_str(" byte(s) of output not written (standard output is not taking data)\n");
    }
    if (rt != NULL && op >= 0 && op < rt->nop_labels && rt->op_labels[op] != NULL) {
        say_str("weir: interrupted again while ");
        say_str(rt->op_labels[op]);
        say_str(" was running, exiting\n");
    } else {
        say_str("weir: interrupted again, exiting\n");
    }
    _exit(1);
}

/* A stop that has waited WR_STOP_WAIT_S: a write stuck on a stalled stdout gives up. */
static void on_stop_overdue(int signo)
{
    (void)signo;
    wr_out_overdue();
}

static void on_signal(int signo)
{
    weir_rt_t *rt = signal_rt;
    if (signo == SIGINT && repl_sigint) {
        if (in_poll) {
            prompt_interrupt = 1;
            if (rt != NULL) {
                uv_async_send(&rt->wake);
            }
            return;
        }
        if (command_interrupt < WR_UNTAKEN_INTERRUPTS_MAX) {
            command_interrupt = command_interrupt + 1;
            return;
        }
        exit_interrupted_again();
    }
    if (signal_count == 0) {
        signal_count = 1;
        alarm(WR_STOP_WAIT_S); /* async-signal-safe; on_stop_overdue bounds the stop */
        if (rt != NULL) {
            uv_async_send(&rt->wake);
        }
        return;
    }
    exit_interrupted_again();
}

/* Signals that arrive before the poll sees the flag coalesce into one STATUS event. */
static void on_status_signal(int signo)
{
    (void)signo;
    status_requested = 1;
    weir_rt_t *rt = signal_rt;
    if (rt != NULL) {
        uv_async_send(&rt->wake);
    }
}

static void on_wake(uv_async_t *h)
{
    (void)h; /* waking uv_run was the point; the poll loop reads the signal flags */
}

int wr_signals_init_wake(weir_rt_t *rt)
{
    return uv_async_init(&rt->loop, &rt->wake, on_wake);
}

/* The REPL reads input until its EOF event or STOP; after that SIGINT stops the job again. */
void wr_signals_sync(weir_rt_t *rt)
{
    if (signal_rt != rt || !rt->signals_installed) {
        return;
    }
    int on = wr_rt_alone_live(rt);
    if (!on) {
        prompt_interrupt = 0;
        command_interrupt = 0;
    }
    repl_sigint = on;
}

void wr_signals_install(weir_rt_t *rt)
{
    if (signal_rt != NULL) {
        return; /* another runtime has them; it restores them when it is freed */
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, SIGINT);
    sigaddset(&sa.sa_mask, SIGTERM);
    sa.sa_flags = SA_RESTART;
    struct sigaction su;
    memset(&su, 0, sizeof su);
    su.sa_handler = on_status_signal;
    sigemptyset(&su.sa_mask);
    su.sa_flags = SA_RESTART;
    struct sigaction sl;
    memset(&sl, 0, sizeof sl);
    sl.sa_handler = on_stop_overdue;
    sigemptyset(&sl.sa_mask);
    sl.sa_flags = 0; /* no SA_RESTART: the write blocked on stdout must return */
    signal_count = 0;
    status_requested = 0;
    repl_sigint = 0;
    prompt_interrupt = 0;
    command_interrupt = 0;
    signal_rt = rt;
    sigaction(SIGINT, &sa, &rt->old_sigint);
    sigaction(SIGTERM, &sa, &rt->old_sigterm);
    sigaction(SIGUSR1, &su, &rt->old_sigusr1);
    sigaction(SIGALRM, &sl, &rt->old_sigalrm);
    rt->signals_installed = 1;
    wr_signals_sync(rt);
}

void wr_signals_restore(weir_rt_t *rt)
{
    if (!rt->signals_installed) {
        return;
    }
    sigaction(SIGINT, &rt->old_sigint, NULL);
    sigaction(SIGTERM, &rt->old_sigterm, NULL);
    alarm(0);
    sigaction(SIGUSR1, &rt->old_sigusr1, NULL);
    sigaction(SIGALRM, &rt->old_sigalrm, NULL);
    signal_rt = NULL;
    signal_count = 0;
    status_requested = 0;
    repl_sigint = 0;
    prompt_interrupt = 0;
    command_interrupt = 0;
    rt->signals_installed = 0;
}

void wr_signals_poll_begin(weir_rt_t *rt)
{
    op_running = -1; /* waiting is no operator's doing */
    if (signal_rt == rt) {
        in_poll = 1; /* first: a Ctrl-C from now on asks for an INTERRUPT itself */
        if (command_interrupt > 0) {
            command_interrupt = 0; /* the command is over; Lua did not take it */
            prompt_interrupt = 1;
        }
    }
}

void wr_signals_poll_end(weir_rt_t *rt)
{
    if (signal_rt == rt) {
        in_poll = 0;
    }
}

int wr_signals_stop_asked(const weir_rt_t *rt)
{
    return signal_rt == rt && signal_count > 0;
}

int wr_signals_take_status(weir_rt_t *rt)
{
    if (signal_rt != rt || !status_requested) {
        return 0;
    }
    status_requested = 0; /* cleared first: a later signal asks for another report */
    return 1;
}

int wr_signals_take_interrupt(weir_rt_t *rt)
{
    if (signal_rt != rt || !prompt_interrupt) {
        return 0;
    }
    prompt_interrupt = 0;
    return 1;
}

/* Outside REPL mode always 0. */
int wr_signals_take_command_interrupt(weir_rt_t *rt)
{
    if (rt == NULL || signal_rt != rt || !repl_sigint || command_interrupt == 0) {
        return 0;
    }
    command_interrupt = 0;
    return 1;
}

int wr_signals_command_interrupt_pending(const weir_rt_t *rt)
{
    return rt != NULL && signal_rt == rt && repl_sigint && command_interrupt > 0;
}

int32_t *weir_op_slot(void)
{
    return (int32_t *)&op_running;
}
