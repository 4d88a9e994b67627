/* SPDX-License-Identifier: MIT */
/* source_nexmark.c: env:nexmark_bids, Nexmark bids made in C (nexmark_gen.h) straight into the
 * records Lua reads. Like an unrated generator it is always ready until its count: each poll
 * gets one WEIR_EV_RECORDS of up to the batch size of bids, written into a buffer the source
 * owns, which Lua reads before the next poll (begin marks it free again). */
#include <math.h>
#include <stdlib.h>

#include "loop.h"
#include "mem.h"
#include "nexmark_gen.h"
#include "rt.h"
#include "source.h"

_Static_assert(sizeof(wr_nexmark_bid_t) == 24, "weir.nexmark.bid is 24 bytes");
_Static_assert(offsetof(wr_nexmark_bid_t, price) == 8, "weir.nexmark.bid: price at 8");
_Static_assert(offsetof(wr_nexmark_bid_t, ts) == 16, "weir.nexmark.bid: ts at 16");

typedef struct nexmark_source {
    wr_source_t base;
    wr_nexmark_t config;
    int64_t count; /* -1: unbounded */
    int64_t next;  /* first bid not yet delivered */
    int busy;      /* bids of this poll are in buf */
    wr_nexmark_bid_t buf[WEIR_BATCH_MAX];
} nexmark_source_t;

static nexmark_source_t *nexmark_of(const wr_source_t *s)
{
    return (nexmark_source_t *)s;
}

static int nexmark_pending(const wr_source_t *s, int64_t now_ms)
{
    (void)now_ms;
    const nexmark_source_t *g = nexmark_of(s);
    return !s->stopping && (g->count < 0 || g->next < g->count);
}

static void nexmark_begin(wr_source_t *s)
{
    nexmark_of(s)->busy = 0;
}

static void nexmark_fill(wr_source_t *s)
{
    nexmark_source_t *g = nexmark_of(s);
    weir_rt_t *rt = s->rt;
    if (s->stopping) {
        wr_source_emit_end(rt, s, WEIR_END_STOPPED);
        return;
    }
    int64_t limit = g->count < 0 ? INT64_MAX : g->count;
    if (g->next < limit && !g->busy) {
        int64_t n = limit - g->next;
        int64_t max = rt->max < WEIR_BATCH_MAX ? rt->max : WEIR_BATCH_MAX;
        n = n > max ? max : n;
        weir_event_t *e = wr_source_push(rt, s, WEIR_EV_RECORDS);
        if (e == NULL) {
            return;
        }
        for (int64_t k = 0; k < n; k++) {
            g->buf[k] = wr_nexmark_bid(&g->config, g->next + k);
        }
        e->ptr = (const char *)g->buf;
        e->len = (int32_t)n;
        e->index = (double)g->next;
        s->stat[WEIR_STAT_RECORDS] += (double)n;
        g->next += n;
        g->busy = 1;
    }
    if (g->next >= limit) {
        wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
    }
}

static void nexmark_destroy(wr_source_t *s)
{
    wr_free(nexmark_of(s));
}

/* A bid is a pure function of (seed, index): the next index is the whole position. */
static void nexmark_position(const wr_source_t *s, weir_source_position_t *pos)
{
    pos->offset = (double)nexmark_of(s)->next;
    pos->replayable = 1;
}

static int nexmark_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    nexmark_source_t *g = nexmark_of(s);
    if (!(pos->offset >= 0 && pos->offset < 4.0e18)
        || (g->count >= 0 && pos->offset > (double)g->count)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL,
                          "%s: cannot continue at bid %.0f (the checkpoint's count differs)",
                          s->describe, pos->offset);
    }
    g->next = (int64_t)pos->offset;
    return 0;
}

static const wr_source_ops_t nexmark_ops = {
    .open = NULL,
    .begin = nexmark_begin,
    .fill = nexmark_fill,
    .next_due = NULL,
    .pending = nexmark_pending,
    .stop = NULL,
    .close = NULL,
    .destroy = nexmark_destroy,
    .position = nexmark_position,
    .seek = nexmark_seek,
};

int32_t weir_source_nexmark(weir_rt_t *rt, double count, const weir_nexmark_config_t *config,
                            int32_t record_size)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    if (config == NULL || record_size != (int32_t)sizeof(wr_nexmark_bid_t)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "nexmark_bids: the record is not %zu bytes",
                          sizeof(wr_nexmark_bid_t));
    }
    const weir_nexmark_config_t *c = config;
    if (isnan(count) || !(c->events_per_second > 0) || isinf(c->events_per_second)
        || !(c->seed >= 0 && c->seed < 18446744073709551616.0) || !isfinite(c->base_time_ms)
        || c->hot_auction_ratio < 1 || c->hot_bidder_ratio < 1 || c->in_flight_auctions < 1
        || c->active_people < 1) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "nexmark_bids: bad configuration");
    }
    nexmark_source_t *g = wr_xcalloc(1, sizeof *g);
    g->base.ops = &nexmark_ops;
    g->base.kind = "nexmark_bids";
    g->config = (wr_nexmark_t){
        .seed = (uint64_t)c->seed,
        .events_per_second = c->events_per_second,
        .base_time_ms = c->base_time_ms,
        .hot_auction_ratio = c->hot_auction_ratio,
        .hot_bidder_ratio = c->hot_bidder_ratio,
        .in_flight_auctions = c->in_flight_auctions,
        .active_people = c->active_people,
    };
    g->count = count < 0 || count >= 4.0e18 ? -1 : (int64_t)floor(count);
    return wr_source_add(rt, &g->base, "nexmark_bids");
}
