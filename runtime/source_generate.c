/* SPDX-License-Identifier: MIT */
/* source_generate.c: index ranges for env:generate and from_elements. Without a rate the
 * source is always ready; with one, index i is due at start + i * 1000 / rate ms, and the poll
 * delivers whatever is due (the real clock waits for the next due index, the virtual clock
 * jumps to it). Each poll gets at most one RANGE of up to WEIR_BATCH_MAX indices per
 * generator, the work of about one full batch of lines. */
#include <math.h>
#include <stdlib.h>

#include "loop.h"
#include "mem.h"
#include "rt.h"
#include "source.h"

typedef struct gen_source {
    wr_source_t base;
    int64_t count;    /* -1: unbounded */
    double rate;      /* indices per second; <= 0: as fast as possible */
    int64_t next;     /* first index not yet delivered */
    int64_t start_ms; /* clock reading at weir_rt_start */
    int seeked;       /* weir_source_seek: next came from a checkpoint */
} gen_source_t;

static gen_source_t *gen_of(const wr_source_t *s)
{
    return (gen_source_t *)s;
}

/* When index i is due: the first whole millisecond at or after start + i * 1000 / rate. */
static int64_t due_ms(const gen_source_t *g, int64_t i)
{
    double off = ceil((double)i * 1000.0 / g->rate);
    if (off >= 9.0e18 || (double)g->start_ms + off >= 9.0e18) {
        return WR_NEVER;
    }
    return g->start_ms + (int64_t)off;
}

/* How many indices (from 0) are due at now. The floating estimate is corrected against
 * due_ms, so this and due_ms never disagree (no poll that jumps to a due time finds nothing). */
static int64_t due_count(const gen_source_t *g, int64_t now)
{
    if (now < g->start_ms) {
        return 0;
    }
    double est = floor((double)(now - g->start_ms) * g->rate / 1000.0) + 1;
    int64_t k = est >= 4.0e18 ? (int64_t)4e18 : (int64_t)est;
    while (k > 0 && due_ms(g, k - 1) > now) {
        k--;
    }
    while (due_ms(g, k) <= now) {
        k++;
    }
    return k;
}

static int gen_open(wr_source_t *s)
{
    gen_source_t *g = gen_of(s);
    g->start_ms = s->rt->start_ms;
    if (g->seeked && g->rate > 0 && !wr_loop_clock_is_virtual(s->rt)) {
        /* the real clock cannot be restored: index next is due now, the rest at the rate
         * (the virtual clock's restored start keeps the checkpoint's own due times) */
        g->start_ms -= (int64_t)ceil((double)g->next * 1000.0 / g->rate);
    }
    return 0;
}

static void gen_position(const wr_source_t *s, weir_source_position_t *pos)
{
    pos->offset = (double)gen_of(s)->next;
    pos->replayable = 1;
}

static int gen_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    gen_source_t *g = gen_of(s);
    if (!(pos->offset >= 0 && pos->offset < 4.0e18)
        || (g->count >= 0 && pos->offset > (double)g->count)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL,
                          "%s: cannot continue at index %.0f (the checkpoint's count differs)",
                          s->describe, pos->offset);
    }
    g->next = (int64_t)pos->offset;
    g->seeked = 1;
    return 0;
}

static int64_t gen_next_due(const wr_source_t *s)
{
    const gen_source_t *g = gen_of(s);
    if (s->stopping || g->rate <= 0 || (g->count >= 0 && g->next >= g->count)) {
        return WR_NEVER; /* ready now, or never again */
    }
    return due_ms(g, g->next);
}

/* Without a rate every index left is waiting; with one, only an index due at now_ms. */
static int gen_pending(const wr_source_t *s, int64_t now_ms)
{
    const gen_source_t *g = gen_of(s);
    if (s->stopping || (g->count >= 0 && g->next >= g->count)) {
        return 0;
    }
    return g->rate <= 0 || due_ms(g, g->next) <= now_ms;
}

static void gen_fill(wr_source_t *s)
{
    gen_source_t *g = gen_of(s);
    weir_rt_t *rt = s->rt;
    if (s->stopping) {
        wr_source_emit_end(rt, s, WEIR_END_STOPPED);
        return;
    }
    int64_t limit = g->count < 0 ? INT64_MAX : g->count;
    if (g->next < limit) {
        int64_t hi = limit - g->next > WEIR_BATCH_MAX ? g->next + WEIR_BATCH_MAX : limit;
        if (g->rate > 0) {
            int64_t due = due_count(g, wr_loop_now(rt));
            if (due < hi) {
                hi = due;
            }
        }
        if (hi > g->next) {
            weir_event_t *e = wr_source_push(rt, s, WEIR_EV_RANGE);
            if (e == NULL) {
                return;
            }
            e->index = (double)g->next;
            e->len = (int32_t)(hi - g->next);
            s->stat[WEIR_STAT_RECORDS] += (double)(hi - g->next);
            g->next = hi;
        }
    }
    if (g->next >= limit) {
        wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
    }
}

static void gen_destroy(wr_source_t *s)
{
    wr_free(gen_of(s));
}

static const wr_source_ops_t gen_ops = {
    .open = gen_open,
    .begin = NULL,
    .fill = gen_fill,
    .next_due = gen_next_due,
    .pending = gen_pending,
    .stop = NULL,
    .close = NULL,
    .destroy = gen_destroy,
    .position = gen_position,
    .seek = gen_seek,
};

int32_t weir_source_generate(weir_rt_t *rt, double count, double rate_per_s)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    if (isnan(count) || isnan(rate_per_s)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "generate: count and rate must be numbers");
    }
    gen_source_t *g = wr_xcalloc(1, sizeof *g);
    g->base.ops = &gen_ops;
    g->base.kind = "generate";
    if (count < 0 || count >= 4.0e18) {
        g->count = -1;
    } else {
        g->count = (int64_t)floor(count);
    }
    g->rate = rate_per_s > 0 && !isinf(rate_per_s) ? rate_per_s : 0;
    g->base.clocked = g->rate > 0;
    return wr_source_add(rt, &g->base, "generate");
}
