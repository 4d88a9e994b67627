/* SPDX-License-Identifier: MIT */
/* fuzz_fields.c: runtime/fields.c against strtoll and strtod. Input: byte 0 is the separator,
 * byte 1 the number of fields (1..8), then one kind byte per field; the rest is the line. The
 * line is copied to the end of its own heap block, so ASan sees any read past len. A reference
 * cuts and trims the line the same documented way (API.md, Typed text), reads integers with
 * strtoll after checking the digits, and floats with strtod over the whole piece, and the
 * result must match: the same failure and field number (the count saturating at
 * WEIR_FIELDS_N_MAX), or the same bytes in every field. A layout the one pass over a buffer
 * takes (wr_fields_scan) scans the line too: what it takes, the parse takes the same way. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fields.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

enum { MAX_FIELDS = 8, SLOT = 8, NUMBER_TEXT = 256 };

static int blank(char c)
{
    return c == ' ' || c == '\t';
}

/* [p, p+n) as a NUL-terminated copy in buf (n < NUMBER_TEXT) */
static const char *terminated(char *buf, const char *p, size_t n)
{
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

static int ref_int(int kind, const char *p, size_t n, uint8_t *out)
{
    size_t i = n > 0 && (p[0] == '+' || p[0] == '-') ? 1 : 0;
    if (i == n) {
        return WEIR_FIELDS_NUMBER;
    }
    for (size_t j = i; j < n; j++) {
        if (p[j] < '0' || p[j] > '9') {
            return WEIR_FIELDS_NUMBER;
        }
    }
    /* strtoll wants a terminated string; leading zeros can make any length a small number */
    char *buf = malloc(n + 1);
    memcpy(buf, p, n);
    buf[n] = '\0';
    errno = 0;
    long long v = strtoll(buf, NULL, 10);
    int range = errno == ERANGE;
    free(buf);
    static const long long LO[] = { 0, INT8_MIN, INT16_MIN, INT32_MIN, 0, 0, 0 };
    static const long long HI[] = { 0, INT8_MAX, INT16_MAX, INT32_MAX, UINT8_MAX, UINT16_MAX,
                                    UINT32_MAX };
    if (range || v < LO[kind] || v > HI[kind]) {
        return WEIR_FIELDS_RANGE;
    }
    int8_t i8 = (int8_t)v;
    int16_t i16 = (int16_t)v;
    int32_t i32 = (int32_t)v;
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (kind) {
    case WEIR_FIELD_INT8: memcpy(out, &i8, 1); break;
    case WEIR_FIELD_INT16: memcpy(out, &i16, 2); break;
    case WEIR_FIELD_INT32: memcpy(out, &i32, 4); break;
    case WEIR_FIELD_UINT8: memcpy(out, &u8, 1); break;
    case WEIR_FIELD_UINT16: memcpy(out, &u16, 2); break;
    default: memcpy(out, &u32, 4); break;
    }
    return 0;
}

static int ref_double(int kind, const char *p, size_t n, uint8_t *out)
{
    if (n == 0 || n >= NUMBER_TEXT) {
        return WEIR_FIELDS_NUMBER; /* fields.c's bound; its exact fast path is < 20 bytes */
    }
    char buf[NUMBER_TEXT];
    char *stop = NULL;
    errno = 0;
    double d = strtod(terminated(buf, p, n), &stop);
    if (stop != buf + n) {
        return WEIR_FIELDS_NUMBER;
    }
    if (errno == ERANGE && (d == HUGE_VAL || d == -HUGE_VAL)) {
        return WEIR_FIELDS_RANGE;
    }
    if (kind == WEIR_FIELD_DOUBLE) {
        memcpy(out, &d, sizeof d);
        return 0;
    }
    float f = (float)d;
    if (isinf(f) && !isinf(d)) {
        return WEIR_FIELDS_RANGE;
    }
    memcpy(out, &f, sizeof f);
    return 0;
}

static int ref_field(int kind, const char *p, size_t n, uint8_t *out)
{
    while (n > 0 && blank(*p)) {
        p++;
        n--;
    }
    while (n > 0 && blank(p[n - 1])) {
        n--;
    }
    if (kind == WEIR_FIELD_FLOAT || kind == WEIR_FIELD_DOUBLE) {
        return ref_double(kind, p, n, out);
    }
    if (kind == WEIR_FIELD_BOOL) {
        bool b;
        if ((n == 4 && memcmp(p, "true", 4) == 0) || (n == 1 && p[0] == '1')) {
            b = true;
        } else if ((n == 5 && memcmp(p, "false", 5) == 0) || (n == 1 && p[0] == '0')) {
            b = false;
        } else {
            return WEIR_FIELDS_NUMBER;
        }
        memcpy(out, &b, 1);
        return 0;
    }
    return ref_int(kind, p, n, out);
}

static int32_t code(int reason, size_t n)
{
    if (n > WEIR_FIELDS_N_MAX) {
        n = WEIR_FIELDS_N_MAX;
    }
    return (int32_t)((uint32_t)reason | (uint32_t)n << 8);
}

/* The documented order: fields left to right; a missing field is found before the field itself
 * is read, surplus separators before the last field is read. */
static int32_t ref_parse(const int *kinds, int nf, char sep, const char *line, size_t len,
                         uint8_t *out)
{
    size_t count = 1;
    for (size_t i = 0; i < len; i++) {
        count += line[i] == sep;
    }
    size_t pos = 0;
    for (int i = 0; i < nf; i++) {
        const char *stop = memchr(line + pos, sep, len - pos);
        int last = i == nf - 1;
        if (stop == NULL && !last) {
            return code(WEIR_FIELDS_COUNT, count);
        }
        if (stop != NULL && last) {
            return code(WEIR_FIELDS_COUNT, count);
        }
        size_t end = stop ? (size_t)(stop - line) : len;
        int rc = ref_field(kinds[i], line + pos, end - pos, out + (size_t)i * SLOT);
        if (rc != 0) {
            return code(rc, (size_t)i + 1);
        }
        pos = end + 1;
    }
    return 0;
}

static int kind_size(int kind)
{
    switch (kind) {
    case WEIR_FIELD_INT16:
    case WEIR_FIELD_UINT16:
        return 2;
    case WEIR_FIELD_INT32:
    case WEIR_FIELD_UINT32:
    case WEIR_FIELD_FLOAT:
        return 4;
    case WEIR_FIELD_DOUBLE:
        return 8;
    default:
        return 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) {
        return 0;
    }
    char sep = (char)data[0];
    int nf = data[1] % MAX_FIELDS + 1;
    if (size < 2 + (size_t)nf) {
        return 0;
    }
    int kinds[MAX_FIELDS];
    weir_fields_t *f = weir_fields_new(nf * SLOT, (unsigned char)sep);
    FUZZ_CHECK(f != NULL, "weir_fields_new refused a %d-byte layout", nf * SLOT);
    for (int i = 0; i < nf; i++) {
        kinds[i] = data[2 + i] % 9 + 1; /* WEIR_FIELD_INT8 .. WEIR_FIELD_BOOL */
        FUZZ_CHECK(weir_fields_add(f, kinds[i], i * SLOT) == 0, "add kind %d", kinds[i]);
    }
    size_t len = size - 2 - (size_t)nf;
    char *line = malloc(len ? len : 1);
    memcpy(line, data + 2 + nf, len);
    uint8_t got[MAX_FIELDS * SLOT], want[MAX_FIELDS * SLOT];
    memset(got, 0xa5, sizeof got);
    memset(want, 0xa5, sizeof want);
    int32_t rc = weir_fields_parse(f, len ? line : NULL, (int32_t)len, got);
    int32_t ref = ref_parse(kinds, nf, sep, line, len, want);
    FUZZ_CHECK(rc == ref, "parse returned reason %d field %d, the reference %d field %d",
               rc & 0xff, rc >> 8, ref & 0xff, ref >> 8);
    for (int i = 0; rc == 0 && i < nf; i++) {
        const uint8_t *g = got + i * SLOT, *w = want + i * SLOT;
        int k = kind_size(kinds[i]);
        if (kinds[i] == WEIR_FIELD_DOUBLE || kinds[i] == WEIR_FIELD_FLOAT) {
            double gd, wd;
            if (k == 8) {
                memcpy(&gd, g, 8);
                memcpy(&wd, w, 8);
            } else {
                float gf, wf;
                memcpy(&gf, g, 4);
                memcpy(&wf, w, 4);
                gd = gf;
                wd = wf;
            }
            if (isnan(gd) && isnan(wd)) {
                continue; /* NaN payloads may differ; both say "not a number" */
            }
        }
        FUZZ_CHECK(memcmp(g, w, (size_t)k) == 0, "field %d (kind %d) differs from the reference",
                   i + 1, kinds[i]);
    }
    /* the one pass over a buffer (wr_fields_scan), given the line and a "\n" at the end of its
     * own heap block: a line it takes is one the parse takes, with the same record, with or
     * without a "\r" stripped; it stops at the line's start otherwise */
    if (wr_fields_scannable(f, '\n') && memchr(line, '\n', len) == NULL) {
        char *buf = malloc(len + 1);
        memcpy(buf, line, len);
        buf[len] = '\n';
        for (int strip = 0; strip < 2; strip++) {
            size_t n = strip && len > 0 && line[len - 1] == '\r' ? len - 1 : len;
            uint8_t parsed[MAX_FIELDS * SLOT], scanned[MAX_FIELDS * SLOT];
            memset(parsed, 0xa5, sizeof parsed);
            memset(scanned, 0xa5, sizeof scanned);
            int32_t prc = wr_fields_parse(f, line, n, parsed);
            const char *next = NULL;
            size_t k = wr_fields_scan(f, buf, buf + len, '\n', strip, SIZE_MAX, (char *)scanned,
                                      1, &next);
            FUZZ_CHECK(next == (k ? buf + len + 1 : buf), "the scan stopped inside the line");
            FUZZ_CHECK(k == 0 || prc == 0, "the scan took a line the parse rejects (%d)", prc);
            FUZZ_CHECK(k == 0 || memcmp(parsed, scanned, sizeof parsed) == 0,
                       "the scan fills differently");
            k = wr_fields_scan(f, buf, buf + len, '\n', strip, n > 0 ? n - 1 : 0,
                               (char *)scanned, 1, &next);
            FUZZ_CHECK(k == 0, "the scan took a line longer than max_len");
        }
        free(buf);
    }
    /* the copy must also agree with its original */
    weir_fields_t *c = wr_fields_copy(f);
    uint8_t again[MAX_FIELDS * SLOT];
    memset(again, 0xa5, sizeof again);
    FUZZ_CHECK(wr_fields_parse(c, line, len, again) == rc, "the copy parses differently");
    FUZZ_CHECK(rc != 0 || memcmp(again, got, sizeof got) == 0, "the copy fills differently");
    weir_fields_free(c);
    weir_fields_free(f);
    free(line);
    return 0;
}
