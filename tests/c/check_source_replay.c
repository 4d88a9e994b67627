/* SPDX-License-Identifier: MIT */
/* check_source_replay.c: the replay source (source_replay.c): entries in time order, a trailing
 * time-only entry, when it counts as pending, stepping through it (hold, end), and watermark
 * alignment's pause (weir_source_pause). */
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
#include "weir.h"

/* ---- the virtual clock ------------------------------------------------------------------ */

START_TEST(test_trailing_time_only_entry_runs_the_clock_before_the_end)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 1000), 0);
    int32_t r = weir_source_replay(rt, "a", 1);
    add_entry(rt, r, 0, 0, 1, 1);
    add_entry(rt, r, 3000, 0, -1, 2);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    expect_line(&log, 0, r, "a", 1, 0);
    for (int k = 1; k <= 3; k++) {
        expect_kind(&log, k, WEIR_EV_TICK, -1, 0);
        expect_time(&log, k, 1000.0 * k);
    }
    expect_kind(&log, 4, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    expect_time(&log, 4, 3000);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_replay_entries_must_not_go_back_in_time)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t r = weir_source_replay(rt, "ab", 2);
    add_entry(rt, r, 500, 0, 1, 1);
    ck_assert_int_eq(weir_replay_add(rt, r, 499, 1, 1, 2), WEIR_EINVAL);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "line 2"));
    ck_assert_int_eq(weir_replay_add(rt, r, 600, 1, 2, 3), WEIR_EINVAL); /* past the text */
    ck_assert_int_eq(weir_replay_add(rt, r, 0.0 / 0.0, 0, 1, 4), WEIR_EINVAL);
    ck_assert_int_eq(weir_replay_add(rt, 5, 600, 0, 1, 5), WEIR_EINVAL);
    add_entry(rt, r, 500, 1, 1, 6); /* equal times are fine */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_replay_add(rt, r, 700, 0, 1, 7), WEIR_ESTATE);
    weir_rt_free(rt);
}
END_TEST

/* ---- pending input ---------------------------------------------------------------------- */

START_TEST(test_replay_is_quiet_until_its_next_line_is_due)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 1000);
    int32_t r = weir_source_replay(rt, "abc", 3);
    add_entry(rt, r, 1000, 0, 1, 1);
    add_entry(rt, r, 1000, 1, 1, 2);
    add_entry(rt, r, 1050, 0, -1, 3); /* time only: moves the clock, is no record */
    add_entry(rt, r, 1100, 2, 1, 4);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pending(rt, r), 1);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_line(&log, 0, r, "a", 1, 0);
    ck_assert_int_eq(weir_source_pending(rt, r), 1); /* "b" is due at 1000 too */
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_line(&log, 1, r, "b", 2, 0);
    ck_assert_int_eq(weir_source_pending(rt, r), 0); /* "c" is due at 1100, the clock says 1000 */
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    expect_line(&log, 2, r, "c", 4, 0);
    expect_time(&log, 2, 1100);
    ck_assert_int_eq(weir_source_pending(rt, r), 0); /* ended */
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* A replay restored with its clock and tick grid delivers the same rest: entries, ticks and
 * their times. */
START_TEST(test_replay_position_and_clock_restore_continue_the_same_way)
{
    evlog_t whole = {0}, log = {0};
    weir_source_position_t pos;
    double clock[3];
    for (int run = 0; run < 3; run++) {
        weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
        ck_assert_int_eq(weir_rt_set_tick(rt, 1000), 0);
        int32_t r = weir_source_replay(rt, "abc", 3);
        add_entry(rt, r, 0, 0, 1, 1);
        add_entry(rt, r, 1500, 1, 1, 2);
        add_entry(rt, r, 2500, 2, 1, 3);
        if (run == 2) {
            ck_assert_int_eq(weir_source_seek(rt, r, &pos), 0);
            ck_assert_int_eq(weir_rt_restore_clock(rt, clock[0], clock[1], clock[2]), 0);
        }
        ck_assert_int_eq(weir_rt_start(rt), 0);
        if (run == 0) {
            run_to_end(rt, &whole, 64);
        } else if (run == 1) {
            for (int k = 0; k < 3; k++) { /* "a", the tick at 1000, "b" */
                ck_assert_int_eq(poll_once(rt, &log, 1), 1);
            }
            ck_assert_int_eq(weir_source_position(rt, r, &pos), 0);
            ck_assert(pos.offset == 2 && pos.replayable == 1);
            ck_assert_int_eq(weir_rt_clock_state(rt, clock), 0);
            ck_assert(clock[0] == 1500 && clock[1] == 0 && clock[2] == 2000);
        } else {
            run_to_end(rt, &log, 64);
        }
        weir_rt_free(rt);
    }
    ck_assert_int_eq(log.n, whole.n);
    for (int i = 0; i < whole.n; i++) {
        ck_assert_int_eq(log.ev[i].kind, whole.ev[i].kind);
        ck_assert(log.ev[i].time == whole.ev[i].time);
        ck_assert_str_eq(log.ev[i].text, whole.ev[i].text);
    }
    log_free(&whole);
    log_free(&log);
}
END_TEST

/* ---- stepping (the REPL's paused replay) ------------------------------------------------ */

START_TEST(test_held_replay_delivers_only_what_it_is_let_go)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t r = weir_source_replay(rt, "abc", 3);
    add_entry(rt, r, 0, 0, 1, 1);
    add_entry(rt, r, 0, 1, 1, 2);
    add_entry(rt, r, 500, 2, 1, 3);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_replay_hold(rt, r, 0), 0);
    ck_assert_int_eq(weir_rt_hold_clock(rt, 1), 0);
    ck_assert_int_eq(weir_replay_hold(rt, r + 1, 0), WEIR_EINVAL);
    weir_event_t ev[8];
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 0); /* everything is held */
    ck_assert_int_eq(weir_source_pending(rt, r), 0);
    ck_assert_int_eq(weir_replay_next(rt, r), 0);
    ck_assert_int_eq(weir_replay_hold(rt, r, 1), 0); /* one line: "a", not "b" at the same time */
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 1);
    ck_assert_int_eq(ev[0].kind, WEIR_EV_LINE);
    ck_assert_int_eq(ev[0].index, 1);
    ck_assert_int_eq(weir_replay_next(rt, r), 1);
    ck_assert_int_eq(weir_replay_hold(rt, r, -1), 0); /* all: "b"; "c" waits for the clock */
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 1);
    ck_assert_int_eq(ev[0].index, 2);
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 0); /* the held clock does not jump */
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 0);
    ck_assert_int_eq(weir_rt_advance(rt, 500), 0);
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 2);
    ck_assert_int_eq(ev[0].index, 3);
    ck_assert_int_eq((int64_t)ev[0].time_ms, 500);
    ck_assert_int_eq(ev[1].kind, WEIR_EV_END);
    ck_assert_int_eq(weir_replay_next(rt, r), 3);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_replay_end_drops_the_lines_not_delivered)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t r = weir_source_replay(rt, "ab", 2);
    add_entry(rt, r, 0, 0, 1, 1);
    add_entry(rt, r, 100, 1, 1, 2);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_replay_hold(rt, r, 0), 0);
    ck_assert_int_eq(weir_replay_end(rt, r), 0);
    weir_event_t ev[8];
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 1);
    ck_assert_int_eq(ev[0].kind, WEIR_EV_END);
    ck_assert_int_eq(ev[0].flags, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 0);
    weir_rt_free(rt);
}
END_TEST

/* ---- watermark alignment's pause ------------------------------------------------------- */

START_TEST(test_paused_replay_waits_and_keeps_its_spacing_after_the_resume)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t r = weir_source_replay(rt, "abc", 3);
    add_entry(rt, r, 0, 0, 1, 1);
    add_entry(rt, r, 100, 1, 1, 2);
    add_entry(rt, r, 200, 2, 1, 3);
    ck_assert_int_eq(weir_source_pause(rt, 7, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line_at(&log, 0, r, "a", 1, 0);
    ck_assert_int_eq(weir_source_pause(rt, r, 1), 0);
    ck_assert_int_eq(weir_source_paused(rt, r), 1);
    /* paused: only ticks, the clock runs on to them (its lines neither come nor hold it) */
    for (int k = 1; k <= 3; k++) {
        ck_assert_int_eq(poll_once(rt, &log, 16), 1);
        expect_kind(&log, k, WEIR_EV_TICK, -1, 0);
        expect_time(&log, k, 100.0 * k);
    }
    ck_assert_int_eq(weir_source_pause(rt, r, 0), 0); /* at 300: paused for 300 ms */
    ck_assert_int_eq(weir_source_paused(rt, r), 0);
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 9);
    expect_kind(&log, 4, WEIR_EV_TICK, -1, 0);
    expect_line_at(&log, 5, r, "b", 2, 400); /* 100 + 300 */
    expect_kind(&log, 6, WEIR_EV_TICK, -1, 0);
    expect_line_at(&log, 7, r, "c", 3, 500);
    expect_kind(&log, 8, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_a_stop_ends_a_paused_replay)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t r = weir_source_replay(rt, "ab", 2);
    add_entry(rt, r, 0, 0, 1, 1);
    add_entry(rt, r, 100, 1, 1, 2);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    ck_assert_int_eq(weir_source_pause(rt, r, 1), 0);
    weir_rt_stop(rt);
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 3);
    expect_kind(&log, 1, WEIR_EV_STOP, -1, 0);
    expect_kind(&log, 2, WEIR_EV_END, r, WEIR_END_STOPPED);
    ck_assert_int_eq(weir_source_paused(rt, r), 0);
    ck_assert_int_eq(weir_source_pause(rt, r, 1), 0); /* a no-op once it ended */
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* A file paused behind a replay that has ended: no clocked source is left, yet the virtual clock
 * runs on to the next tick (where alignment's update resumes it) instead of failing with
 * "no source can make progress". */
START_TEST(test_the_clock_runs_on_to_a_tick_for_a_paused_file_after_the_replay_ended)
{
    char *path = temp_file("x\ny\n", 4);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t r = weir_source_replay(rt, "a", 1);
    add_entry(rt, r, 0, 0, 1, 1);
    int32_t f = weir_source_file(rt, path, NULL, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pause(rt, f, 1), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    expect_line_at(&log, 0, r, "a", 1, 0);
    expect_kind(&log, 1, WEIR_EV_END, r, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 2, 100);
    ck_assert_int_eq(weir_source_pause(rt, f, 0), 0);
    run_to_end(rt, &log, 16);
    ck_assert_int_eq(log.n, 6);
    expect_line_at(&log, 3, f, "x", 1, 100);
    expect_line_at(&log, 4, f, "y", 2, 100);
    expect_kind(&log, 5, WEIR_EV_END, f, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

static Suite *source_replay_suite(void)
{
    Suite *s = suite_create("source_replay");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"trailing_time_only_entry_runs_clock",
         test_trailing_time_only_entry_runs_the_clock_before_the_end, 0},
        {"replay_entries_must_not_go_back", test_replay_entries_must_not_go_back_in_time, 0},
        {"pending_replay_quiet_until_next_line_due",
         test_replay_is_quiet_until_its_next_line_is_due, 0},
        {"position_and_clock_restore_continue_same_way",
         test_replay_position_and_clock_restore_continue_the_same_way, 0},
        {"held_replay_delivers_only_what_it_is_let_go",
         test_held_replay_delivers_only_what_it_is_let_go, 0},
        {"replay_end_drops_lines_not_delivered", test_replay_end_drops_the_lines_not_delivered, 0},
        {"paused_replay_waits_keeps_spacing",
         test_paused_replay_waits_and_keeps_its_spacing_after_the_resume, 0},
        {"stop_ends_paused_replay", test_a_stop_ends_a_paused_replay, 0},
        {"clock_runs_to_tick_for_paused_file",
         test_the_clock_runs_on_to_a_tick_for_a_paused_file_after_the_replay_ended, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_replay_suite());
}
