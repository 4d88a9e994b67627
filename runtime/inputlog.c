/* SPDX-License-Identifier: MIT */
/* inputlog.c: the input log of a socket or pipe source (inputlog.h). */
#define _GNU_SOURCE /* fallocate's FALLOC_FL_PUNCH_HOLE */
#include "inputlog.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"

enum { BLOCK = 4096 };

void wr_inputlog_init(wr_inputlog_t *g)
{
    g->fd = -1;
    g->end = 0;
    g->fed = 0;
    g->replay_end = 0;
    g->released = 0;
}

double wr_inputlog_check(const wr_inputlog_t *g, int64_t offset)
{
    char buf[WR_INPUTLOG_CHECK];
    int64_t from = offset > WR_INPUTLOG_CHECK ? offset - WR_INPUTLOG_CHECK : 0;
    size_t want = (size_t)(offset - from);
    size_t got = 0;
    if (g->fd < 0) {
        return -1;
    }
    while (got < want) {
        ssize_t r = pread(g->fd, buf + got, want - got, (off_t)(from + (int64_t)got));
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

int wr_inputlog_open(wr_inputlog_t *g, const char *path, int64_t from, double check, char *why,
                     size_t cap)
{
    why[0] = '\0';
    int flags = O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | (from < 0 ? O_TRUNC : 0);
    int fd;
    do {
        fd = open(path, flags, 0666);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        return -errno;
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int code = -errno;
        close(fd);
        return code;
    }
    g->fd = fd;
    g->end = (int64_t)st.st_size;
    if (from < 0) {
        g->fed = g->replay_end = g->end;
        return 0;
    }
    if (g->end < from) {
        snprintf(why, cap, "the input log %s has %lld bytes, the checkpoint read %lld", path,
                 (long long)g->end, (long long)from);
    } else if (check >= 0 && wr_inputlog_check(g, from) != check) {
        snprintf(why, cap, "the input log %s changed (its bytes before offset %lld differ)", path,
                 (long long)from);
    }
    if (why[0] != '\0') {
        close(fd);
        g->fd = -1;
        return -EINVAL;
    }
    g->fed = from;
    g->replay_end = g->end;
    return 0;
}

int wr_inputlog_replaying(const wr_inputlog_t *g)
{
    return g->fd >= 0 && g->fed < g->replay_end;
}

int wr_inputlog_replay(wr_inputlog_t *g, wr_lines_t *l, size_t chunk, size_t min_room)
{
    size_t got = 0;
    char *p = wr_lines_space(l, chunk, &got);
    if (got < min_room && l->pinned) {
        return 1;
    }
    size_t left = (size_t)(g->replay_end - g->fed);
    if (got > left) {
        got = left;
    }
    ssize_t r;
    do {
        r = pread(g->fd, p, got, (off_t)g->fed);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        return -errno;
    }
    if (r == 0) {
        return -EIO; /* the log shrank under us */
    }
    wr_lines_commit(l, (size_t)r);
    g->fed += r;
    return 0;
}

int wr_inputlog_append(wr_inputlog_t *g, const char *p, size_t n)
{
    if (g->fd < 0) {
        return 0;
    }
    size_t left = n;
    while (left > 0) {
        ssize_t w = write(g->fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0) {
            return -errno;
        }
        if (w == 0) {
            return -ENOSPC;
        }
        p += w;
        left -= (size_t)w;
    }
    g->end += (int64_t)n;
    g->fed = g->end;
    return 0;
}

int64_t wr_inputlog_position(const wr_inputlog_t *g, size_t pending)
{
    return g->fed - (int64_t)pending;
}

int wr_inputlog_release(wr_inputlog_t *g, int64_t offset)
{
    int64_t upto = (offset - WR_INPUTLOG_CHECK) / BLOCK * BLOCK;
    if (g->fd < 0 || upto <= g->released) {
        return 0;
    }
    if (fallocate(g->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)g->released,
                  (off_t)(upto - g->released)) < 0) {
        return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : -errno;
    }
    g->released = upto;
    return 0;
}

void wr_inputlog_close(wr_inputlog_t *g)
{
    if (g->fd >= 0) {
        close(g->fd);
    }
    g->fd = -1;
}
