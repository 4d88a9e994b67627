/* SPDX-License-Identifier: MIT */
/* loop.c: owns the uv loop and turns ready input, due ticks and the wakeup into event batches
 * for weir_loop_poll (pull, never push: C never calls Lua). Invariant: uv_run only runs while
 * the batch being filled is empty, so no record handed out by this poll can be moved by a read
 * that lands in the same source buffer. */
#include "loop.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"
#include "ms.h"
#include "out.h"
#include "rt.h"
#include "signals.h"
#include "source.h"

static void on_timer(uv_timer_t *h)
{
    (void)h; /* waking uv_run was the point */
}

/* ---- what the sources ask (loop.h) -------------------------------------------------------- */

int64_t wr_loop_next_tick(int64_t start_ms, int64_t interval_ms, int64_t now_ms)
{
    assert(interval_ms > 0);
    if (now_ms < start_ms + interval_ms) {
        return start_ms + interval_ms;
    }
    int64_t k = (now_ms - start_ms) / interval_ms + 1;
    return start_ms + k * interval_ms;
}

int wr_loop_fail(weir_rt_t *rt, int code, const char *fmt, ...)
{
    if (rt->fail.code != 0) {
        return code;
    }
    va_list ap;
    va_start(ap, fmt);
    wr_err_vset(&rt->fail, code, fmt, ap);
    va_end(ap);
    return code;
}

int64_t wr_loop_now(const weir_rt_t *rt)
{
    return rt->now_ms;
}

int wr_loop_clock_is_virtual(const weir_rt_t *rt)
{
    return wr_clock_is_virtual(&rt->clock);
}

/* ---- the runtime ------------------------------------------------------------------------- */

weir_rt_t *weir_rt_new(int32_t clock_kind, double virtual_start_ms)
{
    int64_t start = 0;
    if (clock_kind == WEIR_CLOCK_VIRTUAL) {
        if (isnan(virtual_start_ms)) {
            return NULL;
        }
        start = wr_ms_from_double(virtual_start_ms);
        if (start == INT64_MAX || start == INT64_MIN) {
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
    wr_signals_init_wake(rt);
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
    wr_signals_restore(rt);
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_t *s = rt->sources[i];
        if (s->ops->close) {
            s->ops->close(s);
        }
    }
    if (rt->alone != NULL && rt->alone->ops->close) {
        rt->alone->ops->close(rt->alone);
    }
    uv_close((uv_handle_t *)&rt->timer, NULL);
    uv_close((uv_handle_t *)&rt->wake, NULL);
    /* Runs close callbacks and waits out a getaddrinfo that could not be cancelled. */
    uv_run(&rt->loop, UV_RUN_DEFAULT);
    int rc = uv_loop_close(&rt->loop);
    assert(rc == 0);
    (void)rc;
    for (int32_t i = 0; i < rt->nsources; i++) {
        wr_source_destroy(rt->sources[i]);
    }
    if (rt->alone != NULL) {
        wr_source_destroy(rt->alone);
        rt->alone = NULL;
    }
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
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_set_tick: the runtime has started");
    }
    if (!(interval_ms >= 0) || isinf(interval_ms)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_rt_set_tick: bad interval %g", interval_ms);
    }
    rt->tick_ms = wr_ms_from_double(interval_ms);
    return 0;
}

int weir_rt_set_wakeup(weir_rt_t *rt, double due_ms)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (isnan(due_ms)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_rt_set_wakeup: due time is NaN");
    }
    rt->wakeup_ms = wr_ms_from_double(due_ms); /* +inf becomes WR_NEVER */
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
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_advance: needs the virtual clock");
    }
    if (isnan(target_ms) || isinf(target_ms)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_rt_advance: bad target %g", target_ms);
    }
    int64_t target = wr_ms_from_double(target_ms);
    int64_t now = wr_clock_now(&rt->clock);
    if (target < now) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_advance: %lld is before now (%lld)",
                          (long long)target, (long long)now);
    }
    rt->advance_ms = target;
    return 0;
}

/* The REPL's paused replay: clocked sources no longer drive the virtual clock, only a target
 * does. */
int weir_rt_hold_clock(weir_rt_t *rt, int32_t on)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_clock_is_virtual(&rt->clock)) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_hold_clock: needs the virtual clock");
    }
    rt->hold_clock = on != 0;
    return 0;
}

int weir_rt_start(weir_rt_t *rt)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_start: already started");
    }
    rt->started = 1;
    rt->start_ms = wr_clock_now(&rt->clock);
    rt->now_ms = rt->start_ms;
    rt->next_tick_ms = rt->tick_ms > 0 ? rt->start_ms + rt->tick_ms : WR_NEVER;
    if (rt->restored_clock) {
        /* a restore continues the checkpoint's grid; now is the restored reading */
        rt->start_ms = rt->restored_start_ms;
        if (rt->tick_ms > 0) {
            rt->next_tick_ms = rt->restored_next_tick_ms != WR_NEVER
                                   ? rt->restored_next_tick_ms
                                   : wr_loop_next_tick(rt->start_ms, rt->tick_ms, rt->now_ms);
        }
    }
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
    wr_signals_install(rt);
    return 0;
}

int weir_rt_clock_state(const weir_rt_t *rt, double *out)
{
    if (rt == NULL || out == NULL) {
        return WEIR_EINVAL;
    }
    out[0] = wr_ms_to_double(wr_clock_now(&rt->clock));
    out[1] = wr_ms_to_double(rt->start_ms);
    out[2] = wr_ms_to_double(rt->next_tick_ms);
    return 0;
}

int weir_rt_restore_clock(weir_rt_t *rt, double now_ms, double start_ms, double next_tick_ms)
{
    if (rt == NULL || isnan(now_ms) || isnan(start_ms) || isnan(next_tick_ms)) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_restore_clock: the runtime has started");
    }
    if (!wr_clock_is_virtual(&rt->clock)) {
        return 0; /* the real clock cannot go back; its grid starts again */
    }
    int64_t now = wr_ms_from_double(now_ms);
    int64_t start = wr_ms_from_double(start_ms);
    if (now == INT64_MAX || now == INT64_MIN || start > now) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_rt_restore_clock: bad times");
    }
    wr_clock_advance_to(&rt->clock, now);
    rt->restored_clock = 1;
    rt->restored_start_ms = start;
    rt->restored_next_tick_ms = wr_ms_from_double(next_tick_ms);
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
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_rt_label_op: the runtime has started");
    }
    if (id < 0 || id > 65535) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_rt_label_op: bad operator id %d", (int)id);
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

/* Sources paused by watermark alignment wait for an update at a tick. On the virtual clock time
 * must move on to it even when no clocked source is left (a file paused behind a replay that
 * has ended), unless a stream that reads is live: its input is what the group waits for (time
 * stands still while only streams are left, Replay format). */
static int paused_wait_for_time(const weir_rt_t *rt)
{
    int paused = 0;
    for (int32_t i = 0; i < rt->nsources; i++) {
        const wr_source_t *s = rt->sources[i];
        if (s->ended) {
            continue;
        }
        if (s->paused && !s->stopping) {
            paused = 1;
        } else if (s->io) {
            return 0;
        }
    }
    return paused && !wr_rt_alone_live(rt);
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
        if (!s->ended && (!s->paused || s->stopping || s->fills_paused)) {
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
        if (!s->ended && s->ops->next_due && (!s->paused || s->stopping)) {
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
    if (wr_rt_alone_live(rt) && rt->alone->ops->wait) {
        rt->alone->ops->wait(rt->alone); /* after the flush: a prompt goes below the output */
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
    wr_source_push(rt, NULL, WEIR_EV_STOP);
    rt->stop_delivered = 1;
    wr_signals_sync(rt); /* the input delivered alone stops reading: SIGINT stops again */
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
        wr_source_push(rt, NULL, WEIR_EV_TIMER);
        return 1;
    }
    if (rt->next_tick_ms != WR_NEVER && rt->now_ms >= rt->next_tick_ms) {
        /* Missed ticks collapse into this one; the next falls on the grid after now. */
        rt->next_tick_ms = wr_loop_next_tick(rt->start_ms, rt->tick_ms, rt->now_ms);
        wr_source_push(rt, NULL, WEIR_EV_TICK);
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
    if (rt->alone != NULL && rt->alone->ops->begin) {
        rt->alone->ops->begin(rt->alone);
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
        int alone = wr_rt_alone_live(rt);
        if (all_ended(rt) && !alone) {
            break;
        }
        if (wr_signals_stop_asked(rt)) {
            rt->stop_requested = 1;
        }
        if (rt->stop_requested && !rt->stop_delivered) {
            if (rt->n == 0) {
                deliver_stop(rt);
            }
            break;
        }
        rt->now_ms = wr_clock_now(&rt->clock);
        if (rt->n == 0 && wr_signals_take_status(rt)) {
            wr_source_push(rt, NULL, WEIR_EV_STATUS);
            break; /* alone, like TICK and STOP */
        }
        if (alone && rt->n == 0 && wr_signals_take_interrupt(rt)) {
            if (rt->alone->ops->interrupt) {
                rt->alone->ops->interrupt(rt->alone);
            }
            break; /* alone, like STATUS */
        }
        if (!rt->stop_delivered && rt->n == 0 && !rt->sources_first && deliver_clock_event(rt)) {
            rt->sources_first = !is_virtual;
            break; /* alone, so Lua reacts before anything later happens */
        }
        if (!loop_ran && (alone || any_live(rt, 1, 0))) {
            uv_run(&rt->loop, UV_RUN_NOWAIT); /* pick up socket, pipe and terminal input */
            loop_ran = 1;
            if (rt->fail.code != 0) {
                continue;
            }
        }
        fill_pass(rt);
        if (rt->n > 0) {
            rt->sources_first = 0;
            break;
        }
        if (rt->sources_first) {
            rt->sources_first = 0; /* the sources had their turn: a due TIMER or TICK now */
            continue;
        }
        /* Nothing is ready at this clock reading. */
        int64_t due = earliest_due(rt);
        if (is_virtual) {
            if (!rt->hold_clock && (any_live(rt, 0, 1) || paused_wait_for_time(rt)) &&
                due != WR_NEVER && due > rt->now_ms) {
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
        if (alone) {
            rt->alone->ops->fill(rt->alone);
            if (rt->n > 0) {
                wr_signals_sync(rt); /* after its end SIGINT stops again */
                break; /* alone: Lua runs the line before the next one is read */
            }
        }
        if (is_virtual) {
            if (alone || any_live(rt, 1, 0)) {
                block(rt, -1);
                loop_ran = 1;
                continue;
            }
        } else if (alone || any_live(rt, 1, 0) || due != WR_NEVER) {
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

/* Order within a poll: STOP, STATUS, an interrupt of the input delivered alone, then one due
 * TIMER or TICK, each alone (on the real clock not twice in a row while a source has records
 * ready: a batch that takes longer than the tick interval, a checkpoint waited for say, would
 * otherwise find a tick due at every poll and never read the sources); then whatever the
 * sources have ready at the clock reading. Only
 * when nothing is ready does time move or input get read: the virtual clock jumps to the next
 * due time while a clocked source (replay, generator with a rate) is live and the clock is not
 * held (weir_rt_hold_clock), or steps towards
 * weir_rt_advance's target; then the input delivered alone (the REPL's) gives one event, a
 * complete line, alone, so a piped session runs the same way every time; then the poll waits
 * in uv_run. Sockets and stdin are read whenever data is there and their records carry the
 * current virtual time, but they never hold the virtual clock back and never move it: once
 * only I/O sources (or the input delivered alone) remain, the poll waits for their data in
 * real time and ticks and the wakeup stand still until weir_rt_advance. A source paused by
 * watermark alignment (weir_source_pause) is not filled and its due times do not count, but
 * the virtual clock still runs on to the next tick, where the update that resumes it happens,
 * while a paused clocked source is live or nothing but paused sources are
 * (paused_wait_for_time). */
int32_t weir_loop_poll(weir_rt_t *rt, weir_event_t *out, int32_t max)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (out == NULL || max <= 0) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_loop_poll: no room for events");
    }
    if (!rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_loop_poll: the runtime has not started");
    }
    rt->out = out;
    rt->n = 0;
    rt->max = max;
    wr_signals_poll_begin(rt);
    int32_t n = fill_batch(rt, wr_clock_is_virtual(&rt->clock));
    if (n != 0 && rt->alone != NULL && rt->alone->ops->returning) {
        rt->alone->ops->returning(rt->alone); /* events or an error: Lua is about to print */
    }
    wr_signals_poll_end(rt);
    return n;
}

/* Like weir_loop_poll, but it never reads a line of the input delivered alone and never waits:
 * it returns 0 when nothing is ready now (which here does not mean the end). The REPL uses it
 * to run what a command caused (a pushed record, the ticks of an :advance) before it prints
 * its result. */
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
