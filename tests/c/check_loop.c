/* SPDX-License-Identifier: MIT */
/* check_loop.c: weir_loop_poll driving real sources: files, stdin, generators, replays on the
 * virtual clock, ticks and wakeups, stop and signals, pending input, and TCP against a server
 * on 127.0.0.1 in a thread of this process. Only the socket retry tests wait (the 500 ms retry
 * delay). */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check_support.h"
#include "loop.h"
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
    ev_t *ev;
    int n;
    int cap;
} evlog_t;

static void log_batch(evlog_t *log, const weir_event_t *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (log->n == log->cap) {
            log->cap = log->cap ? log->cap * 2 : 64;
            log->ev = realloc(log->ev, (size_t)log->cap * sizeof *log->ev);
        }
        ev_t *e = &log->ev[log->n++];
        memset(e, 0, sizeof *e);
        e->kind = b[i].kind;
        e->source = b[i].source;
        e->len = b[i].len;
        e->flags = b[i].flags;
        e->index = b[i].index;
        e->time = b[i].time_ms;
        if (b[i].kind == WEIR_EV_LINE) {
            size_t k = b[i].len < TEXT_MAX - 1 ? (size_t)b[i].len : TEXT_MAX - 1;
            memcpy(e->text, b[i].ptr, k);
        }
    }
}

static void log_free(evlog_t *log)
{
    free(log->ev);
    memset(log, 0, sizeof *log);
}

/* One poll; its events are appended to log. Returns what poll returned. */
static int32_t poll_once(weir_rt_t *rt, evlog_t *log, int32_t max)
{
    weir_event_t *b = calloc((size_t)max, sizeof *b);
    int32_t n = weir_loop_poll(rt, b, max);
    if (n > 0) {
        log_batch(log, b, n);
    }
    free(b);
    return n;
}

/* Polls until poll returns 0 (every source ended); a poll error fails the test. */
static void run_to_end(weir_rt_t *rt, evlog_t *log, int32_t max)
{
    for (;;) {
        int32_t n = poll_once(rt, log, max);
        ck_assert_msg(n >= 0, "poll failed (%d): %s", (int)n, weir_rt_error(rt));
        if (n == 0) {
            return;
        }
    }
}

static void expect_line(const evlog_t *log, int i, int32_t src, const char *text, double index,
                         int32_t flags)
{
    ck_assert_int_lt(i, log->n);
    const ev_t *e = &log->ev[i];
    ck_assert_msg(e->kind == WEIR_EV_LINE, "event %d: kind %d, want LINE", i, (int)e->kind);
    ck_assert_int_eq(e->source, src);
    ck_assert_str_eq(e->text, text);
    ck_assert_int_eq((int)e->len, (int)strlen(text));
    ck_assert_int_eq((int64_t)e->index, (int64_t)index);
    ck_assert_int_eq(e->flags, flags);
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

/* ---- files and stderr ------------------------------------------------------------------ */

static char *temp_file(const void *data, size_t len)
{
    char *path = strdup("/tmp/weir-check-loop-XXXXXX");
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    const char *p = data;
    while (len > 0) {
        ssize_t w = write(fd, p, len);
        ck_assert_int_gt(w, 0);
        p += w;
        len -= (size_t)w;
    }
    close(fd);
    return path;
}

static void drop_file(char *path)
{
    unlink(path);
    free(path);
}

typedef struct capture {
    int saved;
    char path[64];
} capture_t;

static void capture_stderr(capture_t *c)
{
    fflush(stderr);
    strcpy(c->path, "/tmp/weir-check-err-XXXXXX");
    int fd = mkstemp(c->path);
    ck_assert_int_ge(fd, 0);
    c->saved = dup(2);
    dup2(fd, 2);
    close(fd);
}

/* Restores stderr and returns what was written to it (caller frees). */
static char *captured(capture_t *c)
{
    fflush(stderr);
    dup2(c->saved, 2);
    close(c->saved);
    FILE *f = fopen(c->path, "rb");
    ck_assert_ptr_nonnull(f);
    char *buf = calloc(1, 4096);
    size_t n = fread(buf, 1, 4095, f);
    buf[n] = '\0';
    fclose(f);
    unlink(c->path);
    return buf;
}

/* ---- file source ----------------------------------------------------------------------- */

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

/* ---- runtime contract ------------------------------------------------------------------ */

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

/* ---- generate -------------------------------------------------------------------------- */

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

/* ---- the virtual clock ----------------------------------------------------------------- */

static void add_entry(weir_rt_t *rt, int32_t src, double t, int32_t off, int32_t len, int line)
{
    ck_assert_int_eq(weir_replay_add(rt, src, t, off, len, line), 0);
}

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

/* ---- the real clock -------------------------------------------------------------------- */

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

/* ---- stop and signals ------------------------------------------------------------------ */

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

START_TEST(test_second_signal_exits_at_once_with_a_message)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
        weir_source_generate(rt, -1, 0);
        weir_rt_start(rt);
        raise(SIGINT);
        raise(SIGTERM);
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

/* ---- stdin ----------------------------------------------------------------------------- */

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

/* ---- socket ---------------------------------------------------------------------------- */

/* A TCP server on 127.0.0.1 in a thread: each accepted connection gets one payload and is
 * closed; then, if asked, the listener closes so later connects are refused. */
typedef struct server {
    int listen_fd;
    int port;
    const char *const *payloads;
    int npayloads;
    int hold_last;      /* keep the last connection open until the client closes it */
    int close_listener; /* close the listener after the last connection */
    int big_lines;      /* > 0: a single connection gets this many "%07d\n" lines */
    atomic_int sent;    /* connections whose payload has been sent */
    pthread_t thread;
} server_t;

static void send_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            return;
        }
        p += w;
        n -= (size_t)w;
    }
}

static void *server_main(void *arg)
{
    server_t *s = arg;
    int conns = s->big_lines > 0 ? 1 : s->npayloads;
    for (int i = 0; i < conns; i++) {
        int fd = accept(s->listen_fd, NULL, NULL);
        if (fd < 0) {
            break;
        }
        if (s->big_lines > 0) {
            static char buf[8 * 8192];
            char line[16];
            size_t used = 0;
            for (int k = 0; k < s->big_lines; k++) {
                snprintf(line, sizeof line, "%07d\n", k % 10000000);
                memcpy(buf + used, line, 8);
                used += 8;
                if (used == sizeof buf || k == s->big_lines - 1) {
                    send_all(fd, buf, used);
                    used = 0;
                }
            }
        } else {
            send_all(fd, s->payloads[i], strlen(s->payloads[i]));
        }
        atomic_fetch_add(&s->sent, 1);
        if (s->hold_last && i == conns - 1) {
            char c;
            while (read(fd, &c, 1) > 0) {
            }
        }
        close(fd);
    }
    if (s->close_listener) {
        close(s->listen_fd);
        s->listen_fd = -1;
    }
    return NULL;
}

/* A socket bound to 127.0.0.1 on a free port; listening if listen_too. */
static int bound_socket(int *port, int listen_too)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    if (listen_too) {
        ck_assert_int_eq(listen(fd, 8), 0);
    }
    socklen_t len = sizeof a;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    *port = ntohs(a.sin_port);
    return fd;
}

static void server_start(server_t *s)
{
    s->listen_fd = bound_socket(&s->port, 1);
    ck_assert_int_eq(pthread_create(&s->thread, NULL, server_main, s), 0);
}

static void server_join(server_t *s)
{
    pthread_join(s->thread, NULL);
    if (s->listen_fd >= 0) {
        close(s->listen_fd);
    }
}

START_TEST(test_socket_lines_then_peer_close_end_exhausted_with_leftover)
{
    static const char *const payloads[] = {"a\nb\r\nc"};
    server_t srv = {.payloads = payloads, .npayloads = 1};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 4);
    expect_line(&log, 0, 0, "a", 1, 0);
    expect_line(&log, 1, 0, "b", 2, 0);
    expect_line(&log, 2, 0, "c", 3, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 3, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_BYTES), 6);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECONNECTS), 0);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_refused_initial_connect_fails_the_job)
{
    int port = 0;
    int fd = bound_socket(&port, 0); /* bound, not listening: connects are refused */
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", port, NULL, -1, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0); /* connecting is asynchronous */
    weir_event_t b[8];
    int32_t n = weir_loop_poll(rt, b, 8);
    ck_assert_int_eq(n, -ECONNREFUSED);
    char want[128];
    snprintf(want, sizeof want, "socket_text_stream 127.0.0.1:%d: connection refused", port);
    ck_assert_str_eq(weir_rt_error(rt), want);
    ck_assert_int_eq(weir_loop_poll(rt, b, 8), n); /* sticky, even with max_retry -1 */
    weir_rt_free(rt);
    close(fd);
}
END_TEST

START_TEST(test_socket_reconnects_after_peer_close_up_to_max_retry)
{
    /* max_retry 3: attempts 1 and 2 reconnect, attempt 3 ends. The half line "tw" before a
     * close is a record of its own, as at the end (Flink would glue it to "o": "two"). */
    static const char *const payloads[] = {"one\n", "tw", "o\nend"};
    server_t srv = {.payloads = payloads, .npayloads = 3};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 3, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 5);
    expect_line(&log, 0, 0, "one", 1, 0);
    expect_line(&log, 1, 0, "tw", 2, WEIR_LINE_TRUNCATED_EOF);
    expect_line(&log, 2, 0, "o", 3, 0);
    expect_line(&log, 3, 0, "end", 4, WEIR_LINE_TRUNCATED_EOF);
    expect_kind(&log, 4, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert(log.ev[1].time - log.ev[0].time >= 500); /* 500 ms between connections */
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECONNECTS), 2);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_half_line_stays_apart_when_the_next_connection_comes_before_it_is_out)
{
    /* A slow consumer still has the first connection's lines to take when the second
     * connection has sent "f\n": those bytes must wait, not join the half line "hal". */
    enum { LINES = 5000 };
    static char first[LINES * 2 + 4];
    for (int i = 0; i < LINES; i++) {
        memcpy(first + 2 * i, "x\n", 2);
    }
    memcpy(first + 2 * LINES, "hal", 4);
    static const char *const payloads[] = {first, "f\n"};
    server_t srv = {.payloads = payloads, .npayloads = 2};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 2, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    /* One record per poll until the server has sent the second payload, and 50 polls more,
     * so the client has connected again while "x" lines are still buffered. */
    int after = 0;
    while (after < 50) {
        ck_assert_int_eq(poll_once(rt, &log, 1), 1);
        ck_assert_msg(log.ev[log.n - 1].text[0] == 'x',
                      "the first connection's lines ran out before the reconnect");
        if (atomic_load(&srv.sent) == 2) {
            after++;
        }
        usleep(1000);
    }
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECONNECTS), 1);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, LINES + 3);
    expect_line(&log, LINES - 1, 0, "x", LINES, 0);
    expect_line(&log, LINES, 0, "hal", LINES + 1, WEIR_LINE_TRUNCATED_EOF);
    expect_line(&log, LINES + 1, 0, "f", LINES + 2, 0);
    expect_kind(&log, LINES + 2, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_failed_reconnect_counts_as_a_close)
{
    static const char *const payloads[] = {"x\n"};
    server_t srv = {.payloads = payloads, .npayloads = 1, .close_listener = 1};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 3, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64); /* no error: two refused reconnects, then the end */
    ck_assert_int_eq(log.n, 2);
    expect_line(&log, 0, 0, "x", 1, 0);
    expect_kind(&log, 1, WEIR_EV_END, 0, WEIR_END_EXHAUSTED);
    ck_assert_int_eq((int)weir_source_stat(rt, 0, WEIR_STAT_RECONNECTS), 2);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_localhost_tries_every_resolved_address)
{
    static const char *const payloads[] = {"hi\n"};
    server_t srv = {.payloads = payloads, .npayloads = 1}; /* IPv4 only; localhost may be ::1 */
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "localhost", srv.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 2);
    expect_line(&log, 0, 0, "hi", 1, 0);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_stop_while_connected_ends_stopped)
{
    static const char *const payloads[] = {"x\npartial"};
    server_t srv = {.payloads = payloads, .npayloads = 1, .hold_last = 1};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 0, 0, "x", 1, 0);
    weir_rt_stop(rt);
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 3); /* the half line is not delivered */
    expect_kind(&log, 1, WEIR_EV_STOP, -1, 0);
    expect_kind(&log, 2, WEIR_EV_END, 0, WEIR_END_STOPPED);
    log_free(&log);
    weir_rt_free(rt); /* closes the socket: the server sees EOF and finishes */
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_stream_arrives_in_order_and_reading_pauses_when_lua_lags)
{
    enum { LINES = 400000, LINE = 8 };
    server_t srv = {.big_lines = LINES};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    weir_event_t batch[WEIR_BATCH_MAX];
    int seen = 0;
    /* A slow consumer (one record per poll) until a megabyte has been read ... */
    while (weir_source_stat(rt, 0, WEIR_STAT_BYTES) < (1 << 20) && seen < LINES) {
        if (weir_loop_poll(rt, batch, 1) != 1) {
            ck_abort_msg("poll did not return one line");
        }
        seen++;
    }
    /* ... then lag behind the server for 200 ms: it has time to send everything, yet the
     * buffer must stay bounded (the waits are what this test is about). */
    for (int i = 0; i < 40; i++) {
        usleep(5 * 1000);
        char want[16];
        snprintf(want, sizeof want, "%07d", seen);
        if (weir_loop_poll(rt, batch, 1) != 1 || memcmp(batch[0].ptr, want, LINE - 1) != 0) {
            ck_abort_msg("line %d is wrong", seen);
        }
        seen++;
        double buffered = weir_source_stat(rt, 0, WEIR_STAT_BYTES) - (double)seen * LINE;
        if (buffered > (1 << 20) + 2 * 64 * 1024 + 16) {
            ck_abort_msg("%.0f bytes buffered: reading did not pause", buffered);
        }
    }
    int ended = 0;
    for (;;) {
        int32_t n = weir_loop_poll(rt, batch, WEIR_BATCH_MAX);
        ck_assert_int_ge(n, 0);
        if (n == 0) {
            break;
        }
        for (int32_t i = 0; i < n; i++) {
            if (batch[i].kind == WEIR_EV_END) {
                ended++;
                continue;
            }
            char want[16];
            snprintf(want, sizeof want, "%07d", seen);
            if (batch[i].len != LINE - 1 || memcmp(batch[i].ptr, want, LINE - 1) != 0) {
                ck_abort_msg("line %d is wrong", seen);
            }
            seen++;
        }
    }
    ck_assert_int_eq(seen, LINES);
    ck_assert_int_eq(ended, 1);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

START_TEST(test_socket_on_the_virtual_clock_carries_the_current_reading)
{
    static const char *const payloads[] = {"s\n"};
    server_t srv = {.payloads = payloads, .npayloads = 1};
    server_start(&srv);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_VIRTUAL, 4242);
    ck_assert_int_eq(weir_rt_set_tick(rt, 10), 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", srv.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    run_to_end(rt, &log, 64);
    ck_assert_int_eq(log.n, 2); /* no ticks: sockets never move the virtual clock */
    expect_line(&log, 0, 0, "s", 1, 0);
    expect_time(&log, 0, 4242);
    log_free(&log);
    weir_rt_free(rt);
    server_join(&srv);
}
END_TEST

/* ---- pending input ------------------------------------------------------------------- */

/* A peer on 127.0.0.1 for the pending tests: a thread accepts one connection and sends
 * `first`; after that the test writes through conn_fd itself. The connection stays open
 * until peer_close. */
typedef struct peer {
    int listen_fd;
    int port;
    const char *first;
    int conn_fd;
    pthread_t thread;
} peer_t;

static void *peer_main(void *arg)
{
    peer_t *p = arg;
    p->conn_fd = accept(p->listen_fd, NULL, NULL);
    if (p->conn_fd >= 0) {
        send_all(p->conn_fd, p->first, strlen(p->first));
    }
    return NULL;
}

static void peer_start(peer_t *p, const char *first)
{
    memset(p, 0, sizeof *p);
    p->first = first;
    p->conn_fd = -1;
    p->listen_fd = bound_socket(&p->port, 1);
    ck_assert_int_eq(pthread_create(&p->thread, NULL, peer_main, p), 0);
}

/* Call once a poll has delivered `first`: the thread has sent it and is done. */
static void peer_joined(peer_t *p)
{
    pthread_join(p->thread, NULL);
    ck_assert_int_ge(p->conn_fd, 0);
}

static void peer_close(peer_t *p)
{
    close(p->conn_fd);
    close(p->listen_fd);
}

/* weir's end of the connection: the descriptor whose local address is the peer's remote one
 * (weir does not expose it, and the test must watch it without reading). */
static int weir_end_of(const peer_t *p)
{
    struct sockaddr_in want;
    socklen_t len = sizeof want;
    ck_assert_int_eq(getpeername(p->conn_fd, (struct sockaddr *)&want, &len), 0);
    for (int fd = 3; fd < 1024; fd++) {
        struct sockaddr_in a;
        socklen_t alen = sizeof a;
        if (fd != p->conn_fd && getsockname(fd, (struct sockaddr *)&a, &alen) == 0 &&
            alen == sizeof a && a.sin_family == AF_INET && a.sin_port == want.sin_port &&
            a.sin_addr.s_addr == want.sin_addr.s_addr) {
            return fd;
        }
    }
    ck_abort_msg("weir's end of the connection not found");
    return -1;
}

/* Loopback delivery is asynchronous: waits (bounded) until fd is readable, reading nothing. */
static void wait_readable(int fd)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int r;
    do {
        r = poll(&pfd, 1, 10 * 1000);
    } while (r < 0 && errno == EINTR);
    ck_assert_int_eq(r, 1);
}

START_TEST(test_pending_is_1_for_unread_socket_bytes_before_poll_reads_them)
{
    peer_t p;
    peer_start(&p, "first\n");
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", p.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 0, 0, "first", 1, 0);
    peer_joined(&p);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    send_all(p.conn_fd, "second\n", 7);
    wait_readable(weir_end_of(&p));
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* in the kernel, not yet in weir */
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* asking reads nothing */
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 1, 0, "second", 2, 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    log_free(&log);
    weir_rt_free(rt);
    peer_close(&p);
}
END_TEST

START_TEST(test_pending_is_0_for_a_quiet_open_socket_even_with_a_half_line)
{
    peer_t p;
    peer_start(&p, "x\npar"); /* one segment: the first poll reads all of it */
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", p.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 0, 0, "x", 1, 0);
    peer_joined(&p);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* "par" waits for the rest of its line */
    send_all(p.conn_fd, "tial", 4);
    wait_readable(weir_end_of(&p));
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* kernel bytes count, whole or not */
    send_all(p.conn_fd, "\n", 1);
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 1, 0, "partial", 2, 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0);
    log_free(&log);
    weir_rt_free(rt);
    peer_close(&p);
}
END_TEST

START_TEST(test_pending_is_1_while_records_stay_buffered_after_a_poll_of_max_1)
{
    peer_t p;
    peer_start(&p, "a\nb\nc"); /* one segment: the first poll reads all of it */
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(weir_source_socket(rt, "127.0.0.1", p.port, NULL, 0, 0), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    evlog_t log = {0};
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_line(&log, 0, 0, "a", 1, 0);
    peer_joined(&p);
    ck_assert_int_eq(weir_source_pending(rt, 0), 1); /* "b" is split off and waits */
    ck_assert_int_eq(poll_once(rt, &log, 1), 1);
    expect_line(&log, 1, 0, "b", 2, 0);
    ck_assert_int_eq(weir_source_pending(rt, 0), 0); /* only the half line "c" is left */
    log_free(&log);
    weir_rt_free(rt);
    peer_close(&p);
}
END_TEST

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
        {"file_lines_in_order_then_end", test_file_lines_arrive_in_order_then_end_exhausted, 0},
        {"big_file_comes_in_batches_of_max", test_big_file_comes_in_batches_of_max, 0},
        {"missing_file_fails_start_naming_path", test_missing_file_fails_start_naming_the_path,
         0},
        {"overlong_lines_dropped_counted_reported_once",
         test_overlong_lines_are_dropped_counted_and_reported_once, 0},
        {"file_multi_byte_delimiter_and_nul", test_file_with_multi_byte_delimiter_and_nul_bytes,
         0},
        {"ids_in_declaration_order_and_describe",
         test_sources_get_ids_in_declaration_order_and_describe_themselves, 0},
        {"bad_arguments_and_states_rejected", test_bad_arguments_and_wrong_states_are_rejected,
         0},
        {"strerror_names_weir_and_libuv_codes", test_strerror_names_weir_and_libuv_codes, 0},
        {"out_write_goes_to_stdio", test_out_write_goes_to_stdio_and_rejects_other_fds, 0},
        {"generate_ranges_of_batch_max_then_end",
         test_generate_without_rate_emits_ranges_of_batch_max_then_end, 0},
        {"generate_count_zero_ends_at_once", test_generate_with_count_zero_ends_at_once, 0},
        {"unbounded_generate_keeps_counting", test_unbounded_generate_keeps_counting, 0},
        {"rate_generate_on_virtual_clock_jumps",
         test_generate_with_rate_on_virtual_clock_jumps_to_due_indices, 0},
        {"rate_generate_on_real_clock_waits",
         test_generate_with_rate_on_real_clock_waits_for_due_indices, 0},
        {"virtual_clock_orders_timer_tick_records",
         test_replay_orders_timers_ticks_and_records_on_the_virtual_clock, 0},
        {"trailing_time_only_entry_runs_clock",
         test_trailing_time_only_entry_runs_the_clock_before_the_end, 0},
        {"passed_wakeup_fires_at_current_reading",
         test_wakeup_already_passed_fires_at_the_current_reading, 0},
        {"file_on_virtual_clock_at_current_reading",
         test_file_on_the_virtual_clock_is_read_at_the_current_reading, 0},
        {"replay_entries_must_not_go_back", test_replay_entries_must_not_go_back_in_time, 0},
        {"missed_ticks_collapse_onto_grid", test_missed_ticks_collapse_onto_the_next_grid_point,
         0},
        {"real_clock_ticks_fall_on_grid", test_ticks_on_the_real_clock_fall_on_the_grid, 0},
        {"real_clock_wakeup_fires_once_after_due",
         test_wakeup_on_the_real_clock_fires_once_after_due, 0},
        {"stop_then_drain_then_end_stopped",
         test_stop_delivers_stop_then_drains_buffered_records_then_ends_stopped, 0},
        {"stop_on_virtual_clock_ends_replays", test_stop_on_the_virtual_clock_ends_replays_stopped,
         0},
        {"sigint_acts_as_stop_handler_restored",
         test_sigint_acts_as_stop_and_free_restores_the_handler, 0},
        {"sigterm_wakes_blocked_poll", test_sigterm_wakes_a_blocked_poll, 0},
        {"second_signal_exits_with_message", test_second_signal_exits_at_once_with_a_message, 0},
        {"stdin_pipe_read_to_end", test_stdin_pipe_is_read_to_its_end, 0},
        {"stdin_regular_file_read_like_file", test_stdin_regular_file_is_read_like_a_file, 0},
        {"socket_peer_close_ends_with_leftover",
         test_socket_lines_then_peer_close_end_exhausted_with_leftover, 0},
        {"socket_refused_connect_fails_job", test_socket_refused_initial_connect_fails_the_job,
         0},
        {"socket_reconnects_up_to_max_retry",
         test_socket_reconnects_after_peer_close_up_to_max_retry, 10},
        {"socket_half_line_apart_from_early_next_connection",
         test_socket_half_line_stays_apart_when_the_next_connection_comes_before_it_is_out, 20},
        {"socket_failed_reconnect_counts_as_close", test_socket_failed_reconnect_counts_as_a_close,
         10},
        {"socket_localhost_tries_every_address", test_socket_localhost_tries_every_resolved_address,
         0},
        {"socket_stop_while_connected_ends_stopped", test_socket_stop_while_connected_ends_stopped,
         0},
        {"socket_stream_in_order_reading_pauses",
         test_socket_stream_arrives_in_order_and_reading_pauses_when_lua_lags, 30},
        {"socket_on_virtual_clock_current_reading",
         test_socket_on_the_virtual_clock_carries_the_current_reading, 0},
        {"pending_unread_socket_bytes_before_poll",
         test_pending_is_1_for_unread_socket_bytes_before_poll_reads_them, 0},
        {"pending_0_quiet_open_socket_half_line",
         test_pending_is_0_for_a_quiet_open_socket_even_with_a_half_line, 0},
        {"pending_1_records_buffered_after_max_1",
         test_pending_is_1_while_records_stay_buffered_after_a_poll_of_max_1, 0},
        {"pending_stdin_pipe_bytes_and_half_line_at_eof",
         test_stdin_pipe_pending_counts_pipe_bytes_and_the_last_half_line_at_eof, 0},
        {"pending_file_until_eof", test_file_is_pending_until_eof, 0},
        {"pending_replay_quiet_until_next_line_due",
         test_replay_is_quiet_until_its_next_line_is_due, 0},
        {"pending_generator_until_exhausted_or_due",
         test_generator_pending_without_rate_until_exhausted_with_rate_when_due, 0},
        {"pending_unknown_source_einval", test_pending_of_an_unknown_source_is_einval, 0},
        {"sigusr1_one_status_job_continues",
         test_sigusr1_yields_one_status_event_and_the_job_continues, 0},
        {"sigusr1_twice_before_poll_one_status",
         test_sigusr1_twice_before_a_poll_yields_one_status_event, 0},
        {"sigusr1_wakes_blocked_poll_no_stop", test_sigusr1_wakes_a_blocked_poll_without_stopping,
         0},
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
