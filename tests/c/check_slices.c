/* SPDX-License-Identifier: MIT */
/* check_slices: the per-key slice arrays of weir.aggwindow's sliced windows (slices.c): order,
 * ranges, neighbours, drops and counts, checked against a reference model. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_support.h"
#include "slices.h"
#include "weir.h"

START_TEST(test_slices_keep_each_key_in_start_order)
{
    weir_slices_t *t = weir_slices_new();
    int32_t fresh = -1;
    double *a = weir_slices_acc(t, 3, 30, &fresh);
    ck_assert_int_eq(fresh, 1);
    ck_assert(isnan(*a));
    *a = 3;
    *weir_slices_acc(t, 3, 10, &fresh) = 1; /* before the head */
    *weir_slices_acc(t, 3, 20, &fresh) = 2; /* in the middle */
    *weir_slices_acc(t, 4, 20, &fresh) = 99;
    ck_assert(*weir_slices_acc(t, 3, 30, &fresh) == 3);
    ck_assert_int_eq(fresh, 0);
    double out[4];
    ck_assert_int_eq(weir_slices_range(t, 3, 10, 40, out, 4), 3);
    ck_assert(out[0] == 1 && out[1] == 2 && out[2] == 3);
    ck_assert_int_eq(weir_slices_range(t, 3, 11, 31, out, 4), 2);
    ck_assert(out[0] == 2 && out[1] == 3);
    ck_assert_int_eq(weir_slices_range(t, 3, 10, 40, out, 1), 3);
    ck_assert_int_eq(weir_slices_range(t, 5, 0, 100, out, 4), 0);
    double nb[2];
    ck_assert_int_eq(weir_slices_neighbors(t, 3, 20, nb), 0);
    ck_assert(nb[0] == 10 && nb[1] == 30);
    ck_assert_int_eq(weir_slices_neighbors(t, 3, 25, nb), 0);
    ck_assert(nb[0] == 20 && nb[1] == 30);
    ck_assert_int_eq(weir_slices_neighbors(t, 4, 20, nb), 0);
    ck_assert(isinf(nb[0]) && nb[0] < 0 && isinf(nb[1]) && nb[1] > 0);
    ck_assert(weir_slices_stat(t, WEIR_STORE_OPEN) == 4);
    ck_assert(weir_slices_stat(t, WEIR_STORE_ELEMENTS) == 5);
    double dump[12];
    ck_assert(weir_slices_dump(t, dump, 4) == 4);
    ck_assert(dump[0] == 3 && dump[1] == 10 && dump[2] == 1);
    ck_assert(dump[6] == 3 && dump[7] == 30 && dump[8] == 2);
    ck_assert_int_eq(weir_slices_drop(t, 3, 20), 1);
    ck_assert_int_eq(weir_slices_drop(t, 3, 20), 0);
    ck_assert_int_eq(weir_slices_drop(t, 3, 10), 1);
    ck_assert_int_eq(weir_slices_drop(t, 3, 30), 1);
    ck_assert_int_eq(weir_slices_drop(t, 4, 20), 1);
    ck_assert(weir_slices_stat(t, WEIR_STORE_OPEN) == 0);
    ck_assert(weir_slices_stat(t, WEIR_STORE_ELEMENTS) == 0);
    ck_assert(weir_slices_acc(t, -1, 0, &fresh) == NULL);
    ck_assert(weir_slices_acc(t, 0.5, 0, &fresh) == NULL);
    ck_assert_int_eq(weir_slices_range(t, 1, NAN, 1, out, 4), WEIR_EINVAL);
    ck_assert(isnan(weir_slices_stat(t, 9)));
    weir_slices_free(t);
    weir_slices_free(NULL);
}
END_TEST

START_TEST(test_slices_return_to_their_initial_allocation_when_empty)
{
    weir_slices_t *t = weir_slices_new();
    double empty = weir_slices_stat(t, WEIR_STORE_BYTES);
    int32_t fresh;
    for (int k = 0; k < 1000; k++) {
        for (int s = 0; s < 20; s++) {
            *weir_slices_acc(t, k, s * 1000, &fresh) = s;
        }
    }
    ck_assert(weir_slices_stat(t, WEIR_STORE_BYTES) > empty);
    for (int k = 0; k < 1000; k++) {
        for (int s = 0; s < 20; s++) {
            ck_assert_int_eq(weir_slices_drop(t, k, s * 1000), 1);
        }
    }
    ck_assert(weir_slices_stat(t, WEIR_STORE_BYTES) == empty);
    weir_slices_free(t);
}
END_TEST

/* Dense key ids (looked up directly) and sparse ones (through the hash index only), added in
 * an order that grows the direct range past keys already in the index: every key finds its
 * own slices, before and after the others' drops. */
START_TEST(test_slices_dense_and_sparse_keys_find_their_slices)
{
    enum { N = 600 };
    static int32_t keys[N];
    for (int i = 0; i < N; i++) {
        /* sparse ids first among the dense ones, then dense ids that cover them */
        keys[i] = i % 3 == 0 ? 1000000 + 7919 * i : i < N / 2 ? 3 * i : N - i;
    }
    weir_slices_t *t = weir_slices_new();
    int32_t fresh;
    for (int i = 0; i < N; i++) {
        double *acc = weir_slices_acc(t, keys[i], 5000, &fresh);
        ck_assert_ptr_nonnull(acc);
        if (fresh) {
            *acc = keys[i];
        }
    }
    for (int i = 0; i < N; i++) {
        double v = -1;
        ck_assert_int_eq(weir_slices_range(t, keys[i], 0, 10000, &v, 1), 1);
        ck_assert_double_eq(v, keys[i]);
    }
    /* a key never added has nothing, in or out of the direct range */
    double v;
    ck_assert_int_eq(weir_slices_range(t, 901, 0, 10000, &v, 1), 0);
    ck_assert_int_eq(weir_slices_range(t, 999999, 0, 10000, &v, 1), 0);
    for (int i = 0; i < N; i += 2) {
        weir_slices_drop(t, keys[i], 5000);
    }
    for (int i = 1; i < N; i += 2) {
        int dup = 0;
        for (int j = 0; j < N; j += 2) {
            dup |= keys[j] == keys[i];
        }
        ck_assert_int_eq(weir_slices_range(t, keys[i], 0, 10000, &v, 1), dup ? 0 : 1);
        if (!dup) {
            ck_assert_double_eq(v, keys[i]);
        }
        /* the gather's lookups agree */
        int32_t k1[1] = {keys[i]};
        int32_t off[2];
        int32_t scratch[1];
        double out[1];
        ck_assert_double_eq(weir_slices_gather(t, k1, 1, 0, 10000, out, 1, off, scratch),
                            dup ? 0 : 1);
    }
    weir_slices_free(t);
}
END_TEST

/* The built-in merges run in order, as weir.aggregates' Lua merges: a copy without r, l + r,
 * r < l ? r : l (NaN on the right keeps l), r > l ? r : l. */
START_TEST(test_slices_run_ops_merges_in_order)
{
    double x[4] = {2, 5, NAN, -1};
    double d[3];
    weir_slices_op_t ops[3] = {{&d[0], &x[0], &x[1]}, {&d[1], &d[0], &x[2]}, {&d[2], &d[1], NULL}};
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_SUM, ops, 3), 0);
    ck_assert_double_eq(d[0], 7);
    ck_assert(isnan(d[1]) && isnan(d[2]));
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_MIN, ops, 3), 0);
    ck_assert_double_eq(d[0], 2);
    ck_assert_double_eq(d[1], 2); /* NaN < 2 is false: l stays */
    ck_assert_double_eq(d[2], 2);
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_MAX, ops, 2), 0);
    ck_assert_double_eq(d[0], 5);
    ck_assert_double_eq(d[1], 5);
    ops[1].r = &x[3];
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_COUNT, ops, 2), 0);
    ck_assert_double_eq(d[1], 6);
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_AVG, ops, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_SUM, NULL, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_SUM, ops, -1), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_run_ops(WEIR_AGG_SUM, NULL, 0), 0);
}
END_TEST

/* Random accs (in and out of order) and drops against a dense model. */
START_TEST(test_slices_match_a_reference_model)
{
    enum { KEYS = 8, STARTS = 40 };
    static int32_t count[KEYS][STARTS];
    static double value[KEYS][STARTS];
    wr_slices_t t;
    wr_slices_init(&t);
    srand(5);
    int64_t open = 0;
    for (int step = 0; step < 100000; step++) {
        int k = rand() % KEYS;
        int s = rand() % STARTS;
        int64_t start = (int64_t)s * 1000 - 5000;
        if (rand() % 3 == 0) {
            ck_assert_int_eq(wr_slices_drop(&t, k, start), count[k][s] > 0);
            if (count[k][s] > 0) {
                open--;
            }
            count[k][s] = 0;
        } else {
            int fresh;
            double *acc = wr_slices_acc(&t, k, start, &fresh);
            ck_assert_int_eq(fresh, count[k][s] == 0);
            if (fresh) {
                open++;
            } else {
                ck_assert(*acc == value[k][s]);
            }
            count[k][s]++;
            value[k][s] = step;
            *acc = step;
        }
        ck_assert_int_eq(t.open, open);
        if (step % 97 == 0) {
            int lo = rand() % STARTS;
            int hi = lo + rand() % (STARTS - lo + 1);
            double out[STARTS];
            int32_t n = wr_slices_range(&t, k, (int64_t)lo * 1000 - 5000, (int64_t)hi * 1000 - 5000,
                                        out, STARTS);
            int32_t m = 0;
            for (int i = lo; i < hi; i++) {
                if (count[k][i] > 0) {
                    ck_assert(out[m] == value[k][i]);
                    m++;
                }
            }
            ck_assert_int_eq(n, m);
            int64_t prev;
            int64_t next;
            wr_slices_neighbors(&t, k, start, &prev, &next);
            int64_t want_prev = INT64_MIN;
            int64_t want_next = INT64_MAX;
            for (int i = 0; i < STARTS; i++) {
                int64_t st = (int64_t)i * 1000 - 5000;
                if (count[k][i] > 0 && st < start) {
                    want_prev = st;
                }
                if (count[k][i] > 0 && st > start && want_next == INT64_MAX) {
                    want_next = st;
                }
            }
            ck_assert(prev == want_prev && next == want_next);
        }
    }
    wr_slices_close(&t);
}
END_TEST

START_TEST(test_slices_gather_equals_ranges)
{
    weir_slices_t *t = weir_slices_new();
    int32_t fresh;
    for (int k = 0; k < 50; k++) {
        for (int s = 0; s < k % 7; s++) {
            *weir_slices_acc(t, k, s * 1000, &fresh) = k * 100 + s;
        }
    }
    int32_t keys[60];
    int32_t off[61];
    int32_t scratch[60];
    double out[400];
    for (int i = 0; i < 60; i++) {
        keys[i] = 59 - i; /* keys 50..59 have no slices */
    }
    double n = weir_slices_gather(t, keys, 60, 1000, 4000, out, 400, off, scratch);
    double want = 0;
    for (int i = 0; i < 60; i++) {
        double one[8];
        int32_t m = weir_slices_range(t, keys[i], 1000, 4000, one, 8);
        ck_assert_int_eq(off[i + 1] - off[i], m);
        for (int j = 0; j < m; j++) {
            ck_assert(out[off[i] + j] == one[j]);
        }
        want += m;
    }
    ck_assert(n == want && off[0] == 0 && off[60] == want);
    ck_assert(weir_slices_gather(t, keys, 60, 1000, 4000, out, 2, off, scratch) == want);
    keys[0] = -2;
    ck_assert(weir_slices_gather(t, keys, 60, 1000, 4000, out, 400, off, scratch) == WEIR_EINVAL);
    weir_slices_free(t);
}
END_TEST

/* The merges the fire spec runs: sum, min, and two that are not commutative (first, last),
 * so that the order of the ops' operands shows. */
enum { M_SUM, M_MIN, M_FIRST, M_LAST, M_KINDS };

static double merge(int kind, double l, double r)
{
    switch (kind) {
    case M_SUM:
        return l + r;
    case M_MIN:
        return fmin(l, r);
    case M_FIRST:
        return l;
    default:
        return r;
    }
}

static void run_ops(const wr_slices_op_t *ops, int32_t n, int kind)
{
    for (int32_t i = 0; i < n; i++) {
        *ops[i].dst = ops[i].r ? merge(kind, *ops[i].l, *ops[i].r) : *ops[i].l;
    }
}

/* The merge of key's slices in [lo, hi), in start order (0 when it has none). */
static int direct(wr_slices_t *t, int32_t key, int64_t lo, int64_t hi, int kind, double *out)
{
    double v[64];
    int32_t n = wr_slices_range(t, key, lo, hi, v, 64);
    ck_assert_int_le(n, 64);
    if (n == 0) {
        return 0;
    }
    double acc = v[0];
    for (int32_t i = 1; i < n; i++) {
        acc = merge(kind, acc, v[i]);
    }
    *out = acc;
    return 1;
}

/* Windows of 8 slices fire in start order per key (the two stacks), with elements now and then
 * into older, maybe queued slices (touch), keys that skip slices, drops at fires and by the
 * caller, batches cut by a small cap, across many ring wraps and growths: every result equals
 * the direct merge of the window's slices in start order. Each kind twice: rings of powers of
 * two, and with the span said (rings of 8, 9, 18, ... positions: wr_slices_span). */
START_TEST(test_slices_fire_equals_the_window_merge)
{
    enum { KEYS = 20, SLIDE = 10, K = 8, STEPS = 2000 };
    for (int run = 0; run < 2 * M_KINDS; run++) {
        int kind = run % M_KINDS;
        wr_slices_t t;
        wr_slices_init(&t);
        wr_slices_span(&t, run < M_KINDS ? 0 : K);
        srand(17 + (unsigned)run);
        int32_t keys[KEYS];
        double res[KEYS];
        int32_t flags[KEYS];
        int32_t off[KEYS + 1];
        int32_t scratch[KEYS];
        wr_slices_op_t ops[KEYS * (K + 2)];
        int64_t fired = 0;
        int64_t by_fire = 0;
        for (int step = 0; step < STEPS; step++) {
            int64_t now = (int64_t)step * SLIDE; /* the newest slice */
            for (int32_t k = 0; k < KEYS; k++) {
                if (rand() % 4 == 0) {
                    continue; /* gaps */
                }
                int64_t start = now;
                if (rand() % 10 == 0) {
                    start = now - (int64_t)(rand() % (K + 3)) * SLIDE;
                }
                int fresh;
                double *acc = wr_slices_acc(&t, k, start, &fresh);
                ck_assert_ptr_nonnull(acc);
                double v = (double)(rand() % 100000);
                *acc = fresh ? v : merge(kind, *acc, v);
                if (!fresh) { /* a new slice between queued ones: the insert itself forgets */
                    wr_slices_touch(&t, k, start);
                }
            }
            /* the window two slides behind the newest slice fires for every key */
            int64_t lo = now - (int64_t)(K + 1) * SLIDE;
            int64_t hi = lo + (int64_t)K * SLIDE;
            int drop = step % 7 != 0;
            double want[KEYS];
            int has[KEYS];
            for (int32_t k = 0; k < KEYS; k++) {
                keys[k] = KEYS - 1 - k;
                has[k] = direct(&t, keys[k], lo, hi, kind, &want[k]);
            }
            for (int32_t done = 0; done < KEYS;) {
                int32_t cap = step % 3 == 0 ? K + 2 : KEYS * (K + 2);
                int32_t d = wr_slices_fire(&t, keys + done, KEYS - done, lo, hi, drop, res + done,
                                           flags + done, off, ops, cap, scratch);
                ck_assert_int_gt(d, 0);
                ck_assert_int_le(off[d], cap);
                run_ops(ops, off[d], kind);
                done += d;
            }
            for (int32_t k = 0; k < KEYS; k++) {
                ck_assert_int_eq((flags[k] & WR_SLICES_HAS) != 0, has[k]);
                if (has[k]) {
                    ck_assert_msg(res[k] == want[k], "kind %d step %d key %d: %g, want %g",
                                  kind, step, keys[k], res[k], want[k]);
                    fired++;
                }
                if (drop && (flags[k] & WR_SLICES_DROPPED)) {
                    by_fire++;
                    ck_assert_int_eq(wr_slices_drop(&t, keys[k], lo), 0);
                } else {
                    wr_slices_drop(&t, keys[k], lo); /* the caller's drop */
                }
                /* and now and then an older slice the window left (as allowed lateness does) */
                if (rand() % 5 == 0) {
                    wr_slices_drop(&t, keys[k], lo - (int64_t)(rand() % 3) * SLIDE);
                }
            }
        }
        ck_assert_int_gt(fired, STEPS * KEYS / 2);
        ck_assert_int_gt(by_fire, STEPS * KEYS / 4);
        wr_slices_close(&t);
    }
}
END_TEST

/* A fire of more keys than its prefetches run ahead (slices.c: key records and slices some
 * dozens of keys before their turn), in chunks of 1 to all of them, in a shuffled order: dense
 * and sparse keys, keys asked for that have no slices (never had, or lost their last), with
 * and without a running sum. Every key's result and flags are those of a direct merge. */
START_TEST(test_slices_fire_of_many_keys_equals_the_window_merge)
{
    enum { KEYS = 700, SLIDE = 10, K = 6, STEPS = 40 };
    static const int32_t chunks[] = {1, 33, 64, 65, 129, KEYS};
    for (int run = 0; run < 2 + M_KINDS; run++) {
        int kind = run < 2 ? M_SUM : run - 2;
        wr_slices_t t;
        wr_slices_init(&t);
        wr_slices_span(&t, K);
        wr_slices_running(&t, run == 0);
        srand(41 + (unsigned)run);
        int32_t order[KEYS];
        for (int32_t i = 0; i < KEYS; i++) {
            /* a fifth sparse (past any direct array), a sixth never with a slice */
            order[i] = i % 5 == 0 ? (1 << 24) + i : i;
        }
        static int32_t keys[KEYS];
        static double res[KEYS];
        static int32_t flags[KEYS];
        static int32_t off[KEYS + 1];
        static int32_t scratch[KEYS];
        static wr_slices_op_t ops[KEYS * (K + 2)];
        static double want[KEYS];
        static int has[KEYS];
        int64_t fired = 0;
        for (int step = 0; step < STEPS; step++) {
            int64_t now = (int64_t)step * SLIDE;
            for (int32_t i = 0; i < KEYS; i++) {
                if (order[i] % 6 == 1 || rand() % 8 == 0) {
                    continue;
                }
                int fresh;
                double *acc = wr_slices_acc(&t, order[i], now, &fresh);
                ck_assert_ptr_nonnull(acc);
                double v = (double)(rand() % 1000);
                *acc = fresh ? v : merge(kind, *acc, v);
            }
            for (int32_t i = KEYS - 1; i > 0; i--) { /* a shuffled fire order */
                int32_t j = rand() % (i + 1);
                int32_t x = order[i];
                order[i] = order[j];
                order[j] = x;
            }
            int64_t lo = now - (int64_t)K * SLIDE;
            int64_t hi = lo + (int64_t)K * SLIDE;
            for (int32_t i = 0; i < KEYS; i++) {
                keys[i] = order[i];
                has[i] = direct(&t, keys[i], lo, hi, kind, &want[i]);
            }
            int32_t chunk = chunks[step % (int)(sizeof chunks / sizeof chunks[0])];
            for (int32_t done = 0; done < KEYS;) {
                int32_t n = KEYS - done < chunk ? KEYS - done : chunk;
                int32_t d = wr_slices_fire(&t, keys + done, n, lo, hi, 1, res + done,
                                           flags + done, off, ops, KEYS * (K + 2), scratch);
                ck_assert_int_eq(d, n);
                run_ops(ops, off[d], kind);
                done += d;
            }
            for (int32_t i = 0; i < KEYS; i++) {
                ck_assert_int_eq((flags[i] & WR_SLICES_HAS) != 0, has[i]);
                if (has[i]) {
                    ck_assert_msg(res[i] == want[i], "run %d step %d key %d: %g, want %g", run,
                                  step, keys[i], res[i], want[i]);
                    fired++;
                }
                if (!(flags[i] & WR_SLICES_DROPPED)) {
                    wr_slices_drop(&t, keys[i], lo);
                }
            }
        }
        ck_assert_int_gt(fired, (int64_t)STEPS * KEYS / 2);
        wr_slices_close(&t);
    }
}
END_TEST

/* A running sum (wr_slices_running): windows of 8 slices fire as in the test above, with
 * elements into queued slices, gaps, drops by the fire and by the caller, small caps. Most keys
 * get whole numbers only: they have a running sum, so no ops at all. Key 0 mod 5 gets a
 * fraction now and then (a binary one, so that every order of its sums is exact) and key 0 mod
 * 7 a value just above 2^53 / 8: their windows holding one run on the two stacks, their results
 * from the ops, until they rebuild their queue with whole numbers only (a running sum again);
 * every result equals the direct sum of the window's slices. */
START_TEST(test_slices_running_sums_equal_the_window_sum)
{
    enum { KEYS = 35, SLIDE = 10, K = 8, STEPS = 3000 };
    wr_slices_t t;
    wr_slices_init(&t);
    wr_slices_span(&t, K);
    wr_slices_running(&t, 1);
    srand(99);
    int32_t keys[KEYS];
    double res[KEYS];
    int32_t flags[KEYS];
    int32_t off[KEYS + 1];
    int32_t scratch[KEYS];
    wr_slices_op_t ops[KEYS * (K + 2)];
    int64_t opless = 0;
    int64_t with_ops = 0;
    int64_t back_to_run = 0; /* keys 0 mod 5 or 7 whose window had a running sum again */
    for (int step = 0; step < STEPS; step++) {
        int64_t now = (int64_t)step * SLIDE;
        for (int32_t k = 0; k < KEYS; k++) {
            if (rand() % 4 == 0) {
                continue;
            }
            int64_t start = now;
            if (rand() % 10 == 0) {
                start = now - (int64_t)(rand() % (K + 3)) * SLIDE;
            }
            int fresh;
            double *acc = wr_slices_acc(&t, k, start, &fresh);
            ck_assert_ptr_nonnull(acc);
            double v = (double)(rand() % 1000);
            if (k % 5 == 0 && rand() % 50 == 0) {
                v += 0.25;
            } else if (k % 7 == 0 && rand() % 50 == 0) {
                v = 140737488355328.0 + 2 * v; /* 2^47 + an even number: over 2^53 / 8 */
                v *= 8;
            }
            *acc = fresh ? v : *acc + v;
            if (!fresh) {
                wr_slices_touch(&t, k, start);
            }
        }
        int64_t lo = now - (int64_t)(K + 1) * SLIDE;
        int64_t hi = lo + (int64_t)K * SLIDE;
        int drop = step % 7 != 0;
        double want[KEYS];
        int has[KEYS];
        int whole[KEYS];
        for (int32_t k = 0; k < KEYS; k++) {
            keys[k] = k;
            has[k] = direct(&t, k, lo, hi, M_SUM, &want[k]);
            double v[K];
            int32_t n = wr_slices_range(&t, k, lo, hi, v, K);
            whole[k] = 1;
            for (int32_t i = 0; i < n; i++) {
                whole[k] &= v[i] == floor(v[i]) && fabs(v[i]) <= 9007199254740992.0 / K;
            }
        }
        for (int32_t done = 0; done < KEYS;) {
            int32_t cap = step % 3 == 0 ? K + 2 : KEYS * (K + 2);
            int32_t d = wr_slices_fire(&t, keys + done, KEYS - done, lo, hi, drop, res + done,
                                       flags + done, off, ops, cap, scratch);
            ck_assert_int_gt(d, 0);
            for (int32_t i = 0; i < d; i++) {
                int32_t k = done + i;
                if (has[k] && k % 5 != 0 && k % 7 != 0) {
                    ck_assert(whole[k]);
                    ck_assert_int_eq(off[i + 1] - off[i], 0);
                    opless++;
                } else if (has[k] && whole[k] && off[i + 1] == off[i]) {
                    back_to_run++;
                } else if (off[i + 1] > off[i]) {
                    with_ops++;
                }
            }
            run_ops(ops, off[d], M_SUM);
            done += d;
        }
        for (int32_t k = 0; k < KEYS; k++) {
            ck_assert_int_eq((flags[k] & WR_SLICES_HAS) != 0, has[k]);
            if (has[k]) {
                ck_assert_msg(res[k] == want[k], "step %d key %d: %.17g, want %.17g", step, k,
                              res[k], want[k]);
            }
            if (!(drop && (flags[k] & WR_SLICES_DROPPED))) {
                wr_slices_drop(&t, k, lo);
            }
            if (rand() % 5 == 0) {
                wr_slices_drop(&t, k, lo - (int64_t)(rand() % 3) * SLIDE);
            }
        }
    }
    ck_assert_int_gt(opless, STEPS * KEYS / 3);
    ck_assert_int_gt(with_ops, 100);
    ck_assert_int_gt(back_to_run, 1000);
    wr_slices_close(&t);
    weir_slices_t *fs = weir_slices_new();
    ck_assert_int_eq(weir_slices_running(fs, WEIR_AGG_MIN), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_running(fs, WEIR_AGG_COUNT), 0);
    ck_assert_int_eq(weir_slices_running(fs, -1), 0);
    ck_assert_int_eq(weir_slices_running(NULL, WEIR_AGG_SUM), WEIR_EINVAL);
    weir_slices_free(fs);
}
END_TEST

/* With the span said, a key that slides on by one slice per fire (drop the oldest, then
 * insert) keeps a ring of k positions, one whose insert comes first k + 1; rings and key
 * records are aligned to cache lines through the key records' growths (realloc may move them
 * off a line: they are moved back), and every slice stays where the model says. */
START_TEST(test_slices_span_rings_and_aligned_records)
{
    enum { KEYS = 1000, K = 6, SLIDE = 10, STEPS = 40 };
    wr_slices_t t;
    wr_slices_init(&t);
    wr_slices_span(&t, K);
    for (int step = 0; step < STEPS; step++) {
        int64_t now = (int64_t)step * SLIDE;
        for (int32_t k = 0; k < KEYS; k++) {
            int64_t lo = now - (int64_t)K * SLIDE;
            if (k % 2 == 0) {
                wr_slices_drop(&t, k, lo); /* the fire first */
            }
            int fresh;
            double *acc = wr_slices_acc(&t, k, now, &fresh);
            ck_assert_ptr_nonnull(acc);
            ck_assert_int_eq(fresh, 1);
            *acc = (double)(k * 1000 + step);
            if (k % 2 == 1) {
                wr_slices_drop(&t, k, lo); /* the insert first */
            }
        }
    }
    ck_assert_uint_eq((uintptr_t)t.keys % 64, 0);
    for (int32_t k = 0; k < KEYS; k++) {
        int32_t id = t.direct[k];
        ck_assert_int_ge(id, 0);
        const wr_slice_key_t *r = &t.keys[id];
        ck_assert_int_eq(r->key, k);
        ck_assert_uint_eq((uintptr_t)r->s % 64, 0);
        ck_assert_int_eq(r->cap, k % 2 == 0 ? K : K + 1);
        ck_assert_int_eq(r->len, K);
        ck_assert_int_eq(r->last, (int64_t)(STEPS - 1) * SLIDE);
        double out[K];
        ck_assert_int_eq(wr_slices_range(&t, k, 0, INT64_MAX, out, K), K);
        for (int i = 0; i < K; i++) {
            ck_assert(out[i] == (double)(k * 1000 + STEPS - K + i));
        }
    }
    ck_assert_int_eq(t.open, (int64_t)KEYS * K);
    wr_slices_close(&t);
}
END_TEST

/* weir_slices_apply of random batches (dense and sparse key ids, starts out of order, repeated
 * keys within a batch) against the same elements one at a time through acc_near and the Lua
 * add()s of weir.aggregates: the same new slices with the same neighbours, the same
 * accumulators and counts. */
START_TEST(test_slices_apply_equals_elements_one_at_a_time)
{
    enum { N = 300 };
    static const int32_t kinds[] = {WEIR_AGG_COUNT, WEIR_AGG_SUM, WEIR_AGG_MIN, WEIR_AGG_MAX};
    srand(11);
    for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
        int32_t kind = kinds[ki];
        weir_slices_t *batched = weir_slices_new();
        weir_slices_t *single = weir_slices_new();
        weir_slices_span(batched, 6);
        weir_slices_span(single, 6);
        int32_t keys[N];
        double starts[N];
        double x[N];
        int32_t fresh[N];
        double near[2 * N];
        for (int round = 0; round < 60; round++) {
            int32_t n = rand() % N + 1;
            for (int32_t i = 0; i < n; i++) {
                keys[i] = rand() % 4 == 0 ? 1000000 + rand() % 50 : rand() % 700;
                starts[i] = (double)(rand() % 40 + round / 2) * 10 - 100;
                if (i > 0 && rand() % 3 == 0) { /* a hot key: into its last slice again */
                    keys[i] = keys[i - 1];
                    starts[i] = starts[i - 1];
                }
                x[i] = (double)(rand() % 19) - 9 + (rand() % 2 ? 0.5 : 0);
            }
            int32_t m = weir_slices_apply(batched, kind, n, keys, starts, x, fresh, near);
            ck_assert_int_ge(m, 0);
            int32_t j = 0;
            for (int32_t i = 0; i < n; i++) {
                double out[3];
                double *acc = weir_slices_acc_near(single, keys[i], starts[i], out);
                ck_assert_ptr_nonnull(acc);
                if (out[0] == 1) {
                    ck_assert_int_lt(j, m);
                    ck_assert_int_eq(fresh[j], i);
                    ck_assert(near[2 * j] == out[1] && near[2 * j + 1] == out[2]);
                    j++;
                    *acc = kind == WEIR_AGG_MIN ? INFINITY : kind == WEIR_AGG_MAX ? -INFINITY : 0;
                }
                switch (kind) {
                case WEIR_AGG_COUNT:
                    *acc = *acc + 1;
                    break;
                case WEIR_AGG_SUM:
                    *acc = *acc + x[i];
                    break;
                case WEIR_AGG_MIN:
                    *acc = x[i] < *acc ? x[i] : *acc;
                    break;
                default:
                    *acc = x[i] > *acc ? x[i] : *acc;
                    break;
                }
            }
            ck_assert_int_eq(j, m);
            /* some slices go, as fires drop them */
            for (int d = 0; d < 40; d++) {
                int32_t key = rand() % 700;
                double start = (double)(rand() % 40 + round / 2) * 10 - 100;
                ck_assert_int_eq(weir_slices_drop(batched, key, start),
                                 weir_slices_drop(single, key, start));
            }
        }
        double open = weir_slices_stat(single, WEIR_STORE_OPEN);
        ck_assert(weir_slices_stat(batched, WEIR_STORE_OPEN) == open && open > 1000);
        ck_assert(weir_slices_stat(batched, WEIR_STORE_ELEMENTS) ==
                  weir_slices_stat(single, WEIR_STORE_ELEMENTS));
        double *da = malloc(sizeof(double) * 3 * (size_t)open);
        double *db = malloc(sizeof(double) * 3 * (size_t)open);
        ck_assert(weir_slices_dump(batched, da, open) == open);
        ck_assert(weir_slices_dump(single, db, open) == open);
        for (int32_t i = 0; i < (int32_t)open; i++) {
            ck_assert(da[3 * i] == db[3 * i] && da[3 * i + 1] == db[3 * i + 1] &&
                      da[3 * i + 2] == db[3 * i + 2]);
            double a;
            double b;
            ck_assert_int_eq(weir_slices_range(batched, da[3 * i], da[3 * i + 1],
                                               da[3 * i + 1] + 1, &a, 1), 1);
            ck_assert_int_eq(weir_slices_range(single, da[3 * i], da[3 * i + 1],
                                               da[3 * i + 1] + 1, &b, 1), 1);
            ck_assert(a == b);
        }
        free(da);
        free(db);
        weir_slices_free(batched);
        weir_slices_free(single);
    }
}
END_TEST

START_TEST(test_slices_apply_refuses_bad_arguments)
{
    weir_slices_t *t = weir_slices_new();
    int32_t keys[2] = {1, 2};
    double starts[2] = {0, 10};
    double x[2] = {1, 2};
    int32_t fresh[2];
    double near[4];
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_AVG, 2, keys, starts, x, fresh, near),
                     WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_SUM, 2, keys, starts, NULL, fresh, near),
                     WEIR_EINVAL);
    starts[1] = NAN;
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_SUM, 2, keys, starts, x, fresh, near),
                     WEIR_EINVAL);
    starts[1] = 10;
    keys[1] = -1;
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_SUM, 2, keys, starts, x, fresh, near),
                     WEIR_EINVAL);
    ck_assert(weir_slices_stat(t, WEIR_STORE_OPEN) == 0); /* nothing applied */
    keys[1] = 1;
    /* count reads no values */
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_COUNT, 2, keys, starts, NULL, fresh, near), 2);
    ck_assert(fresh[0] == 0 && isinf(near[0]) && isinf(near[1]));
    ck_assert(fresh[1] == 1 && near[2] == 0 && isinf(near[3]));
    ck_assert_int_eq(weir_slices_apply(t, WEIR_AGG_COUNT, 0, NULL, NULL, NULL, NULL, NULL), 0);
    double acc;
    ck_assert_int_eq(weir_slices_range(t, 1, 0, 20, &acc, 1), 2);
    ck_assert(acc == 1);
    weir_slices_free(t);
}
END_TEST

START_TEST(test_slices_fire_refuses_bad_arguments)
{
    weir_slices_t *t = weir_slices_new();
    int32_t fresh;
    *weir_slices_acc(t, 1, 0, &fresh) = 5;
    int32_t keys[1] = {1};
    double res[1];
    int32_t flags[1];
    int32_t off[2];
    int32_t scratch[1];
    weir_slices_op_t ops[4];
    ck_assert_int_eq(weir_slices_fire(t, keys, 1, 0, 10, 1, res, flags, off, ops, 4, scratch), 1);
    /* its only slice: dropped, and the key with it */
    ck_assert(res[0] == 5 && flags[0] == (WR_SLICES_HAS | WR_SLICES_DROPPED | WR_SLICES_GONE));
    ck_assert(weir_slices_stat(t, WEIR_STORE_OPEN) == 0);
    *weir_slices_acc(t, 1, 0, &fresh) = 5;
    ck_assert_int_eq(weir_slices_fire(t, keys, 1, NAN, 10, 1, res, flags, off, ops, 4, scratch),
                     WEIR_EINVAL);
    keys[0] = -1;
    ck_assert_int_eq(weir_slices_fire(t, keys, 1, 0, 10, 1, res, flags, off, ops, 4, scratch),
                     WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_touch(t, -1, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_forget(t, 0.5), WEIR_EINVAL);
    double near[3];
    ck_assert(weir_slices_acc_near(t, 1, 10, near) != NULL && near[0] == 1 && near[1] == 0 &&
              isinf(near[2]));
    ck_assert(weir_slices_acc_near(t, 1, NAN, near) == NULL);
    weir_slices_free(t);
}
END_TEST

/* wr_slices_undrop: after a fire pass with drop, the slices it dropped for keys [from, n) go
 * back as they were (start, accumulator, count), keys left without slices (gone) included; the
 * keys before from keep theirs dropped; the stats count them again. */
START_TEST(test_slices_undrop_puts_back_what_the_fire_dropped)
{
    enum { KEYS = 40, SLIDE = 10, K = 3 };
    for (int running = 0; running < 2; running++) {
        wr_slices_t t;
        wr_slices_init(&t);
        wr_slices_span(&t, K);
        wr_slices_running(&t, running);
        int32_t keys[KEYS];
        for (int32_t i = 0; i < KEYS; i++) {
            keys[i] = i % 4 == 0 ? (1 << 24) + i : i; /* some sparse */
            /* slices at 0, 10, 20; every third key only at 0 (its fire leaves it gone) */
            for (int64_t s0 = 0; s0 < (i % 3 == 0 ? 1 : K) * SLIDE; s0 += SLIDE) {
                int fresh;
                double *acc = wr_slices_acc(&t, keys[i], s0, &fresh);
                *acc = (double)(i * 10 + s0 / SLIDE);
                ck_assert(wr_slices_count_add(&t, keys[i], s0, i % 5) == 1);
            }
        }
        int64_t open = t.open;
        int64_t elements = t.elements;
        double res[KEYS];
        int32_t flags[KEYS];
        int32_t off[KEYS + 1];
        int32_t scratch[KEYS];
        static wr_slices_op_t ops[KEYS * (K + 2)];
        int32_t d = wr_slices_fire(&t, keys, KEYS, 0, K * SLIDE, 1, res, flags, off, ops,
                                   KEYS * (K + 2), scratch);
        ck_assert_int_eq(d, KEYS);
        ck_assert_int_eq(t.open, open - KEYS);
        int32_t from = 13;
        ck_assert_int_eq(wr_slices_undrop(&t, keys, from, d, 0), KEYS - from);
        ck_assert_int_eq(wr_slices_undrop(&t, keys, from, d, 0), 0); /* once */
        ck_assert_int_eq(t.open, open - from);
        int64_t lost = 0;
        for (int32_t i = 0; i < KEYS; i++) {
            double out[K];
            int32_t n = wr_slices_range(&t, keys[i], 0, SLIDE, out, 1);
            if (i < from) {
                ck_assert_int_eq(n, 0);
                lost += 1 + i % 5;
                continue;
            }
            ck_assert_int_eq(n, 1);
            ck_assert(out[0] == (double)(i * 10));
            ck_assert_int_eq(wr_slices_count_add(&t, keys[i], 0, 0), 1);
            ck_assert_int_eq(wr_slices_range(&t, keys[i], 0, K * SLIDE, out, K),
                             i % 3 == 0 ? 1 : K);
        }
        ck_assert_int_eq(t.elements, elements - lost);
        /* a later fire with drop sees the slices as if never dropped */
        d = wr_slices_fire(&t, keys + from, KEYS - from, 0, K * SLIDE, 1, res, flags, off, ops,
                           KEYS * (K + 2), scratch);
        run_ops(ops, off[d], M_SUM);
        for (int32_t i = from; i < KEYS; i++) {
            double want = i % 3 == 0 ? i * 10 : 3.0 * i * 10 + 3;
            ck_assert_msg(res[i - from] == want, "key %d: %g, want %g", keys[i], res[i - from],
                          want);
            ck_assert(flags[i - from] & WR_SLICES_DROPPED);
        }
        ck_assert_int_eq(wr_slices_undrop(&t, keys, 0, 0, 0), 0);
        wr_slices_close(&t);
    }
    weir_slices_t *fs = weir_slices_new();
    ck_assert_int_eq(weir_slices_undrop(fs, NULL, 0, 1, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_undrop(fs, NULL, 0, 0, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_slices_undrop(fs, NULL, 0, 0, 0), 0);
    weir_slices_free(fs);
}
END_TEST

/* The sliding path of a built-in count or sum, as weir.aggwindow drives it: each step a batch
 * of elements applied in C (most keys into a new last slice, the ring's append in the apply;
 * some into their last slice again, some late into older slices, some keys skipping steps,
 * now and then a value that is no whole number), then a fire with drop of every key's window
 * with running sums. Against a table fed one element at a time (acc_near) and fired with the
 * two stacks and merges: the same fresh slices and neighbours, results, flags, open slices and
 * elements; now and then the fire fails after some keys and undrop puts their slices back, in
 * both. Most fires go without ops (the running sums slide on). */
START_TEST(test_slices_sliding_count_and_sum_equal_the_two_stacks)
{
    enum { KEYS = 300, SLIDE = 10, K = 6, STEPS = 400, N = KEYS + 40 };
    static const int32_t kinds[] = {WEIR_AGG_COUNT, WEIR_AGG_SUM};
    srand(23);
    for (size_t ki = 0; ki < sizeof kinds / sizeof *kinds; ki++) {
        int32_t kind = kinds[ki];
        wr_slices_t a; /* the sliding path: applies, running sums */
        wr_slices_t b; /* one element at a time, two stacks */
        wr_slices_init(&a);
        wr_slices_init(&b);
        wr_slices_span(&a, K);
        wr_slices_span(&b, K);
        wr_slices_running(&a, 1);
        static int32_t ekeys[N];
        static double starts[N];
        static double x[N];
        static int32_t fresh[N];
        static double near[2 * N];
        static int32_t keys[KEYS];
        static double ra[KEYS];
        static double rb[KEYS];
        static int32_t fa[KEYS];
        static int32_t fb[KEYS];
        static int32_t off[KEYS + 1];
        static int32_t scratch[KEYS];
        static wr_slices_op_t ops[KEYS * (K + 2)];
        int64_t opless = 0;
        int64_t undone = 0;
        for (int step = 0; step < STEPS; step++) {
            int64_t now = (int64_t)step * SLIDE;
            int32_t n = 0;
            for (int32_t k = 0; k < KEYS && n < N; k++) {
                if (rand() % 10 == 0) {
                    continue; /* a key that skips a step */
                }
                ekeys[n] = k % 50 == 0 ? (1 << 24) + k : k; /* some sparse */
                starts[n] = (double)now;
                if (rand() % 20 == 0) { /* late, into an older slice (maybe a queued one) */
                    starts[n] = (double)(now - (int64_t)(rand() % K) * SLIDE);
                }
                x[n] = (double)(rand() % 100);
                if (kind == WEIR_AGG_SUM && rand() % 97 == 0) {
                    x[n] += 0.5; /* no whole number: its key's fires go by the two stacks */
                }
                n++;
                if (rand() % 8 == 0 && n < N) { /* into its last slice again */
                    ekeys[n] = ekeys[n - 1];
                    starts[n] = starts[n - 1];
                    x[n] = 1;
                    n++;
                }
            }
            int32_t m = wr_slices_apply(&a, kind, n, ekeys, starts, x, fresh, near);
            ck_assert_int_ge(m, 0);
            int32_t j = 0;
            for (int32_t i = 0; i < n; i++) {
                int f = 0;
                int64_t start = (int64_t)starts[i];
                double *acc = wr_slices_acc(&b, ekeys[i], start, &f);
                ck_assert_ptr_nonnull(acc);
                if (f) {
                    int64_t prev;
                    int64_t next;
                    wr_slices_neighbors(&b, ekeys[i], start, &prev, &next);
                    ck_assert_int_lt(j, m);
                    ck_assert_int_eq(fresh[j], i);
                    ck_assert(near[2 * j] == (prev == INT64_MIN ? -INFINITY : (double)prev));
                    ck_assert(near[2 * j + 1] == (next == INT64_MAX ? INFINITY : (double)next));
                    j++;
                    *acc = 0;
                } else {
                    wr_slices_touch(&b, ekeys[i], start);
                }
                *acc += kind == WEIR_AGG_COUNT ? 1 : x[i];
            }
            ck_assert_int_eq(j, m);
            /* the apply's elements touch their slices too, as the operator's late ones do */
            for (int32_t i = 0; i < n; i++) {
                if (starts[i] < (double)now) {
                    wr_slices_touch(&a, ekeys[i], (int64_t)starts[i]);
                }
            }
            int64_t lo = now - (int64_t)(K - 1) * SLIDE;
            int64_t hi = lo + (int64_t)K * SLIDE;
            for (int32_t k = 0; k < KEYS; k++) {
                keys[k] = k % 50 == 0 ? (1 << 24) + k : k;
            }
            int32_t da = wr_slices_fire(&a, keys, KEYS, lo, hi, 1, ra, fa, off, ops,
                                        KEYS * (K + 2), scratch);
            ck_assert_int_eq(da, KEYS);
            for (int32_t k = 0; k < KEYS; k++) {
                opless += off[k + 1] == off[k] && (fa[k] & WR_SLICES_HAS);
            }
            run_ops(ops, off[da], M_SUM);
            int32_t db = wr_slices_fire(&b, keys, KEYS, lo, hi, 1, rb, fb, off, ops,
                                        KEYS * (K + 2), scratch);
            ck_assert_int_eq(db, KEYS);
            run_ops(ops, off[db], M_SUM);
            for (int32_t k = 0; k < KEYS; k++) {
                ck_assert_int_eq(fa[k], fb[k]);
                if (fa[k] & WR_SLICES_HAS) {
                    ck_assert_msg(ra[k] == rb[k], "step %d key %d: %.17g, want %.17g", step, k,
                                  ra[k], rb[k]);
                }
            }
            if (step % 37 == 5) { /* the fire failed at key from: the rest go back */
                int32_t from = rand() % KEYS;
                int32_t ua = wr_slices_undrop(&a, keys, from, KEYS, lo);
                ck_assert_int_eq(ua, wr_slices_undrop(&b, keys, from, KEYS, lo));
                undone += ua;
                for (int32_t k = from; k < KEYS; k++) {
                    wr_slices_drop(&a, keys[k], lo);
                    wr_slices_drop(&b, keys[k], lo);
                }
            }
            ck_assert_int_eq(a.open, b.open);
            ck_assert_int_eq(a.elements, b.elements);
        }
        ck_assert_int_gt(opless, (int64_t)STEPS * KEYS / 2);
        ck_assert_int_gt(undone, 100);
        wr_slices_close(&a);
        wr_slices_close(&b);
    }
}
END_TEST

static Suite *slices_suite(void)
{
    Suite *s = suite_create("slices");
    add_case(s, "keep_each_key_in_start_order", test_slices_keep_each_key_in_start_order);
    add_case(s, "return_to_their_initial_allocation_when_empty",
             test_slices_return_to_their_initial_allocation_when_empty);
    add_case(s, "match_a_reference_model", test_slices_match_a_reference_model);
    add_case(s, "run_ops_merges_in_order", test_slices_run_ops_merges_in_order);
    add_case(s, "dense_and_sparse_keys_find_their_slices",
             test_slices_dense_and_sparse_keys_find_their_slices);
    add_case(s, "gather_equals_ranges", test_slices_gather_equals_ranges);
    add_case(s, "fire_equals_the_window_merge", test_slices_fire_equals_the_window_merge);
    add_case(s, "fire_of_many_keys_equals_the_window_merge",
             test_slices_fire_of_many_keys_equals_the_window_merge);
    add_case(s, "running_sums_equal_the_window_sum",
             test_slices_running_sums_equal_the_window_sum);
    add_case(s, "fire_refuses_bad_arguments", test_slices_fire_refuses_bad_arguments);
    add_case(s, "undrop_puts_back_what_the_fire_dropped",
             test_slices_undrop_puts_back_what_the_fire_dropped);
    add_case(s, "apply_equals_elements_one_at_a_time",
             test_slices_apply_equals_elements_one_at_a_time);
    add_case(s, "apply_refuses_bad_arguments", test_slices_apply_refuses_bad_arguments);
    add_case(s, "span_rings_and_aligned_records", test_slices_span_rings_and_aligned_records);
    add_case(s, "sliding_count_and_sum_equal_the_two_stacks",
             test_slices_sliding_count_and_sum_equal_the_two_stacks);
    return s;
}

int main(void)
{
    return run_suite(slices_suite());
}
