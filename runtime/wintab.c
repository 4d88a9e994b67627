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
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "weir.h"

enum { MIN_CAP = 32 };

/* Homes by blocks of four: key ids are dense small integers, and the four keys 4m .. 4m + 3 of
 * one window have consecutive homes, the 64 bytes of one block, placed by Fibonacci hashing
 * (the product's top bits) of (m, start). When keys come round in order, as they do when a
 * watermark's fires or a round of elements open the next windows of every key, a cache line
 * holds the entries of four keys instead of one: a new window's insert, which nothing has
 * prefetched, misses a quarter as often (the insert's miss was ~14% of windows_typed's time).
 * A table has at least MIN_CAP (>= 4) entries. */
static size_t entry_home(const void *entry, size_t mask)
{
    const wr_wintab_entry_t *e = entry;
    return wr_wintab_home(e->key, e->start, mask);
}

static const wr_idtab_kind_t KIND = {
    .size = sizeof(wr_wintab_entry_t),
    .id_at = offsetof(wr_wintab_entry_t, id),
    .home = entry_home,
};

static bool same_window(const void *entry, const void *query)
{
    const wr_wintab_entry_t *e = entry;
    const wr_wintab_entry_t *q = query;
    return e->key == q->key && e->start == q->start;
}

static wr_wintab_entry_t *entries(const wr_wintab_t *t)
{
    return t->index.entries;
}

void wr_wintab_init(wr_wintab_t *t)
{
    memset(t, 0, sizeof *t);
    wr_idtab_init(&t->index, &KIND, MIN_CAP, &t->bytes);
}

void wr_wintab_close(wr_wintab_t *t)
{
    wr_free(t->index.entries);
    wr_free(t->free_ids);
    memset(t, 0, sizeof *t);
}

/* The position of (key, start), or of the empty entry that ends its probe run. */
static size_t probe(const wr_wintab_t *t, int32_t key, int64_t start)
{
    wr_wintab_entry_t q = {.start = start, .key = key};
    bool found;
    size_t home = wr_wintab_home(key, start, t->index.cap - 1);
    return wr_idtab_find(&t->index, &KIND, home, same_window, &q, &found);
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
    bool fresh;
    return wr_wintab_put(t, key, start, &fresh);
}

int32_t wr_wintab_put(wr_wintab_t *t, int32_t key, int64_t start, bool *fresh)
{
    wr_wintab_entry_t *e = &entries(t)[probe(t, key, start)];
    *fresh = e->id < 0;
    if (e->id < 0) {
        if (t->open >= WR_WINTAB_MAX) {
            return WEIR_ESTATE;
        }
        if (wr_idtab_should_grow(&t->index, &KIND, (size_t)t->open + 1, 3, 4)) {
            wr_idtab_rehash(&t->index, &KIND, t->index.cap * 2, &t->bytes);
            e = &entries(t)[probe(t, key, start)];
        }
        *e = (wr_wintab_entry_t){.start = start, .key = key, .id = take_id(t)};
        t->open++;
    }
    return e->id;
}

int32_t wr_wintab_find(const wr_wintab_t *t, int32_t key, int64_t start)
{
    return entries(t)[probe(t, key, start)].id;
}

/* Back to the initial size when nothing is open, with ids from 0 again. */
static void trim(wr_wintab_t *t)
{
    if (t->open == 0) {
        /* nothing open: back to the initial size, and ids start again at 0 */
        t->nfree = 0;
        t->next_id = 0;
        if (t->index.cap > MIN_CAP) {
            wr_idtab_rehash(&t->index, &KIND, MIN_CAP, &t->bytes);
        }
    }
}

/* Removes the entry at hole (open, with id). */
static void drop_at(wr_wintab_t *t, size_t hole, int32_t id)
{
    wr_idtab_remove_at(&t->index, &KIND, hole);
    t->open--;
    give_id(t, id);
}

void wr_wintab_trim(wr_wintab_t *t)
{
    trim(t);
}

int32_t wr_wintab_drop(wr_wintab_t *t, int32_t key, int64_t start)
{
    size_t hole = probe(t, key, start);
    int32_t id = entries(t)[hole].id;
    if (id >= 0) {
        drop_at(t, hole, id);
        trim(t);
    }
    return id < 0 ? -1 : id;
}

void wr_wintab_prefetch(const wr_wintab_t *t, int32_t key, int64_t start)
{
    __builtin_prefetch(&entries(t)[wr_wintab_home(key, start, t->index.cap - 1)]);
}

int32_t wr_wintab_gather(const wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                         int32_t *ids)
{
    size_t mask = t->index.cap - 1;
    /* the entries first, all of them: their cache misses overlap instead of queueing */
    for (int32_t i = 0; i < n; i++) {
        __builtin_prefetch(&entries(t)[wr_wintab_home(keys[i], start, mask)]);
    }
    for (int32_t i = 0; i < n; i++) {
        ids[i] = entries(t)[probe(t, keys[i], start)].id;
    }
    return n;
}

int32_t wr_wintab_take(wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                       int32_t *ids)
{
    size_t mask = t->index.cap - 1;
    for (int32_t i = 0; i < n; i++) {
        __builtin_prefetch(&entries(t)[wr_wintab_home(keys[i], start, mask)]);
    }
    for (int32_t i = 0; i < n; i++) {
        size_t hole = probe(t, keys[i], start);
        int32_t id = entries(t)[hole].id;
        ids[i] = id < 0 ? -1 : id;
        if (id >= 0) {
            drop_at(t, hole, id);
        }
    }
    return n;
}

/* --- FFI --------------------------------------------------------------------------------- */

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
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_add(&ft->t, wr_idtab_key_id(key), wr_ms_from_double(start));
}

int32_t weir_wintab_find(const weir_wintab_t *ft, double key, double start)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_find(&ft->t, wr_idtab_key_id(key), wr_ms_from_double(start));
}

int32_t weir_wintab_drop(weir_wintab_t *ft, double key, double start)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_wintab_drop(&ft->t, wr_idtab_key_id(key), wr_ms_from_double(start));
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
    return (int32_t)ft->t.index.cap;
}

int32_t weir_wintab_at(const weir_wintab_t *ft, int32_t i, double *out)
{
    if (i < 0 || (size_t)i >= ft->t.index.cap || !out) {
        return WEIR_EINVAL;
    }
    const wr_wintab_entry_t *e = &entries(&ft->t)[i];
    if (e->id >= 0) {
        out[0] = (double)e->key;
        out[1] = wr_ms_to_double(e->start);
    }
    return e->id;
}

int32_t weir_wintab_take(weir_wintab_t *ft, const int32_t *keys, int32_t n, double start,
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
    return wr_wintab_take(&ft->t, keys, n, wr_ms_from_double(start), ids);
}

void weir_wintab_trim(weir_wintab_t *ft)
{
    wr_wintab_trim(&ft->t);
}
