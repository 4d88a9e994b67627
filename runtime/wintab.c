/* SPDX-License-Identifier: MIT */
/* wintab.c: a linear-probing hash table of (key, start) entries with ids from a free stack.
 * The table grows past 3/4 full and shrinks only when it is empty again:
 * windows fire in bursts (a watermark closes a window of every key at once), and halving while
 * a burst drops entries would rehash again and again, only to grow back as the next windows
 * fill. So a table keeps the size of its peak while anything is open. bytes counts every
 * array. */
#include "wintab.h"
#include "ms.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "weir.h"

enum { MIN_CAP = 32 };

/* A key id as the FFI gives it: a double holding an int32, else -1 (never a key id). */
static int32_t key_id(double key)
{
    return key >= 0 && key <= INT32_MAX && key == (double)(int32_t)key ? (int32_t)key : -1;
}

/* Fibonacci hashing: the product's top bits. Key ids are dense small integers, so the keys of
 * one window land evenly spread, and consecutive keys a fixed stride apart, which the
 * hardware prefetcher follows when keys come round in order. */
static size_t home_of(int32_t key, int64_t start, size_t mask)
{
    uint64_t h = (uint64_t)(uint32_t)key + (uint64_t)start * UINT64_C(0xc2b2ae3d27d4eb4f);
    h *= UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> (64 - __builtin_ctzll((unsigned long long)mask + 1)));
}

static wr_wintab_entry_t *new_index(wr_wintab_t *t, size_t cap)
{
    wr_wintab_entry_t *index = wr_xresize_counted(&t->bytes, NULL, 0, cap, sizeof *index);
    for (size_t i = 0; i < cap; i++) {
        index[i].id = -1;
    }
    return index;
}

void wr_wintab_init(wr_wintab_t *t)
{
    memset(t, 0, sizeof *t);
    t->index = new_index(t, MIN_CAP);
    t->cap = MIN_CAP;
}

void wr_wintab_close(wr_wintab_t *t)
{
    wr_free(t->index);
    wr_free(t->free_ids);
    memset(t, 0, sizeof *t);
}

static void rehash(wr_wintab_t *t, size_t new_cap)
{
    wr_wintab_entry_t *old = t->index;
    size_t old_cap = t->cap;
    wr_wintab_entry_t *fresh = new_index(t, new_cap);
    size_t mask = new_cap - 1;
    for (size_t j = 0; j < old_cap; j++) {
        if (old[j].id < 0) {
            continue;
        }
        size_t i = home_of(old[j].key, old[j].start, mask);
        while (fresh[i].id >= 0) {
            i = (i + 1) & mask;
        }
        fresh[i] = old[j];
    }
    wr_release_counted(&t->bytes, old, old_cap, sizeof *old);
    t->index = fresh;
    t->cap = new_cap;
}

/* The position of (key, start), or of the empty entry that ends its probe run. */
static size_t probe(const wr_wintab_t *t, int32_t key, int64_t start)
{
    size_t mask = t->cap - 1;
    size_t i = home_of(key, start, mask);
    for (;;) {
        const wr_wintab_entry_t *e = &t->index[i];
        if (e->id < 0 || (e->key == key && e->start == start)) {
            return i;
        }
        i = (i + 1) & mask;
    }
}

static int32_t take_id(wr_wintab_t *t)
{
    return t->nfree > 0 ? t->free_ids[--t->nfree] : t->next_id++;
}

static void give_id(wr_wintab_t *t, int32_t id)
{
    if (t->nfree == t->free_cap) {
        int32_t cap = t->free_cap ? t->free_cap * 2 : 64;
        t->free_ids = wr_xresize_counted(&t->bytes, t->free_ids, (size_t)t->free_cap,
                                         (size_t)cap, sizeof *t->free_ids);
        t->free_cap = cap;
    }
    t->free_ids[t->nfree++] = id;
}

int32_t wr_wintab_add(wr_wintab_t *t, int32_t key, int64_t start)
{
    size_t i = probe(t, key, start);
    wr_wintab_entry_t *e = &t->index[i];
    if (e->id < 0) {
        if (t->open >= WR_WINTAB_MAX) {
            return WEIR_ESTATE;
        }
        size_t n = (size_t)t->open + 1;
        if (n * 4 > t->cap * 3 && (n + 1 >= t->cap || wr_mem_may_grow(2 * t->cap * sizeof *e))) {
            rehash(t, t->cap * 2);
            e = &t->index[probe(t, key, start)];
        }
        *e = (wr_wintab_entry_t){.start = start, .key = key, .id = take_id(t)};
        t->open++;
    }
    return e->id;
}

int32_t wr_wintab_find(const wr_wintab_t *t, int32_t key, int64_t start)
{
    return t->index[probe(t, key, start)].id;
}

int32_t wr_wintab_drop(wr_wintab_t *t, int32_t key, int64_t start)
{
    size_t hole = probe(t, key, start);
    wr_wintab_entry_t *index = t->index;
    int32_t id = index[hole].id;
    if (id < 0) {
        return -1;
    }
    /* backward shift: an entry later in the run moves into the hole unless its home lies
     * cyclically in (hole, j] */
    size_t mask = t->cap - 1;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        if (index[j].id < 0) {
            break;
        }
        size_t home = home_of(index[j].key, index[j].start, mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            index[hole] = index[j];
            hole = j;
        }
    }
    index[hole].id = -1;
    t->open--;
    give_id(t, id);
    if (t->open == 0) {
        /* nothing open: back to the initial size, and ids start again at 0 */
        t->nfree = 0;
        t->next_id = 0;
        if (t->cap > MIN_CAP) {
            rehash(t, MIN_CAP);
        }
    }
    return id;
}

int32_t wr_wintab_gather(const wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                         int32_t *ids)
{
    size_t mask = t->cap - 1;
    /* the entries first, all of them: their cache misses overlap instead of queueing */
    for (int32_t i = 0; i < n; i++) {
        __builtin_prefetch(&t->index[home_of(keys[i], start, mask)]);
    }
    for (int32_t i = 0; i < n; i++) {
        ids[i] = t->index[probe(t, keys[i], start)].id;
    }
    return n;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_wintab {
    wr_wintab_t t;
};

weir_wintab_t *weir_wintab_new(void)
{
    weir_wintab_t *ft = wr_xmalloc(sizeof *ft);
    wr_wintab_init(&ft->t);
    return ft;
}

void weir_wintab_free(weir_wintab_t *ft)
{
    if (!ft) {
        return;
    }
    wr_wintab_close(&ft->t);
    wr_free(ft);
}

int32_t weir_wintab_add(weir_wintab_t *ft, double key, double start)
{
    if (key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_add(&ft->t, key_id(key), wr_ms_from_double(start));
}

int32_t weir_wintab_find(const weir_wintab_t *ft, double key, double start)
{
    if (key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_find(&ft->t, key_id(key), wr_ms_from_double(start));
}

int32_t weir_wintab_drop(weir_wintab_t *ft, double key, double start)
{
    if (key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_drop(&ft->t, key_id(key), wr_ms_from_double(start));
}

double weir_wintab_stat(const weir_wintab_t *ft, int32_t what)
{
    switch (what) {
    case WEIR_STORE_OPEN:
        return (double)ft->t.open;
    case WEIR_STORE_BYTES:
        return (double)(sizeof *ft + ft->t.bytes);
    default:
        return NAN;
    }
}

int32_t weir_wintab_gather(const weir_wintab_t *ft, const int32_t *keys, int32_t n, double start,
                           int32_t *ids)
{
    if (n < 0 || (n > 0 && (!keys || !ids)) || isnan(start)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return wr_wintab_gather(&ft->t, keys, n, wr_ms_from_double(start), ids);
}

int32_t weir_wintab_capacity(const weir_wintab_t *ft)
{
    return (int32_t)ft->t.cap;
}

int32_t weir_wintab_at(const weir_wintab_t *ft, int32_t i, double *out)
{
    if (i < 0 || (size_t)i >= ft->t.cap || !out) {
        return WEIR_EINVAL;
    }
    const wr_wintab_entry_t *e = &ft->t.index[i];
    if (e->id >= 0) {
        out[0] = (double)e->key;
        out[1] = wr_ms_to_double(e->start);
    }
    return e->id;
}
