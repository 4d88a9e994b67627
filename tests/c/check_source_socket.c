/* SPDX-License-Identifier: MIT */
/* check_source_socket.c: the socket source (source_socket.c) against a TCP server on 127.0.0.1
 * in a thread of this process: lines, peer close, refused connects, reconnects, stop,
 * backpressure, the virtual clock, pending, and watermark alignment's pause. Only the retry
 * tests wait (the 500 ms retry delay). */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "check_events.h"
#include "check_support.h"
#include "weir.h"

/* ---- socket ----------------------------------------------------------------------------- */

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

/* ---- pending input ---------------------------------------------------------------------- */

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

/* Watermark alignment: a paused socket stops reading (the bytes stay in the kernel, where TCP's
 * flow control holds the rest) and delivers nothing; resumed, it reads them. */
START_TEST(test_a_paused_socket_leaves_the_bytes_in_the_kernel_until_the_resume)
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
    ck_assert_int_eq(weir_source_pause(rt, 0, 1), 0);
    send_all(p.conn_fd, "second\n", 7);
    int fd = weir_end_of(&p);
    wait_readable(fd);
    weir_event_t ev[8];
    ck_assert_int_eq(weir_loop_poll_nowait(rt, ev, 8), 0); /* runs the loop: reads nothing */
    int unread = 0;
    ck_assert_int_eq(ioctl(fd, FIONREAD, &unread), 0);
    ck_assert_int_eq(unread, 7); /* "second\n", still in the kernel */
    ck_assert_int_eq(weir_source_pause(rt, 0, 0), 0);
    ck_assert_int_eq(poll_once(rt, &log, 64), 1);
    expect_line(&log, 1, 0, "second", 2, 0);
    ck_assert_int_eq(ioctl(fd, FIONREAD, &unread), 0);
    ck_assert_int_eq(unread, 0);
    log_free(&log);
    weir_rt_free(rt);
    peer_close(&p);
}
END_TEST

static Suite *source_socket_suite(void)
{
    Suite *s = suite_create("source_socket");
    const struct {
        const char *name;
        const TTest *test;
        int timeout_s;
    } cases[] = {
        {"socket_peer_close_ends_with_leftover",
         test_socket_lines_then_peer_close_end_exhausted_with_leftover, 0},
        {"socket_refused_connect_fails_job", test_socket_refused_initial_connect_fails_the_job, 0},
        {"socket_reconnects_up_to_max_retry",
         test_socket_reconnects_after_peer_close_up_to_max_retry, 10},
        {"socket_half_line_apart_from_early_next_connection",
         test_socket_half_line_stays_apart_when_the_next_connection_comes_before_it_is_out, 20},
        {"socket_failed_reconnect_counts_as_close",
         test_socket_failed_reconnect_counts_as_a_close, 10},
        {"socket_localhost_tries_every_address",
         test_socket_localhost_tries_every_resolved_address, 0},
        {"socket_stop_while_connected_ends_stopped",
         test_socket_stop_while_connected_ends_stopped, 0},
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
        {"paused_socket_leaves_bytes_in_kernel",
         test_a_paused_socket_leaves_the_bytes_in_the_kernel_until_the_resume, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_timed_case(s, cases[i].name, cases[i].test, cases[i].timeout_s);
    }
    return s;
}

int main(void)
{
    return run_suite(source_socket_suite());
}
