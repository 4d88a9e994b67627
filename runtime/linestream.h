/* SPDX-License-Identifier: MIT */
/* linestream.h: a pipe, tty or socket read through libuv into a line splitter, paused while
 * much text waits to be cut (backpressure). Shared by source_file.c (stdin and paths that are
 * streams) and source_repl.c (plain input); it includes uv.h, so only those files include it. */
#ifndef WR_LINESTREAM_H
#define WR_LINESTREAM_H

#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#include "lines.h"

typedef struct wr_linestream wr_linestream_t;

/* Called from uv_run: n > 0 bytes were committed to the lines, or the stream ended with n =
 * UV_EOF or an error code, once, after reading stopped for good. */
typedef void wr_linestream_cb(wr_linestream_t *ls, ssize_t n);

struct wr_linestream {
    union {
        uv_handle_t handle;
        uv_stream_t stream;
        uv_pipe_t pipe;
        uv_tty_t tty;
        uv_tcp_t tcp;
    } h;
    wr_lines_t *lines; /* borrowed: the owner's, outlives the stream */
    wr_linestream_cb *cb;
    void *data;        /* the owner's */
    size_t high_water; /* pause above this many buffered bytes, resume at half */
    int handle_open;
    int reading;
    int paused;        /* read stopped for backpressure */
};

/* Hands fd (a pipe, tty or socket, per type) to a new handle on loop, which then owns it; on
 * failure fd is closed here. Storage must be zeroed before. Returns 0 or a UV_E* code; once
 * handle_open is set, wr_linestream_close must run even after a failure. */
int wr_linestream_init(wr_linestream_t *ls, uv_loop_t *loop, int fd, uv_handle_type type,
                       wr_lines_t *lines, wr_linestream_cb *cb, void *data);
/* Starts reading. Returns 0 or a UV_E* code. */
int wr_linestream_start(wr_linestream_t *ls);
/* Reads again if paused for backpressure and the lines have drained to half the high-water
 * mark. Returns 0, or a UV_E* code with the stream no longer paused (it stays stopped). */
int wr_linestream_resume(wr_linestream_t *ls);
/* Stops reading until wr_linestream_resume (watermark alignment's pause: source_file.c). */
void wr_linestream_pause(wr_linestream_t *ls);
/* Stops reading for good (no resume). */
void wr_linestream_stop(wr_linestream_t *ls);
/* uv_close the handle, if open; the owner frees ls after the loop has run. */
void wr_linestream_close(wr_linestream_t *ls);

#endif
