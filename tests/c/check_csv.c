/* SPDX-License-Identifier: MIT */
/* check_csv.c: RFC 4180 rows (runtime/csv.c) and CSV lines into typed records, by position and
 * through a header (fields.c). */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "check_support.h"
#include "csv.h"
#include "fields.h"

static int32_t split(wr_csv_t *c, const char *text)
{
    return wr_csv_split(c, text, strlen(text));
}

static void field_is(const wr_csv_t *c, int32_t i, const char *want)
{
    size_t n = 0;
    const char *p = wr_csv_field(c, i, &n);
    ck_assert_uint_eq(n, strlen(want));
    ck_assert(memcmp(p, want, n) == 0);
}

START_TEST(test_quoted_fields_and_doubled_quotes)
{
    wr_csv_t *c = wr_csv_new(',');
    ck_assert_int_eq(split(c, "a,\"b,c\",\"say \"\"hi\"\"\",,\"\""), 5);
    field_is(c, 0, "a");
    field_is(c, 1, "b,c");
    field_is(c, 2, "say \"hi\"");
    field_is(c, 3, "");
    field_is(c, 4, "");
    ck_assert_int_eq(wr_csv_column(c, 2), 9);
    ck_assert_int_eq(split(c, ""), 1); /* an empty line is one empty field */
    ck_assert_int_eq(split(c, " x ,y"), 2);
    field_is(c, 0, " x "); /* spaces belong to the field (RFC 4180) */
    ck_assert_int_eq(split(c, "a,"), 2);
    wr_csv_free(c);
    wr_csv_free(NULL);
}
END_TEST

START_TEST(test_bad_quotes_name_their_column)
{
    wr_csv_t *c = wr_csv_new(';');
    ck_assert_int_eq(split(c, "a;\"open"), -1);
    ck_assert_str_eq(wr_csv_error(c), "column 3: the quoted field has no closing quote");
    ck_assert_int_eq(split(c, "\"a\"b;c"), -1);
    ck_assert_str_eq(wr_csv_error(c), "column 4: expected the separator or the end of the line "
                                      "after the closing quote");
    ck_assert_int_eq(split(c, "ab\"c"), -1);
    ck_assert(strncmp(wr_csv_error(c), "column 3: a quote inside an unquoted field", 42) == 0);
    ck_assert_int_eq(weir_csv_split(NULL, "a", 1), -1);
    ck_assert_ptr_null(weir_csv_new('"'));
    wr_csv_free(c);
}
END_TEST

typedef struct row {
    int32_t id;
    char name[6]; /* string[5] */
    double price;
} row_t;

static weir_fields_t *row_layout(int header)
{
    weir_fields_t *f = weir_fields_new((int32_t)sizeof(row_t), ',');
    weir_fields_add_named(f, WEIR_FIELD_INT32, offsetof(row_t, id), 0, "id");
    weir_fields_add_named(f, WEIR_FIELD_STRING, offsetof(row_t, name), 6, "name");
    weir_fields_add_named(f, WEIR_FIELD_DOUBLE, offsetof(row_t, price), 0, "price");
    ck_assert_int_eq(weir_fields_set_format(f, WEIR_FORMAT_CSV, header), 0);
    return f;
}

static int32_t parse(weir_fields_t *f, const char *text, row_t *r)
{
    return weir_fields_parse(f, text, (int32_t)strlen(text), r);
}

START_TEST(test_rows_fill_fields_in_order)
{
    weir_fields_t *f = row_layout(0);
    row_t r;
    ck_assert_int_eq(parse(f, " 7 ,\"a,b\", 2.5", &r), 0);
    ck_assert_int_eq(r.id, 7);
    ck_assert_str_eq(r.name, "a,b");
    ck_assert(r.price == 2.5);
    ck_assert_int_eq(parse(f, "7,a", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f), "expected 3 fields, got 2");
    ck_assert_int_eq(parse(f, "7,toolong,1", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f),
                     "column 3: field name is longer than the bound of string");
    ck_assert_int_eq(parse(f, "x,a,1", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f), "column 1: field id is not an integer for int32_t");
    weir_fields_free(f);
}
END_TEST

START_TEST(test_a_header_maps_columns_by_name)
{
    weir_fields_t *f = row_layout(1);
    row_t r;
    ck_assert_int_eq(parse(f, "price,unused,id,name", &r), WEIR_FIELDS_HEADER);
    /* a copy made after the header keeps its mapping */
    weir_fields_t *c = wr_fields_copy(f);
    ck_assert_int_eq(parse(f, "1.25,zzz,3,\"q\"\"\"", &r), 0);
    ck_assert_int_eq(r.id, 3);
    ck_assert_str_eq(r.name, "q\"");
    ck_assert(r.price == 1.25);
    ck_assert_int_eq(parse(f, "1,2,3", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f), "expected 4 fields (as the header), got 3");
    ck_assert_int_eq(parse(c, "2,x,4,n", &r), 0);
    ck_assert_int_eq(r.id, 4);
    weir_fields_free(c);
    weir_fields_free(f);
}
END_TEST

START_TEST(test_a_header_without_a_field_fails_every_row)
{
    weir_fields_t *f = row_layout(1);
    row_t r;
    ck_assert_int_eq(parse(f, "id,name", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f),
                     "the header names no column price (field 3 of the record)");
    ck_assert_int_eq(parse(f, "1,a", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert(strstr(weir_fields_error(f), "header") != NULL);
    weir_fields_free(f);
    f = row_layout(1);
    ck_assert_int_eq(parse(f, "id,id,name,price", &r) & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_str_eq(weir_fields_error(f), "field id appears twice");
    weir_fields_free(f);
}
END_TEST

static Suite *csv_suite(void)
{
    Suite *s = suite_create("csv");
    const check_case_t cases[] = {
        {"quotes", test_quoted_fields_and_doubled_quotes},
        {"bad_quotes", test_bad_quotes_name_their_column},
        {"rows_in_order", test_rows_fill_fields_in_order},
        {"header", test_a_header_maps_columns_by_name},
        {"bad_header", test_a_header_without_a_field_fails_every_row},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(csv_suite());
}
