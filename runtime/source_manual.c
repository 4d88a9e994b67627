/* SPDX-License-Identifier: MIT */
/* source_manual.c: records pushed from Lua (the REPL's :push, tests), delivered by the next poll
 * in push order at the clock reading then. Each push gets its own copy, so records handed out
 * by a poll stay put while Lua pushes more; they are freed when the next poll begins. Neither
 * io nor clocked: it never holds back or moves the virtual clock and never makes a poll wait
 * (with nothing else to wait for, weir_loop_poll returns 0 events while it is open). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "loop.h"
#include "mem.h"
#include "rt.h"
#include "source.h"

typedef struct manual_record {
    char *bytes; /* owned copy */
    size_t len;
} manual_record_t;

typedef struct manual_source {
    wr_source_t base;
    manual_record_t *recs; /* [0, next) handed out by the last poll, [next, n) queued */
    size_t next;
    size_t n;
    size_t cap;
    int64_t count; /* records delivered so far: the index of the last one */
    int closed;    /* weir_manual_close: END(EXHAUSTED) after the queue */
} manual_source_t;

static manual_source_t *manual_of(const wr_source_t *s)
{
    return (manual_source_t *)s;
}

/* Records of the previous poll are no longer referenced. */
static void manual_begin(wr_source_t *s)
{
    manual_source_t *m = manual_of(s);
    if (m->next == 0) {
        return;
    }
    for (size_t i = 0; i < m->next; i++) {
        wr_free(m->recs[i].bytes);
    }
    memmove(m->recs, m->recs + m->next, (m->n - m->next) * sizeof *m->recs);
    m->n -= m->next;
    m->next = 0;
}

/* The queue drains before END, also after STOP (the records are complete). */
static void manual_fill(wr_source_t *s)
{
    manual_source_t *m = manual_of(s);
    weir_rt_t *rt = s->rt;
    while (m->next < m->n) {
        weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
        if (e == NULL) {
            return;
        }
        const manual_record_t *r = &m->recs[m->next++];
        e->ptr = r->bytes;
        e->len = (int32_t)r->len; /* weir_manual_push checked len <= INT32_MAX */
        e->index = (double)++m->count;
        s->stat[WEIR_STAT_RECORDS] += 1;
        s->stat[WEIR_STAT_BYTES] += (double)r->len;
    }
    if (s->stopping) {
        wr_source_emit_end(rt, s, WEIR_END_STOPPED);
    } else if (m->closed) {
        wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
    }
}

static int manual_pending(const wr_source_t *s, int64_t now_ms)
{
    (void)now_ms;
    const manual_source_t *m = manual_of(s);
    return m->next < m->n;
}

static void manual_destroy(wr_source_t *s)
{
    manual_source_t *m = manual_of(s);
    for (size_t i = 0; i < m->n; i++) {
        wr_free(m->recs[i].bytes);
    }
    wr_free(m->recs);
    wr_free(m);
}

/* A checkpoint (the REPL's :undo, :savepoint): the records delivered so far. What was pushed
 * is not kept: a restore goes on with the next record pushed, numbered after them. */
static void manual_position(const wr_source_t *s, weir_source_position_t *pos)
{
    pos->offset = (double)manual_of(s)->count;
    pos->replayable = 1;
}

static int manual_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    if (!(pos->offset >= 0 && pos->offset < 4.0e18)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL, "%s: cannot continue at record %.0f",
                          s->describe, pos->offset);
    }
    manual_of(s)->count = (int64_t)pos->offset;
    return 0;
}

static const wr_source_ops_t manual_ops = {
    .open = NULL,
    .position = manual_position,
    .seek = manual_seek,
    .begin = manual_begin,
    .fill = manual_fill,
    .next_due = NULL,
    .pending = manual_pending,
    .stop = NULL,
    .close = NULL,
    .destroy = manual_destroy,
};

int32_t weir_source_manual(weir_rt_t *rt)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    manual_source_t *m = wr_xcalloc(1, sizeof *m);
    m->base.ops = &manual_ops;
    m->base.kind = "manual";
    m->base.fed = 1;
    return wr_source_add(rt, &m->base, "manual");
}

/* The manual source with that id, or NULL with the error set. */
static manual_source_t *find_manual(weir_rt_t *rt, int32_t source, const char *what)
{
    if (source < 0 || source >= rt->nsources || rt->sources[source]->ops != &manual_ops) {
        wr_err_set(&rt->err, WEIR_EINVAL, "%s: source %d is not a manual source", what,
                   (int)source);
        return NULL;
    }
    return manual_of(rt->sources[source]);
}

int weir_manual_push(weir_rt_t *rt, int32_t source, const char *bytes, size_t len)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    manual_source_t *m = find_manual(rt, source, "weir_manual_push");
    if (m == NULL) {
        return WEIR_EINVAL;
    }
    if ((bytes == NULL && len > 0) || len > INT32_MAX) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: bad record (%zu bytes)", m->base.describe,
                          len);
    }
    if (m->closed || m->base.stopping || m->base.ended) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "%s: closed", m->base.describe);
    }
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->recs = wr_xreallocarray(m->recs, m->cap, sizeof *m->recs);
    }
    m->recs[m->n++] = (manual_record_t){wr_xmemdup(len > 0 ? bytes : "", len), len};
    return 0;
}

int weir_manual_close(weir_rt_t *rt, int32_t source)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    manual_source_t *m = find_manual(rt, source, "weir_manual_close");
    if (m == NULL) {
        return WEIR_EINVAL;
    }
    m->closed = 1; /* a second close changes nothing */
    return 0;
}
