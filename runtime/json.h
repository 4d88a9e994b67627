/* SPDX-License-Identifier: MIT */
/* json.h: one JSON text per line, parsed by simdjson (strict RFC 8259: UTF-8 checked, no
 * trailing text), into a typed record's fields by name or into a tape for Lua (weir_json_* in
 * weir_ffi.h). A line simdjson rejects is read again by jansson only to say where and what was
 * expected (its messages name both); the hot path never calls it. Pure: no I/O, libuv or Lua. */
#ifndef WR_JSON_H
#define WR_JSON_H

#include <stddef.h>
#include <stdint.h>

#include "weir.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wr_json wr_json_t;

wr_json_t *wr_json_new(void);
void wr_json_free(wr_json_t *j);
/* Parses line (len bytes, not NUL-terminated) as one JSON object and stores its members into
 * the fields of f with their names (members of other names are skipped; every field must be
 * there, once). Returns 0, or -1 with the message in f (weir_fields_error). */
int wr_json_fill(wr_json_t *j, weir_fields_t *f, const char *line, size_t len, void *out);

#ifdef __cplusplus
}
#endif

#endif
