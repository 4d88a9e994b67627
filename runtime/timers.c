/* SPDX-License-Identifier: MIT */
/* timers.c: per domain, a binary min-heap ordered by (time, registration seq), a few runs (FIFOs
 * of timers registered in time order, O(1) each way) and a hash index from the whole timer to
 * its node, for set semantics and delete. seq makes the order total, so equal times pop in
 * registration order (weir's rule; Flink's heap leaves ties to its sift order, SEMANTICS.md
 * 5.6), the sift direction after a removal cannot matter, and a timer pops at the same place
 * whether it sat in the heap or in a run. */
#include "timers.h"
#include "ms.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "weir.h"

enum {
    MIN_CAP = 16,          /* first heap/node allocation */
    MIN_INDEX_CAP = 32,    /* first index allocation: a power of two */
    KEEP_WHEN_EMPTY = 1024 /* a domain that empties keeps arrays up to this many timers */
};
static const uint32_t NO_NODE = UINT32_MAX; /* an empty index entry; the end of the free list */
/* pos[n] of a node in a run: the flag, the run (2 bits) and the index in the run's array */
static const uint32_t IN_RUN = UINT32_C(1) << 31;
enum { RUN_SHIFT = 28 };
static const uint32_t RUN_INDEX = (UINT32_C(1) << RUN_SHIFT) - 1;
static const uint32_t RUN_MAX = UINT32_C(1) << RUN_SHIFT; /* entries of one run's array */
_Static_assert(WR_TIMERS_RUNS <= 4, "a run number fits in pos's 2 bits");

/* --- index ------------------------------------------------------------------------------- */

/* wr_idtab_mix chained over the four fields. The fields of one window's timers are correlated
 * (stop = start + size, time = stop - 1), which the chain does not mind: probe lengths and
 * fingerprint clashes for tumbling, sliding and global windows match a random hash's. */
static uint32_t hash_timer(const wr_timer_t *x)
{
    uint64_t h = wr_idtab_mix(UINT64_C(0x6a09e667f3bcc908), (uint64_t)x->time_ms);
    h = wr_idtab_mix(h, (uint64_t)x->key);
    h = wr_idtab_mix(h, (uint64_t)x->start);
    h = wr_idtab_mix(h, (uint64_t)x->stop);
    return (uint32_t)wr_idtab_finish(h);
}

static bool same_timer(const wr_timer_t *a, const wr_timer_t *b)
{
    return a->time_ms == b->time_ms && a->key == b->key && a->start == b->start &&
           a->stop == b->stop;
}

/* The stored hash says where an entry lives: growth and deletion never read a node. */
static size_t entry_home(const void *entry, size_t mask)
{
    return (size_t)((const wr_timers_slot_t *)entry)->hash & mask;
}

/* node is a uint32_t below WR_TIMERS_MAX, so as an int32_t it is negative only when NO_NODE. */
static const wr_idtab_kind_t KIND = {
    .size = sizeof(wr_timers_slot_t),
    .id_at = offsetof(wr_timers_slot_t, node),
    .home = entry_home,
};

static wr_timers_slot_t *slots(const wr_timers_domain_t *d)
{
    return d->index.entries;
}

typedef struct timer_query {
    const wr_timers_domain_t *d;
    const wr_timer_t *x;
    uint32_t hash;
} timer_query_t;

/* Only an entry with the same hash costs a read of its node. */
static bool same_entry(const void *entry, const void *query)
{
    const wr_timers_slot_t *e = entry;
    const timer_query_t *q = query;
    return e->hash == q->hash && same_timer(&q->d->nodes[e->node], q->x);
}

static bool same_node(const void *entry, const void *query)
{
    return ((const wr_timers_slot_t *)entry)->node == *(const uint32_t *)query;
}

/* Linear probe for x, whose hash is `hash`: the index position holding its node (*found) or
 * the empty position where it would go. index.cap > 0, and the index always has an empty entry
 * (load <= 3/4). */
static size_t probe(const wr_timers_domain_t *d, const wr_timer_t *x, uint32_t hash,
                    bool *found)
{
    timer_query_t q = {.d = d, .x = x, .hash = hash};
    return wr_idtab_find(&d->index, &KIND, (size_t)hash & (d->index.cap - 1), same_entry, &q,
                         found);
}

/* The index position of live node n, whose timer hashes to `hash`: compares node ids only. */
static size_t probe_node(const wr_timers_domain_t *d, uint32_t n, uint32_t hash)
{
    bool found;
    size_t i = wr_idtab_find(&d->index, &KIND, (size_t)hash & (d->index.cap - 1), same_node, &n,
                             &found);
    assert(found);
    return i;
}

static void domain_init(wr_timers_domain_t *d, uint64_t next_seq)
{
    memset(d, 0, sizeof *d);
    d->free_node = NO_NODE;
    d->next_seq = next_seq;
}

static void domain_close(wr_timers_domain_t *d)
{
    for (int r = 0; r < WR_TIMERS_RUNS; r++) {
        wr_free(d->run[r].e);
    }
    wr_free(d->heap);
    wr_free(d->nodes);
    wr_free(d->pos);
    wr_idtab_close(&d->index, &KIND, NULL);
    domain_init(d, d->next_seq);
}

void wr_timers_init(wr_timers_t *t)
{
    for (int i = 0; i < WR_TIMERS_DOMAINS; i++) {
        domain_init(&t->dom[i], 0);
    }
    t->distinct = false;
}

void wr_timers_close(wr_timers_t *t)
{
    for (int i = 0; i < WR_TIMERS_DOMAINS; i++) {
        domain_close(&t->dom[i]);
    }
    t->distinct = false;
}

/* --- heap -------------------------------------------------------------------------------- */

static bool before(const wr_timers_entry_t *a, const wr_timers_entry_t *b)
{
    return a->time_ms < b->time_ms || (a->time_ms == b->time_ms && a->seq < b->seq);
}

static void place(wr_timers_domain_t *d, size_t i, wr_timers_entry_t e)
{
    d->heap[i] = e;
    d->pos[e.node] = (uint32_t)i;
}

static void sift_up(wr_timers_domain_t *d, size_t i)
{
    wr_timers_entry_t e = d->heap[i];
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!before(&e, &d->heap[parent])) {
            break;
        }
        place(d, i, d->heap[parent]);
        i = parent;
    }
    place(d, i, e);
}

static void sift_down(wr_timers_domain_t *d, size_t i)
{
    wr_timers_entry_t e = d->heap[i];
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= d->len) {
            break;
        }
        if (child + 1 < d->len && before(&d->heap[child + 1], &d->heap[child])) {
            child++;
        }
        if (!before(&d->heap[child], &e)) {
            break;
        }
        place(d, i, d->heap[child]);
        i = child;
    }
    place(d, i, e);
}

static uint32_t take_node(wr_timers_domain_t *d)
{
    if (d->free_node != NO_NODE) {
        uint32_t n = d->free_node;
        d->free_node = d->pos[n];
        return n;
    }
    if (d->nodes_len == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : MIN_CAP;
        d->heap = wr_xreallocarray(d->heap, cap, sizeof *d->heap);
        d->nodes = wr_xreallocarray(d->nodes, cap, sizeof *d->nodes);
        d->pos = wr_xreallocarray(d->pos, cap, sizeof *d->pos);
        d->cap = cap;
    }
    return (uint32_t)d->nodes_len++;
}

/* --- runs -------------------------------------------------------------------------------- */

static uint32_t run_pos(int r, uint32_t i)
{
    return IN_RUN | (uint32_t)r << RUN_SHIFT | i;
}

/* Moves run r's live entries to the front of its array (dropping tombstones) and renumbers
 * their nodes' positions. */
static void run_compact(wr_timers_domain_t *d, int r)
{
    wr_timers_run_t *run = &d->run[r];
    uint32_t j = 0;
    for (uint32_t i = run->head; i < run->end; i++) {
        wr_timers_entry_t e = run->e[i];
        if (e.node != NO_NODE) {
            run->e[j] = e;
            d->pos[e.node] = run_pos(r, j);
            j++;
        }
    }
    run->head = 0;
    run->end = j;
}

/* The run that a timer at `time` can be appended to (the one whose last time is the latest at
 * or before it; else an empty one), with room made for one entry; -1 when none. */
static int run_for(wr_timers_domain_t *d, int64_t time)
{
    int best = -1, empty = -1;
    for (int r = 0; r < WR_TIMERS_RUNS; r++) {
        const wr_timers_run_t *run = &d->run[r];
        if (run->head == run->end) {
            if (empty < 0) {
                empty = r;
            }
        } else if (run->e[run->end - 1].time_ms <= time &&
                   (best < 0 || run->e[run->end - 1].time_ms >
                                    d->run[best].e[d->run[best].end - 1].time_ms)) {
            best = r;
        }
    }
    if (best < 0) {
        best = empty;
    }
    if (best < 0) {
        return -1;
    }
    wr_timers_run_t *run = &d->run[best];
    if (run->end == run->cap) {
        /* compact when at least half is free (front or tombstones), else grow */
        if (run->cap && run->live <= run->cap / 2) {
            run_compact(d, best);
        } else if (run->cap < RUN_MAX) {
            uint32_t cap = run->cap ? run->cap * 2 : MIN_CAP;
            run->e = wr_xreallocarray(run->e, cap, sizeof *run->e);
            run->cap = cap;
        } else {
            return -1;
        }
    }
    return best;
}

static void run_append(wr_timers_domain_t *d, int r, wr_timers_entry_t e)
{
    wr_timers_run_t *run = &d->run[r];
    run->e[run->end] = e;
    d->pos[e.node] = run_pos(r, run->end);
    run->end++;
    run->live++;
    d->runs_len++;
}

/* Takes run r's entry i out: a tombstone, or the front moves past it and past the tombstones
 * behind it. (A full run at most half live is compacted before it grows: run_for.) */
static void run_remove(wr_timers_domain_t *d, int r, uint32_t i)
{
    wr_timers_run_t *run = &d->run[r];
    run->e[i].node = NO_NODE;
    run->live--;
    d->runs_len--;
    if (run->live == 0) {
        run->head = run->end = 0;
        return;
    }
    if (i == run->head) {
        do {
            run->head++;
        } while (run->e[run->head].node == NO_NODE);
    }
}

/* The least (time, seq) entry of the heap's top and the runs' fronts, or NULL when the domain
 * is empty. */
static const wr_timers_entry_t *first_entry(const wr_timers_domain_t *d)
{
    const wr_timers_entry_t *best = d->len ? &d->heap[0] : NULL;
    for (int r = 0; r < WR_TIMERS_RUNS; r++) {
        const wr_timers_run_t *run = &d->run[r];
        if (run->head != run->end && (!best || before(&run->e[run->head], best))) {
            best = &run->e[run->head];
        }
    }
    return best;
}

static size_t live_count(const wr_timers_domain_t *d)
{
    return d->len + d->runs_len;
}

/* Removes the timer of node n, whose index entry is at `slot` (none without an index). */
static void remove_timer(wr_timers_domain_t *d, size_t slot, uint32_t n, bool indexed)
{
    uint32_t pos = d->pos[n];
    if (indexed) {
        wr_idtab_remove_at(&d->index, &KIND, slot);
    }
    if (pos & IN_RUN) {
        run_remove(d, (int)((pos & ~IN_RUN) >> RUN_SHIFT), pos & RUN_INDEX);
    } else {
        d->len--;
        if (pos < d->len) {
            place(d, pos, d->heap[d->len]);
            if (pos > 0 && before(&d->heap[pos], &d->heap[(pos - 1) / 2])) {
                sift_up(d, pos);
            } else {
                sift_down(d, pos);
            }
        }
    }
    if (indexed) {
        d->pos[n] = d->free_node; /* LIFO: the node just freed is reused while it is warm */
        d->free_node = n;
    } else {
        /* FIFO: timers registered in time order then take nodes in the order they are popped
         * in, so pops walk the nodes array forward instead of at random */
        d->pos[n] = NO_NODE;
        if (d->free_node == NO_NODE) {
            d->free_node = n;
        } else {
            d->pos[d->free_tail] = n;
        }
        d->free_tail = n;
    }
    if (live_count(d) == 0 && d->cap > KEEP_WHEN_EMPTY) {
        domain_close(d); /* after a burst, give the memory back; seq keeps counting */
    }
}

/* --- public ------------------------------------------------------------------------------ */

static wr_timers_domain_t *domain_of(wr_timers_t *t, int domain)
{
    assert(domain >= 0 && domain < WR_TIMERS_DOMAINS);
    return &t->dom[domain];
}

int wr_timers_set_distinct(wr_timers_t *t)
{
    for (int i = 0; i < WR_TIMERS_DOMAINS; i++) {
        if (live_count(&t->dom[i])) {
            return WEIR_ESTATE;
        }
    }
    t->distinct = true;
    return 0;
}

int wr_timers_register(wr_timers_t *t, int domain, const wr_timer_t *timer)
{
    wr_timers_domain_t *d = domain_of(t, domain);
    size_t live = live_count(d);
    if (live >= WR_TIMERS_MAX) {
        return WEIR_ESTATE;
    }
    uint32_t n;
    if (t->distinct) {
        n = take_node(d);
    } else {
        if (wr_idtab_should_grow(&d->index, &KIND, live + 1, 3, 4)) {
            /* new_cap <= 2^32, so a 32-bit hash still covers every position */
            size_t new_cap = d->index.cap ? d->index.cap * 2 : MIN_INDEX_CAP;
            assert(new_cap - 1 <= UINT32_MAX);
            wr_idtab_rehash(&d->index, &KIND, new_cap, NULL);
        }
        uint32_t hash = hash_timer(timer);
        bool found;
        size_t slot = probe(d, timer, hash, &found);
        if (found) {
            return 0; /* set semantics: the first registration keeps its seq */
        }
        n = take_node(d);
        slots(d)[slot] = (wr_timers_slot_t){.node = n, .hash = hash};
    }
    d->nodes[n] = *timer;
    wr_timers_entry_t e = {.time_ms = timer->time_ms, .seq = d->next_seq++, .node = n};
    int r = run_for(d, timer->time_ms);
    if (r >= 0) {
        run_append(d, r, e);
        return 1;
    }
    size_t pos = d->len++;
    d->heap[pos] = e;
    sift_up(d, pos);
    return 1;
}

int wr_timers_delete(wr_timers_t *t, int domain, const wr_timer_t *timer)
{
    wr_timers_domain_t *d = domain_of(t, domain);
    if (t->distinct) {
        return WEIR_EINVAL;
    }
    if (live_count(d) == 0) {
        return 0;
    }
    bool found;
    size_t slot = probe(d, timer, hash_timer(timer), &found);
    if (!found) {
        return 0;
    }
    remove_timer(d, slot, slots(d)[slot].node, true);
    return 1;
}

int wr_timers_pop(wr_timers_t *t, int domain, int64_t upto_ms, wr_timer_t *out)
{
    wr_timers_domain_t *d = domain_of(t, domain);
    const wr_timers_entry_t *first = first_entry(d);
    if (!first || first->time_ms > upto_ms) {
        return 0;
    }
    uint32_t n = first->node;
    *out = d->nodes[n];
    if (t->distinct) {
        remove_timer(d, 0, n, false);
    } else {
        remove_timer(d, probe_node(d, n, hash_timer(out)), n, true);
    }
    return 1;
}

int64_t wr_timers_next(const wr_timers_t *t, int domain)
{
    assert(domain >= 0 && domain < WR_TIMERS_DOMAINS);
    const wr_timers_entry_t *first = first_entry(&t->dom[domain]);
    return first ? first->time_ms : INT64_MAX;
}

size_t wr_timers_count(const wr_timers_t *t, int domain)
{
    assert(domain >= 0 && domain < WR_TIMERS_DOMAINS);
    return live_count(&t->dom[domain]);
}

static int entry_order(const void *a, const void *b)
{
    const wr_timers_entry_t *x = a;
    const wr_timers_entry_t *y = b;
    return before(x, y) ? -1 : before(y, x) ? 1 : 0;
}

/* A copy of the heap and the runs' live entries, sorted: (time, seq) is a total order, so the
 * list is the pop order. */
size_t wr_timers_list(const wr_timers_t *t, int domain, wr_timer_t *out, size_t max)
{
    assert(domain >= 0 && domain < WR_TIMERS_DOMAINS);
    const wr_timers_domain_t *d = &t->dom[domain];
    size_t all = live_count(d);
    if (all == 0 || max == 0) {
        return all;
    }
    wr_timers_entry_t *copy = wr_xreallocarray(NULL, all, sizeof *copy);
    if (d->len) {
        memcpy(copy, d->heap, d->len * sizeof *copy);
    }
    size_t k = d->len;
    for (int r = 0; r < WR_TIMERS_RUNS; r++) {
        const wr_timers_run_t *run = &d->run[r];
        for (uint32_t i = run->head; i < run->end; i++) {
            if (run->e[i].node != NO_NODE) {
                copy[k++] = run->e[i];
            }
        }
    }
    assert(k == all);
    qsort(copy, all, sizeof *copy, entry_order);
    size_t n = all < max ? all : max;
    for (size_t i = 0; i < n; i++) {
        out[i] = d->nodes[copy[i].node];
    }
    wr_free(copy);
    return all;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_timers {
    wr_timers_t t;
};

_Static_assert(sizeof(weir_timer_t) == 4 * sizeof(double), "weir_timer_t is four doubles");

/* Converts the FFI's doubles; false for a bad domain or a NaN. */
static bool timer_from_ffi(int32_t domain, double time_ms, double key, double start,
                           double stop, wr_timer_t *out)
{
    if (domain < 0 || domain >= WR_TIMERS_DOMAINS || isnan(time_ms) || isnan(key) ||
        isnan(start) || isnan(stop)) {
        return false;
    }
    *out = (wr_timer_t){.time_ms = wr_ms_from_double(time_ms),
                        .key = wr_ms_from_double(key),
                        .start = wr_ms_from_double(start),
                        .stop = wr_ms_from_double(stop)};
    return true;
}

weir_timers_t *weir_timers_new(void)
{
    weir_timers_t *ft = wr_xmalloc(sizeof *ft);
    wr_timers_init(&ft->t);
    return ft;
}

void weir_timers_free(weir_timers_t *ft)
{
    if (!ft) {
        return;
    }
    wr_timers_close(&ft->t);
    wr_free(ft);
}

int32_t weir_timers_set_distinct(weir_timers_t *ft)
{
    return wr_timers_set_distinct(&ft->t);
}

int32_t weir_timers_register(weir_timers_t *ft, int32_t domain, double time_ms, double key,
                             double start, double stop)
{
    wr_timer_t x;
    if (!timer_from_ffi(domain, time_ms, key, start, stop, &x)) {
        return WEIR_EINVAL;
    }
    return wr_timers_register(&ft->t, domain, &x);
}

int32_t weir_timers_delete(weir_timers_t *ft, int32_t domain, double time_ms, double key,
                           double start, double stop)
{
    wr_timer_t x;
    if (!timer_from_ffi(domain, time_ms, key, start, stop, &x)) {
        return WEIR_EINVAL;
    }
    return wr_timers_delete(&ft->t, domain, &x);
}

int32_t weir_timers_pop(weir_timers_t *ft, int32_t domain, double upto_ms, weir_timer_t *out)
{
    if (domain < 0 || domain >= WR_TIMERS_DOMAINS || isnan(upto_ms)) {
        return WEIR_EINVAL;
    }
    wr_timer_t x;
    if (!wr_timers_pop(&ft->t, domain, wr_ms_from_double(upto_ms), &x)) {
        return 0;
    }
    out->time_ms = wr_ms_to_double(x.time_ms);
    out->key = wr_ms_to_double(x.key);
    out->start = wr_ms_to_double(x.start);
    out->stop = wr_ms_to_double(x.stop);
    return 1;
}

double weir_timers_next(const weir_timers_t *ft, int32_t domain)
{
    if (domain < 0 || domain >= WR_TIMERS_DOMAINS) {
        return NAN;
    }
    return wr_ms_to_double(wr_timers_next(&ft->t, domain));
}

int32_t weir_timers_list(const weir_timers_t *ft, int32_t domain, weir_timer_t *out, int32_t max)
{
    if (domain < 0 || domain >= WR_TIMERS_DOMAINS || max < 0) {
        return WEIR_EINVAL;
    }
    size_t want = (size_t)max;
    wr_timer_t *got = want ? wr_xreallocarray(NULL, want, sizeof *got) : NULL;
    size_t all = wr_timers_list(&ft->t, domain, got, want);
    size_t n = all < want ? all : want;
    for (size_t i = 0; i < n; i++) {
        out[i] = (weir_timer_t){.time_ms = wr_ms_to_double(got[i].time_ms),
                                .key = wr_ms_to_double(got[i].key),
                                .start = wr_ms_to_double(got[i].start),
                                .stop = wr_ms_to_double(got[i].stop)};
    }
    wr_free(got);
    return (int32_t)all;
}

int32_t weir_timers_count(const weir_timers_t *ft, int32_t domain)
{
    if (domain < 0 || domain >= WR_TIMERS_DOMAINS) {
        return WEIR_EINVAL;
    }
    return (int32_t)wr_timers_count(&ft->t, domain);
}

