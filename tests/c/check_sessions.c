/* SPDX-License-Identifier: MIT */
/* check_sessions: weir.sessionop's session windows (sessions.c): new windows, growth, merges
 * that keep the first window's state window, late windows, timers in (time, registration)
 * order with lazy deletion, allowed lateness, a restore's put and timer, and a random run
 * against a reference model (per key a sorted list, recomputed by brute force). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_support.h"
#include "weir.h"

static weir_session_t due[64];

START_TEST(test_sessions_grow_merge_and_fire)
{
    weir_sessions_t *t = weir_sessions_new(0);
    /* [0, 10) new; [5, 15) grows it; [30, 40) new; [14, 31) bridges both */
    ck_assert_int_eq(weir_sessions_add(t, 1, 0, 10, -INFINITY), 1);
    int32_t s0 = weir_sessions_out(t)[0].slot;
    ck_assert_int_ge(s0, 1);
    ck_assert_int_eq(weir_sessions_add(t, 1, 2, 8, -INFINITY), 0); /* inside */
    ck_assert_int_eq(weir_sessions_out(t)[0].slot, s0);
    ck_assert_int_eq(weir_sessions_add(t, 1, 5, 15, -INFINITY), 2);
    const weir_session_t *o = weir_sessions_out(t);
    ck_assert(o[0].start == 0 && o[0].stop == 15 && o[0].sstart == 0 && o[0].sstop == 10);
    ck_assert(o[1].start == 0 && o[1].stop == 10);
    ck_assert_int_eq(o[0].slot, s0);
    ck_assert_int_eq(weir_sessions_add(t, 1, 30, 40, -INFINITY), 1);
    int32_t s1 = weir_sessions_out(t)[0].slot;
    ck_assert_int_ne(s1, s0);
    ck_assert_int_eq(weir_sessions_add(t, 1, 14, 31, -INFINITY), 3);
    o = weir_sessions_out(t);
    ck_assert(o[0].start == 0 && o[0].stop == 40 && o[0].sstart == 0 && o[0].sstop == 10);
    ck_assert_int_eq(o[0].slot, s0);
    ck_assert_int_eq(o[2].slot, s1); /* freed: the caller moves its contents */
    ck_assert(weir_sessions_stat(t, WEIR_STORE_OPEN) == 1);
    /* touching counts (TimeWindow.intersects): [40, 45) merges */
    ck_assert_int_eq(weir_sessions_add(t, 1, 40, 45, -INFINITY), 2);
    /* timers: the stale ones (stops 10, 15, 40) are skipped */
    ck_assert_int_eq(weir_sessions_timers(t, NULL, 0), 1);
    ck_assert_int_eq(weir_sessions_due(t, 43, due, 64), 0);
    ck_assert_int_eq(weir_sessions_due(t, 44, due, 64), 1);
    ck_assert(due[0].time == 44 && due[0].start == 0 && due[0].stop == 45);
    ck_assert_int_eq(due[0].what, WEIR_SESSION_FIRE | WEIR_SESSION_CLEANUP);
    ck_assert(weir_sessions_stat(t, WEIR_STORE_OPEN) == 0);
    /* a window at or before the watermark touching nothing is late */
    ck_assert_int_eq(weir_sessions_add(t, 1, 20, 30, 29), WEIR_SESSION_LATE);
    ck_assert_int_eq(weir_sessions_add(t, 1, 20, 30, 28), 1);
    ck_assert_int_eq(weir_sessions_add(t, 0, 20, 30, 28), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_add(t, 1.5, 20, 30, 28), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_add(t, 1, 30, 30, 28), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_add(t, 1, NAN, 30, 28), WEIR_EINVAL);
    weir_sessions_free(t);
    weir_sessions_free(NULL);
}
END_TEST

START_TEST(test_sessions_lateness_and_order)
{
    weir_sessions_t *t = weir_sessions_new(100);
    ck_assert_int_eq(weir_sessions_add(t, 2, 0, 10, -INFINITY), 1);
    ck_assert_int_eq(weir_sessions_add(t, 1, 0, 10, -INFINITY), 1);
    /* two timers each: fire at 9, cleanup at 109; equal times in registration order */
    ck_assert_int_eq(weir_sessions_timers(t, NULL, 0), 4);
    ck_assert_int_eq(weir_sessions_due(t, 50, due, 64), 2);
    ck_assert_int_eq(due[0].kid, 2);
    ck_assert_int_eq(due[1].kid, 1);
    ck_assert_int_eq(due[0].what, WEIR_SESSION_FIRE);
    ck_assert(weir_sessions_stat(t, WEIR_STORE_OPEN) == 2); /* kept until cleanup */
    /* an element of a kept window: no new timers (the caller fires at once) */
    ck_assert_int_eq(weir_sessions_add(t, 1, 3, 8, 50), 0);
    /* growing a kept window past the watermark: new fire and cleanup timers */
    ck_assert_int_eq(weir_sessions_add(t, 1, 5, 60, 50), 2);
    ck_assert_int_eq(weir_sessions_timers(t, NULL, 0), 3);
    ck_assert_int_eq(weir_sessions_due(t, 200, due, 64), 3);
    ck_assert(due[0].time == 59 && due[0].what == WEIR_SESSION_FIRE);
    ck_assert(due[1].time == 109 && due[1].kid == 2 && due[1].what == WEIR_SESSION_CLEANUP);
    ck_assert(due[2].time == 159 && due[2].kid == 1);
    /* max: a batch at a time */
    for (int i = 0; i < 10; i++) {
        ck_assert_int_eq(weir_sessions_add(t, 3, 1000 * (i + 1), 1000 * (i + 1) + 10, 200), 1);
    }
    ck_assert_int_eq(weir_sessions_due(t, 1e9, due, 4), 4);
    ck_assert(due[2].time == 2009 && due[3].time == 2109);
    ck_assert_int_eq(weir_sessions_due(t, 1e9, due, 64), 16);
    weir_sessions_free(t);
    ck_assert_ptr_null(weir_sessions_new(-1));
}
END_TEST

START_TEST(test_sessions_restore_put_and_timer)
{
    weir_sessions_t *t = weir_sessions_new(0);
    int32_t s = weir_sessions_put(t, 4, 10, 30, 10, 20);
    ck_assert_int_ge(s, 1);
    ck_assert_int_eq(weir_sessions_put(t, 4, 30, 40, 30, 40), WEIR_EINVAL); /* touches */
    ck_assert_int_eq(weir_sessions_timer(t, 4, 10, 30, 29), 0);
    ck_assert_int_eq(weir_sessions_timer(t, 4, 10, 30, 28), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_timer(t, 4, 10, 31, 30), WEIR_EINVAL);
    weir_session_t w[2];
    ck_assert_int_eq(weir_sessions_windows(t, w, 2), 1);
    ck_assert(w[0].sstart == 10 && w[0].sstop == 20 && w[0].slot == s);
    /* an element joins the restored window: its state window stays */
    ck_assert_int_eq(weir_sessions_add(t, 4, 25, 35, 0), 2);
    ck_assert(weir_sessions_out(t)[0].sstop == 20 && weir_sessions_out(t)[0].stop == 35);
    ck_assert_int_eq(weir_sessions_due(t, 100, due, 64), 1);
    ck_assert(due[0].time == 34);
    weir_sessions_free(t);
}
END_TEST

/* The reference model: per key a list of (start, stop, count) sorted by start. */
enum { KEYS = 5, MAXW = 256 };
typedef struct ref {
    int64_t start[MAXW], stop[MAXW], count[MAXW];
    int n;
} ref_t;

START_TEST(test_sessions_random_against_model)
{
    srand(7);
    weir_sessions_t *t = weir_sessions_new(0);
    static ref_t ref[KEYS + 1];
    static int64_t counts[1 << 16];
    int64_t wm = -1000000;
    for (int step = 0; step < 20000; step++) {
        int kid = 1 + rand() % KEYS;
        int64_t ts = wm + 1 + rand() % 400;
        int64_t gap = 1 + rand() % 30;
        int r = weir_sessions_add(t, kid, (double)ts, (double)(ts + gap), (double)wm);
        ck_assert_int_ge(r, 0); /* ts > wm: never late with these times */
        const weir_session_t *o = weir_sessions_out(t);
        /* the model: merge every window touching [ts, ts + gap) */
        ref_t *m = &ref[kid];
        int64_t s = ts, e = ts + gap, c = 1;
        int j = 0, k = 0;
        for (int i = 0; i < m->n; i++) {
            if (m->start[i] <= e && m->stop[i] >= s) {
                s = m->start[i] < s ? m->start[i] : s;
                e = m->stop[i] > e ? m->stop[i] : e;
                c += m->count[i];
                k++;
            } else {
                m->start[j] = m->start[i];
                m->stop[j] = m->stop[i];
                m->count[j] = m->count[i];
                j++;
            }
        }
        ck_assert_int_eq(r == 0 || r == 1 ? (r == 0 ? 1 : 0) : r - 1, k);
        int at = j;
        while (at > 0 && m->start[at - 1] > s) {
            m->start[at] = m->start[at - 1];
            m->stop[at] = m->stop[at - 1];
            m->count[at] = m->count[at - 1];
            at--;
        }
        m->start[at] = s;
        m->stop[at] = e;
        m->count[at] = c;
        m->n = j + 1;
        ck_assert_int_lt(m->n, MAXW);
        ck_assert(o[0].start == (double)s && o[0].stop == (double)e);
        int32_t slot = o[0].slot;
        ck_assert_int_lt(slot, 1 << 16);
        for (int i = 1; i < r; i++) {
            if (o[i].slot != slot) {
                counts[slot] += counts[o[i].slot];
                counts[o[i].slot] = 0;
            }
        }
        counts[slot]++;
        ck_assert_int_eq(counts[slot], c);
        if (rand() % 8 == 0) { /* the watermark moves: fire and check against the model */
            wm += rand() % 200;
            int n;
            while ((n = weir_sessions_due(t, (double)wm, due, 64)) > 0) {
                for (int i = 0; i < n; i++) {
                    ref_t *mm = &ref[due[i].kid];
                    ck_assert(mm->n > 0 && mm->start[0] == due[i].start
                              && mm->stop[0] == due[i].stop);
                    ck_assert_int_eq(counts[due[i].slot], mm->count[0]);
                    counts[due[i].slot] = 0;
                    for (int x = 1; x < mm->n; x++) {
                        mm->start[x - 1] = mm->start[x];
                        mm->stop[x - 1] = mm->stop[x];
                        mm->count[x - 1] = mm->count[x];
                    }
                    mm->n--;
                }
            }
            for (int key = 1; key <= KEYS; key++) {
                ck_assert(ref[key].n == 0 || ref[key].stop[0] - 1 > wm);
            }
        }
    }
    int total = 0;
    for (int key = 1; key <= KEYS; key++) {
        total += ref[key].n;
    }
    ck_assert(weir_sessions_stat(t, WEIR_STORE_OPEN) == total);
    ck_assert_int_eq(weir_sessions_windows(t, NULL, 0), total);
    ck_assert_int_eq(weir_sessions_timers(t, NULL, 0), total);
    weir_sessions_free(t);
}
END_TEST

START_TEST(test_sessions_snap_columns)
{
    weir_sessions_t *t = weir_sessions_new(5);
    /* key 1: [0, 10) grown to [0, 15) (state window [0, 10)), [40, 50); key 3: [20, 30) */
    ck_assert_int_eq(weir_sessions_add(t, 1, 0, 10, -INFINITY), 1);
    int32_t s0 = weir_sessions_out(t)[0].slot;
    ck_assert_int_eq(weir_sessions_add(t, 1, 5, 15, -INFINITY), 2);
    ck_assert_int_eq(weir_sessions_add(t, 3, 20, 30, -INFINITY), 1);
    int32_t s1 = weir_sessions_out(t)[0].slot;
    ck_assert_int_eq(weir_sessions_add(t, 1, 40, 50, -INFINITY), 1);
    int32_t s2 = weir_sessions_out(t)[0].slot;
    int32_t kids[4];
    ck_assert_int_eq(weir_sessions_kids(t, NULL, 0), 2);
    ck_assert_int_eq(weir_sessions_kids(t, kids, 4), 2);
    ck_assert(kids[0] == 1 && kids[1] == 3);
    /* key 3 in section 0 (key index 1), key 1 in section 1 (key index 2) */
    int32_t ksec[4] = { -1, 1, -1, 0 }, kki[4] = { 0, 2, 0, 1 };
    weir_sessions_cols_t c;
    ck_assert_int_eq(weir_sessions_snap(t, ksec, kki, 4, 2, &c), 0);
    ck_assert(c.nwin == 4 && c.nkey == 2 && c.nentry == 3 && c.ntimer == 6);
    ck_assert(c.woff[0] == 0 && c.woff[1] == 1 && c.woff[2] == 4);
    ck_assert(c.wk[0] == 1 && c.ws[0] == 20 && c.we[0] == 30 && c.wslot[0] == s1);
    /* the grown window, then its state window with the slot; then [40, 50) */
    ck_assert(c.wk[1] == 2 && c.ws[1] == 0 && c.we[1] == 15 && c.wslot[1] == 0);
    ck_assert(c.ws[2] == 0 && c.we[2] == 10 && c.wslot[2] == s0);
    ck_assert(c.ws[3] == 40 && c.we[3] == 50 && c.wslot[3] == s2);
    ck_assert(c.moff[1] == 1 && c.mk[0] == 1 && c.mn[0] == 1 && c.mk[1] == 2 && c.mn[1] == 2);
    ck_assert(c.doff[1] == 1 && c.doff[2] == 3);
    ck_assert(c.md[4] == 0 && c.md[5] == 15 && c.md[6] == 0 && c.md[7] == 10);
    /* timers (fire at stop - 1, cleanup 5 later) by section, each with its pop-order rank */
    ck_assert(c.toff[1] == 2 && c.toff[2] == 6);
    ck_assert(c.tt[0] == 29 && c.tr[0] == 2 && c.tt[1] == 34 && c.tr[1] == 3);
    ck_assert(c.tt[2] == 14 && c.tr[2] == 0 && c.ts[2] == 0 && c.te[2] == 15);
    ck_assert(c.tt[3] == 19 && c.tr[3] == 1 && c.tt[4] == 49 && c.tr[4] == 4);
    ck_assert(c.tt[5] == 54 && c.tr[5] == 5 && c.td[5] == WEIR_TIME_EVENT && c.tk[5] == 2);
    weir_sessions_snap_free(&c);
    ck_assert(c.wk == NULL);
    weir_sessions_snap_free(NULL);
    /* a key id with windows outside ksec, or a section out of range */
    ck_assert_int_eq(weir_sessions_snap(t, ksec, kki, 3, 2, &c), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_snap(t, ksec, kki, 4, 1, &c), WEIR_EINVAL);
    ck_assert_int_eq(weir_sessions_snap(NULL, ksec, kki, 4, 2, &c), WEIR_EINVAL);
    weir_sessions_free(t);
}
END_TEST

static Suite *sessions_suite(void)
{
    Suite *s = suite_create("sessions");
    add_case(s, "grow_merge_and_fire", test_sessions_grow_merge_and_fire);
    add_case(s, "lateness_and_order", test_sessions_lateness_and_order);
    add_case(s, "restore_put_and_timer", test_sessions_restore_put_and_timer);
    add_case(s, "random_against_model", test_sessions_random_against_model);
    add_case(s, "snap_columns", test_sessions_snap_columns);
    return s;
}

int main(void)
{
    return run_suite(sessions_suite());
}
