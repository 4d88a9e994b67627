/* SPDX-License-Identifier: MIT */
/* aggs.h: weir's built-in aggregates (weir.aggregates: count, sum, min, max, avg) computed in
 * C. Two layers:
 *
 * - One accumulator (wr_agg_t) and its four operations, static inline so that any window
 *   structure can keep accumulators inline and fold them in its own loops (slices.c may):
 *   init, add one value, merge another accumulator, result. An accumulator is (v, n): n the
 *   elements added, v the accumulator as weir.aggregates' Lua add() keeps it — the count, the
 *   sum, the minimum (+inf before any element), the maximum (-inf), or for avg the sum (the
 *   result is v / n). The Lua functions and these give the same doubles for the same values
 *   in the same order.
 * - The windows of the fast operator's tumbling windows with their accumulators (wr_aggs_t):
 *   a hash table of their own, the accumulator in the entry. A batch of elements (key id,
 *   timestamp, value) is applied in one call (each element's window start, its window found
 *   or created in the table, the value added), and a watermark's fires are read, and dropped,
 *   in one call per chunk of keys. */
#ifndef WR_AGGS_H
#define WR_AGGS_H

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idtab.h"


typedef enum wr_agg_kind {
    WR_AGG_COUNT = 0,
    WR_AGG_SUM = 1,
    WR_AGG_MIN = 2,
    WR_AGG_MAX = 3,
    WR_AGG_AVG = 4,
    WR_AGG_KINDS = 5
} wr_agg_kind_t;

typedef struct wr_agg {
    double v; /* the count, sum, minimum or maximum (avg: the sum) */
    double n; /* elements added */
} wr_agg_t;

static inline void wr_agg_init(wr_agg_kind_t k, wr_agg_t *a)
{
    a->n = 0;
    a->v = k == WR_AGG_MIN ? INFINITY : (k == WR_AGG_MAX ? -INFINITY : 0);
}

/* x is a finite number: weir.aggregates refuses any other value before it gets here. */
static inline void wr_agg_add(wr_agg_kind_t k, wr_agg_t *a, double x)
{
    a->n += 1;
    switch (k) {
    case WR_AGG_COUNT:
        a->v += 1;
        break;
    case WR_AGG_SUM:
    case WR_AGG_AVG:
        a->v += x;
        break;
    case WR_AGG_MIN:
        if (x < a->v) {
            a->v = x;
        }
        break;
    case WR_AGG_MAX:
        if (x > a->v) {
            a->v = x;
        }
        break;
    default:
        break;
    }
}

/* a = merge(a, b), as weir.aggregates' Lua merge(a, b). */
static inline void wr_agg_merge(wr_agg_kind_t k, wr_agg_t *a, const wr_agg_t *b)
{
    a->n += b->n;
    switch (k) {
    case WR_AGG_MIN:
        if (b->v < a->v) {
            a->v = b->v;
        }
        break;
    case WR_AGG_MAX:
        if (b->v > a->v) {
            a->v = b->v;
        }
        break;
    default:
        a->v += b->v;
        break;
    }
}

static inline double wr_agg_result(wr_agg_kind_t k, const wr_agg_t *a)
{
    return k == WR_AGG_AVG ? a->v / a->n : a->v;
}

/* A key's last window with its accumulator, so that the elements of a key that fall in it
 * (most of them: a key's elements come in time order, many per window) need neither its start
 * computed (a division) nor the table probed nor the accumulators by id touched (cache misses:
 * this array is read in key order when keys come round in order, which the hardware
 * prefetcher follows): indexed by the key id's low bits, checked by key. While a window is
 * its key's last, its accumulator is here and acc[id] is stale; it goes back to acc[id] when
 * the key moves to another window. */
typedef struct wr_aggs_last {
    double start;
    int32_t key; /* -1: none */
    int32_t id;
    wr_agg_t acc;
} wr_aggs_last_t;

enum { WR_AGGS_LAST_MAX = 1 << 22 }; /* key ids (low 30 bits) past it are not cached */

/* One open window, 16 bytes (four to a cache line): id -1 is an empty entry. */
typedef struct wr_aggs_entry {
    int64_t start;
    int32_t key;
    int32_t id;
} wr_aggs_entry_t;

/* The built-in aggregates' windows, in a table of their own: (key id, start) -> id, the
 * window's accumulator acc[id]. An idtab.h table at a load of at most 3/4, wintab.c's entries
 * and homes (blocks of four keys: keys 4m .. 4m + 3 of one start share a line, and windows sit
 * where they sat in wintab), every step in aggs.c's loops; ids from a stack of free ones,
 * so that the windows a round of keys opens take the ids a watermark's fires of the round
 * before gave back, and acc[] is walked nearly in order. The table grows past 3/4 and shrinks
 * back, ids from 0 again, only when it is empty (a watermark's fires drop a window of every
 * key at once: halving during the burst would rehash only to grow back). last[key & (2^30 -
 * 1)] for key ids below WR_AGGS_LAST_MAX (last_cap entries, grown as keys come), each naming an
 * open window; top[] beside it, the highest start any window of those keys has had (-inf:
 * none), so that no open window of them starts later.
 *
 * With timers (the FFI's handle), the table also keeps the pending timers of the windows its
 * applies create (each window's one timer, at its max timestamp), in creation order from thead
 * on: tkeys, tstarts, tids. A window an apply opens past its key's top start cannot exist yet:
 * it takes an id but goes in no table entry (tids[] holds its id; -1 for a window in the table),
 * until a lookup that could need it (any find, put, drop or fire by key, a listing, the timers
 * handed over) puts every such window into the table first (index_all, in creation order).
 * Elements in time order thus open and fire their windows without a probe: a watermark's due
 * timers name their ids. unindexed counts those windows; open counts all. Caller's storage. */
typedef struct wr_aggs {
    wr_agg_kind_t kind;
    wr_idtab_t index; /* of wr_aggs_entry_t */
    size_t open;      /* windows open: in index, and the unindexed */
    size_t unindexed; /* windows named by tids[] only */
    bool timers;      /* set by its owner after init, before any window */
    wr_agg_t *acc;    /* by id */
    size_t acc_cap;
    int32_t *free_ids;
    size_t nfree, free_cap;
    int32_t next_id;
    wr_aggs_last_t *last;
    double *top; /* by last index */
    size_t last_cap;
    /* the pending timers (timers only): [thead, tsorted) in start order, stably; sort scratch */
    int32_t *tkeys, *tids, *skeys, *sids;
    double *tstarts, *sstarts;
    size_t thead, tsorted, tn, tcap;
    double *qs; /* apply's window starts, qs_cap */
    size_t qs_cap;
    size_t probes;  /* elements of this apply that probed the table */
    bool prefetch;  /* the last apply probed for more than 1 element in 16 */
    size_t bytes; /* heap bytes held */
} wr_aggs_t;

enum { WR_AGGS_MAX = 1 << 30 }; /* open windows at most */

/* Without timers (the FFI's handle sets them): every window in the table, as wr_aggs_apply
 * needs. */
void wr_aggs_init(wr_aggs_t *a, wr_agg_kind_t kind);
void wr_aggs_close(wr_aggs_t *a);
/* The accumulator of window (key, start), or NULL when there is none. */
wr_agg_t *wr_aggs_find(wr_aggs_t *a, int32_t key, int64_t start);
/* The accumulator of window (key, start), created (initialized) when absent, *is_new telling;
 * NULL when WR_AGGS_MAX windows are open. */
wr_agg_t *wr_aggs_put(wr_aggs_t *a, int32_t key, int64_t start, bool *is_new);

/* Applies n elements in order: element i of key keys[i] (a key id >= 0) at timestamp ts[i]
 * with value x[i] (ignored by count) goes into its tumbling window of size ms at offset
 * (start = ts - (ts - offset) mod size, the floored modulo, as Lua's %): the window is found,
 * or created with a fresh accumulator. The elements that created a window are written, in
 * order, as their index into fresh[] and the window's start into fresh_start[] (room for n
 * each; fresh_start is scratch for all n). Returns how many windows were created, or
 * WEIR_ESTATE when the table is full (the elements before the failing one are applied). A
 * table without timers only. */
int32_t wr_aggs_apply(wr_aggs_t *a, int32_t n, const int32_t *keys, const double *ts,
                      const double *x, double size, double offset, int32_t *fresh,
                      double *fresh_start);

/* Removes window (key, start): whether it was there. */
bool wr_aggs_drop(wr_aggs_t *a, int32_t key, int64_t start);

/* The windows (keys[i], start), i < n: value[i] its result and count[i] its element count (0:
 * no such window, value then 0), with the cache misses of the n lookups overlapping; with drop,
 * each window found is removed. Returns n. */
int32_t wr_aggs_fire(wr_aggs_t *a, const int32_t *keys, int32_t n, int64_t start, bool drop,
                     double *value, double *count);

#endif
