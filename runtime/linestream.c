/* SPDX-License-Identifier: MIT */
/* linestream.c: a libuv stream read into a wr_lines_t, with backpressure at a high-water mark
 * that always leaves room for one whole partial record. Includes uv.h (see linestream.h). */
#include "linestream.h"

#include <unistd.h>

enum {
    CHUNK = 64 * 1024,   /* bytes offered to one libuv read */
    HIGH_WATER = 1 << 20 /* at least this many buffered bytes before a pause */
};

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    wr_linestream_t *ls = h->data;
    size_t got = 0;
    char *p = wr_lines_space(ls->lines, CHUNK, &got);
    if (got > CHUNK) {
        got = CHUNK;
    }
    *buf = uv_buf_init(p, (unsigned)got); /* 0 bytes: libuv reports UV_ENOBUFS */
}

static void pause_reading(wr_linestream_t *ls)
{
    if (ls->reading) {
        uv_read_stop(&ls->h.stream);
        ls->reading = 0;
        ls->paused = 1;
    }
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    wr_linestream_t *ls = st->data;
    if (nread > 0) {
        wr_lines_commit(ls->lines, (size_t)nread);
        ls->cb(ls, nread);
        if (wr_lines_pending(ls->lines) > ls->high_water) {
            pause_reading(ls);
        }
        return;
    }
    if (nread == 0) {
        return;
    }
    if (nread == UV_ENOBUFS) {
        pause_reading(ls);
        return;
    }
    uv_read_stop(st);
    ls->reading = 0;
    ls->paused = 0;
    ls->cb(ls, nread);
}

int wr_linestream_init(wr_linestream_t *ls, uv_loop_t *loop, int fd, uv_handle_type type,
                       wr_lines_t *lines, wr_linestream_cb *cb, void *data)
{
    ls->lines = lines;
    ls->cb = cb;
    ls->data = data;
    size_t partial = wr_lines_partial_max(lines) + CHUNK;
    ls->high_water = partial > HIGH_WATER ? partial : HIGH_WATER;
    int rc;
    if (type == UV_TTY) {
        rc = uv_tty_init(loop, &ls->h.tty, fd, 1);
        ls->handle_open = rc == 0;
    } else if (type == UV_TCP) {
        rc = uv_tcp_init(loop, &ls->h.tcp);
        ls->handle_open = rc == 0;
        if (rc == 0) {
            rc = uv_tcp_open(&ls->h.tcp, fd);
        }
    } else {
        rc = uv_pipe_init(loop, &ls->h.pipe, 0);
        ls->handle_open = rc == 0;
        if (rc == 0) {
            rc = uv_pipe_open(&ls->h.pipe, fd);
        }
    }
    if (rc == 0) {
        ls->h.handle.data = ls;
    } else {
        close(fd);
    }
    return rc;
}

int wr_linestream_start(wr_linestream_t *ls)
{
    int rc = uv_read_start(&ls->h.stream, on_alloc, on_read);
    if (rc == 0) {
        ls->reading = 1;
        ls->paused = 0;
    }
    return rc;
}

int wr_linestream_resume(wr_linestream_t *ls)
{
    if (!ls->paused || wr_lines_pending(ls->lines) > ls->high_water / 2) {
        return 0;
    }
    int rc = wr_linestream_start(ls);
    if (rc < 0) {
        ls->paused = 0;
    }
    return rc;
}

void wr_linestream_pause(wr_linestream_t *ls)
{
    pause_reading(ls);
}

void wr_linestream_stop(wr_linestream_t *ls)
{
    if (ls->reading) {
        uv_read_stop(&ls->h.stream);
        ls->reading = 0;
    }
    ls->paused = 0;
}

void wr_linestream_close(wr_linestream_t *ls)
{
    if (ls->handle_open) {
        ls->handle_open = 0;
        uv_close(&ls->h.handle, NULL);
    }
}
