/* SPDX-License-Identifier: MIT */
/* json-c (libjson-c-dev): one reused tokener, a tree of reference-counted objects. */
#include <json-c/json.h>
#include <string.h>

#include "parsers.h"

static json_tokener *tok;

void jsonc_init(void)
{
    tok = json_tokener_new();
}

int parse_jsonc(const char *p, size_t n, rec_t *r)
{
    json_tokener_reset(tok);
    json_object *j = json_tokener_parse_ex(tok, p, (int)n);
    if (j == NULL) {
        return -1;
    }
    json_object *u, *t;
    int ok = json_object_object_get_ex(j, "user", &u) && json_object_object_get_ex(j, "ts", &t);
    if (ok) {
        strncpy(r->user, json_object_get_string(u), sizeof r->user - 1);
        r->ts = json_object_get_double(t);
    }
    json_object_put(j);
    return ok ? 0 : -1;
}
