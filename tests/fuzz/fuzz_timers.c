/* SPDX-License-Identifier: MIT */
/* fuzz_timers.c: runtime/timers.c against a list model. The input is a program, 6 bytes an
 * operation: op, domain, and indexes into small palettes of times (INT64_MIN and INT64_MAX
 * included), keys and windows, so that timers collide often. The model is a plain array per
 * domain in registration order: register is a set insert (an existing timer keeps its place),
 * delete removes exactly the timer, pop takes the least (time, registration) at or before the
 * bound; count and next are checked after every operation. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_support.h"
#include "timers.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_OPS = 4096 };

static const int64_t TIMES[] = { INT64_MIN, INT64_MIN + 1, -1000, -1, 0, 1, 2, 3, 5, 8, 999,
                                 1000, 1001, 9007199254740991, INT64_MAX - 1, INT64_MAX };
enum { N_TIMES = sizeof TIMES / sizeof TIMES[0] };

typedef struct model_timer {
    wr_timer_t t;
    uint64_t seq;
} model_timer_t;

typedef struct model {
    model_timer_t v[MAX_OPS];
    size_t n;
    uint64_t seq;
} model_t;

static int same(const wr_timer_t *a, const wr_timer_t *b)
{
    return a->time_ms == b->time_ms && a->key == b->key && a->start == b->start &&
           a->stop == b->stop;
}

static size_t find(const model_t *m, const wr_timer_t *t)
{
    for (size_t i = 0; i < m->n; i++) {
        if (same(&m->v[i].t, t)) {
            return i;
        }
    }
    return SIZE_MAX;
}

/* index of the least (time, seq), or SIZE_MAX when empty */
static size_t least(const model_t *m)
{
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < m->n; i++) {
        const model_timer_t *x = &m->v[i];
        if (best == SIZE_MAX || x->t.time_ms < m->v[best].t.time_ms ||
            (x->t.time_ms == m->v[best].t.time_ms && x->seq < m->v[best].seq)) {
            best = i;
        }
    }
    return best;
}

static void remove_at(model_t *m, size_t i)
{
    m->v[i] = m->v[--m->n];
}

static int64_t time_of(uint8_t b, uint8_t extra)
{
    if (b & 0x80) {
        /* near an edge or arbitrary: two bytes spread over the whole int64 range */
        return (int64_t)((uint64_t)extra << 56 | (uint64_t)b << 48 | extra);
    }
    return TIMES[b % N_TIMES];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static model_t model[WR_TIMERS_DOMAINS];
    memset(model, 0, sizeof model);
    wr_timers_t t;
    wr_timers_init(&t);
    for (size_t at = 0; at + 6 <= size && at / 6 < MAX_OPS; at += 6) {
        const uint8_t *o = data + at;
        int dom = o[1] & 1;
        model_t *m = &model[dom];
        /* windows: start 0, 10 or 20, size 10 or 20, so that start and stop vary apart */
        int64_t start = (int64_t)(o[4] % 3) * 10;
        wr_timer_t x = { time_of(o[2], o[5]), o[3] % 4, start, start + 10 + (o[4] >> 2 & 1) * 10 };
        if (o[4] & 0x80) {
            x.start = INT64_MIN; /* a global-window-like timer */
            x.stop = INT64_MAX;
        }
        switch (o[0] % 4) {
        case 0:
        case 1: {
            int rc = wr_timers_register(&t, dom, &x);
            size_t i = find(m, &x);
            FUZZ_CHECK(rc == (i == SIZE_MAX), "register returned %d, the model %d", rc,
                       i == SIZE_MAX);
            if (i == SIZE_MAX) {
                m->v[m->n++] = (model_timer_t){ x, m->seq++ };
            }
            break;
        }
        case 2: {
            int rc = wr_timers_delete(&t, dom, &x);
            size_t i = find(m, &x);
            FUZZ_CHECK(rc == (i != SIZE_MAX), "delete returned %d, the model %d", rc,
                       i != SIZE_MAX);
            if (i != SIZE_MAX) {
                remove_at(m, i);
            }
            break;
        }
        default: {
            /* pop up to a bound, possibly several in a row, as a firing loop does */
            int64_t upto = time_of(o[2] ^ o[3], o[5]);
            int times = 1 + o[4] % 4;
            for (int k = 0; k < times; k++) {
                wr_timer_t out = { 7, 7, 7, 7 };
                int rc = wr_timers_pop(&t, dom, upto, &out);
                size_t i = least(m);
                int due = i != SIZE_MAX && m->v[i].t.time_ms <= upto;
                FUZZ_CHECK(rc == due, "pop(%lld) returned %d, the model %d", (long long)upto, rc,
                           due);
                if (!due) {
                    FUZZ_CHECK(out.time_ms == 7 && out.key == 7, "a failed pop wrote *out");
                    break;
                }
                FUZZ_CHECK(same(&out, &m->v[i].t),
                           "pop gave (%lld, key %lld), the model (%lld, key %lld)",
                           (long long)out.time_ms, (long long)out.key,
                           (long long)m->v[i].t.time_ms, (long long)m->v[i].t.key);
                remove_at(m, i);
            }
            break;
        }
        }
        for (int d = 0; d < WR_TIMERS_DOMAINS; d++) {
            FUZZ_CHECK(wr_timers_count(&t, d) == model[d].n, "domain %d: count %zu, model %zu",
                       d, wr_timers_count(&t, d), model[d].n);
            size_t i = least(&model[d]);
            int64_t next = i == SIZE_MAX ? INT64_MAX : model[d].v[i].t.time_ms;
            FUZZ_CHECK(wr_timers_next(&t, d) == next, "domain %d: next %lld, model %lld", d,
                       (long long)wr_timers_next(&t, d), (long long)next);
        }
    }
    wr_timers_close(&t);
    /* a closed service is empty and reusable */
    FUZZ_CHECK(wr_timers_count(&t, 0) == 0 && wr_timers_next(&t, 1) == INT64_MAX,
               "a closed service is not empty");
    wr_timers_close(&t);
    return 0;
}
