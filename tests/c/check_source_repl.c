/* SPDX-License-Identifier: MIT */
/* check_source_repl.c: the REPL's input as a source delivered alone (source_repl.c): plain input
 * (a pipe or a file on the REPL's descriptor, through wr_source_repl_open_fd), one line per
 * poll, read ahead carried to the next REPL, and SIGINT in REPL mode. Line editing needs a
 * terminal and is not tested here. */
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
#include "source_repl.h"
#include "weir.h"

/* ---- event log -------------------------------------------------------------------------- */

/* A REPL reading the read end of a fresh pipe; returns the write end. */
static int open_pipe_repl(weir_rt_t *rt)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fds[0], 0, NULL), 0);
    close(fds[0]); /* the REPL has its own duplicate */
    return fds[1];
}

/* ---- plain REPL input ------------------------------------------------------------------- */

START_TEST(test_piped_lines_come_one_per_poll_in_order_last_unterminated_then_eof)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int w = open_pipe_repl(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    write_all(w, "one\ntwo\r\n\nthree");
    close(w);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "one");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 1, "two");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 2, ""); /* an empty line is a line */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 3, "three");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0); /* no sources and no more input */
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_poll_waits_for_input_that_arrives_later)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    int w = open_pipe_repl(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        usleep(50 * 1000); /* let the parent block in poll */
        write_all(w, "late\n");
        _exit(0);
    }
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "late");
    waitpid(child, NULL, 0);
    close(w);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* Lua's reaction to a line (records it pushes, an advance) is delivered before the next line:
 * input is taken only when nothing else is ready. */
START_TEST(test_next_line_waits_until_pushed_records_and_advance_are_delivered)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_set_tick(rt, 100), 0);
    int32_t m = weir_source_manual(rt);
    int w = open_pipe_repl(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    write_all(w, "push\nadvance\nlast\n");
    close(w);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "push");
    expect_time(&log, 0, 0); /* a REPL alone never moves the clock */
    push(rt, m, "r1");
    push(rt, m, "r2");
    ck_assert_int_eq(poll_once(rt, &log, 16), 2);
    expect_line_at(&log, 1, m, "r1", 1, 0);
    expect_line_at(&log, 2, m, "r2", 2, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 3, "advance");
    ck_assert_int_eq(weir_rt_advance(rt, 250), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 4, 100);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 5, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 5, 200);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 6, "last");
    expect_time(&log, 6, 250);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 7, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0); /* the manual source never waits */
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 250);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_input_from_a_regular_file_is_read_as_lines)
{
    char path[] = "/tmp/weir-check-repl-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    write_all(fd, "x\ny\n");
    ck_assert_int_eq((int)lseek(fd, 0, SEEK_SET), 0);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fd, 1, NULL), 0); /* not a terminal: plain lines */
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fd, 0, NULL), WEIR_ESTATE);
    close(fd);
    unlink(path);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "x");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 1, "y");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* The REPL cuts lines as every text source does (wr_source_next_line): an overlong line of a
 * regular file (read with the file source's wr_source_file_read, in several chunks) is skipped,
 * the first one is reported once, and the lines around it arrive. */
START_TEST(test_overlong_input_line_is_skipped_and_reported_once)
{
    enum { LONG = (1 << 20) + 100 };
    char *text = malloc(2 * LONG + 16);
    size_t n = 0;
    n += (size_t)sprintf(text + n, "a\n");
    memset(text + n, 'x', LONG);
    n += LONG;
    text[n++] = '\n';
    memset(text + n, 'y', LONG);
    n += LONG;
    n += (size_t)sprintf(text + n, "\nb\n");
    char *path = temp_file(text, n);
    free(text);
    int fd = open(path, O_RDONLY);
    ck_assert_int_ge(fd, 0);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fd, 0, NULL), 0);
    close(fd);
    capture_t cap;
    capture_stderr(&cap);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "a");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 1, "b");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    char *err = captured(&cap);
    ck_assert_str_eq(err, "weir: repl: line 2: record longer than 1048576 bytes dropped\n");
    free(err);
    log_free(&log);
    weir_rt_free(rt);
    drop_file(path);
}
END_TEST

/* Lua switches runtimes (a bare one between jobs, then the job's): lines one REPL read ahead
 * reach the next REPL on the same input, and input from elsewhere gets none of them. */
static void check_switch_keeps_read_ahead_lines(int fd)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fd, 0, NULL), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "a");
    weir_rt_free(rt);

    int other[2];
    ck_assert_int_eq(pipe(other), 0);
    close(other[1]);
    rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, other[0], 0, NULL), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    weir_rt_free(rt);
    close(other[0]);

    rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fd, 0, NULL), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 2, "b");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 3, "c");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    log_free(&log);
    weir_rt_free(rt);
}

START_TEST(test_lines_read_ahead_reach_the_next_repl_on_the_same_pipe)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    write_all(fds[1], "a\nb\nc");
    close(fds[1]);
    check_switch_keeps_read_ahead_lines(fds[0]);
    close(fds[0]);
}
END_TEST

START_TEST(test_lines_read_ahead_reach_the_next_repl_on_the_same_file)
{
    char path[] = "/tmp/weir-check-repl-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    write_all(fd, "a\nb\nc\n");
    ck_assert_int_eq((int)lseek(fd, 0, SEEK_SET), 0);
    unlink(path);
    check_switch_keeps_read_ahead_lines(fd);
    close(fd);
}
END_TEST

START_TEST(test_prompt_and_words_are_kept_before_and_after_open)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    static const char words[] = "weir.windows.tumbling\0env:from_elements\0";
    ck_assert_int_eq(weir_repl_set_words(rt, words, sizeof words - 1), 0);
    ck_assert_int_eq(weir_repl_prompt(rt, "weir> "), 0);
    ck_assert_int_eq(weir_repl_prompt(rt, NULL), 0);
    ck_assert_int_eq(weir_repl_set_words(rt, NULL, 3), WEIR_EINVAL);
    ck_assert_int_eq(weir_repl_set_words(rt, NULL, 0), 0);
    ck_assert_int_eq(weir_repl_interrupted(rt), 0);
    int w = open_pipe_repl(rt);
    ck_assert_int_eq(weir_repl_prompt(rt, "... "), 0); /* no terminal: kept, never shown */
    ck_assert_int_eq(weir_repl_set_words(rt, words, sizeof words), 0);
    close(w);
    weir_rt_free(rt);
    ck_assert_int_eq(weir_repl_prompt(NULL, "x"), WEIR_EINVAL);
    ck_assert_int_eq(weir_repl_open(NULL, 0, NULL), WEIR_EINVAL);
}
END_TEST

/* ---- SIGINT in REPL mode ---------------------------------------------------------------- */

START_TEST(test_sigint_between_polls_sets_the_interrupted_flag_once_and_does_not_stop)
{
    struct sigaction before;
    sigaction(SIGINT, NULL, &before);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t m = weir_source_manual(rt);
    int w = open_pipe_repl(rt); /* before start: start installs the handler in REPL mode */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    write_all(w, "slow command\nnext\n");
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 0, "slow command");
    raise(SIGINT); /* while Lua runs the command */
    ck_assert_int_eq(weir_repl_interrupted(rt), 1);
    ck_assert_int_eq(weir_repl_interrupted(rt), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1); /* no STOP */
    expect_input(&log, 1, "next");

    /* one Lua did not take becomes an INTERRUPT event at the next poll */
    raise(SIGINT);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_INPUT, -1, WEIR_INPUT_INTERRUPT);
    ck_assert_int_eq(weir_repl_interrupted(rt), 0);

    /* after EOF the REPL reads no more and SIGINT stops the job again */
    close(w);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 3, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    raise(SIGINT);
    ck_assert_int_eq(weir_repl_interrupted(rt), 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 4, WEIR_EV_STOP, -1, 0);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 5, WEIR_EV_END, m, WEIR_END_STOPPED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    log_free(&log);
    weir_rt_free(rt);
    struct sigaction after;
    sigaction(SIGINT, NULL, &after);
    ck_assert_ptr_eq((void *)after.sa_handler, (void *)before.sa_handler);
}
END_TEST

START_TEST(test_sigint_at_the_prompt_yields_one_interrupt_event)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    int w = open_pipe_repl(rt); /* after start: open switches SIGINT to the REPL */
    pid_t parent = getpid();
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        usleep(50 * 1000); /* let the parent block in poll, waiting for input */
        kill(parent, SIGINT);
        _exit(0);
    }
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_INPUT, -1, WEIR_INPUT_INTERRUPT);
    waitpid(child, NULL, 0);
    ck_assert_int_eq(weir_repl_interrupted(rt), 0); /* it was at the prompt, not a command */
    write_all(w, "still here\n");
    close(w);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_input(&log, 1, "still here");
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_INPUT, -1, WEIR_INPUT_EOF);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_sigterm_still_stops_a_repl_job)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t m = weir_source_manual(rt);
    int w = open_pipe_repl(rt);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    raise(SIGTERM);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 0, WEIR_EV_STOP, -1, 0);
    write_all(w, "ignored\n"); /* the REPL reads no more after STOP */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_END, m, WEIR_END_STOPPED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    close(w);
    log_free(&log);
    weir_rt_free(rt);
}
END_TEST

/* In a child: three Ctrl-Cs in REPL mode that Lua never takes. */
static void raise_three_untaken_sigints(void)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int p[2];
    if (pipe(p) != 0 || wr_source_repl_open_fd(rt, p[0], 0, NULL) != 0 ||
        weir_rt_start(rt) != 0) {
        _exit(5);
    }
    raise(SIGINT);
    raise(SIGINT); /* Lua is stuck: two untaken are survived */
    raise(SIGINT);
}

START_TEST(test_third_untaken_sigint_exits_with_a_message)
{
    expect_child_exits_interrupted_again(raise_three_untaken_sigints);
}
END_TEST

static Suite *source_repl_suite(void)
{
    Suite *s = suite_create("source_repl");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"piped_lines_one_per_poll_last_unterminated_then_eof",
         test_piped_lines_come_one_per_poll_in_order_last_unterminated_then_eof, 0},
        {"poll_waits_for_later_input", test_poll_waits_for_input_that_arrives_later, 0},
        {"next_line_after_pushed_records_and_advance",
         test_next_line_waits_until_pushed_records_and_advance_are_delivered, 0},
        {"regular_file_input_read_as_lines", test_input_from_a_regular_file_is_read_as_lines, 0},
        {"overlong_input_line_skipped_reported_once",
         test_overlong_input_line_is_skipped_and_reported_once, 0},
        {"read_ahead_lines_reach_next_repl_same_pipe",
         test_lines_read_ahead_reach_the_next_repl_on_the_same_pipe, 0},
        {"read_ahead_lines_reach_next_repl_same_file",
         test_lines_read_ahead_reach_the_next_repl_on_the_same_file, 0},
        {"prompt_and_words_kept_before_after_open",
         test_prompt_and_words_are_kept_before_and_after_open, 0},
        {"sigint_between_polls_flag_once_no_stop",
         test_sigint_between_polls_sets_the_interrupted_flag_once_and_does_not_stop, 0},
        {"sigint_at_prompt_one_interrupt_event",
         test_sigint_at_the_prompt_yields_one_interrupt_event, 0},
        {"sigterm_still_stops_repl_job", test_sigterm_still_stops_a_repl_job, 0},
        {"third_untaken_sigint_exits_with_message",
         test_third_untaken_sigint_exits_with_a_message, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_repl_suite());
}
