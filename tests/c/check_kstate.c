/* SPDX-License-Identifier: MIT */
/* check_kstate.c: keyed state entries: get vs put, fresh cells, per key and state isolation,
 * drop and slot reuse, incremental expiry, enumeration, the FFI's argument checks; and the
 * timer service's dump in registration order (the keyed operator's timers for a snapshot). */
#include <check.h>
#include <math.h>
#include <stdint.h>

#include "check_support.h"
#include "kstate.h"
#include "timers.h"
#include "weir.h"

START_TEST(test_kstate_get_never_creates_and_put_gives_fresh_cells)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    ck_assert_ptr_null(wr_kstate_get(&k, 1, 0));
    double *c = wr_kstate_put(&k, 1, 0);
    ck_assert_ptr_nonnull(c);
    ck_assert(isnan(c[WEIR_KSTATE_VALUE]));
    ck_assert(c[WEIR_KSTATE_EXPIRES] == INFINITY);
    ck_assert(c[WEIR_KSTATE_KIND] == 0);
    ck_assert(c[WEIR_KSTATE_SLOT] == 0);
    c[WEIR_KSTATE_VALUE] = 42;
    c[WEIR_KSTATE_KIND] = WEIR_KSTATE_NUMBER;
    ck_assert_ptr_eq(wr_kstate_get(&k, 1, 0), c);
    ck_assert_ptr_eq(wr_kstate_put(&k, 1, 0), c); /* put of an existing entry keeps it */
    ck_assert(c[WEIR_KSTATE_VALUE] == 42);
    ck_assert_int_eq(wr_kstate_open(&k), 1);
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_keys_and_states_are_separate_entries)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    for (int key = 0; key < 50; key++) {
        for (int st = 0; st < 3; st++) {
            double *c = wr_kstate_put(&k, key, st);
            c[WEIR_KSTATE_VALUE] = key * 10 + st;
        }
    }
    ck_assert_int_eq(wr_kstate_open(&k), 150);
    for (int key = 0; key < 50; key++) {
        for (int st = 0; st < 3; st++) {
            ck_assert(wr_kstate_get(&k, key, st)[WEIR_KSTATE_VALUE] == key * 10 + st);
        }
    }
    ck_assert_ptr_null(wr_kstate_get(&k, 50, 0));
    ck_assert_ptr_null(wr_kstate_get(&k, 0, 3));
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_drop_returns_the_slot_and_it_is_reused_fresh)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    wr_kstate_put(&k, 7, 0);
    double *c = wr_kstate_put(&k, 8, 0);
    c[WEIR_KSTATE_VALUE] = 1;
    c[WEIR_KSTATE_KIND] = WEIR_KSTATE_LUA;
    ck_assert_int_eq(wr_kstate_drop(&k, 8, 0), 1);
    ck_assert_int_eq(wr_kstate_drop(&k, 8, 0), -1);
    ck_assert_ptr_null(wr_kstate_get(&k, 8, 0));
    double *d = wr_kstate_put(&k, 9, 2);
    ck_assert(d[WEIR_KSTATE_SLOT] == 1);
    ck_assert(d[WEIR_KSTATE_KIND] == 0); /* no trace of the dropped entry */
    ck_assert(isnan(d[WEIR_KSTATE_VALUE]));
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_expire_drops_only_entries_due_and_scans_incrementally)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    for (int key = 0; key < 10; key++) {
        wr_kstate_put(&k, key, 0)[WEIR_KSTATE_EXPIRES] = key < 5 ? 100 : 200;
    }
    wr_kstate_put(&k, 10, 0); /* no TTL: never expires */
    int32_t dropped[11];
    ck_assert_int_eq(wr_kstate_expire(&k, 99, 11, dropped), 0);
    ck_assert_int_eq(wr_kstate_expire(&k, 100, 3, dropped), 3); /* slots 0, 1, 2 */
    ck_assert_int_eq(dropped[0], 0);
    ck_assert_int_eq(dropped[2], 2);
    ck_assert_int_eq(wr_kstate_expire(&k, 100, 3, dropped), 2); /* 3, 4; 5 not due */
    ck_assert_int_eq(wr_kstate_open(&k), 6);
    ck_assert_int_eq(wr_kstate_expire(&k, INT64_MAX, 11, dropped), 5);
    ck_assert_int_eq(wr_kstate_open(&k), 1);
    ck_assert_ptr_nonnull(wr_kstate_get(&k, 10, 0));
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_enumerates_every_open_entry_once)
{
    wr_kstate_t k;
    wr_kstate_init(&k);
    for (int key = 0; key < 20; key++) {
        wr_kstate_put(&k, key, key % 2);
    }
    for (int key = 0; key < 20; key += 3) {
        wr_kstate_drop(&k, key, key % 2);
    }
    int seen[20] = {0};
    int n = 0;
    for (int32_t s = 0; s < wr_kstate_capacity(&k); s++) {
        int64_t key;
        int32_t st;
        if (wr_kstate_at(&k, s, &key, &st)) {
            ck_assert_int_eq(st, key % 2);
            seen[key]++;
            n++;
        }
    }
    ck_assert_int_eq(n, wr_kstate_open(&k));
    for (int key = 0; key < 20; key++) {
        ck_assert_int_eq(seen[key], key % 3 == 0 ? 0 : 1);
    }
    wr_kstate_close(&k);
}
END_TEST

START_TEST(test_kstate_ffi_rejects_bad_keys_and_states)
{
    weir_kstate_t *k = weir_kstate_new();
    ck_assert_ptr_null(weir_kstate_put(k, -1, 0));
    ck_assert_ptr_null(weir_kstate_put(k, 1.5, 0));
    ck_assert_ptr_null(weir_kstate_put(k, NAN, 0));
    ck_assert_ptr_null(weir_kstate_put(k, 1, -1));
    ck_assert_ptr_null(weir_kstate_put(k, 1, 1 << 20));
    ck_assert_int_eq(weir_kstate_drop(k, NAN, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_kstate_expire(k, NAN, 1, NULL), WEIR_EINVAL);
    ck_assert_ptr_nonnull(weir_kstate_put(k, 9007199254740992.0, 0));
    double out[2];
    ck_assert_int_eq(weir_kstate_at(k, 0, out), 1);
    ck_assert(out[0] == 9007199254740992.0 && out[1] == 0);
    ck_assert_int_eq(weir_kstate_at(k, 1, out), 0);
    ck_assert(weir_kstate_stat(k, WEIR_STORE_OPEN) == 1);
    ck_assert(weir_kstate_stat(k, WEIR_STORE_BYTES) > 0);
    ck_assert(isnan(weir_kstate_stat(k, WEIR_STORE_ELEMENTS)));
    weir_kstate_free(k);
    weir_kstate_free(NULL);
}
END_TEST

START_TEST(test_timers_dump_is_in_registration_order)
{
    weir_timers_t *t = weir_timers_new();
    double times[] = {50, 10, 30, 10, 20};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(weir_timers_register(t, WEIR_TIME_EVENT, times[i], i, 0, 0), 1);
    }
    weir_timers_delete(t, WEIR_TIME_EVENT, 30, 2, 0, 0);
    weir_timer_t out[8];
    ck_assert_int_eq(weir_timers_dump(t, WEIR_TIME_EVENT, out, 8), 4);
    double want_keys[] = {0, 1, 3, 4};
    for (int i = 0; i < 4; i++) {
        ck_assert(out[i].key == want_keys[i]);
    }
    ck_assert(out[0].time_ms == 50 && out[3].time_ms == 20);
    ck_assert_int_eq(weir_timers_dump(t, WEIR_TIME_EVENT, out, 2), 4); /* only 2 written */
    ck_assert_int_eq(weir_timers_dump(t, WEIR_TIME_PROCESSING, out, 8), 0);
    ck_assert_int_eq(weir_timers_dump(t, 2, out, 8), WEIR_EINVAL);
    /* the dump leaves the heap alone: pops still come in (time, registration) order */
    weir_timer_t x;
    ck_assert_int_eq(weir_timers_pop(t, WEIR_TIME_EVENT, 100, &x), 1);
    ck_assert(x.time_ms == 10 && x.key == 1);
    ck_assert_int_eq(weir_timers_pop(t, WEIR_TIME_EVENT, 100, &x), 1);
    ck_assert(x.time_ms == 10 && x.key == 3);
    weir_timers_free(t);
}
END_TEST

static Suite *kstate_suite(void)
{
    Suite *s = suite_create("kstate");
    add_case(s, "get_never_creates_and_put_gives_fresh_cells",
             test_kstate_get_never_creates_and_put_gives_fresh_cells);
    add_case(s, "keys_and_states_are_separate_entries",
             test_kstate_keys_and_states_are_separate_entries);
    add_case(s, "drop_returns_the_slot_and_it_is_reused_fresh",
             test_kstate_drop_returns_the_slot_and_it_is_reused_fresh);
    add_case(s, "expire_drops_only_entries_due_and_scans_incrementally",
             test_kstate_expire_drops_only_entries_due_and_scans_incrementally);
    add_case(s, "enumerates_every_open_entry_once", test_kstate_enumerates_every_open_entry_once);
    add_case(s, "ffi_rejects_bad_keys_and_states", test_kstate_ffi_rejects_bad_keys_and_states);
    add_case(s, "timers_dump_is_in_registration_order",
             test_timers_dump_is_in_registration_order);
    return s;
}

int main(void)
{
    return run_suite(kstate_suite());
}
