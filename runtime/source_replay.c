/* SPDX-License-Identifier: MIT */
/* source_replay.c: timed text on the virtual clock. Lua parses the replay file and adds one
 * entry per line, in file order: a record text[offset, offset + len) due at time_ms, or a
 * time-only entry (len -1) that only moves the clock. Entries due at the current clock reading
 * are delivered in file order; when the last entry has been consumed the source ends. The
 * REPL steps through a replay (weir_replay_hold): entries from `allow` on wait, neither due nor
 * pending, until it lets them go. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "mem.h"
#include "ms.h"
#include "rt.h"
#include "source.h"

typedef struct replay_entry {
    int64_t time_ms;
    int32_t offset;
    int32_t len; /* -1: time only */
    int32_t line_no;
} replay_entry_t;

typedef struct replay_source {
    wr_source_t base;
    char *text; /* owned copy */
    size_t text_len;
    replay_entry_t *entries;
    size_t n;
    size_t cap;
    size_t next;  /* first entry not yet consumed */
    size_t allow; /* entries from here on are held (SIZE_MAX: none) */
    /* watermark alignment (weir_source_pause): the replay's own time stands still while it is
     * paused, so every entry not yet consumed is due delay_ms after its time in the file */
    int64_t delay_ms;
    int64_t paused_at;
} replay_source_t;

static replay_source_t *replay_of(const wr_source_t *s)
{
    return (replay_source_t *)s;
}

static int64_t replay_next_due(const wr_source_t *s)
{
    const replay_source_t *r = replay_of(s);
    if (s->stopping || r->next >= r->n || r->next >= r->allow) {
        return WR_NEVER;
    }
    return r->entries[r->next].time_ms + r->delay_ms;
}

/* A record due at now_ms is waiting (it was left for the next poll by a full batch); a
 * time-only entry only moves the clock, so it is not. */
static int replay_pending(const wr_source_t *s, int64_t now_ms)
{
    const replay_source_t *r = replay_of(s);
    if (s->stopping) {
        return 0;
    }
    for (size_t i = r->next;
         i < r->n && i < r->allow && r->entries[i].time_ms + r->delay_ms <= now_ms; i++) {
        if (r->entries[i].len >= 0) {
            return 1;
        }
    }
    return 0;
}

static void replay_fill(wr_source_t *s)
{
    replay_source_t *r = replay_of(s);
    weir_rt_t *rt = s->rt;
    if (s->stopping) {
        wr_source_emit_end(rt, s, WEIR_END_STOPPED);
        return;
    }
    int64_t now = wr_loop_now(rt);
    while (r->next < r->n && r->next < r->allow &&
           r->entries[r->next].time_ms + r->delay_ms <= now) {
        const replay_entry_t *en = &r->entries[r->next];
        if (en->len >= 0) {
            weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
            if (e == NULL) {
                return;
            }
            e->ptr = r->text + en->offset;
            e->len = en->len;
            e->index = en->line_no;
            s->stat[WEIR_STAT_RECORDS] += 1;
            s->stat[WEIR_STAT_BYTES] += en->len;
        }
        r->next++;
    }
    if (r->next >= r->n) {
        wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
    }
}

/* Watermark alignment: a paused replay's lines wait (the loop skips its fill and next_due);
 * on resume they keep their spacing, later by the time it was paused, instead of all coming
 * at once (the delay is not in checkpoints: after a restore they are due at their times). */
static void replay_pause(wr_source_t *s, int on)
{
    replay_source_t *r = replay_of(s);
    int64_t now = wr_loop_now(s->rt);
    if (on) {
        r->paused_at = now;
    } else if (now > r->paused_at) {
        r->delay_ms += now - r->paused_at;
    }
}

static void replay_destroy(wr_source_t *s)
{
    replay_source_t *r = replay_of(s);
    wr_free(r->text);
    wr_free(r->entries);
    wr_free(r);
}

static void replay_position(const wr_source_t *s, weir_source_position_t *pos)
{
    pos->offset = (double)replay_of(s)->next;
    pos->replayable = 1;
}

/* The entries are added before seek (weir.sources adds them as it opens the source). */
static int replay_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    replay_source_t *r = replay_of(s);
    if (!(pos->offset >= 0 && pos->offset <= (double)r->n)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL,
                          "%s: cannot continue at entry %.0f (the replay has %zu)", s->describe,
                          pos->offset, r->n);
    }
    r->next = (size_t)pos->offset;
    return 0;
}

static const wr_source_ops_t replay_ops = {
    .open = NULL,
    .begin = NULL,
    .fill = replay_fill,
    .next_due = replay_next_due,
    .pending = replay_pending,
    .stop = NULL,
    .close = NULL,
    .destroy = replay_destroy,
    .position = replay_position,
    .seek = replay_seek,
    .pause = replay_pause,
};

int32_t weir_source_replay(weir_rt_t *rt, const char *text, size_t len)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    if (!wr_loop_clock_is_virtual(rt)) {
        return wr_err_set(&rt->err, WEIR_EINVAL,
                          "replay: needs the virtual clock (weir_rt_new(WEIR_CLOCK_VIRTUAL))");
    }
    if ((text == NULL && len > 0) || len > INT32_MAX) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "replay: bad text (%zu bytes)", len);
    }
    replay_source_t *r = wr_xcalloc(1, sizeof *r);
    r->base.ops = &replay_ops;
    r->base.kind = "replay";
    r->base.clocked = 1;
    r->allow = SIZE_MAX;
    r->text = wr_xmemdup(len > 0 ? text : "", len);
    r->text_len = len;
    return wr_source_add(rt, &r->base, "replay");
}

int weir_replay_add(weir_rt_t *rt, int32_t source, double time_ms, int32_t offset, int32_t len,
                    int32_t line_no)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (source < 0 || source >= rt->nsources || rt->sources[source]->ops != &replay_ops) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "weir_replay_add: source %d is not a replay",
                          (int)source);
    }
    replay_source_t *r = replay_of(rt->sources[source]);
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "%s: entries must be added before start",
                          r->base.describe);
    }
    if (isnan(time_ms) || isinf(time_ms)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: line %d: bad time", r->base.describe,
                          (int)line_no);
    }
    int64_t t = wr_ms_from_double(time_ms);
    if (r->n > 0 && t < r->entries[r->n - 1].time_ms) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: line %d: time %lld goes back (before %lld)",
                          r->base.describe, (int)line_no, (long long)t,
                          (long long)r->entries[r->n - 1].time_ms);
    }
    if (offset < 0 || len < -1 || (size_t)offset > r->text_len ||
        (len > 0 && (size_t)len > r->text_len - (size_t)offset)) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: line %d: bytes [%d, +%d) outside the text",
                             r->base.describe, (int)line_no, (int)offset, (int)len);
    }
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->entries = wr_xreallocarray(r->entries, r->cap, sizeof *r->entries);
    }
    r->entries[r->n++] = (replay_entry_t){t, offset, len, line_no};
    return 0;
}

static replay_source_t *replay_at(weir_rt_t *rt, int32_t source, const char *fn)
{
    if (source < 0 || source >= rt->nsources || rt->sources[source]->ops != &replay_ops) {
        wr_err_set(&rt->err, WEIR_EINVAL, "%s: source %d is not a replay", fn, (int)source);
        return NULL;
    }
    return replay_of(rt->sources[source]);
}

int32_t weir_replay_next(weir_rt_t *rt, int32_t source)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    replay_source_t *r = replay_at(rt, source, "weir_replay_next");
    if (r == NULL) {
        return WEIR_EINVAL;
    }
    return r->next > INT32_MAX ? INT32_MAX : (int32_t)r->next;
}

int weir_replay_hold(weir_rt_t *rt, int32_t source, int32_t upto)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    replay_source_t *r = replay_at(rt, source, "weir_replay_hold");
    if (r == NULL) {
        return WEIR_EINVAL;
    }
    r->allow = upto < 0 ? SIZE_MAX : (size_t)upto;
    return 0;
}

int weir_replay_end(weir_rt_t *rt, int32_t source)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    replay_source_t *r = replay_at(rt, source, "weir_replay_end");
    if (r == NULL) {
        return WEIR_EINVAL;
    }
    r->next = r->n; /* the next fill ends the source */
    r->allow = SIZE_MAX;
    return 0;
}
