/* SPDX-License-Identifier: MIT */
/* sessions.c: weir.sessionop's session windows (sessions.h). Invariants: a key's windows are
 * sorted by start and never overlap or touch; every in-flight window's timers are in the heap
 * (with stale ones of windows merged away or cleaned up, skipped when they come up); a slot id
 * belongs to one in-flight state window or to the free stack. */
#include "sessions.h"
#include "ms.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "weir.h"

struct weir_sessions {
    wr_session_key_t *keys; /* by key id; keys[0] unused */
    int32_t nkeys;          /* keys[0 .. nkeys) exist */
    int64_t lateness;
    wr_session_timer_t *heap;
    size_t heap_len, heap_cap;
    uint64_t seq;
    int32_t *free_slots; /* the free stack */
    int32_t nfree, free_cap;
    int32_t next_slot; /* slots [1, next_slot) were handed out */
    size_t open;       /* in-flight windows */
    weir_session_t *out; /* add's result */
    int32_t out_cap;
};

weir_sessions_t *weir_sessions_new(double lateness)
{
    if (!(lateness >= 0)) {
        return NULL;
    }
    weir_sessions_t *t = wr_xcalloc(1, sizeof *t);
    t->lateness = wr_ms_from_double(lateness);
    t->next_slot = 1;
    t->out_cap = 8;
    t->out = wr_xcalloc((size_t)t->out_cap, sizeof *t->out);
    return t;
}

void weir_sessions_free(weir_sessions_t *t)
{
    if (t == NULL) {
        return;
    }
    for (int32_t k = 0; k < t->nkeys; k++) {
        free(t->keys[k].v);
    }
    free(t->keys);
    free(t->heap);
    free(t->free_slots);
    free(t->out);
    free(t);
}

static int32_t take_slot(weir_sessions_t *t)
{
    if (t->nfree > 0) {
        return t->free_slots[--t->nfree];
    }
    return t->next_slot++;
}

static void give_slot(weir_sessions_t *t, int32_t slot)
{
    if (t->nfree == t->free_cap) {
        t->free_cap = t->free_cap ? t->free_cap * 2 : 64;
        t->free_slots = wr_xreallocarray(t->free_slots, (size_t)t->free_cap,
                                         sizeof *t->free_slots);
    }
    t->free_slots[t->nfree++] = slot;
}

static bool timer_before(const wr_session_timer_t *a, const wr_session_timer_t *b)
{
    return a->time < b->time || (a->time == b->time && a->seq < b->seq);
}

static bool key_before(int64_t ta, uint64_t sa, int64_t tb, uint64_t sb);

static bool key_before(int64_t ta, uint64_t sa, int64_t tb, uint64_t sb)
{
    return ta < tb || (ta == tb && sa < sb);
}

static void heap_push(weir_sessions_t *t, int64_t time, uint64_t seq, int32_t kid, int64_t start)
{
    if (t->heap_len == t->heap_cap) {
        t->heap_cap = t->heap_cap ? t->heap_cap * 2 : 1024;
        t->heap = wr_xreallocarray(t->heap, t->heap_cap, sizeof *t->heap);
    }
    wr_session_timer_t x = { time, seq, start, kid, 0 };
    size_t i = t->heap_len++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!timer_before(&x, &t->heap[p])) {
            break;
        }
        t->heap[i] = t->heap[p];
        i = p;
    }
    t->heap[i] = x;
}

static void heap_pop(weir_sessions_t *t)
{
    wr_session_timer_t x = t->heap[--t->heap_len];
    size_t n = t->heap_len, i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) {
            break;
        }
        if (c + 1 < n && timer_before(&t->heap[c + 1], &t->heap[c])) {
            c++;
        }
        if (!timer_before(&t->heap[c], &x)) {
            break;
        }
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n > 0) {
        t->heap[i] = x;
    }
}

/* The index of the first window of k whose stop >= start (k->n when none). */
static int32_t first_touching(const wr_session_key_t *k, int64_t start)
{
    int32_t lo = 0, hi = k->n;
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (k->v[mid].stop < start) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The index of the window of k that starts at start, or -1. */
static int32_t find_start(const wr_session_key_t *k, int64_t start)
{
    int32_t i = first_touching(k, start);
    if (i < k->n && k->v[i].start == start) {
        return i;
    }
    return -1;
}

/* The index of window [start, stop) in k, or -1. */
static int32_t find(const wr_session_key_t *k, int64_t start, int64_t stop)
{
    int32_t i = first_touching(k, start);
    if (i < k->n && k->v[i].start == start && k->v[i].stop == stop) {
        return i;
    }
    return -1;
}

static void to_out(weir_session_t *o, const wr_session_t *s, int32_t kid)
{
    o->start = wr_ms_to_double(s->start);
    o->stop = wr_ms_to_double(s->stop);
    o->sstart = wr_ms_to_double(s->sstart);
    o->sstop = wr_ms_to_double(s->sstop);
    o->time = 0;
    o->kid = kid;
    o->slot = s->slot;
    o->what = 0;
    o->pad = 0;
}

static bool whole_id(double kid)
{
    return kid >= 1 && kid <= INT32_MAX && kid == floor(kid);
}

/* The cleanup time of a window whose max timestamp is maxts; INT64_MAX: none. */
static int64_t cleanup_of(const weir_sessions_t *t, int64_t maxts)
{
    if (maxts > INT64_MAX - t->lateness) {
        return INT64_MAX;
    }
    return maxts + t->lateness;
}

/* The timers of a new or grown window s, registered now (numbers from t->seq, the trigger's
 * first), as weir.windowop registers them: the trigger's at the max timestamp when that is
 * after wm, the cleanup; one timer when the two times are one. */
static void set_timers(weir_sessions_t *t, wr_session_t *s, int64_t wm)
{
    int64_t maxts = s->stop - 1;
    int64_t cleanup = cleanup_of(t, maxts);
    s->fire_pending = maxts > wm;
    if (s->fire_pending) {
        s->fire_t = maxts;
        s->fire_s = t->seq++;
    }
    s->clean_t = cleanup;
    if (cleanup != INT64_MAX) {
        s->clean_s = s->fire_pending && cleanup == maxts ? s->fire_s : t->seq++;
    }
}

/* The earliest of s's timers into *time, *seq; false when it has none. */
static bool earliest(const wr_session_t *s, int64_t *time, uint64_t *seq)
{
    bool any = false;
    if (s->fire_pending) {
        *time = s->fire_t;
        *seq = s->fire_s;
        any = true;
    }
    if (s->clean_t != INT64_MAX && (!any || key_before(s->clean_t, s->clean_s, *time, *seq))) {
        *time = s->clean_t;
        *seq = s->clean_s;
        any = true;
    }
    return any;
}

/* After s's timers changed: a heap entry for its earliest timer, unless its live entry comes
 * up first anyway (then that entry is pushed again when it does). fresh: s has no live entry
 * (new, or its start moved). */
static void enqueue(weir_sessions_t *t, int32_t kid, wr_session_t *s, bool fresh)
{
    int64_t time;
    uint64_t seq;
    if (!earliest(s, &time, &seq)) {
        s->htime = INT64_MAX;
        s->hseq = UINT64_MAX;
        return;
    }
    if (fresh || key_before(time, seq, s->htime, s->hseq)) {
        heap_push(t, time, seq, kid, s->start);
        s->htime = time;
        s->hseq = seq;
    }
}

static wr_session_key_t *key_of(weir_sessions_t *t, int32_t kid)
{
    if (kid >= t->nkeys) {
        int32_t n = t->nkeys ? t->nkeys : 64;
        while (n <= kid) {
            n = n > INT32_MAX / 2 ? INT32_MAX : n * 2;
        }
        t->keys = wr_xreallocarray(t->keys, (size_t)n, sizeof *t->keys);
        memset(t->keys + t->nkeys, 0, (size_t)(n - t->nkeys) * sizeof *t->keys);
        t->nkeys = n;
    }
    return &t->keys[kid];
}

int32_t weir_sessions_add(weir_sessions_t *t, double kid_d, double start_d, double stop_d,
                          double wm_d)
{
    if (t == NULL || !whole_id(kid_d) || isnan(start_d) || isnan(stop_d) || isnan(wm_d)
        || !(start_d < stop_d)) {
        return WEIR_EINVAL;
    }
    int32_t kid = (int32_t)kid_d;
    int64_t start = wr_ms_from_double(start_d), stop = wr_ms_from_double(stop_d);
    int64_t wm = wr_ms_from_double(wm_d);
    wr_session_key_t *k = key_of(t, kid);
    int32_t a = first_touching(k, start);
    int32_t b = a; /* windows [a, b) touch [start, stop) */
    while (b < k->n && k->v[b].start <= stop) {
        b++;
    }
    if (a == b) {
        if (cleanup_of(t, stop - 1) <= wm) {
            return WEIR_SESSION_LATE;
        }
        if (k->n == k->cap) {
            k->cap = k->cap ? k->cap * 2 : 2;
            k->v = wr_xreallocarray(k->v, (size_t)k->cap, sizeof *k->v);
        }
        memmove(&k->v[a + 1], &k->v[a], (size_t)(k->n - a) * sizeof *k->v);
        k->n++;
        t->open++;
        wr_session_t *s = &k->v[a];
        *s = (wr_session_t){ .start = start, .stop = stop, .sstart = start, .sstop = stop,
                             .slot = take_slot(t) };
        set_timers(t, s, wm);
        enqueue(t, kid, s, true);
        to_out(&t->out[0], s, kid);
        return 1;
    }
    wr_session_t *first = &k->v[a];
    if (b == a + 1 && first->start <= start && first->stop >= stop) {
        to_out(&t->out[0], first, kid);
        return 0;
    }
    int32_t m = b - a;
    if (m + 1 > t->out_cap) {
        while (t->out_cap < m + 1) {
            t->out_cap *= 2;
        }
        t->out = wr_xreallocarray(t->out, (size_t)t->out_cap, sizeof *t->out);
    }
    for (int32_t i = 0; i < m; i++) {
        const wr_session_t *s = &k->v[a + i];
        to_out(&t->out[1 + i], s, kid);
        if (s->slot != first->slot) {
            give_slot(t, s->slot);
        }
    }
    int64_t last = k->v[b - 1].stop;
    int64_t old_start = first->start;
    first->start = start < first->start ? start : first->start;
    first->stop = stop > last ? stop : last;
    if (m > 1) {
        memmove(&k->v[a + 1], &k->v[b], (size_t)(k->n - b) * sizeof *k->v);
        k->n -= m - 1;
        t->open -= (size_t)(m - 1);
    }
    set_timers(t, first, wm);
    enqueue(t, kid, first, first->start != old_start);
    to_out(&t->out[0], first, kid);
    return m + 1;
}

const weir_session_t *weir_sessions_out(const weir_sessions_t *t)
{
    return t->out;
}

int32_t weir_sessions_due(weir_sessions_t *t, double wm_d, weir_session_t *out, int32_t max)
{
    if (t == NULL || isnan(wm_d) || max < 0 || (out == NULL && max > 0)) {
        return WEIR_EINVAL;
    }
    int64_t wm = wr_ms_from_double(wm_d);
    int32_t n = 0;
    while (n < max && t->heap_len > 0 && t->heap[0].time <= wm) {
        wr_session_timer_t x = t->heap[0];
        heap_pop(t);
        wr_session_key_t *k = x.kid < t->nkeys ? &t->keys[x.kid] : NULL;
        int32_t i = k ? find_start(k, x.start) : -1;
        if (i < 0 || k->v[i].hseq != x.seq) {
            continue; /* its window merged away or was cleaned up, or has a newer entry */
        }
        wr_session_t *s = &k->v[i];
        int64_t time = INT64_MAX;
        uint64_t seq = UINT64_MAX;
        earliest(s, &time, &seq); /* a live entry's window has a timer */
        if (time != x.time || seq != x.seq) { /* the window grew: its timer is later */
            heap_push(t, time, seq, x.kid, s->start);
            s->htime = time;
            s->hseq = seq;
            continue;
        }
        int32_t what = 0;
        if (s->fire_pending && s->fire_t == time && s->fire_s == seq) {
            what |= WEIR_SESSION_FIRE;
            s->fire_pending = 0;
        }
        if (s->clean_t == time && s->clean_s == seq) {
            what |= WEIR_SESSION_CLEANUP;
        }
        weir_session_t *o = &out[n++];
        to_out(o, s, x.kid);
        o->time = wr_ms_to_double(time);
        o->what = what;
        if (what & WEIR_SESSION_CLEANUP) {
            give_slot(t, s->slot);
            memmove(&k->v[i], &k->v[i + 1], (size_t)(k->n - i - 1) * sizeof *k->v);
            k->n--;
            t->open--;
        } else {
            enqueue(t, x.kid, s, true);
        }
    }
    return n;
}

/* A timer as the listing gives it. */
typedef struct listed {
    int64_t time;
    uint64_t seq;
    int32_t kid, index, what, pad;
} listed_t;

static int cmp_listed(const void *pa, const void *pb)
{
    const listed_t *a = pa, *b = pb;
    return key_before(a->time, a->seq, b->time, b->seq)   ? -1
           : key_before(b->time, b->seq, a->time, a->seq) ? 1
                                                          : 0;
}

int32_t weir_sessions_timers(const weir_sessions_t *t, weir_session_t *out, int32_t max)
{
    if (t == NULL || max < 0 || (out == NULL && max > 0)) {
        return WEIR_EINVAL;
    }
    listed_t *list = wr_xreallocarray(NULL, 2 * t->open + 1, sizeof *list);
    size_t n = 0;
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        const wr_session_key_t *k = &t->keys[kid];
        for (int32_t i = 0; i < k->n; i++) {
            const wr_session_t *s = &k->v[i];
            bool one = s->fire_pending && s->clean_t == s->fire_t && s->clean_s == s->fire_s;
            if (s->fire_pending) {
                list[n++] = (listed_t){ s->fire_t, s->fire_s, kid, i,
                                        WEIR_SESSION_FIRE | (one ? WEIR_SESSION_CLEANUP : 0), 0 };
            }
            if (s->clean_t != INT64_MAX && !one) {
                list[n++] = (listed_t){ s->clean_t, s->clean_s, kid, i, WEIR_SESSION_CLEANUP, 0 };
            }
        }
    }
    qsort(list, n, sizeof *list, cmp_listed);
    for (size_t j = 0; j < n && j < (size_t)max; j++) {
        to_out(&out[j], &t->keys[list[j].kid].v[list[j].index], list[j].kid);
        out[j].time = wr_ms_to_double(list[j].time);
        out[j].what = list[j].what;
    }
    free(list);
    return n > INT32_MAX ? INT32_MAX : (int32_t)n;
}

int32_t weir_sessions_windows(const weir_sessions_t *t, weir_session_t *out, int32_t max)
{
    if (t == NULL || max < 0 || (out == NULL && max > 0)) {
        return WEIR_EINVAL;
    }
    int32_t n = 0;
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        const wr_session_key_t *k = &t->keys[kid];
        for (int32_t i = 0; i < k->n; i++) {
            if (n < max) {
                to_out(&out[n], &k->v[i], kid);
            }
            n++;
        }
    }
    return n;
}

double weir_sessions_stat(const weir_sessions_t *t, int32_t what)
{
    if (t == NULL) {
        return NAN;
    }
    if (what == WEIR_STORE_OPEN) {
        return (double)t->open;
    }
    if (what == WEIR_STORE_BYTES) {
        double bytes = sizeof *t + (double)t->heap_cap * sizeof *t->heap
                       + (double)t->nkeys * sizeof *t->keys
                       + (double)t->free_cap * sizeof *t->free_slots
                       + (double)t->out_cap * sizeof *t->out;
        for (int32_t k = 0; k < t->nkeys; k++) {
            bytes += (double)t->keys[k].cap * sizeof(wr_session_t);
        }
        return bytes;
    }
    return NAN;
}

int32_t weir_sessions_put(weir_sessions_t *t, double kid_d, double start_d, double stop_d,
                          double sstart_d, double sstop_d)
{
    if (t == NULL || !whole_id(kid_d) || isnan(start_d) || isnan(stop_d) || isnan(sstart_d)
        || isnan(sstop_d) || !(start_d < stop_d) || !(sstart_d < sstop_d)) {
        return WEIR_EINVAL;
    }
    int32_t kid = (int32_t)kid_d;
    int64_t start = wr_ms_from_double(start_d), stop = wr_ms_from_double(stop_d);
    wr_session_key_t *k = key_of(t, kid);
    int32_t a = first_touching(k, start);
    if (a < k->n && k->v[a].start <= stop) {
        return WEIR_EINVAL;
    }
    if (k->n == k->cap) {
        k->cap = k->cap ? k->cap * 2 : 2;
        k->v = wr_xreallocarray(k->v, (size_t)k->cap, sizeof *k->v);
    }
    memmove(&k->v[a + 1], &k->v[a], (size_t)(k->n - a) * sizeof *k->v);
    k->n++;
    t->open++;
    k->v[a] = (wr_session_t){ .start = start, .stop = stop, .sstart = wr_ms_from_double(sstart_d),
                              .sstop = wr_ms_from_double(sstop_d), .clean_t = INT64_MAX,
                              .htime = INT64_MAX, .hseq = UINT64_MAX, .slot = take_slot(t) };
    return k->v[a].slot;
}

int weir_sessions_timer(weir_sessions_t *t, double kid_d, double start_d, double stop_d,
                        double time_d)
{
    if (t == NULL || !whole_id(kid_d) || isnan(start_d) || isnan(stop_d) || isnan(time_d)) {
        return WEIR_EINVAL;
    }
    int32_t kid = (int32_t)kid_d;
    int64_t start = wr_ms_from_double(start_d), stop = wr_ms_from_double(stop_d);
    int64_t time = wr_ms_from_double(time_d);
    int32_t i = kid < t->nkeys ? find(&t->keys[kid], start, stop) : -1;
    if (i < 0) {
        return WEIR_EINVAL;
    }
    wr_session_t *s = &t->keys[kid].v[i];
    bool fire = time == stop - 1, clean = time == cleanup_of(t, stop - 1);
    if (!fire && !clean) {
        return WEIR_EINVAL;
    }
    uint64_t seq = t->seq++;
    if (fire) {
        s->fire_pending = 1;
        s->fire_t = time;
        s->fire_s = seq;
    }
    if (clean) {
        s->clean_t = time;
        s->clean_s = seq;
    }
    enqueue(t, kid, s, false);
    return 0;
}

int weir_sessions_timer_stat(const weir_sessions_t *t, double *out)
{
    if (t == NULL || out == NULL) {
        return WEIR_EINVAL;
    }
    size_t live = 0;
    int64_t next = INT64_MAX;
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        const wr_session_key_t *k = &t->keys[kid];
        for (int32_t i = 0; i < k->n; i++) {
            const wr_session_t *s = &k->v[i];
            bool one = s->fire_pending && s->clean_t == s->fire_t && s->clean_s == s->fire_s;
            live += (size_t)(s->fire_pending != 0) + (s->clean_t != INT64_MAX && !one);
            int64_t time;
            uint64_t seq;
            if (earliest(s, &time, &seq) && time < next) {
                next = time;
            }
        }
    }
    out[0] = (double)live;
    out[1] = next == INT64_MAX ? INFINITY : wr_ms_to_double(next);
    return 0;
}

int32_t weir_sessions_kids(const weir_sessions_t *t, int32_t *out, int32_t max)
{
    if (t == NULL || max < 0 || (out == NULL && max > 0)) {
        return WEIR_EINVAL;
    }
    int32_t n = 0;
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        if (t->keys[kid].n > 0) {
            if (n < max) {
                out[n] = kid;
            }
            n++;
        }
    }
    return n;
}

void weir_sessions_snap_free(weir_sessions_cols_t *s)
{
    if (s == NULL) {
        return;
    }
    void *cols[] = { s->woff, s->wk, s->wslot, s->ws, s->we, s->moff, s->mk, s->mn, s->doff,
                     s->md, s->toff, s->tk, s->tr, s->td, s->tt, s->ts, s->te };
    for (size_t i = 0; i < sizeof cols / sizeof cols[0]; i++) {
        free(cols[i]);
    }
    memset(s, 0, sizeof *s);
}

/* off[0 .. nsec] from per-section counts in off[1 .. nsec] (prefix sums); at[k] = off[k]. */
static void offsets(int32_t *off, int32_t *at, int32_t nsec)
{
    off[0] = 0;
    for (int32_t k = 1; k <= nsec; k++) {
        off[k] += off[k - 1];
    }
    memcpy(at, off, (size_t)nsec * sizeof *at);
}

static bool state_is_own(const wr_session_t *s)
{
    return s->sstart == s->start && s->sstop == s->stop;
}

int weir_sessions_snap(const weir_sessions_t *t, const int32_t *ksec, const int32_t *kki,
                       int32_t nkid, int32_t nsec, weir_sessions_cols_t *out)
{
    if (t == NULL || out == NULL || nsec < 0 || nkid < 0
        || ((ksec == NULL || kki == NULL) && nkid > 0)) {
        return WEIR_EINVAL;
    }
    memset(out, 0, sizeof *out);
    /* the counts per section, checking every key id with windows */
    size_t nw = 0, nm = 0, ne = 0, nt = 0;
    int32_t *wc = wr_xcalloc((size_t)nsec + 1, sizeof *wc);
    int32_t *mc = wr_xcalloc((size_t)nsec + 1, sizeof *mc);
    int32_t *dc = wr_xcalloc((size_t)nsec + 1, sizeof *dc);
    int32_t *tc = wr_xcalloc((size_t)nsec + 1, sizeof *tc);
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        const wr_session_key_t *k = &t->keys[kid];
        if (k->n == 0) {
            continue;
        }
        if (kid >= nkid || ksec[kid] < 0 || ksec[kid] >= nsec) {
            free(wc), free(mc), free(dc), free(tc);
            return WEIR_EINVAL;
        }
        int32_t sec = ksec[kid];
        size_t w = 0, tm = 0;
        for (int32_t i = 0; i < k->n; i++) {
            const wr_session_t *s = &k->v[i];
            bool one = s->fire_pending && s->clean_t == s->fire_t && s->clean_s == s->fire_s;
            w += state_is_own(s) ? 1 : 2;
            tm += (size_t)(s->fire_pending != 0) + (s->clean_t != INT64_MAX && !one);
        }
        wc[sec + 1] += (int32_t)w;
        mc[sec + 1]++;
        dc[sec + 1] += k->n;
        tc[sec + 1] += (int32_t)tm;
        nw += w, nm++, ne += (size_t)k->n, nt += tm;
    }
    if (nw > INT32_MAX || ne > INT32_MAX / 4 || nt > INT32_MAX) {
        free(wc), free(mc), free(dc), free(tc);
        return WEIR_EINVAL;
    }
    out->nsec = nsec;
    out->nwin = (int32_t)nw, out->nkey = (int32_t)nm, out->nentry = (int32_t)ne;
    out->ntimer = (int32_t)nt;
    size_t at_n = (size_t)nsec + 1;
    int32_t *wat = wr_xcalloc(at_n, sizeof *wat), *mat = wr_xcalloc(at_n, sizeof *mat);
    int32_t *dat = wr_xcalloc(at_n, sizeof *dat), *tat = wr_xcalloc(at_n, sizeof *tat);
    offsets(wc, wat, nsec);
    offsets(mc, mat, nsec);
    offsets(dc, dat, nsec);
    offsets(tc, tat, nsec);
    out->woff = wc, out->moff = mc, out->doff = dc, out->toff = tc;
    out->wk = wr_xcalloc(nw + 1, sizeof *out->wk);
    out->wslot = wr_xcalloc(nw + 1, sizeof *out->wslot);
    out->ws = wr_xcalloc(nw + 1, sizeof *out->ws);
    out->we = wr_xcalloc(nw + 1, sizeof *out->we);
    out->mk = wr_xcalloc(nm + 1, sizeof *out->mk);
    out->mn = wr_xcalloc(nm + 1, sizeof *out->mn);
    out->md = wr_xcalloc(4 * ne + 1, sizeof *out->md);
    out->tk = wr_xcalloc(nt + 1, sizeof *out->tk);
    out->tr = wr_xcalloc(nt + 1, sizeof *out->tr);
    out->td = wr_xcalloc(nt + 1, sizeof *out->td); /* 0: WEIR_TIME_EVENT */
    out->tt = wr_xcalloc(nt + 1, sizeof *out->tt);
    out->ts = wr_xcalloc(nt + 1, sizeof *out->ts);
    out->te = wr_xcalloc(nt + 1, sizeof *out->te);
    /* windows and merging sets, in key id order within each section */
    listed_t *list = wr_xreallocarray(NULL, nt + 1, sizeof *list);
    size_t n = 0;
    for (int32_t kid = 1; kid < t->nkeys; kid++) {
        const wr_session_key_t *k = &t->keys[kid];
        if (k->n == 0) {
            continue;
        }
        int32_t sec = ksec[kid], ki = kki[kid];
        int32_t m = mat[sec]++;
        out->mk[m] = ki;
        out->mn[m] = k->n;
        for (int32_t i = 0; i < k->n; i++) {
            const wr_session_t *s = &k->v[i];
            int32_t w = wat[sec]++;
            out->wk[w] = ki;
            out->ws[w] = wr_ms_to_double(s->start);
            out->we[w] = wr_ms_to_double(s->stop);
            if (state_is_own(s)) {
                out->wslot[w] = s->slot;
            } else {
                w = wat[sec]++;
                out->wk[w] = ki;
                out->ws[w] = wr_ms_to_double(s->sstart);
                out->we[w] = wr_ms_to_double(s->sstop);
                out->wslot[w] = s->slot;
            }
            double *d = &out->md[4 * (size_t)dat[sec]++];
            d[0] = wr_ms_to_double(s->start);
            d[1] = wr_ms_to_double(s->stop);
            d[2] = wr_ms_to_double(s->sstart);
            d[3] = wr_ms_to_double(s->sstop);
            bool one = s->fire_pending && s->clean_t == s->fire_t && s->clean_s == s->fire_s;
            if (s->fire_pending) {
                list[n++] = (listed_t){ s->fire_t, s->fire_s, kid, i, 0, 0 };
            }
            if (s->clean_t != INT64_MAX && !one) {
                list[n++] = (listed_t){ s->clean_t, s->clean_s, kid, i, 0, 0 };
            }
        }
    }
    /* timers in pop order; each keeps its rank there and goes to its key's section */
    qsort(list, n, sizeof *list, cmp_listed);
    for (size_t j = 0; j < n; j++) {
        const wr_session_t *s = &t->keys[list[j].kid].v[list[j].index];
        int32_t sec = ksec[list[j].kid];
        int32_t x = tat[sec]++;
        out->tt[x] = wr_ms_to_double(list[j].time);
        out->tk[x] = kki[list[j].kid];
        out->ts[x] = wr_ms_to_double(s->start);
        out->te[x] = wr_ms_to_double(s->stop);
        out->tr[x] = (int32_t)j;
    }
    free(list);
    free(wat), free(mat), free(dat), free(tat);
    return 0;
}
