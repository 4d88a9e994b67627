/* SPDX-License-Identifier: MIT */
/* store.h: the window store of one window operator subtask: (key, window) -> slot id, the id
 * under which Lua holds a window's contents and C holds its element count and the numeric state
 * cells of its trigger (SEMANTICS.md 5.1; DESIGN.md, State). */
#ifndef WR_STORE_H
#define WR_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "idtab.h"

enum {
    WR_STORE_MAX_CELLS = 1 << 16,  /* cells_per_slot above this is refused */
    WR_STORE_MAX_SLOTS = INT32_MAX, /* open slots; ids are 0 .. INT32_MAX - 1 */
    WR_STORE_SEGMENTS = 28         /* cell segments: enough for WR_STORE_MAX_SLOTS */
};

/* One slot, 32 bytes. Times are ms, INT64_MIN/INT64_MAX being -inf/+inf. */
typedef struct wr_store_slot {
    int64_t key;
    int64_t start;
    int64_t stop;
    int32_t open;  /* 1 while open, 0 when free */
    int32_t count; /* open: the element count; free: the next free slot id, or -1 */
} wr_store_slot_t;

/* One hash table entry, 8 bytes: an id (-1 = empty) and the upper 32 bits of its hash. Probing
 * compares fp before it touches the slot, and the entry's home is fp & mask, so
 * growing and backward-shift deletion never load a slot (tables have at most 2^32 entries). */
typedef struct wr_store_entry {
    int32_t id;
    uint32_t fp;
} wr_store_entry_t;

/* Caller's storage; the store owns every array below, and bytes counts them all. Invariants:
 * slot_index holds exactly the open slots (idtab.h: power-of-two size, at most 3/4 full unless
 * the memory limit holds a doubling back, halved below 1/8 full). Cells of slot id
 * i live in segment c, which holds 16 << c slots from id 16 * (2^c - 1) on, and segments never
 * move, so a slot's cells keep their address until the store is empty again or closed. */
typedef struct wr_store {
    wr_store_slot_t *slots;
    wr_idtab_t slot_index; /* of wr_store_entry_t */
    double *cells[WR_STORE_SEGMENTS];
    size_t bytes;     /* heap bytes held */
    int64_t elements; /* sum of the counts of open slots */
    int32_t cells_per_slot;
    int32_t slots_len; /* ids ever handed out since the store was last empty */
    int32_t slots_cap;
    int32_t free_slot; /* head of the free list, or -1 */
    int32_t open;
} wr_store_t;

/* Sets up an empty store with cells_per_slot state cells per slot (0 .. WR_STORE_MAX_CELLS).
 * Returns 0, or WEIR_EINVAL for a bad cells_per_slot (then s is empty and close is safe). */
int wr_store_init(wr_store_t *s, int32_t cells_per_slot);
void wr_store_close(wr_store_t *s);

/* The slot of (key, [start, stop)), created when absent: a fresh slot has count 0 and every cell
 * NaN. Returns the id (>= 0; a dropped slot's id may come back), or WEIR_ESTATE when
 * WR_STORE_MAX_SLOTS are open. Expected O(1). */
int32_t wr_store_slot(wr_store_t *s, int64_t key, int64_t start, int64_t stop);
/* The slot of (key, [start, stop)), or -1. Expected O(1). */
int32_t wr_store_find(const wr_store_t *s, int64_t key, int64_t start, int64_t stop);
/* Frees an open slot: 0, or WEIR_EINVAL when slot is not open. When the last slot goes, the store
 * returns to its initial allocation (and ids start again at 0). */
int wr_store_drop(wr_store_t *s, int32_t slot);
/* Borrowed: the slot's cells_per_slot cells, valid until the slot is dropped or the store closed
 * (never moved by other slots' creation). NULL when the slot is not open or there are no cells. */
double *wr_store_cells(wr_store_t *s, int32_t slot);
/* Adds delta to the slot's count and returns the new count; WEIR_EINVAL (count unchanged) when
 * the slot is not open or the count would leave [0, INT32_MAX]. */
int32_t wr_store_count_add(wr_store_t *s, int32_t slot, int32_t delta);
/* The slot's count, or WEIR_EINVAL when the slot is not open. */
int32_t wr_store_count(const wr_store_t *s, int32_t slot);
/* The slot's key and window; 0, or WEIR_EINVAL (outputs untouched) when the slot is not open. */
int wr_store_window(const wr_store_t *s, int32_t slot, int64_t *key, int64_t *start,
                    int64_t *stop);

int32_t wr_store_open(const wr_store_t *s);
int64_t wr_store_elements(const wr_store_t *s);
/* Heap bytes the store holds (not counting the wr_store_t itself). */
size_t wr_store_bytes(const wr_store_t *s);

#endif
