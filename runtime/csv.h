/* SPDX-License-Identifier: MIT */
/* csv.h: one CSV row (RFC 4180) cut into its fields. Pure: no I/O, no libuv, no Lua. The
 * exported half (weir_csv_*) is in weir_ffi.h; fields.c uses it for typed records. */
#ifndef WR_CSV_H
#define WR_CSV_H

#include <stddef.h>
#include <stdint.h>

#include "weir.h"

typedef struct wr_csv wr_csv_t;

wr_csv_t *wr_csv_new(char sep);
void wr_csv_free(wr_csv_t *c);
/* Cuts line (len bytes, not NUL-terminated) into fields: their number, or -1 with the message
 * ("column 4: ...") for wr_csv_error. */
int32_t wr_csv_split(wr_csv_t *c, const char *line, size_t len);
/* Field i of the last split (unquoted, "" made one quote) and its length; valid until the next
 * split or free. */
const char *wr_csv_field(const wr_csv_t *c, int32_t i, size_t *len);
/* The 1-based byte column where field i starts in the line. */
int32_t wr_csv_column(const wr_csv_t *c, int32_t i);
const char *wr_csv_error(const wr_csv_t *c);

#endif
