/* SPDX-License-Identifier: MIT */
/* fields.h: lines parsed into fixed-size C records (the typed text path, DESIGN.md "Records"):
 * separated numbers and strings (fields.c), JSON objects (json.cc, the module's C++ half: the
 * door to simdjson, strict RFC 8259 with UTF-8 checked; a line simdjson rejects is read again
 * by jansson only to word where and what was expected) and CSV rows (through csv.c). Pure: no
 * I/O, no libuv, no Lua. The exported half (weir_fields_*, weir_json_*) is in weir_ffi.h; Lua
 * builds a layout from a weir.record_type (offsets, kinds, sizes, names) and the text sources
 * copy it. */
#ifndef WR_FIELDS_H
#define WR_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "weir.h"

#ifdef __cplusplus
extern "C" {
#endif

enum { WR_FIELDS_WHY = 256 }; /* the room for a failure's message */

/* A copy of f (the caller owns it; free with weir_fields_free): the layout and its format; a
 * CSV header already read comes along. */
weir_fields_t *wr_fields_copy(const weir_fields_t *f);
/* The record size in bytes. */
int32_t wr_fields_size(const weir_fields_t *f);
/* weir_fields_parse with a size_t length. */
int32_t wr_fields_parse(weir_fields_t *f, const char *line, size_t len, void *out);

/* The typed text path's one pass (source.c cuts a buffer of lines with it). scannable: 1 when
 * wr_fields_scan takes lines of f ending in the byte delim: text, every field an integer kind
 * or double, a separator and delimiter that cannot be part of a number, not the same byte.
 * scan: cuts the lines of [p, lim], where *lim is delim (the last delimiter of the bytes), and
 * parses each into the next of at most cap records of wr_fields_size(f) bytes at out; returns
 * how many, with *next at the start of the first line not taken (lim + 1 when all were). A
 * line is taken when its fields are what the one-pass path of wr_fields_parse reads (a sign,
 * then up to 18 digits, or up to 15 with at most one '.' for a double; the value in range),
 * separated by the separator, then the delimiter (or "\r" and the delimiter with strip_cr),
 * and its length without them is at most max_len: the same record wr_fields_parse makes.
 * The first other line stops the scan, and the caller cuts and parses it (or drops it) the
 * general way; lim is never read past. */
int wr_fields_scannable(const weir_fields_t *f, char delim);
size_t wr_fields_scan(const weir_fields_t *f, const char *p, const char *lim, char delim,
                      int strip_cr, size_t max_len, char *out, size_t cap, const char **next);

/* For the JSON filler (json.cc): the number of fields; the field called name (n bytes), trying
 * hint first, or -1; begin clears which fields a line filled, end fails naming the first one
 * not filled. The put functions store one JSON value into field i of rec; each fails (-1) with
 * the message in the layout when the value does not fit the field, or the field was filled
 * already; other names what the value is ("an object"). why sets the message; returns -1. */
/* Text lines then take the general path only, not the one-pass path for number fields (the
 * tests compare the two). */
void wr_fields_no_fast(weir_fields_t *f);
int32_t wr_fields_n(const weir_fields_t *f);
int32_t wr_fields_lookup(const weir_fields_t *f, const char *name, size_t n, int32_t hint);
void wr_fields_begin(weir_fields_t *f);
int wr_fields_end(weir_fields_t *f);
int wr_fields_put_number(weir_fields_t *f, int32_t i, double v, char *rec);
int wr_fields_put_bool(weir_fields_t *f, int32_t i, int b, char *rec);
int wr_fields_put_string(weir_fields_t *f, int32_t i, const char *p, size_t n, char *rec);
int wr_fields_put_other(weir_fields_t *f, int32_t i, const char *got);
int wr_fields_why(weir_fields_t *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* json.cc: a parser with its buffers (reused line after line). fill parses line (len bytes,
 * not NUL-terminated) as one JSON object and stores its members into the fields of f with
 * their names (members of other names are skipped; every field must be there, once): 0, or -1
 * with the message in f (weir_fields_error). */
typedef struct wr_json wr_json_t;
wr_json_t *wr_json_new(void);
void wr_json_free(wr_json_t *j);
int wr_json_fill(wr_json_t *j, weir_fields_t *f, const char *line, size_t len, void *out);

#ifdef __cplusplus
}
#endif

#endif
