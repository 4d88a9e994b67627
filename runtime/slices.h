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

enum { WR_SLICES_MAX = INT32_MAX }; /* open slices per table, and slices per key */

/* One key: its slices are positions [head, head + len) of three parallel arrays (one
 * allocation of cap positions), sorted by start: a window's accumulators are one dense run.
 * acc is NaN until the caller writes it; count is the elements added. A free record has len -1
 * and head = the next free record (or -1). */
typedef struct wr_slice_key {
    int32_t key;
    int32_t head;
    int32_t len;
    int32_t cap;
    int64_t *start;
    double *acc;
    int32_t *count;
} wr_slice_key_t;

/* One index entry, 8 bytes: a key record (-1 = empty) and its key. */
typedef struct wr_slices_entry {
    int32_t id;
    int32_t key;
} wr_slices_entry_t;

/* Caller's storage; owns every array. Invariants: index (power-of-two size, at most 1/2 full,
 * linear probing, backward-shift deletion) holds exactly the used key records; a key record is
 * used while it has a slice; open and elements sum the used records' slices and counts. */
typedef struct wr_slices {
    wr_slice_key_t *keys;
    int32_t keys_len;
    int32_t keys_cap;
    int32_t free_key;
    int32_t nkeys;
    wr_idtab_t index; /* of wr_slices_entry_t */
    int64_t open;
    int64_t elements;
    size_t bytes;
} wr_slices_t;

void wr_slices_init(wr_slices_t *t);
void wr_slices_close(wr_slices_t *t);
/* The accumulator of key's slice at start, created (NaN, count 0) when absent, with 1 added to
 * its count; *fresh is 1 when it was created. The pointer is valid until the next acc or drop
 * on the same key. NULL when the key already has WR_SLICES_MAX slices. Expected O(1) for
 * slices arriving in start order, O(slices of the key) otherwise. */
double *wr_slices_acc(wr_slices_t *t, int32_t key, int64_t start, int *fresh);
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
/* Every slice as (key, start, count) triples into out (at most max triples); returns how many
 * slices there are. */
int64_t wr_slices_dump(const wr_slices_t *t, double *out, int64_t max);

#endif
