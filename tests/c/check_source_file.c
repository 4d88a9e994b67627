/* SPDX-License-Identifier: MIT */
/* check_source_file.c: the file source (read_text_file, source_file.c): lines in order, batches
 * of max, overlong lines, delimiters, a missing file, when it counts as pending, and
 * watermark alignment's pause. */
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

/* ---- file source ------------------------------------------------------------------------ */

START_TEST(test_file_lines_arrive_in_order_then_end_exhausted)
{
    static const char text[] = "one\ntwo\r\n\nthree";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    expect_line(&log, 0, 0, "one", 1, 0);
    expect_line(&log, 1, 0, "two", 2, 0);
    expect_line(&log, 2, 0, "", 3, 0);
    expect_line(&log, 3, 0, "three", 4, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 4, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECORDS), 4);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_BYTES), (int)sizeof text - 1);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_DROPPED), 0);
    ck_assert_int_eq(weir_loop_poll(rt, (weir_event_t[1]){{0}}, 1), 0); /* stays at 0 */
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

/* Watermark alignment: a paused file reads nothing more (its read loop does not run: a poll
 * that would read it returns nothing), and goes on where it was after the resume. */
START_TEST(test_a_paused_file_reads_nothing_until_the_resume)
{
    static const char text[] = "one\ntwo\nthree\n";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    ck_assert_int_eq(weir_source_pause(rt, 0, 1), 0);
    weir_event_t ev[8];
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* still waiting: it is held, not done */
    ck_assert_int_eq(weir_source_pause(rt, 0, 0), 0);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 0, 0, "one", 1, 0);
    expect_line(&log, 1, 0, "two", 2, 0);
    expect_line(&log, 2, 0, "three", 3, 0);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

START_TEST(test_big_file_comes_in_batches_of_max)
{
    enum { LINES = 100000 };
    char *text = malloc(LINES * 7 + 1);
    for (int i = 0; i < LINES; i++) {
        char line[16];
        snprintf(line, sizeof line, "%06d\n", i % 1000000);
        memcpy(text + i * 7, line, 7);
    }
    char *path = temp_file(text, LINES * 7);
    free(text);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, "\n", 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    weir_event_t batch[WEIR_BATCH_MAX];
    int seen = 0;
    int ended = 0;
    for (;;) {
        int32_t n = weir_loop_poll(rt, batch, WEIR_BATCH_MAX);
        ck_assert_int_ge(n, 0);
        if (n == 0) {
            break;
        }
        if (seen + WEIR_BATCH_MAX <= LINES) {
            ck_assert_int_eq(n, WEIR_BATCH_MAX); /* full batches while data lasts */
        }
        for (int32_t i = 0; i < n; i++) {
            if (batch[i].kind == WEIR_EV_END) {
                ended++;
                continue;
            }
            /* plain checks: a ck_assert per line would cost a syscall each */
            char want[16];
            snprintf(want, sizeof want, "%06d", seen);
            if (batch[i].kind != WEIR_EV_LINE || batch[i].len != 6 ||
                memcmp(batch[i].ptr, want, 6) != 0 || (int)batch[i].index != seen + 1) {
                ck_abort_msg("line %d is wrong", seen); /* every pointer must still be valid */
            }
            seen++;
        }
    }
    ck_assert_int_eq(seen, LINES);
    ck_assert_int_eq(ended, 1);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

START_TEST(test_missing_file_fails_start_naming_the_path)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, "/nonexistent/weir/words.txt", NULL, 0), 0);
    int rc = weir_rt_start(rt);
    ck_assert_int_lt(rc, 0);
    ck_assert_str_eq(weir_rt_error(rt),
                     "read_text_file /nonexistent/weir/words.txt: no such file or directory");
    ck_assert_str_eq(weir_strerror(rc), "no such file or directory");
    weir_event_t b[4];
    ck_assert_int_eq(weir_loop_poll(rt, b, 4), rc); /* the job stays failed */
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_overlong_lines_are_dropped_counted_and_reported_once)
{
    static const char text[] = "ok\nxxxxxxxxxxxxxxxxxxxx\nalso\nyyyyyyyyyyyyyyyyyyyyyyyyy\nend\n";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 8), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    capture_t cap;
    capture_stderr(&cap);
    run_to_end(rt, &log, 64);
    char *err = captured(&cap);
    char want[256];
    snprintf(want, sizeof want,
             "weir: read_text_file %s: line 2: record longer than 8 bytes dropped\n", path);
    ck_assert_str_eq(err, want);
    free(err);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 0, 0, "ok", 1, 0);
    expect_line(&log, 1, 0, "also", 3, 0);
    expect_line(&log, 2, 0, "end", 5, 0);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_DROPPED), 2);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECORDS), 3);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

START_TEST(test_file_with_multi_byte_delimiter_and_nul_bytes)
{
    static const char text[] = "a\0b||c\n||||d|";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, "||", 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    ck_assert_int_eq(log.ev[0].len, 3);
    ck_assert_mem_eq(log.ev[0].text, "a\0b", 3);
    expect_line(&log, 1, 0, "c\n", 2, 0);
    expect_line(&log, 2, 0, "", 3, 0);
    expect_line(&log, 3, 0, "d|", 4, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 4, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

/* ---- pending input ---------------------------------------------------------------------- */

START_TEST(test_file_is_pending_until_eof)
{
    char *path = temp_file("a\nb\n", 4);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* not started: nothing is read */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* "b" buffered */
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_line(&log, 1, 0, "b", 2, 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* nothing buffered, EOF not yet seen */
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_kind(&log, 2, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

/* A checkpoint between polls: the position is the first byte not cut into a delivered line,
 * and a new runtime seeked there delivers the rest with the same line numbers. */
START_TEST(test_file_position_and_seek_continue_after_the_last_delivered_line)
{
    static const char text[] = "l1\nl2\nl3\nl4\nl5\ntail";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 3), 3);
    weir_source_position_t pos;
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_source_position(rt, 5, &pos), WEIR_EINVAL);
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    ck_assert(pos.offset == 9 && pos.line == 3 && pos.records == 3);
    ck_assert_int_eq(pos.replayable, 1);
    ck_assert_int_eq(pos.ended, 0);
    ck_assert(pos.check >= 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), WEIR_ESTATE); /* started */
    weir_rt_free(rt);
    log_free(&log);

    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 0, 0, "l4", 4, 0);
    expect_line(&log, 1, 0, "l5", 5, 0);
    expect_line(&log, 2, 0, "tail", 6, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECORDS), 6);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_BYTES), (int)sizeof text - 1);
    weir_source_position_t end;
    ck_assert_int_eq(weir_source_position(rt, 0, &end), 0);
    ck_assert(end.offset == sizeof text - 1 && end.ended == 1);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

START_TEST(test_file_seek_refuses_a_changed_or_shorter_file)
{
    static const char text[] = "l1\nl2\nl3\n";
    char *path = temp_file(text, sizeof text - 1);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 2), 2);
    weir_source_position_t pos;
    ck_assert_int_eq(weir_source_position(rt, 0, &pos), 0);
    weir_rt_free(rt);
    log_free(&log);

    FILE *f = fopen(path, "r+");
    fputs("X", f); /* a byte before the offset */
    fclose(f);
    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "the file changed"));
    weir_rt_free(rt);

    ck_assert_int_eq(truncate(path, 2), 0);
    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_file(rt, path, NULL, 0), 0);
    ck_assert_int_eq(weir_source_seek(rt, 0, &pos), 0);
    ck_assert_int_eq(weir_rt_start(rt), WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "the file has 2 bytes, the checkpoint read 6"));
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

static Suite *source_file_suite(void)
{
    Suite *s = suite_create("source_file");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"file_lines_in_order_then_end", test_file_lines_arrive_in_order_then_end_exhausted, 0},
        {"paused_file_reads_nothing_until_resume",
         test_a_paused_file_reads_nothing_until_the_resume, 0},
        {"big_file_comes_in_batches_of_max", test_big_file_comes_in_batches_of_max, 0},
        {"missing_file_fails_start_naming_path", test_missing_file_fails_start_naming_the_path, 0},
        {"overlong_lines_dropped_counted_reported_once",
         test_overlong_lines_are_dropped_counted_and_reported_once, 0},
        {"file_multi_byte_delimiter_and_nul", test_file_with_multi_byte_delimiter_and_nul_bytes, 0},
        {"pending_file_until_eof", test_file_is_pending_until_eof, 0},
        {"position_and_seek_continue_after_last_delivered_line",
         test_file_position_and_seek_continue_after_the_last_delivered_line, 0},
        {"seek_refuses_changed_or_shorter_file", test_file_seek_refuses_a_changed_or_shorter_file,
         0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_file_suite());
}
