/* SPDX-License-Identifier: MIT */
/* csv.c: RFC 4180 rows. A field is either unquoted (any bytes but the separator and the quote)
 * or quoted: it starts with '"', ends at a '"' not followed by another, and "" inside stands for
 * one quote; the separator may be inside. A quoted field must be followed by the separator or
 * the end of the line. Every field is copied into one buffer of the line's size (a row never
 * grows by unquoting), so a split allocates only when a longer line or more fields come. Line
 * breaks are the line reader's: a quoted field cannot hold one (weir: a row is one line). */
#include "csv.h"

#include <stdio.h>
#include <string.h>

#include "mem.h"

typedef struct piece {
    size_t off; /* in buf */
    size_t len;
    int32_t column; /* 1-based, in the line */
} piece_t;

struct wr_csv {
    char sep;
    char *buf; /* owned: the fields' bytes */
    size_t buf_cap;
    piece_t *pieces; /* owned */
    int32_t n;
    int32_t cap;
    char why[160];
};

wr_csv_t *wr_csv_new(char sep)
{
    wr_csv_t *c = wr_xcalloc(1, sizeof *c);
    c->sep = sep;
    return c;
}

void wr_csv_free(wr_csv_t *c)
{
    if (c == NULL) {
        return;
    }
    wr_free(c->buf);
    wr_free(c->pieces);
    wr_free(c);
}

static void add_piece(wr_csv_t *c, size_t off, size_t len, size_t column)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 16;
        c->pieces = wr_xreallocarray(c->pieces, (size_t)c->cap, sizeof *c->pieces);
    }
    c->pieces[c->n++] = (piece_t){ off, len, (int32_t)(column < INT32_MAX ? column : INT32_MAX) };
}

static int32_t fail(wr_csv_t *c, size_t column, const char *what)
{
    snprintf(c->why, sizeof c->why, "column %zu: %s", column, what);
    return -1;
}

int32_t wr_csv_split(wr_csv_t *c, const char *line, size_t len)
{
    if (len + 1 > c->buf_cap) {
        c->buf_cap = len + 1;
        c->buf = wr_xrealloc(c->buf, c->buf_cap);
    }
    c->n = 0;
    size_t i = 0, out = 0;
    for (;;) {
        size_t start = out, column = i + 1;
        if (i < len && line[i] == '"') {
            size_t open = i + 1;
            i++;
            for (;;) {
                if (i == len) {
                    return fail(c, open, "the quoted field has no closing quote");
                }
                if (line[i] == '"') {
                    if (i + 1 < len && line[i + 1] == '"') {
                        c->buf[out++] = '"';
                        i += 2;
                        continue;
                    }
                    i++;
                    break;
                }
                c->buf[out++] = line[i++];
            }
            if (i < len && line[i] != c->sep) {
                return fail(c, i + 1, "expected the separator or the end of the line after the "
                                      "closing quote");
            }
        } else {
            while (i < len && line[i] != c->sep) {
                if (line[i] == '"') {
                    return fail(c, i + 1, "a quote inside an unquoted field (quote the field "
                                          "and write the quote twice)");
                }
                c->buf[out++] = line[i++];
            }
        }
        add_piece(c, start, out - start, column);
        if (i == len) {
            return c->n;
        }
        i++; /* the separator: another field follows, maybe empty */
    }
}

const char *wr_csv_field(const wr_csv_t *c, int32_t i, size_t *len)
{
    *len = c->pieces[i].len;
    return c->buf + c->pieces[i].off;
}

int32_t wr_csv_column(const wr_csv_t *c, int32_t i)
{
    return c->pieces[i].column;
}

const char *wr_csv_error(const wr_csv_t *c)
{
    return c->why;
}

/* ---- the FFI half ------------------------------------------------------------------------ */

weir_csv_t *weir_csv_new(int32_t sep)
{
    if (sep < 0 || sep > 255 || sep == '"') {
        return NULL;
    }
    return wr_csv_new((char)sep);
}

void weir_csv_free(weir_csv_t *c)
{
    wr_csv_free(c);
}

int32_t weir_csv_split(weir_csv_t *c, const char *line, int32_t len)
{
    if (c == NULL || len < 0 || (line == NULL && len > 0)) {
        return -1;
    }
    return wr_csv_split(c, line ? line : "", (size_t)len);
}

const char *weir_csv_get(const weir_csv_t *c, int32_t i, int32_t *len)
{
    if (c == NULL || i < 0 || i >= c->n) {
        *len = 0;
        return "";
    }
    size_t n = 0;
    const char *p = wr_csv_field(c, i, &n);
    *len = (int32_t)n;
    return p;
}

const char *weir_csv_error(const weir_csv_t *c)
{
    return c ? c->why : "";
}
