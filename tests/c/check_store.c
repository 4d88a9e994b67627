/* SPDX-License-Identifier: MIT */
/* check_store.c: the window store: get-or-create, ids and their reuse, NaN-initialised cells
 * that keep their address, counts, the byte account, per-key window order, the FFI conversions,
 * and a reference model over random operations. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "store.h"
#include "weir.h"

START_TEST(test_store_get_or_create_returns_the_same_slot)
{
    wr_store_t s;
    ck_assert_int_eq(wr_store_init(&s, 2), 0);
    ck_assert_int_eq(wr_store_find(&s, 1, 0, 10), -1);
    int32_t a = wr_store_slot(&s, 1, 0, 10);
    ck_assert_int_ge(a, 0);
    ck_assert_int_eq(wr_store_slot(&s, 1, 0, 10), a);
    ck_assert_int_eq(wr_store_find(&s, 1, 0, 10), a);
    ck_assert_int_eq(wr_store_open(&s), 1);
    int64_t key;
    int64_t start;
    int64_t stop;
    ck_assert_int_eq(wr_store_window(&s, a, &key, &start, &stop), 0);
    ck_assert(key == 1 && start == 0 && stop == 10);
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_different_windows_and_keys_get_different_slots)
{
    wr_store_t s;
    wr_store_init(&s, 0);
    int32_t ids[5] = {
        wr_store_slot(&s, 1, 0, 10), wr_store_slot(&s, 2, 0, 10), wr_store_slot(&s, 1, 10, 20),
        wr_store_slot(&s, 1, 0, 20), wr_store_slot(&s, 1, INT64_MIN, INT64_MAX),
    };
    for (int i = 0; i < 5; i++) {
        ck_assert_int_ge(ids[i], 0);
        for (int j = 0; j < i; j++) {
            ck_assert_int_ne(ids[i], ids[j]);
        }
    }
    ck_assert_int_eq(wr_store_open(&s), 5);
    ck_assert_int_eq(wr_store_find(&s, 2, 10, 20), -1); /* find never creates */
    ck_assert_int_eq(wr_store_open(&s), 5);
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_drop_frees_the_slot_and_its_id_is_reused)
{
    wr_store_t s;
    wr_store_init(&s, 1);
    int32_t a = wr_store_slot(&s, 1, 0, 10);
    int32_t b = wr_store_slot(&s, 1, 10, 20);
    ck_assert_int_eq(wr_store_drop(&s, a), 0);
    ck_assert_int_eq(wr_store_find(&s, 1, 0, 10), -1);
    ck_assert_int_eq(wr_store_find(&s, 1, 10, 20), b);
    ck_assert_int_eq(wr_store_open(&s), 1);
    ck_assert_int_eq(wr_store_drop(&s, a), WEIR_EINVAL); /* already dropped */
    ck_assert_int_eq(wr_store_drop(&s, 999), WEIR_EINVAL);
    ck_assert_int_eq(wr_store_drop(&s, -1), WEIR_EINVAL);
    ck_assert_int_eq(wr_store_count(&s, a), WEIR_EINVAL);
    ck_assert_ptr_null(wr_store_cells(&s, a));
    int32_t c = wr_store_slot(&s, 7, 30, 40);
    ck_assert_int_eq(c, a); /* the freed id comes back */
    ck_assert_int_eq(wr_store_slot(&s, 1, 0, 10), 2); /* a fresh id only when none is free */
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_cells_start_nan_persist_and_never_move)
{
    wr_store_t s;
    wr_store_init(&s, 3);
    int32_t a = wr_store_slot(&s, 1, 0, 10);
    double *cells = wr_store_cells(&s, a);
    ck_assert_ptr_nonnull(cells);
    for (int i = 0; i < 3; i++) {
        ck_assert(isnan(cells[i]));
    }
    cells[0] = 1.5;
    cells[2] = -7;
    /* Many more slots: the slot array, tables and cell segments all grow. */
    bool ok = true;
    for (int64_t k = 0; k < 5000; k++) {
        int32_t id = wr_store_slot(&s, k, 100, 200);
        double *c = wr_store_cells(&s, id);
        ok = ok && isnan(c[0]) && isnan(c[1]) && isnan(c[2]);
        c[1] = (double)k;
    }
    ck_assert(ok);
    ck_assert_ptr_eq(wr_store_cells(&s, a), cells);
    ck_assert(cells[0] == 1.5 && isnan(cells[1]) && cells[2] == -7);
    for (int64_t k = 0; k < 5000; k++) {
        ok = ok && wr_store_cells(&s, wr_store_find(&s, k, 100, 200))[1] == (double)k;
    }
    ck_assert(ok);
    /* A reused id starts over with NaN cells. */
    ck_assert_int_eq(wr_store_drop(&s, a), 0);
    ck_assert_int_eq(wr_store_slot(&s, 9, 0, 10), a);
    ck_assert(isnan(wr_store_cells(&s, a)[0]) && isnan(wr_store_cells(&s, a)[2]));
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_without_cells_has_no_cell_pointer)
{
    wr_store_t s;
    wr_store_init(&s, 0);
    int32_t a = wr_store_slot(&s, 1, 0, 10);
    ck_assert_ptr_null(wr_store_cells(&s, a));
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_counts_add_up_per_slot_and_in_total)
{
    wr_store_t s;
    wr_store_init(&s, 0);
    int32_t a = wr_store_slot(&s, 1, 0, 10);
    int32_t b = wr_store_slot(&s, 2, 0, 10);
    ck_assert_int_eq(wr_store_count(&s, a), 0);
    ck_assert_int_eq(wr_store_count_add(&s, a, 1), 1);
    ck_assert_int_eq(wr_store_count_add(&s, a, 4), 5);
    ck_assert_int_eq(wr_store_count_add(&s, b, 2), 2);
    ck_assert_int_eq(wr_store_count_add(&s, a, -2), 3); /* an evictor removed two */
    ck_assert_int_eq(wr_store_elements(&s), 5);
    ck_assert_int_eq(wr_store_count_add(&s, b, -3), WEIR_EINVAL); /* never below 0 */
    ck_assert_int_eq(wr_store_count(&s, b), 2);
    ck_assert_int_eq(wr_store_count_add(&s, b, INT32_MAX), WEIR_EINVAL);
    ck_assert_int_eq(wr_store_count(&s, b), 2);
    ck_assert_int_eq(wr_store_elements(&s), 5);
    ck_assert_int_eq(wr_store_drop(&s, a), 0);
    ck_assert_int_eq(wr_store_elements(&s), 2); /* a dropped slot's elements leave the total */
    ck_assert_int_eq(wr_store_count_add(&s, a, 1), WEIR_EINVAL);
    /* A reused slot starts at 0. */
    ck_assert_int_eq(wr_store_slot(&s, 3, 0, 10), a);
    ck_assert_int_eq(wr_store_count(&s, a), 0);
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_bytes_grow_and_return_to_baseline_after_dropping_all)
{
    weir_store_t *s = weir_store_new(4);
    double empty = weir_store_stat(s, WEIR_STORE_BYTES);
    ck_assert(empty > 0);
    for (int round = 0; round < 2; round++) {
        double before = empty;
        int32_t ids[3000];
        for (int i = 0; i < 3000; i++) {
            /* 1000 keys with 3 windows each: inline and heap key lists both show up */
            ids[i] = weir_store_slot(s, i % 1000, (i / 1000) * 10, (i / 1000) * 10 + 10);
            weir_store_count_add(s, ids[i], 2);
            if (i % 500 == 499) {
                double now = weir_store_stat(s, WEIR_STORE_BYTES);
                ck_assert(now >= before);
                before = now;
            }
        }
        ck_assert(before > empty);
        ck_assert(weir_store_stat(s, WEIR_STORE_OPEN) == 3000);
        ck_assert(weir_store_stat(s, WEIR_STORE_ELEMENTS) == 6000);
        double full = weir_store_stat(s, WEIR_STORE_BYTES);
        /* bytes per slot, 32 of them the cells: the rest stays near the 64-byte aim */
        ck_assert(full / 3000 < 32 + 96);
        for (int i = 0; i < 3000; i += 2) {
            ck_assert_int_eq(weir_store_drop(s, ids[i]), 0);
        }
        for (int i = 0; i < 3000; i += 2) {
            ck_assert_int_eq(weir_store_drop(s, ids[i]), WEIR_EINVAL);
        }
        ck_assert(weir_store_stat(s, WEIR_STORE_OPEN) == 1500);
        ck_assert(weir_store_stat(s, WEIR_STORE_ELEMENTS) == 3000);
        ck_assert(weir_store_stat(s, WEIR_STORE_BYTES) <= full);
        for (int i = 1; i < 3000; i += 2) {
            ck_assert_int_eq(weir_store_drop(s, ids[i]), 0);
        }
        ck_assert(weir_store_stat(s, WEIR_STORE_OPEN) == 0);
        ck_assert(weir_store_stat(s, WEIR_STORE_ELEMENTS) == 0);
        ck_assert(weir_store_stat(s, WEIR_STORE_BYTES) == empty);
    }
    ck_assert(isnan(weir_store_stat(s, 3)));
    weir_store_free(s);
}
END_TEST

START_TEST(test_store_tables_shrink_when_mostly_dropped)
{
    wr_store_t s;
    wr_store_init(&s, 0);
    for (int64_t k = 0; k < 4096; k++) {
        wr_store_slot(&s, k, 0, 10);
    }
    size_t full = wr_store_bytes(&s);
    for (int64_t k = 1; k < 4096; k++) {
        ck_assert_int_eq(wr_store_drop(&s, wr_store_find(&s, k, 0, 10)), 0);
    }
    /* One slot left: the hash table is back near its minimum size. */
    ck_assert_uint_le(s.slot_index.cap, 64);
    ck_assert_uint_lt(wr_store_bytes(&s), full);
    ck_assert_int_ge(wr_store_find(&s, 0, 0, 10), 0);
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_ffi_maps_global_window_bounds_to_infinities)
{
    weir_store_t *s = weir_store_new(1);
    int32_t g = weir_store_slot(s, 3, -INFINITY, INFINITY);
    ck_assert_int_ge(g, 0);
    ck_assert_int_eq(weir_store_slot(s, 3, -1e300, 1e300), g); /* saturates to the same ends */
    ck_assert_int_eq(weir_store_find(s, 3, -INFINITY, INFINITY), g);
    ck_assert_int_eq(weir_store_find(s, 3, INT64_MIN, INT64_MAX), g);
    int32_t t = weir_store_slot(s, 3.7, 1000.9, 2000.2); /* truncated toward zero */
    ck_assert_int_ne(t, g);
    ck_assert_int_eq(weir_store_find(s, 3, 1000, 2000), t);
    double w[3];
    ck_assert_int_eq(weir_store_window(s, t, w), 0); /* what a checkpoint reads of a slot */
    ck_assert(w[0] == 3 && w[1] == 1000 && w[2] == 2000);
    ck_assert_int_eq(weir_store_window(s, g, w), 0);
    ck_assert(w[1] == -INFINITY && w[2] == INFINITY);
    ck_assert(isnan(weir_store_cells(s, g)[0]));
    ck_assert_int_eq(weir_store_count_add(s, g, 3), 3);
    ck_assert_int_eq(weir_store_count(s, g), 3);
    ck_assert_int_eq(weir_store_drop(s, g), 0);
    ck_assert_int_eq(weir_store_find(s, 3, -INFINITY, INFINITY), -1);
    ck_assert_int_eq(weir_store_count(s, g), WEIR_EINVAL);
    weir_store_free(s);
    weir_store_free(NULL);
}
END_TEST

START_TEST(test_store_ffi_rejects_nan_bad_slots_and_bad_sizes)
{
    ck_assert_ptr_null(weir_store_new(-1));
    ck_assert_ptr_null(weir_store_new(WR_STORE_MAX_CELLS + 1));
    wr_store_t bad;
    ck_assert_int_eq(wr_store_init(&bad, -1), WEIR_EINVAL);
    wr_store_close(&bad);
    weir_store_t *s = weir_store_new(0);
    ck_assert_int_eq(weir_store_slot(s, NAN, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_slot(s, 1, NAN, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_slot(s, 1, 0, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_find(s, NAN, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_find(s, 1, 0, 10), -1);
    ck_assert_int_eq(weir_store_drop(s, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_count(s, 0), WEIR_EINVAL);
    double w[3];
    ck_assert_int_eq(weir_store_window(s, 0, w), WEIR_EINVAL);
    ck_assert_int_eq(weir_store_count_add(s, 0, 1), WEIR_EINVAL);
    ck_assert_ptr_null(weir_store_cells(s, 0));
    ck_assert(weir_store_stat(s, WEIR_STORE_OPEN) == 0);
    weir_store_free(s);
}
END_TEST

/* --- reference model ----------------------------------------------------------------------- */

static uint64_t rng_state;

static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static int64_t rnd_below(int64_t n)
{
    return (int64_t)(rnd() % (uint64_t)n);
}

/* 12 keys x (12 starts x 3 lengths + the global window) = 444 windows: ids stay below PICK. */
enum { KEYS = 12, STARTS = 12, MODEL_IDS = 1024, PICK = 512, CELLS = 2 };

/* By slot id, as the store hands them out: what the store must say about each. */
typedef struct model_slot {
    bool open;
    int64_t key;
    int64_t start;
    int64_t stop;
    int32_t count;
    double cell; /* last value written to cell 1; NaN when never */
    double *cells;
} model_slot_t;

static model_slot_t model[MODEL_IDS];

static int bad_line;
static int bad_op;
static int cur_op;

/* Check reports every passing assertion to its parent process, which is slow in a hot loop:
 * the random test notes its first mismatch here and asserts once at the end. */
static void expect(bool cond, int line)
{
    if (!cond && bad_line == 0) {
        bad_line = line;
        bad_op = cur_op;
    }
}

static int32_t model_find(int64_t key, int64_t start, int64_t stop)
{
    for (int32_t id = 0; id < MODEL_IDS; id++) {
        const model_slot_t *m = &model[id];
        if (m->open && m->key == key && m->start == start && m->stop == stop) {
            return id;
        }
    }
    return -1;
}

static void random_window(int64_t *key, int64_t *start, int64_t *stop)
{
    *key = rnd_below(KEYS) - 2;
    if (rnd_below(20) == 0) {
        *start = INT64_MIN;
        *stop = INT64_MAX;
        return;
    }
    *start = rnd_below(STARTS) * 10;
    *stop = *start + 5 * (1 + rnd_below(3));
}

START_TEST(test_store_matches_a_reference_model_over_random_operations)
{
    wr_store_t s;
    wr_store_init(&s, CELLS);
    memset(model, 0, sizeof model);
    bad_line = 0;
    int64_t elements = 0;
    int32_t open = 0;
    rng_state = UINT64_C(0x2545f4914f6cdd1d);
    for (cur_op = 0; cur_op < 100000 && bad_line == 0; cur_op++) {
        int64_t key;
        int64_t start;
        int64_t stop;
        int64_t r = rnd_below(100);
        if (r < 35) {
            random_window(&key, &start, &stop);
            int32_t want = model_find(key, start, stop);
            int32_t id = wr_store_slot(&s, key, start, stop);
            expect(id >= 0 && id < MODEL_IDS, __LINE__);
            if (bad_line) {
                break;
            }
            if (want >= 0) {
                expect(id == want, __LINE__);
                expect(wr_store_cells(&s, id) == model[id].cells, __LINE__);
            } else {
                expect(!model[id].open, __LINE__);
                double *c = wr_store_cells(&s, id);
                expect(c && isnan(c[0]) && isnan(c[1]), __LINE__);
                model[id] = (model_slot_t){.open = true, .key = key, .start = start,
                                           .stop = stop, .cell = NAN, .cells = c};
                open++;
            }
        } else if (r < 50) {
            random_window(&key, &start, &stop);
            expect(wr_store_find(&s, key, start, stop) == model_find(key, start, stop),
                   __LINE__);
        } else if (r < 70) {
            /* Mostly an open slot, sometimes any id. */
            int32_t id = (int32_t)rnd_below(PICK);
            for (int tries = 0; tries < 8 && !model[id].open; tries++) {
                id = (int32_t)rnd_below(PICK);
            }
            int rc = wr_store_drop(&s, id);
            expect(rc == (model[id].open ? 0 : WEIR_EINVAL), __LINE__);
            if (model[id].open) {
                model[id].open = false;
                elements -= model[id].count;
                open--;
            }
        } else if (r < 85) {
            int32_t id = (int32_t)rnd_below(PICK);
            int32_t delta = (int32_t)rnd_below(9) - 3;
            int32_t rc = wr_store_count_add(&s, id, delta);
            if (!model[id].open || model[id].count + delta < 0) {
                expect(rc == WEIR_EINVAL, __LINE__);
            } else {
                model[id].count += delta;
                elements += delta;
                expect(rc == model[id].count, __LINE__);
            }
            expect(wr_store_count(&s, id) == (model[id].open ? model[id].count : WEIR_EINVAL),
                   __LINE__);
        } else if (r < 93) {
            int32_t id = (int32_t)rnd_below(PICK);
            double *c = wr_store_cells(&s, id);
            if (!model[id].open) {
                expect(c == NULL, __LINE__);
            } else {
                expect(c == model[id].cells, __LINE__);
                expect(isnan(c[0]), __LINE__); /* nobody writes cell 0 */
                expect(isnan(model[id].cell) ? isnan(c[1]) : c[1] == model[id].cell, __LINE__);
                model[id].cell = (double)cur_op;
                c[1] = model[id].cell;
            }
        } else {
            int32_t id = (int32_t)rnd_below(PICK);
            int64_t k;
            int64_t a;
            int64_t b;
            int rc = wr_store_window(&s, id, &k, &a, &b);
            expect(rc == (model[id].open ? 0 : WEIR_EINVAL), __LINE__);
            expect(rc < 0 || (k == model[id].key && a == model[id].start && b == model[id].stop),
                   __LINE__);
        }
        expect(wr_store_open(&s) == open, __LINE__);
        expect(wr_store_elements(&s) == elements, __LINE__);
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d, op %d", bad_line, bad_op);
    for (int32_t id = 0; id < MODEL_IDS; id++) {
        if (model[id].open) {
            expect(wr_store_find(&s, model[id].key, model[id].start, model[id].stop) == id,
                   __LINE__);
        }
    }
    ck_assert_msg(bad_line == 0, "final find mismatch at line %d", bad_line);
    wr_store_close(&s);
}
END_TEST

START_TEST(test_store_holds_a_million_slots)
{
    wr_store_t s;
    wr_store_init(&s, 1);
    size_t empty = wr_store_bytes(&s);
    enum { N = 1 << 20, PER_KEY = 8 };
    bool ok = true;
    for (int32_t i = 0; i < N; i++) {
        int64_t w = i % PER_KEY;
        ok = ok && wr_store_slot(&s, i / PER_KEY, w * 1000, w * 1000 + 1000) == i;
    }
    ck_assert(ok);
    ck_assert_int_eq(wr_store_open(&s), N);
    /* per slot: 32 B record, 8 B cell, 4 B key list entry, 8 B index entries at 1/2 load
     * here, array slack (73 B measured; 56 B with 4 B index entries and 24 B records) */
    ck_assert_uint_lt(wr_store_bytes(&s) / N, 80);
    for (int32_t i = N - 1; i >= 0; i--) {
        int64_t w = i % PER_KEY;
        ok = ok && wr_store_find(&s, i / PER_KEY, w * 1000, w * 1000 + 1000) == i;
        ok = ok && wr_store_drop(&s, i) == 0;
    }
    ck_assert(ok);
    ck_assert_uint_eq(wr_store_bytes(&s), empty);
    wr_store_close(&s);
}
END_TEST

static Suite *store_suite(void)
{
    Suite *s = suite_create("store");
    add_case(s, "get_or_create_returns_the_same_slot",
             test_store_get_or_create_returns_the_same_slot);
    add_case(s, "different_windows_and_keys_get_different_slots",
             test_store_different_windows_and_keys_get_different_slots);
    add_case(s, "drop_frees_the_slot_and_its_id_is_reused",
             test_store_drop_frees_the_slot_and_its_id_is_reused);
    add_case(s, "cells_start_nan_persist_and_never_move",
             test_store_cells_start_nan_persist_and_never_move);
    add_case(s, "without_cells_has_no_cell_pointer", test_store_without_cells_has_no_cell_pointer);
    add_case(s, "counts_add_up_per_slot_and_in_total",
             test_store_counts_add_up_per_slot_and_in_total);
    add_case(s, "bytes_grow_and_return_to_baseline_after_dropping_all",
             test_store_bytes_grow_and_return_to_baseline_after_dropping_all);
    add_case(s, "tables_shrink_when_mostly_dropped", test_store_tables_shrink_when_mostly_dropped);
    add_case(s, "ffi_maps_global_window_bounds_to_infinities",
             test_store_ffi_maps_global_window_bounds_to_infinities);
    add_case(s, "ffi_rejects_nan_bad_slots_and_bad_sizes",
             test_store_ffi_rejects_nan_bad_slots_and_bad_sizes);
    add_case(s, "matches_a_reference_model_over_random_operations",
             test_store_matches_a_reference_model_over_random_operations);
    add_case(s, "holds_a_million_slots", test_store_holds_a_million_slots);
    return s;
}

int main(void)
{
    return run_suite(store_suite());
}
