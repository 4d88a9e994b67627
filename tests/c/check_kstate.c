/* SPDX-License-Identifier: MIT */
/* check_kstate.c: keyed state rows: lookup vs create, fresh states, per key isolation, clear and
 * row reuse, incremental expiry, enumeration, the FFI's argument checks; and the
 * timer service's dump in registration order (the keyed operator's timers for a snapshot). */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "check_support.h"
#include "kstate.h"
#include "timers.h"
#include "weir.h"

START_TEST(test_kstate_row_never_creates_and_row_put_gives_fresh_states)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    ck_assert_ptr_null(wr_kstate_row_put(&k, 1)); /* no states yet */
    ck_assert_int_eq(wr_kstate_set_states(&k, 2), 0);
    ck_assert_ptr_null(wr_kstate_row(&k, 1));
    double *c = wr_kstate_row_put(&k, 1);
    ck_assert_ptr_nonnull(c);
    for (int s = 0; s < 2; s++) {
        double *e = c + s * WR_KSTATE_CELLS;
        ck_assert(isnan(e[WEIR_KSTATE_VALUE]));
        ck_assert(e[WEIR_KSTATE_EXPIRES] == INFINITY);
        ck_assert(e[WEIR_KSTATE_KIND] == 0);
        ck_assert(e[WEIR_KSTATE_SLOT] == s); /* row slot 0 */
    }
    c[WEIR_KSTATE_VALUE] = 42;
    c[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    ck_assert_ptr_eq(wr_kstate_row(&k, 1), c);
    ck_assert_ptr_eq(wr_kstate_row_put(&k, 1), c); /* an existing row is kept */
    ck_assert(c[WEIR_KSTATE_VALUE] == 42);
    ck_assert_int_eq(wr_kstate_set_states(&k, 3), WEIR_ESTATE); /* rows exist */
    ck_assert_int_eq(wr_kstate_set_states(&k, -1), WEIR_EINVAL);
    ck_assert_int_eq(wr_kstate_entries(&k), 1);
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_keys_have_separate_rows)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_set_states(&k, 3);
    for (int key = 0; key < 50; key++) {
        double *c = wr_kstate_row_put(&k, key);
        for (int st = 0; st < 3; st++) {
            c[st * WR_KSTATE_CELLS + WEIR_KSTATE_VALUE] = key * 10 + st;
            c[st * WR_KSTATE_CELLS + WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
        }
    }
    ck_assert_int_eq(wr_kstate_rows(&k), 50);
    ck_assert_int_eq(wr_kstate_entries(&k), 150);
    for (int key = 0; key < 50; key++) {
        for (int st = 0; st < 3; st++) {
            ck_assert(wr_kstate_row(&k, key)[st * WR_KSTATE_CELLS] == key * 10 + st);
        }
    }
    ck_assert_ptr_null(wr_kstate_row(&k, 50));
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_clear_drops_the_row_with_its_last_state)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_set_states(&k, 2);
    double *c = wr_kstate_row_put(&k, 8);
    c[WEIR_KSTATE_KIND] = WEIR_KSTATE_LUA;
    c[WR_KSTATE_CELLS + WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    ck_assert_int_eq(wr_kstate_clear(&k, 8, 0), 0);
    ck_assert(c[WEIR_KSTATE_KIND] == 0);
    ck_assert_int_eq(wr_kstate_clear(&k, 8, 1), 1);
    ck_assert_ptr_null(wr_kstate_row(&k, 8));
    ck_assert_int_eq(wr_kstate_clear(&k, 8, 1), -1);
    ck_assert_int_eq(wr_kstate_clear(&k, 8, 2), -1); /* no such state */
    double *d = wr_kstate_row_put(&k, 9);
    ck_assert(d[WEIR_KSTATE_KIND] == 0); /* the reused row is fresh */
    ck_assert(d[WEIR_KSTATE_SLOT] == 0);
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_expire_empties_only_states_due_and_scans_incrementally)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_set_states(&k, 2);
    for (int key = 0; key < 10; key++) {
        double *c = wr_kstate_row_put(&k, key);
        c[WEIR_KSTATE_KIND] = WEIR_KSTATE_LUA;
        c[WEIR_KSTATE_EXPIRES] = key < 5 ? 100 : 200;
    }
    double *keep = wr_kstate_row_put(&k, 10);
    keep[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER; /* no TTL: never expires */
    keep[WR_KSTATE_CELLS + WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    keep[WR_KSTATE_CELLS + WEIR_KSTATE_EXPIRES] = 50; /* but its second state does */
    int32_t dropped[22];
    ck_assert_int_eq(wr_kstate_expire(&k, 49, 11, dropped), 0);
    ck_assert_int_eq(wr_kstate_expire(&k, 100, 3, dropped), 3); /* rows 0, 1, 2 */
    ck_assert_int_eq(dropped[0], 0);
    ck_assert_int_eq(dropped[2], 4); /* row 2, state 0 */
    ck_assert_int_eq(wr_kstate_expire(&k, 100, 3, dropped), 2); /* 3, 4; 5 not due */
    ck_assert_int_eq(wr_kstate_rows(&k), 6);
    /* rows 5..9; keep's second state is emptied too, but a number leaves Lua nothing to forget:
     * only the value slots of Lua-held values are reported */
    ck_assert_int_eq(wr_kstate_expire(&k, INT64_MAX, 11, dropped), 5);
    ck_assert_int_eq(dropped[0], 12); /* row 6, state 0: the scan goes on where it stopped */
    ck_assert_int_eq(dropped[4], 10); /* row 5, after the wrap */
    ck_assert_int_eq(wr_kstate_rows(&k), 1);
    ck_assert_ptr_eq(wr_kstate_row(&k, 10), keep);
    ck_assert(keep[WEIR_KSTATE_KIND] == WEIR_KSTATE_NUMBER);
    ck_assert(keep[WR_KSTATE_CELLS + WEIR_KSTATE_KIND] == 0);
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_enumerates_every_open_row_once)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_set_states(&k, 1);
    for (int key = 0; key < 20; key++) {
        wr_kstate_row_put(&k, key)[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    }
    for (int key = 0; key < 20; key += 3) {
        wr_kstate_clear(&k, key, 0);
    }
    int seen[20] = {0};
    int n = 0;
    for (int32_t r = 0; r < wr_kstate_capacity(&k); r++) {
        int64_t key;
        if (wr_kstate_at(&k, r, &key)) {
            seen[key]++;
            n++;
        }
    }
    ck_assert_int_eq(n, wr_kstate_rows(&k));
    for (int key = 0; key < 20; key++) {
        ck_assert_int_eq(seen[key], key % 3 == 0 ? 0 : 1);
    }
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_sparse_keys_are_found_by_hash)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_set_states(&k, 1);
    int64_t keys[] = {3, 1000000, INT64_C(1) << 40, 5, 2000};
    for (int i = 0; i < 5; i++) {
        double *c = wr_kstate_row_put(&k, keys[i]);
        c[WEIR_KSTATE_VALUE] = i;
        c[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    }
    ck_assert_uint_lt(k.rows_cap, 10000); /* the direct index did not grow to the far keys */
    for (int i = 0; i < 5; i++) {
        ck_assert(wr_kstate_row(&k, keys[i])[WEIR_KSTATE_VALUE] == i);
    }
    ck_assert_int_eq(wr_kstate_clear(&k, 1000000, 0), 1);
    ck_assert_int_eq(wr_kstate_clear(&k, 5, 0), 1);
    ck_assert_ptr_null(wr_kstate_row(&k, 1000000));
    ck_assert_ptr_null(wr_kstate_row(&k, 5)); /* forgotten by the direct index too */
    int32_t dropped[4];
    wr_kstate_row(&k, 3)[WEIR_KSTATE_EXPIRES] = 10;
    ck_assert_int_eq(wr_kstate_expire(&k, 10, 4, dropped), 0); /* a number: none to report */
    ck_assert_ptr_null(wr_kstate_row(&k, 3));
    ck_assert_int_eq(wr_kstate_rows(&k), 2);
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_ffi_rejects_bad_keys)
{
    weir_kstate_t *k = weir_kstate_new();
    ck_assert_int_eq(weir_kstate_set_states(k, 1), 0);
    ck_assert_ptr_null(weir_kstate_row_put(k, -1));
    ck_assert_ptr_null(weir_kstate_row_put(k, 1.5));
    ck_assert_ptr_null(weir_kstate_row_put(k, NAN));
    ck_assert_int_eq(weir_kstate_clear(k, NAN, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_kstate_expire(k, NAN, 1, NULL), WEIR_EINVAL);
    double *c = weir_kstate_row_put(k, 9007199254740992.0);
    ck_assert_ptr_nonnull(c);
    c[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    double key;
    ck_assert_ptr_eq(weir_kstate_at(k, 0, &key), c);
    ck_assert(key == 9007199254740992.0);
    ck_assert_ptr_null(weir_kstate_at(k, 1, &key));
    ck_assert(weir_kstate_stat(k, WEIR_STORE_OPEN) == 1);
    ck_assert(weir_kstate_stat(k, WEIR_STORE_BYTES) > 0);
    ck_assert(isnan(weir_kstate_stat(k, WEIR_STORE_ELEMENTS)));
    weir_kstate_free(k);
    weir_kstate_free(NULL);
}
END_TEST

static Suite *kstate_suite(void)
{
    Suite *s = suite_create("kstate");
    add_case(s, "row_never_creates_and_row_put_gives_fresh_states",
             test_kstate_row_never_creates_and_row_put_gives_fresh_states);
    add_case(s, "keys_have_separate_rows", test_kstate_keys_have_separate_rows);
    add_case(s, "clear_drops_the_row_with_its_last_state",
             test_kstate_clear_drops_the_row_with_its_last_state);
    add_case(s, "expire_empties_only_states_due_and_scans_incrementally",
             test_kstate_expire_empties_only_states_due_and_scans_incrementally);
    add_case(s, "enumerates_every_open_row_once", test_kstate_enumerates_every_open_row_once);
    add_case(s, "sparse_keys_are_found_by_hash", test_kstate_sparse_keys_are_found_by_hash);
    add_case(s, "ffi_rejects_bad_keys", test_kstate_ffi_rejects_bad_keys);
    return s;
}

int main(void)
{
    return run_suite(kstate_suite());
}
