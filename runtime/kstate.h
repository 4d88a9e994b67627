/* SPDX-License-Identifier: MIT */
/* kstate.h: the keyed state of one keyed operator subtask (weir.keyed: keyed process functions
 * and rolling aggregates), Flink's keyed state backend under weir's rule that numbers live in C:
 * (key id, state id) -> an entry of WR_KSTATE_CELLS doubles (its number, its expiry time, its
 * kind, its slot id), over the window store (store.c). A value that is not a number stays in
 * Lua, in a table indexed by the entry's slot id. */
#ifndef WR_KSTATE_H
#define WR_KSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum {
    WR_KSTATE_CELLS = 4,       /* the WEIR_KSTATE_* cells (weir_ffi.h) */
    WR_KSTATE_MAX_STATES = 1 << 20 /* state ids are 0 .. WR_KSTATE_MAX_STATES - 1 */
};

/* Caller's storage; owns the store. Invariant: every open slot of the store is one entry whose
 * SLOT cell holds its own id; an entry's key and state are the store window's key and start. */
typedef struct wr_kstate {
    wr_store_t store;
    int32_t cursor; /* where the next incremental expiry scan starts (a slot id) */
} wr_kstate_t;

void wr_kstate_init(wr_kstate_t *k);
void wr_kstate_close(wr_kstate_t *k);

/* Borrowed: the cells of (key, state), valid until that entry is dropped or k closed (other
 * entries' creation never moves them); NULL when absent. */
double *wr_kstate_get(wr_kstate_t *k, int64_t key, int32_t state);
/* The same, created when absent: a fresh entry has kind 0 (empty), expiry +inf, value NaN.
 * NULL when WR_STORE_MAX_SLOTS entries are open. */
double *wr_kstate_put(wr_kstate_t *k, int64_t key, int32_t state);
/* Removes (key, state): the slot id it had, or -1 when absent. */
int32_t wr_kstate_drop(wr_kstate_t *k, int64_t key, int32_t state);
/* Incremental expiry (Flink's incremental cleanup): looks at up to `max` slot ids from where the
 * last scan stopped, wrapping around, and drops the entries whose expiry time is <= now_ms; the
 * dropped slot ids go to dropped[0 ..) (room for max). Returns how many were dropped. */
int32_t wr_kstate_expire(wr_kstate_t *k, int64_t now_ms, int32_t max, int32_t *dropped);
/* Entry `slot` for enumeration: 1 and *key, *state when it is open, else 0. Slot ids run over
 * [0, wr_kstate_capacity). */
int wr_kstate_at(const wr_kstate_t *k, int32_t slot, int64_t *key, int32_t *state);
int32_t wr_kstate_capacity(const wr_kstate_t *k);
int32_t wr_kstate_open(const wr_kstate_t *k);
size_t wr_kstate_bytes(const wr_kstate_t *k);

#endif
