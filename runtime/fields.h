/* SPDX-License-Identifier: MIT */
/* fields.h: lines of separated numbers parsed into fixed-size C records (the typed text path,
 * DESIGN.md "Records"). Pure: no I/O, no libuv, no Lua. The exported half (weir_fields_*) is in
 * weir_ffi.h; Lua builds a layout from a weir.record_type (offsets, kinds, size) and the text
 * sources copy it. */
#ifndef WR_FIELDS_H
#define WR_FIELDS_H

#include <stddef.h>
#include <stdint.h>

#include "weir.h"

/* A copy of f (the caller owns it; free with weir_fields_free). */
weir_fields_t *wr_fields_copy(const weir_fields_t *f);
/* The record size in bytes. */
int32_t wr_fields_size(const weir_fields_t *f);
/* weir_fields_parse with a size_t length. */
int32_t wr_fields_parse(const weir_fields_t *f, const char *line, size_t len, void *out);

#endif
