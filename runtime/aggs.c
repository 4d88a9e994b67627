/* SPDX-License-Identifier: MIT */
/* aggs.c: the built-in aggregates' accumulators by window id and their batch operations for
 * the fast window operator's tumbling windows (aggs.h says what they compute). */
#include "aggs.h"
#include "ms.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "wintab.h"
#include "weir.h"

/* MIN_CAP: wintab.c's, so that the windows sit at the positions they had in wintab (the
 * listing's order, which checkpoints and the inspectors show). FIRE_AHEAD: how many windows
 * ahead a fire prefetches (the next few entries in flight, not a chunk's thousands: those
 * would push each other out of the L1 cache before their probe). */
enum { MIN_CAP = 32, FIRE_AHEAD = 16 };

/* Homes by blocks of four, as wintab.c's (the same positions): key ids are dense small
 * integers, and the four keys 4m .. 4m + 3 of one start have consecutive homes, the 64 bytes
 * of one block, placed by Fibonacci hashing (the product's top bits) of (m, start). When keys
 * come round in order, as they do when a watermark's fires or a round of elements open the next
 * windows of every key, a cache line holds the entries of four keys, not one. */
static size_t entry_home(const void *entry, size_t mask)
{
    const wr_aggs_entry_t *e = entry;
    return wr_wintab_home(e->key, e->start, mask);
}

static const wr_idtab_kind_t KIND = {
    .size = sizeof(wr_aggs_entry_t),
    .id_at = offsetof(wr_aggs_entry_t, id),
    .home = entry_home,
};

static bool same_window(const void *entry, const void *query)
{
    const wr_aggs_entry_t *e = entry;
    const wr_aggs_entry_t *q = query;
    return e->key == q->key && e->start == q->start;
}

static inline wr_aggs_entry_t *entries(const wr_aggs_t *a)
{
    return a->index.entries;
}

void wr_aggs_init(wr_aggs_t *a, wr_agg_kind_t kind)
{
    memset(a, 0, sizeof *a);
    a->kind = kind;
    wr_idtab_init(&a->index, &KIND, MIN_CAP, &a->bytes);
}

void wr_aggs_close(wr_aggs_t *a)
{
    wr_idtab_close(&a->index, &KIND, &a->bytes);
    wr_release_counted(&a->bytes, a->acc, a->acc_cap, sizeof *a->acc);
    wr_release_counted(&a->bytes, a->free_ids, a->free_cap, sizeof *a->free_ids);
    wr_release_counted(&a->bytes, a->last, a->last_cap, sizeof *a->last);
    wr_release_counted(&a->bytes, a->top, a->last_cap, sizeof *a->top);
    wr_release_counted(&a->bytes, a->tkeys, a->tcap, sizeof *a->tkeys);
    wr_release_counted(&a->bytes, a->tids, a->tcap, sizeof *a->tids);
    wr_release_counted(&a->bytes, a->tstarts, a->tcap, sizeof *a->tstarts);
    if (a->skeys) {
        wr_release_counted(&a->bytes, a->skeys, a->tcap, sizeof *a->skeys);
        wr_release_counted(&a->bytes, a->sids, a->tcap, sizeof *a->sids);
        wr_release_counted(&a->bytes, a->sstarts, a->tcap, sizeof *a->sstarts);
    }
    wr_release_counted(&a->bytes, a->qs, a->qs_cap, sizeof *a->qs);
    memset(a, 0, sizeof *a);
}

/* The position of (key, start), or of the empty entry that ends its probe run. */
static inline size_t probe(const wr_aggs_t *a, int32_t key, int64_t start)
{
    wr_aggs_entry_t q = {.start = start, .key = key};
    bool found;
    size_t home = wr_wintab_home(key, start, a->index.cap - 1);
    return wr_idtab_find(&a->index, &KIND, home, same_window, &q, &found);
}

/* Starts loading the entry where (key, start)'s probe begins. A macro: GCC finds a function
 * around the builtin free of side effects and drops its calls. */
#define PREFETCH_HOME(a, key, start)                                                          \
    __builtin_prefetch(&entries(a)[wr_wintab_home((key), (start), (a)->index.cap - 1)])

/* Id id is free again. */
static inline void give_id(wr_aggs_t *a, int32_t id)
{
    if (a->nfree == a->free_cap) {
        size_t cap = a->free_cap ? a->free_cap * 2 : 64;
        a->free_ids =
            wr_xresize_counted(&a->bytes, a->free_ids, a->free_cap, cap, sizeof *a->free_ids);
        a->free_cap = cap;
    }
    a->free_ids[a->nfree++] = id;
}

/* A window is gone (its id given back): back to the initial size, ids from 0 again, when no
 * window is left. */
static inline void closed_one(wr_aggs_t *a)
{
    a->open--;
    if (a->open == 0) {
        a->nfree = 0;
        a->next_id = 0;
        if (a->index.cap > MIN_CAP) {
            wr_idtab_rehash(&a->index, &KIND, MIN_CAP, &a->bytes);
        }
    }
}

/* Empties the entry at hole (backward shift), its id free again. */
static void remove_at(wr_aggs_t *a, size_t hole)
{
    give_id(a, entries(a)[hole].id);
    wr_idtab_remove_at(&a->index, &KIND, hole);
    closed_one(a);
}

/* Out of line: the growth is rare, and inlined it would put its registers on every add. */
__attribute__((noinline)) static void grow_acc(wr_aggs_t *a, size_t need)
{
    size_t cap = a->acc_cap ? a->acc_cap : MIN_CAP;
    while (cap < need) {
        cap *= 2;
    }
    a->acc = wr_xresize_counted(&a->bytes, a->acc, a->acc_cap, cap, sizeof *a->acc);
    a->acc_cap = cap;
}

static inline size_t last_of(int32_t key)
{
    return (size_t)key & ((1u << 30) - 1);
}

/* Makes room for last[i] and top[i] (i < WR_AGGS_LAST_MAX). Out of line: rare. */
__attribute__((noinline)) static void grow_last(wr_aggs_t *a, size_t i)
{
    size_t cap = a->last_cap ? a->last_cap : 1024;
    while (cap <= i) {
        cap *= 2;
    }
    a->last = wr_xresize_counted(&a->bytes, a->last, a->last_cap, cap, sizeof *a->last);
    a->top = wr_xresize_counted(&a->bytes, a->top, a->last_cap, cap, sizeof *a->top);
    for (size_t j = a->last_cap; j < cap; j++) {
        a->last[j] = (wr_aggs_last_t){.start = 0, .key = -1, .id = -1};
        a->top[j] = -INFINITY;
    }
    a->last_cap = cap;
}

/* The id of a new window (its accumulator not set up). */
static inline int32_t take_id(wr_aggs_t *a)
{
    int32_t id = a->nfree > 0 ? a->free_ids[--a->nfree] : a->next_id++;
    if ((size_t)id >= a->acc_cap) {
        grow_acc(a, (size_t)id + 1);
    }
    a->open++;
    return id;
}

/* Puts every unindexed window into the table, in creation order (their timers' order), so that
 * a lookup by key finds it; their timers then say -1. Out of line: called before any lookup
 * that may need them, rarely while elements come in time order. */
__attribute__((noinline)) static void index_all(wr_aggs_t *a)
{
    for (size_t i = a->thead; i < a->tn && a->unindexed > 0; i++) {
        int32_t id = a->tids[i];
        if (id < 0) {
            continue;
        }
        size_t indexed = a->open - a->unindexed;
        if (wr_idtab_should_grow(&a->index, &KIND, indexed + 1, 3, 4)) {
            wr_idtab_rehash(&a->index, &KIND, a->index.cap * 2, &a->bytes);
        }
        int64_t start = wr_ms_from_double(a->tstarts[i]);
        size_t at = probe(a, a->tkeys[i], start); /* an empty entry: the window is in no other */
        entries(a)[at] = (wr_aggs_entry_t){.start = start, .key = a->tkeys[i], .id = id};
        a->tids[i] = -1;
        a->unindexed--;
    }
}

static inline void index_if_needed(wr_aggs_t *a)
{
    if (a->unindexed > 0) {
        index_all(a);
    }
}

/* The entry of (key, start), created (its id taken, its accumulator not set up) when absent;
 * NULL when WR_AGGS_MAX windows are open. The table grows past a load of 3/4 (as
 * wr_idtab_should_grow: a table the memory limit refuses keeps filling until one empty entry
 * would be left). Every window is indexed first; a new one raises its key's top start. */
static inline wr_aggs_entry_t *entry_put(wr_aggs_t *a, int32_t key, int64_t start,
                                         bool *is_new)
{
    index_if_needed(a);
    wr_aggs_entry_t *e = &entries(a)[probe(a, key, start)];
    *is_new = e->id < 0;
    if (*is_new) {
        if (a->open >= WR_AGGS_MAX) {
            return NULL;
        }
        if (wr_idtab_should_grow(&a->index, &KIND, a->open + 1, 3, 4)) {
            wr_idtab_rehash(&a->index, &KIND, a->index.cap * 2, &a->bytes);
            e = &entries(a)[probe(a, key, start)];
        }
        size_t li = last_of(key);
        if (li < WR_AGGS_LAST_MAX) {
            if (li >= a->last_cap) {
                grow_last(a, li);
            }
            double s = wr_ms_to_double(start);
            if (s > a->top[li]) {
                a->top[li] = s;
            }
        }
        *e = (wr_aggs_entry_t){.start = start, .key = key, .id = take_id(a)};
    }
    return e;
}

/* The cache entry of window (key, start), or NULL when it is not its key's last. */
static inline wr_aggs_last_t *cached(const wr_aggs_t *a, int32_t key, int64_t start)
{
    size_t i = last_of(key);
    if (i < a->last_cap && a->last[i].key == key && a->last[i].start == (double)start) {
        return &a->last[i];
    }
    return NULL;
}

/* The key's entry leaves its window: its accumulator back to acc[id]. */
static inline void write_back(wr_aggs_t *a, wr_aggs_last_t *l)
{
    if (l->key >= 0) {
        a->acc[l->id] = l->acc;
        l->key = -1;
    }
}

bool wr_aggs_drop(wr_aggs_t *a, int32_t key, int64_t start)
{
    index_if_needed(a);
    wr_aggs_last_t *l = cached(a, key, start);
    if (l) {
        l->key = -1; /* the window goes: nothing to write back */
    }
    size_t i = probe(a, key, start);
    if (entries(a)[i].id < 0) {
        return false;
    }
    remove_at(a, i);
    return true;
}

wr_agg_t *wr_aggs_find(wr_aggs_t *a, int32_t key, int64_t start)
{
    wr_aggs_last_t *l = cached(a, key, start);
    if (l) {
        return &l->acc;
    }
    index_if_needed(a);
    size_t i = probe(a, key, start);
    return entries(a)[i].id < 0 ? NULL : &a->acc[entries(a)[i].id];
}

wr_agg_t *wr_aggs_put(wr_aggs_t *a, int32_t key, int64_t start, bool *is_new)
{
    wr_aggs_last_t *l = cached(a, key, start);
    if (l) {
        *is_new = false;
        return &l->acc;
    }
    wr_aggs_entry_t *e = entry_put(a, key, start, is_new);
    if (!e) {
        return NULL;
    }
    wr_agg_t *acc = &a->acc[e->id];
    if (*is_new) {
        wr_agg_init(a->kind, acc);
    }
    return acc;
}

/* Lua's % on numbers: a - floor(a / b) * b (a floored modulo), so that the windows C finds are
 * the ones the Lua operator computes for the same timestamps. */
static inline double window_start(double ts, double size, double offset)
{
    double a = ts - offset;
    return ts - (a - floor(a / size) * size);
}

/* Whether window start q of key (with its cache entry) opens past every start the key has had:
 * then it cannot exist yet, and with timers it needs no table entry. */
static inline bool opens_ahead(const wr_aggs_t *a, size_t li, double q)
{
    return a->timers && li < a->last_cap && q > a->top[li];
}

/* The accumulator of element (key, ts) when ts is not in its key's last window: the key's
 * entry moves to the element's window, found or created (then *q is its start and *is_new
 * whether it was created, its accumulator not yet set up, and *tid the id of a window created
 * unindexed, else -1; *q comes in as that start when the caller knows it already, else NaN).
 * Keys past the cache go to acc[id] directly. NULL when the table is full. The apply's loop
 * checks the key's last window itself, with the cache's array and size in registers, and
 * hands over the key's cache entry l (li its index; NULL: past the cache), and timed when the
 * table has timers. */
__attribute__((noinline)) static wr_agg_t *acc_moved(wr_aggs_t *a, int32_t key, double ts,
                                                     double size, double offset, double *q,
                                                     bool *is_new, int32_t *tid);

__attribute__((always_inline)) static inline wr_agg_t *acc_other(wr_aggs_t *a, bool timed,
                                                                 int32_t key, size_t li,
                                                                 wr_aggs_last_t *l, double ts,
                                                                 double size, double offset,
                                                                 double *q, bool *is_new,
                                                                 int32_t *tid)
{
    if (l) {
        /* a window opened ahead, here: no call for the usual move of elements in time order.
         * Its start, when it is the key's next window, is the last one's end: times are whole
         * numbers within +-2^53 (API.md, Time range), where window_start is exact too, so the
         * two agree, and the sum costs no division */
        if (isnan(*q)) {
            double end = l->start + size;
            if (l->key == key && ts >= end && ts < end + size) {
                *q = end;
            } else {
                *q = window_start(ts, size, offset);
            }
        }
        /* opens_ahead, with the key's cache entry known to be there */
        if ((timed || a->timers) && *q > a->top[li] && a->open < WR_AGGS_MAX) {
            write_back(a, l);
            int32_t id = take_id(a);
            a->unindexed++;
            a->top[li] = *q;
            *l = (wr_aggs_last_t){.start = *q, .key = key, .id = id};
            *is_new = true;
            *tid = id;
            return &l->acc;
        }
    }
    return acc_moved(a, key, ts, size, offset, q, is_new, tid);
}

/* acc_other's other case: the key's entry moves to another window (the old one's accumulator
 * written back to acc[id]). */
static wr_agg_t *acc_moved(wr_aggs_t *a, int32_t key, double ts, double size, double offset,
                           double *q, bool *is_new, int32_t *tid)
{
    size_t li = last_of(key);
    *tid = -1;
    if (isnan(*q)) {
        *q = window_start(ts, size, offset);
    }
    if (li >= a->last_cap && li < WR_AGGS_LAST_MAX) {
        grow_last(a, li);
    }
    wr_aggs_last_t *l = li < a->last_cap ? &a->last[li] : NULL;
    if (l) {
        write_back(a, l);
    }
    if (opens_ahead(a, li, *q)) {
        if (a->open >= WR_AGGS_MAX) {
            return NULL;
        }
        int32_t id = take_id(a);
        a->unindexed++;
        a->top[li] = *q;
        *l = (wr_aggs_last_t){.start = *q, .key = key, .id = id};
        *is_new = true;
        *tid = id;
        return &l->acc;
    }
    a->probes++;
    wr_aggs_entry_t *e = entry_put(a, key, wr_ms_from_double(*q), is_new);
    if (!e) {
        return NULL;
    }
    if (!l) {
        return &a->acc[e->id];
    }
    *l = (wr_aggs_last_t){.start = *q, .key = key, .id = e->id};
    if (!*is_new) {
        l->acc = a->acc[e->id]; /* an older window of the key again */
    }
    return &l->acc;
}

/* Room for need timers: the list moved down to thead 0 first when that makes room. */
static void timers_room(wr_aggs_t *a, size_t need)
{
    if (need <= a->tcap) {
        return;
    }
    if (a->thead > 0) {
        size_t n = a->tn - a->thead;
        memmove(a->tkeys, a->tkeys + a->thead, n * sizeof *a->tkeys);
        memmove(a->tids, a->tids + a->thead, n * sizeof *a->tids);
        memmove(a->tstarts, a->tstarts + a->thead, n * sizeof *a->tstarts);
        need -= a->thead;
        a->tsorted = a->tsorted > a->thead ? a->tsorted - a->thead : 0;
        a->tn = n;
        a->thead = 0;
        if (need <= a->tcap) {
            return;
        }
    }
    size_t cap = a->tcap ? a->tcap : 1024;
    while (cap < need) {
        cap *= 2;
    }
    a->tkeys = wr_xresize_counted(&a->bytes, a->tkeys, a->tcap, cap, sizeof *a->tkeys);
    a->tids = wr_xresize_counted(&a->bytes, a->tids, a->tcap, cap, sizeof *a->tids);
    a->tstarts = wr_xresize_counted(&a->bytes, a->tstarts, a->tcap, cap, sizeof *a->tstarts);
    if (a->skeys) {
        a->skeys = wr_xresize_counted(&a->bytes, a->skeys, a->tcap, cap, sizeof *a->skeys);
        a->sids = wr_xresize_counted(&a->bytes, a->sids, a->tcap, cap, sizeof *a->sids);
        a->sstarts = wr_xresize_counted(&a->bytes, a->sstarts, a->tcap, cap, sizeof *a->sstarts);
    }
    a->tcap = cap;
}

/* Appends a timer (the list has room). */
static inline void timer_push(wr_aggs_t *a, int32_t key, double start, int32_t id)
{
    a->tkeys[a->tn] = key;
    a->tstarts[a->tn] = start;
    a->tids[a->tn] = id;
    a->tn++;
}

/* A double's bits. For the hit check: 0 <= d < size (size > 0) is bits_of(d) < bits_of(size),
 * one compare, as a non-negative double's bits order as its value, and a negative one's (the
 * sign bit set) and NaN's are above any positive finite size's. With whole-number times (API.md,
 * Time range) t - start is exact, so t - start < size is t < start + size. */
static inline uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

/* One loop per kind: the switch of wr_agg_add folds away and the loop is the kind's. An element
 * in its key's last window (most of them) is a check and an add, the cache's array and size
 * held in locals (reloaded after any other element: its move may grow the cache). qs[i] is
 * element i's window start when the first pass computed it (NaN otherwise). A created window
 * becomes a timer (with timers), else it is written to fresh[m] and fresh_start[m]. */
__attribute__((always_inline)) static inline int32_t apply_loop(
    wr_aggs_t *a, wr_agg_kind_t kind, bool timed, int32_t n, const int32_t *keys,
    const double *ts, const double *x, double size, double offset, int32_t *fresh,
    double *fresh_start, const double *qs)
{
    int32_t m = 0;
    wr_aggs_last_t *last = a->last;
    size_t lcap = a->last_cap;
    uint64_t size_bits = bits_of(size);
    for (int32_t i = 0; i < n; i++) {
        int32_t key = keys[i];
        double t = ts[i];
        size_t li = last_of(key);
        wr_aggs_last_t *l = NULL;
        if (li < lcap) {
            l = &last[li];
            if (l->key == key && bits_of(t - l->start) < size_bits) {
                wr_agg_add(kind, &l->acc, x ? x[i] : 0);
                continue;
            }
        }
        double q = qs ? qs[i] : NAN;
        bool is_new;
        int32_t tid;
        wr_agg_t *acc = acc_other(a, timed, key, li, l, t, size, offset, &q, &is_new, &tid);
        if (!acc) {
            return WEIR_ESTATE;
        }
        if (is_new) {
            wr_agg_init(kind, acc);
            if (timed || a->timers) {
                timer_push(a, key, q, tid);
            } else {
                fresh[m] = i;
                fresh_start[m] = q;
            }
            m++;
        }
        wr_agg_add(kind, acc, x ? x[i] : 0);
        last = a->last;
        lcap = a->last_cap;
    }
    return m;
}

/* Whether element (key, ts) falls in its key's last window. */
static inline bool in_last(const wr_aggs_t *a, int32_t key, double ts, double size)
{
    size_t li = last_of(key);
    return li < a->last_cap && a->last[li].key == key && ts >= a->last[li].start &&
           ts < a->last[li].start + size;
}

/* Whether every key is >= 0 and no timestamp NaN. Four elements a step in SSE2's vectors (GCC's
 * and Clang's vector extension: neither vectorizes this loop at -O2), a NaN's compare mask
 * counted, the keys' sign bits or'ed: no branch per element, a third of the scalar loop's
 * instructions. */
static bool elements_valid(int32_t n, const int32_t *keys, const double *ts)
{
    typedef double v2df __attribute__((vector_size(16)));
    typedef int64_t v2di __attribute__((vector_size(16)));
    typedef int32_t v4si __attribute__((vector_size(16)));
    v4si kor = {0, 0, 0, 0};
    v2di nans = {0, 0};
    int32_t i = 0;
    for (; i + 4 <= n; i += 4) {
        v4si k;
        v2df t0, t1;
        memcpy(&k, keys + i, sizeof k);
        memcpy(&t0, ts + i, sizeof t0);
        memcpy(&t1, ts + i + 2, sizeof t1);
        kor |= k;
        v2di m0 = t0 != t0; /* -1 where NaN */
        v2di m1 = t1 != t1;
        nans += m0 + m1;
    }
    int32_t ko = kor[0] | kor[1] | kor[2] | kor[3];
    int64_t bad = nans[0] | nans[1];
    for (; i < n; i++) {
        ko |= keys[i];
        bad |= isnan(ts[i]);
    }
    return ko >= 0 && bad == 0;
}

/* wr_aggs_apply; with check, WEIR_EINVAL before anything is applied when a key is negative or
 * a timestamp NaN (the FFI's check: in the first pass when there is one, else in a vector pass
 * of its own, elements_valid). qs: scratch for n starts. With timers, the list has room for n
 * more. */
static int32_t apply(wr_aggs_t *a, int32_t n, const int32_t *keys, const double *ts,
                     const double *x, double size, double offset, int32_t *fresh,
                     double *fresh_start, double *qs, bool check)
{
    /* The table entries of the elements that will probe, all of them first: a watermark comes
     * every few hundred thousand elements, so the table holds many windows per key and its
     * lines are rarely in the cache; their misses overlap instead of queueing. A window that
     * opens past its key's top start probes nothing: its key's last accumulator is written
     * back, so that line is the one loaded. The starts are kept for the second pass (the
     * division and floor once per new window). With timers, that pass runs only while the
     * applies probe (the last one did for more than 1 element in 16): elements in time order
     * probe nothing, and a pass of their own read each key's cache entry twice. */
    if (a->timers && !a->prefetch) {
        if (check && !elements_valid(n, keys, ts)) {
            return WEIR_EINVAL;
        }
        qs = NULL;
    }
    for (int32_t i = 0; qs && i < n; i++) {
        int32_t key = keys[i];
        if (check && (key < 0 || isnan(ts[i]))) {
            return WEIR_EINVAL;
        }
        qs[i] = NAN;
        if (!in_last(a, key, ts[i], size)) {
            double q = window_start(ts[i], size, offset);
            size_t li = last_of(key);
            qs[i] = q;
            if (!opens_ahead(a, li, q)) {
                PREFETCH_HOME(a, key, wr_ms_from_double(q));
            } else if (a->last[li].key >= 0) {
                __builtin_prefetch(&a->acc[a->last[li].id], 1);
            }
        }
    }
    a->probes = 0;
    int32_t m;
    if (a->timers && !qs) {
        /* the usual case, its own loops: no first pass, no fresh list, fewer live registers */
        switch (a->kind) {
        case WR_AGG_COUNT:
            m = apply_loop(a, WR_AGG_COUNT, true, n, keys, ts, NULL, size, offset, NULL, NULL,
                           NULL);
            break;
        case WR_AGG_SUM:
            m = apply_loop(a, WR_AGG_SUM, true, n, keys, ts, x, size, offset, NULL, NULL, NULL);
            break;
        case WR_AGG_MIN:
            m = apply_loop(a, WR_AGG_MIN, true, n, keys, ts, x, size, offset, NULL, NULL, NULL);
            break;
        case WR_AGG_MAX:
            m = apply_loop(a, WR_AGG_MAX, true, n, keys, ts, x, size, offset, NULL, NULL, NULL);
            break;
        default:
            m = apply_loop(a, WR_AGG_AVG, true, n, keys, ts, x, size, offset, NULL, NULL, NULL);
            break;
        }
    } else {
        switch (a->kind) {
        case WR_AGG_COUNT:
            m = apply_loop(a, WR_AGG_COUNT, false, n, keys, ts, NULL, size, offset, fresh,
                           fresh_start, qs);
            break;
        case WR_AGG_SUM:
            m = apply_loop(a, WR_AGG_SUM, false, n, keys, ts, x, size, offset, fresh,
                           fresh_start, qs);
            break;
        case WR_AGG_MIN:
            m = apply_loop(a, WR_AGG_MIN, false, n, keys, ts, x, size, offset, fresh,
                           fresh_start, qs);
            break;
        case WR_AGG_MAX:
            m = apply_loop(a, WR_AGG_MAX, false, n, keys, ts, x, size, offset, fresh,
                           fresh_start, qs);
            break;
        default:
            m = apply_loop(a, WR_AGG_AVG, false, n, keys, ts, x, size, offset, fresh,
                           fresh_start, qs);
            break;
        }
    }
    a->prefetch = a->probes * 16 > (size_t)n;
    return m;
}

/* Room for n window starts in qs. */
static void qs_room(wr_aggs_t *a, size_t n)
{
    if (n > a->qs_cap) {
        size_t cap = a->qs_cap ? a->qs_cap : 512;
        while (cap < n) {
            cap *= 2;
        }
        a->qs = wr_xresize_counted(&a->bytes, a->qs, a->qs_cap, cap, sizeof *a->qs);
        a->qs_cap = cap;
    }
}

int32_t wr_aggs_apply(wr_aggs_t *a, int32_t n, const int32_t *keys, const double *ts,
                      const double *x, double size, double offset, int32_t *fresh,
                      double *fresh_start)
{
    assert(!a->timers);
    return apply(a, n, keys, ts, x, size, offset, fresh, fresh_start, fresh_start, false);
}

/* wr_aggs_fire of windows in the table (none of them unindexed). */
static int32_t fire_indexed(wr_aggs_t *a, const int32_t *keys, int32_t n, int64_t start,
                            bool drop, double *value, double *count)
{
    /* the entries first, all of them (prefetched in a pass of their own, so that the misses
     * overlap), then per window its entry found, its id kept in count[i] (-1: none; a window
     * that is still its key's last has its accumulator written to acc[id] first) and its
     * accumulator prefetched and, dropping, the entry removed (acc[id] stays as it is until an
     * insert takes the id again), then the results read */
    for (int32_t i = 0; i < n && i < FIRE_AHEAD; i++) {
        PREFETCH_HOME(a, keys[i], start);
    }
    for (int32_t i = 0; i < n; i++) {
        if (i + FIRE_AHEAD < n) {
            PREFETCH_HOME(a, keys[i + FIRE_AHEAD], start);
        }
        size_t s = probe(a, keys[i], start);
        int32_t id = entries(a)[s].id;
        count[i] = id;
        if (id < 0) {
            continue;
        }
        __builtin_prefetch(&a->acc[id]);
        wr_aggs_last_t *l = cached(a, keys[i], start);
        if (l) {
            a->acc[id] = l->acc;
            if (drop) {
                l->key = -1;
            }
        }
        if (drop) {
            remove_at(a, s);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (count[i] < 0) {
            value[i] = 0;
            count[i] = 0;
            continue;
        }
        const wr_agg_t *acc = &a->acc[(int32_t)count[i]];
        value[i] = wr_agg_result(a->kind, acc);
        count[i] = acc->n;
    }
    return n;
}

int32_t wr_aggs_fire(wr_aggs_t *a, const int32_t *keys, int32_t n, int64_t start, bool drop,
                     double *value, double *count)
{
    index_if_needed(a);
    return fire_indexed(a, keys, n, start, drop, value, count);
}

/* Fires and drops the unindexed window id of key: its result and count. */
static inline void fire_unindexed(wr_aggs_t *a, int32_t key, int32_t id, double *value,
                                  double *count)
{
    size_t li = last_of(key);
    const wr_agg_t *acc = &a->acc[id];
    wr_agg_t held;
    if (li < a->last_cap && a->last[li].key == key && a->last[li].id == id) {
        held = a->last[li].acc;
        a->last[li].key = -1;
        acc = &held;
    }
    *value = wr_agg_result(a->kind, acc);
    *count = acc->n;
    give_id(a, id);
    a->unindexed--;
    closed_one(a);
}

/* --- FFI --------------------------------------------------------------------------------- */

/* The FFI's handle: a table with timers (wr_aggs_t). Lua either takes the timers over into its
 * timer queue (weir_aggs_created, then weir_aggs_created_clear) or fires them from here
 * (weir_aggs_due), so that the per-element path only appends and applies, and a watermark's
 * timers need no Lua work. due_keys, due_value and due_count (due_cap): the indexed windows of
 * a run of due timers, fired together. */
struct weir_aggs {
    wr_aggs_t a;
    int32_t *due_keys;
    double *due_value, *due_count;
    size_t due_cap;
    size_t bytes;
};

weir_aggs_t *weir_aggs_new(int32_t kind)
{
    if (kind < 0 || kind >= WR_AGG_KINDS) {
        return NULL;
    }
    weir_aggs_t *fa = wr_xcalloc(1, sizeof *fa);
    wr_aggs_init(&fa->a, (wr_agg_kind_t)kind);
    fa->a.timers = true;
    return fa;
}

void weir_aggs_free(weir_aggs_t *fa)
{
    if (!fa) {
        return;
    }
    wr_aggs_close(&fa->a);
    wr_release_counted(&fa->bytes, fa->due_keys, fa->due_cap, sizeof *fa->due_keys);
    wr_release_counted(&fa->bytes, fa->due_value, fa->due_cap, sizeof *fa->due_value);
    wr_release_counted(&fa->bytes, fa->due_count, fa->due_cap, sizeof *fa->due_count);
    wr_free(fa);
}

int32_t weir_aggs_apply(weir_aggs_t *fa, int32_t n, const int32_t *keys, const double *ts,
                        const double *x, double size, double offset)
{
    if (!fa || n < 0 || (n > 0 && (!keys || !ts)) || !(size > 0) || !isfinite(size) ||
        !isfinite(offset)) {
        return WEIR_EINVAL;
    }
    if (n > 0 && !x && fa->a.kind != WR_AGG_COUNT) {
        return WEIR_EINVAL;
    }
    timers_room(&fa->a, fa->a.tn + (size_t)n);
    qs_room(&fa->a, (size_t)n);
    return apply(&fa->a, n, keys, ts, x, size, offset, NULL, NULL, fa->a.qs, true);
}

int32_t weir_aggs_created(weir_aggs_t *fa, const int32_t **keys, const double **starts)
{
    if (!fa || !keys || !starts) {
        return WEIR_EINVAL;
    }
    index_if_needed(&fa->a); /* Lua fires them by key */
    *keys = fa->a.tkeys + fa->a.thead;
    *starts = fa->a.tstarts + fa->a.thead;
    return (int32_t)(fa->a.tn - fa->a.thead);
}

int32_t weir_aggs_created_add(weir_aggs_t *fa, int32_t key, double start)
{
    if (!fa || key < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    timers_room(&fa->a, fa->a.tn + 1);
    timer_push(&fa->a, key, start, -1);
    return 0;
}

void weir_aggs_created_clear(weir_aggs_t *fa)
{
    if (fa) {
        index_if_needed(&fa->a); /* their windows stay */
        fa->a.thead = fa->a.tsorted = fa->a.tn = 0;
    }
}

/* Sorts [thead, tn) by start, stably (a bottom-up merge sort through the scratch arrays), when
 * it is not in order already: with timestamps in order, as they mostly are, windows are
 * created in start order and the check is all it costs. */
static void sort_timers(wr_aggs_t *t)
{
    size_t lo = t->thead, hi = t->tn;
    size_t i = t->tsorted > lo ? t->tsorted : lo + 1;
    while (i < hi && t->tstarts[i] >= t->tstarts[i - 1]) {
        i++;
    }
    t->tsorted = hi;
    if (i >= hi) {
        return;
    }
    if (!t->skeys) {
        t->skeys = wr_xresize_counted(&t->bytes, NULL, 0, t->tcap, sizeof *t->skeys);
        t->sids = wr_xresize_counted(&t->bytes, NULL, 0, t->tcap, sizeof *t->sids);
        t->sstarts = wr_xresize_counted(&t->bytes, NULL, 0, t->tcap, sizeof *t->sstarts);
    }
    int32_t *k = t->tkeys + lo, *tk = t->skeys, *d = t->tids + lo, *td = t->sids;
    double *s = t->tstarts + lo, *ts = t->sstarts;
    size_t n = hi - lo;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t a = 0; a < n; a += 2 * w) {
            size_t m = a + w < n ? a + w : n, b = a + 2 * w < n ? a + 2 * w : n;
            size_t p = a, q = m, o = a;
            while (p < m && q < b) {
                size_t from = s[q] < s[p] ? q++ : p++; /* equal starts: the left one first */
                tk[o] = k[from];
                td[o] = d[from];
                ts[o++] = s[from];
            }
            for (; p < m; p++, o++) {
                tk[o] = k[p];
                td[o] = d[p];
                ts[o] = s[p];
            }
            for (; q < b; q++, o++) {
                tk[o] = k[q];
                td[o] = d[q];
                ts[o] = s[q];
            }
        }
        memcpy(k, tk, n * sizeof *k);
        memcpy(d, td, n * sizeof *d);
        memcpy(s, ts, n * sizeof *s);
    }
}

/* Room for n indexed windows of one run of due timers. */
static void due_room(weir_aggs_t *fa, size_t n)
{
    if (n <= fa->due_cap) {
        return;
    }
    size_t cap = fa->due_cap ? fa->due_cap : 1024;
    while (cap < n) {
        cap *= 2;
    }
    fa->due_keys =
        wr_xresize_counted(&fa->bytes, fa->due_keys, fa->due_cap, cap, sizeof *fa->due_keys);
    fa->due_value =
        wr_xresize_counted(&fa->bytes, fa->due_value, fa->due_cap, cap, sizeof *fa->due_value);
    fa->due_count =
        wr_xresize_counted(&fa->bytes, fa->due_count, fa->due_cap, cap, sizeof *fa->due_count);
    fa->due_cap = cap;
}

/* The due timers [j, r) of one start, ids[] theirs: the unindexed windows fired by id (their
 * accumulators prefetched FIRE_AHEAD ahead), then the indexed ones in one wr_aggs_fire, their
 * results put back in place. */
static void fire_run(weir_aggs_t *fa, const int32_t *keys, const int32_t *ids, int32_t n,
                     double start, double *value, double *count)
{
    wr_aggs_t *a = &fa->a;
    int32_t ni = 0;
    for (int32_t i = 0; i < n && i < FIRE_AHEAD; i++) {
        if (ids[i] >= 0) {
            __builtin_prefetch(&a->acc[ids[i]]);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (i + FIRE_AHEAD < n && ids[i + FIRE_AHEAD] >= 0) {
            __builtin_prefetch(&a->acc[ids[i + FIRE_AHEAD]]);
        }
        if (ids[i] >= 0) {
            fire_unindexed(a, keys[i], ids[i], &value[i], &count[i]);
        } else {
            ni++;
        }
    }
    if (ni == 0) {
        return;
    }
    due_room(fa, (size_t)ni);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0) {
            fa->due_keys[k++] = keys[i];
        }
    }
    /* a timer of -1 names a window in the table or none: an unindexed window of the same key
     * and start would have been indexed before any other could be made */
    fire_indexed(a, fa->due_keys, ni, wr_ms_from_double(start), true, fa->due_value,
                 fa->due_count);
    k = 0;
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0) {
            value[i] = fa->due_value[k];
            count[i] = fa->due_count[k++];
        }
    }
}

int32_t weir_aggs_due(weir_aggs_t *fa, double size, double w, int32_t max, int32_t *keys,
                      double *starts, double *value, double *count)
{
    if (!fa || !(size > 0) || isnan(w) || max < 0 ||
        (max > 0 && (!keys || !starts || !value || !count))) {
        return WEIR_EINVAL;
    }
    wr_aggs_t *a = &fa->a;
    sort_timers(a);
    size_t i = a->thead;
    int32_t m = 0;
    /* elements in time order made every window unindexed: each due one is fired by id as it is
     * read (its accumulator prefetched FIRE_AHEAD ahead), with no pass over runs of a start */
    const int32_t *tids = a->tids, *tkeys = a->tkeys;
    const double *tstarts = a->tstarts;
    size_t tn = a->tn; /* the list, in locals: the fires change none of it */
    for (size_t p = i; p < tn && p < i + FIRE_AHEAD; p++) {
        if (tids[p] >= 0) {
            __builtin_prefetch(&a->acc[tids[p]]);
        }
    }
    while (m < max && i < tn && tids[i] >= 0 && tstarts[i] + size - 1 <= w) {
        if (i + FIRE_AHEAD < tn && tids[i + FIRE_AHEAD] >= 0) {
            __builtin_prefetch(&a->acc[tids[i + FIRE_AHEAD]]);
        }
        int32_t key = tkeys[i];
        keys[m] = key;
        starts[m] = tstarts[i];
        fire_unindexed(a, key, tids[i], &value[m], &count[m]);
        m++;
        i++;
    }
    /* the rest by runs of one start (one time's windows), from the first indexed window on */
    size_t from = i;
    int32_t m0 = m;
    while (m < max && i < a->tn && a->tstarts[i] + size - 1 <= w) {
        keys[m] = a->tkeys[i];
        starts[m] = a->tstarts[i];
        m++;
        i++;
    }
    /* the ids read in place: nothing below moves the list (fires append nothing) */
    const int32_t *ids = a->tids + from - (size_t)m0;
    for (int32_t j = m0; j < m;) {
        int32_t r = j + 1;
        while (r < m && starts[r] == starts[j]) {
            r++;
        }
        fire_run(fa, keys + j, ids + j, r - j, starts[j], value + j, count + j);
        j = r;
    }
    a->thead = i;
    if (i == a->tn) {
        a->thead = a->tsorted = a->tn = 0;
    }
    return m;
}

int32_t weir_aggs_add(weir_aggs_t *fa, double key, double start, double x, int32_t *fresh)
{
    if (!fa || !fresh || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    bool is_new;
    wr_agg_t *acc =
        wr_aggs_put(&fa->a, wr_idtab_key_id(key), wr_ms_from_double(start), &is_new);
    if (!acc) {
        return WEIR_ESTATE;
    }
    wr_agg_add(fa->a.kind, acc, x);
    *fresh = is_new;
    return 0;
}

int32_t weir_aggs_fire(weir_aggs_t *fa, const int32_t *keys, int32_t n, double start,
                       int32_t drop, double *value, double *count)
{
    if (!fa || n < 0 || (n > 0 && (!keys || !value || !count)) || isnan(start)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return wr_aggs_fire(&fa->a, keys, n, wr_ms_from_double(start), drop != 0, value, count);
}

int32_t weir_aggs_drop(weir_aggs_t *fa, double key, double start)
{
    if (!fa || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_aggs_drop(&fa->a, wr_idtab_key_id(key), wr_ms_from_double(start)) ? 0 : -1;
}

int32_t weir_aggs_get(weir_aggs_t *fa, double key, double start, double *out)
{
    if (!fa || !out || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    const wr_agg_t *acc = wr_aggs_find(&fa->a, wr_idtab_key_id(key), wr_ms_from_double(start));
    if (!acc) {
        return -1;
    }
    out[0] = acc->v;
    out[1] = acc->n;
    out[2] = wr_agg_result(fa->a.kind, acc);
    return 0;
}

int32_t weir_aggs_set(weir_aggs_t *fa, double key, double start, double v, double n)
{
    if (!fa || wr_idtab_key_id(key) < 0 || isnan(start) || isnan(v) || !(n >= 0)) {
        return WEIR_EINVAL;
    }
    bool is_new;
    wr_agg_t *acc =
        wr_aggs_put(&fa->a, wr_idtab_key_id(key), wr_ms_from_double(start), &is_new);
    if (!acc) {
        return WEIR_ESTATE;
    }
    acc->v = v;
    acc->n = n;
    return 0;
}

int32_t weir_aggs_capacity(weir_aggs_t *fa)
{
    if (!fa) {
        return WEIR_EINVAL;
    }
    index_if_needed(&fa->a); /* the listing is the table's */
    return (int32_t)fa->a.index.cap;
}

int32_t weir_aggs_at(const weir_aggs_t *fa, int32_t i, double *out)
{
    if (!fa || i < 0 || (size_t)i >= fa->a.index.cap || !out) {
        return WEIR_EINVAL;
    }
    const wr_aggs_entry_t *e = &entries(&fa->a)[i];
    if (e->id < 0) {
        return -1;
    }
    out[0] = (double)e->key;
    out[1] = wr_ms_to_double(e->start);
    return 0;
}

double weir_aggs_stat(const weir_aggs_t *fa, int32_t what)
{
    if (fa && what == WEIR_STORE_BYTES) {
        return (double)(sizeof *fa + fa->a.bytes + fa->bytes);
    }
    if (fa && what == WEIR_STORE_OPEN) {
        return (double)fa->a.open;
    }
    return NAN;
}
