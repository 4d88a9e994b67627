/* SPDX-License-Identifier: MIT */
/* wintab.c: a linear-probing hash table of (key, start) entries with ids from a free stack.
 * The table grows past 3/4 full and shrinks only when it is empty again:
 * windows fire in bursts (a watermark closes a window of every key at once), and halving while
 * a burst drops entries would rehash again and again, only to grow back as the next windows
 * fill. So a table keeps the size of its peak while anything is open. bytes counts every
 * array. A window opened past every start its key has had is kept apart, on its key's list
 * (wintab.h): in a job whose elements come in time order no window enters the index at all. */
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
    t->keys_max = WR_WINTAB_KEYS_MAX;
    wr_idtab_init(&t->index, &KIND, MIN_CAP, &t->bytes);
}

void wr_wintab_close(wr_wintab_t *t)
{
    wr_free(t->index.entries);
    wr_free(t->free_ids);
    wr_free(t->keys);
    wr_free(t->un);
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

/* The key's record, grown to hold it; NULL for a key id past keys_max (WR_WINTAB_KEYS_MAX, or
 * keys_cap once a growth was refused, under a memory limit or by the account: see grow_un;
 * those keys' windows go into the index, whose own growth asks). */
__attribute__((noinline)) static wr_wintab_key_t *grow_keys(wr_wintab_t *t, int32_t key)
{
    size_t cap = t->keys_cap ? t->keys_cap : 1024;
    while (cap <= (size_t)key) {
        cap *= 2;
    }
    if (wr_mem_limited() || !wr_mem_may_grow(cap * sizeof *t->keys)) { /* as grow_un */
        t->keys_max = t->keys_cap; /* for good: the keys past it have their windows indexed */
        return NULL;
    }
    t->keys = wr_xresize_counted(&t->bytes, t->keys, t->keys_cap, cap, sizeof *t->keys);
    for (size_t j = t->keys_cap; j < cap; j++) {
        t->keys[j] = (wr_wintab_key_t){.top = INT64_MIN, .head = -1, .tail = -1};
    }
    t->keys_cap = cap;
    return &t->keys[key];
}

static inline wr_wintab_key_t *key_rec(wr_wintab_t *t, int32_t key)
{
    if ((size_t)key < t->keys_cap) {
        return &t->keys[key];
    }
    return key < t->keys_max ? grow_keys(t, key) : NULL;
}

/* The unindexed window (key, start)'s id, or -1; *prev the one before it on the key's list (-1:
 * it is the head). A key's list is in increasing start order, and short: the windows a key
 * opened since the last fire of its windows. */
static inline int32_t find_unindexed(const wr_wintab_t *t, int32_t key, int64_t start,
                                     int32_t *prev)
{
    *prev = -1;
    if ((size_t)key >= t->keys_cap) {
        return -1;
    }
    for (int32_t id = t->keys[key].head; id >= 0; id = t->un[id].next) {
        if (t->un[id].start >= start) {
            return t->un[id].start == start ? id : -1;
        }
        *prev = id;
    }
    return -1;
}

/* Room in un[] for id; false (nothing changed) under a memory limit, or when the memory
 * account refuses it. Under a limit every window goes into the index: the lists' arrays
 * (32 bytes a window when each key has one, against the index's 16 at up to 3/4 load) would
 * let the Lua heap meet the limit before any C table asks for its doubling, and only a table's
 * refused doubling lets the job's memory check name the operator holding the most state
 * (tests/badinput/mem-unbounded-keys). TODO(h-typed): an account of the lists' own that
 * reports as a table's does, and then the lists under a limit too. */
__attribute__((noinline)) static bool grow_un(wr_wintab_t *t, int32_t id)
{
    size_t cap = t->un_cap ? t->un_cap : 1024;
    while (cap <= (size_t)id) {
        cap *= 2;
    }
    if (wr_mem_limited() || !wr_mem_may_grow(cap * sizeof *t->un)) {
        return false;
    }
    t->un = wr_xresize_counted(&t->bytes, t->un, t->un_cap, cap, sizeof *t->un);
    t->un_cap = cap;
    return true;
}

/* The id a new window gets next (take_id's, without taking it). */
static inline int32_t next_free_id(const wr_wintab_t *t)
{
    return t->nfree > 0 ? t->free_ids[t->nfree - 1] : t->next_id;
}

/* A new unindexed window (key, start) of key record k, start past k->top, un[] with room for
 * next_free_id: its id. */
static inline int32_t open_unindexed(wr_wintab_t *t, wr_wintab_key_t *k, int64_t start)
{
    int32_t id = take_id(t);
    t->un[id] = (wr_wintab_unindexed_t){.start = start, .next = -1};
    if (k->tail >= 0) {
        t->un[k->tail].next = id;
    } else {
        k->head = id;
    }
    k->tail = id;
    k->top = start;
    t->open++;
    t->unindexed++;
    return id;
}

/* Takes unindexed window id (after prev on key's list) off its list; its id stays taken. */
static inline void unlink_unindexed(wr_wintab_t *t, int32_t key, int32_t id, int32_t prev)
{
    wr_wintab_key_t *k = &t->keys[key];
    int32_t next = t->un[id].next;
    if (prev >= 0) {
        t->un[prev].next = next;
    } else {
        k->head = next;
    }
    if (k->tail == id) {
        k->tail = prev;
    }
    t->unindexed--;
}

/* The entry of (key, start) in the index, put there (id taken) when absent: as eager inserts. */
static inline int32_t put_indexed(wr_wintab_t *t, int32_t key, int64_t start, int32_t id,
                                  bool *fresh)
{
    wr_wintab_entry_t *e = &entries(t)[probe(t, key, start)];
    *fresh = e->id < 0;
    if (e->id < 0) {
        if (id < 0 && t->open >= WR_WINTAB_MAX) {
            return WEIR_ESTATE;
        }
        /* the indexed windows with this one (an unindexed one is already counted open) */
        size_t indexed = (size_t)(t->open - t->unindexed) + (id < 0 ? 1 : 0);
        if (wr_idtab_should_grow(&t->index, &KIND, indexed, 3, 4)) {
            wr_idtab_rehash(&t->index, &KIND, t->index.cap * 2, &t->bytes);
            e = &entries(t)[probe(t, key, start)];
        }
        if (id < 0) {
            id = take_id(t);
            t->open++;
        }
        *e = (wr_wintab_entry_t){.start = start, .key = key, .id = id};
    }
    return e->id;
}

/* By key id, each key's windows by start: an order that depends only on the open windows. */
void wr_wintab_index_all(wr_wintab_t *t)
{
    for (size_t key = 0; key < t->keys_cap && t->unindexed > 0; key++) {
        int32_t id;
        while ((id = t->keys[key].head) >= 0) {
            int64_t start = t->un[id].start;
            unlink_unindexed(t, (int32_t)key, id, -1);
            bool fresh;
            put_indexed(t, (int32_t)key, start, id, &fresh);
            assert(fresh);
        }
    }
}

/* The common case inline, as wr_wintab_put has it first: a window past its key's top start
 * (every new window of elements in time order) takes the next id onto its key's list. A leaf
 * that saves no register (the element path of a tumbling window calls it once per new
 * window, through weir_wintab_add); anything else goes to wr_wintab_put. */
int32_t wr_wintab_add(wr_wintab_t *t, int32_t key, int64_t start)
{
    if ((size_t)key < t->keys_cap && start > t->keys[key].top &&
        (size_t)next_free_id(t) < t->un_cap && t->open < WR_WINTAB_MAX) {
        return open_unindexed(t, &t->keys[key], start);
    }
    bool fresh;
    return wr_wintab_put(t, key, start, &fresh);
}

int32_t wr_wintab_put(wr_wintab_t *t, int32_t key, int64_t start, bool *fresh)
{
    wr_wintab_key_t *k = key_rec(t, key);
    if (k) {
        if (start > k->top && ((size_t)next_free_id(t) < t->un_cap ||
                               grow_un(t, next_free_id(t)))) {
            if (t->open >= WR_WINTAB_MAX) {
                *fresh = true;
                return WEIR_ESTATE;
            }
            *fresh = true;
            return open_unindexed(t, k, start);
        }
        if (start > k->top) { /* un[] refused to grow: into the index, still the key's top */
            k->top = start;
        }
        int32_t prev;
        int32_t id = k->head >= 0 ? find_unindexed(t, key, start, &prev) : -1;
        if (id >= 0) {
            *fresh = false;
            return id;
        }
    }
    return put_indexed(t, key, start, -1, fresh);
}

int32_t wr_wintab_find(const wr_wintab_t *t, int32_t key, int64_t start)
{
    int32_t prev;
    int32_t id = find_unindexed(t, key, start, &prev);
    return id >= 0 ? id : entries(t)[probe(t, key, start)].id;
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

/* Drops unindexed window id (after prev on key's list). */
static void drop_unindexed(wr_wintab_t *t, int32_t key, int32_t id, int32_t prev)
{
    unlink_unindexed(t, key, id, prev);
    t->open--;
    give_id(t, id);
}

int32_t wr_wintab_drop(wr_wintab_t *t, int32_t key, int64_t start)
{
    int32_t prev;
    int32_t id = find_unindexed(t, key, start, &prev);
    if (id >= 0) {
        drop_unindexed(t, key, id, prev);
        trim(t);
        return id;
    }
    size_t hole = probe(t, key, start);
    id = entries(t)[hole].id;
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

/* Whether (key, start) is its key's first unindexed window: the common case of a fire. */
static inline bool is_first_unindexed(const wr_wintab_t *t, int32_t key, int64_t start)
{
    if ((size_t)key >= t->keys_cap) {
        return false;
    }
    int32_t head = t->keys[key].head;
    return head >= 0 && t->un[head].start == start;
}

int32_t wr_wintab_gather(const wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                         int32_t *ids)
{
    size_t mask = t->index.cap - 1;
    /* the entries first, all of them: their cache misses overlap instead of queueing */
    for (int32_t i = 0; i < n; i++) {
        if (!is_first_unindexed(t, keys[i], start)) {
            __builtin_prefetch(&entries(t)[wr_wintab_home(keys[i], start, mask)]);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        ids[i] = wr_wintab_find(t, keys[i], start);
    }
    return n;
}

/* Room in free_ids for n more ids: a take gives back up to n. */
static void reserve_free_ids(wr_wintab_t *t, int32_t n)
{
    if (t->free_cap - t->nfree >= n) {
        return;
    }
    int32_t cap = t->free_cap ? t->free_cap : 64;
    while (cap - t->nfree < n) {
        cap *= 2;
    }
    t->free_ids = wr_xresize_counted(&t->bytes, t->free_ids, (size_t)t->free_cap, (size_t)cap,
                                     sizeof *t->free_ids);
    t->free_cap = cap;
}

/* A fire takes its key's first unindexed window, in the usual case (windows opened in time
 * order): unlinked from the list's head and its id given back in place, with the counts kept
 * in locals (the stores through the arrays could alias them) and written back before anything
 * else reads them. The rest goes through find_unindexed and the index, as wr_wintab_drop. */
int32_t wr_wintab_take(wr_wintab_t *t, const int32_t *keys, int32_t n, int64_t start,
                       int32_t *ids)
{
    size_t mask = t->index.cap - 1;
    for (int32_t i = 0; i < n; i++) {
        if (!is_first_unindexed(t, keys[i], start)) {
            __builtin_prefetch(&entries(t)[wr_wintab_home(keys[i], start, mask)]);
        }
    }
    reserve_free_ids(t, n);
    wr_wintab_key_t *krec = t->keys;
    wr_wintab_unindexed_t *un = t->un;
    int32_t *free_ids = t->free_ids;
    size_t keys_cap = t->keys_cap;
    int32_t nfree = t->nfree;
    int32_t taken = 0; /* off the lists since the counts were last written back */
    for (int32_t i = 0; i < n; i++) {
        int32_t key = keys[i];
        if ((size_t)key < keys_cap) {
            wr_wintab_key_t *k = &krec[key];
            int32_t id = k->head;
            if (id >= 0 && un[id].start == start) {
                k->head = un[id].next;
                if (k->tail == id) {
                    k->tail = -1;
                }
                free_ids[nfree++] = id;
                taken++;
                ids[i] = id;
                continue;
            }
        }
        t->nfree = nfree;
        t->open -= taken;
        t->unindexed -= taken;
        taken = 0;
        int32_t prev;
        int32_t id = find_unindexed(t, key, start, &prev);
        if (id >= 0) {
            ids[i] = id;
            drop_unindexed(t, key, id, prev);
        } else {
            size_t hole = probe(t, key, start);
            id = entries(t)[hole].id;
            ids[i] = id < 0 ? -1 : id;
            if (id >= 0) {
                drop_at(t, hole, id);
            }
        }
        nfree = t->nfree; /* the reserve keeps free_ids where it is */
    }
    t->nfree = nfree;
    t->open -= taken;
    t->unindexed -= taken;
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
    /* The element path's case first (a tumbling window's new window): a start well within
     * int64 converts by truncation, as wr_ms_from_double does it there, with one test that
     * NaN fails too; the rest (ends of time, NaN) takes the general conversion below. */
    if (start > -0x1p62 && start < 0x1p62) {
        int32_t id = wr_idtab_key_id(key);
        return id < 0 ? WEIR_EINVAL : wr_wintab_add(&ft->t, id, (int64_t)start);
    }
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

int32_t weir_wintab_capacity(weir_wintab_t *ft)
{
    if (ft->t.unindexed > 0) {
        wr_wintab_index_all(&ft->t);
    }
    return (int32_t)ft->t.index.cap;
}

int32_t weir_wintab_at(weir_wintab_t *ft, int32_t i, double *out)
{
    if (ft->t.unindexed > 0) {
        wr_wintab_index_all(&ft->t);
    }
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
