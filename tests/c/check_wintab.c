/* SPDX-License-Identifier: MIT */
/* check_wintab: the window table of weir.aggwindow (wintab.c): ids, drop with backward
 * shift, growth and the return to the initial size, checked against a reference model. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_support.h"
#include "weir.h"
#include "wintab.h"

START_TEST(test_wintab_add_find_and_drop)
{
    weir_wintab_t *t = weir_wintab_new();
    int32_t a = weir_wintab_add(t, 1, 0);
    int32_t b = weir_wintab_add(t, 2, 0);
    ck_assert_int_ge(a, 0);
    ck_assert_int_ne(a, b);
    ck_assert_int_eq(weir_wintab_add(t, 1, 0), a);
    ck_assert_int_eq(weir_wintab_find(t, 1, 0), a);
    ck_assert_int_eq(weir_wintab_find(t, 1, 5000), -1);
    ck_assert(weir_wintab_stat(t, WEIR_STORE_OPEN) == 2);
    ck_assert(isnan(weir_wintab_stat(t, WEIR_STORE_ELEMENTS))); /* counts are the caller's */
    double e[2];
    int found = 0;
    for (int32_t i = 0; i < weir_wintab_capacity(t); i++) {
        if (weir_wintab_at(t, i, e) == a) {
            ck_assert(e[0] == 1 && e[1] == 0);
            found++;
        }
    }
    ck_assert_int_eq(found, 1);
    ck_assert_int_eq(weir_wintab_drop(t, 1, 0), a);
    ck_assert_int_eq(weir_wintab_drop(t, 1, 0), -1);
    ck_assert_int_eq(weir_wintab_add(t, 3, -INFINITY), a); /* a freed id comes back */
    ck_assert_int_eq(weir_wintab_add(t, -1, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_wintab_add(t, 1.5, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_wintab_find(t, 1, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_wintab_at(t, weir_wintab_capacity(t), e), WEIR_EINVAL);
    ck_assert(isnan(weir_wintab_stat(t, 9)));
    weir_wintab_free(t);
    weir_wintab_free(NULL);
}
END_TEST

START_TEST(test_wintab_returns_to_its_initial_size_when_empty)
{
    weir_wintab_t *t = weir_wintab_new();
    double empty = weir_wintab_stat(t, WEIR_STORE_BYTES);
    for (int k = 0; k < 5000; k++) {
        ck_assert_int_ge(weir_wintab_add(t, k, 0), 0);
    }
    ck_assert(weir_wintab_stat(t, WEIR_STORE_BYTES) > empty);
    int32_t cap = weir_wintab_capacity(t);
    for (int k = 0; k < 4999; k++) {
        ck_assert_int_ge(weir_wintab_drop(t, k, 0), 0);
    }
    ck_assert_int_eq(weir_wintab_capacity(t), cap); /* no shrinking while a window is open */
    ck_assert_int_ge(weir_wintab_drop(t, 4999, 0), 0);
    ck_assert(weir_wintab_stat(t, WEIR_STORE_OPEN) == 0);
    ck_assert_int_eq(weir_wintab_capacity(t), 32);
    ck_assert_int_eq(weir_wintab_add(t, 7, 0), 0); /* ids start again at 0 */
    weir_wintab_free(t);
}
END_TEST

/* Random adds and drops against a plain array model over a small key x start space, so that
 * probe runs collide and backward-shift deletion moves entries. */
START_TEST(test_wintab_matches_a_reference_model)
{
    enum { KEYS = 64, STARTS = 16 };
    static int32_t model_id[KEYS][STARTS];
    static int32_t owner[KEYS * STARTS]; /* by id: the (key, start) holding it, or -1 */
    for (int i = 0; i < KEYS * STARTS; i++) {
        owner[i] = -1;
    }
    for (int k = 0; k < KEYS; k++) {
        for (int s = 0; s < STARTS; s++) {
            model_id[k][s] = -1;
        }
    }
    wr_wintab_t t;
    wr_wintab_init(&t);
    srand(11);
    int open = 0;
    for (int step = 0; step < 200000; step++) {
        int k = rand() % KEYS;
        int s = rand() % STARTS;
        int64_t start = (int64_t)s * 5000 - 20000;
        if (rand() % 3 == 0) {
            int32_t id = wr_wintab_drop(&t, k, start);
            ck_assert_int_eq(id, model_id[k][s]);
            if (id >= 0) {
                owner[id] = -1;
                open--;
                model_id[k][s] = -1;
                }
        } else {
            int32_t id = wr_wintab_add(&t, k, start);
            ck_assert_int_ge(id, 0);
            if (model_id[k][s] < 0) {
                ck_assert_int_lt(id, KEYS * STARTS); /* ids stay below the peak of open */
                ck_assert_int_eq(owner[id], -1);     /* a new id is nobody else's */
                owner[id] = k * STARTS + s;
                model_id[k][s] = id;
                open++;
            }
            ck_assert_int_eq(id, model_id[k][s]);
        }
        ck_assert_int_eq(t.open, open);
        ck_assert((size_t)t.open * 4 <= t.index.cap * 3);
    }
    for (int k = 0; k < KEYS; k++) {
        for (int s = 0; s < STARTS; s++) {
            ck_assert_int_eq(wr_wintab_find(&t, k, (int64_t)s * 5000 - 20000), model_id[k][s]);
        }
    }
    wr_wintab_close(&t);
}
END_TEST

START_TEST(test_wintab_gather_equals_finds)
{
    weir_wintab_t *t = weir_wintab_new();
    for (int k = 0; k < 300; k += 2) {
        weir_wintab_add(t, k, 5000);
    }
    weir_wintab_add(t, 1, 0);
    int32_t keys[300];
    int32_t ids[300];
    for (int i = 0; i < 300; i++) {
        keys[i] = 299 - i;
    }
    ck_assert_int_eq(weir_wintab_gather(t, keys, 300, 5000, ids), 300);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(ids[i], weir_wintab_find(t, keys[i], 5000));
        ck_assert_int_eq(ids[i] >= 0, keys[i] % 2 == 0);
    }
    keys[3] = -1;
    ck_assert_int_eq(weir_wintab_gather(t, keys, 300, 5000, ids), WEIR_EINVAL);
    ck_assert_int_eq(weir_wintab_gather(t, keys, 0, 5000, ids), 0);
    weir_wintab_free(t);
}
END_TEST

START_TEST(test_wintab_take_is_gather_then_drop)
{
    weir_wintab_t *t = weir_wintab_new();
    weir_wintab_t *ref = weir_wintab_new();
    for (int k = 0; k < 300; k += 2) {
        ck_assert_int_eq(weir_wintab_add(t, k, 5000), weir_wintab_add(ref, k, 5000));
        ck_assert_int_eq(weir_wintab_add(t, k, 10000), weir_wintab_add(ref, k, 10000));
    }
    int32_t keys[300];
    int32_t ids[300];
    int32_t want[300];
    for (int i = 0; i < 300; i++) {
        keys[i] = 299 - i;
    }
    ck_assert_int_eq(weir_wintab_gather(ref, keys, 300, 5000, want), 300);
    ck_assert_int_eq(weir_wintab_take(t, keys, 300, 5000, ids), 300);
    for (int i = 0; i < 300; i++) {
        ck_assert_int_eq(ids[i], want[i]);
        ck_assert_int_eq(weir_wintab_drop(ref, keys[i], 5000), want[i]);
        /* gone from t; the other window of the key stays */
        ck_assert_int_eq(weir_wintab_find(t, keys[i], 5000), -1);
        ck_assert_int_eq(weir_wintab_find(t, keys[i], 10000), weir_wintab_find(ref, keys[i], 10000));
    }
    ck_assert_double_eq(weir_wintab_stat(t, WEIR_STORE_OPEN), 150);
    /* taking the last windows leaves the table its size; trim returns it to the initial size */
    int32_t cap = weir_wintab_capacity(t);
    ck_assert_int_eq(weir_wintab_take(t, keys, 300, 10000, ids), 300);
    ck_assert_double_eq(weir_wintab_stat(t, WEIR_STORE_OPEN), 0);
    ck_assert_int_eq(weir_wintab_capacity(t), cap);
    weir_wintab_trim(t);
    ck_assert_int_eq(weir_wintab_capacity(t), 32);
    ck_assert_int_eq(weir_wintab_add(t, 7, 0), 0); /* ids from 0 again */
    keys[3] = -1;
    ck_assert_int_eq(weir_wintab_take(t, keys, 300, 5000, ids), WEIR_EINVAL);
    ck_assert_int_eq(weir_wintab_take(t, keys, 0, 5000, ids), 0);
    weir_wintab_free(t);
    weir_wintab_free(ref);
}
END_TEST

static Suite *wintab_suite(void)
{
    Suite *s = suite_create("wintab");
    add_case(s, "add_find_and_drop", test_wintab_add_find_and_drop);
    add_case(s, "returns_to_its_initial_size_when_empty",
             test_wintab_returns_to_its_initial_size_when_empty);
    add_case(s, "matches_a_reference_model", test_wintab_matches_a_reference_model);
    add_case(s, "gather_equals_finds", test_wintab_gather_equals_finds);
    add_case(s, "take_is_gather_then_drop", test_wintab_take_is_gather_then_drop);
    return s;
}

int main(void)
{
    return run_suite(wintab_suite());
}
