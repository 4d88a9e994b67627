/* SPDX-License-Identifier: MIT */
/* check_idtab: the open-addressing core (idtab.h) under a table of its own with a clumping home
 * (long probe runs that wrap around the end), against a reference model over random inserts,
 * finds, deletes, growth and shrinking; plus the growth rule and the memory limit's say. */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "check_support.h"
#include "idtab.h"
#include "weir.h"

/* A test entry: key, and id -1 when empty. */
typedef struct entry {
    uint32_t key;
    int32_t id;
} entry_t;

/* Keys k and k + 1 .. k + 7 share a home, and homes sit near the end of the table, so runs are
 * long, overlap, and wrap. */
static size_t clumped_home(const void *e, size_t mask)
{
    uint32_t key = ((const entry_t *)e)->key;
    return ((size_t)(key / 8) * 7 + mask - 3) & mask;
}

static const wr_idtab_kind_t KIND = {
    .size = sizeof(entry_t),
    .id_at = offsetof(entry_t, id),
    .home = clumped_home,
};

static bool same_key(const void *e, const void *q)
{
    return ((const entry_t *)e)->key == *(const uint32_t *)q;
}

static size_t home_of_key(const wr_idtab_t *t, uint32_t key)
{
    entry_t e = {.key = key, .id = 0};
    return clumped_home(&e, t->cap - 1);
}

static entry_t *entries(const wr_idtab_t *t)
{
    return t->entries;
}

static size_t find(const wr_idtab_t *t, uint32_t key, bool *found)
{
    return wr_idtab_find(t, &KIND, home_of_key(t, key), same_key, &key, found);
}

enum { KEYS = 600, MIN_CAP = 8 };

static int32_t model[KEYS]; /* the id of key k, or -1 */

/* Every model key is found with its id, every entry is a model key held once, and between an
 * entry's home and its position there is no empty entry (the invariant that backward shift
 * keeps and lookups rely on). */
static bool agrees(const wr_idtab_t *t, size_t n)
{
    size_t full = 0;
    size_t mask = t->cap - 1;
    for (size_t i = 0; i < t->cap; i++) {
        const entry_t *e = &entries(t)[i];
        if (e->id < 0) {
            continue;
        }
        full++;
        if (e->key >= KEYS || model[e->key] != e->id) {
            return false;
        }
        for (size_t j = home_of_key(t, e->key); j != i; j = (j + 1) & mask) {
            if (entries(t)[j].id < 0) {
                return false;
            }
        }
    }
    for (uint32_t k = 0; k < KEYS; k++) {
        bool found;
        size_t i = find(t, k, &found);
        if (found != (model[k] >= 0) || (found && entries(t)[i].id != model[k])) {
            return false;
        }
    }
    return full == n;
}

static uint64_t rng = UINT64_C(0x9e3779b97f4a7c15);

static uint32_t rnd_below(uint32_t n)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

START_TEST(test_idtab_matches_a_model_over_random_operations)
{
    wr_idtab_t t;
    size_t bytes = 0;
    wr_idtab_init(&t, &KIND, MIN_CAP, &bytes);
    ck_assert_uint_eq(bytes, MIN_CAP * sizeof(entry_t));
    memset(model, 0xff, sizeof model);
    size_t n = 0;
    size_t peak_cap = 0;
    for (int op = 0; op < 200000; op++) {
        /* phases: mostly inserts, then mostly deletes, so the table grows and shrinks */
        bool filling = (op / 20000) % 2 == 0;
        uint32_t r = rnd_below(100);
        uint32_t key = rnd_below(KEYS);
        bool found;
        if (r < (filling ? 60u : 25u)) {
            size_t i = find(&t, key, &found);
            if (!found) {
                if (wr_idtab_should_grow(&t, &KIND, n + 1, 3, 4)) {
                    wr_idtab_rehash(&t, &KIND, t.cap * 2, &bytes);
                    i = find(&t, key, &found);
                }
                entries(&t)[i] = (entry_t){.key = key, .id = op};
                model[key] = op;
                n++;
            }
        } else if (r < 80) {
            size_t i = find(&t, key, &found);
            if (found) {
                wr_idtab_remove_at(&t, &KIND, i);
                model[key] = -1;
                n--;
                if (t.cap > MIN_CAP && n * 8 < t.cap) {
                    wr_idtab_rehash(&t, &KIND, t.cap / 2, &bytes);
                }
            }
        } else {
            size_t i = find(&t, key, &found);
            ck_assert(found == (model[key] >= 0));
            ck_assert(!found || entries(&t)[i].id == model[key]);
        }
        ck_assert_uint_le(n * 4, t.cap * 3);
        ck_assert_uint_eq(bytes, t.cap * sizeof(entry_t));
        peak_cap = t.cap > peak_cap ? t.cap : peak_cap;
        if (op % 97 == 0) {
            ck_assert_msg(agrees(&t, n), "table and model differ after op %d", op);
        }
    }
    ck_assert_msg(agrees(&t, n), "table and model differ at the end");
    ck_assert_uint_ge(peak_cap, 512); /* it grew past the model's size ... */
    wr_idtab_close(&t, &KIND, &bytes);
    ck_assert_uint_eq(bytes, 0);
    ck_assert_ptr_null(t.entries);
}
END_TEST

START_TEST(test_idtab_rehash_keeps_entries_in_old_array_order)
{
    /* Two keys with one home: after a rehash the one stored first still comes first. */
    wr_idtab_t t;
    wr_idtab_init(&t, &KIND, MIN_CAP, NULL);
    uint32_t keys[] = {17, 16};
    for (int k = 0; k < 2; k++) {
        bool found;
        size_t i = find(&t, keys[k], &found);
        ck_assert(!found);
        entries(&t)[i] = (entry_t){.key = keys[k], .id = k};
    }
    wr_idtab_rehash(&t, &KIND, 32, NULL);
    size_t h = home_of_key(&t, 16);
    ck_assert_uint_eq(entries(&t)[h].key, 17);
    ck_assert_uint_eq(entries(&t)[(h + 1) & 31].key, 16);
    wr_idtab_close(&t, &KIND, NULL);
}
END_TEST

START_TEST(test_idtab_an_unallocated_table_should_grow)
{
    wr_idtab_t t = {.entries = NULL, .cap = 0};
    ck_assert(wr_idtab_should_grow(&t, &KIND, 1, 3, 4));
    wr_idtab_rehash(&t, &KIND, 16, NULL);
    ck_assert_uint_eq(t.cap, 16);
    for (size_t i = 0; i < t.cap; i++) {
        ck_assert(wr_idtab_is_empty(&KIND, &entries(&t)[i]));
    }
    ck_assert(!wr_idtab_should_grow(&t, &KIND, 12, 3, 4)); /* 3/4 full: not yet */
    ck_assert(wr_idtab_should_grow(&t, &KIND, 13, 3, 4));
    ck_assert(!wr_idtab_should_grow(&t, &KIND, 8, 1, 2));
    ck_assert(wr_idtab_should_grow(&t, &KIND, 9, 1, 2));
    wr_idtab_close(&t, &KIND, NULL);
}
END_TEST

START_TEST(test_idtab_the_memory_limit_holds_growth_back_until_one_entry_is_left)
{
    weir_mem_set_limit(0);
    wr_idtab_t t;
    wr_idtab_init(&t, &KIND, 1024, NULL);
    weir_mem_set_limit(weir_mem_stat(WEIR_MEM_TOTAL) + 1024);
    ck_assert(!wr_idtab_should_grow(&t, &KIND, 800, 3, 4)); /* a doubling would pass it */
    ck_assert_int_eq(weir_mem_alarm(), 1);
    ck_assert(wr_idtab_should_grow(&t, &KIND, 1023, 3, 4)); /* one empty entry left: grows */
    wr_idtab_close(&t, &KIND, NULL);
    weir_mem_set_limit(0);
}
END_TEST

START_TEST(test_idtab_mix_separates_keys_differing_in_one_field)
{
    /* a bijection per step: distinct values give distinct hashes */
    uint64_t seen[1000];
    for (uint64_t v = 0; v < 1000; v++) {
        seen[v] = wr_idtab_finish(wr_idtab_mix(wr_idtab_mix(1, 42), v));
        for (uint64_t w = 0; w < v; w++) {
            ck_assert(seen[w] != seen[v]);
        }
    }
    ck_assert_int_eq(wr_idtab_key_id(7), 7);
    ck_assert_int_eq(wr_idtab_key_id(0), 0);
    ck_assert_int_eq(wr_idtab_key_id(-1), -1);
    ck_assert_int_eq(wr_idtab_key_id(1.5), -1);
    ck_assert_int_eq(wr_idtab_key_id(4294967296.0), -1);
    ck_assert_int_eq(wr_idtab_key_id(__builtin_nan("")), -1);
}
END_TEST

static Suite *idtab_suite(void)
{
    Suite *s = suite_create("idtab");
    add_case(s, "matches_a_model_over_random_operations",
             test_idtab_matches_a_model_over_random_operations);
    add_case(s, "rehash_keeps_entries_in_old_array_order",
             test_idtab_rehash_keeps_entries_in_old_array_order);
    add_case(s, "an_unallocated_table_should_grow", test_idtab_an_unallocated_table_should_grow);
    add_case(s, "the_memory_limit_holds_growth_back_until_one_entry_is_left",
             test_idtab_the_memory_limit_holds_growth_back_until_one_entry_is_left);
    add_case(s, "mix_separates_keys_differing_in_one_field",
             test_idtab_mix_separates_keys_differing_in_one_field);
    return s;
}

int main(void)
{
    return run_suite(idtab_suite());
}
