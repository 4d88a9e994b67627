/* SPDX-License-Identifier: MIT */
/* slices.c: per key sorted parallel arrays of slices (appends at the end, drops from the front
 * move the head, other inserts and drops move the run), key records with a free list, and an index
 * from key to record that grows past 1/2 full and shrinks only when empty (as wintab.c, for
 * the same reason: a watermark drops a slice of every key at once). bytes counts every array. */
#include "slices.h"
#include "ms.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "weir.h"

enum { MIN_INDEX = 32, MIN_SLICES = 4 };

static void *resize(wr_slices_t *t, void *p, size_t old_n, size_t new_n, size_t size)
{
    return wr_xresize_counted(&t->bytes, p, old_n, new_n, size);
}

static void release(wr_slices_t *t, void *p, size_t n, size_t size)
{
    wr_release_counted(&t->bytes, p, n, size);
}

/* The functions that only prefetch: inlined always. GCC takes a function whose only effect is
 * __builtin_prefetch for one without side effects (IPA pure-const) and drops its calls when it
 * has not inlined it first: as plain static functions, the fire's and the apply's prefetches
 * were not in the binary. */
#define PREFETCHER static inline __attribute__((always_inline))

enum { LINE = 64, PAD_SLICES = 2 }; /* a block has PAD_SLICES more: room to align it */

static size_t align_off(const void *p)
{
    return (size_t)(-(uintptr_t)p & (uintptr_t)(LINE - 1));
}

/* Points k at a new block of cap slices, aligned to a line (the old block is the caller's). */
static void new_block(wr_slices_t *t, wr_slice_key_t *k, int32_t cap)
{
    char *raw = resize(t, NULL, 0, (size_t)cap + PAD_SLICES, sizeof *k->s);
    size_t off = align_off(raw);
    k->s = (wr_slice_t *)(void *)(raw + off);
    k->s_off = (int16_t)off;
    k->cap = cap;
}

static void free_block(wr_slices_t *t, wr_slice_t *s, int32_t s_off, int32_t cap)
{
    release(t, (char *)s - s_off, (size_t)cap + PAD_SLICES, sizeof *s);
}

/* Grows the key records to cap, keeping them aligned to a line (one record, one line): the
 * allocation has one record more, and the records move when realloc moved them off the line. */
static void grow_keys(wr_slices_t *t, int32_t cap)
{
    size_t old_n = t->keys_cap ? (size_t)t->keys_cap + 1 : 0;
    char *raw = resize(t, t->keys_raw, old_n, (size_t)cap + 1, sizeof *t->keys);
    size_t off = align_off(raw);
    if (old_n > 0 && off != t->keys_off) {
        memmove(raw + off, raw + t->keys_off, (size_t)t->keys_len * sizeof *t->keys);
    }
    t->keys_raw = raw;
    t->keys_off = off;
    t->keys = (wr_slice_key_t *)(void *)(raw + off);
    t->keys_cap = cap;
}

static void free_keys(wr_slices_t *t)
{
    if (t->keys_raw) {
        release(t, t->keys_raw, (size_t)t->keys_cap + 1, sizeof *t->keys);
    }
    t->keys_raw = NULL;
    t->keys = NULL;
    t->keys_off = 0;
}

/* Slice at position p of k: the slices are a ring of cap positions, positions [head, head +
 * len) in start order, head in [0, cap), so p is in [0, 2 cap) (a compare, not a modulo: cap
 * need not be a power of two, wr_slices_span). */
static inline uint32_t ring_index(const wr_slice_key_t *k, int32_t p)
{
    uint32_t i = (uint32_t)p;
    uint32_t cap = (uint32_t)k->cap;
    return i >= cap ? i - cap : i;
}
#define AT(k, p) ((k)->s[ring_index((k), (p))])

/* Moves positions [from, end) of k one up (up > 0) or one down, in place. */
static void shift(wr_slice_key_t *k, int32_t from, int32_t end, int up)
{
    if (up) {
        for (int32_t p = end; p > from; p--) {
            AT(k, p) = AT(k, p - 1);
        }
    } else {
        for (int32_t p = from; p < end - 1; p++) {
            AT(k, p) = AT(k, p + 1);
        }
    }
}

/* Positions are relative to the ring's start: moving the head by d moves the queue's too. */
static void rebase(wr_slice_key_t *k, int32_t d)
{
    k->head -= d;
    if (k->qlo >= 0) {
        k->qlo -= d;
        k->qmid -= d;
        k->qhi -= d;
    }
}

static size_t home_of(int32_t key, size_t mask)
{
    uint64_t h = ((uint64_t)(uint32_t)key + 1) * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 32) & mask;
}

static size_t entry_home(const void *entry, size_t mask)
{
    return home_of(((const wr_slices_entry_t *)entry)->key, mask);
}

static const wr_idtab_kind_t KIND = {
    .size = sizeof(wr_slices_entry_t),
    .id_at = offsetof(wr_slices_entry_t, id),
    .home = entry_home,
};

static bool same_key(const void *entry, const void *query)
{
    return ((const wr_slices_entry_t *)entry)->key == *(const int32_t *)query;
}

static wr_slices_entry_t *entries(const wr_slices_t *t)
{
    return t->index.entries;
}

void wr_slices_init(wr_slices_t *t)
{
    memset(t, 0, sizeof *t);
    t->free_key = -1;
    wr_idtab_init(&t->index, &KIND, MIN_INDEX, &t->bytes);
}

void wr_slices_span(wr_slices_t *t, int32_t k)
{
    t->span = k >= 1 && k < WR_SLICES_MAX ? k : 0;
    wr_slices_running(t, t->running);
}

void wr_slices_running(wr_slices_t *t, int on_)
{
    t->running = on_ != 0;
    t->exact = t->span > 0 ? 9007199254740992.0 / t->span : 0; /* 2^53 / span */
}

void wr_slices_close(wr_slices_t *t)
{
    for (int32_t i = 0; i < t->keys_len; i++) {
        if (t->keys[i].len >= 0) {
            free_block(t, t->keys[i].s, t->keys[i].s_off, t->keys[i].cap);
        }
    }
    free_keys(t);
    wr_free(t->dropped);
    wr_free(t->direct);
    wr_free(t->index.entries);
    memset(t, 0, sizeof *t);
    t->free_key = -1;
}

static size_t probe(const wr_slices_t *t, int32_t key)
{
    bool found;
    return wr_idtab_find(&t->index, &KIND, home_of(key, t->index.cap - 1), same_key, &key, &found);
}

/* key's record id (-1: none): from direct when it covers key, else from the index */
static int32_t lookup(const wr_slices_t *t, int32_t key)
{
    if ((uint32_t)key < (uint32_t)t->direct_cap) {
        return t->direct[key];
    }
    return entries(t)[probe(t, key)].id;
}

/* Where a lookup of key starts reading (a prefetch hint). */
static const void *lookup_line(const wr_slices_t *t, int32_t key, size_t mask)
{
    if ((uint32_t)key < (uint32_t)t->direct_cap) {
        return &t->direct[key];
    }
    return &entries(t)[home_of(key, mask)];
}

/* Grows direct to cover key when that keeps it within 4 entries per index entry, filling the
 * new range from the index (amortized O(1): the range doubles). */
static void direct_cover(wr_slices_t *t, int32_t key)
{
    if (key < t->direct_cap) {
        return;
    }
    size_t cap = t->direct_cap ? (size_t)t->direct_cap : 64;
    while (cap <= (size_t)key) {
        cap *= 2;
    }
    if (cap > 4 * t->index.cap || cap > INT32_MAX) {
        return; /* sparse keys: the index alone */
    }
    size_t old = (size_t)t->direct_cap;
    int32_t *d = resize(t, t->direct, old, cap, sizeof *d);
    for (size_t i = old; i < cap; i++) {
        d[i] = -1;
    }
    for (size_t i = 0; i < t->index.cap; i++) {
        const wr_slices_entry_t *e = &entries(t)[i];
        if (e->id >= 0 && (size_t)e->key >= old && (size_t)e->key < cap) {
            d[e->key] = e->id;
        }
    }
    t->direct = d;
    t->direct_cap = (int32_t)cap;
}

static wr_slice_key_t *find_key(const wr_slices_t *t, int32_t key)
{
    int32_t id = lookup(t, key);
    return id >= 0 ? &t->keys[id] : NULL;
}

static wr_slice_key_t *get_key(wr_slices_t *t, int32_t key)
{
    if ((uint32_t)key < (uint32_t)t->direct_cap && t->direct[key] >= 0) {
        return &t->keys[t->direct[key]];
    }
    size_t i = probe(t, key);
    if (entries(t)[i].id >= 0) {
        return &t->keys[entries(t)[i].id];
    }
    if (wr_idtab_should_grow(&t->index, &KIND, (size_t)t->nkeys + 1, 1, 2)) {
        wr_idtab_rehash(&t->index, &KIND, t->index.cap * 2, &t->bytes);
        i = probe(t, key);
    }
    int32_t id;
    if (t->free_key >= 0) {
        id = t->free_key;
        t->free_key = t->keys[id].head;
    } else {
        if (t->keys_len == t->keys_cap) {
            grow_keys(t, t->keys_cap ? t->keys_cap * 2 : 16);
        }
        id = t->keys_len++;
    }
    wr_slice_key_t *k = &t->keys[id];
    *k = (wr_slice_key_t){.key = key, .head = 0, .len = 0, .qlo = -1};
    new_block(t, k, MIN_SLICES);
    entries(t)[i] = (wr_slices_entry_t){.id = id, .key = key};
    t->nkeys++;
    direct_cover(t, key);
    if (key < t->direct_cap) {
        t->direct[key] = id;
    }
    return k;
}

static void free_key(wr_slices_t *t, wr_slice_key_t *k)
{
    size_t hole = probe(t, k->key);
    int32_t id = entries(t)[hole].id;
    wr_idtab_remove_at(&t->index, &KIND, hole);
    if (k->key < t->direct_cap) {
        t->direct[k->key] = -1;
    }
    free_block(t, k->s, k->s_off, k->cap);
    k->s = NULL;
    k->len = -1;
    k->head = t->free_key;
    t->free_key = id;
    t->nkeys--;
    if (t->nkeys == 0) {
        /* nothing open: back to the initial allocation */
        free_keys(t);
        t->keys_len = t->keys_cap = 0;
        t->free_key = -1;
        release(t, t->direct, (size_t)t->direct_cap, sizeof *t->direct);
        t->direct = NULL;
        t->direct_cap = 0;
        if (t->index.cap > MIN_INDEX) {
            wr_idtab_close(&t->index, &KIND, &t->bytes);
            wr_idtab_init(&t->index, &KIND, MIN_INDEX, &t->bytes);
        }
    }
}

/* First position p in [head, head + len) with start[p] >= start (head + len if none),
 * trying the end first: new slices mostly come in start order, and the key's last slice is
 * the one its elements' counts and touches name (weir.aggwindow keeps it). */
static int32_t lower_bound(const wr_slice_key_t *k, int64_t start)
{
    int32_t lo = k->head;
    int32_t hi = k->head + k->len;
    if (hi > lo && k->last <= start) {
        return k->last < start ? hi : hi - 1;
    }
    if (hi > lo && AT(k, lo).start >= start) {
        return lo;
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        if (AT(k, mid).start < start) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* lower_bound trying the front first: windows fire, and slices go, from the oldest slice. */
static int32_t lower_bound_front(const wr_slice_key_t *k, int64_t start)
{
    if (k->len > 0 && AT(k, k->head).start >= start) {
        return k->head;
    }
    return lower_bound(k, start);
}

/* The capacity of a full ring grown: twice, or the span's k when that lies between (a key
 * whose fire drops its oldest slice before its next insert), then one more at a time up to
 * k + 8 (k + 1: one whose insert comes first; more: one whose fires lag its inserts by a few
 * slices, the watermark coming later than the elements), so that a ring stays one position
 * more than the key keeps and its insert goes beside the slice its fire dropped; then by a
 * quarter (at least 4) up to 2k, then twice on. */
static int32_t grown_cap(const wr_slices_t *t, int32_t cap)
{
    int32_t k = t->span;
    if (k > 0 && cap < k && (int64_t)cap * 2 > k) {
        return k;
    }
    if (k > 0 && cap >= k && cap < k + 8) {
        return cap + 1;
    }
    if (k > 0 && cap > k && cap < 2 * k) {
        int32_t more = cap / 4 > 4 ? cap / 4 : 4;
        return cap + more;
    }
    return cap * 2;
}

/* wr_slices_acc, with the slice's key record and position (valid as the pointer), and for a
 * new slice *prevp the start of the key's slice before it (INT64_MIN: none), read without the
 * ring's line when the slice is appended. */
static double *acc_in(wr_slices_t *t, int32_t key, int64_t start, int *fresh,
                      wr_slice_key_t **kp, int32_t *pp, int64_t *prevp)
{
    wr_slice_key_t *k = get_key(t, key);
    int32_t p = lower_bound(k, start);
    if (p < k->head + k->len && AT(k, p).start == start) {
        AT(k, p).count++;
        t->elements++;
        *fresh = 0;
        *kp = k;
        *pp = p;
        return &AT(k, p).acc;
    }
    if (k->len >= WR_SLICES_MAX) {
        return NULL;
    }
    if (k->len == k->cap) {
        /* full: a ring twice the size (or the span's), the run at its start */
        int32_t cap = grown_cap(t, k->cap);
        wr_slice_key_t old = *k;
        new_block(t, k, cap);
        for (int32_t q = 0; q < old.len; q++) {
            k->s[q] = AT(&old, old.head + q);
        }
        free_block(t, old.s, old.s_off, old.cap);
        p -= k->head;
        rebase(k, k->head);
    }
    if (p < k->qhi) { /* into or before the fire queue: rebuilt at the next fire */
        k->qlo = -1;
    }
    int32_t end = k->head + k->len;
    if (p == end) {
        *prevp = k->len > 0 ? k->last : INT64_MIN;
        k->last = start;
    } else {
        *prevp = p > k->head ? AT(k, p - 1).start : INT64_MIN;
    }
    shift(k, p, end, 1);
    AT(k, p) = (wr_slice_t){.start = start, .acc = NAN, .agg = NAN, .count = 1};
    k->len++;
    t->open++;
    t->elements++;
    *fresh = 1;
    *kp = k;
    *pp = p;
    return &AT(k, p).acc;
}

double *wr_slices_acc(wr_slices_t *t, int32_t key, int64_t start, int *fresh)
{
    wr_slice_key_t *k;
    int32_t p;
    int64_t prev;
    return acc_in(t, key, start, fresh, &k, &p, &prev);
}

/* How far ahead wr_slices_apply asks for a key's record (2 APPLY_AHEAD elements) and for the
 * line its element's slice goes to (APPLY_AHEAD): a batch's inserts touch lines that were last
 * touched a slide of event time ago, after the other keys' fires, so their misses overlap as
 * the fire's do instead of queueing one per element. */
enum { APPLY_AHEAD = 16 };

PREFETCHER void prefetch_record(const wr_slices_t *t, int32_t key)
{
    if ((uint32_t)key < (uint32_t)t->direct_cap) {
        int32_t id = t->direct[key];
        if (id >= 0) {
            __builtin_prefetch(&t->keys[id], 1);
        }
    } else if (t->index.cap > 0) {
        __builtin_prefetch(lookup_line(t, key, t->index.cap - 1));
    }
}

/* The line an element of key at start writes: its key's last slice or the one after it. */
PREFETCHER void prefetch_insert(const wr_slices_t *t, int32_t key, int64_t start)
{
    int32_t id = lookup(t, key);
    if (id < 0) {
        return;
    }
    const wr_slice_key_t *k = &t->keys[id];
    int32_t end = k->head + k->len;
    if (k->len > 0 && k->last == start) {
        __builtin_prefetch(&AT(k, end - 1), 1);
    } else if (k->len < k->cap) {
        __builtin_prefetch(&AT(k, end), 1);
    }
}

static inline double add_builtin(int32_t kind, double acc, double x)
{
    switch (kind) {
    case WEIR_AGG_COUNT:
        return acc + 1;
    case WEIR_AGG_SUM:
        return acc + x;
    case WEIR_AGG_MIN:
        return x < acc ? x : acc;
    default:
        return x > acc ? x : acc;
    }
}

int32_t wr_slices_apply(wr_slices_t *t, int32_t kind, int32_t n, const int32_t *keys,
                        const double *starts, const double *x, int32_t *fresh, double *near)
{
    double identity = kind == WEIR_AGG_MIN ? INFINITY : kind == WEIR_AGG_MAX ? -INFINITY : 0;
    for (int32_t i = 0; i < n && i < 2 * APPLY_AHEAD; i++) {
        prefetch_record(t, keys[i]);
    }
    int32_t m = 0;
    for (int32_t i = 0; i < n; i++) {
        if (i + 2 * APPLY_AHEAD < n) {
            prefetch_record(t, keys[i + 2 * APPLY_AHEAD]);
        }
        if (i + APPLY_AHEAD < n) {
            prefetch_insert(t, keys[i + APPLY_AHEAD],
                            wr_ms_from_double(starts[i + APPLY_AHEAD]));
        }
        int64_t start = wr_ms_from_double(starts[i]);
        double xi = x ? x[i] : 0;
        uint32_t key = (uint32_t)keys[i];
        if (key < (uint32_t)t->direct_cap && t->direct[key] >= 0) {
            /* into the key's last slice (a hot key's elements): acc_in's first case, inline */
            wr_slice_key_t *k = &t->keys[t->direct[key]];
            if (k->len > 0 && k->last == start) {
                wr_slice_t *sl = &AT(k, k->head + k->len - 1);
                sl->count++;
                t->elements++;
                sl->acc = add_builtin(kind, sl->acc, xi);
                continue;
            }
            if (k->len > 0 && k->last < start && k->len < k->cap) {
                /* a new last slice with room in the ring (a key sliding on: its element of
                 * the next slice): acc_in's append, inline. After the fire queue (which ends
                 * at or before the run's end), so the queue holds. */
                int32_t p = k->head + k->len;
                AT(k, p) = (wr_slice_t){.start = start, .acc = add_builtin(kind, identity, xi),
                                        .agg = NAN, .count = 1};
                fresh[m] = i;
                near[2 * m] = wr_ms_to_double(k->last);
                near[2 * m + 1] = INFINITY;
                m++;
                k->last = start;
                k->len++;
                t->open++;
                t->elements++;
                continue;
            }
        }
        int f = 0;
        wr_slice_key_t *k;
        int32_t p;
        int64_t prev = INT64_MIN;
        double *acc = acc_in(t, keys[i], start, &f, &k, &p, &prev);
        if (!acc) {
            return -(i + 1);
        }
        if (f) {
            *acc = identity;
            fresh[m] = i;
            near[2 * m] = prev != INT64_MIN ? wr_ms_to_double(prev) : -INFINITY;
            near[2 * m + 1] =
                p + 1 < k->head + k->len ? wr_ms_to_double(AT(k, p + 1).start) : INFINITY;
            m++;
        }
        *acc = add_builtin(kind, *acc, xi);
    }
    return m;
}

int32_t wr_slices_range(const wr_slices_t *t, int32_t key, int64_t lo, int64_t hi, double *out,
                        int32_t max)
{
    const wr_slice_key_t *k = find_key(t, key);
    if (!k) {
        return 0;
    }
    int32_t end = k->head + k->len;
    int32_t n = 0;
    for (int32_t p = lower_bound_front(k, lo); p < end && AT(k, p).start < hi; p++, n++) {
        if (n < max) {
            out[n] = AT(k, p).acc;
        }
    }
    return n;
}

void wr_slices_neighbors(const wr_slices_t *t, int32_t key, int64_t start, int64_t *prev,
                         int64_t *next)
{
    *prev = INT64_MIN;
    *next = INT64_MAX;
    const wr_slice_key_t *k = find_key(t, key);
    if (!k) {
        return;
    }
    int32_t end = k->head + k->len;
    int32_t p = lower_bound(k, start);
    if (p > k->head) {
        *prev = AT(k, p - 1).start;
    }
    if (p < end && AT(k, p).start == start) {
        p++;
    }
    if (p < end) {
        *next = AT(k, p).start;
    }
}

/* Removes the slice at position p of k, keeping its fire queue when it can: a drop at the
 * head before the queue or at its front's first slice (a front pop), or after the queue. */
static void drop_at(wr_slices_t *t, wr_slice_key_t *k, int32_t p)
{
    int32_t end = k->head + k->len;
    t->open--;
    t->elements -= AT(k, p).count;
    if (k->qlo >= 0 && p < k->qhi) {
        if (p == k->qlo && p < k->qmid && p == k->head) {
            if (k->run) {
                k->back -= AT(k, p).acc; /* exact: wr_slices_running */
            }
            k->qlo++;
        } else if (p >= k->qlo || p != k->head) {
            k->qlo = -1;
        }
    }
    if (p == end - 1 && k->len > 1) {
        k->last = AT(k, p - 1).start; /* the last goes: the one before it is last now */
    }
    if (p == k->head) {
        k->head++;
        if (k->head == k->cap) {
            rebase(k, k->cap);
        }
    } else {
        shift(k, p, end, 0);
    }
    k->len--;
    if (k->len == 0) {
        free_key(t, k);
    }
}

int wr_slices_drop(wr_slices_t *t, int32_t key, int64_t start)
{
    wr_slice_key_t *k = find_key(t, key);
    if (!k) {
        return 0;
    }
    int32_t p = lower_bound_front(k, start);
    int32_t end = k->head + k->len;
    if (p == end || AT(k, p).start != start) {
        return 0;
    }
    drop_at(t, k, p);
    return 1;
}

int wr_slices_count_add(wr_slices_t *t, int32_t key, int64_t start, int32_t n)
{
    wr_slice_key_t *k = find_key(t, key);
    if (!k) {
        return 0;
    }
    int32_t p = lower_bound(k, start);
    if (p == k->head + k->len || AT(k, p).start != start) {
        return 0;
    }
    int64_t c = (int64_t)AT(k, p).count + n;
    c = c < 0 ? 0 : c > INT32_MAX ? INT32_MAX : c;
    t->elements += c - AT(k, p).count;
    AT(k, p).count = (int32_t)c;
    return 1;
}

int64_t wr_slices_gather(const wr_slices_t *t, const int32_t *keys, int32_t n, int64_t lo,
                         int64_t hi, double *out, int64_t cap, int32_t *off, int32_t *scratch)
{
    /* In passes, so that the cache misses of n keys overlap: index entries, then key records,
     * then the keys' arrays, then the copy. */
    size_t mask = t->index.cap - 1;
    for (int32_t i = 0; i < n; i++) {
        __builtin_prefetch(lookup_line(t, keys[i], mask));
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t id = lookup(t, keys[i]);
        scratch[i] = id;
        if (id >= 0) {
            __builtin_prefetch(&t->keys[id]);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        if (scratch[i] >= 0) {
            const wr_slice_key_t *k = &t->keys[scratch[i]];
            __builtin_prefetch(&AT(k, k->head));
        }
    }
    int64_t total = 0;
    for (int32_t i = 0; i < n; i++) {
        off[i] = (int32_t)(total < INT32_MAX ? total : INT32_MAX);
        if (scratch[i] < 0) {
            continue;
        }
        const wr_slice_key_t *k = &t->keys[scratch[i]];
        int32_t end = k->head + k->len;
        for (int32_t p = lower_bound_front(k, lo); p < end && AT(k, p).start < hi; p++, total++) {
            if (total < cap) {
                out[total] = AT(k, p).acc;
            }
        }
    }
    off[n] = (int32_t)(total < INT32_MAX ? total : INT32_MAX);
    return total;
}

/* An accumulator a running sum may take (wr_slices_running): a whole number, not -0, of at
 * most t->exact in magnitude (NaN fails the first test). */
static inline bool exact_acc(const wr_slices_t *t, double a)
{
    if (!(fabs(a) <= t->exact)) {
        return false;
    }
    /* whole and not -0: the same bits as its integer's double (-0 gives +0) */
    double w = (double)(int64_t)a;
    uint64_t ab;
    uint64_t wb;
    memcpy(&ab, &a, sizeof ab);
    memcpy(&wb, &w, sizeof wb);
    return ab == wb;
}

/* The window [pl, ph) of a fire, found from the queue's ends when the window moved on from
 * it (queued), else by a search; the slices between the queue's and the window's ends are
 * walked over. */
static inline bool moved_on(const wr_slice_key_t *k, int64_t lo, int64_t hi)
{
    return k->qlo >= 0 && (k->qlo == k->head || AT(k, k->qlo - 1).start < lo) &&
           (k->qhi == k->head || hi >= k->qend || AT(k, k->qhi - 1).start < hi);
}

/* fire_key with a running sum (wr_slices_running): the window's sum from the queue's, minus
 * the slices it lost and plus those it gained, into *res, without ops; 0 when one of the
 * slices it adds is not exact_acc (nothing changed then but the key's queue, gone). */
static int fire_run(wr_slices_t *t, wr_slice_key_t *k, int64_t lo, int64_t hi, double *res,
                    int32_t *flag, int32_t *plp)
{
    int32_t end = k->head + k->len;
    int32_t pl;
    int32_t ph;
    double sum = 0;
    if (k->run && moved_on(k, lo, hi)) {
        sum = k->back;
        pl = k->qlo;
        while (pl < end && AT(k, pl).start < lo) {
            if (pl < k->qhi) {
                sum -= AT(k, pl).acc;
            }
            pl++;
        }
        if (pl >= k->qhi) {
            sum = 0; /* no slice of the queue is left */
            ph = pl;
        } else {
            ph = k->qhi;
        }
    } else {
        pl = lower_bound_front(k, lo);
        ph = pl;
    }
    while (ph < end && AT(k, ph).start < hi) {
        double a = AT(k, ph).acc;
        if (!exact_acc(t, a)) {
            k->qlo = -1;
            k->run = 0;
            return 0;
        }
        sum += a;
        ph++;
    }
    *plp = pl;
    if (pl == ph) {
        k->qlo = -1;
        k->run = 0;
        *flag = 0;
        return 1;
    }
    *res = sum;
    k->qlo = pl;
    k->qmid = k->qhi = ph;
    k->qend = hi;
    k->back = sum;
    k->run = 1;
    *flag = WR_SLICES_HAS;
    return 1;
}

/* fire_key's common case with a running sum, without its general steps: a key whose queue
 * starts at its head (its last fire dropped the slice before it) and whose window moved on
 * (hi at or past the queue's), the slices before lo subtracted, those up to hi added, slice
 * lo dropped when it is the head; as fire_run and fire_key's drop give it, step for step. 0
 * when the key is not in that case or a slice it adds is not exact_acc: nothing changed then
 * (fire_key does it). */
static inline int fire_slide(wr_slices_t *t, wr_slice_key_t *k, int64_t lo, int64_t hi,
                             int drop, double *res, int32_t *flag, wr_slice_t *dropped)
{
    /* the record's fields in locals: the stores through res, flag and dropped could alias
     * them for the compiler, which would load each again after each */
    int32_t head = k->head;
    if (!k->run || k->qlo != head || hi < k->qend) {
        return 0;
    }
    wr_slice_t *s = k->s;
    uint32_t cap = (uint32_t)k->cap;
    int32_t qhi = k->qhi;
    int32_t end = head + k->len;
#define SLOT(p) (&s[(uint32_t)(p) >= cap ? (uint32_t)(p) - cap : (uint32_t)(p)])
    double sum = k->back;
    int32_t pl = head;
    while (pl < end && SLOT(pl)->start < lo) {
        if (pl < qhi) {
            sum -= SLOT(pl)->acc;
        }
        pl++;
    }
    int32_t ph = qhi;
    if (pl >= qhi) {
        sum = 0; /* no slice of the queue is left */
        ph = pl;
    }
    for (; ph < end; ph++) {
        const wr_slice_t *sl = SLOT(ph);
        if (sl->start >= hi) {
            break;
        }
        if (!exact_acc(t, sl->acc)) {
            return 0;
        }
        sum += sl->acc;
    }
    int32_t f = 0;
    int32_t qlo = -1;
    if (pl < ph) {
        *res = sum;
        qlo = pl;
        k->qmid = k->qhi = ph;
        k->qend = hi;
        f = WR_SLICES_HAS;
    } else {
        k->run = 0;
    }
    const wr_slice_t *first = pl < end ? SLOT(pl) : NULL;
#undef SLOT
    if (drop && (!first || first->start != lo)) {
        f |= WR_SLICES_DROPPED;
    } else if (drop && pl == head) {
        /* drop_at of the head, which is the queue's first slice when there is a queue */
        int32_t len = end - head - 1;
        f |= len == 0 ? WR_SLICES_DROPPED | WR_SLICES_GONE : WR_SLICES_DROPPED;
        *dropped = *first;
        t->open--;
        t->elements -= first->count;
        if (qlo >= 0) {
            sum -= first->acc;
            qlo++;
        }
        k->back = sum;
        k->qlo = qlo;
        k->len = len;
        k->head = head + 1;
        if (head + 1 == (int32_t)cap) {
            rebase(k, (int32_t)cap);
        }
        if (len == 0) {
            free_key(t, k);
        }
        *flag = f;
        return 1;
    }
    k->back = sum;
    k->qlo = qlo;
    *flag = f;
    return 1;
}

/* One key's fire of [lo, hi) (wr_slices_fire): its ops from ops[*nops] on, its accumulator
 * into *res; 0 when they would not fit in cap (nothing changed then, *need says how many). */
static int fire_key(wr_slices_t *t, wr_slice_key_t *k, int64_t lo, int64_t hi, int drop,
                    double *res, int32_t *flag, wr_slices_op_t *ops, int32_t cap, int32_t *nops,
                    int32_t *need, wr_slice_t *dropped)
{
    int32_t end = k->head + k->len;
    bool queued = k->qlo >= 0;
    int32_t pl;
    int32_t ph;
    if (t->running && (!queued || k->run) && fire_run(t, k, lo, hi, res, flag, &pl)) {
        goto dropping;
    }
    queued = k->qlo >= 0;
    /* the window's run [pl, ph): walked on from the queue's ends when the window moved on */
    if (moved_on(k, lo, hi)) {
        pl = k->qlo;
        while (pl < end && AT(k, pl).start < lo) {
            pl++;
        }
        ph = pl > k->qhi ? pl : k->qhi;
    } else {
        queued = false;
        pl = lower_bound_front(k, lo);
        ph = pl;
    }
    while (ph < end && AT(k, ph).start < hi) {
        ph++;
    }
    *flag = 0;
    if (pl == ph) {
        k->qlo = -1;
    } else if (queued && pl < k->qmid) {
        /* on from the queue: pop the front to pl, push [qhi, ph) onto the back */
        int32_t n = ph - k->qhi + 1;
        if (*nops + n > cap) {
            *need = n;
            return 0;
        }
        bool back = k->qmid < k->qhi;
        for (int32_t p = k->qhi; p < ph; p++) {
            if (back) {
                ops[(*nops)++] = (wr_slices_op_t){&k->back, &k->back, &AT(k, p).acc};
            } else {
                k->back = AT(k, p).acc; /* an accumulator: final, copied now */
                back = true;
            }
        }
        k->qlo = pl;
        k->qhi = ph;
        k->qend = hi;
        if (back) {
            ops[(*nops)++] = (wr_slices_op_t){res, &AT(k, pl).agg, &k->back};
        } else {
            *res = AT(k, pl).agg; /* merged by an earlier call's ops: final */
        }
        *flag = WR_SLICES_HAS;
    } else {
        /* (re)build: a running sum when it is exact, else the whole run as the front, suffix
         * merges from its end */
        if (t->running) {
            k->qlo = -1;
            if (fire_run(t, k, lo, hi, res, flag, &pl)) {
                goto dropping;
            }
        }
        int32_t n = ph - pl;
        if (*nops + n > cap) {
            *need = n;
            return 0;
        }
        AT(k, ph - 1).agg = AT(k, ph - 1).acc;
        for (int32_t p = ph - 2; p >= pl; p--) {
            ops[(*nops)++] = (wr_slices_op_t){&AT(k, p).agg, &AT(k, p).acc, &AT(k, p + 1).agg};
        }
        if (n == 1) {
            *res = AT(k, pl).acc;
        } else {
            ops[(*nops)++] = (wr_slices_op_t){res, &AT(k, pl).agg, NULL};
        }
        k->qlo = pl;
        k->qmid = k->qhi = ph;
        k->qend = hi;
        k->run = 0;
        *flag = WR_SLICES_HAS;
    }
dropping:
    if (drop) {
        if (pl == end || AT(k, pl).start != lo) {
            *flag |= WR_SLICES_DROPPED; /* no slice lo: nothing to drop */
        } else if (pl == k->head) {
            /* the head: its memory stays until the key's next insert, so the ops hold; a key
             * left without slices goes, and with it its record, but none of its ops exist (a
             * one-slice window is that slice's accumulator) */
            *flag |= k->len == 1 ? WR_SLICES_DROPPED | WR_SLICES_GONE : WR_SLICES_DROPPED;
            *dropped = AT(k, pl);
            drop_at(t, k, pl);
        }
    }
    return 1;
}

/* The slice lines a fire of key record id reads: the queue's ends (or the head). Not where
 * the key's next slice goes: its insert comes after the rest of the watermark's fires (tens of
 * thousands of keys later in a job of many keys), by when the line is gone again, and a fire of
 * many keys is bound by the lines it has in flight (~3 per key: its record, its window's first
 * and last slices). The fire's loop asks for a key's slices AHEAD keys before it needs them,
 * and for its record (which says where they are) 2 AHEAD before: all of a chunk's at once would
 * be more than the cache keeps in flight. */
enum { AHEAD = 32 };

PREFETCHER void prefetch_fire(const wr_slices_t *t, int32_t id)
{
    if (id < 0) {
        return;
    }
    const wr_slice_key_t *k = &t->keys[id];
    __builtin_prefetch(&AT(k, k->qlo >= 0 ? k->qlo : k->head));
    if (k->qlo >= 0 && k->qhi < k->head + k->len) {
        __builtin_prefetch(&AT(k, k->qhi));
    }
}

PREFETCHER void prefetch_key(const wr_slices_t *t, int32_t id)
{
    if (id >= 0) {
        __builtin_prefetch(&t->keys[id]);
    }
}

int32_t wr_slices_fire(wr_slices_t *t, const int32_t *keys, int32_t n, int64_t lo, int64_t hi,
                       int drop, double *res, int32_t *flags, int32_t *off, wr_slices_op_t *ops,
                       int32_t cap, int32_t *scratch)
{
    if (drop && n > t->dropped_cap) {
        t->dropped = resize(t, t->dropped, (size_t)t->dropped_cap, (size_t)n, sizeof *t->dropped);
        t->dropped_cap = n;
    }
    /* the index entries in a pass, as wr_slices_gather; then the key records 2 AHEAD keys
     * ahead and their slices AHEAD keys ahead */
    size_t mask = t->index.cap - 1;
    bool hashed = false; /* a key past direct: its lookup after the pass of prefetches */
    for (int32_t i = 0; i < n; i++) {
        uint32_t key = (uint32_t)keys[i];
        if (key < (uint32_t)t->direct_cap) {
            scratch[i] = t->direct[key];
        } else {
            __builtin_prefetch(lookup_line(t, keys[i], mask));
            hashed = true;
        }
    }
    for (int32_t i = 0; hashed && i < n; i++) {
        if ((uint32_t)keys[i] >= (uint32_t)t->direct_cap) {
            scratch[i] = lookup(t, keys[i]);
        }
    }
    for (int32_t i = 0; i < n && i < 2 * AHEAD; i++) {
        prefetch_key(t, scratch[i]);
    }
    for (int32_t i = 0; i < n && i < AHEAD; i++) {
        prefetch_fire(t, scratch[i]);
    }
    int32_t nops = 0;
    for (int32_t i = 0; i < n; i++) {
        if (i + 2 * AHEAD < n) {
            prefetch_key(t, scratch[i + 2 * AHEAD]);
        }
        if (i + AHEAD < n) {
            prefetch_fire(t, scratch[i + AHEAD]);
        }
        off[i] = nops;
        if (drop) {
            t->dropped[i].count = 0;
        }
        if (scratch[i] < 0) {
            flags[i] = drop ? WR_SLICES_DROPPED : 0;
            continue;
        }
        if (t->running && fire_slide(t, &t->keys[scratch[i]], lo, hi, drop, &res[i], &flags[i],
                                     drop ? &t->dropped[i] : NULL)) {
            continue;
        }
        int32_t need = 0;
        if (!fire_key(t, &t->keys[scratch[i]], lo, hi, drop, &res[i], &flags[i], ops, cap, &nops,
                      &need, drop ? &t->dropped[i] : NULL)) {
            return i; /* off[i] set: the ops of the keys done end there */
        }
    }
    off[n] = nops;
    return n;
}

int wr_slices_run_ops(int32_t kind, const wr_slices_op_t *ops, int32_t n)
{
    for (int32_t x = 0; x < n; x++) {
        const wr_slices_op_t *op = &ops[x];
        double l = *op->l;
        if (!op->r) {
            *op->dst = l;
            continue;
        }
        double r = *op->r;
        switch (kind) {
        case WEIR_AGG_COUNT:
        case WEIR_AGG_SUM:
            *op->dst = l + r;
            break;
        case WEIR_AGG_MIN:
            *op->dst = r < l ? r : l;
            break;
        case WEIR_AGG_MAX:
            *op->dst = r > l ? r : l;
            break;
        default:
            return WEIR_EINVAL;
        }
    }
    return 0;
}

int32_t wr_slices_undrop(wr_slices_t *t, const int32_t *keys, int32_t from, int32_t n,
                         int64_t lo)
{
    int32_t back = 0;
    for (int32_t i = from < 0 ? 0 : from; i < n && i < t->dropped_cap; i++) {
        const wr_slice_t d = t->dropped[i];
        if (d.count <= 0 || d.start != lo) {
            continue;
        }
        t->dropped[i].count = 0;
        int fresh = 0;
        wr_slice_key_t *k;
        int32_t p;
        int64_t prev;
        double *acc = acc_in(t, keys[i], lo, &fresh, &k, &p, &prev);
        if (!acc) {
            continue; /* the key is at WR_SLICES_MAX: cannot happen (it had the slice) */
        }
        if (!fresh) { /* there again (cannot happen: nothing ran since): leave it */
            AT(k, p).count--;
            t->elements--;
            continue;
        }
        AT(k, p).acc = d.acc;
        AT(k, p).count = d.count;
        t->elements += d.count - 1;
        back++;
    }
    return back;
}

void wr_slices_forget(wr_slices_t *t, int32_t key)
{
    wr_slice_key_t *k = find_key(t, key);
    if (k) {
        k->qlo = -1;
    }
}

void wr_slices_touch(wr_slices_t *t, int32_t key, int64_t start)
{
    wr_slice_key_t *k = find_key(t, key);
    if (!k || k->qlo < 0) {
        return;
    }
    int32_t p = lower_bound(k, start);
    if (p >= k->qlo && p < k->qhi) {
        k->qlo = -1;
    }
}

int64_t wr_slices_dump(const wr_slices_t *t, double *out, int64_t max)
{
    int64_t n = 0;
    for (int32_t i = 0; i < t->keys_len; i++) {
        const wr_slice_key_t *k = &t->keys[i];
        for (int32_t p = k->head; k->len > 0 && p < k->head + k->len; p++, n++) {
            if (n < max) {
                out[3 * n] = (double)k->key;
                out[3 * n + 1] = wr_ms_to_double(AT(k, p).start);
                out[3 * n + 2] = (double)AT(k, p).count;
            }
        }
    }
    return n;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_slices {
    wr_slices_t t;
};

weir_slices_t *weir_slices_new(void)
{
    weir_slices_t *fs = wr_xmalloc(sizeof *fs);
    wr_slices_init(&fs->t);
    return fs;
}

int weir_slices_span(weir_slices_t *fs, int32_t k)
{
    if (!fs || k < 1) {
        return WEIR_EINVAL;
    }
    wr_slices_span(&fs->t, k);
    return 0;
}

void weir_slices_free(weir_slices_t *fs)
{
    if (!fs) {
        return;
    }
    wr_slices_close(&fs->t);
    wr_free(fs);
}

double *weir_slices_acc(weir_slices_t *fs, double key, double start, int32_t *fresh)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start) || !fresh) {
        return NULL;
    }
    int f = 0;
    double *acc = wr_slices_acc(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(start), &f);
    *fresh = f;
    return acc;
}

int32_t weir_slices_range(const weir_slices_t *fs, double key, double lo, double hi, double *out,
                          int32_t max)
{
    if (wr_idtab_key_id(key) < 0 || isnan(lo) || isnan(hi) || max < 0 || (max > 0 && !out)) {
        return WEIR_EINVAL;
    }
    return wr_slices_range(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(lo),
                           wr_ms_from_double(hi), out, max);
}

int weir_slices_neighbors(const weir_slices_t *fs, double key, double start, double *out)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start) || !out) {
        return WEIR_EINVAL;
    }
    int64_t prev;
    int64_t next;
    wr_slices_neighbors(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(start), &prev, &next);
    out[0] = wr_ms_to_double(prev);
    out[1] = wr_ms_to_double(next);
    return 0;
}

int weir_slices_drop(weir_slices_t *fs, double key, double start)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_slices_drop(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(start));
}

int weir_slices_count_add(weir_slices_t *fs, double key, double start, int32_t n)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    return wr_slices_count_add(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(start), n);
}

double weir_slices_gather(const weir_slices_t *fs, const int32_t *keys, int32_t n, double lo,
                          double hi, double *out, double cap, int32_t *off, int32_t *scratch)
{
    if (n < 0 || (n > 0 && (!keys || !scratch)) || !off || isnan(lo) || isnan(hi) ||
        isnan(cap) || cap < 0 || (cap > 0 && !out)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return (double)wr_slices_gather(&fs->t, keys, n, wr_ms_from_double(lo), wr_ms_from_double(hi),
                                    out, (int64_t)cap, off, scratch);
}

double *weir_slices_acc_near(weir_slices_t *fs, double key, double start, double *out)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start) || !out) {
        return NULL;
    }
    int32_t kid = wr_idtab_key_id(key);
    int64_t s = wr_ms_from_double(start);
    int f = 0;
    wr_slice_key_t *k;
    int32_t p;
    int64_t prev = INT64_MIN;
    double *acc = acc_in(&fs->t, kid, s, &f, &k, &p, &prev);
    out[0] = f;
    if (acc && f) {
        /* the new slice's neighbours: next to it in its key's run */
        out[1] = prev != INT64_MIN ? wr_ms_to_double(prev) : -INFINITY;
        out[2] = p + 1 < k->head + k->len ? wr_ms_to_double(AT(k, p + 1).start) : INFINITY;
    }
    return acc;
}

int32_t weir_slices_apply(weir_slices_t *fs, int32_t kind, int32_t n, const int32_t *keys,
                          const double *starts, const double *x, int32_t *fresh, double *near)
{
    if (!fs || kind < WEIR_AGG_COUNT || kind > WEIR_AGG_MAX || n < 0 ||
        (n > 0 && (!keys || !starts || !fresh || !near || (kind != WEIR_AGG_COUNT && !x)))) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0 || isnan(starts[i])) {
            return WEIR_EINVAL;
        }
    }
    int32_t m = wr_slices_apply(&fs->t, kind, n, keys, starts, kind == WEIR_AGG_COUNT ? NULL : x,
                                fresh, near);
    return m < 0 ? WEIR_ESTATE : m;
}

int weir_slices_running(weir_slices_t *fs, int32_t kind)
{
    if (!fs || (kind != -1 && kind != WEIR_AGG_COUNT && kind != WEIR_AGG_SUM)) {
        return WEIR_EINVAL;
    }
    wr_slices_running(&fs->t, kind != -1);
    return 0;
}

int weir_slices_run_ops(int32_t kind, const weir_slices_op_t *ops, int32_t n)
{
    if (n < 0 || (n > 0 && !ops) || kind < WEIR_AGG_COUNT || kind > WEIR_AGG_MAX) {
        return WEIR_EINVAL;
    }
    return wr_slices_run_ops(kind, ops, n);
}

int32_t weir_slices_fire(weir_slices_t *fs, const int32_t *keys, int32_t n, double lo, double hi,
                         int32_t drop, double *res, int32_t *flags, int32_t *off,
                         weir_slices_op_t *ops, int32_t cap, int32_t *scratch)
{
    if (n < 0 || (n > 0 && (!keys || !res || !flags || !scratch)) || !off || cap < 0 ||
        (cap > 0 && !ops) || isnan(lo) || isnan(hi)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return wr_slices_fire(&fs->t, keys, n, wr_ms_from_double(lo), wr_ms_from_double(hi),
                          drop != 0, res, flags, off, ops, cap, scratch);
}

int32_t weir_slices_undrop(weir_slices_t *fs, const int32_t *keys, int32_t from, int32_t n,
                           double lo)
{
    if ((n > 0 && !keys) || isnan(lo)) {
        return WEIR_EINVAL;
    }
    return wr_slices_undrop(&fs->t, keys, from, n, wr_ms_from_double(lo));
}

int weir_slices_forget(weir_slices_t *fs, double key)
{
    if (wr_idtab_key_id(key) < 0) {
        return WEIR_EINVAL;
    }
    wr_slices_forget(&fs->t, wr_idtab_key_id(key));
    return 0;
}

int weir_slices_touch(weir_slices_t *fs, double key, double start)
{
    if (wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    wr_slices_touch(&fs->t, wr_idtab_key_id(key), wr_ms_from_double(start));
    return 0;
}

double weir_slices_stat(const weir_slices_t *fs, int32_t what)
{
    switch (what) {
    case WEIR_STORE_OPEN:
        return (double)fs->t.open;
    case WEIR_STORE_ELEMENTS:
        return (double)fs->t.elements;
    case WEIR_STORE_BYTES:
        return (double)(sizeof *fs + fs->t.bytes);
    default:
        return NAN;
    }
}

double weir_slices_dump(const weir_slices_t *fs, double *out, double max)
{
    if (isnan(max) || max < 0 || (max > 0 && !out)) {
        return WEIR_EINVAL;
    }
    return (double)wr_slices_dump(&fs->t, out, (int64_t)max);
}
