/* SPDX-License-Identifier: MIT */
/* check_events.h: what the suites that drive weir_loop_poll share (check_loop.c and the
 * check_source_*.c suites): an event log that copies each polled event (the batch's pointers
 * die with the next poll), checks on its entries, temporary files, stderr capture, and a child
 * that must exit on a repeated signal. Everything is static inline, so a suite that uses only
 * part of it compiles without warnings. A log is freed with log_free. */
#ifndef WEIR_CHECK_EVENTS_H
#define WEIR_CHECK_EVENTS_H

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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
    char text[TEXT_MAX]; /* LINE and INPUT: the first TEXT_MAX - 1 bytes, NUL-terminated */
} ev_t;

typedef struct evlog {
    ev_t *ev;
    int n;
    int cap;
} evlog_t;

static inline void log_batch(evlog_t *log, const weir_event_t *b, int32_t n)
{
    for (int32_t i = 0; i < n; i++) {
        if (log->n == log->cap) {
            log->cap = log->cap ? log->cap * 2 : 64;
            log->ev = realloc(log->ev, (size_t)log->cap * sizeof *log->ev);
            ck_assert_ptr_nonnull(log->ev);
        }
        ev_t *e = &log->ev[log->n++];
        memset(e, 0, sizeof *e);
        e->kind = b[i].kind;
        e->source = b[i].source;
        e->len = b[i].len;
        e->flags = b[i].flags;
        e->index = b[i].index;
        e->time = b[i].time_ms;
        if ((b[i].kind == WEIR_EV_LINE || b[i].kind == WEIR_EV_INPUT) && b[i].ptr != NULL) {
            size_t k = b[i].len < TEXT_MAX - 1 ? (size_t)b[i].len : TEXT_MAX - 1;
            memcpy(e->text, b[i].ptr, k);
        }
    }
}

static inline void log_free(evlog_t *log)
{
    free(log->ev);
    memset(log, 0, sizeof *log);
}

/* One poll; its events are appended to log. Returns what poll returned. */
static inline int32_t poll_once(weir_rt_t *rt, evlog_t *log, int32_t max)
{
    weir_event_t *b = calloc((size_t)max, sizeof *b);
    ck_assert_ptr_nonnull(b);
    int32_t n = weir_loop_poll(rt, b, max);
    if (n > 0) {
        log_batch(log, b, n);
    }
    free(b);
    return n;
}

/* Polls until poll returns 0 (every source ended); a poll error fails the test. */
static inline void run_to_end(weir_rt_t *rt, evlog_t *log, int32_t max)
{
    for (;;) {
        int32_t n = poll_once(rt, log, max);
        ck_assert_msg(n >= 0, "poll failed (%d): %s", (int)n, weir_rt_error(rt));
        if (n == 0) {
            return;
        }
    }
}

static inline void expect_kind(const evlog_t *log, int i, int32_t kind, int32_t src,
                               int32_t flags)
{
    ck_assert_int_lt(i, log->n);
    const ev_t *e = &log->ev[i];
    ck_assert_msg(e->kind == kind, "event %d: kind %d, want %d", i, (int)e->kind, (int)kind);
    ck_assert_int_eq(e->source, src);
    ck_assert_int_eq(e->flags, flags);
}

static inline void expect_time(const evlog_t *log, int i, double t)
{
    ck_assert_int_lt(i, log->n);
    ck_assert_int_eq((int64_t)log->ev[i].time, (int64_t)t);
}

/* Event i is a LINE of src with this text, line number and flags. */
static inline void expect_line(const evlog_t *log, int i, int32_t src, const char *text,
                               double index, int32_t flags)
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

/* Event i is an unflagged LINE of src with this text and line number, at clock reading time. */
static inline void expect_line_at(const evlog_t *log, int i, int32_t src, const char *text,
                                  double index, double time)
{
    expect_line(log, i, src, text, index, 0);
    expect_time(log, i, time);
}

/* Event i is an INPUT line (the REPL's) with this text. */
static inline void expect_input(const evlog_t *log, int i, const char *text)
{
    expect_kind(log, i, WEIR_EV_INPUT, -1, WEIR_INPUT_LINE);
    ck_assert_str_eq(log->ev[i].text, text);
    ck_assert_int_eq((int)log->ev[i].len, (int)strlen(text));
}

/* ---- feeding sources ------------------------------------------------------------------- */

/* A replay entry: line `line` at time t is bytes [off, off + len) of the replay's text. */
static inline void add_entry(weir_rt_t *rt, int32_t src, double t, int32_t off, int32_t len,
                             int line)
{
    ck_assert_int_eq(weir_replay_add(rt, src, t, off, len, line), 0);
}

/* Pushes text as one record of the manual source src. */
static inline void push(weir_rt_t *rt, int32_t src, const char *text)
{
    ck_assert_int_eq(weir_manual_push(rt, src, text, strlen(text)), 0);
}

static inline void write_all(int fd, const char *text)
{
    size_t len = strlen(text);
    ck_assert_int_eq((int)write(fd, text, len), (int)len);
}

/* ---- files and stderr ------------------------------------------------------------------ */

/* A new file under /tmp holding data; returns its path (drop_file removes and frees it). */
static inline char *temp_file(const void *data, size_t len)
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

static inline void drop_file(char *path)
{
    unlink(path);
    free(path);
}

typedef struct capture {
    int saved;
    char path[64];
} capture_t;

/* From here until captured, what is written to stderr goes to a file. */
static inline void capture_stderr(capture_t *c)
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
static inline char *captured(capture_t *c)
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

/* ---- a child that signals itself -------------------------------------------------------- */

/* Runs body in a child process with stderr on a pipe; body must not return (it raises the
 * signals that end the process). The child must exit with status 1 after writing exactly
 * "weir: interrupted again, exiting\n" to stderr. */
static inline void expect_child_exits_interrupted_again(void (*body)(void))
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    pid_t child = fork();
    ck_assert_int_ge(child, 0);
    if (child == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        body();
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

#endif
