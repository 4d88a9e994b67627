/* SPDX-License-Identifier: MIT */
/* cJSON (libcjson-dev): a tree of malloc'd nodes per line. */
#include <cjson/cJSON.h>
#include <string.h>

#include "parsers.h"

int parse_cjson(const char *p, size_t n, rec_t *r)
{
    cJSON *j = cJSON_ParseWithLength(p, n);
    if (j == NULL) {
        return -1;
    }
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(j, "user");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "ts");
    int ok = cJSON_IsString(u) && cJSON_IsNumber(t);
    if (ok) {
        strncpy(r->user, u->valuestring, sizeof r->user - 1);
        r->ts = t->valuedouble;
    }
    cJSON_Delete(j);
    return ok ? 0 : -1;
}
