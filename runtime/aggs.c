/* SPDX-License-Identifier: MIT */
/* aggs.c: the built-in aggregates' accumulators by window id and their batch operations for
 * the fast window operator's tumbling windows (aggs.h says what they compute). */
#include "aggs.h"
#include "ms.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "weir.h"

enum { MIN_CAP = 64 };

void wr_aggs_init(wr_aggs_t *a, wr_agg_kind_t kind)
{
    memset(a, 0, sizeof *a);
    a->kind = kind;
}

void wr_aggs_close(wr_aggs_t *a)
{
    wr_release_counted(&a->bytes, a->acc, a->cap, sizeof *a->acc);
    wr_release_counted(&a->bytes, a->last, a->last_cap, sizeof *a->last);
    memset(a, 0, sizeof *a);
}

/* Out of line: the growth is rare, and inlined it would put its registers on every add. */
__attribute__((noinline)) static void grow(wr_aggs_t *a, size_t need)
{
    size_t cap = a->cap ? a->cap : MIN_CAP;
    while (cap < need) {
        cap *= 2;
    }
    a->acc = wr_xresize_counted(&a->bytes, a->acc, a->cap, cap, sizeof *a->acc);
    a->cap = cap;
}

wr_agg_t *wr_aggs_at(wr_aggs_t *a, int32_t id)
{
    if ((size_t)id >= a->cap) {
        grow(a, (size_t)id + 1);
    }
    return &a->acc[id];
}

static inline size_t last_of(int32_t key)
{
    return (size_t)key & ((1u << 30) - 1);
}

/* Makes room for last[i] (i < WR_AGGS_LAST_MAX). Out of line: rare. */
__attribute__((noinline)) static void grow_last(wr_aggs_t *a, size_t i)
{
    size_t cap = a->last_cap ? a->last_cap : 1024;
    while (cap <= i) {
        cap *= 2;
    }
    a->last = wr_xresize_counted(&a->bytes, a->last, a->last_cap, cap, sizeof *a->last);
    for (size_t j = a->last_cap; j < cap; j++) {
        a->last[j] = (wr_aggs_last_t){.start = 0, .key = -1, .id = -1};
    }
    a->last_cap = cap;
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
        *wr_aggs_at(a, l->id) = l->acc;
        l->key = -1;
    }
}

int32_t wr_aggs_drop(wr_aggs_t *a, wr_wintab_t *t, int32_t key, int64_t start)
{
    wr_aggs_last_t *l = cached(a, key, start);
    if (l) {
        l->key = -1; /* the window goes: nothing to write back */
    }
    return wr_wintab_drop(t, key, start);
}

wr_agg_t *wr_aggs_find(wr_aggs_t *a, const wr_wintab_t *t, int32_t key, int64_t start)
{
    wr_aggs_last_t *l = cached(a, key, start);
    if (l) {
        return &l->acc;
    }
    int32_t id = wr_wintab_find(t, key, start);
    return id < 0 ? NULL : wr_aggs_at(a, id);
}

int32_t wr_aggs_set(wr_aggs_t *a, wr_wintab_t *t, int32_t key, int64_t start, double v,
                    double n)
{
    bool is_new;
    int32_t id = wr_wintab_put(t, key, start, &is_new);
    if (id < 0) {
        return id;
    }
    wr_aggs_last_t *l = cached(a, key, start);
    wr_agg_t *acc = l ? &l->acc : wr_aggs_at(a, id);
    acc->v = v;
    acc->n = n;
    return id;
}

/* Lua's % on numbers: a - floor(a / b) * b (a floored modulo), so that the windows C finds are
 * the ones the Lua operator computes for the same timestamps. */
static inline double window_start(double ts, double size, double offset)
{
    double a = ts - offset;
    return ts - (a - floor(a / size) * size);
}

/* The accumulator of element (key, ts): its key's last window's when ts is in it; else the
 * key's entry moves to the element's window, found or created in t (then *q is its start and
 * *is_new whether it was created, its accumulator not yet set up; *q comes in as that start
 * when the caller knows it already, else NaN). Keys past the cache go to acc[id] directly. NULL
 * when t is full. */
__attribute__((noinline)) static wr_agg_t *acc_moved(wr_aggs_t *a, wr_wintab_t *t, int32_t key,
                                                     double ts, double size, double offset,
                                                     double *q, bool *is_new);

__attribute__((always_inline)) static inline wr_agg_t *acc_of(wr_aggs_t *a, wr_wintab_t *t,
                                                              int32_t key, double ts,
                                                              double size, double offset,
                                                              double *q, bool *is_new)
{
    size_t li = last_of(key);
    if (li < a->last_cap) {
        wr_aggs_last_t *l = &a->last[li];
        if (l->key == key && ts >= l->start && ts < l->start + size) {
            *is_new = false;
            return &l->acc;
        }
    }
    return acc_moved(a, t, key, ts, size, offset, q, is_new);
}

/* acc_of's other case: the key's entry moves to another window. */
static wr_agg_t *acc_moved(wr_aggs_t *a, wr_wintab_t *t, int32_t key, double ts, double size,
                           double offset, double *q, bool *is_new)
{
    size_t li = last_of(key);
    wr_aggs_last_t *l = li < a->last_cap ? &a->last[li] : NULL;
    if (isnan(*q)) {
        *q = window_start(ts, size, offset);
    }
    int32_t id = wr_wintab_put(t, key, wr_ms_from_double(*q), is_new);
    if (id < 0) {
        return NULL;
    }
    if (!l && li < WR_AGGS_LAST_MAX) {
        grow_last(a, li);
        l = &a->last[li];
    }
    if (!l) {
        return wr_aggs_at(a, id);
    }
    write_back(a, l);
    *l = (wr_aggs_last_t){.start = *q, .key = key, .id = id};
    if (!*is_new) {
        l->acc = *wr_aggs_at(a, id); /* an older window of the key again */
    }
    return &l->acc;
}

/* One loop per kind: the switch of wr_agg_add folds away and the loop is the kind's. qs[i] is
 * element i's window start when the first pass computed it (NaN otherwise); fresh_start is the
 * same array, written at m <= i once element i has read it. */
#define APPLY_LOOP(KIND)                                                                      \
    for (int32_t i = 0; i < n; i++) {                                                         \
        double q = qs[i];                                                                     \
        bool is_new;                                                                          \
        wr_agg_t *acc = acc_of(a, t, keys[i], ts[i], size, offset, &q, &is_new);              \
        if (!acc) {                                                                           \
            return WEIR_ESTATE;                                                               \
        }                                                                                     \
        if (is_new) {                                                                         \
            wr_agg_init(KIND, acc);                                                           \
            fresh[m] = i;                                                                     \
            fresh_start[m] = q;                                                               \
            m++;                                                                              \
        }                                                                                     \
        wr_agg_add(KIND, acc, x ? x[i] : 0);                                                  \
    }

/* Whether element (key, ts) falls in its key's last window. */
static inline bool in_last(const wr_aggs_t *a, int32_t key, double ts, double size)
{
    size_t li = last_of(key);
    return li < a->last_cap && a->last[li].key == key && ts >= a->last[li].start &&
           ts < a->last[li].start + size;
}

/* wr_aggs_apply; with check, WEIR_EINVAL before anything is applied when a key is negative or
 * a timestamp NaN (the FFI's check, in the first pass rather than a pass of its own). */
static int32_t apply(wr_aggs_t *a, wr_wintab_t *t, int32_t n, const int32_t *keys,
                     const double *ts, const double *x, double size, double offset,
                     int32_t *fresh, double *fresh_start, bool check)
{
    /* The table entries of the elements that will probe, all of them first: a watermark comes
     * every few hundred thousand elements, so the table holds many windows per key and its
     * lines are rarely in the cache; their misses overlap instead of queueing. Their starts
     * are kept for the second pass (the division and floor once per new window). */
    double *qs = fresh_start;
    for (int32_t i = 0; i < n; i++) {
        int32_t key = keys[i];
        if (check && (key < 0 || isnan(ts[i]))) {
            return WEIR_EINVAL;
        }
        qs[i] = NAN;
        if (!in_last(a, key, ts[i], size)) {
            qs[i] = window_start(ts[i], size, offset);
            wr_wintab_prefetch(t, key, wr_ms_from_double(qs[i]));
        }
    }
    int32_t m = 0;
    switch (a->kind) {
    case WR_AGG_COUNT:
        x = NULL;
        APPLY_LOOP(WR_AGG_COUNT)
        break;
    case WR_AGG_SUM:
        APPLY_LOOP(WR_AGG_SUM)
        break;
    case WR_AGG_MIN:
        APPLY_LOOP(WR_AGG_MIN)
        break;
    case WR_AGG_MAX:
        APPLY_LOOP(WR_AGG_MAX)
        break;
    default:
        APPLY_LOOP(WR_AGG_AVG)
        break;
    }
    return m;
}

int32_t wr_aggs_apply(wr_aggs_t *a, wr_wintab_t *t, int32_t n, const int32_t *keys,
                      const double *ts, const double *x, double size, double offset,
                      int32_t *fresh, double *fresh_start)
{
    return apply(a, t, n, keys, ts, x, size, offset, fresh, fresh_start, false);
}

int32_t wr_aggs_fire(wr_aggs_t *a, wr_wintab_t *t, const int32_t *keys, int32_t n,
                     int64_t start, bool drop, int32_t *ids, double *value, double *count)
{
    /* the ids first, all of them (the table's entries prefetched in a pass of their own;
     * dropping, each window is taken out as its id is found: its accumulator stays where it is
     * until a later window takes the id), then the accumulators by id, prefetched likewise, so
     * that the misses overlap; a window that is still its key's last has its accumulator in
     * the key's entry */
    if (drop) {
        for (int32_t i = 0; i < n; i++) {
            wr_wintab_prefetch(t, keys[i], start);
        }
        for (int32_t i = 0; i < n; i++) {
            ids[i] = wr_wintab_drop(t, keys[i], start);
        }
    } else {
        wr_wintab_gather(t, keys, n, start, ids);
    }
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] >= 0 && (size_t)ids[i] < a->cap) {
            __builtin_prefetch(&a->acc[ids[i]]);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0) {
            value[i] = 0;
            count[i] = 0;
            continue;
        }
        wr_aggs_last_t *l = cached(a, keys[i], start);
        const wr_agg_t *acc = l ? &l->acc : wr_aggs_at(a, ids[i]);
        value[i] = wr_agg_result(a->kind, acc);
        count[i] = acc->n;
        if (drop && l) {
            l->key = -1;
        }
    }
    return n;
}

/* --- FFI --------------------------------------------------------------------------------- */

/* The FFI's handle keeps the windows its applies created (key, start), in order, from head on:
 * they are the pending timers of the windows (each window's one timer, at its max timestamp,
 * registered when it was created). Lua either takes them over into its timer queue
 * (weir_aggs_created, then weir_aggs_created_clear) or fires them from here (weir_aggs_due), so
 * that the per-element path only appends and applies, and a watermark's timers need no Lua
 * work. [head, sorted) is in start order, stably: timer order, since every window has the
 * same size. */
struct weir_aggs {
    wr_aggs_t a;
    int32_t *ckeys;
    double *cstarts;
    int32_t *scratch; /* apply's fresh indices, room for ccap; the sort's keys */
    double *sscratch; /* the sort's starts, room for ccap (NULL until a sort) */
    size_t head, sorted, nc, ccap;
    size_t bytes;
};

weir_aggs_t *weir_aggs_new(int32_t kind)
{
    if (kind < 0 || kind >= WR_AGG_KINDS) {
        return NULL;
    }
    weir_aggs_t *fa = wr_xcalloc(1, sizeof *fa);
    wr_aggs_init(&fa->a, (wr_agg_kind_t)kind);
    return fa;
}

void weir_aggs_free(weir_aggs_t *fa)
{
    if (!fa) {
        return;
    }
    wr_aggs_close(&fa->a);
    wr_release_counted(&fa->bytes, fa->ckeys, fa->ccap, sizeof *fa->ckeys);
    wr_release_counted(&fa->bytes, fa->cstarts, fa->ccap, sizeof *fa->cstarts);
    wr_release_counted(&fa->bytes, fa->scratch, fa->ccap, sizeof *fa->scratch);
    if (fa->sscratch) {
        wr_release_counted(&fa->bytes, fa->sscratch, fa->ccap, sizeof *fa->sscratch);
    }
    wr_free(fa);
}

/* Room for need created windows: the list moved down to head 0 first when that makes room. */
static void created_room(weir_aggs_t *fa, size_t need)
{
    if (need <= fa->ccap) {
        return;
    }
    if (fa->head > 0) {
        size_t n = fa->nc - fa->head;
        memmove(fa->ckeys, fa->ckeys + fa->head, n * sizeof *fa->ckeys);
        memmove(fa->cstarts, fa->cstarts + fa->head, n * sizeof *fa->cstarts);
        need -= fa->head;
        fa->sorted = fa->sorted > fa->head ? fa->sorted - fa->head : 0;
        fa->nc = n;
        fa->head = 0;
        if (need <= fa->ccap) {
            return;
        }
    }
    size_t cap = fa->ccap ? fa->ccap : 1024;
    while (cap < need) {
        cap *= 2;
    }
    fa->ckeys = wr_xresize_counted(&fa->bytes, fa->ckeys, fa->ccap, cap, sizeof *fa->ckeys);
    fa->cstarts = wr_xresize_counted(&fa->bytes, fa->cstarts, fa->ccap, cap, sizeof *fa->cstarts);
    fa->scratch = wr_xresize_counted(&fa->bytes, fa->scratch, fa->ccap, cap, sizeof *fa->scratch);
    if (fa->sscratch) {
        fa->sscratch =
            wr_xresize_counted(&fa->bytes, fa->sscratch, fa->ccap, cap, sizeof *fa->sscratch);
    }
    fa->ccap = cap;
}

int32_t weir_aggs_apply(weir_aggs_t *fa, weir_wintab_t *ft, int32_t n, const int32_t *keys,
                        const double *ts, const double *x, double size, double offset)
{
    if (!fa || !ft || n < 0 || (n > 0 && (!keys || !ts)) || !(size > 0) || !isfinite(size) ||
        !isfinite(offset)) {
        return WEIR_EINVAL;
    }
    if (n > 0 && !x && fa->a.kind != WR_AGG_COUNT) {
        return WEIR_EINVAL;
    }
    created_room(fa, fa->nc + (size_t)n);
    int32_t m = apply(&fa->a, &ft->t, n, keys, ts, x, size, offset, fa->scratch,
                      fa->cstarts + fa->nc, true);
    for (int32_t j = 0; j < m; j++) {
        fa->ckeys[fa->nc + (size_t)j] = keys[fa->scratch[j]];
    }
    if (m > 0) {
        fa->nc += (size_t)m;
    }
    return m;
}

int32_t weir_aggs_created(const weir_aggs_t *fa, const int32_t **keys, const double **starts)
{
    if (!fa || !keys || !starts) {
        return WEIR_EINVAL;
    }
    *keys = fa->ckeys + fa->head;
    *starts = fa->cstarts + fa->head;
    return (int32_t)(fa->nc - fa->head);
}

int32_t weir_aggs_created_add(weir_aggs_t *fa, int32_t key, double start)
{
    if (!fa || key < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    created_room(fa, fa->nc + 1);
    fa->ckeys[fa->nc] = key;
    fa->cstarts[fa->nc] = start;
    fa->nc++;
    return 0;
}

void weir_aggs_created_clear(weir_aggs_t *fa)
{
    if (fa) {
        fa->head = fa->sorted = fa->nc = 0;
    }
}

/* Sorts [head, nc) by start, stably (a bottom-up merge sort through the scratch arrays), when
 * it is not in order already: with timestamps in order, as they mostly are, windows are
 * created in start order and the check is all it costs. */
static void sort_created(weir_aggs_t *fa)
{
    size_t lo = fa->head, hi = fa->nc;
    size_t i = fa->sorted > lo ? fa->sorted : lo + 1;
    while (i < hi && fa->cstarts[i] >= fa->cstarts[i - 1]) {
        i++;
    }
    fa->sorted = hi;
    if (i >= hi) {
        return;
    }
    if (!fa->sscratch) {
        fa->sscratch = wr_xresize_counted(&fa->bytes, NULL, 0, fa->ccap, sizeof *fa->sscratch);
    }
    int32_t *k = fa->ckeys + lo, *tk = fa->scratch;
    double *s = fa->cstarts + lo, *ts = fa->sscratch;
    size_t n = hi - lo;
    for (size_t w = 1; w < n; w *= 2) {
        for (size_t a = 0; a < n; a += 2 * w) {
            size_t m = a + w < n ? a + w : n, b = a + 2 * w < n ? a + 2 * w : n;
            size_t p = a, q = m, o = a;
            while (p < m && q < b) {
                bool right = s[q] < s[p]; /* equal starts: the left (earlier) one first */
                tk[o] = right ? k[q] : k[p];
                ts[o++] = right ? s[q++] : s[p++];
            }
            while (p < m) {
                tk[o] = k[p];
                ts[o++] = s[p++];
            }
            while (q < b) {
                tk[o] = k[q];
                ts[o++] = s[q++];
            }
        }
        memcpy(k, tk, n * sizeof *k);
        memcpy(s, ts, n * sizeof *s);
    }
}

int32_t weir_aggs_due(weir_aggs_t *fa, weir_wintab_t *ft, double size, double w, int32_t max,
                      int32_t *keys, double *starts, int32_t *ids, double *value, double *count)
{
    if (!fa || !ft || !(size > 0) || isnan(w) || max < 0 ||
        (max > 0 && (!keys || !starts || !ids || !value || !count))) {
        return WEIR_EINVAL;
    }
    sort_created(fa);
    size_t i = fa->head;
    int32_t m = 0;
    while (m < max && i < fa->nc && fa->cstarts[i] + size - 1 <= w) {
        keys[m] = fa->ckeys[i];
        starts[m] = fa->cstarts[i];
        m++;
        i++;
    }
    fa->head = i;
    if (i == fa->nc) {
        fa->head = fa->sorted = fa->nc = 0;
    }
    /* by runs of one start (one time's windows): the one-start fire, its start converted once */
    for (int32_t j = 0; j < m;) {
        int32_t r = j + 1;
        while (r < m && starts[r] == starts[j]) {
            r++;
        }
        wr_aggs_fire(&fa->a, &ft->t, keys + j, r - j, wr_ms_from_double(starts[j]), true, ids + j,
                     value + j, count + j);
        j = r;
    }
    return m;
}

int32_t weir_aggs_add(weir_aggs_t *fa, weir_wintab_t *ft, double key, double start, double x,
                      int32_t *fresh)
{
    if (!fa || !ft || !fresh || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    int32_t k = wr_idtab_key_id(key);
    int64_t s = wr_ms_from_double(start);
    bool is_new;
    int32_t id = wr_wintab_put(&ft->t, k, s, &is_new);
    if (id < 0) {
        return id;
    }
    wr_aggs_last_t *l = cached(&fa->a, k, s);
    wr_agg_t *acc = l ? &l->acc : wr_aggs_at(&fa->a, id);
    if (is_new) {
        wr_agg_init(fa->a.kind, acc);
    }
    wr_agg_add(fa->a.kind, acc, x);
    *fresh = is_new;
    return id;
}

int32_t weir_aggs_fire(weir_aggs_t *fa, weir_wintab_t *ft, const int32_t *keys, int32_t n,
                       double start, int32_t drop, int32_t *ids, double *value, double *count)
{
    if (!fa || !ft || n < 0 || (n > 0 && (!keys || !ids || !value || !count)) || isnan(start)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return wr_aggs_fire(&fa->a, &ft->t, keys, n, wr_ms_from_double(start), drop != 0, ids,
                        value, count);
}

int32_t weir_aggs_drop(weir_aggs_t *fa, weir_wintab_t *ft, double key, double start)
{
    if (!fa || !ft || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_aggs_drop(&fa->a, &ft->t, wr_idtab_key_id(key), wr_ms_from_double(start));
}

int32_t weir_aggs_get(weir_aggs_t *fa, const weir_wintab_t *ft, double key, double start,
                      double *out)
{
    if (!fa || !ft || !out || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    const wr_agg_t *acc =
        wr_aggs_find(&fa->a, &ft->t, wr_idtab_key_id(key), wr_ms_from_double(start));
    if (!acc) {
        return -1;
    }
    out[0] = acc->v;
    out[1] = acc->n;
    out[2] = wr_agg_result(fa->a.kind, acc);
    return 0;
}

int32_t weir_aggs_set(weir_aggs_t *fa, weir_wintab_t *ft, double key, double start, double v,
                      double n)
{
    if (!fa || !ft || wr_idtab_key_id(key) < 0 || isnan(start) || isnan(v) || !(n >= 0)) {
        return WEIR_EINVAL;
    }
    return wr_aggs_set(&fa->a, &ft->t, wr_idtab_key_id(key), wr_ms_from_double(start), v, n);
}

double weir_aggs_stat(const weir_aggs_t *fa, int32_t what)
{
    if (fa && what == WEIR_STORE_BYTES) {
        return (double)(sizeof *fa + fa->a.bytes + fa->bytes);
    }
    return NAN;
}
