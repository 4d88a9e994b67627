/* SPDX-License-Identifier: MIT */
/* check_loop.c: weir_loop_poll's own rules, over simple sources: the runtime contract (ids,
 * describe, bad arguments, weir_strerror, weir_out_write), the order of TIMER, TICK and records
 * on the virtual and the real clock, weir_rt_advance, stop and signals, and SIGUSR1 status
 * requests. */
#include <check.h>
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
#include "loop.h"
#include "weir.h"

/* ---- runtime contract ------------------------------------------------------------------- */

START_TEST(test_sources_get_ids_in_declaration_order_and_describe_themselves)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_source_file(rt, "data/words.txt", NULL, 0), 0);
    ck_assert_int_eq(weir_source_generate(rt, 3, 0), 1);
    ck_assert_int_eq(weir_source_stdin(rt, NULL, 0), 2);
    ck_assert_int_eq(weir_source_socket(rt, "localhost", 8888, NULL, 0, 0), 3);
    ck_assert_int_eq(weir_source_replay(rt, "a", 1), 4);
    ck_assert_str_eq(weir_source_describe(rt, 0), "read_text_file data/words.txt");
    ck_assert_str_eq(weir_source_describe(rt, 1), "generate");
    ck_assert_str_eq(weir_source_describe(rt, 2), "stdin");
    ck_assert_str_eq(weir_source_describe(rt, 3), "socket_text_stream localhost:8888");
    ck_assert_str_eq(weir_source_describe(rt, 4), "replay");
    ck_assert_int_eq(weir_source_set_name(rt, 4, "input.replay"), 0);
    ck_assert_str_eq(weir_source_describe(rt, 4), "replay input.replay");
    ck_assert_str_eq(weir_source_describe(rt, 9), "");
    ck_assert_int_eq(weir_source_set_name(rt, 9, "x"), WEIR_EINVAL);
    ck_assert(weir_source_stat(rt, 9, WEIR_STAT_RECORDS) < 0);
    weir_rt_free(rt); /* never started: nothing was opened */
}
END_TEST

START_TEST(test_bad_arguments_and_wrong_states_are_rejected)
{
    ck_assert_ptr_null(weir_rt_new(7, 0));
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    weir_event_t b[4];
    ck_assert_int_eq(weir_loop_poll(rt, b, 4), WEIR_ESTATE);
    ck_assert_int_eq(weir_source_socket(rt, "localhost", 8888, NULL, -2, 0), WEIR_EINVAL);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "max_retry"));
    ck_assert_int_eq(weir_source_socket(rt, "localhost", 0, NULL, 0, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_file(rt, "x", "", 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_replay(rt, "a", 1), WEIR_EINVAL); /* needs the virtual clock */
    ck_assert_int_eq(weir_rt_set_tick(rt, -5), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_generate(rt, 1, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_rt_start(rt), WEIR_ESTATE);
    ck_assert_int_eq(weir_source_generate(rt, 1, 0), WEIR_ESTATE);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), WEIR_ESTATE);
    ck_assert_int_eq(weir_loop_poll(rt, b, 0), WEIR_EINVAL);
    weir_rt_free(rt);
    weir_rt_free(NULL);
}
END_TEST

START_TEST(test_strerror_names_weir_and_libuv_codes)
{
    ck_assert_str_eq(weir_strerror(WEIR_EINVAL), "invalid argument");
    ck_assert_str_eq(weir_strerror(WEIR_ESTATE), "call not allowed in this state");
    ck_assert_str_eq(weir_strerror(WEIR_ESOURCE), "source failed");
    ck_assert_str_eq(weir_strerror(-ECONNREFUSED), "connection refused");
    ck_assert_str_eq(weir_strerror(0), "success");
    ck_assert_ptr_nonnull(weir_strerror(-4999)); /* unknown: named, not leaked */
}
END_TEST

START_TEST(test_out_write_goes_to_stdio_and_rejects_other_fds)
{
    ck_assert_int_eq(weir_out_write(1, "", 0), 0);
    ck_assert_int_eq(weir_out_write(3, "x", 1), WEIR_EINVAL);
    capture_t cap;
    capture_stderr(&cap);
    ck_assert_int_eq(weir_out_write(2, "to stderr\n", 10), 0);
    ck_assert_int_eq(weir_out_flush(), 0);
    char *err = captured(&cap);
    ck_assert_str_eq(err, "to stderr\n");
    free(err);
}
END_TEST

/* ---- the virtual clock ------------------------------------------------------------------ */

/* TIMER, then TICK, then records at one reading; each TIMER or TICK comes alone; equal times
 * go in declaration order; a wakeup Lua sets after a record fires before anything later. */
START_TEST(test_replay_orders_timers_ticks_and_records_on_the_virtual_clock)
{
    static const char a_text[] = "a0\na1\na2\n";
    static const char b_text[] = "b0\nb1\n";
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t a = weir_source_replay(rt, a_text, sizeof a_text - 1);
    int32_t b = weir_source_replay(rt, b_text, sizeof b_text - 1);
    ck_assert_int_eq(a, 0);
    ck_assert_int_eq(b, 1);
    add_entry(rt, a, 1000, 0, 2, 1);
    add_entry(rt, a, 1000, 3, 2, 2);
    add_entry(rt, a, 1150, 6, 2, 3);
    add_entry(rt, a, 1300, 0, -1, 4); /* time only */
    add_entry(rt, b, 1000, 0, 2, 1);
    add_entry(rt, b, 1150, 3, 2, 2);
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1149), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000);

    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 2), 2); /* a batch of 2: b0 waits for the next poll */
    expect_line(&log, 0, a, "a0", 1, 0);
    expect_line(&log, 1, a, "a1", 2, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line(&log, 2, b, "b0", 1, 0);
    expect_time(&log, 2, 1000);

    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 3, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 3, 1100);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 4, 1150); /* due 1149 fires at 1150 */
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1150);

    ck_assert_int_eq(poll_once(rt, &log, 16), 3);
    expect_line(&log, 5, a, "a2", 3, 0);
    expect_line(&log, 6, b, "b1", 2, 0);
    expect_kind(&log, 7, WEIR_EV_END, b, WEIR_END_EXHAUSTED);
    expect_time(&log, 7, 1150);

    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1160), 0); /* as Lua would, reacting to a2 */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 8, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 8, 1161);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 9, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 9, 1200);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 10, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 10, 1300);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* the time-only entry, then the end */
    expect_kind(&log, 11, WEIR_EV_END, a, WEIR_END_EXHAUSTED);
    expect_time(&log, 11, 1300);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int)weir_source_stat(rt, a, WEIR_STAT_RECORDS), 3);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_wakeup_already_passed_fires_at_the_current_reading)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 5000);
    int32_t r = weir_source_replay(rt, "x", 1);
    add_entry(rt, r, 9000, 0, 1, 1);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 100), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 0, 5000); /* the clock never goes back */
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 7000), 0);
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1.0 / 0.0), 0); /* +inf clears it */
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 3);
    expect_line(&log, 1, r, "x", 1, 0);
    expect_time(&log, 1, 9000);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_file_on_the_virtual_clock_is_read_at_the_current_reading)
{
    char *path = temp_file("f1\nf2\n", 6);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 7000);
    int32_t r = weir_source_replay(rt, "late", 4);
    int32_t f = weir_source_file(rt, path, NULL, 0);
    add_entry(rt, r, 8000, 0, 4, 1);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    expect_line(&log, 0, f, "f1", 1, 0);
    expect_time(&log, 0, 7000);
    expect_line(&log, 1, f, "f2", 2, 0);
    expect_kind(&log, 2, WEIR_EV_END, f, WEIR_END_EXHAUSTED);
    expect_time(&log, 2, 7000);
    expect_line(&log, 3, r, "late", 1, 0);
    expect_time(&log, 3, 8000);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

/* ---- the real clock --------------------------------------------------------------------- */

START_TEST(test_missed_ticks_collapse_onto_the_next_grid_point)
{
    ck_assert_int_eq(wr_loop_next_tick(0, 10, 0), 10);
    ck_assert_int_eq(wr_loop_next_tick(0, 10, 9), 10);
    ck_assert_int_eq(wr_loop_next_tick(0, 10, 10), 20);
    ck_assert_int_eq(wr_loop_next_tick(0, 10, 35), 40);
    ck_assert_int_eq(wr_loop_next_tick(1000, 200, 1799), 1800);
    ck_assert_int_eq(wr_loop_next_tick(1000, 200, 1800), 2000);
}
END_TEST

START_TEST(test_ticks_on_the_real_clock_fall_on_the_grid)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 10), 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0.001), 0); /* index 0 now, then silence */
    double t0 = weir_rt_now(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_RANGE, 0, 0);
    for (int k = 1; k <= 3; k++) {
        ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* alone */
        expect_kind(&log, k, WEIR_EV_TICK, -1, 0);
        ck_assert(log.ev[k].time >= t0 + 10.0 * k);
    }
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* A real-time test (tolerant: it only waits for the clock to pass a tick, however long that
 * takes): a batch that outlasts the tick interval, as a checkpoint waited for does, finds a
 * tick due at every poll; the sources must still get every other poll. Before, ticks came
 * alone poll after poll and a ready source was never read. */
START_TEST(test_ticks_due_at_every_poll_do_not_starve_a_ready_source)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 1), 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0), 0); /* always ready */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    int ticks = 0, ranges = 0, prev_tick = 0;
    for (int k = 0; k < 40; k++) {
        double until = weir_rt_now(rt) + 2; /* the batch's work: past the next tick */
        while (weir_rt_now(rt) < until) {
        } /* the real clock's reading */
        int before = log.n;
        ck_assert_int_ge(poll_once(rt, &log, 16), 1);
        int tick = log.ev[before].kind == WEIR_EV_TICK;
        ck_assert_msg(!(tick && prev_tick), "poll %d: a second TICK in a row, the source waits", k);
        ticks += tick;
        ranges += log.ev[before].kind == WEIR_EV_RANGE;
        prev_tick = tick;
    }
    ck_assert_int_ge(ticks, 10); /* the ticks still come, every other poll at most */
    ck_assert_int_ge(ranges, 20);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_wakeup_on_the_real_clock_fires_once_after_due)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0.001), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* index 0 */
    double due = weir_rt_now(rt) + 15;
    ck_assert_int_eq(weir_rt_set_wakeup(rt, due), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_TIMER, -1, 0);
    ck_assert(log.ev[1].time >= due + 1);
    ck_assert(weir_rt_now(rt) >= due + 1);
    weir_rt_stop(rt); /* the wakeup was delivered once: next comes STOP, not TIMER */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_STOP, -1, 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* ---- weir_rt_advance -------------------------------------------------------------------- */

START_TEST(test_virtual_manual_only_runtime_does_not_move_without_advance)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1050), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000);
    push(rt, m, "x");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line_at(&log, 0, m, "x", 1, 1000);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    }
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000); /* no TICK, no TIMER */
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_advance_delivers_timer_at_due_plus_1_and_ticks_in_order_then_stops_at_target)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1149), 0);
    push(rt, m, "before");
    ck_assert_int_eq(weir_rt_advance(rt, 1250), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000); /* the polls move it */
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* what is queued goes out at the reading */
    expect_line_at(&log, 0, m, "before", 1, 1000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 1, 1100);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 2, 1150);
    push(rt, m, "mid"); /* as Lua would, reacting to the timer */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line_at(&log, 3, m, "mid", 2, 1150);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 4, 1200);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1250);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1250);

    /* a wakeup at the target fires only once the clock passed it; a tick at it is delivered */
    ck_assert_int_eq(weir_rt_set_wakeup(rt, 1300), 0);
    ck_assert_int_eq(weir_rt_advance(rt, 1300), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 5, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 5, 1300);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq(weir_rt_advance(rt, 1301), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 6, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 6, 1301);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1301);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_advance_needs_the_virtual_clock_and_a_target_not_behind)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    ck_assert_int_eq(weir_rt_advance(rt, 999), WEIR_ESTATE);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "before now"));
    ck_assert_int_eq(weir_rt_advance(rt, 0.0 / 0.0), WEIR_EINVAL);
    ck_assert_int_eq(weir_rt_advance(rt, 1.0 / 0.0), WEIR_EINVAL);
    ck_assert_int_eq(weir_rt_advance(rt, 1000), 0); /* now itself: nothing to do */
    weir_rt_free(rt);
    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_advance(rt, 1e15), WEIR_ESTATE);
    weir_rt_free(rt);
    ck_assert_int_eq(weir_rt_advance(NULL, 0), WEIR_EINVAL);
}
END_TEST

/* A replay still drives the clock by itself; an advance target beyond its end is reached. */
START_TEST(test_replay_runs_as_before_and_advance_continues_past_its_end)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 1000), 0);
    int32_t r = weir_source_replay(rt, "ab", 2);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_replay_add(rt, r, 1500, 0, 1, 1), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 0, 1000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    expect_line_at(&log, 1, r, "a", 1, 1500);
    expect_kind(&log, 2, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0); /* only the manual source is left */
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1500);
    ck_assert_int_eq(weir_rt_advance(rt, 2500), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 3, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 3, 2000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 2500);
    (void)m;
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* ---- stop and signals ------------------------------------------------------------------- */

START_TEST(test_stop_delivers_stop_then_drains_buffered_records_then_ends_stopped)
{
    enum { LINES = 3000 };
    char text[LINES * 5 + 1];
    for (int i = 0; i < LINES; i++) {
        char line[16];
        snprintf(line, sizeof line, "%04d\n", i % 10000);
        memcpy(text + i * 5, line, 5);
    }
    char *path = temp_file(text, LINES * 5);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t f = weir_source_file(rt, path, NULL, 0);
    int32_t g = weir_source_generate(rt, -1, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, WEIR_BATCH_MAX), WEIR_BATCH_MAX);
    weir_rt_stop(rt);
    ck_assert_int_eq(poll_once(rt, &log, WEIR_BATCH_MAX), 1);
    expect_kind(&log, WEIR_BATCH_MAX, WEIR_EV_STOP, -1, 0);
    int from = log.n;
    run_to_end(rt, &log, WEIR_BATCH_MAX);
    int ends = 0;
    for (int i = from; i < log.n; i++) {
        ck_assert_int_ne(log.ev[i].kind, WEIR_EV_RANGE); /* the generator stopped at once */
        if (log.ev[i].kind == WEIR_EV_END) {
            ck_assert_int_eq(log.ev[i].flags, WEIR_END_STOPPED);
            ends++;
        }
    }
    ck_assert_int_eq(ends, 2);
    /* The whole file fit in the first read, so every line was buffered and is delivered. */
    ck_assert_int_eq((int)weir_source_stat(rt, f, WEIR_STAT_RECORDS), LINES);
    ck_assert_int_ge((int)weir_source_stat(rt, g, WEIR_STAT_RECORDS), 0);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

START_TEST(test_stop_on_the_virtual_clock_ends_replays_stopped)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t r = weir_source_replay(rt, "a", 1);
    add_entry(rt, r, 100, 0, 1, 1);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    weir_rt_stop(rt);
    evlog_t log = {0};
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 2);
    expect_kind(&log, 0, WEIR_EV_STOP, -1, 0);
    expect_kind(&log, 1, WEIR_EV_END, r, WEIR_END_STOPPED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_sigint_acts_as_stop_and_free_restores_the_handler)
{
    struct sigaction before;
    sigaction(SIGINT, NULL, &before);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0.001), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    raise(SIGINT);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_STOP, -1, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_END, 0, WEIR_END_STOPPED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    weir_rt_free(rt);
    struct sigaction after;
    sigaction(SIGINT, NULL, &after);
    ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
    log_free(&log);
}
END_TEST

START_TEST(test_sigterm_wakes_a_blocked_poll)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0.001), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    pid_t parent = getpid();
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        usleep(50 * 1000); /* let the parent block in poll */
        kill(parent, SIGTERM);
        _exit(0);
    }
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* would block for 1000 s without it */
    expect_kind(&log, 1, WEIR_EV_STOP, -1, 0);
    waitpid(child, NULL, 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* In a child: a stop signal, then another before the stop is taken. */
static void raise_two_stop_signals(void)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    weir_source_generate(rt, -1, 0);
    weir_rt_start(rt);
    raise(SIGINT);
    raise(SIGTERM);
}

START_TEST(test_second_signal_exits_at_once_with_a_message)
{
    expect_child_exits_interrupted_again(raise_two_stop_signals);
}
END_TEST

/* ---- pending input ---------------------------------------------------------------------- */

START_TEST(test_pending_of_an_unknown_source_is_einval)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, 1, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pending(rt, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_pending(rt, -1), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_pending(NULL, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1);
    weir_rt_free(rt);
}
END_TEST

/* ---- status requests (SIGUSR1) ---------------------------------------------------------- */

START_TEST(test_sigusr1_yields_one_status_event_and_the_job_continues)
{
    struct sigaction before;
    sigaction(SIGUSR1, NULL, &before);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 5000);
    int32_t r = weir_source_replay(rt, "x", 1);
    add_entry(rt, r, 9000, 0, 1, 1);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    raise(SIGUSR1);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* alone */
    expect_kind(&log, 0, WEIR_EV_STATUS, -1, 0);
    expect_time(&log, 0, 5000);
    run_to_end(rt, &log, 16); /* no STOP: the replay runs to its end */
    ck_assert_int_eq(log.n, 3);
    expect_line(&log, 1, r, "x", 1, 0);
    expect_time(&log, 1, 9000);
    expect_kind(&log, 2, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    weir_rt_free(rt);
    struct sigaction after;
    sigaction(SIGUSR1, NULL, &after);
    ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
    log_free(&log);
}
END_TEST

START_TEST(test_sigusr1_twice_before_a_poll_yields_one_status_event)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t r = weir_source_replay(rt, "x", 1);
    add_entry(rt, r, 100, 0, 1, 1);
    add_entry(rt, r, 200, 0, 1, 2);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    raise(SIGUSR1);
    raise(SIGUSR1);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_STATUS, -1, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line(&log, 1, r, "x", 1, 0);
    raise(SIGUSR1); /* a later signal asks again */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_STATUS, -1, 0);
    expect_time(&log, 2, 100);
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 5);
    expect_line(&log, 3, r, "x", 2, 0);
    expect_kind(&log, 4, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_sigusr1_wakes_a_blocked_poll_without_stopping)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_generate(rt, -1, 0.001), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    pid_t parent = getpid();
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        usleep(50 * 1000); /* let the parent block in poll */
        kill(parent, SIGUSR1);
        _exit(0);
    }
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* would block for 1000 s without it */
    expect_kind(&log, 1, WEIR_EV_STATUS, -1, 0);
    waitpid(child, NULL, 0);
    weir_rt_stop(rt); /* the generator is still live: STOP, then its END(STOPPED) */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_STOP, -1, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_STOPPED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

static Suite *loop_suite(void)
{
    Suite *s = suite_create("loop");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"ids_in_declaration_order_and_describe",
         test_sources_get_ids_in_declaration_order_and_describe_themselves, 0},
        {"bad_arguments_and_states_rejected", test_bad_arguments_and_wrong_states_are_rejected, 0},
        {"strerror_names_weir_and_libuv_codes", test_strerror_names_weir_and_libuv_codes, 0},
        {"out_write_goes_to_stdio", test_out_write_goes_to_stdio_and_rejects_other_fds, 0},
        {"virtual_clock_orders_timer_tick_records",
         test_replay_orders_timers_ticks_and_records_on_the_virtual_clock, 0},
        {"passed_wakeup_fires_at_current_reading",
         test_wakeup_already_passed_fires_at_the_current_reading, 0},
        {"file_on_virtual_clock_at_current_reading",
         test_file_on_the_virtual_clock_is_read_at_the_current_reading, 0},
        {"missed_ticks_collapse_onto_grid", test_missed_ticks_collapse_onto_the_next_grid_point, 0},
        {"real_clock_ticks_fall_on_grid", test_ticks_on_the_real_clock_fall_on_the_grid, 0},
        {"ticks_due_every_poll_do_not_starve_a_source",
         test_ticks_due_at_every_poll_do_not_starve_a_ready_source, 0},
        {"real_clock_wakeup_fires_once_after_due",
         test_wakeup_on_the_real_clock_fires_once_after_due, 0},
        {"virtual_manual_only_does_not_move_without_advance",
         test_virtual_manual_only_runtime_does_not_move_without_advance, 0},
        {"advance_timer_due_plus_1_ticks_in_order_stops_at_target",
         test_advance_delivers_timer_at_due_plus_1_and_ticks_in_order_then_stops_at_target, 0},
        {"advance_needs_virtual_clock_target_not_behind",
         test_advance_needs_the_virtual_clock_and_a_target_not_behind, 0},
        {"replay_as_before_advance_past_its_end",
         test_replay_runs_as_before_and_advance_continues_past_its_end, 0},
        {"stop_then_drain_then_end_stopped",
         test_stop_delivers_stop_then_drains_buffered_records_then_ends_stopped, 0},
        {"stop_on_virtual_clock_ends_replays",
         test_stop_on_the_virtual_clock_ends_replays_stopped, 0},
        {"sigint_acts_as_stop_handler_restored",
         test_sigint_acts_as_stop_and_free_restores_the_handler, 0},
        {"sigterm_wakes_blocked_poll", test_sigterm_wakes_a_blocked_poll, 0},
        {"second_signal_exits_with_message", test_second_signal_exits_at_once_with_a_message, 0},
        {"pending_unknown_source_einval", test_pending_of_an_unknown_source_is_einval, 0},
        {"sigusr1_one_status_job_continues",
         test_sigusr1_yields_one_status_event_and_the_job_continues, 0},
        {"sigusr1_twice_before_poll_one_status",
         test_sigusr1_twice_before_a_poll_yields_one_status_event, 0},
        {"sigusr1_wakes_blocked_poll_no_stop",
         test_sigusr1_wakes_a_blocked_poll_without_stopping, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(loop_suite());
}
