/* SPDX-License-Identifier: MIT */
/* check_repl.c: what the REPL adds to weir_loop_poll: the manual source, weir_rt_advance on the
 * virtual clock, plain REPL input (a pipe or a file on the REPL's descriptor, through
 * wr_repl_open_fd) and SIGINT in REPL mode. Line editing needs a terminal and is not tested
 * here. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_support.h"
#include "source_repl.h"
#include "weir.h"

/* ---- event log ------------------------------------------------------------------------- */

enum { TEXT_MAX = 48 };

typedef struct ev {
    int32_t kind;
    int32_t source;
    int32_t len;
    int32_t flags;
    double index;
    double time;
    char text[TEXT_MAX];
} ev_t;

typedef struct evlog {
    ev_t ev[256];
    int n;
} evlog_t;

/* One poll; its events are appended to log. Returns what poll returned. */
static int32_t poll_once(weir_rt_t *rt, evlog_t *log, int32_t max)
{
    weir_event_t b[64];
    ck_assert_int_le(max, 64);
    int32_t n = weir_loop_poll(rt, b, max);
    for (int32_t i = 0; i < n; i++) {
        ck_assert_int_lt(log->n, 256);
        ev_t *e = &log->ev[log->n++];
        memset(e, 0, sizeof *e);
        e->kind = b[i].kind;
        e->source = b[i].source;
        e->len = b[i].len;
        e->flags = b[i].flags;
        e->index = b[i].index;
        e->time = b[i].time_ms;
        if (b[i].ptr != NULL) {
            size_t k = b[i].len < TEXT_MAX - 1 ? (size_t)b[i].len : TEXT_MAX - 1;
            memcpy(e->text, b[i].ptr, k);
        }
    }
    return n;
}

static void expect_line(const evlog_t *log, int i, int32_t src, const char *text, double index,
                        double time)
{
    ck_assert_int_lt(i, log->n);
    const ev_t *e = &log->ev[i];
    ck_assert_msg(e->kind == WEIR_EV_LINE, "event %d: kind %d, want LINE", i, (int)e->kind);
    ck_assert_int_eq(e->source, src);
    ck_assert_str_eq(e->text, text);
    ck_assert_int_eq((int)e->len, (int)strlen(text));
    ck_assert_int_eq((int64_t)e->index, (int64_t)index);
    ck_assert_int_eq((int64_t)e->time, (int64_t)time);
}

static void expect_kind(const evlog_t *log, int i, int32_t kind, int32_t src, int32_t flags)
{
    ck_assert_int_lt(i, log->n);
    const ev_t *e = &log->ev[i];
    ck_assert_msg(e->kind == kind, "event %d: kind %d, want %d", i, (int)e->kind, (int)kind);
    ck_assert_int_eq(e->source, src);
    ck_assert_int_eq(e->flags, flags);
}

static void expect_time(const evlog_t *log, int i, double t)
{
    ck_assert_int_lt(i, log->n);
    ck_assert_int_eq((int64_t)log->ev[i].time, (int64_t)t);
}

static void expect_input(const evlog_t *log, int i, const char *text)
{
    expect_kind(log, i, WEIR_EV_INPUT, -1, WEIR_INPUT_LINE);
    ck_assert_str_eq(log->ev[i].text, text);
    ck_assert_int_eq((int)log->ev[i].len, (int)strlen(text));
}

static void push(weir_rt_t *rt, int32_t src, const char *text)
{
    ck_assert_int_eq(weir_manual_push(rt, src, text, strlen(text)), 0);
}

static void write_all(int fd, const char *text)
{
    size_t len = strlen(text);
    ck_assert_int_eq((int)write(fd, text, len), (int)len);
}

/* A REPL reading the read end of a fresh pipe; returns the write end. */
static int open_pipe_repl(weir_rt_t *rt)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_int_eq(wr_source_repl_open_fd(rt, fds[0], 0, NULL), 0);
    close(fds[0]); /* the REPL has its own duplicate */
    return fds[1];
}

/* ---- the manual source ----------------------------------------------------------------- */

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
    expect_line(&log, 0, m, "early", 1, 5000);
    expect_line(&log, 1, m, "a", 2, 5000);
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
    expect_line(&log, 1, m, "a", 1, log.ev[1].time);
    expect_kind(&log, 2, WEIR_EV_END, m, WEIR_END_STOPPED);
    ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    weir_rt_free(rt);
}
END_TEST

/* ---- weir_rt_advance ------------------------------------------------------------------- */

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
    expect_line(&log, 0, m, "x", 1, 1000);
    for (int k = 0; k < 3; k++) {
        ck_assert_int_eq(poll_once(rt, &log, 16), 0);
    }
    ck_assert_int_eq((int64_t)weir_rt_now(rt), 1000); /* no TICK, no TIMER */
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
    expect_line(&log, 0, m, "before", 1, 1000);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 1, WEIR_EV_TICK, -1, 0);
    expect_time(&log, 1, 1100);
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_kind(&log, 2, WEIR_EV_TIMER, -1, 0);
    expect_time(&log, 2, 1150);
    push(rt, m, "mid"); /* as Lua would, reacting to the timer */
    ck_assert_int_eq(poll_once(rt, &log, 16), 1);
    expect_line(&log, 3, m, "mid", 2, 1150);
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
    expect_line(&log, 1, r, "a", 1, 1500);
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
    weir_rt_free(rt);
}
END_TEST

/* ---- plain REPL input ------------------------------------------------------------------ */

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
    expect_line(&log, 1, m, "r1", 1, 0);
    expect_line(&log, 2, m, "r2", 2, 0);
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
    weir_rt_free(rt);
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

/* ---- SIGINT in REPL mode --------------------------------------------------------------- */

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
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_third_untaken_sigint_exits_with_a_message)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
        int p[2];
        if (pipe(p) != 0 || wr_source_repl_open_fd(rt, p[0], 0, NULL) != 0 ||
            weir_rt_start(rt) != 0) {
            _exit(5);
        }
        raise(SIGINT);
        raise(SIGINT); /* Lua is stuck: two untaken are survived */
        raise(SIGINT);
        _exit(7); /* not reached */
    }
    close(fds[1]);
    char buf[256] = {0};
    size_t got = 0;
    ssize_t r;
    while ((r = read(fds[0], buf + got, sizeof buf - 1 - got)) > 0) {
        got += (size_t)r;
    }
    close(fds[0]);
    int status = 0;
    waitpid(child, &status, 0);
    ck_assert(WIFEXITED(status));
    ck_assert_int_eq(WEXITSTATUS(status), 1);
    ck_assert_str_eq(buf, "weir: interrupted again, exiting\n");
}
END_TEST

static Suite *repl_suite(void)
{
    Suite *s = suite_create("repl");
    const check_case_t cases[] = {
        {"manual_pushes_in_order_at_reading_close_ends",
         test_manual_pushes_arrive_in_order_at_the_clock_reading_then_close_ends},
        {"manual_pending_while_queued", test_manual_is_pending_while_records_are_queued},
        {"manual_rejects_other_sources_bad_records",
         test_manual_rejects_other_sources_and_bad_records},
        {"manual_after_stop_drains_ends_stopped",
         test_manual_after_stop_drains_then_ends_stopped},
        {"virtual_manual_only_does_not_move_without_advance",
         test_virtual_manual_only_runtime_does_not_move_without_advance},
        {"advance_timer_due_plus_1_ticks_in_order_stops_at_target",
         test_advance_delivers_timer_at_due_plus_1_and_ticks_in_order_then_stops_at_target},
        {"advance_needs_virtual_clock_target_not_behind",
         test_advance_needs_the_virtual_clock_and_a_target_not_behind},
        {"replay_as_before_advance_past_its_end",
         test_replay_runs_as_before_and_advance_continues_past_its_end},
        {"piped_lines_one_per_poll_last_unterminated_then_eof",
         test_piped_lines_come_one_per_poll_in_order_last_unterminated_then_eof},
        {"poll_waits_for_later_input", test_poll_waits_for_input_that_arrives_later},
        {"next_line_after_pushed_records_and_advance",
         test_next_line_waits_until_pushed_records_and_advance_are_delivered},
        {"regular_file_input_read_as_lines", test_input_from_a_regular_file_is_read_as_lines},
        {"read_ahead_lines_reach_next_repl_same_pipe",
         test_lines_read_ahead_reach_the_next_repl_on_the_same_pipe},
        {"read_ahead_lines_reach_next_repl_same_file",
         test_lines_read_ahead_reach_the_next_repl_on_the_same_file},
        {"prompt_and_words_kept_before_after_open",
         test_prompt_and_words_are_kept_before_and_after_open},
        {"sigint_between_polls_flag_once_no_stop",
         test_sigint_between_polls_sets_the_interrupted_flag_once_and_does_not_stop},
        {"sigint_at_prompt_one_interrupt_event",
         test_sigint_at_the_prompt_yields_one_interrupt_event},
        {"sigterm_still_stops_repl_job", test_sigterm_still_stops_a_repl_job},
        {"third_untaken_sigint_exits_with_message",
         test_third_untaken_sigint_exits_with_a_message},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(repl_suite());
}
