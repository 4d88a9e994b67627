/* SPDX-License-Identifier: MIT */
/* source_file.c: read_text_file and stdin. A regular file is always ready: each fill reads
 * ~256 KiB chunks with read(2) until the batch is full or the file ends, so a big file comes in
 * batches of the poll's max. A pipe, tty or socket on the descriptor is read with libuv and
 * stops reading while much complete text waits for Lua (backpressure). With a record layout
 * (weir_source_parse_fields) lines are parsed into records in a buffer of its own, which Lua
 * reads before the next poll; the line splitting is the same. */
#include "source_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "fields.h"
#include "inputlog.h"
#include "lines.h"
#include "linestream.h"
#include "loop.h"
#include "mem.h"
#include "rt.h"
#include "source.h"

enum {
    FILE_CHUNK = 256 * 1024,   /* bytes per read(2) of a regular file */
    FILE_MIN_READ = 16 * 1024  /* less room than this while records are pinned: wait a poll */
};

typedef struct file_source {
    wr_source_t base;
    char *path; /* NULL: standard input */
    int fd;     /* -1 until opened; closed by us only if own_fd */
    int own_fd;
    int streaming; /* read through ls */
    wr_linestream_t ls;
    int eof;
    wr_lines_t lines;
    weir_fields_t *fields; /* owned; NULL: lines go out as text */
    char *recs;            /* owned: WEIR_BATCH_MAX records, this poll's, read by Lua */
    int32_t recs_used;
    int regular;       /* the descriptor is a regular file: it can be read again from an offset */
    int64_t read_to;   /* regular: the file offset of the buffer's tail */
    int seeked;        /* weir_source_seek: open continues from seek_at */
    weir_source_position_t seek_at;
    /* a stream with --input-log (inputlog.h): bytes read are logged; a restore replays the
     * log's bytes after the checkpoint before the stream starts */
    wr_inputlog_t log;
    int live_waits; /* the stream starts reading once the replay is done */
} file_source_t;

static file_source_t *file_of(wr_source_t *s)
{
    return (file_source_t *)s;
}

static void on_stream(wr_linestream_t *ls, ssize_t n)
{
    file_source_t *f = ls->data;
    wr_source_t *s = &f->base;
    if (n > 0) {
        s->stat[WEIR_STAT_BYTES] += (double)n;
        int rc = wr_inputlog_append(&f->log, f->lines.buf + f->lines.tail - n, (size_t)n);
        if (rc < 0) {
            wr_linestream_stop(ls);
            wr_loop_fail(s->rt, rc, "%s: input log %s: %s", s->describe, s->input_log,
                         weir_strerror(rc));
        }
    } else if (n != UV_EOF) {
        wr_loop_fail(s->rt, (int)n, "%s: %s", s->describe, weir_strerror((int)n));
    } else {
        f->eof = 1;
    }
}

/* fd is a pipe, tty or socket: hand it to a libuv stream. For stdin the handle gets a
 * duplicate, so closing the handle leaves descriptor 0 alone. */
static int open_stream(file_source_t *f, int fd, uv_handle_type type)
{
    wr_source_t *s = &f->base;
    uv_loop_t *loop = &s->rt->loop;
    int sfd = fd;
    if (f->path == NULL) {
        sfd = dup(fd);
        if (sfd < 0) {
            int code = uv_translate_sys_error(errno);
            return wr_err_set(&s->rt->err, code, "%s: %s", s->describe, weir_strerror(code));
        }
    } else {
        f->own_fd = 0; /* the handle closes it */
    }
    int rc = wr_linestream_init(&f->ls, loop, sfd, type, &f->lines, on_stream, f);
    if (rc == 0) {
        f->streaming = 1;
        s->io = 1;
        if (wr_inputlog_replaying(&f->log)) {
            f->live_waits = 1; /* file_fill starts it after the replay */
        } else {
            rc = wr_linestream_start(&f->ls);
        }
    }
    if (rc < 0) {
        return wr_err_set(&s->rt->err, rc, "%s: %s", s->describe, weir_strerror(rc));
    }
    return 0;
}

enum { CHECK_BYTES = 4096 }; /* the bytes before a checkpoint's offset that must not change */

/* crc32 of the up to CHECK_BYTES bytes of fd before offset, or -1 when they cannot be read. */
static double check_before(int fd, int64_t offset)
{
    char buf[CHECK_BYTES];
    int64_t from = offset > CHECK_BYTES ? offset - CHECK_BYTES : 0;
    size_t want = (size_t)(offset - from);
    size_t got = 0;
    while (got < want) {
        ssize_t r = pread(fd, buf + got, want - got, (off_t)(from + (int64_t)got));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return -1;
        }
        got += (size_t)r;
    }
    return (double)weir_ckpt_crc32(0, buf, got);
}

/* A restore: the same file (at least as long, the same bytes before the offset), read on from
 * the offset with the line count and the overlong-line state of the checkpoint. */
static int continue_at(file_source_t *f, const struct stat *st)
{
    wr_source_t *s = &f->base;
    const weir_source_position_t *p = &f->seek_at;
    int64_t offset = (int64_t)p->offset;
    if ((int64_t)st->st_size < offset) {
        return wr_err_set(&s->rt->err, WEIR_ESOURCE,
                          "%s: cannot continue from the checkpoint: the file has %lld bytes, the "
                          "checkpoint read %lld",
                          s->describe, (long long)st->st_size, (long long)offset);
    }
    if (p->check >= 0 && check_before(f->fd, offset) != p->check) {
        return wr_err_set(&s->rt->err, WEIR_ESOURCE,
                          "%s: cannot continue from the checkpoint: the file changed (its bytes "
                          "before offset %lld differ)",
                          s->describe, (long long)offset);
    }
    if (lseek(f->fd, (off_t)offset, SEEK_SET) < 0) {
        int code = uv_translate_sys_error(errno);
        return wr_err_set(&s->rt->err, code, "%s: %s", s->describe, weir_strerror(code));
    }
    f->read_to = offset;
    f->lines.count = (int64_t)p->line;
    f->lines.skipping = p->skipping != 0;
    s->stat[WEIR_STAT_BYTES] = (double)offset; /* what was consumed, not what was buffered */
    return 0;
}

static int file_open(wr_source_t *s)
{
    file_source_t *f = file_of(s);
    int fd = 0;
    if (f->path != NULL) {
        do {
            fd = open(f->path, O_RDONLY | O_CLOEXEC);
        } while (fd < 0 && errno == EINTR);
        if (fd < 0) {
            int code = uv_translate_sys_error(errno);
            return wr_err_set(&s->rt->err, code, "%s: %s", s->describe, weir_strerror(code));
        }
        f->own_fd = 1;
    }
    f->fd = fd;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int code = uv_translate_sys_error(errno);
        return wr_err_set(&s->rt->err, code, "%s: %s", s->describe, weir_strerror(code));
    }
    if (S_ISDIR(st.st_mode)) {
        return wr_err_set(&s->rt->err, UV_EISDIR, "%s: %s", s->describe, weir_strerror(UV_EISDIR));
    }
    int from_log = f->seeked && f->seek_at.replayable == 2;
    if (S_ISREG(st.st_mode)) {
        f->regular = 1;
        if (from_log) {
            return wr_err_set(&s->rt->err, WEIR_ESOURCE,
                              "%s: cannot continue from the checkpoint: it read a pipe through "
                              "its input log, and this is a regular file",
                              s->describe);
        }
        return f->seeked ? continue_at(f, &st) : 0;
    }
    uv_handle_type type = uv_guess_handle(fd);
    int stream = type == UV_TTY || type == UV_NAMED_PIPE || type == UV_TCP;
    if (f->seeked && !(from_log && stream)) {
        return wr_err_set(&s->rt->err, WEIR_ESOURCE,
                          "%s: cannot continue from the checkpoint: not a regular file",
                          s->describe);
    }
    if (stream && s->input_log != NULL) {
        char why[512];
        int rc = wr_inputlog_open(&f->log, s->input_log, from_log ? (int64_t)f->seek_at.offset : -1,
                                  from_log ? f->seek_at.check : -1, why, sizeof why);
        if (rc < 0) {
            return why[0] ? wr_err_set(&s->rt->err, WEIR_ESOURCE,
                                       "%s: cannot continue from the checkpoint: %s",
                                       s->describe, why)
                          : wr_err_set(&s->rt->err, rc, "%s: input log %s: %s", s->describe,
                                       s->input_log, weir_strerror(rc));
        }
        if (from_log) {
            f->lines.count = (int64_t)f->seek_at.line;
            f->lines.skipping = f->seek_at.skipping != 0;
        }
    }
    if (stream) {
        return open_stream(f, fd, type);
    }
    return 0; /* a character device such as /dev/null: plain reads */
}

static void file_begin(wr_source_t *s)
{
    file_source_t *f = file_of(s);
    wr_lines_release(&f->lines);
    f->recs_used = 0; /* Lua has read the records of the previous poll */
    if (!f->streaming && !f->eof && !s->stopping && f->fd >= 0) {
        /* Make room for a whole chunk now, while nothing is pinned, so that a read in the
         * middle of this poll never has to wait for the next one: batches stay full. */
        size_t room = 0;
        wr_lines_space(&f->lines, FILE_CHUNK, &room);
    }
    if (!s->stopping && !f->eof && !s->paused) {
        wr_linestream_resume(&f->ls); /* a failure leaves it stopped */
    }
}

int wr_source_file_read(int fd, wr_lines_t *l, size_t chunk, size_t min_room, size_t *nread)
{
    *nread = 0;
    size_t got = 0;
    char *p = wr_lines_space(l, chunk, &got);
    if (got < min_room && l->pinned) {
        return 1;
    }
    if (got > 4 * chunk) {
        got = 4 * chunk;
    }
    ssize_t r;
    do {
        r = read(fd, p, got);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return uv_translate_sys_error(errno);
    }
    if (r > 0) {
        wr_lines_commit(l, (size_t)r);
        *nread = (size_t)r;
    }
    return 0;
}

/* One read(2) into the buffer. Returns 0 after progress (bytes or EOF), -1 when the poll must
 * go on without it (a failure, or no room while this poll's records pin the buffer). */
static int read_chunk(file_source_t *f)
{
    wr_source_t *s = &f->base;
    size_t n = 0;
    int rc = wr_source_file_read(f->fd, &f->lines, FILE_CHUNK, FILE_MIN_READ, &n);
    if (rc < 0) {
        wr_loop_fail(s->rt, rc, "%s: %s", s->describe, weir_strerror(rc));
    }
    if (rc != 0) {
        return -1;
    }
    if (n == 0) {
        f->eof = 1;
    } else {
        s->stat[WEIR_STAT_BYTES] += (double)n;
        f->read_to += (int64_t)n;
    }
    return 0;
}

static void file_fill(wr_source_t *s)
{
    file_source_t *f = file_of(s);
    weir_rt_t *rt = s->rt;
    for (;;) {
        /* After STOP only complete records still count: the partial tail is dropped. */
        int at_eof = f->eof && !s->stopping;
        int drained = f->fields == NULL
                          ? wr_source_emit_text(rt, s, &f->lines, at_eof)
                          : wr_source_emit_fields(rt, s, &f->lines, at_eof, f->fields, f->recs,
                                                WEIR_BATCH_MAX, &f->recs_used);
        if (!drained) {
            return;
        }
        if (s->stopping) {
            wr_source_emit_end(rt, s, WEIR_END_STOPPED);
            return;
        }
        if (f->eof) {
            wr_source_emit_end(rt, s, WEIR_END_EXHAUSTED);
            return;
        }
        if (f->streaming && wr_inputlog_replaying(&f->log)) {
            /* a restore with an input log: its bytes after the checkpoint come first */
            int64_t before = f->log.fed;
            int rc = wr_inputlog_replay(&f->log, &f->lines, FILE_CHUNK, FILE_MIN_READ);
            if (rc < 0) {
                wr_loop_fail(rt, rc, "%s: input log %s: %s", s->describe, s->input_log,
                             weir_strerror(rc));
                return;
            }
            if (rc == 1) {
                return;
            }
            s->stat[WEIR_STAT_BYTES] += (double)(f->log.fed - before);
            if (!wr_inputlog_replaying(&f->log) && f->live_waits) {
                /* replayed: live input now (started here, so the loop waits for it) */
                f->live_waits = 0;
                rc = wr_linestream_start(&f->ls);
                if (rc < 0) {
                    wr_loop_fail(rt, rc, "%s: %s", s->describe, weir_strerror(rc));
                    return;
                }
            }
            continue;
        }
        if (f->streaming || read_chunk(f) < 0) {
            return;
        }
    }
}

/* A regular file (or device) read here is waiting until read(2) reports EOF: the next poll
 * reads it without waiting. A stream is waiting when weir holds a complete record, or the
 * kernel holds bytes for it; a half line is not, until EOF makes it the last record. After
 * STOP only complete records are still delivered. */
static int file_pending(const wr_source_t *s, int64_t now_ms)
{
    (void)now_ms;
    const file_source_t *f = (const file_source_t *)s;
    if (s->stopping) {
        return wr_lines_has_record(&f->lines, 0);
    }
    if (wr_lines_has_record(&f->lines, f->eof) || wr_inputlog_replaying(&f->log)) {
        return 1;
    }
    if (!f->streaming) {
        return !f->eof && f->fd >= 0;
    }
    return !f->eof && f->ls.handle_open && wr_source_unread(&f->ls.h.handle);
}

static void file_stop(wr_source_t *s)
{
    wr_linestream_stop(&file_of(s)->ls);
}

/* Watermark alignment: a stream stops reading now (a regular file is read only in fill,
 * which the loop skips while paused); file_begin reads again after the resume. */
static void file_pause(wr_source_t *s, int on)
{
    file_source_t *f = file_of(s);
    if (on && f->streaming) {
        wr_linestream_pause(&f->ls);
    }
}

static void file_close(wr_source_t *s)
{
    file_source_t *f = file_of(s);
    wr_linestream_close(&f->ls); /* the runtime frees f after the loop has run */
    if (f->own_fd && f->fd >= 0) {
        close(f->fd);
    }
    f->own_fd = 0;
    f->fd = -1;
}

static void file_destroy(wr_source_t *s)
{
    file_source_t *f = file_of(s);
    wr_inputlog_close(&f->log);
    wr_lines_close(&f->lines);
    weir_fields_free(f->fields);
    wr_free(f->recs);
    wr_free(f->path);
    wr_free(f);
}

/* Between polls every record cut has been delivered and processed, so what is still buffered
 * (pending) is exactly what a restore must read again. */
static void file_position(const wr_source_t *s, weir_source_position_t *pos)
{
    const file_source_t *f = (const file_source_t *)s;
    if (f->seeked && f->fd < 0) {
        *pos = f->seek_at; /* not started yet: where it will continue */
        return;
    }
    if (f->log.fd >= 0) {
        int64_t at = wr_inputlog_position(&f->log, wr_lines_pending(&f->lines));
        pos->offset = (double)at;
        pos->line = (double)f->lines.count;
        pos->skipping = f->lines.skipping;
        pos->replayable = 2; /* an offset in the input log */
        pos->check = wr_inputlog_check(&f->log, at);
        return;
    }
    int64_t offset = f->read_to - (int64_t)wr_lines_pending(&f->lines);
    pos->offset = (double)offset;
    pos->line = (double)f->lines.count;
    pos->skipping = f->lines.skipping;
    pos->replayable = f->fd >= 0 ? f->regular : f->path != NULL;
    pos->check = f->regular ? check_before(f->fd, offset) : -1;
}

static int file_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    file_source_t *f = file_of(s);
    if (!(pos->offset >= 0 && pos->offset < 9.0e15 && pos->line >= 0)) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL, "%s: bad position", s->describe);
    }
    if (pos->replayable == 2 && s->input_log == NULL) {
        return wr_err_set(&s->rt->err, WEIR_EINVAL,
                          "%s: the checkpoint continues from the input log: run with "
                          "--input-log",
                          s->describe);
    }
    f->seek_at = *pos;
    f->seeked = 1;
    return 0;
}

static int file_release_log(wr_source_t *s, int64_t offset)
{
    file_source_t *f = file_of(s);
    return wr_inputlog_release(&f->log, offset);
}

static const wr_source_ops_t file_ops = {
    .open = file_open,
    .begin = file_begin,
    .fill = file_fill,
    .next_due = NULL,
    .pending = file_pending,
    .stop = file_stop,
    .close = file_close,
    .destroy = file_destroy,
    .position = file_position,
    .seek = file_seek,
    .release_log = file_release_log,
    .pause = file_pause,
};

int32_t wr_source_file_add(weir_rt_t *rt, const char *kind, const char *path,
                           const char *delimiter, int32_t max_line_bytes)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    if (delimiter != NULL && delimiter[0] == '\0') {
        return wr_err_set(&rt->err, WEIR_EINVAL, "%s: the delimiter is empty", kind);
    }
    file_source_t *f = wr_xcalloc(1, sizeof *f);
    f->base.ops = &file_ops;
    f->base.kind = kind;
    f->fd = -1;
    wr_inputlog_init(&f->log);
    f->path = path ? wr_xstrdup(path) : NULL;
    wr_lines_init(&f->lines, delimiter, max_line_bytes);

    size_t n = strlen(kind) + (path ? strlen(path) : 0) + 2;
    char *describe = wr_xmalloc(n);
    if (path != NULL) {
        snprintf(describe, n, "%s %s", kind, path);
    } else {
        snprintf(describe, n, "%s", kind);
    }
    int32_t id = wr_source_add(rt, &f->base, describe);
    wr_free(describe);
    return id;
}

int32_t weir_source_file(weir_rt_t *rt, const char *path, const char *delimiter,
                         int32_t max_line_bytes)
{
    if (rt != NULL && path == NULL) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "read_text_file: no path");
    }
    return wr_source_file_add(rt, "read_text_file", path, delimiter, max_line_bytes);
}

int weir_source_parse_fields(weir_rt_t *rt, int32_t source, const weir_fields_t *fields)
{
    if (rt == NULL) {
        return WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "parse_fields: the runtime has started");
    }
    if (source < 0 || source >= rt->nsources || rt->sources[source]->ops != &file_ops
        || fields == NULL) {
        return wr_err_set(&rt->err, WEIR_EINVAL, "parse_fields: not a file or stdin source");
    }
    file_source_t *f = file_of(rt->sources[source]);
    weir_fields_free(f->fields);
    wr_free(f->recs);
    f->fields = wr_fields_copy(fields);
    f->recs = wr_xreallocarray(NULL, WEIR_BATCH_MAX, (size_t)wr_fields_size(fields));
    return 0;
}
