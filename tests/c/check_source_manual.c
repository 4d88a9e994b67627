/* SPDX-License-Identifier: MIT */
/* check_source_manual.c: the manual source (source_manual.c): pushes in order at the clock
 * reading, close, pending, bad records, and stop. */
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

/* ---- the manual source ------------------------------------------------------------------ */

START_TEST(test_manual_pushes_arrive_in_order_at_the_clock_reading_then_close_ends)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 5000);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(m, 0);
    ck_assert_str_eq(weir_source_describe(rt, m), "manual");
    push(rt, m, "early"); /* before start: waits for the first poll */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    push(rt, m, "a");
    ck_assert_int_eq(weir_manual_push(rt, m, "b\0c", 3), 0); /* any bytes */
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 2), 2); /* a batch of 2: b waits for the next poll */
    expect_line_at(&log, 0, m, "early", 1, 5000);
    expect_line_at(&log, 1, m, "a", 2, 5000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    ck_assert_int_eq(log.ev[2].len, 3);
    ck_assert_int_eq((int64_t)log.ev[2].index, 3);

    /* records handed out stay put while Lua pushes more (ASan checks the bytes) */
    weir_event_t b[4];
    push(rt, m, "d");
    ck_assert_int_eq(weir_loop_poll(rt, b, 4), 1);
    for (int k = 0; k < 64; k++) {
        push(rt, m, "more");
    }
    ck_assert_int_eq(memcmp(b[0].ptr, "d", 1), 0);
    ck_assert_int_eq(weir_manual_close(rt, m), 0);
    ck_assert_int_eq(weir_manual_close(rt, m), 0); /* again: no change */
    ck_assert_int_eq(weir_manual_push(rt, m, "x", 1), WEIR_ESTATE);

    int got = 0;
    int32_t n;
    while ((n = weir_loop_poll(rt, b, 4)) > 0) {
        for (int32_t i = 0; i < n; i++) {
            if (b[i].kind == WEIR_EV_LINE) {
                ck_assert_int_eq((int64_t)b[i].index, 5 + got);
                got++;
            } else {
                ck_assert_int_eq(b[i].kind, WEIR_EV_END);
                ck_assert_int_eq(b[i].flags, WEIR_END_EXHAUSTED);
                ck_assert_int_eq(got, 64); /* after every queued record */
            }
        }
    }
    ck_assert_int_eq(n, 0);
    ck_assert_int_eq((int)weir_source_stat(rt, m, WEIR_STAT_RECORDS), 68);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_manual_is_pending_while_records_are_queued)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pending(rt, m), 0);
    push(rt, m, "a");
    push(rt, m, "b");
    ck_assert_int_eq(weir_source_pending(rt, m), 1);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    ck_assert_int_eq(weir_source_pending(rt, m), 1); /* b is still queued */
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    ck_assert_int_eq(weir_source_pending(rt, m), 0);
    ck_assert_int_eq(poll_once(rt, &log, 1), 0); /* nothing to wait for: no blocking */
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_manual_rejects_other_sources_and_bad_records)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t g = weir_source_generate(rt, 1, 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_manual_push(rt, g, "a", 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_manual_push(rt, 7, "a", 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_manual_close(rt, g), WEIR_EINVAL);
    ck_assert_int_eq(weir_manual_push(rt, m, NULL, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_manual_push(rt, m, NULL, 0), 0); /* an empty record */
    ck_assert_int_eq(weir_manual_push(NULL, m, "a", 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_manual(rt), WEIR_ESTATE);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_manual_after_stop_drains_then_ends_stopped)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    push(rt, m, "a");
    weir_rt_stop(rt);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_STOP, -1, 0);
    ck_assert_int_eq(weir_manual_push(rt, m, "b", 1), WEIR_ESTATE);
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    expect_line_at(&log, 1, m, "a", 1, log.ev[1].time);
    expect_kind(&log, 2, WEIR_EV_END, m, WEIR_END_STOPPED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* A checkpoint's position is the records delivered; a restore numbers the next one after them. */
START_TEST(test_manual_position_and_seek_continue_the_numbering)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int32_t m = weir_source_manual(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    push(rt, m, "a");
    push(rt, m, "bc");
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    weir_source_position_t pos;
    ck_assert_int_eq(weir_source_position(rt, m, &pos), 0);
    ck_assert_int_eq((int64_t)pos.offset, 2);
    ck_assert_int_eq(pos.replayable, 1);
    ck_assert_int_eq((int64_t)pos.bytes, 3);
    ck_assert_int_eq(weir_source_seek(rt, m, &pos), WEIR_ESTATE); /* only before the start */
    log_free(&log);
    weir_rt_free(rt);

    rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    m = weir_source_manual(rt);
    weir_source_position_t bad = pos;
    bad.offset = -1;
    ck_assert_int_eq(weir_source_seek(rt, m, &bad), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_seek(rt, m, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    push(rt, m, "d");
    evlog_t log2 = {0};
    ck_assert_int_eq(poll_once(rt, &log2, 16), 1);
    expect_line_at(&log2, 0, m, "d", 3, 0);
    ck_assert_int_eq((int)weir_source_stat(rt, m, WEIR_STAT_RECORDS), 3);
    ck_assert_int_eq((int)weir_source_stat(rt, m, WEIR_STAT_BYTES), 4);
    log_free(&log2);
    weir_rt_free(rt);
}
END_TEST

static Suite *source_manual_suite(void)
{
    Suite *s = suite_create("source_manual");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"manual_pushes_in_order_at_reading_close_ends",
         test_manual_pushes_arrive_in_order_at_the_clock_reading_then_close_ends, 0},
        {"manual_pending_while_queued", test_manual_is_pending_while_records_are_queued, 0},
        {"manual_rejects_other_sources_bad_records",
         test_manual_rejects_other_sources_and_bad_records, 0},
        {"manual_after_stop_drains_ends_stopped",
         test_manual_after_stop_drains_then_ends_stopped, 0},
        {"manual_position_seek_continue_numbering",
         test_manual_position_and_seek_continue_the_numbering, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_manual_suite());
}
