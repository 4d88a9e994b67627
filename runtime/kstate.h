/* SPDX-License-Identifier: MIT */
/* kstate.h: the keyed state of one keyed operator subtask (weir.keyed: keyed process functions
 * and rolling aggregates), Flink's keyed state backend under weir's rule that numbers live in C.
 * Per key id one row (a slot of the window store, store.c, keyed by (key, [0, 0))) of
 * WR_KSTATE_CELLS doubles per state: the state's number, its expiry time, its kind and its
 * value slot (the index under which Lua keeps a value that is not a number). One lookup per
 * record finds every state of the key: a direct index for dense key ids, else the store's hash. */
#ifndef WR_KSTATE_H
#define WR_KSTATE_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

enum {
    WR_KSTATE_CELLS = 4,      /* the WEIR_KSTATE_* cells (weir_ffi.h) */
    WR_KSTATE_MAX_STATES = 1024 /* states per operator */
};

/* Caller's storage; owns the store. Invariants: a row whose last state wr_kstate_clear empties is
 * dropped (so every row has a state whose kind is not 0, unless its owner set kinds to 0 in the
 * cells itself: weir.interval keeps a busy key's emptied row, and drops it with
 * wr_kstate_clear once the key is idle); the value slot of state s in the row of slot r is
 * r * states + s. */
typedef struct wr_kstate {
    wr_store_t store;
    /* rows[key] for key < rows_cap: the row's cells or NULL, so that the lookup of every record
     * is one load (weir interns keys to dense ids from 1 on); keys beyond are found by hash */
    double **rows;
    size_t rows_cap;
    int32_t states;
    int32_t cursor; /* the row where the next incremental expiry scan starts */
} wr_kstate_t;

/* Empty, with no states. */
void wr_kstate_init(wr_kstate_t *k);
void wr_kstate_close(wr_kstate_t *k);
/* Sets the number of states of each row: 0, or WEIR_ESTATE when a row exists, WEIR_EINVAL
 * outside [0, WR_KSTATE_MAX_STATES]. */
int wr_kstate_set_states(wr_kstate_t *k, int32_t states);

/* Borrowed: the row of key (states * WR_KSTATE_CELLS cells), valid until the row is dropped or k
 * closed (other rows' creation never moves it); NULL when absent or without states. */
double *wr_kstate_row(wr_kstate_t *k, int64_t key);
/* The same, created when absent: every state of a fresh row has kind 0 (empty), expiry +inf,
 * value NaN and its value slot. NULL without states or at WR_STORE_MAX_SLOTS rows. */
double *wr_kstate_row_put(wr_kstate_t *k, int64_t key);
/* Empties (key, state): its kind becomes 0; when no state of the row is left the row is dropped.
 * Returns 1 when the row was dropped, 0 when not, -1 when the key has no row. */
int wr_kstate_clear(wr_kstate_t *k, int64_t key, int32_t state);
/* Incremental expiry (Flink's incremental cleanup): looks at up to `max` rows from where the last
 * scan stopped, wrapping around, and empties every state whose expiry time is <= now_ms (a state
 * without TTL, expiry +inf, never expires), dropping rows left empty. The value slots of the
 * emptied states of kind WEIR_KSTATE_LUA (whose values Lua holds) go to dropped[0 ..) (room for
 * max * states). Returns how many went there. */
int32_t wr_kstate_expire(wr_kstate_t *k, int64_t now_ms, int32_t max, int32_t *dropped);
/* Row slot `row` for enumeration: its cells and *key when it is open, else NULL. Rows run over
 * [0, wr_kstate_capacity). */
double *wr_kstate_at(wr_kstate_t *k, int32_t row, int64_t *key);
int32_t wr_kstate_capacity(const wr_kstate_t *k);
int32_t wr_kstate_rows(const wr_kstate_t *k);
/* Live (key, state) entries: states whose kind is not 0. O(rows). */
int64_t wr_kstate_entries(wr_kstate_t *k);
size_t wr_kstate_bytes(const wr_kstate_t *k);

#endif
