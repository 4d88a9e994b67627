/* SPDX-License-Identifier: MIT */
/* loop.c: owns the uv loop and turns ready input, due ticks and the wakeup into event batches
 * for weir_loop_poll (pull, never push: C never calls Lua). Invariant: uv_run only runs while
 * the batch being filled is empty, so no record handed out by this poll can be moved by a read
 * that lands in the same source buffer. */
#include "loop.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "fields.h"
#include "mem.h"
#include "out.h"
#include "repl.h"
#include "rt.h"

/* ---- signals ---------------------------------------------------------------------------- */

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

/* The REPL reads input until its EOF event or STOP; after that SIGINT stops the job again. */
static int repl_live(const weir_rt_t *rt)
{
    return rt->repl != NULL && !rt->stop_delivered && wr_repl_live(rt);
}

void wr_loop_sync_signals(weir_rt_t *rt)
{
    if (signal_rt != rt || !rt->signals_installed) {
        return;
    }
    int on = repl_live(rt);
    if (!on) {
        prompt_interrupt = 0;
        command_interrupt = 0;
    }
    repl_sigint = on;
}

static void install_signals(weir_rt_t *rt)
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
    wr_loop_sync_signals(rt);
}

static void restore_signals(weir_rt_t *rt)
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

/* Between polls, so Lua's debug hook can end a long command; outside REPL mode always 0. */
int32_t weir_repl_interrupted(weir_rt_t *rt)
{
    if (rt == NULL || signal_rt != rt || !repl_sigint || command_interrupt == 0) {
        return 0;
    }
    command_interrupt = 0;
    return 1;
}

static void on_wake(uv_async_t *h)
{
    (void)h; /* waking uv_run was the point; the poll loop reads the signal flags */
}

static void on_timer(uv_timer_t *h)
{
    (void)h;
}

/* ---- helpers for the sources (loop.h) ---------------------------------------------------- */

int64_t wr_loop_next_tick(int64_t start_ms, int64_t interval_ms, int64_t now_ms)
{
    assert(interval_ms > 0);
    if (now_ms < start_ms + interval_ms) {
        return start_ms + interval_ms;
    }
    int64_t k = (now_ms - start_ms) / interval_ms + 1;
    return start_ms + k * interval_ms;
}

int wr_loop_error(weir_rt_t *rt, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->err.msg, sizeof rt->err.msg, fmt, ap);
    va_end(ap);
    rt->err.code = code;
    return code;
}

int wr_loop_fail(weir_rt_t *rt, int code, const char *fmt, ...)
{
    if (rt->fail.code != 0) {
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rt->fail.msg, sizeof rt->fail.msg, fmt, ap);
    va_end(ap);
    rt->fail.code = code;
    return code;
}

int wr_loop_may_add(weir_rt_t *rt)
{
    if (rt->started) {
        wr_loop_error(rt, WEIR_ESTATE, "sources must be declared before weir_rt_start");
        return 0;
    }
    return 1;
}

static void destroy_source(wr_source_t *s)
{
    wr_free(s->describe);
    s->describe = NULL;
    s->ops->destroy(s);
}

int32_t wr_loop_add_source(weir_rt_t *rt, wr_source_t *s, const char *describe)
{
    if (!wr_loop_may_add(rt)) {
        destroy_source(s);
        return WEIR_ESTATE;
    }
    if ((size_t)rt->nsources == rt->sources_cap) {
        rt->sources_cap = rt->sources_cap ? rt->sources_cap * 2 : 4;
        rt->sources = wr_xreallocarray(rt->sources, rt->sources_cap, sizeof *rt->sources);
    }
    s->rt = rt;
    s->id = rt->nsources;
    s->describe = wr_xstrdup(describe);
    rt->sources[rt->nsources++] = s;
    return s->id;
}

int64_t wr_loop_now(const weir_rt_t *rt)
{
    return rt->now_ms;
}

int32_t wr_loop_room(const weir_rt_t *rt)
{
    return rt->max - rt->n;
}

weir_event_t *wr_loop_push(weir_rt_t *rt, wr_source_t *s, int32_t kind)
{
    if (rt->n >= rt->max) {
        return NULL;
    }
    weir_event_t *e = &rt->out[rt->n++];
    e->kind = kind;
    e->source = s ? s->id : -1;
    e->ptr = NULL;
    e->len = 0;
    e->flags = 0;
    e->index = 0;
    e->time_ms = (double)rt->now_ms;
    return e;
}

/* An overlong record: counted, and the first one per source reported on stderr. */
static void count_dropped(wr_source_t *s, const wr_lines_t *l, const wr_line_t *rec)
{
    s->stat[WEIR_STAT_DROPPED] += 1;
    if (!s->drop_reported) {
        s->drop_reported = 1;
        fprintf(stderr, "weir: %s: line %lld: record longer than %zu bytes dropped\n",
                s->describe, (long long)rec->index, l->max_bytes);
    }
}

/* The next line of l into rec, the unterminated last one too at EOF: WR_LINES_RECORD,
 * WR_LINES_NONE (none complete yet, or nothing left), or WR_LINES_DROPPED for an overlong
 * line, which is counted and reported here. */
static int next_line(wr_source_t *s, wr_lines_t *l, int at_eof, wr_line_t *rec)
{
    int r = wr_lines_next(l, rec);
    if (r == WR_LINES_NONE && at_eof) {
        r = wr_lines_finish(l, rec);
    }
    if (r == WR_LINES_DROPPED) {
        count_dropped(s, l, rec);
    }
    return r;
}

int wr_loop_emit_text(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof)
{
    for (;;) {
        if (rt->n >= rt->max) {
            return 0;
        }
        wr_line_t rec;
        int r = next_line(s, l, at_eof, &rec);
        if (r == WR_LINES_NONE) {
            return 1;
        }
        if (r == WR_LINES_DROPPED) {
            continue;
        }
        weir_event_t *e = wr_loop_push(rt, s, WEIR_EV_LINE);
        e->ptr = rec.ptr;
        e->len = (int32_t)rec.len; /* rec.len <= max_bytes <= INT32_MAX */
        e->flags = rec.flags == WR_LINE_TRUNCATED_EOF ? WEIR_LINE_TRUNCATED_EOF : 0;
        e->index = (double)rec.index;
        s->stat[WEIR_STAT_RECORDS] += 1;
    }
}

int wr_loop_emit_fields(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof,
                        const weir_fields_t *fields, char *buf, int32_t cap, int32_t *used)
{
    size_t size = (size_t)wr_fields_size(fields);
    weir_event_t *run = NULL; /* the RECORDS event the next parsed line may extend */
    if (cap > rt->max) {
        cap = rt->max;
    }
    for (;;) {
        /* A line is cut only with room for both its record and a new event. */
        if (rt->n >= rt->max || *used >= cap) {
            return 0;
        }
        wr_line_t rec;
        int r = next_line(s, l, at_eof, &rec);
        if (r == WR_LINES_NONE) {
            return 1;
        }
        if (r == WR_LINES_DROPPED) {
            run = NULL; /* its line number is skipped: the run cannot go on */
            continue;
        }
        s->stat[WEIR_STAT_RECORDS] += 1;
        char *slot = buf + (size_t)*used * size;
        if (wr_fields_parse(fields, rec.ptr, rec.len, slot) != 0) {
            weir_event_t *e = wr_loop_push(rt, s, WEIR_EV_LINE);
            e->ptr = rec.ptr;
            e->len = (int32_t)rec.len;
            e->flags = WEIR_LINE_MALFORMED
                       | (rec.flags == WR_LINE_TRUNCATED_EOF ? WEIR_LINE_TRUNCATED_EOF : 0);
            e->index = (double)rec.index;
            run = NULL;
            continue;
        }
        (*used)++;
        if (run != NULL) {
            run->len++;
            continue;
        }
        run = wr_loop_push(rt, s, WEIR_EV_RECORDS);
        run->ptr = slot;
        run->len = 1;
        run->index = (double)rec.index;
    }
}

int wr_loop_emit_end(weir_rt_t *rt, wr_source_t *s, int32_t flags)
{
    weir_event_t *e = wr_loop_push(rt, s, WEIR_EV_END);
    if (e == NULL) {
        return 0;
    }
    e->flags = flags;
    s->ended = 1;
    return 1;
}

int wr_loop_unread(const uv_handle_t *h)
{
    uv_os_fd_t fd;
    if (uv_fileno(h, &fd) < 0) {
        return 0;
    }
    int n = 0;
    if (ioctl(fd, FIONREAD, &n) < 0) {
        return 0;
    }
    return n > 0;
}

int wr_loop_ms(double v, int64_t *out)
{
    if (isnan(v)) {
        return -1;
    }
    if (v >= 9.2e18) {
        *out = INT64_MAX;
    } else if (v <= -9.2e18) {
        *out = INT64_MIN;
    } else {
        *out = (int64_t)floor(v);
    }
    return 0;
}

/* ---- the runtime ------------------------------------------------------------------------- */

weir_rt_t *weir_rt_new(int32_t clock_kind, double virtual_start_ms)
{
    int64_t start = 0;
    if (clock_kind == WEIR_CLOCK_VIRTUAL) {
        if (wr_loop_ms(virtual_start_ms, &start) < 0 || start == INT64_MAX ||
            start == INT64_MIN) {
            return NULL;
        }
    } else if (clock_kind != WEIR_CLOCK_REAL) {
        return NULL;
    }
    weir_rt_t *rt = wr_xcalloc(1, sizeof *rt);
    if (uv_loop_init(&rt->loop) < 0) {
        wr_free(rt);
        return NULL;
    }
    uv_timer_init(&rt->loop, &rt->timer);
    uv_async_init(&rt->loop, &rt->wake, on_wake);
    if (clock_kind == WEIR_CLOCK_VIRTUAL) {
        wr_clock_init_virtual(&rt->clock, start);
    } else {
        wr_clock_init_real(&rt->clock);
    }
    wr_err_clear(&rt->err);
    wr_err_clear(&rt->fail);
    rt->wakeup_ms = WR_NEVER;
    rt->next_tick_ms = WR_NEVER;
    rt->advance_ms = INT64_MIN;
    return rt;
}

void weir_rt_free(weir_rt_t *rt)
{
    if (rt == NULL) {
        return;
    }
    restore_signals(rt);
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_t *s = rt->sources[i];
        if (s->ops->close) {
            s->ops->close(s);
        }
    }
    wr_repl_close(rt);
    uv_close((uv_handle_t *)&rt->timer, NULL);
    uv_close((uv_handle_t *)&rt->wake, NULL);
    /* Runs close callbacks and waits out a getaddrinfo that could not be cancelled. */
    uv_run(&rt->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&rt->loop);
    assert(rc == 0);
    (void)rc;
    for (int32_t i = 0; i < rt->nsources; i++) {
        destroy_source(rt->sources[i]);
    }
    wr_repl_free(rt);
    for (int32_t i = 0; i < rt->nop_labels; i++) {
        wr_free(rt->op_labels[i]);
    }
    wr_free(rt->op_labels);
    wr_free(rt->sources);
    wr_free(rt);
}

const char *weir_rt_error(const weir_rt_t *rt)
{
    if (rt == NULL) {
        return "no runtime";
    }
    return rt->err.msg;
}

double weir_rt_now(weir_rt_t *rt)
{
    if (rt == NULL) {
        return 0;
    }
    return (double)wr_clock_now(&rt->clock);
}

int weir_rt_set_tick(weir_rt_t *rt, double interval_ms)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_rt_set_tick: the runtime has started");
    }
    if (!(interval_ms >= 0) || isinf(interval_ms)) {
        return wr_loop_error(rt, WEIR_EINVAL, "weir_rt_set_tick: bad interval %g", interval_ms);
    }
    rt->tick_ms = (int64_t)ceil(interval_ms);
    return 0;
}

int weir_rt_set_wakeup(weir_rt_t *rt, double due_ms)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    int64_t due;
    if (wr_loop_ms(due_ms, &due) < 0) {
        return wr_loop_error(rt, WEIR_EINVAL, "weir_rt_set_wakeup: due time is NaN");
    }
    rt->wakeup_ms = due; /* +inf became WR_NEVER */
    return 0;
}

/* Only sets the target: the polls move the clock (weir_loop_poll), so what falls due on the
 * way is delivered in time order, one TIMER or TICK per poll, as a replay would. */
int weir_rt_advance(weir_rt_t *rt, double target_ms)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_clock_is_virtual(&rt->clock)) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_rt_advance: needs the virtual clock");
    }
    int64_t target;
    if (wr_loop_ms(target_ms, &target) < 0 || isinf(target_ms)) {
        return wr_loop_error(rt, WEIR_EINVAL, "weir_rt_advance: bad target %g", target_ms);
    }
    int64_t now = wr_clock_now(&rt->clock);
    if (target < now) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_rt_advance: %lld is before now (%lld)",
                             (long long)target, (long long)now);
    }
    rt->advance_ms = target;
    return 0;
}

int weir_rt_start(weir_rt_t *rt)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_rt_start: already started");
    }
    rt->started = 1;
    rt->start_ms = wr_clock_now(&rt->clock);
    rt->now_ms = rt->start_ms;
    rt->next_tick_ms = rt->tick_ms > 0 ? rt->start_ms + rt->tick_ms : WR_NEVER;
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_t *s = rt->sources[i];
        if (s->ops->open) {
            int rc = s->ops->open(s);
            if (rc < 0) {
                wr_loop_fail(rt, rc, "%s", rt->err.msg);
                return rc;
            }
        }
    }
    install_signals(rt);
    return 0;
}

void weir_rt_stop(weir_rt_t *rt)
{
    if (rt != NULL) {
        rt->stop_requested = 1;
    }
}

/* Labels are fixed before start: the signal handler reads the array without a lock. */
int weir_rt_label_op(weir_rt_t *rt, int32_t id, const char *label)
{
    if (rt == NULL || label == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_rt_label_op: the runtime has started");
    }
    if (id < 0 || id > 65535) {
        return wr_loop_error(rt, WEIR_EINVAL, "weir_rt_label_op: bad operator id %d", (int)id);
    }
    if (id >= rt->nop_labels) {
        rt->op_labels = wr_xreallocarray(rt->op_labels, (size_t)id + 1, sizeof *rt->op_labels);
        for (int32_t i = rt->nop_labels; i <= id; i++) {
            rt->op_labels[i] = NULL;
        }
        rt->nop_labels = id + 1;
    }
    wr_free(rt->op_labels[id]);
    rt->op_labels[id] = wr_xstrdup(label);
    return 0;
}

int32_t *weir_op_slot(void)
{
    return (int32_t *)&op_running;
}

/* ---- the poll ---------------------------------------------------------------------------- */

static int all_ended(const weir_rt_t *rt)
{
    for (int32_t i = 0; i < rt->nsources; i++) {
        if (!rt->sources[i]->ended) {
            return 0;
        }
    }
    return 1;
}

static int any_live(const weir_rt_t *rt, int io, int clocked)
{
    for (int32_t i = 0; i < rt->nsources; i++) {
        const wr_source_t *s = rt->sources[i];
        if (!s->ended && ((io && s->io) || (clocked && s->clocked))) {
            return 1;
        }
    }
    return 0;
}

/* A source only Lua feeds (manual) is open: a poll with nothing to wait for returns 0 events
 * instead of failing, and Lua pushes before it polls again. */
static int any_fed(const weir_rt_t *rt)
{
    for (int32_t i = 0; i < rt->nsources; i++) {
        if (!rt->sources[i]->ended && rt->sources[i]->fed) {
            return 1;
        }
    }
    return 0;
}

/* Every source appends what is ready now. The virtual clock keeps declaration order (replay
 * lines due at one time go in source order); the real clock rotates the first source so that
 * a fast file cannot starve a socket. */
static void fill_pass(weir_rt_t *rt)
{
    int32_t k = rt->nsources;
    int32_t first = 0;
    if (!wr_clock_is_virtual(&rt->clock) && k > 0) {
        first = (int32_t)(rt->rotate++ % (uint32_t)k);
    }
    for (int32_t i = 0; i < k && rt->n < rt->max; i++) {
        wr_source_t *s = rt->sources[(first + i) % k];
        if (!s->ended) {
            s->ops->fill(s);
        }
    }
}

/* The earliest time at which something becomes ready by time alone, or WR_NEVER. */
static int64_t earliest_due(const weir_rt_t *rt)
{
    int64_t t = WR_NEVER;
    if (!rt->stop_delivered) {
        if (rt->wakeup_ms != WR_NEVER) {
            t = rt->wakeup_ms + 1; /* a timer for T fires once the clock passed T */
        }
        if (rt->next_tick_ms < t) {
            t = rt->next_tick_ms;
        }
    }
    for (int32_t i = 0; i < rt->nsources; i++) {
        const wr_source_t *s = rt->sources[i];
        if (!s->ended && s->ops->next_due) {
            int64_t d = s->ops->next_due(s);
            if (d < t) {
                t = d;
            }
        }
    }
    return t;
}

/* Blocks in libuv until I/O, a signal, or timeout_ms (< 0: no timeout) has passed. */
static void block(weir_rt_t *rt, int64_t timeout_ms)
{
    wr_out_flush_stdout(); /* output of a live job appears before it waits; errors stick */
    if (repl_live(rt)) {
        wr_repl_wait(rt); /* after the flush: the prompt goes below the job's output */
    }
    if (timeout_ms >= 0) {
        uv_update_time(&rt->loop);
        uv_timer_start(&rt->timer, on_timer, (uint64_t)timeout_ms, 0);
    }
    uv_run(&rt->loop, UV_RUN_ONCE);
    uv_timer_stop(&rt->timer);
}

/* Delivers STOP and turns every live source to draining. */
static void deliver_stop(weir_rt_t *rt)
{
    rt->now_ms = wr_clock_now(&rt->clock);
    wr_loop_push(rt, NULL, WEIR_EV_STOP);
    rt->stop_delivered = 1;
    wr_loop_sync_signals(rt); /* the REPL stops reading: SIGINT stops again */
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_t *s = rt->sources[i];
        if (!s->ended) {
            s->stopping = 1;
            if (s->ops->stop) {
                s->ops->stop(s);
            }
        }
    }
}

/* A TIMER or TICK due at rt->now_ms: returns 1 if one was delivered. */
static int deliver_clock_event(weir_rt_t *rt)
{
    if (rt->wakeup_ms != WR_NEVER && rt->now_ms > rt->wakeup_ms) {
        rt->wakeup_ms = WR_NEVER; /* once per weir_rt_set_wakeup */
        wr_loop_push(rt, NULL, WEIR_EV_TIMER);
        return 1;
    }
    if (rt->next_tick_ms != WR_NEVER && rt->now_ms >= rt->next_tick_ms) {
        /* Missed ticks collapse into this one; the next falls on the grid after now. */
        rt->next_tick_ms = wr_loop_next_tick(rt->start_ms, rt->tick_ms, rt->now_ms);
        wr_loop_push(rt, NULL, WEIR_EV_TICK);
        return 1;
    }
    return 0;
}

/* Fills the batch of one poll (the ordering is weir_loop_poll's). */
static int32_t fill_batch(weir_rt_t *rt, int is_virtual)
{
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_t *s = rt->sources[i];
        if (s->ops->begin) {
            s->ops->begin(s);
        }
    }
    if (rt->repl != NULL) {
        wr_repl_begin(rt);
    }
    int loop_ran = 0;
    for (;;) {
        if (rt->fail.code != 0) {
            if (rt->n > 0) {
                break;
            }
            rt->err = rt->fail;
            return rt->fail.code;
        }
        int repl = repl_live(rt);
        if (all_ended(rt) && !repl) {
            break;
        }
        if (signal_rt == rt && signal_count > 0) {
            rt->stop_requested = 1;
        }
        if (rt->stop_requested && !rt->stop_delivered) {
            if (rt->n == 0) {
                deliver_stop(rt);
            }
            break;
        }
        rt->now_ms = wr_clock_now(&rt->clock);
        if (signal_rt == rt && status_requested && rt->n == 0) {
            status_requested = 0; /* cleared first: a later signal asks for another report */
            wr_loop_push(rt, NULL, WEIR_EV_STATUS);
            break; /* alone, like TICK and STOP */
        }
        if (signal_rt == rt && prompt_interrupt && repl && rt->n == 0) {
            prompt_interrupt = 0;
            wr_repl_interrupt(rt);
            wr_loop_push(rt, NULL, WEIR_EV_INPUT)->flags = WEIR_INPUT_INTERRUPT;
            break; /* alone, like STATUS */
        }
        if (!rt->stop_delivered && rt->n == 0 && deliver_clock_event(rt)) {
            break; /* alone, so Lua reacts before anything later happens */
        }
        if (!loop_ran && (repl || any_live(rt, 1, 0))) {
            uv_run(&rt->loop, UV_RUN_NOWAIT); /* pick up socket, pipe and terminal input */
            loop_ran = 1;
            if (rt->fail.code != 0) {
                continue;
            }
        }
        fill_pass(rt);
        if (rt->n > 0) {
            break;
        }
        /* Nothing is ready at this clock reading. */
        int64_t due = earliest_due(rt);
        if (is_virtual) {
            if (any_live(rt, 0, 1) && due != WR_NEVER && due > rt->now_ms) {
                wr_clock_advance_to(&rt->clock, due);
                continue;
            }
            if (rt->advance_ms > rt->now_ms) {
                int64_t to = due > rt->now_ms && due < rt->advance_ms ? due : rt->advance_ms;
                wr_clock_advance_to(&rt->clock, to);
                continue;
            }
        }
        if (rt->nowait) {
            break; /* weir_loop_poll_nowait: nothing is ready, and it does not wait */
        }
        if (repl && wr_repl_emit(rt)) {
            wr_loop_sync_signals(rt); /* after EOF SIGINT stops again */
            break; /* alone: Lua runs the line before the next one is read */
        }
        if (is_virtual) {
            if (repl || any_live(rt, 1, 0)) {
                block(rt, -1);
                loop_ran = 1;
                continue;
            }
        } else if (repl || any_live(rt, 1, 0) || due != WR_NEVER) {
            block(rt, due == WR_NEVER ? -1 : (due > rt->now_ms ? due - rt->now_ms : 0));
            loop_ran = 1;
            continue;
        }
        if (any_fed(rt)) {
            break; /* nothing can happen until Lua pushes */
        }
        /* No source can make progress: a bug in a source, not a state a job can reach. */
        wr_loop_fail(rt, WEIR_ESOURCE, "internal: no source can make progress");
    }
    return rt->n;
}

/* Order within a poll: STOP, STATUS, a REPL interrupt, then one due TIMER or TICK, each alone;
 * then whatever the sources have ready at the clock reading. Only when nothing is ready does
 * time move or input get read: the virtual clock jumps to the next due time while a clocked
 * source (replay, generator with a rate) is live, or steps towards weir_rt_advance's target;
 * then a complete REPL line is delivered, alone, so a piped session runs the same way every
 * time; then the poll waits in uv_run. Sockets and stdin are read whenever data is there and
 * their records carry the current virtual time, but they never hold the virtual clock back and
 * never move it: once only I/O sources (or the REPL) remain, the poll waits for their data in
 * real time and ticks and the wakeup stand still until weir_rt_advance. */
int32_t weir_loop_poll(weir_rt_t *rt, weir_event_t *out, int32_t max)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (out == NULL || max <= 0) {
        return wr_loop_error(rt, WEIR_EINVAL, "weir_loop_poll: no room for events");
    }
    if (!rt->started) {
        return wr_loop_error(rt, WEIR_ESTATE, "weir_loop_poll: the runtime has not started");
    }
    op_running = -1; /* waiting is no operator's doing */
    rt->out = out;
    rt->n = 0;
    rt->max = max;
    int owner = signal_rt == rt;
    if (owner) {
        in_poll = 1; /* first: a Ctrl-C from now on asks for an INTERRUPT itself */
        if (command_interrupt > 0) {
            command_interrupt = 0; /* the command is over; Lua did not take it */
            prompt_interrupt = 1;
        }
    }
    int32_t n = fill_batch(rt, wr_clock_is_virtual(&rt->clock));
    if (n != 0 && rt->repl != NULL) {
        wr_repl_returning(rt); /* events or an error: Lua is about to print */
    }
    if (owner) {
        in_poll = 0;
    }
    return n;
}

/* Like weir_loop_poll, but it never reads a REPL line and never waits: it returns 0 when
 * nothing is ready now (which here does not mean the end). The REPL uses it to run what a
 * command caused (a pushed record, the ticks of an :advance) before it prints its result. */
int32_t weir_loop_poll_nowait(weir_rt_t *rt, weir_event_t *out, int32_t max)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    rt->nowait = 1;
    int32_t n = weir_loop_poll(rt, out, max);
    rt->nowait = 0;
    return n;
}

/* ---- introspection and output -------------------------------------------------------------- */

static wr_source_t *find_source(const weir_rt_t *rt, int32_t id)
{
    if (rt == NULL || id < 0 || id >= rt->nsources) {
        return NULL;
    }
    return rt->sources[id];
}

double weir_source_stat(const weir_rt_t *rt, int32_t source, int32_t what)
{
    const wr_source_t *s = find_source(rt, source);
    if (s == NULL || what < WEIR_STAT_RECORDS || what > WEIR_STAT_RECONNECTS) {
        return -1;
    }
    return s->stat[what];
}

const char *weir_source_describe(const weir_rt_t *rt, int32_t source)
{
    const wr_source_t *s = find_source(rt, source);
    return s ? s->describe : "";
}

/* The idle-advance guard asks this between polls: time may push a watermark forward only while
 * the source is quiet, so records held back by backpressure (a full batch, unread kernel
 * bytes) are never made late. Each kind says what "waiting" means in its pending hook. */
int32_t weir_source_pending(const weir_rt_t *rt, int32_t source)
{
    const wr_source_t *s = find_source(rt, source);
    if (s == NULL) {
        return WEIR_EINVAL;
    }
    if (!rt->started || s->ended) {
        return 0;
    }
    return s->ops->pending(s, wr_clock_now(&rt->clock)) ? 1 : 0;
}

int weir_source_set_name(weir_rt_t *rt, int32_t source, const char *name)
{
    wr_source_t *s = find_source(rt, source);
    if (s == NULL) {
        return rt ? wr_loop_error(rt, WEIR_EINVAL, "no source %d", (int)source) : WEIR_EINVAL;
    }
    size_t n = strlen(s->kind) + (name ? strlen(name) : 0) + 2;
    char *d = wr_xmalloc(n);
    if (name != NULL && name[0] != '\0') {
        snprintf(d, n, "%s %s", s->kind, name);
    } else {
        snprintf(d, n, "%s", s->kind);
    }
    wr_free(s->describe);
    s->describe = d;
    return 0;
}

const char *weir_strerror(int code)
{
    switch (code) {
    case WEIR_EOK:
        return "success";
    case WEIR_EINVAL:
        return "invalid argument";
    case WEIR_ESOURCE:
        return "source failed";
    case WEIR_ESTATE:
        return "call not allowed in this state";
    default:
        break;
    }
    if (code < 0) {
        /* uv_strerror leaks for unknown codes; the _r form writes into our buffer */
        static _Thread_local char buf[128];
        return uv_strerror_r(code, buf, sizeof buf);
    }
    return "unknown error";
}
