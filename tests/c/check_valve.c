/* SPDX-License-Identifier: MIT */
/* check_valve.c: the watermark valve, one TCase per rule of SEMANTICS.md section 3 (weir follows
 * the FLINK-40475 lines), plus the FFI wrappers' conversions and flags. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_support.h"
#include "valve.h"
#include "weir.h"

enum { BOTH = WR_VALVE_ADVANCED | WR_VALVE_STATUS_CHANGED };

START_TEST(test_valve_output_is_min_over_active_aligned_channels)
{
    wr_valve_t v;
    ck_assert_int_eq(wr_valve_init(&v, 3), 0);
    ck_assert(wr_valve_output(&v) == INT64_MIN);
    ck_assert(!wr_valve_is_idle(&v));
    /* Channels without a watermark hold the output at MIN. */
    ck_assert(wr_valve_advance(&v, 0, 100) == INT64_MIN);
    ck_assert(wr_valve_advance(&v, 1, 200) == INT64_MIN);
    ck_assert_int_eq(wr_valve_advance(&v, 2, 150), 100);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 300), 150);
    ck_assert_int_eq(wr_valve_advance(&v, 2, 400), 200);
    ck_assert_int_eq(wr_valve_output(&v), 200);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_idle_channel_does_not_hold_back)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_mark_idle(&v, 1);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 500), 500);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_idle_channel_is_excluded_and_its_watermarks_ignored)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 50);
    ck_assert_int_eq(wr_valve_output(&v), 50);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), WR_VALVE_ADVANCED);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 60), 100); /* idle: ignored, not recorded */
    ck_assert_int_eq(v.ch[1].wm, 50);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 700), 700);
    ck_assert(!wr_valve_is_idle(&v));
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), 0); /* a repeated IDLE does nothing */
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_regression_on_a_channel_is_ignored)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 500);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 400), 400);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 300), 400);
    ck_assert_int_eq(v.ch[1].wm, 400);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 400), 400); /* equal is not an advance either */
    ck_assert_int_eq(wr_valve_advance(&v, 1, 450), 450);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_output_never_goes_back)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_mark_idle(&v, 0);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 1000), 1000);
    /* Channel 0 returns with no watermark at all: it may not pull the output down. */
    ck_assert_int_eq(wr_valve_mark_active(&v, 0), 0);
    ck_assert_int_eq(wr_valve_output(&v), 1000);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 10), 1000);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), 0);
    ck_assert_int_eq(wr_valve_output(&v), 1000);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_returning_lower_channel_is_unaligned_until_caught_up)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 100);
    wr_valve_mark_idle(&v, 1);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 500), 500);
    ck_assert_int_eq(wr_valve_mark_active(&v, 1), 0);
    ck_assert(!v.ch[1].aligned);
    /* Unaligned: neither lowers the output nor holds it back. */
    ck_assert_int_eq(wr_valve_advance(&v, 0, 600), 600);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 550), 600);
    ck_assert(!v.ch[1].aligned);
    /* Caught up (>= the output): rejoins the min, and now holds channel 0 back. */
    ck_assert_int_eq(wr_valve_advance(&v, 1, 650), 600);
    ck_assert(v.ch[1].aligned);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 700), 650);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 900), 700);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_returning_channel_at_output_rejoins_at_once)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 300);
    wr_valve_advance(&v, 1, 300);
    wr_valve_mark_idle(&v, 1);
    wr_valve_mark_active(&v, 1); /* wm == output: aligned */
    ck_assert(v.ch[1].aligned);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 400), 300);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_all_channels_idle_flushes_max_and_outputs_idle)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 300);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), 0);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 0), BOTH);
    ck_assert_int_eq(wr_valve_output(&v), 300);
    ck_assert(wr_valve_is_idle(&v));
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_all_idle_with_nothing_to_flush_only_changes_status)
{
    wr_valve_t v;
    wr_valve_init(&v, 1);
    wr_valve_advance(&v, 0, 100);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 0), WR_VALVE_STATUS_CHANGED);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert(wr_valve_is_idle(&v));
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_all_idle_flush_is_unconditional_flink_40475)
{
    /* The last channel to go idle is unaligned (below the output), so the baseline valve
     * would not flush and 500 would be stranded; FLINK-40475 flushes max(wm) anyway. */
    wr_valve_t v;
    wr_valve_init(&v, 3);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 50);
    wr_valve_advance(&v, 2, 500);
    ck_assert_int_eq(wr_valve_output(&v), 50);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 2), 0);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), WR_VALVE_ADVANCED);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert_int_eq(wr_valve_mark_active(&v, 1), 0); /* 50 < 100: unaligned */
    ck_assert_int_eq(wr_valve_mark_idle(&v, 0), 0);   /* nothing aligned is left */
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), BOTH);
    ck_assert_int_eq(wr_valve_output(&v), 500);
    ck_assert(wr_valve_is_idle(&v));
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_watermarks_ignored_while_all_idle)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 200);
    wr_valve_mark_idle(&v, 0);
    wr_valve_mark_idle(&v, 1);
    ck_assert_int_eq(wr_valve_output(&v), 200);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 999), 200);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 999), 200);
    ck_assert_int_eq(v.ch[0].wm, 100);
    ck_assert_int_eq(v.ch[1].wm, 200);
    ck_assert(wr_valve_is_idle(&v));
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_active_after_all_idle_rederives_min_flink_40475)
{
    wr_valve_t v;
    wr_valve_init(&v, 2);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 200);
    wr_valve_mark_idle(&v, 0);
    wr_valve_mark_idle(&v, 1);
    ck_assert_int_eq(wr_valve_output(&v), 200);
    /* The first ACTIVE flips the status; below the flushed output the channel is unaligned. */
    ck_assert_int_eq(wr_valve_mark_active(&v, 0), WR_VALVE_STATUS_CHANGED);
    ck_assert(!wr_valve_is_idle(&v));
    ck_assert(!v.ch[0].aligned);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 150), 200);
    /* Channel 1 sat at the flushed max: aligned at once, so the min is re-derived over it. */
    ck_assert_int_eq(wr_valve_mark_active(&v, 1), 0);
    ck_assert(v.ch[1].aligned);
    ck_assert_int_eq(wr_valve_advance(&v, 1, 250), 250);
    ck_assert_int_eq(wr_valve_advance(&v, 0, 300), 250); /* channel 0 rejoins */
    ck_assert_int_eq(wr_valve_advance(&v, 1, 400), 300);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_active_emits_min_at_once_flink_40475)
{
    /* Channel 2 comes back above the output while the only active channel is unaligned: the
     * ACTIVE itself re-derives the min, without waiting for the next watermark. */
    wr_valve_t v;
    wr_valve_init(&v, 3);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 50);
    wr_valve_advance(&v, 2, 500);
    wr_valve_mark_idle(&v, 2);
    wr_valve_mark_idle(&v, 1);
    wr_valve_mark_active(&v, 1);
    wr_valve_mark_idle(&v, 0);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    ck_assert(!wr_valve_is_idle(&v));
    ck_assert_int_eq(wr_valve_mark_active(&v, 2), WR_VALVE_ADVANCED);
    ck_assert_int_eq(wr_valve_output(&v), 500);
    ck_assert_int_eq(wr_valve_mark_active(&v, 2), 0); /* a repeated ACTIVE does nothing */
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_idle_channel_at_output_triggers_remin)
{
    wr_valve_t v;
    wr_valve_init(&v, 3);
    wr_valve_advance(&v, 0, 100);
    wr_valve_advance(&v, 1, 300);
    wr_valve_advance(&v, 2, 200);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    /* Channel 1 is above the output: going idle changes nothing. */
    ck_assert_int_eq(wr_valve_mark_idle(&v, 1), 0);
    ck_assert_int_eq(wr_valve_output(&v), 100);
    /* Channel 0 holds the output: the min over the rest is re-derived right away. */
    ck_assert_int_eq(wr_valve_mark_idle(&v, 0), WR_VALVE_ADVANCED);
    ck_assert_int_eq(wr_valve_output(&v), 200);
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_many_channels)
{
    enum { N = 1000 };
    wr_valve_t v;
    wr_valve_init(&v, N);
    for (int c = N - 1; c >= 1; c--) {
        ck_assert(wr_valve_advance(&v, c, 1000 + c) == INT64_MIN);
    }
    ck_assert_int_eq(wr_valve_advance(&v, 0, 5000), 1001);
    for (int c = 1; c < N - 1; c++) {
        ck_assert_int_eq(wr_valve_mark_idle(&v, c), WR_VALVE_ADVANCED);
        ck_assert_int_eq(wr_valve_output(&v), 1000 + c + 1);
    }
    ck_assert_int_eq(wr_valve_mark_idle(&v, N - 1), WR_VALVE_ADVANCED);
    ck_assert_int_eq(wr_valve_output(&v), 5000);
    ck_assert_int_eq(wr_valve_mark_idle(&v, 0), WR_VALVE_STATUS_CHANGED);
    ck_assert(wr_valve_is_idle(&v));
    wr_valve_close(&v);
}
END_TEST

/* Random operations on a valve: the output only grows; the status is IDLE exactly when no
 * channel is active; with some channel aligned, the output is the min over aligned channels;
 * the flags returned match what changed. Loop index _i picks the channel count: few channels
 * reach all-idle often, many exercise unaligned channels. */
static const int random_channel_counts[] = {1, 2, 3, 5, 40};

START_TEST(test_valve_invariants_hold_under_random_operations)
{
    enum { STEPS = 50000 };
    int n = random_channel_counts[_i];
    wr_valve_t v;
    wr_valve_init(&v, n);
    uint32_t seed = 20240601u + (uint32_t)_i;
    for (int step = 0; step < STEPS; step++) {
        seed = seed * 1664525u + 1013904223u;
        int ch = (int)((seed >> 8) % (uint32_t)n);
        int op = (int)((seed >> 20) % 10);
        int64_t before = wr_valve_output(&v);
        bool idle_before = wr_valve_is_idle(&v);
        int flags = 0;
        if (op < 7) {
            if (wr_valve_advance(&v, ch, (int64_t)(step / 4 + (seed >> 24) % 300)) > before) {
                flags = WR_VALVE_ADVANCED;
            }
        } else if (op < 9) {
            flags = wr_valve_mark_idle(&v, ch);
        } else {
            flags = wr_valve_mark_active(&v, ch);
        }
        int64_t after = wr_valve_output(&v);
        bool flags_ok = (after > before) == ((flags & WR_VALVE_ADVANCED) != 0) &&
                        (wr_valve_is_idle(&v) != idle_before) ==
                            ((flags & WR_VALVE_STATUS_CHANGED) != 0);
        /* ck_abort_msg only on failure: Check records every passing assert, slow in a loop. */
        if (!(after >= before && flags_ok)) {
            ck_abort_msg("step %d: output or flags wrong (flags %d)", step, flags);
        }
        bool any_active = false;
        bool any_aligned = false;
        bool channels_ok = true;
        int64_t min = INT64_MAX;
        for (int c = 0; c < n; c++) {
            any_active = any_active || v.ch[c].active;
            if (v.ch[c].aligned) {
                any_aligned = true;
                channels_ok = channels_ok && v.ch[c].active && v.ch[c].wm >= after;
                min = v.ch[c].wm < min ? v.ch[c].wm : min;
            }
        }
        if (!(channels_ok && wr_valve_is_idle(&v) == !any_active &&
              (!any_aligned || min == after))) {
            ck_abort_msg("step %d: channel state inconsistent with the output", step);
        }
    }
    wr_valve_close(&v);
}
END_TEST

START_TEST(test_valve_init_rejects_no_channels)
{
    wr_valve_t v;
    ck_assert_int_eq(wr_valve_init(&v, 0), WEIR_EINVAL);
    wr_valve_close(&v);
    ck_assert(weir_valve_new(0) == NULL);
    ck_assert(weir_valve_new(-1) == NULL);
    weir_valve_free(NULL);
}
END_TEST

START_TEST(test_valve_ffi_maps_infinities_and_returns_flags)
{
    weir_valve_t *fv = weir_valve_new(2);
    ck_assert_ptr_nonnull(fv);
    ck_assert(isinf(weir_valve_output(fv)) && weir_valve_output(fv) < 0);
    ck_assert_int_eq(weir_valve_is_idle(fv), 0);
    ck_assert_int_eq(weir_valve_watermark(fv, 0, -INFINITY), 0); /* MIN: not an advance */
    ck_assert_int_eq(weir_valve_watermark(fv, 0, 1500.9), 0);
    ck_assert_int_eq(weir_valve_watermark(fv, 1, 2000.0), WR_VALVE_ADVANCED);
    ck_assert(weir_valve_output(fv) == 1500.0); /* truncated toward zero */
    ck_assert_int_eq(weir_valve_watermark(fv, 0, 1500.5), 0);
    ck_assert_int_eq(weir_valve_status(fv, 0, 1), WR_VALVE_ADVANCED);
    ck_assert(weir_valve_output(fv) == 2000.0);
    ck_assert_int_eq(weir_valve_watermark(fv, 1, INFINITY), 1);
    ck_assert(isinf(weir_valve_output(fv)) && weir_valve_output(fv) > 0);
    ck_assert_int_eq(weir_valve_status(fv, 1, 1), WR_VALVE_STATUS_CHANGED);
    ck_assert_int_eq(weir_valve_is_idle(fv), 1);
    ck_assert_int_eq(weir_valve_status(fv, 1, 0), WR_VALVE_STATUS_CHANGED);
    ck_assert_int_eq(weir_valve_is_idle(fv), 0);
    weir_valve_free(fv);
}
END_TEST

START_TEST(test_valve_ffi_flushes_then_reports_both_flags)
{
    weir_valve_t *fv = weir_valve_new(2);
    weir_valve_watermark(fv, 0, -5.0);
    weir_valve_watermark(fv, 1, 10.0);
    ck_assert(weir_valve_output(fv) == -5.0);
    ck_assert_int_eq(weir_valve_status(fv, 1, 1), 0);
    ck_assert_int_eq(weir_valve_status(fv, 0, 1), BOTH);
    ck_assert(weir_valve_output(fv) == 10.0);
    weir_valve_free(fv);
}
END_TEST

START_TEST(test_valve_ffi_rejects_bad_channel_and_nan)
{
    weir_valve_t *fv = weir_valve_new(2);
    ck_assert_int_eq(weir_valve_watermark(fv, 2, 1.0), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_watermark(fv, -1, 1.0), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_watermark(fv, 0, NAN), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_status(fv, 2, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_status(fv, -1, 0), WEIR_EINVAL);
    ck_assert(isinf(weir_valve_output(fv)));
    /* Finite values beyond int64 saturate instead of overflowing the conversion. */
    ck_assert_int_eq(weir_valve_watermark(fv, 0, 1e300), 0);
    ck_assert_int_eq(weir_valve_watermark(fv, 1, -1e300), 0);
    ck_assert(isinf(weir_valve_output(fv)) && weir_valve_output(fv) < 0);
    ck_assert_int_eq(weir_valve_status(fv, 1, 1), WR_VALVE_ADVANCED);
    ck_assert(isinf(weir_valve_output(fv)) && weir_valve_output(fv) > 0);
    weir_valve_free(fv);
}
END_TEST

START_TEST(test_valve_channels_report_watermark_and_state)
{
    weir_valve_t *fv = weir_valve_new(2);
    ck_assert(isinf(weir_valve_channel_watermark(fv, 0)));
    ck_assert_int_eq(weir_valve_channel_state(fv, 0), 3);
    weir_valve_watermark(fv, 0, 500);
    weir_valve_status(fv, 1, 1);
    ck_assert(weir_valve_channel_watermark(fv, 0) == 500);
    ck_assert_int_eq(weir_valve_channel_state(fv, 0), 3);
    ck_assert_int_eq(weir_valve_channel_state(fv, 1), 0);
    ck_assert_int_eq(weir_valve_channel_state(fv, 7), 0);
    weir_valve_free(fv);
}
END_TEST

/* A checkpoint reads every channel and the output; a fresh valve given them back behaves as
 * the old one does from there on. */
START_TEST(test_valve_restore_continues_as_the_original)
{
    weir_valve_t *a = weir_valve_new(3);
    weir_valve_watermark(a, 0, 500);
    weir_valve_watermark(a, 1, 300);
    weir_valve_status(a, 2, 1);
    ck_assert(weir_valve_output(a) == 300);
    weir_valve_t *b = weir_valve_new(3);
    for (int ch = 0; ch < 3; ch++) {
        ck_assert_int_eq(weir_valve_restore(b, ch, weir_valve_channel_watermark(a, ch),
                                            weir_valve_channel_state(a, ch)),
                         0);
    }
    ck_assert_int_eq(weir_valve_restore(b, -1, weir_valve_output(a), weir_valve_is_idle(a)), 0);
    /* the same steps now give the same flags and outputs */
    ck_assert_int_eq(weir_valve_watermark(b, 1, 400), weir_valve_watermark(a, 1, 400));
    ck_assert(weir_valve_output(b) == weir_valve_output(a));
    ck_assert(weir_valve_output(b) == 400);
    ck_assert_int_eq(weir_valve_status(b, 2, 0), weir_valve_status(a, 2, 0));
    ck_assert_int_eq(weir_valve_watermark(b, 1, 300), 0); /* never back */
    ck_assert_int_eq(weir_valve_restore(b, 3, 0, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_restore(b, 0, NAN, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_valve_restore(b, 0, 0, 4), WEIR_EINVAL);
    weir_valve_free(a);
    weir_valve_free(b);
}
END_TEST

static Suite *valve_suite(void)
{
    Suite *s = suite_create("valve");
    add_case(s, "output_is_min_over_active_aligned_channels",
             test_valve_output_is_min_over_active_aligned_channels);
    add_case(s, "idle_channel_does_not_hold_back", test_valve_idle_channel_does_not_hold_back);
    add_case(s, "idle_channel_is_excluded_and_its_watermarks_ignored",
             test_valve_idle_channel_is_excluded_and_its_watermarks_ignored);
    add_case(s, "regression_on_a_channel_is_ignored",
             test_valve_regression_on_a_channel_is_ignored);
    add_case(s, "output_never_goes_back", test_valve_output_never_goes_back);
    add_case(s, "returning_lower_channel_is_unaligned_until_caught_up",
             test_valve_returning_lower_channel_is_unaligned_until_caught_up);
    add_case(s, "returning_channel_at_output_rejoins_at_once",
             test_valve_returning_channel_at_output_rejoins_at_once);
    add_case(s, "all_channels_idle_flushes_max_and_outputs_idle",
             test_valve_all_channels_idle_flushes_max_and_outputs_idle);
    add_case(s, "all_idle_with_nothing_to_flush_only_changes_status",
             test_valve_all_idle_with_nothing_to_flush_only_changes_status);
    add_case(s, "all_idle_flush_is_unconditional_flink_40475",
             test_valve_all_idle_flush_is_unconditional_flink_40475);
    add_case(s, "watermarks_ignored_while_all_idle", test_valve_watermarks_ignored_while_all_idle);
    add_case(s, "active_after_all_idle_rederives_min_flink_40475",
             test_valve_active_after_all_idle_rederives_min_flink_40475);
    add_case(s, "active_emits_min_at_once_flink_40475",
             test_valve_active_emits_min_at_once_flink_40475);
    add_case(s, "idle_channel_at_output_triggers_remin",
             test_valve_idle_channel_at_output_triggers_remin);
    add_case(s, "many_channels", test_valve_many_channels);
    add_case(s, "channels_report_watermark_and_state",
             test_valve_channels_report_watermark_and_state);
    add_case(s, "restore_continues_as_the_original", test_valve_restore_continues_as_the_original);
    add_loop_case(s, "invariants_hold_under_random_operations",
                  test_valve_invariants_hold_under_random_operations,
                  (int)(sizeof random_channel_counts / sizeof random_channel_counts[0]));
    add_case(s, "init_rejects_no_channels", test_valve_init_rejects_no_channels);
    add_case(s, "ffi_maps_infinities_and_returns_flags",
             test_valve_ffi_maps_infinities_and_returns_flags);
    add_case(s, "ffi_flushes_then_reports_both_flags",
             test_valve_ffi_flushes_then_reports_both_flags);
    add_case(s, "ffi_rejects_bad_channel_and_nan", test_valve_ffi_rejects_bad_channel_and_nan);
    return s;
}

int main(void)
{
    return run_suite(valve_suite());
}
