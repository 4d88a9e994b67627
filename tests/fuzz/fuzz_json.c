/* SPDX-License-Identifier: MIT */
/* fuzz_json.c: runtime/json.cc (simdjson, jansson for the messages) through its two doors. The
 * whole input is the line, copied to the end of its own heap block, so ASan sees any read past
 * len (the parser reads a padded copy, never the line's own bytes past len). Oracles: a decoded
 * tape is well formed (walking it by its counts uses exactly the tokens decode returned, every
 * key is a string, strings lie inside the padded copy's length); a failure says "column N: "
 * with 1 <= N <= len + 1; the typed fill succeeds only when decode succeeds with an object at
 * the root, and then the record's string field holds at most its bound and no NUL; a copy of
 * the layout parses the line the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct rec {
    char s[8];
    double d;
    int32_t i;
    uint8_t b;
} rec_t;

/* The index after the value at tape[i], or -1 when the tape ends first. */
static int64_t walk(const weir_json_tok_t *t, int64_t i, int64_t n, int depth)
{
    FUZZ_CHECK(depth < 4096, "the tape nests deeper than any parser allows");
    if (i >= n) {
        return -1;
    }
    int32_t k = t[i].kind;
    FUZZ_CHECK(k >= WEIR_JSON_NULL && k <= WEIR_JSON_OBJECT, "token %lld has kind %d",
               (long long)i, (int)k);
    FUZZ_CHECK(t[i].len >= 0, "token %lld has a negative length", (long long)i);
    int32_t m = t[i].len;
    i++;
    if (k == WEIR_JSON_ARRAY) {
        for (int32_t x = 0; x < m && i >= 0; x++) {
            i = walk(t, i, n, depth + 1);
        }
    } else if (k == WEIR_JSON_OBJECT) {
        for (int32_t x = 0; x < m && i >= 0; x++) {
            FUZZ_CHECK(i < n && t[i].kind == WEIR_JSON_STRING, "an object's key is no string");
            i = walk(t, i + 1, n, depth + 1);
        }
    }
    return i;
}

static void check_message(const char *why, size_t len)
{
    long col = 0;
    FUZZ_CHECK(sscanf(why, "column %ld: ", &col) == 1, "a message without its column: %s", why);
    FUZZ_CHECK(col >= 1 && (size_t)col <= len + 1, "column %ld of a %zu-byte line", col, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > (1u << 20)) {
        return 0;
    }
    char *line = malloc(size ? size : 1);
    memcpy(line, data, size);

    weir_json_t *j = weir_json_new();
    int32_t n = weir_json_decode(j, size ? line : NULL, (int32_t)size);
    int root_object = 0;
    if (n < 0) {
        check_message(weir_json_error(j), size);
    } else {
        const weir_json_tok_t *t = weir_json_tape(j);
        FUZZ_CHECK(n >= 1, "decode gave an empty tape");
        FUZZ_CHECK(walk(t, 0, n, 0) == n, "the tape's counts do not use its %d tokens", (int)n);
        root_object = t[0].kind == WEIR_JSON_OBJECT;
    }

    weir_fields_t *f = weir_fields_new((int32_t)sizeof(rec_t), ',');
    weir_fields_add_named(f, WEIR_FIELD_STRING, (int32_t)offsetof(rec_t, s), 8, "s");
    weir_fields_add_named(f, WEIR_FIELD_DOUBLE, (int32_t)offsetof(rec_t, d), 0, "d");
    weir_fields_add_named(f, WEIR_FIELD_INT32, (int32_t)offsetof(rec_t, i), 0, "i");
    weir_fields_add_named(f, WEIR_FIELD_BOOL, (int32_t)offsetof(rec_t, b), 0, "b");
    FUZZ_CHECK(weir_fields_set_format(f, WEIR_FORMAT_JSON, 0) == 0, "set_format json");
    weir_fields_t *c = wr_fields_copy(f);
    rec_t r, r2;
    memset(&r, 0, sizeof r);
    memset(&r2, 0, sizeof r2);
    int32_t rc = wr_fields_parse(f, line, size, &r);
    int32_t rc2 = wr_fields_parse(c, line, size, &r2);
    FUZZ_CHECK(rc == rc2, "the copy parses differently");
    if (rc == 0) {
        FUZZ_CHECK(n >= 0 && root_object, "fill took a line decode does not take as an object");
        FUZZ_CHECK(memchr(r.s, '\0', sizeof r.s) != NULL, "the string field is not terminated");
        FUZZ_CHECK(memcmp(&r, &r2, sizeof r) == 0, "the copy fills differently");
    } else {
        FUZZ_CHECK((rc & 0xff) == WEIR_FIELDS_FORMAT, "fill failed with reason %d", rc & 0xff);
        FUZZ_CHECK(weir_fields_error(f)[0] != '\0', "a failure without a message");
        if (n < 0 || !root_object) {
            check_message(weir_fields_error(f), size);
        }
    }
    weir_fields_free(c);
    weir_fields_free(f);
    weir_json_free(j);
    free(line);
    return 0;
}
