/* SPDX-License-Identifier: MIT */
/* check_aggs: the built-in aggregates in C (aggs.c): one accumulator's init/add/merge/result
 * per kind, a batch applied to a window table against a reference model (window starts,
 * fresh windows in order, results and counts at fire, drop), the created windows fired as
 * timers in timer order (weir_aggs_due), and the FFI's argument checks. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggs.h"
#include "check_support.h"
#include "weir.h"

START_TEST(test_aggs_one_accumulator_per_kind)
{
    const double xs[] = {3, -1.5, 7, 0, 2};
    /* count, sum, min, max, avg of xs */
    const double want[] = {5, 10.5, -1.5, 7, 2.1};
    for (int k = 0; k < WR_AGG_KINDS; k++) {
        wr_agg_t a, b, m;
        wr_agg_init((wr_agg_kind_t)k, &a);
        wr_agg_init((wr_agg_kind_t)k, &b);
        wr_agg_init((wr_agg_kind_t)k, &m);
        for (int i = 0; i < 5; i++) {
            wr_agg_add((wr_agg_kind_t)k, &a, xs[i]);
            wr_agg_add((wr_agg_kind_t)k, i < 2 ? &b : &m, xs[i]);
        }
        ck_assert(a.n == 5);
        ck_assert_msg(fabs(wr_agg_result((wr_agg_kind_t)k, &a) - want[k]) < 1e-12, "kind %d", k);
        wr_agg_merge((wr_agg_kind_t)k, &b, &m); /* the two halves merged: the same */
        ck_assert(b.n == 5);
        ck_assert(wr_agg_result((wr_agg_kind_t)k, &b) == wr_agg_result((wr_agg_kind_t)k, &a));
    }
    wr_agg_t e;
    wr_agg_init(WR_AGG_MIN, &e);
    ck_assert(e.v == INFINITY && e.n == 0);
    wr_agg_init(WR_AGG_MAX, &e);
    ck_assert(e.v == -INFINITY);
    /* min keeps the first of equal values (-0 then 0: -0), as Lua's x < v */
    wr_agg_init(WR_AGG_MIN, &e);
    wr_agg_add(WR_AGG_MIN, &e, -0.0);
    wr_agg_add(WR_AGG_MIN, &e, 0.0);
    ck_assert(signbit(e.v));
}
END_TEST

/* Lua's floored window start */
static double lua_start(double ts, double size, double offset)
{
    double a = ts - offset;
    return ts - (a - floor(a / size) * size);
}

enum { KEYS = 37, WINS = 8, N = 5000 };

START_TEST(test_aggs_batch_matches_a_reference_model)
{
    int kind = _i;
    const double size = 1000, offset = 250;
    weir_aggs_t *a = weir_aggs_new(kind);
    ck_assert_ptr_nonnull(a);
    static int32_t keys[N], fresh[N];
    static double ts[N], x[N], fresh_start[N];
    /* model: per (key, window index) the values, in order */
    static double sum[KEYS][WINS], mn[KEYS][WINS], mx[KEYS][WINS];
    static double cnt[KEYS][WINS];
    static int created_order[KEYS][WINS];
    memset(cnt, 0, sizeof cnt);
    srand(7 + kind);
    int created = 0;
    for (int i = 0; i < N; i++) {
        keys[i] = rand() % KEYS;
        ts[i] = offset + (double)(rand() % (WINS * 1000)) - 1000; /* one window below 0 too */
        x[i] = (double)(rand() % 2001 - 1000) / 8;
        int w = (int)((lua_start(ts[i], size, offset) - offset + 1000) / 1000);
        ck_assert(w >= 0 && w < WINS);
        double *c = &cnt[keys[i]][w];
        if (*c == 0) {
            sum[keys[i]][w] = 0;
            mn[keys[i]][w] = INFINITY;
            mx[keys[i]][w] = -INFINITY;
            created_order[keys[i]][w] = created++;
        }
        *c += 1;
        sum[keys[i]][w] += x[i];
        if (x[i] < mn[keys[i]][w]) {
            mn[keys[i]][w] = x[i];
        }
        if (x[i] > mx[keys[i]][w]) {
            mx[keys[i]][w] = x[i];
        }
    }
    /* in batches of uneven sizes: wr_aggs_apply (the C API) and the FFI's, which keeps
     * what was created */
    int total_fresh = 0;
    wr_aggs_t direct;
    wr_aggs_init(&direct, (wr_agg_kind_t)kind);
    for (int from = 0; from < N;) {
        int n = from % 3 == 0 ? 1 : 977;
        if (from + n > N) {
            n = N - from;
        }
        int32_t m = wr_aggs_apply(&direct, n, keys + from, ts + from, x + from, size, offset,
                                  fresh + total_fresh, fresh_start + total_fresh);
        ck_assert_int_ge(m, 0);
        ck_assert_int_eq(weir_aggs_apply(a, n, keys + from, ts + from, x + from, size, offset),
                         m);
        for (int j = 0; j < m; j++) {
            fresh[total_fresh + j] += from; /* batch index -> element index */
        }
        total_fresh += m;
        from += n;
    }
    ck_assert_int_eq(total_fresh, created);
    const int32_t *ckeys;
    const double *cstarts;
    ck_assert_int_eq(weir_aggs_created(a, &ckeys, &cstarts), created);
    for (int j = 0; j < total_fresh; j++) {
        int i = fresh[j];
        int w = (int)((fresh_start[j] - offset + 1000) / 1000);
        ck_assert(fresh_start[j] == lua_start(ts[i], size, offset));
        ck_assert_int_eq(created_order[keys[i]][w], j); /* in creation order */
        ck_assert(ckeys[j] == keys[i] && cstarts[j] == fresh_start[j]);
    }
    weir_aggs_created_clear(a);
    ck_assert_int_eq(weir_aggs_created(a, &ckeys, &cstarts), 0);
    wr_aggs_close(&direct);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == created);
    int32_t fkeys[KEYS + 1];
    double value[KEYS + 1], count[KEYS + 1];
    for (int w = 0; w < WINS; w++) {
        for (int k = 0; k < KEYS; k++) {
            fkeys[k] = k;
        }
        fkeys[KEYS] = KEYS + 5; /* a key with no window */
        double start = offset - 1000 + 1000.0 * w;
        ck_assert_int_eq(weir_aggs_fire(a, fkeys, KEYS + 1, start, 1, value, count),
                         KEYS + 1);
        ck_assert(count[KEYS] == 0 && value[KEYS] == 0);
        for (int k = 0; k < KEYS; k++) {
            ck_assert(count[k] == cnt[k][w]);
            if (count[k] == 0) {
                continue;
            }
            double want = kind == WEIR_AGG_COUNT  ? cnt[k][w]
                          : kind == WEIR_AGG_SUM ? sum[k][w]
                          : kind == WEIR_AGG_MIN ? mn[k][w]
                          : kind == WEIR_AGG_MAX ? mx[k][w]
                                                 : sum[k][w] / cnt[k][w];
            ck_assert_msg(value[k] == want, "kind %d key %d window %d: %g, want %g", kind, k, w,
                          value[k], want);
        }
        /* dropped: a second fire finds nothing */
        weir_aggs_fire(a, fkeys, KEYS, start, 0, value, count);
        for (int k = 0; k < KEYS; k++) {
            ck_assert(count[k] == 0);
        }
    }
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == 0);
    weir_aggs_free(a);
}
END_TEST

START_TEST(test_aggs_add_get_set_and_fire_without_drop)
{
    weir_aggs_t *a = weir_aggs_new(WEIR_AGG_AVG);
    int32_t fresh = -1;
    ck_assert_int_eq(weir_aggs_add(a, 4, 5000, 3, &fresh), 0);
    ck_assert_int_eq(fresh, 1);
    ck_assert_int_eq(weir_aggs_add(a, 4, 5000, 6, &fresh), 0);
    ck_assert_int_eq(fresh, 0);
    double out[3];
    ck_assert_int_eq(weir_aggs_get(a, 4, 5000, out), 0);
    ck_assert(out[0] == 9 && out[1] == 2 && out[2] == 4.5);
    ck_assert_int_eq(weir_aggs_get(a, 4, 0, out), -1);
    /* a restore: the window made in the table, its accumulator set */
    ck_assert_int_eq(weir_aggs_set(a, 9, 0, 10, 4), 0);
    ck_assert_int_eq(weir_aggs_get(a, 9, 0, out), 0);
    ck_assert(out[0] == 10 && out[1] == 4 && out[2] == 2.5);
    int32_t keys[2] = {4, 9};
    double value[2], count[2];
    ck_assert_int_eq(weir_aggs_fire(a, keys, 2, 5000, 0, value, count), 2);
    ck_assert(value[0] == 4.5 && count[0] == 2 && count[1] == 0); /* key 9's is at 0 */
    ck_assert_int_eq(weir_aggs_fire(a, keys + 1, 1, 0, 0, value, count), 1);
    ck_assert(value[0] == 2.5 && count[0] == 4);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == 2); /* not dropped */
    ck_assert(weir_aggs_stat(a, WEIR_STORE_BYTES) > 0);
    ck_assert(isnan(weir_aggs_stat(a, 99)));
    weir_aggs_free(a);
}
END_TEST

START_TEST(test_aggs_refuses_bad_arguments)
{
    ck_assert_ptr_null(weir_aggs_new(-1));
    ck_assert_ptr_null(weir_aggs_new(5));
    weir_aggs_t *a = weir_aggs_new(WEIR_AGG_SUM);
    int32_t keys[1] = {-1}, fresh[1];
    double ts[1] = {0}, x[1] = {1}, fs[1];
    ck_assert_int_eq(weir_aggs_apply(a, 1, keys, ts, x, 10, 0), WEIR_EINVAL);
    keys[0] = 1;
    ck_assert_int_eq(weir_aggs_apply(a, 1, keys, ts, NULL, 10, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_apply(a, 1, keys, ts, x, 0, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_apply(a, 1, keys, ts, x, NAN, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_apply(a, -1, keys, ts, x, 10, 0), WEIR_EINVAL);
    ts[0] = NAN;
    ck_assert_int_eq(weir_aggs_apply(a, 1, keys, ts, x, 10, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_apply(a, 0, NULL, NULL, NULL, 10, 0), 0);
    ck_assert_int_eq(weir_aggs_created(a, NULL, NULL), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_add(a, 1.5, 0, 1, fresh), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_add(a, 1, NAN, 1, fresh), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_fire(a, keys, -1, 0, 1, x, fs), WEIR_EINVAL);
    double out[3];
    ck_assert_int_eq(weir_aggs_get(a, 0, 0, out), -1); /* nothing there yet */
    ck_assert_int_eq(weir_aggs_get(a, -1, 0, out), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_set(a, 0, 0, NAN, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_set(a, -1, 0, 1, 1), WEIR_EINVAL);
    /* count needs no values */
    weir_aggs_t *c = weir_aggs_new(WEIR_AGG_COUNT);
    ts[0] = 5;
    ck_assert_int_eq(weir_aggs_apply(c, 1, keys, ts, NULL, 10, 0), 1);
    const int32_t *ck;
    const double *cs;
    ck_assert_int_eq(weir_aggs_created(c, &ck, &cs), 1);
    ck_assert(ck[0] == 1 && cs[0] == 0);
    /* a window made by add joins the list after the applies' */
    ck_assert_int_eq(weir_aggs_created_add(c, 2, 20), 0);
    ck_assert_int_eq(weir_aggs_created(c, &ck, &cs), 2);
    ck_assert(ck[1] == 2 && cs[1] == 20);
    ck_assert_int_eq(weir_aggs_created_add(c, -1, 20), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_created_add(c, 2, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_created_add(NULL, 2, 20), WEIR_EINVAL);
    weir_aggs_free(c);
    weir_aggs_free(a);
    weir_aggs_free(NULL);
}
END_TEST

/* The created windows as timers: weir_aggs_due takes the due ones in timer order (start, then
 * creation), max at a time, dropping each; what is not due stays, for created() or a later
 * due; out-of-order timestamps are sorted stably; the list survives its growth and moves. */
/* The check runs four elements a step and then one at a time: a bad key or a NaN timestamp at
 * any place of a batch fails it with nothing applied. */
START_TEST(test_aggs_apply_refuses_a_bad_element_anywhere_before_applying)
{
    enum { NB = 11 };
    for (int bad = 0; bad < 2 * NB; bad++) {
        weir_aggs_t *a = weir_aggs_new(WEIR_AGG_COUNT);
        int32_t keys[NB];
        double ts[NB];
        for (int i = 0; i < NB; i++) {
            keys[i] = i;
            ts[i] = 10 * i;
        }
        if (bad < NB) {
            keys[bad] = bad % 2 ? -1 : INT32_MIN;
        } else {
            ts[bad - NB] = NAN;
        }
        ck_assert_int_eq(weir_aggs_apply(a, NB, keys, ts, NULL, 100, 0), WEIR_EINVAL);
        ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == 0);
        const int32_t *ck;
        const double *cs;
        ck_assert_int_eq(weir_aggs_created(a, &ck, &cs), 0);
        /* the same batch without it applies */
        if (bad < NB) {
            keys[bad] = bad;
        } else {
            ts[bad - NB] = 0;
        }
        ck_assert_int_eq(weir_aggs_apply(a, NB, keys, ts, NULL, 100, 0), NB);
        weir_aggs_free(a);
    }
}
END_TEST

START_TEST(test_aggs_due_in_timer_order)
{
    weir_aggs_t *a = weir_aggs_new(WEIR_AGG_SUM);
    enum { M = 20000, MAXK = 500 };
    static int32_t keys[M];
    static double ts[M], x[M];
    /* per (key, window) its element count and sum; creation order of each window */
    static double wsum[MAXK][64], wcnt[MAXK][64];
    static int wseq[MAXK][64];
    memset(wcnt, 0, sizeof wcnt);
    srand(7);
    int seq = 0;
    for (int i = 0; i < M; i++) {
        keys[i] = rand() % MAXK;
        ts[i] = (double)(i / 10 + rand() % 400); /* out of order by up to 400 */
        x[i] = rand() % 9;
        int w = (int)(ts[i] / 100);
        if (wcnt[keys[i]][w] == 0) {
            wseq[keys[i]][w] = seq++;
        }
        wcnt[keys[i]][w] += 1;
        wsum[keys[i]][w] += x[i];
    }
    int32_t k[7];
    double st[7], v[7], c[7];
    int taken = 0;
    double last_start = -1;
    int last_seq = -1;
    /* batches of 250 elements, each followed by a watermark just below the earliest timestamp
     * still to come (elements keep coming into the list while its head is taken: it moves
     * down when it grows), 7 windows a call */
    for (int from = 0; from < M; from += 250) {
        ck_assert_int_ge(weir_aggs_apply(a, 250, keys + from, ts + from, x + from, 100, 0),
                         0);
        double w = (from + 250) / 10 - 1;
        int32_t m;
        while ((m = weir_aggs_due(a, 100, w, 7, k, st, v, c)) > 0) {
            for (int j = 0; j < m; j++) {
                int wi = (int)(st[j] / 100);
                ck_assert(st[j] + 99 <= w);
                ck_assert(c[j] == wcnt[k[j]][wi] && v[j] == wsum[k[j]][wi]);
                /* timer order: start, then creation */
                ck_assert(st[j] > last_start ||
                          (st[j] == last_start && wseq[k[j]][wi] > last_seq));
                last_start = st[j];
                last_seq = wseq[k[j]][wi];
                taken++;
            }
        }
        ck_assert_int_eq(m, 0);
    }
    ck_assert_int_gt(taken, seq / 2);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == seq - taken);
    /* the rest as created() lists it: in timer order, none of them due yet */
    const int32_t *ck;
    const double *cs;
    int32_t rest = weir_aggs_created(a, &ck, &cs);
    ck_assert_int_eq(rest, seq - taken);
    for (int j = 0; j < rest; j++) {
        ck_assert(cs[j] + 99 > M / 10 - 1);
        ck_assert(j == 0 || cs[j] >= cs[j - 1]);
    }
    /* more elements, later ones, then everything due: the rest first by start */
    int32_t k2[1] = {3};
    double ts2[1] = {100000}, x2[1] = {1};
    ck_assert_int_eq(weir_aggs_apply(a, 1, k2, ts2, x2, 100, 0), 1);
    int32_t n = 0, m;
    while ((m = weir_aggs_due(a, 100, 1e9, 7, k, st, v, c)) > 0) {
        n += m;
    }
    ck_assert_int_eq(n, rest + 1);
    ck_assert(st[(rest + 1 - 1) % 7] == 100000);
    ck_assert_int_eq(weir_aggs_created(a, &ck, &cs), 0);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == 0);
    ck_assert_int_eq(weir_aggs_due(a, 0, 1, 7, k, st, v, c), WEIR_EINVAL);
    ck_assert_int_eq(weir_aggs_due(NULL, 100, 1, 7, k, st, v, c), WEIR_EINVAL);
    weir_aggs_free(a);
}
END_TEST

/* Elements in time order open each key's windows past every start it had: such a window is in
 * no table entry until a lookup may need it (aggs.h, wr_aggs_t). Every way of reaching a
 * window finds it then: an element back in an older window, get, add, drop, fire by key, the
 * listing, created(); and a watermark's due timers fire both kinds in timer order. */
START_TEST(test_aggs_windows_opened_ahead_are_found_by_every_lookup)
{
    enum { K = 8, W = 8 };
    weir_aggs_t *a = weir_aggs_new(WEIR_AGG_SUM);
    double sum[K][W] = {{0}}, cnt[K][W] = {{0}};
    int32_t keys[K];
    double ts[K], x[K], out[3];
    int open = 0;
    /* a round: key k's element into window w (one per key), each a new window */
#define ROUND(w)                                                                              \
    do {                                                                                      \
        for (int k = 0; k < K; k++) {                                                         \
            keys[k] = k;                                                                      \
            ts[k] = 100.0 * (w) + 10 + k;                                                     \
            x[k] = (w) * 10 + k;                                                              \
            sum[k][w] += x[k];                                                                \
            cnt[k][w] += 1;                                                                   \
        }                                                                                     \
        ck_assert_int_eq(weir_aggs_apply(a, K, keys, ts, x, 100, 0), K);                      \
        open += K;                                                                            \
        ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == open);                                \
    } while (0)
    ROUND(0);
    ROUND(1);
    ck_assert_int_eq(weir_aggs_get(a, 5, 0, out), 0); /* not key 5's last window */
    ck_assert(out[0] == sum[5][0] && out[1] == 1);
    ROUND(2);
    int32_t fresh = -1;
    ck_assert_int_eq(weir_aggs_add(a, 2, 100, 7, &fresh), 0);
    ck_assert_int_eq(fresh, 0); /* the window of the round before, not a second one */
    sum[2][1] += 7;
    cnt[2][1] += 1;
    ROUND(3);
    int listed = 0;
    int32_t cap = weir_aggs_capacity(a);
    for (int32_t i = 0; i < cap; i++) {
        if (weir_aggs_at(a, i, out) == 0) {
            ck_assert(cnt[(int)out[0]][(int)out[1] / 100] > 0);
            listed++;
        }
    }
    ck_assert_int_eq(listed, open);
    ROUND(4);
    int32_t back[2] = {1, 6};
    double back_ts[2] = {350, 420}, back_x[2] = {1000, 2000};
    ck_assert_int_eq(weir_aggs_apply(a, 2, back, back_ts, back_x, 100, 0), 0);
    sum[1][3] += 1000;
    cnt[1][3] += 1;
    sum[6][4] += 2000;
    cnt[6][4] += 1;
    ROUND(5);
    ck_assert_int_eq(weir_aggs_drop(a, 4, 500), 0);
    cnt[4][5] = 0;
    open--;
    ROUND(6);
    int32_t fk[1] = {3};
    double fv[1], fc[1];
    ck_assert_int_eq(weir_aggs_fire(a, fk, 1, 600, 1, fv, fc), 1);
    ck_assert(fv[0] == sum[3][6] && fc[0] == 1);
    cnt[3][6] = 0;
    open--;
    ROUND(7);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == open);
    /* every timer due: each window once, in timer order, with its sum; the two taken above
     * have no window left (count 0) */
    int32_t dk[5];
    double ds[5], dv[5], dc[5], last = -1;
    int fired = 0, m;
    int seen[K][W] = {{0}};
    while ((m = weir_aggs_due(a, 100, 1e9, 5, dk, ds, dv, dc)) > 0) {
        for (int j = 0; j < m; j++) {
            int w = (int)ds[j] / 100;
            ck_assert(ds[j] >= last);
            last = ds[j];
            ck_assert(!seen[dk[j]][w]);
            seen[dk[j]][w] = 1;
            ck_assert_msg(dc[j] == cnt[dk[j]][w], "key %d window %d", dk[j], w);
            if (dc[j] > 0) {
                ck_assert(dv[j] == sum[dk[j]][w]);
                fired++;
            }
        }
    }
    ck_assert_int_eq(fired, open);
    ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == 0);
    /* empty again: ids from 0, and the next windows open as before (past the keys' tops:
     * a fired window's key keeps its top) */
    open = 0;
    memset(sum, 0, sizeof sum);
    memset(cnt, 0, sizeof cnt);
    ROUND(7);
    ck_assert_int_eq(weir_aggs_get(a, 0, 700, out), 0);
    ck_assert(out[0] == sum[0][7] && out[1] == 1);
#undef ROUND
    weir_aggs_free(a);
}
END_TEST

/* The table against a model under random adds, drops, fires and sets: windows of keys that
 * share homes (blocks of four keys, few starts), key ids past the last-window cache, the
 * table's growth, its backward-shift deletes and its shrink when empty, and the listing by
 * capacity/at seeing every open window once. */
START_TEST(test_aggs_table_matches_a_model)
{
    enum { NK = 48, NS = 6, STEPS = 60000 };
    weir_aggs_t *a = weir_aggs_new(WEIR_AGG_SUM);
    static double msum[NK][NS], mcnt[NK][NS];
    memset(mcnt, 0, sizeof mcnt);
    /* keys 0..39 are small ids; 40..47 are past WR_AGGS_LAST_MAX (not cached) */
    int32_t kid[NK];
    for (int k = 0; k < NK; k++) {
        kid[k] = k < 40 ? k : WR_AGGS_LAST_MAX + 7 * k;
    }
    srand(11);
    int open = 0, emptied = 0;
    for (int step = 0; step < STEPS; step++) {
        int k = rand() % NK, w = rand() % NS, op = rand() % 10;
        double start = 1000.0 * w - 2000;
        if (op < 6) { /* an element, through the batch or on its own */
            double x = rand() % 7;
            if (op < 4) {
                double ts = start + rand() % 1000;
                ck_assert_int_ge(weir_aggs_apply(a, 1, &kid[k], &ts, &x, 1000, 0), 0);
            } else {
                int32_t fresh;
                ck_assert_int_eq(weir_aggs_add(a, kid[k], start, x, &fresh), 0);
                ck_assert_int_eq(fresh, mcnt[k][w] == 0);
            }
            open += mcnt[k][w] == 0;
            msum[k][w] = mcnt[k][w] == 0 ? x : msum[k][w] + x;
            mcnt[k][w] += 1;
        } else if (op < 8) { /* a drop */
            int rc = weir_aggs_drop(a, kid[k], start);
            ck_assert_int_eq(rc, mcnt[k][w] > 0 ? 0 : -1);
            open -= mcnt[k][w] > 0;
            mcnt[k][w] = 0;
        } else if (op < 9) { /* a fire of every key's window at start, dropping */
            int32_t keys[NK];
            double value[NK], count[NK];
            for (int j = 0; j < NK; j++) {
                keys[j] = kid[j];
            }
            ck_assert_int_eq(weir_aggs_fire(a, keys, NK, start, 1, value, count), NK);
            for (int j = 0; j < NK; j++) {
                ck_assert(count[j] == mcnt[j][w]);
                ck_assert(count[j] == 0 ? value[j] == 0 : value[j] == msum[j][w]);
                open -= mcnt[j][w] > 0;
                mcnt[j][w] = 0;
            }
        } else { /* a restore's set */
            double v = rand() % 50, n = 1 + rand() % 3;
            ck_assert_int_eq(weir_aggs_set(a, kid[k], start, v, n), 0);
            open += mcnt[k][w] == 0;
            msum[k][w] = v;
            mcnt[k][w] = n;
        }
        ck_assert(weir_aggs_stat(a, WEIR_STORE_OPEN) == open);
        emptied += open == 0;
        if (step % 997 == 0) { /* every window once in the listing, with its accumulator */
            int seen = 0;
            double e[2], out[3];
            for (int32_t i = 0; i < weir_aggs_capacity(a); i++) {
                if (weir_aggs_at(a, i, e) < 0) {
                    continue;
                }
                seen++;
                int kk = -1;
                for (int j = 0; j < NK; j++) {
                    kk = kid[j] == e[0] ? j : kk;
                }
                int ww = (int)((e[1] + 2000) / 1000);
                ck_assert(kk >= 0 && ww >= 0 && ww < NS && mcnt[kk][ww] > 0);
                ck_assert_int_eq(weir_aggs_get(a, e[0], e[1], out), 0);
                ck_assert(out[0] == msum[kk][ww] && out[1] == mcnt[kk][ww]);
            }
            ck_assert_int_eq(seen, open);
        }
    }
    ck_assert_int_gt(emptied, 0); /* the table was left empty (and shrunk) on the way */
    ck_assert_int_lt(weir_aggs_at(a, -1, NULL), 0);
    weir_aggs_free(a);
}
END_TEST

static Suite *aggs_suite(void)
{
    Suite *s = suite_create("aggs");
    add_case(s, "one_accumulator_per_kind", test_aggs_one_accumulator_per_kind);
    add_loop_case(s, "batch_matches_a_reference_model", test_aggs_batch_matches_a_reference_model,
                  WR_AGG_KINDS);
    add_case(s, "add_get_set_and_fire_without_drop", test_aggs_add_get_set_and_fire_without_drop);
    add_case(s, "refuses_bad_arguments", test_aggs_refuses_bad_arguments);
    add_case(s, "apply_refuses_a_bad_element_anywhere_before_applying",
             test_aggs_apply_refuses_a_bad_element_anywhere_before_applying);
    add_case(s, "due_in_timer_order", test_aggs_due_in_timer_order);
    add_case(s, "table_matches_a_model", test_aggs_table_matches_a_model);
    add_case(s, "windows_opened_ahead_are_found_by_every_lookup",
             test_aggs_windows_opened_ahead_are_found_by_every_lookup);
    return s;
}

int main(void)
{
    return run_suite(aggs_suite());
}
