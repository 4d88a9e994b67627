/* SPDX-License-Identifier: MIT */
/* check_source_stdin.c: the stdin source (source_stdin.c over source_file.c): a pipe and a
 * regular file on descriptor 0, when a pipe counts as pending, and watermark alignment's pause. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_events.h"
#include "check_support.h"
#include "weir.h"

/* ---- stdin ------------------------------------------------------------------------------ */

/* Runs a stdin source with fd 0 replaced by fd; returns the log. */
static void run_stdin(int fd, evlog_t *log)
{
    int saved = dup(0);
    dup2(fd, 0);
    close(fd);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_stdin(rt, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    run_to_end(rt, log, 64);
    weir_rt_free(rt);
    dup2(saved, 0);
    close(saved);
}

START_TEST(test_stdin_pipe_is_read_to_its_end)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], "a\nb\r\nc", 6), 6);
    close(fds[1]);
    evlog_t log = {0};
    run_stdin(fds[0], &log);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 0, 0, "a", 1, 0);
    expect_line(&log, 1, 0, "b", 2, 0);
    expect_line(&log, 2, 0, "c", 3, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
}
END_TEST

START_TEST(test_stdin_regular_file_is_read_like_a_file)
{
    char *path = temp_file("x\ny\n", 4);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    evlog_t log = {0};
    run_stdin(fd, &log);
    ck_assert_int_eq(log.n, 3);
    expect_line(&log, 0, 0, "x", 1, 0);
    expect_line(&log, 1, 0, "y", 2, 0);
    expect_kind(&log, 2, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    drop_file(path);
}
END_TEST

/* ---- pending input ---------------------------------------------------------------------- */

START_TEST(test_stdin_pipe_pending_counts_pipe_bytes_and_the_last_half_line_at_eof)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], "a\n", 2), 2);
    int saved = dup(0);
    dup2(fds[0], 0);
    close(fds[0]);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_stdin(rt, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* the pipe is open and empty */
    ck_assert_int_eq(write(fds[1], "b\nc\nd\ne", 7), 7);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* in the pipe, not yet read */
    close(fds[1]);
    static const char *const want[] = {"b", "c", "d"};
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(poll_once(rt, &log, 1), 1);
        expect_line(&log, 1 + i, 0, want[i], 2 + i, 0);
        ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* after "d": "e" at EOF is a record */
    }
    ck_assert_int_eq(poll_once(rt, &log, 64), 2);
    expect_line(&log, 4, 0, "e", 5, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 5, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    log_free(&log);
    weir_rt_free(rt);
    dup2(saved, 0);
    close(saved);
}
END_TEST

/* Watermark alignment: a paused stdin pipe stops reading (uv_read_stop: the bytes stay in the
 * pipe) and delivers nothing, even at EOF; resumed, it reads them and ends. */
START_TEST(test_a_paused_stdin_pipe_leaves_the_bytes_in_the_pipe_until_the_resume)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(write(fds[1], "a\n", 2), 2);
    int saved = dup(0);
    dup2(fds[0], 0);
    close(fds[0]);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_stdin(rt, NULL, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    ck_assert_int_eq(weir_source_pause(rt, 0, 1), 0);
    ck_assert_int_eq(write(fds[1], "b\nc\n", 4), 4);
    close(fds[1]);
    weir_event_t ev[8];
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 0); /* runs the loop: reads nothing */
    int unread = 0;
    ck_assert_int_eq(ioctl(0, FIONREAD, &unread), 0);
    ck_assert_int_eq(unread, 4);
    ck_assert_int_eq(weir_source_pause(rt, 0, 0), 0);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 1, 0, "b", 2, 0);
    expect_line(&log, 2, 0, "c", 3, 0);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
    dup2(saved, 0);
    close(saved);
}
END_TEST

static Suite *source_stdin_suite(void)
{
    Suite *s = suite_create("source_stdin");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"stdin_pipe_read_to_end", test_stdin_pipe_is_read_to_its_end, 0},
        {"stdin_regular_file_read_like_file", test_stdin_regular_file_is_read_like_a_file, 0},
        {"pending_stdin_pipe_bytes_and_half_line_at_eof",
         test_stdin_pipe_pending_counts_pipe_bytes_and_the_last_half_line_at_eof, 0},
        {"paused_stdin_pipe_leaves_bytes_in_pipe",
         test_a_paused_stdin_pipe_leaves_the_bytes_in_the_pipe_until_the_resume, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_stdin_suite());
}
