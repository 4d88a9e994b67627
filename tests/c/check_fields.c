/* SPDX-License-Identifier: MIT */
/* check_fields.c: lines of separated numbers into C records (runtime/fields.c). */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "fields.h"

typedef struct rec {
    int32_t key;
    double ts;
} rec_t;

typedef struct all {
    int8_t i8;
    int16_t i16;
    int32_t i32;
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    float f;
    double d;
    bool b;
} all_t;

static weir_fields_t *rec_layout(char sep)
{
    weir_fields_t *f = weir_fields_new((int32_t)sizeof(rec_t), sep);
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_INT32, offsetof(rec_t, key)), 0);
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_DOUBLE, offsetof(rec_t, ts)), 0);
    return f;
}

static weir_fields_t *all_layout(void)
{
    weir_fields_t *f = weir_fields_new((int32_t)sizeof(all_t), ',');
    weir_fields_add(f, WEIR_FIELD_INT8, offsetof(all_t, i8));
    weir_fields_add(f, WEIR_FIELD_INT16, offsetof(all_t, i16));
    weir_fields_add(f, WEIR_FIELD_INT32, offsetof(all_t, i32));
    weir_fields_add(f, WEIR_FIELD_UINT8, offsetof(all_t, u8));
    weir_fields_add(f, WEIR_FIELD_UINT16, offsetof(all_t, u16));
    weir_fields_add(f, WEIR_FIELD_UINT32, offsetof(all_t, u32));
    weir_fields_add(f, WEIR_FIELD_FLOAT, offsetof(all_t, f));
    weir_fields_add(f, WEIR_FIELD_DOUBLE, offsetof(all_t, d));
    weir_fields_add(f, WEIR_FIELD_BOOL, offsetof(all_t, b));
    return f;
}

static int32_t parse(weir_fields_t *f, const char *text, void *out)
{
    return weir_fields_parse(f, text, (int32_t)strlen(text), out);
}

START_TEST(test_fields_are_filled_in_declaration_order)
{
    weir_fields_t *f = rec_layout(',');
    rec_t r;
    ck_assert_int_eq(parse(f, "42,1718088600500", &r), 0);
    ck_assert_int_eq(r.key, 42);
    ck_assert(r.ts == 1718088600500.0);
    ck_assert_int_eq(parse(f, " -7 ,\t2.5 ", &r), 0);
    ck_assert_int_eq(r.key, -7);
    ck_assert(r.ts == 2.5);
    weir_fields_free(f);
}
END_TEST

START_TEST(test_every_field_type_at_its_limits)
{
    weir_fields_t *f = all_layout();
    all_t a;
    memset(&a, 0, sizeof a);
    ck_assert_int_eq(parse(f, "-128,-32768,-2147483648,255,65535,4294967295,1.5,-0.25,true", &a),
                     0);
    ck_assert_int_eq(a.i8, -128);
    ck_assert_int_eq(a.i16, -32768);
    ck_assert_int_eq(a.i32, INT32_MIN);
    ck_assert_uint_eq(a.u8, 255);
    ck_assert_uint_eq(a.u16, 65535);
    ck_assert_uint_eq(a.u32, UINT32_MAX);
    ck_assert(a.f == 1.5f);
    ck_assert(a.d == -0.25);
    ck_assert(a.b);
    ck_assert_int_eq(parse(f, "127,32767,2147483647,0,0,0,1e3,6.02e23,0", &a), 0);
    ck_assert_int_eq(a.i8, 127);
    ck_assert(a.f == 1000.0f);
    ck_assert(a.d == 6.02e23);
    ck_assert(!a.b);
    weir_fields_free(f);
}
END_TEST

/* The exact fast path must agree with strtod to the last bit. */
START_TEST(test_decimals_round_as_strtod)
{
    weir_fields_t *f = rec_layout(',');
    const char *texts[] = { "0.1", "123456.789", "-0.000001", "999999999999999", "3.14159265358979",
                            "1234567890.12345", "0.30000000000000004", "7." };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        char line[64];
        snprintf(line, sizeof line, "1,%s", texts[i]);
        rec_t r;
        ck_assert_int_eq(parse(f, line, &r), 0);
        ck_assert_msg(r.ts == strtod(texts[i], NULL), "%s", texts[i]);
    }
    weir_fields_free(f);
}
END_TEST

START_TEST(test_wrong_field_count_names_the_count)
{
    weir_fields_t *f = rec_layout(',');
    rec_t r;
    ck_assert_int_eq(parse(f, "1", &r), WEIR_FIELDS_COUNT | 1 << 8);
    ck_assert_int_eq(parse(f, "", &r), WEIR_FIELDS_COUNT | 1 << 8);
    ck_assert_int_eq(parse(f, "1,2,3", &r), WEIR_FIELDS_COUNT | 3 << 8);
    ck_assert_int_eq(parse(f, "1,2,", &r), WEIR_FIELDS_COUNT | 3 << 8);
    weir_fields_free(f);
}
END_TEST

/* A line of 2^23 or more separators overflowed `n << 8` (D7): the count now saturates at
 * WEIR_FIELDS_N_MAX, and just below it stays exact. UBSan (the ASan build) checks the shift. */
START_TEST(test_a_count_of_2_pow_23_fields_saturates)
{
    weir_fields_t *f = rec_layout(',');
    rec_t r;
    size_t len = (size_t)1 << 24; /* "1" and 2^24 - 1 commas: 2^24 fields */
    char *line = malloc(len);
    ck_assert_ptr_nonnull(line);
    line[0] = '1';
    memset(line + 1, ',', len - 1);
    ck_assert_int_eq(weir_fields_parse(f, line, (int32_t)len, &r),
                     WEIR_FIELDS_COUNT | WEIR_FIELDS_N_MAX << 8);
    /* WEIR_FIELDS_N_MAX fields exactly: the first value that says "that many or more" */
    int32_t n_max_len = WEIR_FIELDS_N_MAX; /* "1" and N_MAX - 1 commas */
    ck_assert_int_eq(weir_fields_parse(f, line, n_max_len, &r),
                     WEIR_FIELDS_COUNT | WEIR_FIELDS_N_MAX << 8);
    ck_assert_int_eq(weir_fields_parse(f, line, n_max_len - 1, &r),
                     WEIR_FIELDS_COUNT | (WEIR_FIELDS_N_MAX - 1) << 8);
    free(line);
    weir_fields_free(f);
}
END_TEST

START_TEST(test_a_field_that_is_no_number_is_named)
{
    weir_fields_t *f = rec_layout(',');
    rec_t r;
    ck_assert_int_eq(parse(f, "x,1", &r), WEIR_FIELDS_NUMBER | 1 << 8);
    ck_assert_int_eq(parse(f, "1.5,1", &r), WEIR_FIELDS_NUMBER | 1 << 8); /* integer field */
    ck_assert_int_eq(parse(f, ",1", &r), WEIR_FIELDS_NUMBER | 1 << 8);
    ck_assert_int_eq(parse(f, "-,1", &r), WEIR_FIELDS_NUMBER | 1 << 8);
    ck_assert_int_eq(parse(f, "1,", &r), WEIR_FIELDS_NUMBER | 2 << 8);
    ck_assert_int_eq(parse(f, "1,2x", &r), WEIR_FIELDS_NUMBER | 2 << 8);
    ck_assert_int_eq(parse(f, "1,1 2", &r), WEIR_FIELDS_NUMBER | 2 << 8);
    weir_fields_free(f);
}
END_TEST

START_TEST(test_integers_out_of_their_type_are_range_errors)
{
    weir_fields_t *f = all_layout();
    all_t a;
    ck_assert_int_eq(parse(f, "128,0,0,0,0,0,0,0,0", &a), WEIR_FIELDS_RANGE | 1 << 8);
    ck_assert_int_eq(parse(f, "0,-32769,0,0,0,0,0,0,0", &a), WEIR_FIELDS_RANGE | 2 << 8);
    ck_assert_int_eq(parse(f, "0,0,2147483648,0,0,0,0,0,0", &a), WEIR_FIELDS_RANGE | 3 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,-1,0,0,0,0,0", &a), WEIR_FIELDS_RANGE | 4 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,0,65536,0,0,0,0", &a), WEIR_FIELDS_RANGE | 5 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,0,0,99999999999999999999999,0,0,0", &a),
                     WEIR_FIELDS_RANGE | 6 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,0,0,0,1e39,0,0", &a), WEIR_FIELDS_RANGE | 7 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,0,0,0,0,1e999,0", &a), WEIR_FIELDS_RANGE | 8 << 8);
    ck_assert_int_eq(parse(f, "0,0,0,0,0,0,0,0,yes", &a), WEIR_FIELDS_NUMBER | 9 << 8);
    weir_fields_free(f);
}
END_TEST

/* The line is not NUL-terminated: nothing past len may be read or change the result. */
START_TEST(test_parse_stops_at_len)
{
    weir_fields_t *f = rec_layout(';');
    rec_t r;
    const char *text = "5;2.25999";
    ck_assert_int_eq(weir_fields_parse(f, text, 4, &r), 0);
    ck_assert(r.ts == 2.0);
    ck_assert_int_eq(weir_fields_parse(f, text, 5, &r), 0);
    ck_assert(r.ts == 2.2);
    ck_assert_int_eq(weir_fields_parse(f, text, 2, &r), WEIR_FIELDS_NUMBER | 2 << 8);
    weir_fields_free(f);
}
END_TEST

START_TEST(test_layouts_reject_fields_that_do_not_fit)
{
    ck_assert_ptr_null(weir_fields_new(0, ','));
    weir_fields_t *f = weir_fields_new(8, ',');
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_DOUBLE, 0), 0);
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_INT32, 6), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_add(f, 99, 0), WEIR_EINVAL);
    weir_fields_t *c = wr_fields_copy(f);
    weir_fields_free(f);
    double d = 0;
    ck_assert_int_eq(weir_fields_parse(c, "3.5", 3, &d), 0);
    ck_assert(d == 3.5);
    weir_fields_free(c);
    weir_fields_free(NULL);
}
END_TEST

START_TEST(test_string_fields_take_the_piece_as_it_is)
{
    typedef struct named {
        char s[5];
        int32_t n;
    } named_t;
    weir_fields_t *f = weir_fields_new((int32_t)sizeof(named_t), ';');
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_STRING, offsetof(named_t, s), 5, "s"), 0);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_INT32, offsetof(named_t, n), 0, "n"), 0);
    named_t r;
    memset(&r, 0x5a, sizeof r);
    ck_assert_int_eq(parse(f, " ab ; 7", &r), 0);
    ck_assert_str_eq(r.s, " ab "); /* not trimmed, NUL-padded */
    ck_assert_int_eq(r.s[4], 0);
    ck_assert_int_eq(r.n, 7);
    ck_assert_int_eq(parse(f, ";1", &r), 0);
    ck_assert_str_eq(r.s, "");
    ck_assert_int_eq(parse(f, "abcde;1", &r), WEIR_FIELDS_STRING | 1 << 8);
    ck_assert_int_eq(weir_fields_parse(f, "a\0b;1", 5, &r), WEIR_FIELDS_STRING | 1 << 8);
    weir_fields_free(f);
}
END_TEST

/* The one-pass path for number fields (fast_number) against the general one on random lines
 * of number-like bytes: the same result and, when it parses, the same record. */
static void compare_paths(weir_fields_t *fast, weir_fields_t *general, size_t size,
                          unsigned seed, const char *alphabet)
{
    char line[40];
    unsigned char a[sizeof(all_t)], b[sizeof(all_t)];
    size_t na = strlen(alphabet);
    for (int t = 0; t < 40000; t++) {
        seed = seed * 1103515245u + 12345u;
        size_t len = (seed >> 16) % 24;
        for (size_t i = 0; i < len; i++) {
            seed = seed * 1103515245u + 12345u;
            line[i] = alphabet[(seed >> 16) % na];
        }
        line[len] = '\0';
        memset(a, 0xa5, sizeof a);
        memset(b, 0xa5, sizeof b);
        int32_t ra = weir_fields_parse(fast, line, (int32_t)len, a);
        int32_t rb = weir_fields_parse(general, line, (int32_t)len, b);
        ck_assert_msg(ra == rb, "\"%s\": %d vs %d", line, ra, rb);
        ck_assert_msg(ra != 0 || memcmp(a, b, size) == 0, "\"%s\": records differ", line);
    }
}

START_TEST(test_the_one_pass_path_parses_as_the_general_one)
{
    const char *sets[] = { "0123456789,", "0123456789,.-+", "01239,.-+ \te", "9,.", "1,-" };
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        weir_fields_t *fa = rec_layout(','), *ga = rec_layout(',');
        wr_fields_no_fast(ga);
        compare_paths(fa, ga, sizeof(rec_t), 7u + (unsigned)k, sets[k]);
        weir_fields_free(fa);
        weir_fields_free(ga);
    }
    /* a double first, then an integer */
    {
        weir_fields_t *fa = weir_fields_new(16, ','), *ga = weir_fields_new(16, ',');
        ck_assert_int_eq(weir_fields_add(fa, WEIR_FIELD_DOUBLE, 0), 0);
        ck_assert_int_eq(weir_fields_add(ga, WEIR_FIELD_DOUBLE, 0), 0);
        ck_assert_int_eq(weir_fields_add(fa, WEIR_FIELD_INT32, 8), 0);
        ck_assert_int_eq(weir_fields_add(ga, WEIR_FIELD_INT32, 8), 0);
        wr_fields_no_fast(ga);
        compare_paths(fa, ga, 12, 3u, "01239,.-+ e");
        weir_fields_free(fa);
        weir_fields_free(ga);
    }
    /* every integer type, and a separator that could be part of a number (general path) */
    const int32_t kinds[] = { WEIR_FIELD_INT8, WEIR_FIELD_UINT8, WEIR_FIELD_INT16,
                              WEIR_FIELD_UINT16, WEIR_FIELD_INT32, WEIR_FIELD_UINT32 };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        for (int s = 0; s < 2; s++) {
            char sep = s == 0 ? ';' : '.';
            weir_fields_t *fa = weir_fields_new((int32_t)sizeof(all_t), sep);
            weir_fields_t *ga = weir_fields_new((int32_t)sizeof(all_t), sep);
            ck_assert_int_eq(weir_fields_add(fa, kinds[k], 0), 0);
            ck_assert_int_eq(weir_fields_add(ga, kinds[k], 0), 0);
            ck_assert_int_eq(weir_fields_add(fa, WEIR_FIELD_DOUBLE, 8), 0);
            ck_assert_int_eq(weir_fields_add(ga, WEIR_FIELD_DOUBLE, 8), 0);
            wr_fields_no_fast(ga);
            compare_paths(fa, ga, 16, 99u + (unsigned)k, "000123456789;.-");
            compare_paths(fa, ga, 16, 5u + (unsigned)k, "99999999999999999999;.");
            weir_fields_free(fa);
            weir_fields_free(ga);
        }
    }
}
END_TEST

START_TEST(test_the_one_pass_path_at_its_limits)
{
    weir_fields_t *f = rec_layout(',');
    rec_t r;
    ck_assert_int_eq(parse(f, "+12,.5", &r), 0);
    ck_assert_int_eq(r.key, 12);
    ck_assert(r.ts == 0.5);
    ck_assert_int_eq(parse(f, "-0,7.", &r), 0);
    ck_assert_int_eq(r.key, 0);
    ck_assert(r.ts == 7.0);
    ck_assert_int_eq(parse(f, "1,-0", &r), 0);
    ck_assert(r.ts == 0.0 && signbit(r.ts));
    ck_assert_int_eq(parse(f, "1,123456789012345", &r), 0); /* 15 digits: the fast path */
    ck_assert(r.ts == 123456789012345.0);
    ck_assert_int_eq(parse(f, "1,1234567890.123456", &r), 0); /* 16: strtod */
    ck_assert(r.ts == 1234567890.123456);
    ck_assert_int_eq(parse(f, "2147483647,1e3", &r), 0);
    ck_assert_int_eq(r.key, 2147483647);
    ck_assert(r.ts == 1000.0);
    ck_assert_int_ne(parse(f, "2147483648,1", &r), 0);
    ck_assert_int_eq(parse(f, "000000000000000000001,1", &r), 0); /* 21 digits: general */
    ck_assert_int_eq(r.key, 1);
    ck_assert_int_ne(parse(f, "1000000000000000000000,1", &r), 0);
    ck_assert_int_ne(parse(f, "1,2,", &r), 0);
    ck_assert_int_ne(parse(f, "1,", &r), 0);
    ck_assert_int_ne(parse(f, ",1", &r), 0);
    ck_assert_int_ne(parse(f, "1", &r), 0);
    ck_assert_int_ne(parse(f, "1,1.2.3", &r), 0);
    weir_fields_free(f);
}
END_TEST

/* wr_fields_scan over a buffer of random lines against cutting each line here and parsing it
 * with weir_fields_parse: every line it takes gives the same record, and it stops only at the
 * start of a line, one it need not take (the caller parses it) or one too long. size is the
 * layout's record size. */
static void scan_as_lines(weir_fields_t *f, size_t size, unsigned seed, const char *alphabet,
                          int strip_cr, size_t max_len)
{
    enum { BUF = 4096, CAP = 7 };
    char buf[BUF];
    unsigned char recs[CAP * sizeof(all_t)], one[sizeof(all_t)];
    size_t na = strlen(alphabet);
    for (int t = 0; t < 40; t++) {
        size_t n = 0;
        while (n < BUF - 64) {
            seed = seed * 1103515245u + 12345u;
            size_t len = (seed >> 16) % 20;
            for (size_t i = 0; i < len; i++) {
                seed = seed * 1103515245u + 12345u;
                buf[n++] = alphabet[(seed >> 16) % na];
            }
            buf[n++] = '\n';
        }
        const char *lim = buf + n - 1;
        const char *p = buf;
        while (p <= lim) {
            const char *next = NULL;
            memset(recs, 0xa5, sizeof recs); /* as one: the padding compares equal */
            size_t k = wr_fields_scan(f, p, lim, '\n', strip_cr, max_len, (char *)recs, CAP,
                                      &next);
            ck_assert(k <= CAP);
            for (size_t i = 0; i < k; i++) {
                const char *end = memchr(p, '\n', (size_t)(lim - p) + 1);
                size_t len = (size_t)(end - p);
                if (strip_cr && len > 0 && p[len - 1] == '\r') {
                    len--;
                }
                ck_assert_msg(len <= max_len, "a line longer than max_len was taken");
                memset(one, 0xa5, sizeof one);
                ck_assert_msg(weir_fields_parse(f, p, (int32_t)len, one) == 0,
                              "\"%.*s\" taken but does not parse", (int)len, p);
                ck_assert_msg(memcmp(one, recs + i * size, size) == 0, "\"%.*s\": records differ",
                              (int)len, p);
                p = end + 1;
            }
            ck_assert_ptr_eq(next, p);
            if (p > lim) {
                break;
            }
            if (k == CAP) {
                continue;
            }
            /* stopped at a line: the scan takes the next one on its own */
            p = (const char *)memchr(p, '\n', (size_t)(lim - p) + 1) + 1;
        }
    }
}

START_TEST(test_the_scan_cuts_and_parses_as_line_by_line)
{
    const char *sets[] = { "0123456789,", "0123456789,.-+\r", "01239,.-+ \te\r", "9,.", "1,-" };
    for (size_t k = 0; k < sizeof sets / sizeof sets[0]; k++) {
        weir_fields_t *f = rec_layout(',');
        ck_assert(wr_fields_scannable(f, '\n'));
        scan_as_lines(f, sizeof(rec_t), 11u + (unsigned)k, sets[k], 1, 1 << 20);
        scan_as_lines(f, sizeof(rec_t), 17u + (unsigned)k, sets[k], 0, 1 << 20);
        scan_as_lines(f, sizeof(rec_t), 23u + (unsigned)k, sets[k], 1, 5);
        weir_fields_free(f);
    }
    /* every integer type, then a double */
    const int32_t kinds[] = { WEIR_FIELD_INT8, WEIR_FIELD_UINT8, WEIR_FIELD_INT16,
                              WEIR_FIELD_UINT16, WEIR_FIELD_INT32, WEIR_FIELD_UINT32 };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        weir_fields_t *f = weir_fields_new(16, ';');
        ck_assert_int_eq(weir_fields_add(f, kinds[k], 0), 0);
        ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_DOUBLE, 8), 0);
        ck_assert_int_eq(weir_fields_add(f, kinds[k], 4), 0);
        scan_as_lines(f, 16, 99u + (unsigned)k, "000123456789;.-", 1, 1 << 20);
        scan_as_lines(f, 16, 5u + (unsigned)k, "99999999999999999999;.", 1, 1 << 20);
        weir_fields_free(f);
    }
}
END_TEST

START_TEST(test_the_scan_takes_only_what_it_can)
{
    weir_fields_t *f = rec_layout(',');
    /* not for a separator or delimiter that can be part of a number, nor the same byte */
    ck_assert(!wr_fields_scannable(f, '5'));
    ck_assert(!wr_fields_scannable(f, '-'));
    ck_assert(!wr_fields_scannable(f, '.'));
    ck_assert(!wr_fields_scannable(f, ','));
    ck_assert(wr_fields_scannable(f, ';'));
    weir_fields_t *dot = rec_layout('.');
    ck_assert(!wr_fields_scannable(dot, '\n'));
    weir_fields_free(dot);
    weir_fields_t *general = rec_layout(',');
    wr_fields_no_fast(general);
    ck_assert(!wr_fields_scannable(general, '\n'));
    weir_fields_free(general);
    weir_fields_t *all = all_layout(); /* float and bool: the line-by-line parse */
    ck_assert(!wr_fields_scannable(all, '\n'));
    weir_fields_free(all);
    weir_fields_t *csv = weir_fields_new((int32_t)sizeof(rec_t), ',');
    ck_assert_int_eq(weir_fields_add_named(csv, WEIR_FIELD_INT32, 0, 0, "key"), 0);
    ck_assert_int_eq(weir_fields_add_named(csv, WEIR_FIELD_DOUBLE, 8, 0, "ts"), 0);
    ck_assert(wr_fields_scannable(csv, '\n'));
    ck_assert_int_eq(weir_fields_set_format(csv, WEIR_FORMAT_CSV, 0), 0);
    ck_assert(!wr_fields_scannable(csv, '\n')); /* CSV and JSON: their own parsers */
    weir_fields_free(csv);

    const char text[] = "1,2\r\n-3,4.5\n7, 8\n9,10\n";
    const char *lim = text + sizeof text - 2;
    rec_t r[4];
    const char *next = NULL;
    ck_assert_uint_eq(wr_fields_scan(f, text, lim, '\n', 1, 100, (char *)r, 4, &next), 2);
    ck_assert(r[0].key == 1 && r[0].ts == 2.0 && r[1].key == -3 && r[1].ts == 4.5);
    ck_assert_ptr_eq(next, text + 12); /* "7, 8": blanks */
    ck_assert_uint_eq(wr_fields_scan(f, text + 17, lim, '\n', 1, 100, (char *)r, 4, &next), 1);
    ck_assert(r[0].key == 9 && r[0].ts == 10.0);
    ck_assert_ptr_eq(next, lim + 1);
    /* no "\r" stripped without strip_cr; cap; max_len */
    ck_assert_uint_eq(wr_fields_scan(f, text, lim, '\n', 0, 100, (char *)r, 4, &next), 0);
    ck_assert_ptr_eq(next, text);
    ck_assert_uint_eq(wr_fields_scan(f, text, lim, '\n', 1, 100, (char *)r, 1, &next), 1);
    ck_assert_ptr_eq(next, text + 5);
    ck_assert_uint_eq(wr_fields_scan(f, text, lim, '\n', 1, 4, (char *)r, 4, &next), 1);
    ck_assert_ptr_eq(next, text + 5); /* "-3,4.5" is 6 bytes */
    /* the last line is read up to lim and no further */
    const char cut[] = "1,2\n3,45";
    ck_assert_uint_eq(wr_fields_scan(f, cut, cut + 3, '\n', 1, 100, (char *)r, 4, &next), 1);
    ck_assert_ptr_eq(next, cut + 4);
    /* an integer of 19 or more digits stops the scan before it is negated (its digits wrap a
     * uint64_t: -9223372036854775808 and longer ones were undefined behaviour, found by
     * fuzz_fields; the line-by-line parse then reports the line) */
    const char big[] = "-9223372036854775808,1\n-327000000000000000000000,1\n";
    const char *big_lim = big + sizeof big - 2;
    ck_assert_uint_eq(wr_fields_scan(f, big, big_lim, '\n', 1, 100, (char *)r, 4, &next), 0);
    ck_assert_ptr_eq(next, big);
    ck_assert_uint_eq(wr_fields_scan(f, big + 23, big_lim, '\n', 1, 100, (char *)r, 4, &next),
                      0);
    weir_fields_free(f);
}
END_TEST

static Suite *fields_suite(void)
{
    Suite *s = suite_create("fields");
    const check_case_t cases[] = {
        {"fields_in_declaration_order", test_fields_are_filled_in_declaration_order},
        {"every_type_at_its_limits", test_every_field_type_at_its_limits},
        {"decimals_round_as_strtod", test_decimals_round_as_strtod},
        {"wrong_field_count", test_wrong_field_count_names_the_count},
        {"count_saturates", test_a_count_of_2_pow_23_fields_saturates},
        {"not_a_number", test_a_field_that_is_no_number_is_named},
        {"out_of_range", test_integers_out_of_their_type_are_range_errors},
        {"stops_at_len", test_parse_stops_at_len},
        {"layout_checks", test_layouts_reject_fields_that_do_not_fit},
        {"string_fields", test_string_fields_take_the_piece_as_it_is},
        {"one_pass_as_general", test_the_one_pass_path_parses_as_the_general_one},
        {"one_pass_limits", test_the_one_pass_path_at_its_limits},
        {"scan_as_line_by_line", test_the_scan_cuts_and_parses_as_line_by_line},
        {"scan_takes_what_it_can", test_the_scan_takes_only_what_it_can},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(fields_suite());
}
