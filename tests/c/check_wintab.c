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

/* Random adds, drops, takes and walks by position against a plain array model over a small key
 * x start space, so that probe runs collide, backward-shift deletion moves entries, and windows
 * are opened past their key's top start (unindexed) and behind it (indexed) in every mix. */
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
        if (rand() % 64 == 0) { /* a fire: the windows of one start, taken for every key */
            int32_t keys[KEYS];
            int32_t ids[KEYS];
            for (int i = 0; i < KEYS; i++) {
                keys[i] = (i * 37 + s) % KEYS;
            }
            ck_assert_int_eq(wr_wintab_take(&t, keys, KEYS, start, ids), KEYS);
            for (int i = 0; i < KEYS; i++) {
                ck_assert_int_eq(ids[i], model_id[keys[i]][s]);
                if (ids[i] >= 0) {
                    owner[ids[i]] = -1;
                    open--;
                    model_id[keys[i]][s] = -1;
                }
            }
            wr_wintab_trim(&t);
        }
        if (step % 997 == 0) { /* a walk by position: every open window in the index, once */
            wr_wintab_index_all(&t);
            ck_assert_int_eq(t.unindexed, 0);
            int seen = 0;
            for (size_t i = 0; i < t.index.cap; i++) {
                const wr_wintab_entry_t *e = &((wr_wintab_entry_t *)t.index.entries)[i];
                if (e->id >= 0) {
                    ck_assert_int_eq(e->id, model_id[e->key][(e->start + 20000) / 5000]);
                    seen++;
                }
            }
            ck_assert_int_eq(seen, open);
        }
        ck_assert_int_eq(t.open, open);
        /* every id below next_id is open or free, once; the lists hold the unindexed */
        ck_assert_int_eq(t.nfree, t.next_id - t.open);
        if (step % 101 == 0) {
            int32_t listed = 0;
            for (size_t key = 0; key < t.keys_cap; key++) {
                for (int32_t id = t.keys[key].head; id >= 0; id = t.un[id].next) {
                    ck_assert_int_eq(owner[id] / STARTS, (int)key);
                    listed++;
                }
            }
            ck_assert_int_eq(listed, t.unindexed);
        }
        /* the load bound holds for the indexed windows: the unindexed ones have no entry */
        ck_assert((size_t)(t.open - t.unindexed) * 4 <= t.index.cap * 3);
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

/* Windows opened in time order per key never enter the index: the fires (take) and finds see
 * them on their keys' lists; a window opened behind its key's top start goes into the index
 * beside them, and a walk by position (capacity, at) first puts all of them in, so that it
 * lists each open window once. */
START_TEST(test_wintab_windows_in_time_order_skip_the_index)
{
    enum { KEYS = 100, WINDOWS = 10 };
    weir_wintab_t *t = weir_wintab_new();
    int32_t id_of[KEYS][WINDOWS];
    for (int w = 0; w < WINDOWS; w++) {
        for (int k = 0; k < KEYS; k++) {
            id_of[k][w] = weir_wintab_add(t, k, w * 5000);
            ck_assert_int_ge(id_of[k][w], 0);
            ck_assert_int_eq(weir_wintab_add(t, k, w * 5000), id_of[k][w]);
        }
    }
    ck_assert_int_eq(t->t.unindexed, KEYS * WINDOWS);
    ck_assert_uint_eq(t->t.index.cap, 32); /* nothing in the index, which never grew */
    ck_assert_double_eq(weir_wintab_stat(t, WEIR_STORE_OPEN), KEYS * WINDOWS);
    for (int k = 0; k < KEYS; k++) {
        ck_assert_int_eq(weir_wintab_find(t, k, 2 * 5000), id_of[k][2]);
        ck_assert_int_eq(weir_wintab_find(t, k, 2 * 5000 + 1), -1);
    }
    /* the first window of every key fires: taken from the lists' heads */
    int32_t keys[KEYS];
    int32_t ids[KEYS];
    for (int i = 0; i < KEYS; i++) {
        keys[i] = KEYS - 1 - i;
    }
    ck_assert_int_eq(weir_wintab_take(t, keys, KEYS, 0, ids), KEYS);
    for (int i = 0; i < KEYS; i++) {
        ck_assert_int_eq(ids[i], id_of[keys[i]][0]);
        ck_assert_int_eq(weir_wintab_find(t, keys[i], 0), -1);
    }
    /* a window from the middle of a key's list, and its last one, dropped */
    ck_assert_int_eq(weir_wintab_drop(t, 5, 4 * 5000), id_of[5][4]);
    ck_assert_int_eq(weir_wintab_drop(t, 6, 9 * 5000), id_of[6][9]);
    ck_assert_int_eq(weir_wintab_find(t, 5, 5 * 5000), id_of[5][5]);
    /* behind the top start: into the index (key 5's dropped window, and one never opened) */
    int32_t back = weir_wintab_add(t, 5, 4 * 5000);
    int32_t older = weir_wintab_add(t, 7, -5000);
    ck_assert_int_eq(t->t.unindexed, KEYS * (WINDOWS - 1) - 2);
    ck_assert_int_eq(weir_wintab_find(t, 5, 4 * 5000), back);
    ck_assert_int_eq(weir_wintab_find(t, 7, -5000), older);
    /* past it again: on the list, after key 6's windows up to 8 */
    int32_t next = weir_wintab_add(t, 6, 20 * 5000);
    ck_assert_int_eq(weir_wintab_find(t, 6, 20 * 5000), next);
    /* a walk by position lists every open window once */
    int32_t open = (int32_t)weir_wintab_stat(t, WEIR_STORE_OPEN);
    ck_assert_int_eq(open, KEYS * (WINDOWS - 1) + 1);
    int32_t cap = weir_wintab_capacity(t);
    ck_assert_int_eq(t->t.unindexed, 0);
    ck_assert_int_ge(cap * 3, open * 4);
    int seen = 0;
    double e[2];
    for (int32_t i = 0; i < cap; i++) {
        int32_t id = weir_wintab_at(t, i, e);
        if (id >= 0) {
            int k = (int)e[0];
            ck_assert_int_eq(weir_wintab_find(t, k, e[1]), id);
            seen++;
        }
    }
    ck_assert_int_eq(seen, open);
    /* from the index now: the take probes for them */
    ck_assert_int_eq(weir_wintab_take(t, keys, KEYS, 5000, ids), KEYS);
    for (int i = 0; i < KEYS; i++) {
        ck_assert_int_eq(ids[i], id_of[keys[i]][1]);
    }
    /* a key id past WR_WINTAB_KEYS_MAX has no record: its windows go into the index */
    int32_t far = weir_wintab_add(t, WR_WINTAB_KEYS_MAX + 5, 0);
    ck_assert_int_ge(far, 0);
    ck_assert_int_eq(t->t.unindexed, 0);
    ck_assert_int_eq(weir_wintab_find(t, WR_WINTAB_KEYS_MAX + 5, 0), far);
    ck_assert_int_eq(weir_wintab_drop(t, WR_WINTAB_KEYS_MAX + 5, 0), far);
    weir_wintab_free(t);
}
END_TEST

/* Under a memory limit every window goes into the index, whose doublings ask the account (the
 * lists' arrays would not ask in steps that a job's memory check can name): the same ids and
 * lookups, nothing unindexed. */
START_TEST(test_wintab_under_a_memory_limit_indexes_every_window)
{
    ck_assert_int_eq(weir_mem_set_limit(1024.0 * 1024 * 1024), 0);
    weir_wintab_t *t = weir_wintab_new();
    for (int w = 0; w < 4; w++) {
        for (int k = 0; k < 100; k++) {
            ck_assert_int_eq(weir_wintab_add(t, k, w * 5000), w * 100 + k);
        }
    }
    ck_assert_int_eq(t->t.unindexed, 0);
    ck_assert_uint_eq(t->t.keys_cap, 0);
    ck_assert_uint_ge(t->t.index.cap * 3, 400 * 4);
    int32_t keys[100];
    int32_t ids[100];
    for (int i = 0; i < 100; i++) {
        keys[i] = i;
    }
    ck_assert_int_eq(weir_wintab_take(t, keys, 100, 0, ids), 100);
    for (int i = 0; i < 100; i++) {
        ck_assert_int_eq(ids[i], i);
        ck_assert_int_eq(weir_wintab_find(t, i, 5000), 100 + i);
    }
    weir_wintab_free(t);
    ck_assert_int_eq(weir_mem_set_limit(0), 0);
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
    add_case(s, "windows_in_time_order_skip_the_index",
             test_wintab_windows_in_time_order_skip_the_index);
    add_case(s, "under_a_memory_limit_indexes_every_window",
             test_wintab_under_a_memory_limit_indexes_every_window);
    return s;
}

int main(void)
{
    return run_suite(wintab_suite());
}
