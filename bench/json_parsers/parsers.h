/* SPDX-License-Identifier: MIT */
/* parsers.h: one function per candidate parser (each in its own file: jansson's and json-c's
 * headers cannot be included together). 0 when the line parsed and both members were read. */
#ifndef JSON_PARSERS_H
#define JSON_PARSERS_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { PAD = 64 };

typedef struct rec {
    char user[24];
    double ts;
} rec_t;

typedef int (*parse_fn)(const char *p, size_t n, rec_t *r);

int parse_simdjson(const char *p, size_t n, rec_t *r);
int parse_cjson(const char *p, size_t n, rec_t *r);
int parse_jansson(const char *p, size_t n, rec_t *r);
int parse_jsonc(const char *p, size_t n, rec_t *r);
void jsonc_init(void);

#ifdef __cplusplus
}
#endif

#endif
