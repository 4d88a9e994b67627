/* SPDX-License-Identifier: MIT */
/* wintab.h: the window table of weir.aggwindow's tumbling windows: (key, window start) -> id,
 * the id under which Lua keeps the window's accumulator and element count. One open-addressing
 * table with the whole entry inline, so a lookup touches one cache line; the
 * window's stop is the operator's (start + size) and needs no room. */
#ifndef WR_WINTAB_H
#define WR_WINTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idtab.h"

enum { WR_WINTAB_MAX = INT32_MAX }; /* open windows; ids are 0 .. WR_WINTAB_MAX - 1 */

/* One entry, 16 bytes (a 32768-entry table fits a 512 KiB cache): id -1 is an empty entry.
 * Keys are key ids (int32). */
typedef struct wr_wintab_entry {
    int64_t start;
    int32_t key;
    int32_t id;
} wr_wintab_entry_t;

enum { WR_WINTAB_KEYS_MAX = 1 << 22 }; /* key ids past it always go into the index */

/* A key's windows that are in no index entry (key ids below WR_WINTAB_KEYS_MAX): top is the
 * highest start any window of the key has had (INT64_MIN: none), head and tail the first and
 * last of its unindexed windows (ids, -1: none), in creation order, so by increasing start. */
typedef struct wr_wintab_key {
    int64_t top;
    int32_t head;
    int32_t tail;
} wr_wintab_key_t;

/* An unindexed window, by id (16 bytes with the padding): its start and the next unindexed
 * window of its key (-1: none). */
typedef struct wr_wintab_unindexed {
    int64_t start;
    int32_t next;
} wr_wintab_unindexed_t;

/* Caller's storage; it owns every array. A window opened past its key's top start cannot exist
 * yet, so it gets an id but no index entry (an unindexed window, on its key's list): the fires
 * of windows opened in time order find them by key without a probe, insert nothing and shift
 * nothing. Invariants: index (power-of-two size, at most 3/4 full of the indexed windows,
 * shrunk only when empty; linear probing, backward-shift deletion) and the keys' lists hold
 * exactly the open windows, each once, each with a distinct id below next_id; the ids below
 * next_id that are not open are in free_ids[0 .. nfree). A key's list is in increasing start
 * order (each window on it was opened past the key's top), and a lookup reads it before the
 * index. Before a walk of the index by position
 * (wr_wintab_index_all, for weir_wintab_capacity and _at) they are all put into the index, by
 * key id and then start, so that the walk's order depends only on the open windows. */
typedef struct wr_wintab {
    wr_idtab_t index; /* of wr_wintab_entry_t */
    int32_t *free_ids;
    int32_t nfree;
    int32_t free_cap;
    int32_t next_id;
    int32_t open;      /* indexed and unindexed */
    int32_t unindexed;
    wr_wintab_key_t *keys;       /* by key id, keys_cap of them */
    size_t keys_cap;
    int32_t keys_max;  /* key ids past it have no record: WR_WINTAB_KEYS_MAX, or less (mem) */
    wr_wintab_unindexed_t *un;   /* by id, un_cap of them */
    size_t un_cap;
    size_t bytes;     /* heap bytes held */
} wr_wintab_t;

void wr_wintab_init(wr_wintab_t *t);
void wr_wintab_close(wr_wintab_t *t);
/* The id of (key, start), created when absent; WEIR_ESTATE when WR_WINTAB_MAX windows are
 * open. Expected O(1). */
int32_t wr_wintab_add(wr_wintab_t *t, int32_t key, int64_t start);
/* The same, with *fresh telling whether it was created now. */
int32_t wr_wintab_put(wr_wintab_t *t, int32_t key, int64_t start, bool *fresh);
/* The id of (key, start), or -1. Expected O(1). */
int32_t wr_wintab_find(const wr_wintab_t *t, int32_t key, int64_t start);
/* The ids of (keys[i], start) for i < n into ids (-1: absent), as n finds would, but with
 * the n lookups' cache misses overlapping: for a watermark firing the windows of many keys. */
int32_t wr_wintab_gather(const wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                         int32_t *ids);
/* Starts loading the entry where (key, start)'s probe begins into the cache (a hint: for a
 * batch's lookups to overlap their misses). */
void wr_wintab_prefetch(const wr_wintab_t *t, int32_t key, int64_t start);
/* Removes (key, start): the id it had (free for reuse from now on), or -1 when absent. */
int32_t wr_wintab_drop(wr_wintab_t *t, int32_t key, int64_t start);
/* gather and drop in one pass: ids[i] as gather finds it, and the window dropped (ids free for
 * reuse from the next add on), but the table keeps its size even when it is left empty, until
 * wr_wintab_trim (so that its bytes do not change while the taken windows fire). For a
 * watermark's fires without allowed lateness. */
int32_t wr_wintab_take(wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                       int32_t *ids);
/* Back to the initial size, ids from 0 again, when no window is open (as a drop does). */
void wr_wintab_trim(wr_wintab_t *t);
/* Puts every unindexed window into the index (by key id, then start): before a walk by
 * position. */
void wr_wintab_index_all(wr_wintab_t *t);

/* The FFI's handle (weir_wintab_t in weir_ffi.h). */
struct weir_wintab {
    wr_wintab_t t;
};

/* The home of window (key id, start) in a table of mask + 1 entries (a power of two, >= 4):
 * blocks of four, key ids 4m .. 4m + 3 of one window in consecutive entries (one 64-byte line
 * of 16-byte entries), the block placed by Fibonacci hashing (the product's top bits) of (m,
 * start). Shared by wintab.c and aggs.c, whose tables place windows alike. */
static inline size_t wr_wintab_home(int32_t key, int64_t start, size_t mask)
{
    uint64_t h = (uint64_t)((uint32_t)key >> 2) + (uint64_t)start * UINT64_C(0xc2b2ae3d27d4eb4f);
    h *= UINT64_C(0x9e3779b97f4a7c15);
    size_t block = (size_t)(h >> (64 - (__builtin_ctzll((unsigned long long)mask + 1) - 2)));
    return (block << 2) | ((uint32_t)key & 3);
}

#endif
