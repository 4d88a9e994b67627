/* SPDX-License-Identifier: MIT */
/* fields.c: one line "a,b,c" into one record. Fields are cut at the separator byte and
 * trimmed of spaces and tabs; integers are decimal digits with an optional sign, parsed by hand
 * and range-checked against their type; float and double take a hand-written exact fast path
 * (at most 15 significant digits and no exponent: the digits and the power of ten are both
 * exact doubles, so one division rounds correctly, as strtod would) and strtod otherwise. The
 * line is never read past len, so it need not be NUL-terminated. */
#include "fields.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"

typedef struct field {
    int32_t kind;
    int32_t offset;
} field_t;

struct weir_fields {
    int32_t size;
    char separator;
    int32_t n;
    int32_t cap;
    field_t *fields; /* owned */
};

enum { MAX_SIZE = 65536, NUMBER_TEXT = 256 };

static int32_t kind_bytes(int32_t kind)
{
    switch (kind) {
    case WEIR_FIELD_INT8:
    case WEIR_FIELD_UINT8:
    case WEIR_FIELD_BOOL:
        return 1;
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
        return 0;
    }
}

weir_fields_t *weir_fields_new(int32_t size, int32_t separator)
{
    if (size < 1 || size > MAX_SIZE || separator < 0 || separator > 255) {
        return NULL;
    }
    weir_fields_t *f = wr_xcalloc(1, sizeof *f);
    f->size = size;
    f->separator = (char)separator;
    return f;
}

void weir_fields_free(weir_fields_t *f)
{
    if (f == NULL) {
        return;
    }
    wr_free(f->fields);
    wr_free(f);
}

int weir_fields_add(weir_fields_t *f, int32_t kind, int32_t offset)
{
    int32_t bytes = kind_bytes(kind);
    if (f == NULL || bytes == 0 || offset < 0 || offset > f->size - bytes) {
        return WEIR_EINVAL;
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->fields = wr_xreallocarray(f->fields, (size_t)f->cap, sizeof *f->fields);
    }
    f->fields[f->n++] = (field_t){ kind, offset };
    return 0;
}

weir_fields_t *wr_fields_copy(const weir_fields_t *f)
{
    weir_fields_t *c = wr_xcalloc(1, sizeof *c);
    *c = *f;
    c->cap = f->n;
    c->fields = NULL;
    if (f->n > 0) {
        c->fields = wr_xreallocarray(NULL, (size_t)f->n, sizeof *c->fields);
        memcpy(c->fields, f->fields, (size_t)f->n * sizeof *c->fields);
    }
    return c;
}

int32_t wr_fields_size(const weir_fields_t *f)
{
    return f->size;
}

/* reason | n << 8 with n saturated, since a line of 2^23 or more separators would overflow the
 * int32_t (D7). Field numbers cannot saturate: a layout has at most MAX_SIZE fields. */
static int32_t failure(int32_t reason, size_t n)
{
    uint32_t high = n < (size_t)WEIR_FIELDS_N_MAX ? (uint32_t)n : (uint32_t)WEIR_FIELDS_N_MAX;
    return (int32_t)((uint32_t)reason | high << 8);
}

/* A decimal integer with an optional sign into *v. Returns 0, WEIR_FIELDS_NUMBER, or
 * WEIR_FIELDS_RANGE when it has more digits than any field type can hold. */
static int parse_int(const char *p, const char *end, int64_t *v)
{
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    if (p == end) {
        return WEIR_FIELDS_NUMBER;
    }
    int64_t x = 0;
    int big = 0;
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d > 9) {
            return WEIR_FIELDS_NUMBER;
        }
        if (x > (INT64_C(1) << 40)) {
            big = 1; /* far beyond 32 bits: keep checking the digits, stop adding them */
        } else {
            x = x * 10 + (int64_t)d;
        }
    }
    if (big) {
        return WEIR_FIELDS_RANGE;
    }
    *v = neg ? -x : x;
    return 0;
}

static const double POW10[] = { 1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8,
                                1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15 };

/* The exact fast path: [sign] digits [. digits], at most 15 digits in all. Returns 1 with *v
 * set, or 0 when the text needs strtod. */
static int fast_double(const char *p, const char *end, double *v)
{
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    int64_t m = 0;
    int digits = 0, frac = 0, dot = 0;
    for (; p < end; p++) {
        unsigned d = (unsigned)(unsigned char)*p - '0';
        if (d <= 9) {
            if (++digits > 15) {
                return 0;
            }
            m = m * 10 + (int64_t)d;
            frac += dot;
        } else if (*p == '.' && !dot) {
            dot = 1;
        } else {
            return 0;
        }
    }
    if (digits == 0) {
        return 0;
    }
    double x = frac == 0 ? (double)m : (double)m / POW10[frac];
    *v = neg ? -x : x;
    return 1;
}

static int parse_double(const char *p, const char *end, double *v)
{
    if (fast_double(p, end, v)) {
        return 0;
    }
    size_t n = (size_t)(end - p);
    if (n == 0 || n >= NUMBER_TEXT) {
        return WEIR_FIELDS_NUMBER;
    }
    char text[NUMBER_TEXT];
    memcpy(text, p, n);
    text[n] = '\0';
    char *stop = NULL;
    errno = 0;
    double x = strtod(text, &stop);
    if (stop != text + n) {
        return WEIR_FIELDS_NUMBER;
    }
    if (errno == ERANGE && (x == HUGE_VAL || x == -HUGE_VAL)) {
        return WEIR_FIELDS_RANGE;
    }
    *v = x;
    return 0;
}

static int in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

/* Parses [p, end) as a field of kind into out. Returns 0 or a WEIR_FIELDS_* reason. */
static int parse_field(int32_t kind, const char *p, const char *end, char *out)
{
    if (kind == WEIR_FIELD_DOUBLE || kind == WEIR_FIELD_FLOAT) {
        double d = 0;
        int rc = parse_double(p, end, &d);
        if (rc != 0) {
            return rc;
        }
        if (kind == WEIR_FIELD_DOUBLE) {
            memcpy(out, &d, sizeof d);
            return 0;
        }
        float fl = (float)d;
        if (isinf(fl) && !isinf(d)) {
            return WEIR_FIELDS_RANGE;
        }
        memcpy(out, &fl, sizeof fl);
        return 0;
    }
    if (kind == WEIR_FIELD_BOOL) {
        size_t n = (size_t)(end - p);
        bool b;
        if ((n == 4 && memcmp(p, "true", 4) == 0) || (n == 1 && *p == '1')) {
            b = true;
        } else if ((n == 5 && memcmp(p, "false", 5) == 0) || (n == 1 && *p == '0')) {
            b = false;
        } else {
            return WEIR_FIELDS_NUMBER;
        }
        memcpy(out, &b, sizeof b);
        return 0;
    }
    int64_t v = 0;
    int rc = parse_int(p, end, &v);
    if (rc != 0) {
        return rc;
    }
    switch (kind) {
    case WEIR_FIELD_INT8:
        if (!in_range(v, INT8_MIN, INT8_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        *(int8_t *)(void *)out = (int8_t)v;
        return 0;
    case WEIR_FIELD_UINT8:
        if (!in_range(v, 0, UINT8_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        *(uint8_t *)(void *)out = (uint8_t)v;
        return 0;
    case WEIR_FIELD_INT16: {
        if (!in_range(v, INT16_MIN, INT16_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        int16_t x = (int16_t)v;
        memcpy(out, &x, sizeof x);
        return 0;
    }
    case WEIR_FIELD_UINT16: {
        if (!in_range(v, 0, UINT16_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        uint16_t x = (uint16_t)v;
        memcpy(out, &x, sizeof x);
        return 0;
    }
    case WEIR_FIELD_INT32: {
        if (!in_range(v, INT32_MIN, INT32_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        int32_t x = (int32_t)v;
        memcpy(out, &x, sizeof x);
        return 0;
    }
    default: { /* WEIR_FIELD_UINT32: weir_fields_add accepts no other kind */
        if (!in_range(v, 0, UINT32_MAX)) {
            return WEIR_FIELDS_RANGE;
        }
        uint32_t x = (uint32_t)v;
        memcpy(out, &x, sizeof x);
        return 0;
    }
    }
}

static int is_blank(char c)
{
    return c == ' ' || c == '\t';
}

/* Counts the fields of the whole line: separators + 1. */
static size_t count_fields(const weir_fields_t *f, const char *p, const char *end)
{
    size_t n = 1;
    while ((p = memchr(p, f->separator, (size_t)(end - p))) != NULL) {
        n++;
        p++;
    }
    return n;
}

int32_t wr_fields_parse(const weir_fields_t *f, const char *line, size_t len, void *out)
{
    const char *p = line;
    const char *end = line + len;
    char *rec = out;
    const char sep = (char)f->separator;
    for (int32_t i = 0; i < f->n; i++) {
        /* fields are short: a plain loop beats a call to memchr */
        const char *stop = p;
        while (stop < end && *stop != sep) {
            stop++;
        }
        if (stop == end) {
            stop = NULL;
        }
        int last = i == f->n - 1;
        if (stop == NULL) {
            if (!last) {
                return failure(WEIR_FIELDS_COUNT, (size_t)i + 1);
            }
            stop = end;
        } else if (last) {
            return failure(WEIR_FIELDS_COUNT, count_fields(f, line, end));
        }
        const char *a = p, *b = stop;
        while (a < b && is_blank(*a)) {
            a++;
        }
        while (b > a && is_blank(b[-1])) {
            b--;
        }
        int rc = parse_field(f->fields[i].kind, a, b, rec + f->fields[i].offset);
        if (rc != 0) {
            return failure(rc, (size_t)i + 1);
        }
        p = stop + 1;
    }
    return 0;
}

int32_t weir_fields_parse(const weir_fields_t *f, const char *line, int32_t len, void *out)
{
    if (f == NULL || out == NULL || len < 0 || (line == NULL && len > 0)) {
        return failure(WEIR_FIELDS_COUNT, 0);
    }
    return wr_fields_parse(f, line ? line : "", (size_t)len, out);
}
