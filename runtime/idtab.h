/* SPDX-License-Identifier: MIT */
/* idtab.h: the open-addressing core of weir's id tables (the store, wintab, slices, timers,
 * aggs): linear probing over a power-of-two array of fixed-size entries, backward-shift
 * deletion (no tombstones), rehash in place of the array, and the memory account's say before
 * a doubling.
 * Each table keeps its own entry layout, hash, equality and growth policy and passes them in.
 *
 * Static inline, not a .c with callbacks: a table passes its kind and match function as
 * constants, so they inline into its probes (the fast window operator probes once per
 * element), and the generated code is the hand-written table's. Positions depend only on the
 * homes and on the order of inserts and deletes, as before the core existed: Lua walks
 * weir_wintab_at in position order, so a table's iteration order is part of its behaviour. */
#ifndef WR_IDTAB_H
#define WR_IDTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mem.h"

/* What a table's entries are: size bytes each, empty when the int32_t at offset id_at is
 * negative (an entry of all one bits is empty). home is where an entry's probe run starts in a
 * table of mask + 1 entries; it must depend on the entry's key fields only. */
typedef struct wr_idtab_kind {
    size_t size;
    size_t id_at;
    size_t (*home)(const void *entry, size_t mask);
} wr_idtab_kind_t;

/* Caller's storage: cap entries (a power of two; entries NULL while cap is 0). The owner counts
 * the entries' bytes: the functions taking `bytes` move *bytes by what they allocate and free
 * (bytes NULL: nothing is counted). */
typedef struct wr_idtab {
    void *entries;
    size_t cap;
} wr_idtab_t;

/* Multiply-xorshift: each step is a bijection of h for a fixed v, so keys differing in one field
 * (consecutive keys, consecutive starts) never collide on the full 64 bits, and the shift carries
 * high product bits down. Chain it over a key's fields, then finish. */
static inline uint64_t wr_idtab_mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 31);
}

static inline uint64_t wr_idtab_finish(uint64_t h)
{
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return h ^ (h >> 29);
}

/* A key id as the FFI gives it to wintab and slices: a double holding an int32_t >= 0, else -1
 * (never a key id). */
static inline int32_t wr_idtab_key_id(double key)
{
    return key >= 0 && key <= INT32_MAX && key == (double)(int32_t)key ? (int32_t)key : -1;
}

static inline void *wr_idtab_at(const wr_idtab_t *t, const wr_idtab_kind_t *k, size_t i)
{
    return (char *)t->entries + i * k->size;
}

static inline bool wr_idtab_is_empty(const wr_idtab_kind_t *k, const void *entry)
{
    int32_t id;
    memcpy(&id, (const char *)entry + k->id_at, sizeof id);
    return id < 0;
}

/* Sets up t with cap (a power of two) empty entries. */
static inline void wr_idtab_init(wr_idtab_t *t, const wr_idtab_kind_t *k, size_t cap,
                                 size_t *bytes)
{
    t->entries = wr_xreallocarray(NULL, cap, k->size);
    if (bytes) {
        *bytes += cap * k->size;
    }
    memset(t->entries, 0xff, cap * k->size);
    t->cap = cap;
}

static inline void wr_idtab_close(wr_idtab_t *t, const wr_idtab_kind_t *k, size_t *bytes)
{
    wr_free(t->entries);
    if (bytes) {
        *bytes -= t->cap * k->size;
    }
    t->entries = NULL;
    t->cap = 0;
}

/* The position of the entry for which match(entry, query) holds, or of the empty entry that
 * ends the probe run from home (then *found is false). The table has an empty entry (its
 * growth policy keeps one); match is called on full entries only. */
static inline size_t wr_idtab_find(const wr_idtab_t *t, const wr_idtab_kind_t *k, size_t home,
                                   bool (*match)(const void *entry, const void *query),
                                   const void *query, bool *found)
{
    size_t mask = t->cap - 1;
    size_t i = home;
    for (;;) {
        const void *e = wr_idtab_at(t, k, i);
        if (wr_idtab_is_empty(k, e)) {
            *found = false;
            return i;
        }
        if (match(e, query)) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* Moves every entry into a new array of new_cap entries (a power of two larger than the entry
 * count), in the old array's order, each at the first empty position from its home. Kept out of
 * line: inlined, it puts a growth's registers on every insert's path (wintab's add ran 8%
 * slower); the compiler still specializes it for the one kind a file passes. */
__attribute__((noinline, unused)) static void wr_idtab_rehash(wr_idtab_t *t,
                                                              const wr_idtab_kind_t *k,
                                                              size_t new_cap, size_t *bytes)
{
    wr_idtab_t old = *t;
    wr_idtab_init(t, k, new_cap, bytes);
    size_t mask = new_cap - 1;
    for (size_t j = 0; j < old.cap; j++) {
        const void *e = wr_idtab_at(&old, k, j);
        if (wr_idtab_is_empty(k, e)) {
            continue;
        }
        size_t i = k->home(e, mask);
        while (!wr_idtab_is_empty(k, wr_idtab_at(t, k, i))) {
            i = (i + 1) & mask;
        }
        memcpy(wr_idtab_at(t, k, i), e, k->size);
    }
    wr_idtab_close(&old, k, bytes);
}

/* Whether a table about to hold n entries should double: past num/den full, unless the memory
 * account says wait (wr_mem_may_grow, mem.h) and more than one empty entry would be left. A
 * table with cap 0 always should. */
static inline bool wr_idtab_should_grow(const wr_idtab_t *t, const wr_idtab_kind_t *k, size_t n,
                                        size_t num, size_t den)
{
    return n * den > t->cap * num && (n + 1 >= t->cap || wr_mem_may_grow(2 * t->cap * k->size));
}

/* Empties the entry at hole. Backward shift: a later entry of the probe run moves into the hole
 * unless its home lies cyclically in (hole, j], so lookups never meet a gap in a run. */
static inline void wr_idtab_remove_at(wr_idtab_t *t, const wr_idtab_kind_t *k, size_t hole)
{
    size_t mask = t->cap - 1;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        const void *e = wr_idtab_at(t, k, j);
        if (wr_idtab_is_empty(k, e)) {
            break;
        }
        size_t home = k->home(e, mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            memcpy(wr_idtab_at(t, k, hole), e, k->size);
            hole = j;
        }
    }
    int32_t none = -1;
    memcpy((char *)wr_idtab_at(t, k, hole) + k->id_at, &none, sizeof none);
}

#endif
