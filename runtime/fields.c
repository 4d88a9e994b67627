/* SPDX-License-Identifier: MIT */
/* fields.c: one line into one record. The layout (kinds, offsets, sizes, names) and its format:
 * text (below), JSON (json.cc fills the fields by name) or CSV (csv.c cuts the line, the pieces
 * fill the fields here, by position or through the header's names). A failure of a JSON or CSV
 * line leaves its message in the layout (weir_fields_error). Text: fields are cut at the
 * separator byte and
 * trimmed of spaces and tabs; integers are decimal digits with an optional sign, parsed by hand
 * and range-checked against their type; float and double take a hand-written exact fast path
 * (at most 15 significant digits and no exponent: the digits and the power of ten are both
 * exact doubles, so one division rounds correctly, as strtod would) and strtod otherwise. The
 * line is never read past len, so it need not be NUL-terminated. */
#include "fields.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "mem.h"

typedef struct field {
    int32_t kind;
    int32_t offset;
    int32_t bytes; /* a string's array (its bound + 1 for the NUL); else the number's size */
    char *name;    /* owned; NULL when added without one */
    size_t name_len;
} field_t;

enum { HEADER_NONE = 0, HEADER_PENDING = 1, HEADER_MAPPED = 2, HEADER_FAILED = 3 };

struct weir_fields {
    int32_t size;
    char separator;
    int32_t n;
    int32_t cap;
    field_t *fields; /* owned */
    int32_t slow;    /* fields of a kind fast_number does not parse (string, bool, float) */
    int no_fast;     /* wr_fields_no_fast: the general path only (tests compare the two) */
    int32_t format;  /* WEIR_FORMAT_* */
    int header;      /* HEADER_*: CSV with a header line */
    int32_t ncols;   /* the header's columns */
    int32_t *col_field; /* owned: per header column, the field it fills or -1 */
    uint8_t *seen;      /* owned: n flags, which fields a line filled */
    wr_csv_t *csv;      /* owned (CSV) */
    wr_json_t *json;    /* owned (JSON) */
    char why[WR_FIELDS_WHY];
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

static const char *kind_name(int32_t kind)
{
    static const char *const NAMES[] = { "?",        "int8_t",   "int16_t", "int32_t",
                                         "uint8_t",  "uint16_t", "uint32_t", "float",
                                         "double",   "bool",     "string" };
    return kind >= 1 && kind <= WEIR_FIELD_STRING ? NAMES[kind] : "?";
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
    for (int32_t i = 0; i < f->n; i++) {
        wr_free(f->fields[i].name);
    }
    wr_free(f->fields);
    wr_free(f->col_field);
    wr_free(f->seen);
    wr_csv_free(f->csv);
    wr_json_free(f->json);
    wr_free(f);
}

int weir_fields_add_named(weir_fields_t *f, int32_t kind, int32_t offset, int32_t bytes,
                          const char *name)
{
    if (kind != WEIR_FIELD_STRING) {
        bytes = kind_bytes(kind);
    }
    if (f == NULL || bytes <= (kind == WEIR_FIELD_STRING ? 1 : 0) || offset < 0
        || offset > f->size - bytes) {
        return WEIR_EINVAL;
    }
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        f->fields = wr_xreallocarray(f->fields, (size_t)f->cap, sizeof *f->fields);
    }
    f->fields[f->n++] = (field_t){ kind, offset, bytes, name ? wr_xstrdup(name) : NULL,
                                   name ? strlen(name) : 0 };
    f->slow += !(kind <= WEIR_FIELD_UINT32 || kind == WEIR_FIELD_DOUBLE);
    f->seen = wr_xrealloc(f->seen, (size_t)f->n);
    return 0;
}

int weir_fields_add(weir_fields_t *f, int32_t kind, int32_t offset)
{
    if (kind == WEIR_FIELD_STRING) {
        return WEIR_EINVAL; /* a string needs its size: weir_fields_add_named */
    }
    return weir_fields_add_named(f, kind, offset, 0, NULL);
}

int weir_fields_set_format(weir_fields_t *f, int32_t format, int32_t header)
{
    if (f == NULL || format < WEIR_FORMAT_TEXT || format > WEIR_FORMAT_CSV
        || (header && format != WEIR_FORMAT_CSV)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; format != WEIR_FORMAT_TEXT && i < f->n; i++) {
        if (f->fields[i].name == NULL) {
            return WEIR_EINVAL; /* JSON and a CSV header match fields by name */
        }
    }
    f->format = format;
    f->header = header ? HEADER_PENDING : HEADER_NONE;
    wr_csv_free(f->csv);
    wr_json_free(f->json);
    f->csv = format == WEIR_FORMAT_CSV ? wr_csv_new(f->separator) : NULL;
    f->json = format == WEIR_FORMAT_JSON ? wr_json_new() : NULL;
    return 0;
}

const char *weir_fields_error(const weir_fields_t *f)
{
    return f ? f->why : "";
}

weir_fields_t *wr_fields_copy(const weir_fields_t *f)
{
    weir_fields_t *c = wr_xcalloc(1, sizeof *c);
    *c = *f;
    c->cap = f->n;
    c->fields = NULL;
    c->seen = NULL;
    c->col_field = NULL;
    if (f->n > 0) {
        c->fields = wr_xreallocarray(NULL, (size_t)f->n, sizeof *c->fields);
        memcpy(c->fields, f->fields, (size_t)f->n * sizeof *c->fields);
        for (int32_t i = 0; i < f->n; i++) {
            c->fields[i].name = f->fields[i].name ? wr_xstrdup(f->fields[i].name) : NULL;
        }
        c->seen = wr_xmalloc((size_t)f->n);
    }
    if (f->col_field != NULL) {
        c->col_field = wr_xreallocarray(NULL, (size_t)f->ncols, sizeof *c->col_field);
        memcpy(c->col_field, f->col_field, (size_t)f->ncols * sizeof *c->col_field);
    }
    c->csv = f->format == WEIR_FORMAT_CSV ? wr_csv_new(f->separator) : NULL;
    c->json = f->format == WEIR_FORMAT_JSON ? wr_json_new() : NULL;
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
/* The typed text path's hot loop calls parse_field, parse_int and store_int per field; the JSON
 * and CSV paths call them too, and without the attribute the compiler stops inlining them in
 * the loop (12% more work per line of text_c). */
#define WR_HOT static inline __attribute__((always_inline))

WR_HOT int parse_int(const char *p, const char *end, int64_t *v)
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

WR_HOT int store_int(int32_t kind, int64_t v, char *out);

/* Stores [p, end) into a string field of fd: at most bytes - 1 bytes and no NUL. */
static int put_string(const field_t *fd, const char *p, const char *end, char *out)
{
    size_t n = (size_t)(end - p);
    if (n >= (size_t)fd->bytes || (n > 0 && memchr(p, '\0', n) != NULL)) {
        return WEIR_FIELDS_STRING;
    }
    memcpy(out, p, n);
    memset(out + n, 0, (size_t)fd->bytes - n);
    return 0;
}

/* Parses [p, end) as a field of fd's kind into out. Returns 0 or a WEIR_FIELDS_* reason. */
WR_HOT int parse_field(const field_t *fd, const char *p, const char *end, char *out)
{
    int32_t kind = fd->kind;
    if (kind == WEIR_FIELD_STRING) {
        return put_string(fd, p, end, out);
    }
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
    return store_int(kind, v, out);
}

/* An integer into a field of kind (an integer kind): 0 or WEIR_FIELDS_RANGE. */
WR_HOT int store_int(int32_t kind, int64_t v, char *out)
{
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

static void trim(const char **a, const char **b)
{
    while (*a < *b && is_blank(**a)) {
        (*a)++;
    }
    while (*b > *a && is_blank((*b)[-1])) {
        (*b)--;
    }
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

/* The fast path of one text field of an integer kind or double: the number's characters
 * scanned once, up to the separator or the end of the line, and stored. It accepts exactly
 * what parse_field accepts for a field without blanks, with the same value: a sign, then up to
 * 18 digits (integers; parse_int's range check is store_int's) or, for a double, up to 15
 * digits with at most one '.' (fast_double). Returns where the field ends (the separator or
 * end), or NULL when anything else is there (blanks, more digits, an exponent, a bad
 * character, an empty field): the caller then parses the field the general way, which also
 * words any failure. Only for a separator that cannot be part of a number (fast_separator). */
WR_HOT const char *fast_number(const field_t *fd, const char *p, const char *end, char sep,
                               char *out)
{
    int neg = 0;
    if (p < end && (*p == '-' || *p == '+')) {
        neg = *p == '-';
        p++;
    }
    uint64_t m = 0; /* wraps past 19 digits, which the count rejects */
    const char *first = p;
    unsigned d;
    while (p < end && (d = (unsigned)(unsigned char)*p - '0') <= 9) {
        m = m * 10 + d;
        p++;
    }
    ptrdiff_t digits = p - first;
    if (fd->kind == WEIR_FIELD_DOUBLE) {
        ptrdiff_t frac = 0;
        if (p < end && *p == '.') {
            const char *dot = ++p;
            while (p < end && (d = (unsigned)(unsigned char)*p - '0') <= 9) {
                m = m * 10 + d;
                p++;
            }
            frac = p - dot;
            digits += frac;
        }
        if (digits == 0 || digits > 15 || (p < end && *p != sep)) {
            return NULL;
        }
        double x = frac == 0 ? (double)m : (double)m / POW10[frac];
        x = neg ? -x : x;
        memcpy(out, &x, sizeof x);
        return p;
    }
    if (digits == 0 || digits > 18 || (p < end && *p != sep)
        || store_int(fd->kind, neg ? -(int64_t)m : (int64_t)m, out) != 0) {
        return NULL;
    }
    return p;
}

/* A separator fast_number can stop at: not a digit, sign or '.'. */
static int fast_separator(char sep)
{
    return !((sep >= '0' && sep <= '9') || sep == '-' || sep == '+' || sep == '.');
}

static int32_t parse_text(const weir_fields_t *f, const char *line, size_t len, void *out)
{
    const char *p = line;
    const char *end = line + len;
    char *rec = out;
    const char sep = (char)f->separator;
    const int fast = fast_separator(sep) && !f->no_fast;
    if (fast && f->slow == 0 && f->n > 0) {
        /* every field a number: one pass, each field ending at a separator and the last at
         * the end of the line; anything else parses the line again the general way below */
        const int32_t last = f->n - 1;
        for (int32_t i = 0;; i++) {
            const field_t *fd = &f->fields[i];
            const char *q = fast_number(fd, p, end, sep, rec + fd->offset);
            if (q == NULL || (q == end) != (i == last)) {
                break;
            }
            if (i == last) {
                return 0;
            }
            p = q + 1;
        }
        p = line;
    }
    for (int32_t i = 0; i < f->n; i++) {
        const field_t *fd = &f->fields[i];
        if ((fd->kind <= WEIR_FIELD_UINT32 || fd->kind == WEIR_FIELD_DOUBLE) && fast) {
            const char *q = fast_number(fd, p, end, sep, rec + fd->offset);
            /* a field that is not the last ends at a separator, the last at the end */
            if (q != NULL && (i == f->n - 1 ? q == end : q < end)) {
                p = q + 1;
                continue;
            }
        }
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
        if (fd->kind != WEIR_FIELD_STRING) { /* trimmed here, not by trim(): the hot loop */
            while (a < b && is_blank(*a)) {
                a++;
            }
            while (b > a && is_blank(b[-1])) {
                b--;
            }
        }
        int rc = parse_field(fd, a, b, rec + fd->offset);
        if (rc != 0) {
            return failure(rc, (size_t)i + 1);
        }
        p = stop + 1;
    }
    return 0;
}

/* ---- the one pass over a buffer of lines (wr_fields_scan) --------------------------------- */

static const uint64_t POW10_U[] = { UINT64_C(1),
                                    UINT64_C(10),
                                    UINT64_C(100),
                                    UINT64_C(1000),
                                    UINT64_C(10000),
                                    UINT64_C(100000),
                                    UINT64_C(1000000),
                                    UINT64_C(10000000),
                                    UINT64_C(100000000),
                                    UINT64_C(1000000000),
                                    UINT64_C(10000000000),
                                    UINT64_C(100000000000),
                                    UINT64_C(1000000000000),
                                    UINT64_C(10000000000000),
                                    UINT64_C(100000000000000),
                                    UINT64_C(1000000000000000) };

/* The decimal digits from p: end is where they end (the first other byte; lim, which is a
 * delimiter and never a digit, ends them at the latest, so no bound is checked per byte) and
 * v their value, right for at most 19 digits (beyond, it wraps; the callers reject such
 * counts). Reading eight bytes at a time paid only for numbers of 13 or more digits. */
typedef struct digits {
    const char *end;
    uint64_t v;
} digits_t;

WR_HOT digits_t scan_digits(const char *p)
{
    uint64_t v = 0;
    unsigned d;
    while ((d = (unsigned)(unsigned char)*p - '0') <= 9) {
        v = v * 10 + d;
        p++;
    }
    return (digits_t){ p, v };
}

int wr_fields_scannable(const weir_fields_t *f, char delim)
{
    return f->format == WEIR_FORMAT_TEXT && f->n > 0 && f->slow == 0 && !f->no_fast
           && fast_separator(f->separator) && fast_separator(delim) && delim != f->separator;
}

size_t wr_fields_scan(const weir_fields_t *f, const char *p, const char *lim, char delim,
                      int strip_cr, size_t max_len, char *out, size_t cap, const char **next)
{
    const char sep = f->separator;
    const field_t *const first = f->fields;
    const field_t *const last = first + f->n - 1;
    const size_t size = (size_t)f->size;
    size_t k = 0;
    char *rec = out;
    while (k < cap && p <= lim) {
        const char *q = p;
        for (const field_t *fd = first;; fd++) {
            /* a field as fast_number takes it: [sign] digits, [. digits] for a double */
            int neg = 0;
            if (*q < '0') { /* a sign, or no number ('.', the separator) */
                neg = *q == '-';
                q += neg || *q == '+';
            }
            digits_t dg = scan_digits(q);
            uint64_t m = dg.v;
            size_t digits = (size_t)(dg.end - q);
            q = dg.end;
            char *dst = rec + fd->offset;
            if (fd->kind == WEIR_FIELD_DOUBLE) {
                size_t frac = 0;
                if (*q == '.') {
                    digits_t fr = scan_digits(q + 1);
                    frac = (size_t)(fr.end - q - 1);
                    q = fr.end;
                    digits += frac;
                    if (digits > 15) {
                        goto stop;
                    }
                    m = m * POW10_U[frac] + fr.v;
                }
                if (digits - 1 > 14) { /* 0 or more than 15 */
                    goto stop;
                }
                double x = (double)(int64_t)m; /* exact: m < 10^15 */
                x = frac == 0 ? x : x / POW10[frac];
                x = neg ? -x : x;
                memcpy(dst, &x, sizeof x);
            } else if (digits - 1 > 17) { /* 0 or more than 18: m may have wrapped */
                goto stop;
            } else if (fd->kind == WEIR_FIELD_INT32) { /* store_int's, inlined */
                int64_t v = neg ? -(int64_t)m : (int64_t)m; /* m < 10^18: no overflow */
                if (v != (int32_t)v) {
                    goto stop;
                }
                int32_t x = (int32_t)v;
                memcpy(dst, &x, sizeof x);
            } else {
                int64_t v = neg ? -(int64_t)m : (int64_t)m;
                if (store_int(fd->kind, v, dst) != 0) {
                    goto stop;
                }
            }
            if (fd == last) {
                break;
            }
            if (*q != sep) {
                goto stop;
            }
            q++;
        }
        size_t len = (size_t)(q - p);
        if (*q != delim) {
            /* q < lim here: *lim is the delimiter */
            if (!(strip_cr && *q == '\r' && q[1] == delim)) {
                goto stop;
            }
            q++;
        }
        if (len > max_len) {
            goto stop;
        }
        p = q + 1;
        k++;
        rec += size;
    }
stop:
    *next = p;
    return k;
}

/* ---- JSON and CSV (the message of a failure goes to f->why) ------------------------------ */

int wr_fields_why(weir_fields_t *f, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->why, sizeof f->why, fmt, ap);
    va_end(ap);
    return -1;
}

void wr_fields_no_fast(weir_fields_t *f)
{
    f->no_fast = 1;
}

int32_t wr_fields_n(const weir_fields_t *f)
{
    return f->n;
}

int32_t wr_fields_lookup(const weir_fields_t *f, const char *name, size_t n, int32_t hint)
{
    if (hint >= 0 && hint < f->n && f->fields[hint].name_len == n
        && memcmp(f->fields[hint].name, name, n) == 0) {
        return hint;
    }
    for (int32_t i = 0; i < f->n; i++) {
        if (f->fields[i].name_len == n && memcmp(f->fields[i].name, name, n) == 0) {
            return i;
        }
    }
    return -1;
}

void wr_fields_begin(weir_fields_t *f)
{
    if (f->n > 0) {
        memset(f->seen, 0, (size_t)f->n);
    }
}

/* Marks field i filled; -1 (with the message) when it already was. */
static int mark(weir_fields_t *f, int32_t i)
{
    if (f->seen[i]) {
        return wr_fields_why(f, "field %s appears twice", f->fields[i].name);
    }
    f->seen[i] = 1;
    return 0;
}

int wr_fields_end(weir_fields_t *f)
{
    for (int32_t i = 0; i < f->n; i++) {
        if (!f->seen[i]) {
            return wr_fields_why(f, "field %s (%s) is missing", f->fields[i].name,
                                 kind_name(f->fields[i].kind));
        }
    }
    return 0;
}

static int expected(weir_fields_t *f, int32_t i, const char *got)
{
    const field_t *fd = &f->fields[i];
    const char *want = fd->kind == WEIR_FIELD_STRING ? "a string"
                       : fd->kind == WEIR_FIELD_BOOL ? "true or false"
                                                      : "a number";
    return wr_fields_why(f, "field %s (%s): expected %s, got %s", fd->name, kind_name(fd->kind),
                         want, got);
}

int wr_fields_put_number(weir_fields_t *f, int32_t i, double v, char *rec)
{
    const field_t *fd = &f->fields[i];
    if (mark(f, i) != 0) {
        return -1;
    }
    if (fd->kind == WEIR_FIELD_STRING || fd->kind == WEIR_FIELD_BOOL) {
        return expected(f, i, "a number");
    }
    char *out = rec + fd->offset;
    if (fd->kind == WEIR_FIELD_DOUBLE) {
        memcpy(out, &v, sizeof v);
        return 0;
    }
    if (fd->kind == WEIR_FIELD_FLOAT) {
        float fl = (float)v;
        if (isinf(fl) && !isinf(v)) {
            return wr_fields_why(f, "field %s (float): %.17g is out of range", fd->name, v);
        }
        memcpy(out, &fl, sizeof fl);
        return 0;
    }
    if (v != floor(v) || fabs(v) > 1e10) {
        return wr_fields_why(f, "field %s (%s): %.17g is %s", fd->name, kind_name(fd->kind), v,
                             v != floor(v) ? "not an integer" : "out of range");
    }
    if (store_int(fd->kind, (int64_t)v, out) != 0) {
        return wr_fields_why(f, "field %s (%s): %.0f is out of range", fd->name,
                             kind_name(fd->kind), v);
    }
    return 0;
}

int wr_fields_put_bool(weir_fields_t *f, int32_t i, int b, char *rec)
{
    const field_t *fd = &f->fields[i];
    if (mark(f, i) != 0) {
        return -1;
    }
    if (fd->kind != WEIR_FIELD_BOOL) {
        return expected(f, i, b ? "true" : "false");
    }
    bool v = b != 0;
    memcpy(rec + fd->offset, &v, sizeof v);
    return 0;
}

int wr_fields_put_string(weir_fields_t *f, int32_t i, const char *p, size_t n, char *rec)
{
    const field_t *fd = &f->fields[i];
    if (mark(f, i) != 0) {
        return -1;
    }
    if (fd->kind != WEIR_FIELD_STRING) {
        return expected(f, i, "a string");
    }
    if (put_string(fd, p, p + n, rec + fd->offset) != 0) {
        return wr_fields_why(f, "field %s (string): %s", fd->name,
                             n >= (size_t)fd->bytes ? "longer than its bound" : "holds a NUL");
    }
    return 0;
}

int wr_fields_put_other(weir_fields_t *f, int32_t i, const char *got)
{
    if (mark(f, i) != 0) {
        return -1;
    }
    return expected(f, i, got);
}

/* A CSV piece into field i: numbers and booleans as text fields are (trimmed), strings as they
 * are. */
static int put_csv(weir_fields_t *f, int32_t i, const char *p, size_t n, char *rec,
                   int32_t col)
{
    const field_t *fd = &f->fields[i];
    const char *a = p, *b = p + n;
    if (fd->kind != WEIR_FIELD_STRING) {
        trim(&a, &b);
    }
    int rc = parse_field(fd, a, b, rec + fd->offset);
    if (rc == 0) {
        return 0;
    }
    const char *what = rc == WEIR_FIELDS_RANGE     ? "is out of range for"
                       : rc == WEIR_FIELDS_STRING  ? "is longer than the bound of"
                       : fd->kind == WEIR_FIELD_BOOL ? "is not true, false, 1 or 0 for"
                       : fd->kind <= WEIR_FIELD_UINT32 ? "is not an integer for"
                                                       : "is not a number for";
    return wr_fields_why(f, "column %d: field %s %s %s", (int)col, fd->name ? fd->name : "?",
                         what, kind_name(fd->kind));
}

static int32_t csv_header(weir_fields_t *f, int32_t nf)
{
    f->header = HEADER_FAILED;
    f->ncols = nf;
    f->col_field = wr_xreallocarray(f->col_field, (size_t)nf, sizeof *f->col_field);
    wr_fields_begin(f);
    for (int32_t c = 0; c < nf; c++) {
        size_t n = 0;
        const char *name = wr_csv_field(f->csv, c, &n);
        int32_t i = wr_fields_lookup(f, name, n, c);
        f->col_field[c] = i;
        if (i >= 0 && mark(f, i) != 0) {
            return failure(WEIR_FIELDS_FORMAT, 0);
        }
    }
    for (int32_t i = 0; i < f->n; i++) {
        if (!f->seen[i]) {
            wr_fields_why(f, "the header names no column %s (field %d of the record)",
                          f->fields[i].name, (int)i + 1);
            return failure(WEIR_FIELDS_FORMAT, 0);
        }
    }
    f->header = HEADER_MAPPED;
    return failure(WEIR_FIELDS_HEADER, 0);
}

static int32_t parse_csv(weir_fields_t *f, const char *line, size_t len, char *rec)
{
    int32_t nf = wr_csv_split(f->csv, line, len);
    if (nf < 0) {
        wr_fields_why(f, "%s", wr_csv_error(f->csv));
        if (f->header == HEADER_PENDING) {
            f->header = HEADER_FAILED;
        }
        return failure(WEIR_FIELDS_FORMAT, 0);
    }
    if (f->header == HEADER_PENDING) {
        return csv_header(f, nf);
    }
    if (f->header == HEADER_FAILED) {
        wr_fields_why(f, "the CSV header (the first line) did not match the record");
        return failure(WEIR_FIELDS_FORMAT, 0);
    }
    int32_t want = f->header == HEADER_MAPPED ? f->ncols : f->n;
    if (nf != want) {
        wr_fields_why(f, "expected %d field%s%s, got %d", (int)want, want == 1 ? "" : "s",
                      f->header == HEADER_MAPPED ? " (as the header)" : "", (int)nf);
        return failure(WEIR_FIELDS_FORMAT, 0);
    }
    for (int32_t c = 0; c < nf; c++) {
        int32_t i = f->header == HEADER_MAPPED ? f->col_field[c] : c;
        if (i < 0) {
            continue;
        }
        size_t n = 0;
        const char *p = wr_csv_field(f->csv, c, &n);
        if (put_csv(f, i, p, n, rec, wr_csv_column(f->csv, c)) != 0) {
            return failure(WEIR_FIELDS_FORMAT, 0);
        }
    }
    return 0;
}

int32_t wr_fields_parse(weir_fields_t *f, const char *line, size_t len, void *out)
{
    if (f->format == WEIR_FORMAT_JSON) {
        return wr_json_fill(f->json, f, line, len, out) == 0 ? 0
                                                              : failure(WEIR_FIELDS_FORMAT, 0);
    }
    if (f->format == WEIR_FORMAT_CSV) {
        return parse_csv(f, line, len, out);
    }
    return parse_text(f, line, len, out);
}

int32_t weir_fields_parse(weir_fields_t *f, const char *line, int32_t len, void *out)
{
    if (f == NULL || out == NULL || len < 0 || (line == NULL && len > 0)) {
        return failure(WEIR_FIELDS_COUNT, 0);
    }
    return wr_fields_parse(f, line ? line : "", (size_t)len, out);
}
