/* SPDX-License-Identifier: MIT */
/* lines.h: the record splitter shared by every text source. Pure: bytes in, records out, no I/O.
 * A record is the text between two occurrences of the delimiter (several bytes allowed); NUL
 * bytes and invalid UTF-8 pass through untouched. With the delimiter exactly "\n" one trailing
 * "\r" is removed from each record. A record longer than max_bytes is not returned: it is
 * skipped up to the next delimiter (memory stays bounded by about max_bytes) and reported as
 * dropped, with its index, so the caller can count and report it. */
#ifndef WR_LINES_H
#define WR_LINES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum {
    WR_LINES_DEFAULT_MAX = 1 << 20, /* max_bytes <= 0 means this: 1 MiB */

    /* results of wr_lines_next and wr_lines_finish */
    WR_LINES_NONE = 0,    /* no complete record buffered (or, from finish, nothing left) */
    WR_LINES_RECORD = 1,  /* rec holds a record */
    WR_LINES_DROPPED = 2, /* a record longer than max_bytes was skipped; rec->index says which */

    /* wr_line_t.flags */
    WR_LINE_TRUNCATED_EOF = 1 /* the last record of an input (or connection) had no delimiter */
};

typedef struct wr_lines {
    char *buf;       /* owned; bytes [head, tail) are buffered and not yet cut */
    size_t cap;
    size_t head;
    size_t tail;
    size_t search;   /* no delimiter starts in [head, search): resume the search here */
    char *delim;     /* owned copy */
    size_t delim_len;
    int strip_cr;
    size_t max_bytes;
    int pinned;      /* a record pointing into buf was returned since the last release */
    int skipping;    /* inside an overlong record, discarding bytes */
    int finished;    /* wr_lines_finish has run */
    int64_t count;   /* records cut so far, dropped ones included */
} wr_lines_t;

typedef struct wr_line {
    const char *ptr; /* borrowed from the splitter's buffer until wr_lines_release */
    size_t len;
    int64_t index;   /* 1-based record number, dropped records included */
    int flags;       /* WR_LINE_* */
} wr_line_t;

/* delimiter: NULL means "\n"; must not be empty (the caller validates). max_bytes <= 0 means
 * WR_LINES_DEFAULT_MAX. */
void wr_lines_init(wr_lines_t *l, const char *delimiter, int64_t max_bytes);
void wr_lines_close(wr_lines_t *l);

/* Room to append bytes: returns where to write and sets *got to the bytes available there.
 * While records are pinned the buffer never moves, so *got may be smaller than want (even 0);
 * otherwise the buffer is compacted or grown so that *got >= want. */
char *wr_lines_space(wr_lines_t *l, size_t want, size_t *got);
/* n bytes were written at the pointer wr_lines_space returned. */
void wr_lines_commit(wr_lines_t *l, size_t n);

/* Cuts the next complete record. Returns WR_LINES_RECORD, WR_LINES_DROPPED or WR_LINES_NONE
 * (need more bytes). */
int wr_lines_next(wr_lines_t *l, wr_line_t *rec);
/* wr_lines_next inlined for its common case (a one-byte delimiter found, the record not too
 * long, not skipping), the same in every effect; the rest goes to wr_lines_next. The sources'
 * per-line path: the call layers cost more than finding a short line's end. */
static inline int wr_lines_next_inline(wr_lines_t *l, wr_line_t *rec)
{
    size_t from = l->search > l->head ? l->search : l->head;
    if (l->delim_len == 1 && !l->skipping && from < l->tail) {
        const char *hit = memchr(l->buf + from, l->delim[0], l->tail - from);
        if (hit != NULL) {
            size_t start = l->head;
            size_t end = (size_t)(hit - l->buf);
            size_t len = end - start;
            if (l->strip_cr && len > 0 && l->buf[end - 1] == '\r') {
                len--;
            }
            if (len <= l->max_bytes) {
                l->head = end + 1;
                l->search = l->head;
                l->count++;
                rec->index = l->count;
                rec->flags = 0;
                rec->ptr = l->buf + start;
                rec->len = len;
                l->pinned = 1;
                return WR_LINES_RECORD;
            }
        }
    }
    return wr_lines_next(l, rec);
}
/* At end of input, once wr_lines_next returned WR_LINES_NONE: the non-empty leftover as a last
 * record flagged WR_LINE_TRUNCATED_EOF (or dropped if too long). Returns WR_LINES_NONE on every
 * later call. */
int wr_lines_finish(wr_lines_t *l, wr_line_t *rec);
/* After wr_lines_finish: more input follows (a socket's next connection). Its bytes start a new
 * record, never joining the finished input's last one, and wr_lines_finish works again. */
void wr_lines_reopen(wr_lines_t *l);
/* Records returned so far are no longer referenced: the buffer may move again. */
void wr_lines_release(wr_lines_t *l);

/* Bytes buffered and not yet cut into records. */
size_t wr_lines_pending(const wr_lines_t *l);
/* 1 when the buffered bytes hold a record that wr_lines_next would return (dropped ones do not
 * count), or, with at_eof, a leftover that wr_lines_finish would still return; else 0. A partial
 * record never counts without at_eof: its rest has not arrived. Changes nothing. */
int wr_lines_has_record(const wr_lines_t *l, int at_eof);
/* The most bytes that can be buffered without a complete record in them (a longer stretch is
 * an overlong record and gets discarded). */
size_t wr_lines_partial_max(const wr_lines_t *l);

#endif
