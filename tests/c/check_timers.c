/* SPDX-License-Identifier: MIT */
/* check_timers.c: the timer service against SEMANTICS.md 5.6 and weir's determinism rule
 * (DESIGN.md, Time): set semantics, (time, registration) order, the upto bound of a firing loop,
 * separate domains, the ends of time, the FFI conversions, a reference model and growth. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "timers.h"
#include "weir.h"

enum { EV = WEIR_TIME_EVENT, PT = WEIR_TIME_PROCESSING };

static wr_timer_t tm(int64_t time_ms, int64_t key, int64_t start, int64_t stop)
{
    return (wr_timer_t){.time_ms = time_ms, .key = key, .start = start, .stop = stop};
}

static int reg(wr_timers_t *t, int domain, int64_t time_ms, int64_t key)
{
    wr_timer_t x = tm(time_ms, key, 0, 10);
    return wr_timers_register(t, domain, &x);
}

static int del(wr_timers_t *t, int domain, int64_t time_ms, int64_t key)
{
    wr_timer_t x = tm(time_ms, key, 0, 10);
    return wr_timers_delete(t, domain, &x);
}

/* Pops everything due at upto and returns the keys in pop order (at most max). */
static int pop_keys(wr_timers_t *t, int domain, int64_t upto, int64_t *keys, int max)
{
    int n = 0;
    wr_timer_t x;
    while (wr_timers_pop(t, domain, upto, &x)) {
        ck_assert_int_lt(n, max);
        keys[n++] = x.key;
    }
    return n;
}

START_TEST(test_timers_duplicate_register_is_a_noop_keeping_first_position)
{
    wr_timers_t t;
    wr_timers_init(&t);
    ck_assert_int_eq(reg(&t, EV, 100, 1), 1);
    ck_assert_int_eq(reg(&t, EV, 100, 2), 1);
    ck_assert_int_eq(reg(&t, EV, 100, 1), 0); /* already there: keeps its place before key 2 */
    ck_assert_int_eq(reg(&t, EV, 100, 3), 1);
    ck_assert_int_eq(reg(&t, EV, 100, 2), 0);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 3);
    int64_t keys[8];
    ck_assert_int_eq(pop_keys(&t, EV, 100, keys, 8), 3);
    ck_assert_int_eq(keys[0], 1);
    ck_assert_int_eq(keys[1], 2);
    ck_assert_int_eq(keys[2], 3);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_delete_removes_exactly_that_timer)
{
    wr_timers_t t;
    wr_timers_init(&t);
    wr_timer_t base = tm(100, 7, 0, 10);
    wr_timer_t others[] = {tm(101, 7, 0, 10), tm(100, 8, 0, 10), tm(100, 7, 1, 10),
                           tm(100, 7, 0, 11)};
    ck_assert_int_eq(wr_timers_register(&t, EV, &base), 1);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        ck_assert_int_eq(wr_timers_register(&t, EV, &others[i]), 1);
    }
    ck_assert_int_eq(wr_timers_register(&t, PT, &base), 1);
    ck_assert_int_eq(wr_timers_delete(&t, EV, &base), 1);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 4);
    ck_assert_uint_eq(wr_timers_count(&t, PT), 1); /* the same triple in the other domain stays */
    /* Every timer differing in one field survives; each is then still there to delete. */
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        ck_assert_int_eq(wr_timers_register(&t, EV, &others[i]), 0);
    }
    ck_assert_int_eq(wr_timers_delete(&t, EV, &base), 0);
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        ck_assert_int_eq(wr_timers_delete(&t, EV, &others[i]), 1);
    }
    ck_assert_uint_eq(wr_timers_count(&t, EV), 0);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_delete_of_absent_is_a_noop)
{
    wr_timers_t t;
    wr_timers_init(&t);
    ck_assert_int_eq(del(&t, EV, 5, 1), 0); /* empty service, nothing allocated */
    reg(&t, EV, 10, 1);
    reg(&t, EV, 20, 2);
    ck_assert_int_eq(del(&t, EV, 10, 2), 0);
    ck_assert_int_eq(del(&t, PT, 10, 1), 0);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 2);
    ck_assert_int_eq(wr_timers_next(&t, EV), 10);
    int64_t keys[4];
    ck_assert_int_eq(pop_keys(&t, EV, 20, keys, 4), 2);
    ck_assert_int_eq(keys[0], 1);
    ck_assert_int_eq(keys[1], 2);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_delete_then_register_takes_a_new_position)
{
    wr_timers_t t;
    wr_timers_init(&t);
    reg(&t, EV, 50, 1);
    reg(&t, EV, 50, 2);
    reg(&t, EV, 50, 3);
    ck_assert_int_eq(del(&t, EV, 50, 1), 1);
    ck_assert_int_eq(reg(&t, EV, 50, 1), 1); /* now the latest registration at 50 */
    int64_t keys[4];
    ck_assert_int_eq(pop_keys(&t, EV, 50, keys, 4), 3);
    ck_assert_int_eq(keys[0], 2);
    ck_assert_int_eq(keys[1], 3);
    ck_assert_int_eq(keys[2], 1);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_pop_orders_by_time_then_registration)
{
    wr_timers_t t;
    wr_timers_init(&t);
    /* key = expected pop rank */
    reg(&t, EV, 30, 5);
    reg(&t, EV, 10, 0);
    reg(&t, EV, 20, 2);
    reg(&t, EV, 30, 6);
    reg(&t, EV, 10, 1);
    reg(&t, EV, 20, 3);
    reg(&t, EV, 20, 4);
    reg(&t, EV, -5, -1);
    int64_t keys[8];
    ck_assert_int_eq(pop_keys(&t, EV, INT64_MAX, keys, 8), 8);
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(keys[i], i - 1);
    }
    /* Many equal times: pure registration order, whatever the heap shape. */
    for (int i = 0; i < 1000; i++) {
        reg(&t, PT, 7, i);
    }
    for (int i = 0; i < 1000; i += 3) {
        del(&t, PT, 7, i);
    }
    wr_timer_t x;
    int64_t last = -1;
    while (wr_timers_pop(&t, PT, 7, &x)) {
        ck_assert_int_gt(x.key, last);
        ck_assert_int_ne(x.key % 3, 0);
        last = x.key;
    }
    ck_assert_int_eq(last, 998);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_pop_respects_upto)
{
    wr_timers_t t;
    wr_timers_init(&t);
    reg(&t, EV, 10, 1);
    reg(&t, EV, 20, 2);
    reg(&t, EV, 21, 3);
    wr_timer_t x = tm(-1, -1, -1, -1);
    ck_assert_int_eq(wr_timers_pop(&t, EV, 9, &x), 0);
    ck_assert_int_eq(x.key, -1); /* untouched when nothing is due */
    ck_assert_int_eq(wr_timers_pop(&t, EV, 20, &x), 1); /* time <= upto, inclusive */
    ck_assert_int_eq(x.time_ms, 10);
    ck_assert_int_eq(x.key, 1);
    ck_assert_int_eq(x.start, 0);
    ck_assert_int_eq(x.stop, 10);
    ck_assert_int_eq(wr_timers_pop(&t, EV, 20, &x), 1);
    ck_assert_int_eq(x.key, 2);
    ck_assert_int_eq(wr_timers_pop(&t, EV, 20, &x), 0);
    ck_assert_int_eq(wr_timers_next(&t, EV), 21);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 1);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_registered_during_a_firing_loop_fire_in_it_when_due)
{
    wr_timers_t t;
    wr_timers_init(&t);
    reg(&t, EV, 10, 1);
    reg(&t, EV, 15, 2);
    int64_t order[8];
    int n = 0;
    wr_timer_t x;
    while (wr_timers_pop(&t, EV, 15, &x)) {
        ck_assert_int_lt(n, 8);
        order[n++] = x.key;
        if (x.key == 1) {
            reg(&t, EV, 12, 3); /* due, before 15: next */
            reg(&t, EV, 15, 4); /* due, ties with key 2 and registered later: after it */
            reg(&t, EV, 16, 5); /* not due */
            reg(&t, EV, 9, 6);  /* in the past: fires at once */
        }
    }
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(order[0], 1);
    ck_assert_int_eq(order[1], 6);
    ck_assert_int_eq(order[2], 3);
    ck_assert_int_eq(order[3], 2);
    ck_assert_int_eq(order[4], 4);
    ck_assert_int_eq(wr_timers_next(&t, EV), 16);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_domains_are_separate)
{
    wr_timers_t t;
    wr_timers_init(&t);
    reg(&t, EV, 10, 1);
    reg(&t, PT, 5, 2);
    ck_assert_int_eq(reg(&t, PT, 10, 1), 1); /* same timer, other domain: a new timer */
    ck_assert_uint_eq(wr_timers_count(&t, EV), 1);
    ck_assert_uint_eq(wr_timers_count(&t, PT), 2);
    ck_assert_int_eq(wr_timers_next(&t, EV), 10);
    ck_assert_int_eq(wr_timers_next(&t, PT), 5);
    int64_t keys[4];
    ck_assert_int_eq(pop_keys(&t, PT, 100, keys, 4), 2);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 1);
    ck_assert_int_eq(wr_timers_next(&t, PT), INT64_MAX);
    ck_assert_int_eq(pop_keys(&t, EV, 100, keys, 4), 1);
    ck_assert_int_eq(keys[0], 1);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_next_is_earliest_time_or_max)
{
    wr_timers_t t;
    wr_timers_init(&t);
    ck_assert_int_eq(wr_timers_next(&t, EV), INT64_MAX);
    reg(&t, EV, 40, 1);
    reg(&t, EV, 30, 2);
    ck_assert_int_eq(wr_timers_next(&t, EV), 30);
    del(&t, EV, 30, 2);
    ck_assert_int_eq(wr_timers_next(&t, EV), 40);
    del(&t, EV, 40, 1);
    ck_assert_int_eq(wr_timers_next(&t, EV), INT64_MAX);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 0);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_ffi_maps_infinities_for_global_windows)
{
    weir_timers_t *t = weir_timers_new();
    ck_assert_ptr_nonnull(t);
    ck_assert(isinf(weir_timers_next(t, EV)) && weir_timers_next(t, EV) > 0);
    /* A global-window timer at +inf and one at -inf. */
    ck_assert_int_eq(weir_timers_register(t, EV, INFINITY, 3, -INFINITY, INFINITY), 1);
    ck_assert_int_eq(weir_timers_register(t, EV, -INFINITY, 4, -INFINITY, INFINITY), 1);
    ck_assert_int_eq(weir_timers_register(t, EV, INFINITY, 3, -INFINITY, INFINITY), 0);
    /* Huge finite values saturate to the same ends. */
    ck_assert_int_eq(weir_timers_register(t, EV, 1e300, 3, -1e300, 1e300), 0);
    ck_assert_int_eq(weir_timers_count(t, EV), 2);
    ck_assert(isinf(weir_timers_next(t, EV)) && weir_timers_next(t, EV) < 0);
    weir_timer_t out = {0, 0, 0, 0};
    ck_assert_int_eq(weir_timers_pop(t, EV, -INFINITY, &out), 1);
    ck_assert(isinf(out.time_ms) && out.time_ms < 0);
    ck_assert(out.key == 4);
    ck_assert(isinf(out.start) && out.start < 0);
    ck_assert(isinf(out.stop) && out.stop > 0);
    ck_assert_int_eq(weir_timers_pop(t, EV, 9e18, &out), 0); /* +inf is after every finite time */
    ck_assert(isinf(weir_timers_next(t, EV)) && weir_timers_next(t, EV) > 0);
    ck_assert_int_eq(weir_timers_count(t, EV), 1); /* +inf as next, but not empty */
    ck_assert_int_eq(weir_timers_pop(t, EV, INFINITY, &out), 1); /* end of input fires it */
    ck_assert(isinf(out.time_ms) && out.time_ms > 0);
    ck_assert(out.key == 3);
    ck_assert_int_eq(weir_timers_count(t, EV), 0);
    weir_timers_free(t);
    weir_timers_free(NULL);
}
END_TEST

START_TEST(test_timers_ffi_truncates_toward_zero)
{
    weir_timers_t *t = weir_timers_new();
    ck_assert_int_eq(weir_timers_register(t, PT, 10.9, 2.0, 0.5, 10.2), 1);
    ck_assert_int_eq(weir_timers_register(t, PT, 10.0, 2.0, 0.0, 10.0), 0); /* the same timer */
    ck_assert_int_eq(weir_timers_register(t, PT, -1.5, 1.0, -10.7, 0.0), 1);
    ck_assert(weir_timers_next(t, PT) == -1.0);
    weir_timer_t out;
    ck_assert_int_eq(weir_timers_pop(t, PT, -2.9, &out), 0); /* upto truncates to -2 */
    ck_assert_int_eq(weir_timers_pop(t, PT, -1.9, &out), 1); /* upto -1 */
    ck_assert(out.time_ms == -1.0 && out.key == 1.0 && out.start == -10.0 && out.stop == 0.0);
    ck_assert_int_eq(weir_timers_delete(t, PT, 10.5, 2.5, 0.9, 10.9), 1);
    ck_assert_int_eq(weir_timers_delete(t, PT, 10.5, 2.5, 0.9, 10.9), 0);
    weir_timers_free(t);
}
END_TEST

START_TEST(test_timers_ffi_rejects_bad_domain_and_nan)
{
    weir_timers_t *t = weir_timers_new();
    weir_timer_t out;
    ck_assert_int_eq(weir_timers_register(t, 2, 1, 1, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_register(t, -1, 1, 1, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_register(t, EV, NAN, 1, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_register(t, EV, 1, NAN, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_register(t, EV, 1, 1, NAN, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_register(t, EV, 1, 1, 0, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_delete(t, 2, 1, 1, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_delete(t, EV, 1, NAN, 0, 10), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_pop(t, 2, 100, &out), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_pop(t, EV, NAN, &out), WEIR_EINVAL);
    ck_assert(isnan(weir_timers_next(t, 2)));
    ck_assert_int_eq(weir_timers_count(t, 2), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_count(t, EV), 0);
    weir_timers_free(t);
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

enum { MODEL_MAX = 4096 };

/* The obvious implementation: an unordered array, linear scans, an explicit seq. */
typedef struct model {
    wr_timer_t timer[MODEL_MAX];
    uint64_t seq[MODEL_MAX];
    int len;
    uint64_t next_seq;
} model_t;

static int model_find(const model_t *m, const wr_timer_t *x)
{
    for (int i = 0; i < m->len; i++) {
        const wr_timer_t *y = &m->timer[i];
        if (y->time_ms == x->time_ms && y->key == x->key && y->start == x->start &&
            y->stop == x->stop) {
            return i;
        }
    }
    return -1;
}

static int model_register(model_t *m, const wr_timer_t *x)
{
    if (model_find(m, x) >= 0) {
        return 0;
    }
    ck_assert_int_lt(m->len, MODEL_MAX);
    m->timer[m->len] = *x;
    m->seq[m->len] = m->next_seq++;
    m->len++;
    return 1;
}

static void model_remove(model_t *m, int i)
{
    m->len--;
    m->timer[i] = m->timer[m->len];
    m->seq[i] = m->seq[m->len];
}

static int model_delete(model_t *m, const wr_timer_t *x)
{
    int i = model_find(m, x);
    if (i < 0) {
        return 0;
    }
    model_remove(m, i);
    return 1;
}

static int model_min(const model_t *m)
{
    int best = -1;
    for (int i = 0; i < m->len; i++) {
        if (best < 0 || m->timer[i].time_ms < m->timer[best].time_ms ||
            (m->timer[i].time_ms == m->timer[best].time_ms && m->seq[i] < m->seq[best])) {
            best = i;
        }
    }
    return best;
}

static int model_pop(model_t *m, int64_t upto, wr_timer_t *out)
{
    int i = model_min(m);
    if (i < 0 || m->timer[i].time_ms > upto) {
        return 0;
    }
    *out = m->timer[i];
    model_remove(m, i);
    return 1;
}

static wr_timer_t random_timer(void)
{
    static const int64_t bounds[][2] = {{0, 100}, {100, 200}, {INT64_MIN, INT64_MAX}};
    int64_t time_ms = rnd_below(10) == 0 ? (rnd_below(2) ? INT64_MAX : INT64_MIN)
                                          : rnd_below(64);
    int w = (int)rnd_below(3);
    return tm(time_ms, rnd_below(4), bounds[w][0], bounds[w][1]);
}

/* Check reports every passing assertion to its parent process, which is slow in a hot loop:
 * the random test notes its first mismatch here and asserts once at the end. */
static int bad_line;
static int bad_op;
static int cur_op;

static void expect(bool cond, int line)
{
    if (!cond && bad_line == 0) {
        bad_line = line;
        bad_op = cur_op;
    }
}

static bool same(const wr_timer_t *a, const wr_timer_t *b)
{
    return a->time_ms == b->time_ms && a->key == b->key && a->start == b->start &&
           a->stop == b->stop;
}

static int check_pop(wr_timers_t *t, model_t *m, int d, int64_t upto)
{
    wr_timer_t got = tm(0, 0, 0, 0);
    wr_timer_t want = tm(0, 0, 0, 0);
    int rc = wr_timers_pop(t, d, upto, &got);
    expect(rc == model_pop(m, upto, &want), __LINE__);
    expect(!rc || same(&got, &want), __LINE__);
    return rc;
}

START_TEST(test_timers_match_a_reference_model_over_random_operations)
{
    static model_t models[WR_TIMERS_DOMAINS];
    wr_timers_t t;
    wr_timers_init(&t);
    memset(models, 0, sizeof models);
    bad_line = 0;
    rng_state = UINT64_C(0x2545f4914f6cdd1d);
    for (cur_op = 0; cur_op < 100000; cur_op++) {
        int d = (int)rnd_below(2);
        model_t *m = &models[d];
        int64_t r = rnd_below(100);
        if (r < 45) {
            wr_timer_t x = random_timer();
            expect(wr_timers_register(&t, d, &x) == model_register(m, &x), __LINE__);
        } else if (r < 70) {
            /* Half the deletes hit a live timer, half a random (often absent) one. */
            wr_timer_t x = m->len && rnd_below(2) ? m->timer[rnd_below(m->len)] : random_timer();
            expect(wr_timers_delete(&t, d, &x) == model_delete(m, &x), __LINE__);
        } else if (r < 95) {
            check_pop(&t, m, d, rnd_below(70) - 3);
        } else {
            /* A firing loop that registers while it fires. */
            int64_t upto = rnd_below(64);
            while (check_pop(&t, m, d, upto) && bad_line == 0) {
                if (rnd_below(3) == 0) {
                    wr_timer_t x = random_timer();
                    expect(wr_timers_register(&t, d, &x) == model_register(m, &x), __LINE__);
                }
            }
        }
        expect(wr_timers_count(&t, d) == (size_t)m->len, __LINE__);
        int i = model_min(m);
        expect(wr_timers_next(&t, d) == (i < 0 ? INT64_MAX : m->timer[i].time_ms), __LINE__);
        if (bad_line) {
            break;
        }
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d, op %d", bad_line, bad_op);
    for (int d = 0; d < WR_TIMERS_DOMAINS; d++) {
        while (models[d].len && bad_line == 0) {
            check_pop(&t, &models[d], d, INT64_MAX);
        }
        ck_assert_msg(bad_line == 0, "mismatch at line %d while draining", bad_line);
        ck_assert_uint_eq(wr_timers_count(&t, d), 0);
    }
    wr_timers_close(&t);
}
END_TEST

/* The runs' case: timers from several streams whose times only go up (more streams than runs,
 * so some go to the heap), deletes that leave tombstones in the runs (enough for compaction),
 * pops at the streams' slowest time, and now and then the list against the model's order. */
enum { STREAMS = WR_TIMERS_RUNS + 2 };
static const model_t *sort_model;

static int model_order(const void *a, const void *b)
{
    const model_t *m = sort_model;
    int i = *(const int *)a, j = *(const int *)b;
    if (m->timer[i].time_ms != m->timer[j].time_ms) {
        return m->timer[i].time_ms < m->timer[j].time_ms ? -1 : 1;
    }
    return m->seq[i] < m->seq[j] ? -1 : m->seq[i] > m->seq[j];
}

START_TEST(test_timers_match_the_model_for_streams_in_time_order)
{
    static model_t model;
    static int order[MODEL_MAX];
    static wr_timer_t listed[MODEL_MAX];
    model_t *m = &model;
    wr_timers_t t;
    wr_timers_init(&t);
    memset(m, 0, sizeof *m);
    bad_line = 0;
    rng_state = UINT64_C(0x9e3779b97f4a7c15);
    int64_t clock[STREAMS] = {0};
    for (cur_op = 0; cur_op < 200000 && bad_line == 0; cur_op++) {
        int64_t r = rnd_below(100);
        if (r < 50 && m->len < MODEL_MAX - 1) {
            int sidx = (int)rnd_below(STREAMS);
            clock[sidx] += rnd_below(3);
            wr_timer_t x = tm(clock[sidx], rnd_below(40), sidx, 0);
            expect(wr_timers_register(&t, EV, &x) == model_register(m, &x), __LINE__);
        } else if (r < 80) {
            wr_timer_t x = m->len ? m->timer[rnd_below(m->len)] : tm(0, 0, 0, 0);
            expect(wr_timers_delete(&t, EV, &x) == model_delete(m, &x), __LINE__);
        } else if (r < 99) {
            int64_t slowest = clock[0];
            for (int i = 1; i < STREAMS; i++) {
                slowest = clock[i] < slowest ? clock[i] : slowest;
            }
            int64_t upto = slowest - rnd_below(8);
            while (check_pop(&t, m, EV, upto) && bad_line == 0 && rnd_below(8)) {
            }
        } else {
            sort_model = m;
            for (int i = 0; i < m->len; i++) {
                order[i] = i;
            }
            qsort(order, (size_t)m->len, sizeof order[0], model_order);
            size_t all = wr_timers_list(&t, EV, listed, MODEL_MAX);
            expect(all == (size_t)m->len, __LINE__);
            for (int i = 0; i < m->len && i < (int)all; i++) {
                expect(same(&listed[i], &m->timer[order[i]]), __LINE__);
            }
        }
        expect(wr_timers_count(&t, EV) == (size_t)m->len, __LINE__);
        int i = model_min(m);
        expect(wr_timers_next(&t, EV) == (i < 0 ? INT64_MAX : m->timer[i].time_ms), __LINE__);
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d, op %d", bad_line, bad_op);
    while (m->len && bad_line == 0) {
        check_pop(&t, m, EV, INT64_MAX);
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d while draining", bad_line);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 0);
    wr_timers_close(&t);
}
END_TEST

/* A run whose front never fires (a timer far ahead) while timers behind it come and go in time
 * order: tombstones are compacted, so the run's array stays near its live entries. */
START_TEST(test_timers_run_tombstones_are_compacted)
{
    wr_timers_t t;
    wr_timers_init(&t);
    ck_assert_int_eq(reg(&t, EV, 1000000000, 1), 1); /* a run of its own */
    ck_assert_int_eq(reg(&t, EV, 5, 2), 1);          /* the live front of the next */
    for (int64_t i = 0; i < 100000; i++) {
        ck_assert_int_eq(reg(&t, EV, 10 + i, 3), 1); /* behind it, then gone */
        ck_assert_int_eq(del(&t, EV, 10 + i, 3), 1);
    }
    ck_assert_uint_eq(wr_timers_count(&t, EV), 2);
    size_t cap = 0;
    for (int r = 0; r < WR_TIMERS_RUNS; r++) {
        cap += t.dom[EV].run[r].cap;
    }
    ck_assert_uint_le(cap, 1024);
    wr_timer_t x;
    ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 1);
    ck_assert_int_eq(x.time_ms, 5);
    ck_assert_int_eq(x.key, 2);
    ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 1);
    ck_assert_int_eq(x.key, 1);
    ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 0);
    wr_timers_close(&t);
}
END_TEST

/* A distinct service keeps no index: register adds without looking, delete is refused; the
 * order, next, count and list are as with the index, against the model of the streams. */
START_TEST(test_timers_distinct_service_keeps_order_without_an_index)
{
    static model_t model;
    model_t *m = &model;
    memset(m, 0, sizeof *m);
    wr_timers_t t;
    wr_timers_init(&t);
    ck_assert_int_eq(reg(&t, EV, 1, 1), 1);
    ck_assert_int_eq(wr_timers_set_distinct(&t), WEIR_ESTATE); /* only when empty */
    wr_timer_t x;
    ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 1);
    ck_assert_int_eq(wr_timers_set_distinct(&t), 0);
    size_t index_cap = t.dom[EV].index.cap; /* of the first registration's index */
    bad_line = 0;
    rng_state = UINT64_C(0x853c49e6748fea9b);
    int64_t clock[STREAMS] = {0};
    int64_t serial = 0;
    for (cur_op = 0; cur_op < 100000 && bad_line == 0; cur_op++) {
        if (rnd_below(100) < 55 && m->len < MODEL_MAX - 1) {
            int sidx = (int)rnd_below(STREAMS);
            clock[sidx] += rnd_below(3) - (rnd_below(20) == 0 ? 5 : 0); /* now and then back */
            wr_timer_t y = tm(clock[sidx], serial++, sidx, 0);       /* distinct: serial key */
            expect(wr_timers_register(&t, EV, &y) == model_register(m, &y), __LINE__);
        } else {
            int64_t slowest = clock[0];
            for (int i = 1; i < STREAMS; i++) {
                slowest = clock[i] < slowest ? clock[i] : slowest;
            }
            check_pop(&t, m, EV, slowest - rnd_below(8));
        }
        expect(wr_timers_count(&t, EV) == (size_t)m->len, __LINE__);
        int i = model_min(m);
        expect(wr_timers_next(&t, EV) == (i < 0 ? INT64_MAX : m->timer[i].time_ms), __LINE__);
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d, op %d", bad_line, bad_op);
    ck_assert_uint_eq(t.dom[EV].index.cap, index_cap); /* thousands of timers, no index growth */
    wr_timer_t y = tm(0, 0, 0, 0);
    ck_assert_int_eq(wr_timers_delete(&t, EV, &y), WEIR_EINVAL);
    while (m->len && bad_line == 0) {
        check_pop(&t, m, EV, INT64_MAX);
    }
    ck_assert_msg(bad_line == 0, "mismatch at line %d while draining", bad_line);
    ck_assert_uint_eq(wr_timers_count(&t, EV), 0);
    wr_timers_close(&t);
    /* the FFI: set on an empty service, delete refused */
    weir_timers_t *ft = weir_timers_new();
    ck_assert_int_eq(weir_timers_set_distinct(ft), 0);
    ck_assert_int_eq(weir_timers_register(ft, EV, 5, 1, 2, 0), 1);
    ck_assert_int_eq(weir_timers_delete(ft, EV, 5, 1, 2, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_count(ft, EV), 1);
    weir_timers_free(ft);
}
END_TEST

/* A distinct service reuses freed nodes first freed, first reused: timers registered in time
 * order take the nodes in the order they were popped in (an indexed one reuses the last freed
 * first). */
START_TEST(test_timers_distinct_service_reuses_nodes_in_pop_order)
{
    for (int distinct = 0; distinct <= 1; distinct++) {
        wr_timers_t t;
        wr_timers_init(&t);
        if (distinct) {
            ck_assert_int_eq(wr_timers_set_distinct(&t), 0);
        }
        for (int64_t k = 0; k < 3; k++) {
            wr_timer_t y = tm(k, k, 0, 0);
            ck_assert_int_eq(wr_timers_register(&t, EV, &y), 1);
        }
        wr_timer_t x;
        for (int64_t k = 0; k < 3; k++) {
            ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 1);
            ck_assert_int_eq(x.key, k);
        }
        for (int64_t k = 10; k < 13; k++) {
            wr_timer_t y = tm(k, k, 0, 0);
            ck_assert_int_eq(wr_timers_register(&t, EV, &y), 1);
        }
        ck_assert_uint_eq(t.dom[EV].nodes_len, 3);
        for (int64_t k = 0; k < 3; k++) {
            ck_assert_int_eq(t.dom[EV].nodes[k].key, distinct ? 10 + k : 12 - k);
        }
        for (int64_t k = 10; k < 13; k++) {
            ck_assert_int_eq(wr_timers_pop(&t, EV, INT64_MAX, &x), 1);
            ck_assert_int_eq(x.key, k);
        }
        wr_timers_close(&t);
    }
}
END_TEST

START_TEST(test_timers_list_is_the_pop_order_and_changes_nothing)
{
    wr_timers_t t;
    wr_timers_init(&t);
    static model_t m;
    memset(&m, 0, sizeof m);
    rng_state = UINT64_C(0x853c49e6748fea9b);
    for (int i = 0; i < 3000; i++) {
        wr_timer_t x = random_timer();
        if (rnd_below(4) == 0) {
            ck_assert_int_eq(wr_timers_delete(&t, EV, &x), model_delete(&m, &x));
        } else {
            ck_assert_int_eq(wr_timers_register(&t, EV, &x), model_register(&m, &x));
        }
    }
    ck_assert_uint_eq(wr_timers_list(&t, PT, NULL, 0), 0);
    size_t n = wr_timers_count(&t, EV);
    ck_assert_uint_gt(n, 10);
    wr_timer_t *list = calloc(n, sizeof *list);
    ck_assert_uint_eq(wr_timers_list(&t, EV, list, 5), n); /* a short buffer: the first 5 */
    wr_timer_t first[5];
    memcpy(first, list, sizeof first);
    ck_assert_uint_eq(wr_timers_list(&t, EV, list, n), n);
    ck_assert_uint_eq(wr_timers_count(&t, EV), n);
    ck_assert(memcmp(first, list, sizeof first) == 0);
    for (size_t i = 0; i < n; i++) {
        wr_timer_t got;
        ck_assert(wr_timers_pop(&t, EV, INT64_MAX, &got));
        ck_assert(same(&got, &list[i]));
    }
    ck_assert_uint_eq(wr_timers_count(&t, EV), 0);
    free(list);
    wr_timers_close(&t);
}
END_TEST

START_TEST(test_timers_ffi_list_converts_and_checks)
{
    weir_timers_t *t = weir_timers_new();
    weir_timer_t out[3];
    ck_assert_int_eq(weir_timers_register(t, EV, INFINITY, 7, -INFINITY, INFINITY), 1);
    ck_assert_int_eq(weir_timers_register(t, EV, 5, 2, 0, 6), 1);
    ck_assert_int_eq(weir_timers_register(t, EV, 5, 1, 0, 6), 1);
    ck_assert_int_eq(weir_timers_list(t, EV, out, 3), 3);
    ck_assert(out[0].time_ms == 5 && out[0].key == 2 && out[1].key == 1);
    ck_assert(out[2].time_ms == INFINITY && out[2].start == -INFINITY && out[2].key == 7);
    ck_assert_int_eq(weir_timers_list(t, EV, out, 0), 3);
    ck_assert_int_eq(weir_timers_list(t, 2, out, 3), WEIR_EINVAL);
    ck_assert_int_eq(weir_timers_list(t, EV, out, -1), WEIR_EINVAL);
    weir_timers_free(t);
}
END_TEST

/* --- growth -------------------------------------------------------------------------------- */

enum { MANY = 1 << 20 };

START_TEST(test_timers_grow_to_a_million_and_release_memory_when_drained)
{
    /* Check reports every passing assertion to its parent process, so the hot loops collect
     * failures in `ok` and assert once. */
    wr_timers_t t;
    wr_timers_init(&t);
    bool ok = true;
    rng_state = UINT64_C(0x9e3779b97f4a7c15);
    /* Times from a small range, so most timers tie: key is the registration order. */
    for (int64_t i = 0; i < MANY; i++) {
        wr_timer_t x = tm(rnd_below(MANY / 16), i, -i, i);
        ok = ok && wr_timers_register(&t, EV, &x) == 1;
    }
    ck_assert(ok);
    ck_assert_uint_eq(wr_timers_count(&t, EV), MANY);
    for (int64_t i = 0; i < 1000; i++) {
        ok = ok && wr_timers_register(&t, PT, &(wr_timer_t){0, i, 0, 0}) == 1;
    }
    /* Delete every third by re-deriving it: the index must find it among a million. */
    rng_state = UINT64_C(0x9e3779b97f4a7c15);
    size_t left = MANY;
    for (int64_t i = 0; i < MANY; i++) {
        wr_timer_t x = tm(rnd_below(MANY / 16), i, -i, i);
        if (i % 3 == 0) {
            ok = ok && wr_timers_delete(&t, EV, &x) == 1;
            left--;
        }
    }
    ck_assert(ok);
    ck_assert_uint_eq(wr_timers_count(&t, EV), left);
    wr_timer_t x;
    wr_timer_t prev = tm(INT64_MIN, -1, 0, 0);
    size_t popped = 0;
    while (wr_timers_pop(&t, EV, INT64_MAX, &x)) {
        ok = ok && (x.time_ms > prev.time_ms || (x.time_ms == prev.time_ms && x.key > prev.key));
        ok = ok && x.key % 3 != 0 && x.start == -x.key && x.stop == x.key;
        prev = x;
        popped++;
    }
    ck_assert(ok);
    ck_assert_uint_eq(popped, left);
    ck_assert_ptr_null(t.dom[EV].heap); /* drained after a burst: arrays went back */
    ck_assert_uint_eq(t.dom[EV].cap, 0);
    ck_assert_uint_eq(wr_timers_count(&t, PT), 1000); /* untouched by the drain */
    ck_assert_int_eq(wr_timers_next(&t, PT), 0);
    /* Still works after the release. */
    ck_assert_int_eq(reg(&t, EV, 1, 1), 1);
    ck_assert_int_eq(wr_timers_next(&t, EV), 1);
    wr_timers_close(&t);
}
END_TEST

static Suite *timers_suite(void)
{
    Suite *s = suite_create("timers");
    add_case(s, "duplicate_register_is_a_noop_keeping_first_position",
             test_timers_duplicate_register_is_a_noop_keeping_first_position);
    add_case(s, "delete_removes_exactly_that_timer", test_timers_delete_removes_exactly_that_timer);
    add_case(s, "delete_of_absent_is_a_noop", test_timers_delete_of_absent_is_a_noop);
    add_case(s, "delete_then_register_takes_a_new_position",
             test_timers_delete_then_register_takes_a_new_position);
    add_case(s, "pop_orders_by_time_then_registration",
             test_timers_pop_orders_by_time_then_registration);
    add_case(s, "pop_respects_upto", test_timers_pop_respects_upto);
    add_case(s, "registered_during_a_firing_loop_fire_in_it_when_due",
             test_timers_registered_during_a_firing_loop_fire_in_it_when_due);
    add_case(s, "domains_are_separate", test_timers_domains_are_separate);
    add_case(s, "next_is_earliest_time_or_max", test_timers_next_is_earliest_time_or_max);
    add_case(s, "ffi_maps_infinities_for_global_windows",
             test_timers_ffi_maps_infinities_for_global_windows);
    add_case(s, "ffi_truncates_toward_zero", test_timers_ffi_truncates_toward_zero);
    add_case(s, "ffi_rejects_bad_domain_and_nan", test_timers_ffi_rejects_bad_domain_and_nan);
    add_case(s, "match_a_reference_model_over_random_operations",
             test_timers_match_a_reference_model_over_random_operations);
    add_case(s, "match_the_model_for_streams_in_time_order",
             test_timers_match_the_model_for_streams_in_time_order);
    add_case(s, "run_tombstones_are_compacted", test_timers_run_tombstones_are_compacted);
    add_case(s, "distinct_service_keeps_order_without_an_index",
             test_timers_distinct_service_keeps_order_without_an_index);
    add_case(s, "distinct_service_reuses_nodes_in_pop_order",
             test_timers_distinct_service_reuses_nodes_in_pop_order);
    add_case(s, "list_is_the_pop_order_and_changes_nothing",
             test_timers_list_is_the_pop_order_and_changes_nothing);
    add_case(s, "ffi_list_converts_and_checks", test_timers_ffi_list_converts_and_checks);
    add_case(s, "grow_to_a_million_and_release_memory_when_drained",
             test_timers_grow_to_a_million_and_release_memory_when_drained);
    return s;
}

int main(void)
{
    return run_suite(timers_suite());
}
