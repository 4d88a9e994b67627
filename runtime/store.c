/* SPDX-License-Identifier: MIT */
/* store.c: an id hash table (window -> slot) over a dense slot array with a free list. Cells sit
 * in doubling segments that never move, so a cell pointer outlives other slots' creation. bytes
 * tracks every allocation; an empty store shrinks back to the initial allocation. */
#include "store.h"
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

enum {
    MIN_SLOTS = 16,      /* initial slot array */
    MIN_INDEX = 32,      /* initial hash table: a power of two */
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

/* --- hashing ---------------------------------------------------------------------------- */

static uint64_t hash_window(int64_t key, int64_t start, int64_t stop)
{
    uint64_t h = wr_idtab_mix(UINT64_C(0x6a09e667f3bcc908), (uint64_t)key);
    h = wr_idtab_mix(h, (uint64_t)start);
    return wr_idtab_finish(wr_idtab_mix(h, (uint64_t)stop));
}

static uint32_t fingerprint(uint64_t h)
{
    return (uint32_t)(h >> 32);
}

/* Where the entry for fp lives in the table of entries ..mask: home and fingerprint come from
 * the same (best-mixed) upper hash bits, so an entry alone says where it belongs, and growing
 * and backward-shift deletion never load a slot. */
static size_t home_of(uint32_t fp, size_t mask)
{
    return (size_t)fp & mask;
}

static size_t entry_home(const void *entry, size_t mask)
{
    return home_of(((const wr_store_entry_t *)entry)->fp, mask);
}

static const wr_idtab_kind_t KIND = {
    .size = sizeof(wr_store_entry_t),
    .id_at = offsetof(wr_store_entry_t, id),
    .home = entry_home,
};

static wr_store_entry_t *entries(const wr_store_t *s)
{
    return s->slot_index.entries;
}

typedef struct window_query {
    const wr_store_slot_t *slots;
    int64_t key;
    int64_t start;
    int64_t stop;
    uint32_t fp;
} window_query_t;

/* Only an entry with the same fingerprint costs a read of its slot. */
static bool same_window(const void *entry, const void *query)
{
    const wr_store_entry_t *e = entry;
    const window_query_t *q = query;
    if (e->fp != q->fp) {
        return false;
    }
    const wr_store_slot_t *sl = &q->slots[e->id];
    return sl->key == q->key && sl->start == q->start && sl->stop == q->stop;
}

/* The position of window (key, start, stop) in slot_index, or of the empty entry ending its
 * probe run; *fp gets its fingerprint for an insert there. */
static size_t probe_window(const wr_store_t *s, int64_t key, int64_t start, int64_t stop,
                           uint32_t *fp, bool *found)
{
    window_query_t q = {.slots = s->slots, .key = key, .start = start, .stop = stop,
                        .fp = fingerprint(hash_window(key, start, stop))};
    *fp = q.fp;
    return wr_idtab_find(&s->slot_index, &KIND, home_of(q.fp, s->slot_index.cap - 1),
                         same_window, &q, found);
}

static bool same_id(const void *entry, const void *query)
{
    return ((const wr_store_entry_t *)entry)->id == *(const int32_t *)query;
}

/* The position of open slot id, whose fingerprint is fp: compares ids only. */
static size_t locate(const wr_store_t *s, uint32_t fp, int32_t id)
{
    bool found;
    size_t i = wr_idtab_find(&s->slot_index, &KIND, home_of(fp, s->slot_index.cap - 1), same_id,
                             &id, &found);
    assert(found);
    return i;
}

/* --- allocation of the initial state --------------------------------------------------- */

/* The initial allocation: used by init and when the store becomes empty. */
static void setup(wr_store_t *s)
{
    s->slots = resize(s, NULL, 0, MIN_SLOTS, sizeof *s->slots);
    s->slots_cap = MIN_SLOTS;
    s->slots_len = 0;
    s->free_slot = -1;
    wr_idtab_init(&s->slot_index, &KIND, MIN_INDEX, &s->bytes);
    if (s->cells_per_slot > 0) {
        s->cells[0] = resize(s, NULL, 0, (size_t)SEGMENT_BASE * (size_t)s->cells_per_slot,
                             sizeof(double));
    }
}

static size_t segment_slots(int c)
{
    return (size_t)SEGMENT_BASE << c;
}

/* Frees what setup and later growth allocated. */
static void teardown(wr_store_t *s)
{
    release(s, s->slots, (size_t)s->slots_cap, sizeof *s->slots);
    wr_idtab_close(&s->slot_index, &KIND, &s->bytes);
    for (int c = 0; c < WR_STORE_SEGMENTS; c++) {
        if (s->cells[c]) {
            release(s, s->cells[c], segment_slots(c) * (size_t)s->cells_per_slot,
                    sizeof(double));
            s->cells[c] = NULL;
        }
    }
    s->slots = NULL;
    s->slots_cap = 0;
}

int wr_store_init(wr_store_t *s, int32_t cells_per_slot)
{
    memset(s, 0, sizeof *s);
    s->free_slot = -1;
    if (cells_per_slot < 0 || cells_per_slot > WR_STORE_MAX_CELLS) {
        return WEIR_EINVAL;
    }
    s->cells_per_slot = cells_per_slot;
    setup(s);
    return 0;
}

void wr_store_close(wr_store_t *s)
{
    if (s->slots) {
        teardown(s);
    }
    assert(s->bytes == 0);
    s->open = 0;
    s->elements = 0;
    s->slots_len = 0;
    s->free_slot = -1;
}

/* --- slots ------------------------------------------------------------------------------- */

static bool is_open(const wr_store_t *s, int32_t slot)
{
    return slot >= 0 && slot < s->slots_len && s->slots[slot].open;
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
    /* grows before the probe (at most 3/4 full, unless the memory limit says wait) */
    if (s->open < WR_STORE_MAX_SLOTS &&
        wr_idtab_should_grow(&s->slot_index, &KIND, (size_t)s->open + 1, 3, 4)) {
        assert(s->slot_index.cap * 2 <= (size_t)UINT32_MAX + 1);
        wr_idtab_rehash(&s->slot_index, &KIND, s->slot_index.cap * 2, &s->bytes);
    }
    bool found;
    uint32_t fp;
    size_t i = probe_window(s, key, start, stop, &fp, &found);
    if (found) {
        return entries(s)[i].id;
    }
    if (s->open >= WR_STORE_MAX_SLOTS) {
        return WEIR_ESTATE;
    }
    int32_t id = take_slot(s);
    s->slots[id] =
        (wr_store_slot_t){.key = key, .start = start, .stop = stop, .open = 1, .count = 0};
    entries(s)[i] = (wr_store_entry_t){.id = id, .fp = fp};
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
    return found ? entries(s)[i].id : -1;
}

/* Back to the initial allocation: nothing is open, so nothing needs to survive. */
static void shrink_empty(wr_store_t *s)
{
    bool grown =
        s->slots_cap > MIN_SLOTS || s->slot_index.cap > MIN_INDEX || s->cells[1] != NULL;
    if (grown) {
        teardown(s);
        setup(s);
    }
    s->slots_len = 0;
    s->free_slot = -1;
}

int wr_store_drop(wr_store_t *s, int32_t slot)
{
    if (!is_open(s, slot)) {
        return WEIR_EINVAL;
    }
    wr_store_slot_t *sl = &s->slots[slot];
    uint32_t fp = fingerprint(hash_window(sl->key, sl->start, sl->stop));
    wr_idtab_remove_at(&s->slot_index, &KIND, locate(s, fp, slot));
    s->elements -= sl->count;
    sl->open = 0;
    sl->count = s->free_slot;
    s->free_slot = slot;
    s->open--;
    if (s->open == 0) {
        shrink_empty(s);
    } else if (s->slot_index.cap > MIN_INDEX && (size_t)s->open * 8 < s->slot_index.cap) {
        /* below 1/8 full, halved it is under 1/4: no grow-shrink flapping */
        wr_idtab_rehash(&s->slot_index, &KIND, s->slot_index.cap / 2, &s->bytes);
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

int weir_store_window(const weir_store_t *fs, int32_t slot, double *out)
{
    int64_t key, start, stop;
    int rc = wr_store_window(&fs->s, slot, &key, &start, &stop);
    if (rc != 0) {
        return rc;
    }
    out[0] = wr_ms_to_double(key);
    out[1] = wr_ms_to_double(start);
    out[2] = wr_ms_to_double(stop);
    return 0;
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
