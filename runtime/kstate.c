/* SPDX-License-Identifier: MIT */
/* kstate.c: keyed state entries over the window store: the store's (key, [start, stop)) is
 * (key id, [state id, 0)), its cells are the entry's. Invariant (kstate.h): an open slot is an
 * entry and its SLOT cell holds its id. */
#include "kstate.h"

#include <assert.h>
#include <math.h>
#include <stdbool.h>

#include "ms.h"
#include "weir.h"

void wr_kstate_init(wr_kstate_t *k)
{
    int rc = wr_store_init(&k->store, WR_KSTATE_CELLS);
    assert(rc == 0);
    (void)rc;
    k->cursor = 0;
}

void wr_kstate_close(wr_kstate_t *k)
{
    wr_store_close(&k->store);
    k->cursor = 0;
}

double *wr_kstate_get(wr_kstate_t *k, int64_t key, int32_t state)
{
    int32_t slot = wr_store_find(&k->store, key, state, 0);
    return slot < 0 ? NULL : wr_store_cells(&k->store, slot);
}

double *wr_kstate_put(wr_kstate_t *k, int64_t key, int32_t state)
{
    int32_t slot = wr_store_slot(&k->store, key, state, 0);
    if (slot < 0) {
        return NULL;
    }
    double *c = wr_store_cells(&k->store, slot);
    if (isnan(c[WEIR_KSTATE_SLOT])) { /* fresh: the store made every cell NaN */
        c[WEIR_KSTATE_EXPIRES] = INFINITY;
        c[WEIR_KSTATE_KIND] = 0;
        c[WEIR_KSTATE_SLOT] = slot;
    }
    return c;
}

int32_t wr_kstate_drop(wr_kstate_t *k, int64_t key, int32_t state)
{
    int32_t slot = wr_store_find(&k->store, key, state, 0);
    if (slot < 0) {
        return -1;
    }
    int rc = wr_store_drop(&k->store, slot);
    assert(rc == 0);
    (void)rc;
    return slot;
}

int32_t wr_kstate_expire(wr_kstate_t *k, int64_t now_ms, int32_t max, int32_t *dropped)
{
    int32_t n = 0;
    double now = wr_ms_to_double(now_ms);
    for (int32_t seen = 0; seen < max && k->store.open > 0; seen++) {
        if (k->cursor >= k->store.slots_len) {
            k->cursor = 0;
        }
        int32_t slot = k->cursor++;
        double *c = wr_store_cells(&k->store, slot);
        if (c && c[WEIR_KSTATE_EXPIRES] < INFINITY && c[WEIR_KSTATE_EXPIRES] <= now) {
            wr_store_drop(&k->store, slot);
            dropped[n++] = slot;
        }
    }
    return n;
}

int wr_kstate_at(const wr_kstate_t *k, int32_t slot, int64_t *key, int32_t *state)
{
    int64_t start;
    int64_t stop;
    if (slot < 0 || slot >= k->store.slots_len ||
        wr_store_window(&k->store, slot, key, &start, &stop) != 0) {
        return 0;
    }
    *state = (int32_t)start;
    return 1;
}

int32_t wr_kstate_capacity(const wr_kstate_t *k)
{
    return k->store.slots_len;
}

int32_t wr_kstate_open(const wr_kstate_t *k)
{
    return wr_store_open(&k->store);
}

size_t wr_kstate_bytes(const wr_kstate_t *k)
{
    return wr_store_bytes(&k->store);
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

static bool state_ok(int32_t state)
{
    return state >= 0 && state < WR_KSTATE_MAX_STATES;
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

double *weir_kstate_get(weir_kstate_t *fk, double key, int32_t state)
{
    int64_t k = key_of(key);
    return k < 0 || !state_ok(state) ? NULL : wr_kstate_get(&fk->k, k, state);
}

double *weir_kstate_put(weir_kstate_t *fk, double key, int32_t state)
{
    int64_t k = key_of(key);
    return k < 0 || !state_ok(state) ? NULL : wr_kstate_put(&fk->k, k, state);
}

int32_t weir_kstate_drop(weir_kstate_t *fk, double key, int32_t state)
{
    int64_t k = key_of(key);
    return k < 0 || !state_ok(state) ? WEIR_EINVAL : wr_kstate_drop(&fk->k, k, state);
}

int32_t weir_kstate_expire(weir_kstate_t *fk, double now_ms, int32_t max, int32_t *dropped)
{
    if (isnan(now_ms) || max < 0 || (max > 0 && !dropped)) {
        return WEIR_EINVAL;
    }
    return wr_kstate_expire(&fk->k, wr_ms_from_double(now_ms), max, dropped);
}

int32_t weir_kstate_at(const weir_kstate_t *fk, int32_t slot, double *out)
{
    int64_t key;
    int32_t state;
    if (!out || !wr_kstate_at(&fk->k, slot, &key, &state)) {
        return 0;
    }
    out[0] = (double)key;
    out[1] = state;
    return 1;
}

double *weir_kstate_cells(weir_kstate_t *fk, int32_t slot)
{
    return wr_store_cells(&fk->k.store, slot);
}

int32_t weir_kstate_capacity(const weir_kstate_t *fk)
{
    return wr_kstate_capacity(&fk->k);
}

double weir_kstate_stat(const weir_kstate_t *fk, int32_t what)
{
    switch (what) {
    case WEIR_STORE_OPEN:
        return (double)wr_kstate_open(&fk->k);
    case WEIR_STORE_BYTES:
        return (double)(sizeof *fk + wr_kstate_bytes(&fk->k));
    default:
        return NAN;
    }
}
