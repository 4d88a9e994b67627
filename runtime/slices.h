/* SPDX-License-Identifier: MIT */
/* slices.h: the slices of weir.aggwindow's sliced sliding windows. Per key id, the key's
 * slices (start, number accumulator, element count) in one array sorted by start, so that the
 * slices of a window are one contiguous run: an element updates one slice, a window reads its
 * run. Keys are found through an open-addressing index. */
#ifndef WR_SLICES_H
#define WR_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "idtab.h"
#include "weir.h"

enum { WR_SLICES_MAX = 1 << 30 }; /* slices per key (a ring of a power of two) */

/* One slice, 32 bytes (two to a cache line, rings aligned to lines, so that an insert or a
 * fire touches one line):
 * its start, accumulator (NaN until the caller writes it), the fire queue's merge from it
 * (agg, in the front) and its element count. */
typedef struct wr_slice {
    int64_t start;
    double acc;
    double agg;
    int32_t count;
    int32_t pad;
} wr_slice_t;

/* One key: its slices are positions [head, head + len) of the ring s (cap positions; position
 * p at s[p mod cap]; head in [0, cap), so every position used is below 2 cap), sorted by
 * start: a window's slices are one run. last is the start of the run's last slice (when len >
 * 0): an append compares with it, not with the ring (whose line is cold by then). A free
 * record has len -1 and head = the next free record (or -1). 64 bytes: one line. */
typedef struct wr_slice_key {
    int32_t key;
    int32_t head;
    int32_t len;
    int32_t cap;
    int32_t qlo;  /* the fire queue (wr_slices_fire): positions [qlo, qmid) the front, */
    int32_t qmid; /* agg[p] = merge(acc[p .. qmid)); [qmid, qhi) the back, back = merge of */
    int32_t qhi;  /* their accs; qlo = -1: no queue (the next fire builds one) */
    int16_t s_off; /* s is its allocation plus s_off bytes (aligned to a line) */
    int16_t run;   /* 1: the queue is a running sum instead (wr_slices_running): [qlo, qhi) */
    double back;   /* the back's merge, or with run the sum of the accs of [qlo, qhi) */
    struct wr_slice *s;
    int64_t last;
    int64_t qend; /* the hi of the window that last set the queue (its slices start below) */
} wr_slice_key_t;

/* One merge of a fire, for the caller to run in order: *dst = merge(*l, *r), or *dst = *l
 * when r is NULL (the caller's merge is opaque to C: a Lua function). */
typedef weir_slices_op_t wr_slices_op_t;

enum {
    WR_SLICES_HAS = 1,     /* the key has a slice in the window: res[i] is its accumulator */
    WR_SLICES_DROPPED = 2, /* slice lo was dropped (the caller's drop has nothing left to do) */
    WR_SLICES_GONE = 4,    /* and it was the key's last: the key has no slices left */
};

/* One index entry, 8 bytes: a key record (-1 = empty) and its key. */
typedef struct wr_slices_entry {
    int32_t id;
    int32_t key;
} wr_slices_entry_t;

/* Caller's storage; owns every array. Invariants: index (power-of-two size, at most 1/2 full,
 * linear probing, backward-shift deletion) holds exactly the used key records; a key record is
 * used while it has a slice; open and elements sum the used records' slices and counts. */
typedef struct wr_slices {
    wr_slice_key_t *keys; /* aligned to a line: keys_raw plus keys_off bytes */
    void *keys_raw;
    size_t keys_off;
    int32_t keys_len;
    int32_t keys_cap;
    int32_t free_key;
    int32_t nkeys;
    wr_idtab_t index; /* of wr_slices_entry_t */
    int32_t *direct;  /* direct[key] = index's record id of key (-1: none) for key < */
    int32_t direct_cap; /* direct_cap: the lookups of dense key ids skip the hash (at most
                         * 4 entries per index entry: sparse keys stay in the hash alone) */
    int32_t span; /* slices per window (wr_slices_span; 0: not said) */
    int32_t running; /* wr_slices_running: the fires keep a running sum where it is exact */
    double exact; /* with running: the largest |acc| a running sum takes (2^53 / span) */
    int64_t open;
    int64_t elements;
    wr_slice_t *dropped; /* the last wr_slices_fire's drops: dropped[i] the slice dropped for */
    int32_t dropped_cap; /* its key i (count 0: none), for wr_slices_undrop */
    size_t bytes;
} wr_slices_t;

void wr_slices_init(wr_slices_t *t);
void wr_slices_close(wr_slices_t *t);
/* Says how many slices a window has (k >= 1): a ring that grows to k slices or more gets k
 * positions, then k + 1 (not the next power of two), so that a key sliding on by one slice per
 * fire puts its new slice where its fire dropped the oldest (or beside it when its insert comes
 * first), and its insert and its next fire touch the same line or two. Only the capacity of
 * rings grown later changes; the content never does. */
void wr_slices_span(wr_slices_t *t, int32_t k);
/* Says that the accumulators are a built-in count's or sum's (merge(l, r) = l + r; on_ is 1)
 * or not (0, the default): wr_slices_fire then keeps per key a running sum of the window's
 * accumulators, adding the slices a window gains and subtracting those it loses, and returns
 * the results themselves (no ops), while every accumulator in the window is a whole number
 * of at most 2^53 / span in magnitude (so every sum of a window's slices, in any order, is
 * exact and equals the merges' left to right); a key with another accumulator in its window
 * uses the two stacks (and ops) until its queue is rebuilt (its front ran out, an element
 * went into a queued slice, a window went back) with whole numbers only. Needs the span
 * (without it every key uses the two stacks). */
void wr_slices_running(wr_slices_t *t, int on_);
/* The accumulator of key's slice at start, created (NaN, count 0) when absent, with 1 added to
 * its count; *fresh is 1 when it was created. The pointer is valid until the next acc or drop
 * on the same key. NULL when the key already has WR_SLICES_MAX slices. Expected O(1) for
 * slices arriving in start order, O(slices of the key) otherwise. */
double *wr_slices_acc(wr_slices_t *t, int32_t key, int64_t start, int *fresh);
/* Applies n elements of a built-in aggregate of kind (WEIR_AGG_COUNT, _SUM, _MIN or _MAX) in
 * order, element i into key keys[i]'s slice at starts[i] as wr_slices_acc does (a new slice
 * starts at the kind's identity: 0, +inf, -inf), then its value x[i] added as weir.aggregates'
 * Lua add() adds it (x unread for count). The elements that created their slice are listed:
 * fresh[j] the element's index, near[2 j] and near[2 j + 1] the starts of the key's slices
 * just before and after it then (-inf / +inf: none). Returns how many were (j < n), or
 * -(i + 1) when element i's key already has WR_SLICES_MAX slices (those before it applied).
 * The misses of the batch's key records and slice lines overlap (prefetched ahead). */
int32_t wr_slices_apply(wr_slices_t *t, int32_t kind, int32_t n, const int32_t *keys,
                        const double *starts, const double *x, int32_t *fresh, double *near);
/* The accumulators of key's slices starting in [lo, hi), in start order: writes the first
 * min(max, n) to out and returns n. O(log slices of the key + n). */
int32_t wr_slices_range(const wr_slices_t *t, int32_t key, int64_t lo, int64_t hi, double *out,
                        int32_t max);
/* The starts of key's slices just before and just after start (start itself left out):
 * INT64_MIN / INT64_MAX when there is none. */
void wr_slices_neighbors(const wr_slices_t *t, int32_t key, int64_t start, int64_t *prev,
                         int64_t *next);
/* Removes key's slice at start: 1, or 0 when there was none. */
int wr_slices_drop(wr_slices_t *t, int32_t key, int64_t start);
/* Adds n to the count of key's slice at start (saturating in [0, INT32_MAX]): 1, or 0 when
 * there is no such slice. */
int wr_slices_count_add(wr_slices_t *t, int32_t key, int64_t start, int32_t n);
/* wr_slices_range for each of keys[0 .. n): the runs of accumulators one after another in
 * out (at most cap values), keys[i]'s run being out[off[i] .. off[i + 1]); scratch holds n
 * ints. Returns the number of values (more than cap: only cap were written). The n lookups'
 * cache misses overlap: for a watermark firing the windows of many keys. */
int64_t wr_slices_gather(const wr_slices_t *t, const int32_t *keys, int32_t n, int64_t lo,
                         int64_t hi, double *out, int64_t cap, int32_t *off, int32_t *scratch);
/* The fires of window [lo, hi) of keys[0 .. n) (distinct keys), in one pass: per key the
 * merges that give the window's accumulator into res[i], appended to ops (cap of them), and
 * flags[i] (WR_SLICES_*). Per key the slices in the key's last fired windows are kept as two
 * stacks (a front of suffix merges, a back merged left to right), so that a key whose windows
 * fire in start order needs about three merges per fire (amortized: one to push its newest
 * slice, one for the result, one when the front is rebuilt), whatever the window's length; a
 * key whose window went back, or whose queued slices changed (wr_slices_touch), rebuilds it.
 * Results are merged in start order (merge(earlier, later)); a one-slice window is that
 * slice's accumulator. With wr_slices_running, a key with a running sum has no ops: res[i]
 * is its result when the call returns. With drop, slice lo of each key then goes when it is the key's first
 * (WR_SLICES_DROPPED, and WR_SLICES_GONE when it was its last; otherwise the caller drops it
 * once it ran the ops).
 * Ops point into the table: run them before the next call that changes it. Key i's ops are
 * ops[off[i] .. off[i + 1]). Stops before a key whose ops would not fit in what is left of cap
 * (a key needs at most its window's slices + 1); returns the keys done d, off[0 .. d] set. */
int32_t wr_slices_fire(wr_slices_t *t, const int32_t *keys, int32_t n, int64_t lo, int64_t hi,
                       int drop, double *res, int32_t *flags, int32_t *off, wr_slices_op_t *ops,
                       int32_t cap, int32_t *scratch);
/* Forgets key's fire queue (its next fire rebuilds it): after ops that did not all run. */
/* Runs ops[0 .. n) in order with a built-in aggregate's merge (weir_slices_run_ops). */
int wr_slices_run_ops(int32_t kind, const wr_slices_op_t *ops, int32_t n);
void wr_slices_forget(wr_slices_t *t, int32_t key);
/* Puts back the slices the last wr_slices_fire (with drop) dropped for its keys[from .. n)
 * (the same keys and lo), as they were: for a fire that failed the job after the pass, so
 * that the windows it had not fired keep their first slice. Returns how many went back. */
int32_t wr_slices_undrop(wr_slices_t *t, const int32_t *keys, int32_t from, int32_t n,
                         int64_t lo);
/* An element went into key's slice at start: the fire queue forgets it when it holds it. */
void wr_slices_touch(wr_slices_t *t, int32_t key, int64_t start);
/* Every slice as (key, start, count) triples into out (at most max triples); returns how many
 * slices there are. */
int64_t wr_slices_dump(const wr_slices_t *t, double *out, int64_t max);

#endif
