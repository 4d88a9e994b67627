/* SPDX-License-Identifier: MIT */
/* fuzz_csv.c: runtime/csv.c against a reference. Input: byte 0 is the separator (not the
 * quote), byte 1 a flag (bit 0: a header line first, through a typed layout); the rest is the
 * line (or, with the header flag, "header\nrow"), each copied to the end of its own heap block.
 * Oracles: a row that splits, written back with every field quoted (quotes doubled), splits
 * into the same fields; a reference state machine accepts exactly the lines the splitter
 * accepts, with the same number of fields and the same failure column; messages name a column
 * inside the line; a typed layout through a header fails or fills without reading past its
 * bounds, and its copy parses the same way. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "fields.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* RFC 4180 as API.md states it: the number of fields, or -(column) of the first error. */
static long ref_split(const char *p, size_t n, char sep)
{
    long fields = 1;
    size_t i = 0;
    int start = 1; /* at the start of a field */
    while (i < n) {
        if (start && p[i] == '"') {
            size_t open = i + 1;
            i++;
            for (;;) {
                if (i == n) {
                    return -(long)open;
                }
                if (p[i] == '"' && i + 1 < n && p[i + 1] == '"') {
                    i += 2;
                } else if (p[i] == '"') {
                    i++;
                    break;
                } else {
                    i++;
                }
            }
            if (i < n && p[i] != sep) {
                return -(long)(i + 1);
            }
            start = 0;
            continue;
        }
        if (p[i] == sep) {
            fields++;
            start = 1;
        } else if (p[i] == '"') {
            return -(long)(i + 1);
        } else {
            start = 0;
        }
        i++;
    }
    return fields;
}

static char *copy_to_end(const uint8_t *p, size_t n)
{
    char *b = malloc(n ? n : 1);
    memcpy(b, p, n);
    return b;
}

static void split_checks(char sep, const char *line, size_t len)
{
    wr_csv_t *c = wr_csv_new(sep);
    int32_t n = wr_csv_split(c, line, len);
    long ref = ref_split(line, len, sep);
    if (n < 0) {
        long col = 0;
        FUZZ_CHECK(sscanf(wr_csv_error(c), "column %ld: ", &col) == 1, "no column: %s",
                   wr_csv_error(c));
        FUZZ_CHECK(ref == -col, "the splitter fails at column %ld, the reference says %ld", col,
                   ref);
        wr_csv_free(c);
        return;
    }
    FUZZ_CHECK(ref == n, "%d fields, the reference counts %ld", (int)n, ref);
    /* write it back quoted, split again: the same fields */
    size_t cap = 3 * len + 3 * (size_t)n + 1, w = 0;
    char *back = malloc(cap);
    for (int32_t i = 0; i < n; i++) {
        size_t fl = 0;
        const char *fp = wr_csv_field(c, i, &fl);
        if (i > 0) {
            back[w++] = sep;
        }
        back[w++] = '"';
        for (size_t k = 0; k < fl; k++) {
            if (fp[k] == '"') {
                back[w++] = '"';
            }
            back[w++] = fp[k];
        }
        back[w++] = '"';
    }
    wr_csv_t *c2 = wr_csv_new(sep);
    FUZZ_CHECK(wr_csv_split(c2, back, w) == n, "the quoted row splits into another count");
    for (int32_t i = 0; i < n; i++) {
        size_t a = 0, b = 0;
        const char *pa = wr_csv_field(c, i, &a), *pb = wr_csv_field(c2, i, &b);
        FUZZ_CHECK(a == b && memcmp(pa, pb, a) == 0, "field %d differs when quoted", (int)i);
    }
    wr_csv_free(c2);
    free(back);
    wr_csv_free(c);
}

typedef struct rec {
    int32_t a;
    char s[5];
    double d;
} rec_t;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2 || data[0] == '"') {
        return 0;
    }
    char sep = (char)data[0];
    int header = data[1] & 1;
    const uint8_t *body = data + 2;
    size_t len = size - 2;
    char *line = copy_to_end(body, len);
    split_checks(sep, line, len);

    weir_fields_t *f = weir_fields_new((int32_t)sizeof(rec_t), (unsigned char)sep);
    weir_fields_add_named(f, WEIR_FIELD_INT32, (int32_t)offsetof(rec_t, a), 0, "a");
    weir_fields_add_named(f, WEIR_FIELD_STRING, (int32_t)offsetof(rec_t, s), 5, "s");
    weir_fields_add_named(f, WEIR_FIELD_DOUBLE, (int32_t)offsetof(rec_t, d), 0, "d");
    FUZZ_CHECK(weir_fields_set_format(f, WEIR_FORMAT_CSV, header) == 0, "set_format csv");
    const char *row = line;
    size_t row_len = len;
    if (header) {
        const char *nl = memchr(line, '\n', len);
        size_t hl = nl ? (size_t)(nl - line) : len;
        char *h = copy_to_end((const uint8_t *)line, hl);
        rec_t r;
        int32_t rc = wr_fields_parse(f, h, hl, &r);
        FUZZ_CHECK(rc == WEIR_FIELDS_HEADER || (rc & 0xff) == WEIR_FIELDS_FORMAT,
                   "a header line gave %d", rc);
        free(h);
        row = nl ? nl + 1 : line + len;
        row_len = nl ? len - hl - 1 : 0;
    }
    weir_fields_t *c = wr_fields_copy(f);
    char *r1 = copy_to_end((const uint8_t *)row, row_len);
    rec_t x, y;
    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    int32_t rc = wr_fields_parse(f, r1, row_len, &x);
    int32_t rc2 = wr_fields_parse(c, r1, row_len, &y);
    FUZZ_CHECK(rc == rc2, "the copy parses the row differently (%d, %d)", rc, rc2);
    FUZZ_CHECK(rc == 0 || (rc & 0xff) == WEIR_FIELDS_FORMAT || rc == WEIR_FIELDS_HEADER,
               "a row gave %d", rc);
    if (rc == 0) {
        FUZZ_CHECK(memcmp(&x, &y, sizeof x) == 0, "the copy fills differently");
        FUZZ_CHECK(memchr(x.s, '\0', sizeof x.s) != NULL, "the string field is not terminated");
    }
    free(r1);
    weir_fields_free(c);
    weir_fields_free(f);
    free(line);
    return 0;
}
