/* SPDX-License-Identifier: MIT */
/* kstate.c: rows of keyed state over the window store: the store's (key, [0, 0)) is the key's
 * row, its cells the row's. Invariants in kstate.h. */
#include "kstate.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>

#include "mem.h"
#include "ms.h"
#include "weir.h"

enum { DENSE_SLACK = 1024 }; /* the direct index grows to a key at most this far past it */

void wr_kstate_init(wr_kstate_t *k)
{
    int rc = wr_store_init(&k->store, 0);
    assert(rc == 0);
    (void)rc;
    k->rows = NULL;
    k->rows_cap = 0;
    k->states = 0;
    k->cursor = 0;
}

void wr_kstate_close(wr_kstate_t *k)
{
    wr_store_close(&k->store);
    wr_free(k->rows);
    k->rows = NULL;
    k->rows_cap = 0;
    k->states = 0;
    k->cursor = 0;
}

/* The key's entry in the direct index, grown to hold it when it is dense enough; NULL when the
 * key is too far beyond (then only the hash knows its row). */
static double **index_of(wr_kstate_t *k, int64_t key, bool grow)
{
    if ((uint64_t)key < k->rows_cap) {
        return &k->rows[key];
    }
    if (!grow || (uint64_t)key >= 2 * k->rows_cap + DENSE_SLACK || key >= INT32_MAX) {
        return NULL;
    }
    size_t cap = 2 * k->rows_cap + DENSE_SLACK;
    k->rows = wr_xreallocarray(k->rows, cap, sizeof *k->rows);
    for (size_t i = k->rows_cap; i < cap; i++) {
        k->rows[i] = NULL;
    }
    k->rows_cap = cap;
    return &k->rows[key];
}

/* Drops row slot `slot` of key and forgets it in the direct index. */
static void drop_row(wr_kstate_t *k, int64_t key, int32_t slot)
{
    double **at = index_of(k, key, false);
    if (at) {
        *at = NULL;
    }
    wr_store_drop(&k->store, slot);
}

int wr_kstate_set_states(wr_kstate_t *k, int32_t states)
{
    if (states < 0 || states > WR_KSTATE_MAX_STATES) {
        return WEIR_EINVAL;
    }
    if (wr_store_open(&k->store) > 0) {
        return WEIR_ESTATE;
    }
    wr_store_close(&k->store);
    int rc = wr_store_init(&k->store, states * WR_KSTATE_CELLS);
    assert(rc == 0);
    (void)rc;
    k->states = states;
    k->cursor = 0;
    return 0;
}

double *wr_kstate_row(wr_kstate_t *k, int64_t key)
{
    if ((uint64_t)key < k->rows_cap) {
        return k->rows[key]; /* the per-record path: one load */
    }
    if (k->states == 0) {
        return NULL;
    }
    int32_t slot = wr_store_find(&k->store, key, 0, 0);
    return slot < 0 ? NULL : wr_store_cells(&k->store, slot);
}

double *wr_kstate_row_put(wr_kstate_t *k, int64_t key)
{
    if (k->states == 0) {
        return NULL;
    }
    double **at = index_of(k, key, true);
    if (at && *at) {
        return *at;
    }
    int32_t slot = wr_store_slot(&k->store, key, 0, 0);
    if (slot < 0) {
        return NULL;
    }
    double *c = wr_store_cells(&k->store, slot);
    if (at) {
        *at = c;
    }
    if (isnan(c[WEIR_KSTATE_SLOT])) { /* fresh: the store made every cell NaN */
        for (int32_t s = 0; s < k->states; s++) {
            double *e = c + s * WR_KSTATE_CELLS;
            e[WEIR_KSTATE_EXPIRES] = INFINITY;
            e[WEIR_KSTATE_KIND] = 0;
            e[WEIR_KSTATE_SLOT] = (double)slot * k->states + s;
        }
    }
    return c;
}

static bool row_empty(const wr_kstate_t *k, const double *c)
{
    for (int32_t s = 0; s < k->states; s++) {
        if (c[s * WR_KSTATE_CELLS + WEIR_KSTATE_KIND] != 0) {
            return false;
        }
    }
    return true;
}

int wr_kstate_clear(wr_kstate_t *k, int64_t key, int32_t state)
{
    if (k->states == 0 || state < 0 || state >= k->states) {
        return -1;
    }
    /* a row in the direct index names its store slot in its first value slot (slot * states) */
    double *c = (uint64_t)key < k->rows_cap ? k->rows[key] : NULL;
    int32_t slot;
    if (c) {
        slot = (int32_t)(c[WEIR_KSTATE_SLOT] / k->states);
    } else {
        slot = wr_store_find(&k->store, key, 0, 0);
        if (slot < 0) {
            return -1;
        }
        c = wr_store_cells(&k->store, slot);
    }
    c[state * WR_KSTATE_CELLS + WEIR_KSTATE_KIND] = 0;
    if (!row_empty(k, c)) {
        return 0;
    }
    drop_row(k, key, slot);
    return 1;
}

int32_t wr_kstate_expire(wr_kstate_t *k, int64_t now_ms, int32_t max, int32_t *dropped)
{
    int32_t n = 0;
    double now = wr_ms_to_double(now_ms);
    for (int32_t seen = 0; seen < max && wr_store_open(&k->store) > 0; seen++) {
        if (k->cursor >= k->store.slots_len) {
            k->cursor = 0;
        }
        int32_t slot = k->cursor++;
        double *c = wr_store_cells(&k->store, slot);
        if (!c) {
            continue;
        }
        bool any = false;
        for (int32_t s = 0; s < k->states; s++) {
            double *e = c + s * WR_KSTATE_CELLS;
            if (e[WEIR_KSTATE_KIND] != 0 && e[WEIR_KSTATE_EXPIRES] < INFINITY &&
                e[WEIR_KSTATE_EXPIRES] <= now) {
                /* only Lua has something to forget, and only for a value it holds: a number
                 * state costs Lua no loop trip (a loop per write of few trips upsets traces) */
                if (e[WEIR_KSTATE_KIND] == WEIR_KSTATE_LUA) {
                    dropped[n++] = (int32_t)e[WEIR_KSTATE_SLOT];
                }
                e[WEIR_KSTATE_KIND] = 0;
                any = true;
            }
        }
        if (any && row_empty(k, c)) {
            int64_t key;
            int64_t start;
            int64_t stop;
            wr_store_window(&k->store, slot, &key, &start, &stop);
            drop_row(k, key, slot);
        }
    }
    return n;
}

double *wr_kstate_at(wr_kstate_t *k, int32_t row, int64_t *key)
{
    int64_t start;
    int64_t stop;
    if (k->states == 0 || row < 0 || row >= k->store.slots_len ||
        wr_store_window(&k->store, row, key, &start, &stop) != 0) {
        return NULL;
    }
    return wr_store_cells(&k->store, row);
}

int32_t wr_kstate_capacity(const wr_kstate_t *k)
{
    return k->store.slots_len;
}

int32_t wr_kstate_rows(const wr_kstate_t *k)
{
    return wr_store_open(&k->store);
}

int64_t wr_kstate_entries(wr_kstate_t *k)
{
    int64_t n = 0;
    for (int32_t r = 0; r < k->store.slots_len; r++) {
        const double *c = wr_store_cells(&k->store, r);
        for (int32_t s = 0; c && s < k->states; s++) {
            n += c[s * WR_KSTATE_CELLS + WEIR_KSTATE_KIND] != 0;
        }
    }
    return n;
}

size_t wr_kstate_bytes(const wr_kstate_t *k)
{
    return wr_store_bytes(&k->store) + k->rows_cap * sizeof *k->rows;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_kstate {
    wr_kstate_t k;
};

/* A key id from the FFI: a whole number in [0, 2^53]; -1 otherwise (never a key id). */
static int64_t key_of(double key)
{
    return key >= 0 && key <= 9007199254740992.0 && key == floor(key) ? (int64_t)key : -1;
}

weir_kstate_t *weir_kstate_new(void)
{
    weir_kstate_t *fk = wr_xmalloc(sizeof *fk);
    wr_kstate_init(&fk->k);
    return fk;
}

void weir_kstate_free(weir_kstate_t *fk)
{
    if (!fk) {
        return;
    }
    wr_kstate_close(&fk->k);
    wr_free(fk);
}

int weir_kstate_set_states(weir_kstate_t *fk, int32_t states)
{
    return wr_kstate_set_states(&fk->k, states);
}

double *weir_kstate_row(weir_kstate_t *fk, double key)
{
    int64_t k = key_of(key);
    return k < 0 ? NULL : wr_kstate_row(&fk->k, k);
}

double *weir_kstate_row_put(weir_kstate_t *fk, double key)
{
    int64_t k = key_of(key);
    return k < 0 ? NULL : wr_kstate_row_put(&fk->k, k);
}

int32_t weir_kstate_clear(weir_kstate_t *fk, double key, int32_t state)
{
    int64_t k = key_of(key);
    return k < 0 ? WEIR_EINVAL : wr_kstate_clear(&fk->k, k, state);
}

int32_t weir_kstate_expire(weir_kstate_t *fk, double now_ms, int32_t max, int32_t *dropped)
{
    if (isnan(now_ms) || max < 0 || (max > 0 && !dropped)) {
        return WEIR_EINVAL;
    }
    return wr_kstate_expire(&fk->k, wr_ms_from_double(now_ms), max, dropped);
}

int32_t weir_kstate_capacity(const weir_kstate_t *fk)
{
    return wr_kstate_capacity(&fk->k);
}

double *weir_kstate_at(weir_kstate_t *fk, int32_t row, double *key)
{
    int64_t k;
    double *c = key ? wr_kstate_at(&fk->k, row, &k) : NULL;
    if (c) {
        *key = (double)k;
    }
    return c;
}

double weir_kstate_stat(weir_kstate_t *fk, int32_t what)
{
    switch (what) {
    case WEIR_STORE_OPEN:
        return (double)wr_kstate_entries(&fk->k);
    case WEIR_STORE_BYTES:
        return (double)(sizeof *fk + wr_kstate_bytes(&fk->k));
    default:
        return NAN;
    }
}
