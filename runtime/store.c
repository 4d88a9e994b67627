/* SPDX-License-Identifier: MIT */
/* store.c: two id hash tables (window -> slot, key -> key record) over dense slot and key arrays
 * with free lists, plus per key a sorted array of slot ids. Cells sit in doubling segments that
 * never move, so a cell pointer outlives other slots' creation. bytes tracks every allocation;
 * an empty store shrinks back to the initial allocation. */
#include "store.h"
#include "ms.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "weir.h"

enum {
    MIN_SLOTS = 16,      /* initial slot and key arrays */
    MIN_INDEX = 32,      /* initial hash tables: a power of two */
    SEGMENT_BASE = 16    /* slots in cell segment 0; segment c holds SEGMENT_BASE << c */
};

/* --- allocation, counted in s->bytes ------------------------------------------------------ */

static void *resize(wr_store_t *s, void *p, size_t old_n, size_t new_n, size_t size)
{
    return wr_xresize_counted(&s->bytes, p, old_n, new_n, size);
}

static void release(wr_store_t *s, void *p, size_t n, size_t size)
{
    wr_release_counted(&s->bytes, p, n, size);
}

static wr_store_entry_t *new_index(wr_store_t *s, size_t cap)
{
    wr_store_entry_t *index = resize(s, NULL, 0, cap, sizeof *index);
    memset(index, 0xff, cap * sizeof *index); /* every id -1 */
    return index;
}

/* The initial allocation: used by init and when the store becomes empty. */
static void setup(wr_store_t *s)
{
    s->slots = resize(s, NULL, 0, MIN_SLOTS, sizeof *s->slots);
    s->slots_cap = MIN_SLOTS;
    s->slots_len = 0;
    s->free_slot = -1;
    s->keys = resize(s, NULL, 0, MIN_SLOTS, sizeof *s->keys);
    s->keys_cap = MIN_SLOTS;
    s->keys_len = 0;
    s->free_key = -1;
    s->slot_index = new_index(s, MIN_INDEX);
    s->slot_index_cap = MIN_INDEX;
    s->key_index = new_index(s, MIN_INDEX);
    s->key_index_cap = MIN_INDEX;
    if (s->cells_per_slot > 0) {
        s->cells[0] = resize(s, NULL, 0, (size_t)SEGMENT_BASE * (size_t)s->cells_per_slot,
                             sizeof(double));
    }
}

static size_t segment_slots(int c)
{
    return (size_t)SEGMENT_BASE << c;
}

/* Frees what setup and later growth allocated; key id arrays must be gone already. */
static void teardown(wr_store_t *s)
{
    release(s, s->slots, (size_t)s->slots_cap, sizeof *s->slots);
    release(s, s->keys, (size_t)s->keys_cap, sizeof *s->keys);
    release(s, s->slot_index, s->slot_index_cap, sizeof *s->slot_index);
    release(s, s->key_index, s->key_index_cap, sizeof *s->key_index);
    for (int c = 0; c < WR_STORE_SEGMENTS; c++) {
        if (s->cells[c]) {
            release(s, s->cells[c], segment_slots(c) * (size_t)s->cells_per_slot,
                    sizeof(double));
            s->cells[c] = NULL;
        }
    }
    s->slots = NULL;
    s->keys = NULL;
    s->slot_index = NULL;
    s->key_index = NULL;
    s->slots_cap = s->keys_cap = 0;
    s->slot_index_cap = s->key_index_cap = 0;
}

int wr_store_init(wr_store_t *s, int32_t cells_per_slot)
{
    memset(s, 0, sizeof *s);
    s->free_slot = -1;
    s->free_key = -1;
    if (cells_per_slot < 0 || cells_per_slot > WR_STORE_MAX_CELLS) {
        return WEIR_EINVAL;
    }
    s->cells_per_slot = cells_per_slot;
    setup(s);
    return 0;
}

void wr_store_close(wr_store_t *s)
{
    for (int32_t i = 0; i < s->keys_len; i++) {
        wr_store_key_t *k = &s->keys[i];
        if (k->len >= 0 && k->cap > WR_STORE_KEY_INLINE) {
            release(s, k->ids.heap, (size_t)k->cap, sizeof(int32_t));
        }
    }
    if (s->slots) {
        teardown(s);
    }
    assert(s->bytes == 0);
    s->open = 0;
    s->nkeys = 0;
    s->elements = 0;
    s->slots_len = s->keys_len = 0;
    s->free_slot = s->free_key = -1;
}

/* --- hashing and the two id tables ------------------------------------------------------- */

/* Multiply-xorshift: each step is a bijection of h for a fixed field, so windows differing in
 * one field (consecutive keys, consecutive starts) never collide on the full 64 bits. */
static uint64_t mix(uint64_t h, uint64_t v)
{
    h = (h ^ v) * UINT64_C(0x9e3779b97f4a7c15);
    return h ^ (h >> 31);
}

static uint64_t finish(uint64_t h)
{
    h *= UINT64_C(0xbf58476d1ce4e5b9);
    return h ^ (h >> 29);
}

static uint64_t hash_key(int64_t key)
{
    return finish(mix(UINT64_C(0x510e527fade682d1), (uint64_t)key));
}

static uint64_t hash_window(int64_t key, int64_t start, int64_t stop)
{
    uint64_t h = mix(UINT64_C(0x6a09e667f3bcc908), (uint64_t)key);
    h = mix(h, (uint64_t)start);
    return finish(mix(h, (uint64_t)stop));
}

static uint32_t fingerprint(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

/* Where the entry for fp lives in the table of entries ..mask: home and fingerprint come from
 * the same (best-mixed) upper hash bits, so an entry alone says where it belongs. */
static size_t home_of(uint32_t fp, size_t mask)
{
    return (size_t)fp & mask;
}

/* The position of window (key, start, stop) in slot_index, or of the empty entry ending its
 * probe run; *fp gets its fingerprint for an insert there. */
static size_t probe_window(const wr_store_t *s, int64_t key, int64_t start, int64_t stop,
                           uint32_t *fp, bool *found)
{
    size_t mask = s->slot_index_cap - 1;
    uint32_t f = fingerprint(hash_window(key, start, stop));
    *fp = f;
    size_t i = home_of(f, mask);
    for (;;) {
        wr_store_entry_t e = s->slot_index[i];
        if (e.id < 0) {
            *found = false;
            return i;
        }
        if (e.fp == f) {
            const wr_store_slot_t *sl = &s->slots[e.id];
            if (sl->key == key && sl->start == start && sl->stop == stop) {
                *found = true;
                return i;
            }
        }
        i = (i + 1) & mask;
    }
}

static size_t probe_key(const wr_store_t *s, int64_t key, uint32_t *fp, bool *found)
{
    size_t mask = s->key_index_cap - 1;
    uint32_t f = fingerprint(hash_key(key));
    *fp = f;
    size_t i = home_of(f, mask);
    for (;;) {
        wr_store_entry_t e = s->key_index[i];
        if (e.id < 0) {
            *found = false;
            return i;
        }
        if (e.fp == f && s->keys[e.id].key == key) {
            *found = true;
            return i;
        }
        i = (i + 1) & mask;
    }
}

/* The position of id, known to be in the table with fingerprint fp: compares ids only. */
static size_t locate(const wr_store_entry_t *index, size_t cap, uint32_t fp, int32_t id)
{
    size_t mask = cap - 1;
    size_t i = home_of(fp, mask);
    while (index[i].id != id) {
        assert(index[i].id >= 0);
        i = (i + 1) & mask;
    }
    return i;
}

/* Rebuilds one table at new_cap from the old table's entries, which carry their homes. */
static void rehash(wr_store_t *s, bool keys, size_t new_cap)
{
    wr_store_entry_t **index = keys ? &s->key_index : &s->slot_index;
    size_t *cap = keys ? &s->key_index_cap : &s->slot_index_cap;
    assert(new_cap <= (size_t)UINT32_MAX + 1);
    wr_store_entry_t *old = *index;
    size_t old_cap = *cap;
    wr_store_entry_t *fresh = new_index(s, new_cap);
    size_t mask = new_cap - 1;
    for (size_t j = 0; j < old_cap; j++) {
        if (old[j].id < 0) {
            continue;
        }
        size_t i = home_of(old[j].fp, mask);
        while (fresh[i].id >= 0) {
            i = (i + 1) & mask;
        }
        fresh[i] = old[j];
    }
    release(s, old, old_cap, sizeof *old);
    *index = fresh;
    *cap = new_cap;
}

/* Grows a table about to take one more entry past 3/4 full (unless the memory limit says wait,
 * mem.h). */
static void reserve(wr_store_t *s, bool keys)
{
    size_t n = (size_t)(keys ? s->nkeys : s->open) + 1;
    size_t cap = keys ? s->key_index_cap : s->slot_index_cap;
    if (n * 4 > cap * 3 &&
        (n + 1 >= cap || wr_mem_may_grow(2 * cap * sizeof(wr_store_entry_t)))) {
        rehash(s, keys, cap * 2);
    }
}

/* Halves a table that fell below 1/8 full (it is then under 1/4: no grow-shrink flapping). */
static void trim(wr_store_t *s, bool keys)
{
    size_t n = (size_t)(keys ? s->nkeys : s->open);
    size_t cap = keys ? s->key_index_cap : s->slot_index_cap;
    if (cap > MIN_INDEX && n * 8 < cap) {
        rehash(s, keys, cap / 2);
    }
}

/* Backward-shift deletion: later entries of the probe run move into the hole when the hole lies
 * between their home and where they sit, so no tombstones build up. */
static void index_remove_at(wr_store_t *s, bool keys, size_t hole)
{
    wr_store_entry_t *index = keys ? s->key_index : s->slot_index;
    size_t mask = (keys ? s->key_index_cap : s->slot_index_cap) - 1;
    size_t j = hole;
    for (;;) {
        j = (j + 1) & mask;
        wr_store_entry_t e = index[j];
        if (e.id < 0) {
            break;
        }
        size_t home = home_of(e.fp, mask);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            index[hole] = e;
            hole = j;
        }
    }
    index[hole].id = -1;
}

/* --- per-key sorted slot lists ----------------------------------------------------------- */

static bool window_less(int64_t start_a, int64_t stop_a, int64_t start_b, int64_t stop_b)
{
    return start_a < start_b || (start_a == start_b && stop_a < stop_b);
}

static int32_t *key_ids(wr_store_key_t *k)
{
    return k->cap > WR_STORE_KEY_INLINE ? k->ids.heap : k->ids.local;
}

static const int32_t *key_ids_const(const wr_store_key_t *k)
{
    return k->cap > WR_STORE_KEY_INLINE ? k->ids.heap : k->ids.local;
}

/* First position in the key's list whose window is not before [start, stop). */
static int32_t lower_bound(const wr_store_t *s, const wr_store_key_t *k, int64_t start,
                           int64_t stop)
{
    const int32_t *ids = key_ids_const(k);
    int32_t lo = 0;
    int32_t hi = k->len;
    /* Windows mostly open in start order: try the end first. */
    if (hi > 0) {
        const wr_store_slot_t *last = &s->slots[ids[hi - 1]];
        if (window_less(last->start, last->stop, start, stop)) {
            return hi;
        }
    }
    while (lo < hi) {
        int32_t mid = lo + (hi - lo) / 2;
        const wr_store_slot_t *m = &s->slots[ids[mid]];
        if (window_less(m->start, m->stop, start, stop)) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

/* The key record of key, created (with no slots yet) when absent. */
static int32_t key_get(wr_store_t *s, int64_t key)
{
    reserve(s, true);
    bool found;
    uint32_t fp;
    size_t i = probe_key(s, key, &fp, &found);
    if (found) {
        return s->key_index[i].id;
    }
    int32_t id;
    if (s->free_key >= 0) {
        id = s->free_key;
        s->free_key = s->keys[id].ids.next_free;
    } else {
        if (s->keys_len == s->keys_cap) {
            int32_t cap = s->keys_cap > INT32_MAX / 2 ? INT32_MAX : s->keys_cap * 2;
            s->keys = resize(s, s->keys, (size_t)s->keys_cap, (size_t)cap, sizeof *s->keys);
            s->keys_cap = cap;
        }
        id = s->keys_len++;
    }
    s->keys[id] = (wr_store_key_t){.key = key, .len = 0, .cap = WR_STORE_KEY_INLINE};
    s->key_index[i] = (wr_store_entry_t){.id = id, .fp = fp};
    s->nkeys++;
    return id;
}

static void key_insert(wr_store_t *s, wr_store_key_t *k, int32_t slot)
{
    const wr_store_slot_t *sl = &s->slots[slot];
    int32_t pos = lower_bound(s, k, sl->start, sl->stop);
    if (k->len == k->cap) {
        int32_t cap = k->cap * 2;
        if (k->cap == WR_STORE_KEY_INLINE) {
            int32_t *heap = resize(s, NULL, 0, (size_t)cap, sizeof *heap);
            memcpy(heap, k->ids.local, sizeof k->ids.local);
            k->ids.heap = heap;
        } else {
            k->ids.heap = resize(s, k->ids.heap, (size_t)k->cap, (size_t)cap, sizeof(int32_t));
        }
        k->cap = cap;
    }
    int32_t *ids = key_ids(k);
    memmove(&ids[pos + 1], &ids[pos], (size_t)(k->len - pos) * sizeof *ids);
    ids[pos] = slot;
    k->len++;
}

/* Takes the slot out of its key's list; the key record goes when it was the last. */
static void key_remove(wr_store_t *s, int32_t slot)
{
    const wr_store_slot_t *sl = &s->slots[slot];
    int32_t kid = sl->kid;
    wr_store_key_t *k = &s->keys[kid];
    int32_t pos = lower_bound(s, k, sl->start, sl->stop);
    int32_t *ids = key_ids(k);
    assert(pos < k->len && ids[pos] == slot);
    memmove(&ids[pos], &ids[pos + 1], (size_t)(k->len - pos - 1) * sizeof *ids);
    k->len--;
    if (k->cap > WR_STORE_KEY_INLINE && k->len <= WR_STORE_KEY_INLINE) {
        int32_t *heap = k->ids.heap;
        memcpy(k->ids.local, heap, sizeof k->ids.local);
        release(s, heap, (size_t)k->cap, sizeof *heap);
        k->cap = WR_STORE_KEY_INLINE;
    } else if (k->cap > WR_STORE_KEY_INLINE && k->len * 4 < k->cap) {
        int32_t cap = k->cap / 2;
        k->ids.heap = resize(s, k->ids.heap, (size_t)k->cap, (size_t)cap, sizeof(int32_t));
        k->cap = cap;
    }
    if (k->len > 0) {
        return;
    }
    size_t i = locate(s->key_index, s->key_index_cap, fingerprint(hash_key(k->key)), kid);
    index_remove_at(s, true, i);
    k->len = -1;
    k->ids.next_free = s->free_key;
    s->free_key = kid;
    s->nkeys--;
    trim(s, true);
}

/* --- slots ------------------------------------------------------------------------------- */

static bool is_open(const wr_store_t *s, int32_t slot)
{
    return slot >= 0 && slot < s->slots_len && s->slots[slot].kid >= 0;
}

/* Segment c holds ids [SEGMENT_BASE * (2^c - 1), SEGMENT_BASE * (2^(c+1) - 1)). */
static int segment_of(int32_t slot, size_t *offset)
{
    uint32_t q = (uint32_t)slot / SEGMENT_BASE + 1;
    int c = 0;
    for (int shift = 16; shift > 0; shift /= 2) {
        if (q >= (UINT32_C(1) << shift)) {
            q >>= shift;
            c += shift;
        }
    }
    *offset = (size_t)slot - (size_t)SEGMENT_BASE * ((UINT32_C(1) << c) - 1);
    return c;
}

static double *cells_of(const wr_store_t *s, int32_t slot)
{
    size_t offset;
    int c = segment_of(slot, &offset);
    return s->cells[c] + offset * (size_t)s->cells_per_slot;
}

static int32_t take_slot(wr_store_t *s)
{
    if (s->free_slot >= 0) {
        int32_t id = s->free_slot;
        s->free_slot = s->slots[id].count;
        return id;
    }
    if (s->slots_len == s->slots_cap) {
        int32_t cap = s->slots_cap > INT32_MAX / 2 ? INT32_MAX : s->slots_cap * 2;
        s->slots = resize(s, s->slots, (size_t)s->slots_cap, (size_t)cap, sizeof *s->slots);
        s->slots_cap = cap;
    }
    int32_t id = s->slots_len++;
    if (s->cells_per_slot > 0) {
        size_t offset;
        int c = segment_of(id, &offset);
        if (!s->cells[c]) {
            s->cells[c] = resize(s, NULL, 0, segment_slots(c) * (size_t)s->cells_per_slot,
                                 sizeof(double));
        }
    }
    return id;
}

int32_t wr_store_slot(wr_store_t *s, int64_t key, int64_t start, int64_t stop)
{
    if (s->open < WR_STORE_MAX_SLOTS) {
        reserve(s, false);
    }
    bool found;
    uint32_t fp;
    size_t i = probe_window(s, key, start, stop, &fp, &found);
    if (found) {
        return s->slot_index[i].id;
    }
    if (s->open >= WR_STORE_MAX_SLOTS) {
        return WEIR_ESTATE;
    }
    int32_t kid = key_get(s, key);
    int32_t id = take_slot(s);
    s->slots[id] =
        (wr_store_slot_t){.key = key, .start = start, .stop = stop, .kid = kid, .count = 0};
    s->slot_index[i] = (wr_store_entry_t){.id = id, .fp = fp};
    key_insert(s, &s->keys[kid], id);
    double *cells = s->cells_per_slot > 0 ? cells_of(s, id) : NULL;
    for (int32_t c = 0; c < s->cells_per_slot; c++) {
        cells[c] = NAN;
    }
    s->open++;
    return id;
}

int32_t wr_store_find(const wr_store_t *s, int64_t key, int64_t start, int64_t stop)
{
    bool found;
    uint32_t fp;
    size_t i = probe_window(s, key, start, stop, &fp, &found);
    return found ? s->slot_index[i].id : -1;
}

/* Back to the initial allocation: nothing is open, so nothing needs to survive. */
static void shrink_empty(wr_store_t *s)
{
    bool grown = s->slots_cap > MIN_SLOTS || s->keys_cap > MIN_SLOTS ||
                 s->slot_index_cap > MIN_INDEX || s->key_index_cap > MIN_INDEX ||
                 s->cells[1] != NULL;
    if (grown) {
        teardown(s);
        setup(s);
    }
    s->slots_len = 0;
    s->free_slot = -1;
    s->keys_len = 0;
    s->free_key = -1;
}

int wr_store_drop(wr_store_t *s, int32_t slot)
{
    if (!is_open(s, slot)) {
        return WEIR_EINVAL;
    }
    wr_store_slot_t *sl = &s->slots[slot];
    uint32_t fp = fingerprint(hash_window(sl->key, sl->start, sl->stop));
    index_remove_at(s, false, locate(s->slot_index, s->slot_index_cap, fp, slot));
    key_remove(s, slot);
    s->elements -= sl->count;
    sl->kid = -1;
    sl->count = s->free_slot;
    s->free_slot = slot;
    s->open--;
    if (s->open == 0) {
        shrink_empty(s);
    } else {
        trim(s, false);
    }
    return 0;
}

double *wr_store_cells(wr_store_t *s, int32_t slot)
{
    if (!is_open(s, slot) || s->cells_per_slot == 0) {
        return NULL;
    }
    return cells_of(s, slot);
}

int32_t wr_store_count_add(wr_store_t *s, int32_t slot, int32_t delta)
{
    if (!is_open(s, slot)) {
        return WEIR_EINVAL;
    }
    wr_store_slot_t *sl = &s->slots[slot];
    int64_t count = (int64_t)sl->count + delta;
    if (count < 0 || count > INT32_MAX) {
        return WEIR_EINVAL;
    }
    sl->count = (int32_t)count;
    s->elements += delta;
    return sl->count;
}

int32_t wr_store_count(const wr_store_t *s, int32_t slot)
{
    return is_open(s, slot) ? s->slots[slot].count : WEIR_EINVAL;
}

int wr_store_window(const wr_store_t *s, int32_t slot, int64_t *key, int64_t *start,
                    int64_t *stop)
{
    if (!is_open(s, slot)) {
        return WEIR_EINVAL;
    }
    const wr_store_slot_t *sl = &s->slots[slot];
    *key = sl->key;
    *start = sl->start;
    *stop = sl->stop;
    return 0;
}

int32_t wr_store_key_slots(const wr_store_t *s, int64_t key, int32_t *out, int32_t max)
{
    bool found;
    uint32_t fp;
    size_t i = probe_key(s, key, &fp, &found);
    if (!found) {
        return 0;
    }
    const wr_store_key_t *k = &s->keys[s->key_index[i].id];
    int32_t n = k->len < max ? k->len : max;
    if (n > 0) {
        memcpy(out, key_ids_const(k), (size_t)n * sizeof *out);
    }
    return k->len;
}

int32_t wr_store_open(const wr_store_t *s)
{
    return s->open;
}

int64_t wr_store_elements(const wr_store_t *s)
{
    return s->elements;
}

size_t wr_store_bytes(const wr_store_t *s)
{
    return s->bytes;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_store {
    wr_store_t s;
};

weir_store_t *weir_store_new(int32_t cells_per_slot)
{
    if (cells_per_slot < 0 || cells_per_slot > WR_STORE_MAX_CELLS) {
        return NULL;
    }
    weir_store_t *fs = wr_xmalloc(sizeof *fs);
    int rc = wr_store_init(&fs->s, cells_per_slot);
    assert(rc == 0);
    (void)rc;
    return fs;
}

void weir_store_free(weir_store_t *fs)
{
    if (!fs) {
        return;
    }
    wr_store_close(&fs->s);
    wr_free(fs);
}

int32_t weir_store_slot(weir_store_t *fs, double key, double start, double stop)
{
    if (isnan(key) || isnan(start) || isnan(stop)) {
        return WEIR_EINVAL;
    }
    return wr_store_slot(&fs->s, wr_ms_from_double(key), wr_ms_from_double(start),
                         wr_ms_from_double(stop));
}

int32_t weir_store_find(const weir_store_t *fs, double key, double start, double stop)
{
    if (isnan(key) || isnan(start) || isnan(stop)) {
        return WEIR_EINVAL;
    }
    return wr_store_find(&fs->s, wr_ms_from_double(key), wr_ms_from_double(start),
                         wr_ms_from_double(stop));
}

int weir_store_drop(weir_store_t *fs, int32_t slot)
{
    return wr_store_drop(&fs->s, slot);
}

double *weir_store_cells(weir_store_t *fs, int32_t slot)
{
    return wr_store_cells(&fs->s, slot);
}

int32_t weir_store_count_add(weir_store_t *fs, int32_t slot, int32_t delta)
{
    return wr_store_count_add(&fs->s, slot, delta);
}

int32_t weir_store_count(const weir_store_t *fs, int32_t slot)
{
    return wr_store_count(&fs->s, slot);
}

double weir_store_stat(const weir_store_t *fs, int32_t what)
{
    switch (what) {
    case WEIR_STORE_OPEN:
        return (double)wr_store_open(&fs->s);
    case WEIR_STORE_ELEMENTS:
        return (double)wr_store_elements(&fs->s);
    case WEIR_STORE_BYTES:
        return (double)(sizeof *fs + wr_store_bytes(&fs->s));
    default:
        return NAN;
    }
}

int32_t weir_store_key_slots(const weir_store_t *fs, double key, int32_t *out, int32_t max)
{
    if (isnan(key) || max < 0 || (max > 0 && !out)) {
        return WEIR_EINVAL;
    }
    return wr_store_key_slots(&fs->s, wr_ms_from_double(key), out, max);
}

double weir_store_slot_start(const weir_store_t *fs, int32_t slot)
{
    int64_t key;
    int64_t start;
    int64_t stop;
    if (wr_store_window(&fs->s, slot, &key, &start, &stop) < 0) {
        return NAN;
    }
    return wr_ms_to_double(start);
}

double weir_store_slot_stop(const weir_store_t *fs, int32_t slot)
{
    int64_t key;
    int64_t start;
    int64_t stop;
    if (wr_store_window(&fs->s, slot, &key, &start, &stop) < 0) {
        return NAN;
    }
    return wr_ms_to_double(stop);
}
