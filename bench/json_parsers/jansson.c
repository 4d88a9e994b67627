/* SPDX-License-Identifier: MIT */
/* jansson (libjansson-dev): a tree with a hash table per object. */
#include <jansson.h>
#include <string.h>

#include "parsers.h"

int parse_jansson(const char *p, size_t n, rec_t *r)
{
    json_error_t e;
    json_t *j = json_loadb(p, n, 0, &e);
    if (j == NULL) {
        return -1;
    }
    json_t *u = json_object_get(j, "user"), *t = json_object_get(j, "ts");
    int ok = json_is_string(u) && json_is_number(t);
    if (ok) {
        strncpy(r->user, json_string_value(u), sizeof r->user - 1);
        r->ts = json_number_value(t);
    }
    json_decref(j);
    return ok ? 0 : -1;
}
