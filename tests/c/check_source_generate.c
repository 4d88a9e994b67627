/* SPDX-License-Identifier: MIT */
/* check_source_generate.c: the generate source (source_generate.c): ranges of the batch's max,
 * count 0, unbounded counting, a rate on the virtual and the real clock, and pending. */
#include <check.h>
#include <math.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_events.h"
#include "check_support.h"
#include "weir.h"

/* ---- generate --------------------------------------------------------------------------- */

START_TEST(test_generate_without_rate_emits_ranges_of_batch_max_then_end)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 2500, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 4);
    expect_kind(&log, 0, WEIR_EV_RANGE, 0, 0);
    ck_assert_int_eq((int)log.ev[0].index, 0);
    ck_assert_int_eq(log.ev[0].len, WEIR_BATCH_MAX);
    ck_assert_int_eq((int)log.ev[1].index, WEIR_BATCH_MAX);
    ck_assert_int_eq(log.ev[1].len, WEIR_BATCH_MAX);
    ck_assert_int_eq((int)log.ev[2].index, 2 * WEIR_BATCH_MAX);
    ck_assert_int_eq(log.ev[2].len, 2500 - 2 * WEIR_BATCH_MAX);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECORDS), 2500);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_generate_with_count_zero_ends_at_once)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 8);
    ck_assert_int_eq(log.n, 1);
    expect_kind(&log, 0, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_unbounded_generate_keeps_counting)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(poll_once(rt, &log, 16), 1);
        expect_kind(&log, i, WEIR_EV_RANGE, 0, 0);
        ck_assert_int_eq((int)log.ev[i].index, i * WEIR_BATCH_MAX);
    }
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_generate_with_rate_on_virtual_clock_jumps_to_due_indices)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_source_generate(rt, 4, 3), 0); /* due at +0, +334, +667, +1000 */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    static const double at[] = {1000, 1334, 1667, 2000};
    for (int i = 0; i < 4; i++) {
        expect_kind(&log, i, WEIR_EV_RANGE, 0, 0);
        ck_assert_int_eq((int)log.ev[i].index, i);
        ck_assert_int_eq(log.ev[i].len, 1);
        expect_time(&log, i, at[i]);
    }
    expect_kind(&log, 4, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    expect_time(&log, 4, 2000);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 2000);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_generate_with_rate_on_real_clock_waits_for_due_indices)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 4, 200), 0); /* one index every 5 ms */
    double t0 = weir_rt_now(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    int64_t total = 0;
    double prev = t0;
    for (int i = 0; i < log.n - 1; i++) {
        expect_kind(&log, i, WEIR_EV_RANGE, 0, 0);
        ck_assert_int_eq((int64_t)log.ev[i].index, total);
        ck_assert(log.ev[i].time >= prev);
        ck_assert(log.ev[i].time >= t0 + 5 * (total + log.ev[i].len - 1)); /* none early */
        total += log.ev[i].len;
        prev = log.ev[i].time;
    }
    ck_assert_int_eq(total, 4);
    expect_kind(&log, log.n - 1, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* ---- pending input ---------------------------------------------------------------------- */

START_TEST(test_generator_pending_without_rate_until_exhausted_with_rate_when_due)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 2500, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(weir_source_pending(rt, 0), 1);
        ck_assert_int_eq(poll_once(rt, &log, 1), 1);
        expect_kind(&log, i, WEIR_EV_RANGE, 0, 0);
    }
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* exhausted; only END is left */
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    weir_rt_free(rt);

    rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_source_generate(rt, 4, 3), 0); /* due at +0, +334, +667, +1000 */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* index 0 is due at the start */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_time(&log, 4, 1000);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* index 1 is due at 1334 */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_time(&log, 5, 1334);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_generate_position_and_seek_continue_at_the_next_index)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 2500, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    weir_source_position_t pos;
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    ck_assert(pos.offset == WEIR_BATCH_MAX && pos.records == WEIR_BATCH_MAX);
    ck_assert_int_eq(pos.replayable, 1);
    weir_rt_free(rt);
    log_free(&log);

    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 2500, 0), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 3);
    ck_assert_int_eq((int)log.ev[0].index, WEIR_BATCH_MAX);
    ck_assert_int_eq((int)(log.ev[1].index + log.ev[1].len), 2500);
    expect_kind(&log, 2, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECORDS), 2500);
    log_free(&log);
    weir_rt_free(rt);

    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 10, 0), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), WEIR_EINVAL); /* past its count */
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "count differs"));
    weir_rt_free(rt);
}
END_TEST

/* On the virtual clock the restored clock and grid keep a rated generator's due times. */
START_TEST(test_rated_generate_restored_on_the_virtual_clock_keeps_its_due_times)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_source_generate(rt, 4, 3), 0); /* due at +0, +334, +667, +1000 */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* index 1 at 1334 */
    weir_source_position_t pos;
    double clock[3];
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_clock_state(rt, clock), 0);
    ck_assert(clock[0] == 1334 && clock[1] == 1000 && isinf(clock[2]));
    weir_rt_free(rt);
    log_free(&log);

    rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 4, 3), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_restore_clock(rt, clock[0], clock[1], clock[2]), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_rt_restore_clock(rt, clock[0], clock[1], clock[2]), WEIR_ESTATE);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 3);
    ck_assert_int_eq((int)log.ev[0].index, 2);
    expect_time(&log, 0, 1667);
    expect_time(&log, 1, 2000);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* The Nexmark generator (source_nexmark.c): bid i is a function of the seed and i, so the next
 * index is its whole position. */
START_TEST(test_nexmark_position_and_seek_continue_at_the_next_bid)
{
    weir_nexmark_config_t cfg = {.seed = 7, .events_per_second = 1000, .base_time_ms = 0,
                                 .hot_auction_ratio = 2, .hot_bidder_ratio = 4,
                                 .in_flight_auctions = 100, .active_people = 1000};
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_nexmark(rt, 3000, &cfg, 24), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    weir_event_t batch[4];
    char first_after[24];
    ck_assert_int_eq(weir_loop_poll(rt, batch, 4), 1);
    ck_assert_int_eq(weir_loop_poll(rt, batch, 4), 1);
    weir_source_position_t pos;
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    ck_assert(pos.offset == 2 * batch[0].len);
    ck_assert_int_eq(weir_loop_poll(rt, batch, 4), 1);
    memcpy(first_after, batch[0].ptr, 24);
    double index_after = batch[0].index;
    weir_rt_free(rt);

    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_nexmark(rt, 3000, &cfg, 24), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_loop_poll(rt, batch, 4), 1);
    ck_assert(batch[0].index == index_after);
    ck_assert_int_eq(memcmp(batch[0].ptr, first_after, 24), 0); /* the same bid again */
    weir_rt_free(rt);
}
END_TEST

static Suite *source_generate_suite(void)
{
    Suite *s = suite_create("source_generate");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"generate_ranges_of_batch_max_then_end",
         test_generate_without_rate_emits_ranges_of_batch_max_then_end, 0},
        {"generate_count_zero_ends_at_once", test_generate_with_count_zero_ends_at_once, 0},
        {"unbounded_generate_keeps_counting", test_unbounded_generate_keeps_counting, 0},
        {"rate_generate_on_virtual_clock_jumps",
         test_generate_with_rate_on_virtual_clock_jumps_to_due_indices, 0},
        {"rate_generate_on_real_clock_waits",
         test_generate_with_rate_on_real_clock_waits_for_due_indices, 0},
        {"pending_generator_until_exhausted_or_due",
         test_generator_pending_without_rate_until_exhausted_with_rate_when_due, 0},
        {"generate_position_and_seek_continue_at_next_index",
         test_generate_position_and_seek_continue_at_the_next_index, 0},
        {"rated_generate_restored_on_virtual_clock_keeps_due_times",
         test_rated_generate_restored_on_the_virtual_clock_keeps_its_due_times, 0},
        {"nexmark_position_and_seek_continue_at_next_bid",
         test_nexmark_position_and_seek_continue_at_the_next_bid, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_generate_suite());
}
