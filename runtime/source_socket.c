/* SPDX-License-Identifier: MIT */
/* source_socket.c: socket_text_stream, a TCP client as Flink's SocketTextStreamFunction
 * (SEMANTICS.md section 13). A failed initial connect (resolution included) fails the job.
 * Retries happen only after an established connection was closed by the peer: attempt++, then
 * reconnect after 500 ms if max_retry == -1 or attempt < max_retry, else end (leftover text
 * first). A reconnect that fails counts like a close. **weir:** unlike Flink, whose text buffer
 * survives a reconnect and glues a half line before the close to the first bytes after it,
 * each connection's bytes end at its close: the half line is a record of its own (`sealed`),
 * as at the end without a reconnect (API.md, Sockets). The 500 ms are real time even on the
 * virtual clock, which sockets never drive (see weir_loop_poll). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inputlog.h"
#include "lines.h"
#include "loop.h"
#include "mem.h"
#include "rt.h"
#include "source.h"

enum {
    RETRY_DELAY_MS = 500,
    READ_CHUNK = 64 * 1024,
    HIGH_WATER = 1 << 20 /* buffered bytes above which reading pauses until Lua catches up */
};

typedef enum sock_state {
    SOCK_IDLE,
    SOCK_RESOLVING,
    SOCK_CONNECTING,
    SOCK_CONNECTED,
    SOCK_CLOSING, /* the tcp handle is closing; after_close says what comes next */
    SOCK_WAITING, /* the retry timer runs */
    SOCK_DONE,    /* no more connections: deliver the rest, then END */
    SOCK_FAILED
} sock_state_t;

typedef enum after_close {
    AFTER_NOTHING,
    AFTER_NEXT_ADDRESS, /* a connect failed: try the next resolved address */
    AFTER_DISCONNECT    /* the peer closed: count the attempt, maybe retry */
} after_close_t;

typedef struct socket_source {
    wr_source_t base;
    char *host;
    char port[8];
    int32_t max_retry;
    int64_t attempt;
    int ever_connected;
    sock_state_t state;
    int shutting_down; /* weir_rt_free is closing everything */

    uv_getaddrinfo_t resolve;
    int resolving;
    struct addrinfo *addrs; /* owned, from uv_getaddrinfo */
    struct addrinfo *addr_next;
    int last_error;

    uv_tcp_t tcp;
    int tcp_open; /* initialised and its close callback has not run yet */
    after_close_t after_close;
    uv_connect_t connect;
    int reading;
    int paused;
    /* The last connection closed and another follows: its bytes are cut to the end, the half
     * line included, before the next connection's bytes are read (reading waits, paused). */
    int sealed;

    uv_timer_t retry;
    int retry_open;

    size_t high_water;
    wr_lines_t lines;

    /* --input-log (inputlog.h): bytes read are logged; a restore replays the log's bytes
     * after the checkpoint before reading the connection (reading waits, paused) */
    wr_inputlog_t log;
    int seeked;
    weir_source_position_t seek_at;
} socket_source_t;

static socket_source_t *sock_of(wr_source_t *s)
{
    return (socket_source_t *)s;
}

static int quiet(const socket_source_t *k)
{
    return k->base.stopping || k->shutting_down;
}

static void free_addrs(socket_source_t *k)
{
    if (k->addrs != NULL) {
        uv_freeaddrinfo(k->addrs);
    }
    k->addrs = NULL;
    k->addr_next = NULL;
}

static void start_connect(socket_source_t *k);
static void try_next_address(socket_source_t *k);
static void on_retry(uv_timer_t *t);

/* The connection is gone (peer close, reset, or a failed reconnect). */
static void disconnected(socket_source_t *k)
{
    if (quiet(k)) {
        return;
    }
    k->attempt++;
    if (k->max_retry == -1 || k->attempt < k->max_retry) {
        k->sealed = 1;
        k->state = SOCK_WAITING;
        uv_timer_start(&k->retry, on_retry, RETRY_DELAY_MS, 0);
        return;
    }
    k->state = SOCK_DONE;
}

static void connect_failed(socket_source_t *k, int code)
{
    free_addrs(k);
    if (quiet(k)) {
        return;
    }
    if (!k->ever_connected) {
        k->state = SOCK_FAILED;
        wr_loop_fail(k->base.rt, code, "%s: %s", k->base.describe, weir_strerror(code));
        return;
    }
    disconnected(k);
}

static void on_tcp_closed(uv_handle_t *h)
{
    socket_source_t *k = h->data;
    k->tcp_open = 0;
    after_close_t next = k->after_close;
    k->after_close = AFTER_NOTHING;
    if (quiet(k)) {
        return;
    }
    if (next == AFTER_NEXT_ADDRESS) {
        try_next_address(k);
    } else if (next == AFTER_DISCONNECT) {
        disconnected(k);
    }
}

static void close_tcp(socket_source_t *k, after_close_t next)
{
    k->after_close = next;
    if (k->reading) {
        uv_read_stop((uv_stream_t *)&k->tcp);
        k->reading = 0;
    }
    k->paused = 0;
    if (k->tcp_open && !uv_is_closing((uv_handle_t *)&k->tcp)) {
        k->state = SOCK_CLOSING;
        uv_close((uv_handle_t *)&k->tcp, on_tcp_closed);
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    socket_source_t *k = h->data;
    size_t got = 0;
    char *p = wr_lines_space(&k->lines, READ_CHUNK, &got);
    if (got > READ_CHUNK) {
        got = READ_CHUNK;
    }
    *buf = uv_buf_init(p, (unsigned)got); /* 0 bytes: libuv reports UV_ENOBUFS */
}

static void pause_reading(socket_source_t *k)
{
    if (k->reading) {
        uv_read_stop((uv_stream_t *)&k->tcp);
        k->reading = 0;
        k->paused = 1;
    }
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    socket_source_t *k = st->data;
    if (nread > 0) {
        wr_lines_commit(&k->lines, (size_t)nread);
        k->base.stat[WEIR_STAT_BYTES] += (double)nread;
        int rc = wr_inputlog_append(&k->log, buf->base, (size_t)nread);
        if (rc < 0) {
            k->state = SOCK_FAILED;
            close_tcp(k, AFTER_NOTHING);
            wr_loop_fail(k->base.rt, rc, "%s: input log %s: %s", k->base.describe,
                         k->base.input_log, weir_strerror(rc));
            return;
        }
        if (wr_lines_pending(&k->lines) > k->high_water) {
            pause_reading(k);
        }
        return;
    }
    if (nread == 0) {
        return;
    }
    if (nread == UV_ENOBUFS) {
        pause_reading(k);
        return;
    }
    /* EOF, or a reset: either way the peer is gone, as Flink's reader sees it. */
    close_tcp(k, AFTER_DISCONNECT);
}

static int start_reading(socket_source_t *k)
{
    if (k->sealed || wr_inputlog_replaying(&k->log) || k->base.paused) {
        /* sock_fill starts reading once the last connection's bytes are cut; sock_begin once
         * watermark alignment resumes the source */
        k->paused = 1;
        return 0;
    }
    int rc = uv_read_start((uv_stream_t *)&k->tcp, on_alloc, on_read);
    if (rc == 0) {
        k->reading = 1;
        k->paused = 0;
    }
    return rc;
}

static void on_connect(uv_connect_t *req, int status)
{
    socket_source_t *k = req->data;
    if (status == UV_ECANCELED || quiet(k)) {
        return; /* stop or free closed the handle */
    }
    if (status < 0) {
        k->last_error = status;
        close_tcp(k, AFTER_NEXT_ADDRESS);
        return;
    }
    free_addrs(k);
    k->ever_connected = 1;
    k->state = SOCK_CONNECTED;
    if (start_reading(k) < 0) {
        close_tcp(k, AFTER_DISCONNECT);
    }
}

static void try_next_address(socket_source_t *k)
{
    uv_loop_t *loop = &k->base.rt->loop;
    while (k->addr_next != NULL) {
        struct addrinfo *ai = k->addr_next;
        k->addr_next = ai->ai_next;
        int rc = uv_tcp_init(loop, &k->tcp);
        if (rc < 0) {
            k->last_error = rc;
            continue;
        }
        k->tcp_open = 1;
        k->tcp.data = k;
        k->connect.data = k;
        k->state = SOCK_CONNECTING;
        rc = uv_tcp_connect(&k->connect, &k->tcp, ai->ai_addr, on_connect);
        if (rc < 0) {
            k->last_error = rc;
            close_tcp(k, AFTER_NEXT_ADDRESS);
        }
        return;
    }
    connect_failed(k, k->last_error ? k->last_error : UV_EAI_NONAME);
}

static void on_resolved(uv_getaddrinfo_t *req, int status, struct addrinfo *res)
{
    socket_source_t *k = req->data;
    k->resolving = 0;
    if (quiet(k)) {
        if (res != NULL) {
            uv_freeaddrinfo(res);
        }
        return;
    }
    if (status < 0) {
        connect_failed(k, status);
        return;
    }
    k->addrs = res;
    k->addr_next = res;
    k->last_error = 0;
    try_next_address(k);
}

static void start_connect(socket_source_t *k)
{
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_protocol = IPPROTO_TCP;
    k->state = SOCK_RESOLVING;
    k->resolve.data = k;
    int rc = uv_getaddrinfo(&k->base.rt->loop, &k->resolve, on_resolved, k->host, k->port,
                            &hints);
    if (rc < 0) {
        connect_failed(k, rc);
        return;
    }
    k->resolving = 1;
}

static void on_retry(uv_timer_t *t)
{
    socket_source_t *k = t->data;
    if (quiet(k)) {
        return;
    }
    k->base.stat[WEIR_STAT_RECONNECTS] += 1;
    start_connect(k);
}

static int sock_open(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    int rc = uv_timer_init(&s->rt->loop, &k->retry);
    if (rc < 0) {
        return wr_err_set(&s->rt->err, rc, "%s: %s", s->describe, weir_strerror(rc));
    }
    k->retry_open = 1;
    k->retry.data = k;
    s->io = 1;
    if (s->input_log != NULL) {
        char why[512];
        rc = wr_inputlog_open(&k->log, s->input_log, k->seeked ? (int64_t)k->seek_at.offset : -1,
                              k->seeked ? k->seek_at.check : -1, why, sizeof why);
        if (rc < 0) {
            return why[0] ? wr_err_set(&s->rt->err, WEIR_ESOURCE,
                                       "%s: cannot continue from the checkpoint: %s",
                                       s->describe, why)
                          : wr_err_set(&s->rt->err, rc, "%s: input log %s: %s", s->describe,
                                       s->input_log, weir_strerror(rc));
        }
        if (k->seeked) {
            k->lines.count = (int64_t)k->seek_at.line;
            k->lines.skipping = k->seek_at.skipping != 0;
        }
    }
    start_connect(k); /* resolution and connect are asynchronous: failures surface in poll */
    return 0;
}

static void sock_begin(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    wr_lines_release(&k->lines);
    if (k->paused && !s->paused && k->state == SOCK_CONNECTED && !quiet(k) &&
        wr_lines_pending(&k->lines) <= k->high_water / 2) {
        if (start_reading(k) < 0) {
            close_tcp(k, AFTER_DISCONNECT);
        }
    }
}

static void sock_fill(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    weir_rt_t *rt = s->rt;
    if (k->state == SOCK_FAILED) {
        return; /* the job has failed; poll reports it */
    }
    int done = k->state == SOCK_DONE;
    /* After STOP only complete records still count: the partial tail is dropped. */
    for (;;) {
        if (!wr_source_emit_text(rt, s, &k->lines, (done || k->sealed) && !s->stopping)) {
            return; /* the batch is full */
        }
        if (s->stopping || !wr_inputlog_replaying(&k->log)) {
            break;
        }
        /* a restore with an input log: its bytes after the checkpoint come first */
        int64_t before = k->log.fed;
        int rc = wr_inputlog_replay(&k->log, &k->lines, READ_CHUNK, READ_CHUNK / 4);
        if (rc < 0) {
            k->state = SOCK_FAILED;
            wr_loop_fail(rt, rc, "%s: input log %s: %s", s->describe, s->input_log,
                         weir_strerror(rc));
            return;
        }
        if (rc == 1) {
            return; /* this poll's records pin the buffer: the next poll goes on */
        }
        s->stat[WEIR_STAT_BYTES] += (double)(k->log.fed - before);
        if (!wr_inputlog_replaying(&k->log) && k->paused && k->state == SOCK_CONNECTED &&
            !quiet(k) && start_reading(k) < 0) {
            close_tcp(k, AFTER_DISCONNECT);
        }
    }
    if (s->stopping) {
        wr_source_emit_end(rt, s, WEIR_END_STOPPED);
    } else if (done) {
        wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
    } else if (k->sealed) {
        /* The closed connection's last record is out: the next connection's bytes may come. */
        k->sealed = 0;
        wr_lines_reopen(&k->lines);
        if (k->paused && k->state == SOCK_CONNECTED && !quiet(k) && start_reading(k) < 0) {
            close_tcp(k, AFTER_DISCONNECT);
        }
    }
}

/* Waiting: a complete record in weir's buffer, or unread bytes in the kernel while connected.
 * A half line waits for its rest, except once its connection has closed (sealed, SOCK_DONE):
 * then it is that connection's last record. After STOP only complete records are delivered. */
static int sock_pending(const wr_source_t *s, int64_t now_ms)
{
    (void)now_ms;
    const socket_source_t *k = (const socket_source_t *)s;
    int closed = k->state == SOCK_DONE || k->sealed;
    if (wr_inputlog_replaying(&k->log) && !s->stopping) {
        return 1;
    }
    if (wr_lines_has_record(&k->lines, closed && !s->stopping)) {
        return 1;
    }
    return k->state == SOCK_CONNECTED && !quiet(k) &&
           wr_source_unread((const uv_handle_t *)&k->tcp);
}

/* Stops everything in flight; s->stopping (or shutting_down) is already set, so callbacks
 * that still arrive do nothing. */
static void sock_stop(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    if (k->tcp_open) {
        close_tcp(k, AFTER_NOTHING);
    }
    k->after_close = AFTER_NOTHING;
    if (k->retry_open) {
        uv_timer_stop(&k->retry);
    }
    if (k->resolving) {
        uv_cancel((uv_req_t *)&k->resolve); /* may fail if already running: its callback frees */
    }
}

/* Watermark alignment: stop reading now; sock_begin reads again after the resume (the
 * bytes already read wait in the line buffer, bounded by its high-water mark). */
static void sock_pause(wr_source_t *s, int on)
{
    if (on) {
        pause_reading(sock_of(s));
    }
}

static void sock_close(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    k->shutting_down = 1;
    sock_stop(s);
    if (k->retry_open) {
        k->retry_open = 0;
        uv_close((uv_handle_t *)&k->retry, NULL);
    }
}

/* With an input log: the log offset of the first byte not yet cut into a record. */
static void sock_position(const wr_source_t *s, weir_source_position_t *pos)
{
    const socket_source_t *k = (const socket_source_t *)s;
    if (k->seeked && k->log.fd < 0) {
        *pos = k->seek_at; /* not started yet: where it will continue */
        return;
    }
    if (s->input_log == NULL || k->log.fd < 0) {
        return; /* not replayable: the counters only */
    }
    int64_t offset = wr_inputlog_position(&k->log, wr_lines_pending(&k->lines));
    pos->offset = (double)offset;
    pos->line = (double)k->lines.count;
    pos->skipping = k->lines.skipping;
    pos->replayable = 2;
    pos->check = wr_inputlog_check(&k->log, offset);
}

static int sock_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    socket_source_t *k = sock_of(s);
    if (pos->replayable != 2 || s->input_log == NULL) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL,
                          "%s: the checkpoint continues from the input log: run with "
                          "--input-log",
                          s->describe);
    }
    if (!(pos->offset >= 0 && pos->offset < 9.0e15 && pos->line >= 0)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL, "%s: bad position", s->describe);
    }
    k->seek_at = *pos;
    k->seeked = 1;
    return 0;
}

static void sock_destroy(wr_source_t *s)
{
    socket_source_t *k = sock_of(s);
    wr_inputlog_close(&k->log);
    free_addrs(k);
    wr_lines_close(&k->lines);
    wr_free(k->host);
    wr_free(k);
}

static int sock_release_log(wr_source_t *s, int64_t offset)
{
    socket_source_t *k = sock_of(s);
    return wr_inputlog_release(&k->log, offset);
}

static const wr_source_ops_t socket_ops = {
    .open = sock_open,
    .begin = sock_begin,
    .fill = sock_fill,
    .next_due = NULL,
    .pending = sock_pending,
    .stop = sock_stop,
    .close = sock_close,
    .destroy = sock_destroy,
    .position = sock_position,
    .seek = sock_seek,
    .release_log = sock_release_log,
    .pause = sock_pause,
};

int32_t weir_source_socket(weir_rt_t *rt, const char *host, int32_t port, const char *delimiter,
                           int32_t max_retry, int32_t max_line_bytes)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    if (host == NULL || host[0] == '\0') {
        return wr_err_set(&rt->err, WEIR_EINVAL, "socket_text_stream: no host");
    }
    if (port < 1 || port > 65535) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "socket_text_stream %s: bad port %d", host,
                          (int)port);
    }
    if (max_retry < -1) {
        return wr_err_set(&rt->err, WEIR_EINVAL,
                          "socket_text_stream %s:%d: max_retry %d (must be >= -1)", host,
                          (int)port, (int)max_retry);
    }
    if (delimiter != NULL && delimiter[0] == '\0') {
        return wr_err_set(&rt->err, WEIR_EINVAL, "socket_text_stream %s:%d: the delimiter is empty",
                          host, (int)port);
    }
    socket_source_t *k = wr_xcalloc(1, sizeof *k);
    k->base.ops = &socket_ops;
    k->base.kind = "socket_text_stream";
    k->host = wr_xstrdup(host);
    snprintf(k->port, sizeof k->port, "%d", (int)port);
    k->max_retry = max_retry;
    k->state = SOCK_IDLE;
    wr_lines_init(&k->lines, delimiter, max_line_bytes);
    wr_inputlog_init(&k->log);
    size_t partial = wr_lines_partial_max(&k->lines) + READ_CHUNK;
    k->high_water = partial > HIGH_WATER ? partial : HIGH_WATER;

    size_t n = strlen(host) + 32;
    char *describe = wr_xmalloc(n);
    snprintf(describe, n, "socket_text_stream %s:%d", host, (int)port);
    int32_t id = wr_source_add(rt, &k->base, describe);
    wr_free(describe);
    return id;
}
