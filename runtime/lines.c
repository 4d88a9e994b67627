/* SPDX-License-Identifier: MIT */
/* lines.c: the record splitter. Invariant: buf[head, tail) holds the bytes not yet cut; while a
 * returned record is pinned the buffer neither moves nor shrinks, so a batch of records handed
 * to Lua stays valid until the source releases them at the start of the next poll. */
#include "lines.h"

#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

void wr_lines_init(wr_lines_t *l, const char *delimiter, int64_t max_bytes)
{
    const char *d = delimiter ? delimiter : "\n";
    assert(d[0] != '\0');
    memset(l, 0, sizeof *l);
    l->delim = wr_xstrdup(d);
    l->delim_len = strlen(d);
    l->strip_cr = strcmp(d, "\n") == 0;
    l->max_bytes = max_bytes > 0 ? (size_t)max_bytes : (size_t)WR_LINES_DEFAULT_MAX;
}

void wr_lines_close(wr_lines_t *l)
{
    wr_free(l->buf);
    wr_free(l->delim);
    memset(l, 0, sizeof *l);
}

char *wr_lines_space(wr_lines_t *l, size_t want, size_t *got)
{
    if (!l->pinned && l->cap - l->tail < want) {
        /* Slide the unconsumed bytes to the front first; grow only if that is not enough. */
        size_t pending = l->tail - l->head;
        if (l->head > 0) {
            memmove(l->buf, l->buf + l->head, pending);
            l->search = l->search > l->head ? l->search - l->head : 0;
            l->head = 0;
            l->tail = pending;
        }
        if (l->cap - l->tail < want) {
            size_t cap = l->cap ? l->cap : 4096;
            while (cap - l->tail < want) {
                if (cap > SIZE_MAX / 2) {
                    cap = l->tail + want; /* the allocator aborts if this cannot be had */
                    break;
                }
                cap *= 2;
            }
            l->buf = wr_xrealloc(l->buf, cap);
            l->cap = cap;
        }
    }
    *got = l->cap - l->tail;
    return l->buf ? l->buf + l->tail : NULL;
}

void wr_lines_commit(wr_lines_t *l, size_t n)
{
    assert(n <= l->cap - l->tail);
    l->tail += n;
}

static const char *find_delimiter(const wr_lines_t *l, size_t from)
{
    size_t n = l->tail - from;
    if (n < l->delim_len) {
        return NULL;
    }
    if (l->delim_len == 1) {
        return memchr(l->buf + from, l->delim[0], n);
    }
    /* memmem is a GNU extension; a first-byte scan is as good for short delimiters */
    const char *p = l->buf + from;
    const char *last = l->buf + l->tail - l->delim_len;
    while (p <= last) {
        p = memchr(p, l->delim[0], (size_t)(last - p) + 1);
        if (p == NULL) {
            return NULL;
        }
        if (memcmp(p + 1, l->delim + 1, l->delim_len - 1) == 0) {
            return p;
        }
        p++;
    }
    return NULL;
}

size_t wr_lines_partial_max(const wr_lines_t *l)
{
    /* The tail may hold the first delim_len - 1 bytes of a delimiter, and a "\r" to strip. */
    return l->max_bytes + (l->delim_len - 1) + (size_t)l->strip_cr;
}

/* Fills rec with buf[start, start + len) as record number l->count, or reports it dropped. */
static int cut(wr_lines_t *l, size_t start, size_t len, int flags, wr_line_t *rec)
{
    const char *p = l->buf + start;
    if (l->strip_cr && len > 0 && p[len - 1] == '\r') {
        len--;
    }
    l->count++;
    rec->index = l->count;
    rec->flags = flags;
    if (len > l->max_bytes) {
        rec->ptr = NULL;
        rec->len = 0;
        return WR_LINES_DROPPED;
    }
    rec->ptr = p;
    rec->len = len;
    l->pinned = 1;
    return WR_LINES_RECORD;
}

int wr_lines_next(wr_lines_t *l, wr_line_t *rec)
{
    size_t from = l->search > l->head ? l->search : l->head;
    const char *hit = find_delimiter(l, from);
    if (hit == NULL) {
        /* Nothing before tail - (delim_len - 1) can start a delimiter any more. */
        size_t keep = l->delim_len - 1;
        size_t pending = l->tail - l->head;
        l->search = pending > keep ? l->tail - keep : l->head;
        if (!l->skipping && pending > wr_lines_partial_max(l)) {
            l->skipping = 1;
        }
        if (l->skipping) {
            l->head = l->search;
        }
        return WR_LINES_NONE;
    }
    size_t start = l->head;
    size_t end = (size_t)(hit - l->buf);
    l->head = end + l->delim_len;
    l->search = l->head;
    if (l->skipping) {
        l->skipping = 0;
        l->count++;
        rec->ptr = NULL;
        rec->len = 0;
        rec->index = l->count;
        rec->flags = 0;
        return WR_LINES_DROPPED;
    }
    return cut(l, start, end - start, 0, rec);
}

int wr_lines_finish(wr_lines_t *l, wr_line_t *rec)
{
    if (l->finished) {
        return WR_LINES_NONE;
    }
    l->finished = 1;
    size_t start = l->head;
    size_t len = l->tail - l->head;
    l->head = l->tail;
    l->search = l->tail;
    if (l->skipping) {
        l->skipping = 0;
        l->count++;
        rec->ptr = NULL;
        rec->len = 0;
        rec->index = l->count;
        rec->flags = WR_LINE_TRUNCATED_EOF;
        return WR_LINES_DROPPED;
    }
    if (len == 0) {
        return WR_LINES_NONE;
    }
    return cut(l, start, len, WR_LINE_TRUNCATED_EOF, rec);
}

void wr_lines_reopen(wr_lines_t *l)
{
    assert(l->head == l->tail && !l->skipping); /* finish cut everything */
    l->finished = 0;
}

void wr_lines_release(wr_lines_t *l)
{
    l->pinned = 0;
    if (l->head == l->tail) {
        l->head = l->tail = l->search = 0;
    }
}

size_t wr_lines_pending(const wr_lines_t *l)
{
    return l->tail - l->head;
}

/* The length cut() would give buf[start, start + len) after stripping the "\r". */
static size_t record_len(const wr_lines_t *l, size_t start, size_t len)
{
    if (l->strip_cr && len > 0 && l->buf[start + len - 1] == '\r') {
        return len - 1;
    }
    return len;
}

/* Replays wr_lines_next and wr_lines_finish without cutting: usually the first delimiter
 * decides; only records that would be dropped make it look further. */
int wr_lines_has_record(const wr_lines_t *l, int at_eof)
{
    size_t start = l->head;
    size_t from = l->search > l->head ? l->search : l->head;
    int skipping = l->skipping;
    const char *hit;
    while ((hit = find_delimiter(l, from)) != NULL) {
        size_t end = (size_t)(hit - l->buf);
        if (!skipping && record_len(l, start, end - start) <= l->max_bytes) {
            return 1;
        }
        skipping = 0;
        start = end + l->delim_len;
        from = start;
    }
    if (!at_eof || l->finished || skipping || start == l->tail) {
        return 0;
    }
    return record_len(l, start, l->tail - start) <= l->max_bytes;
}
