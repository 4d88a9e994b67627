/* SPDX-License-Identifier: MIT */
/* check_json.c: JSON lines into typed records by name and into the tape Lua builds values from
 * (runtime/json.cc, through fields.c's layout). */
#include <check.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "check_support.h"
#include "fields.h"

typedef struct click {
    char user[8]; /* string[7] */
    double ts;
    int32_t n;
    bool ok;
} click_t;

static weir_fields_t *click_layout(void)
{
    weir_fields_t *f = weir_fields_new((int32_t)sizeof(click_t), ',');
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_STRING, offsetof(click_t, user), 8,
                                           "user"),
                     0);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_DOUBLE, offsetof(click_t, ts), 0, "ts"),
                     0);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_INT32, offsetof(click_t, n), 0, "n"), 0);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_BOOL, offsetof(click_t, ok), 0, "ok"),
                     0);
    ck_assert_int_eq(weir_fields_set_format(f, WEIR_FORMAT_JSON, 0), 0);
    return f;
}

static int32_t parse(weir_fields_t *f, const char *text, void *out)
{
    return weir_fields_parse(f, text, (int32_t)strlen(text), out);
}

/* parse fails as WEIR_FIELDS_FORMAT with a message that contains want */
static void fails_with(weir_fields_t *f, const char *text, const char *want)
{
    click_t c;
    int32_t rc = parse(f, text, &c);
    ck_assert_int_eq(rc & 0xff, WEIR_FIELDS_FORMAT);
    ck_assert_msg(strstr(weir_fields_error(f), want) != NULL, "%s: got \"%s\", want \"%s\"", text,
                  weir_fields_error(f), want);
}

START_TEST(test_members_fill_fields_by_name_in_any_order)
{
    weir_fields_t *f = click_layout();
    click_t c;
    memset(&c, 0x5a, sizeof c);
    ck_assert_int_eq(parse(f, "{\"n\": -3, \"extra\": [1, {\"x\": null}], \"ok\": true, "
                              "\"ts\": 1.5e3, \"user\": \"ann\"}",
                           &c),
                     0);
    ck_assert_str_eq(c.user, "ann");
    ck_assert(c.ts == 1500);
    ck_assert_int_eq(c.n, -3);
    ck_assert(c.ok);
    /* the string is NUL-padded: the rest of the array holds no old bytes */
    for (size_t i = 3; i < sizeof c.user; i++) {
        ck_assert_int_eq(c.user[i], 0);
    }
    ck_assert_int_eq(parse(f, "{\"user\":\"\\u00e9t\\u00e9\",\"ts\":0,\"n\":0,\"ok\":false}", &c),
                     0);
    ck_assert_str_eq(c.user, "\xc3\xa9t\xc3\xa9");
    weir_fields_free(f);
}
END_TEST

START_TEST(test_syntax_errors_name_the_column_and_what_was_expected)
{
    weir_fields_t *f = click_layout();
    fails_with(f, "{\"user\":\"a\",}", "column 13: string or '}' expected near '}'");
    fails_with(f, "{\"user\" \"a\"}", "column 11: ':' expected");
    fails_with(f, "{\"user\":\"a\"} x", "end of file expected");
    fails_with(f, "", "column 1:");
    fails_with(f, "{\"user\":\"\xff\"}", "column");
    fails_with(f, "[1,2]", "column 1: expected an object, got an array");
    weir_fields_free(f);
}
END_TEST

START_TEST(test_members_of_the_wrong_kind_are_named)
{
    weir_fields_t *f = click_layout();
    fails_with(f, "{\"user\":1,\"ts\":0,\"n\":0,\"ok\":true}",
               "field user (string): expected a string, got a number");
    fails_with(f, "{\"user\":\"a\",\"ts\":\"0\",\"n\":0,\"ok\":true}",
               "field ts (double): expected a number, got a string");
    fails_with(f, "{\"user\":\"a\",\"ts\":0,\"n\":1.5,\"ok\":true}", "field n (int32_t): 1.5");
    fails_with(f, "{\"user\":\"a\",\"ts\":0,\"n\":3000000000,\"ok\":true}", "out of range");
    fails_with(f, "{\"user\":\"a\",\"ts\":0,\"n\":0,\"ok\":1}", "expected true or false");
    fails_with(f, "{\"user\":\"a\",\"ts\":null,\"n\":0,\"ok\":true}", "got null");
    fails_with(f, "{\"user\":\"a\",\"ts\":0,\"n\":0}", "field ok (bool) is missing");
    fails_with(f, "{\"user\":\"a\",\"user\":\"b\",\"ts\":0,\"n\":0,\"ok\":true}",
               "field user appears twice");
    fails_with(f, "{\"user\":\"12345678\",\"ts\":0,\"n\":0,\"ok\":true}", "longer than its bound");
    fails_with(f, "{\"user\":\"a\\u0000b\",\"ts\":0,\"n\":0,\"ok\":true}", "holds a NUL");
    fails_with(f, "{\"user\":\"a\",\"ts\":1e999,\"n\":0,\"ok\":true}", "column");
    weir_fields_free(f);
}
END_TEST

START_TEST(test_a_copy_parses_as_its_original)
{
    weir_fields_t *f = click_layout();
    weir_fields_t *c = wr_fields_copy(f);
    weir_fields_free(f);
    click_t r;
    ck_assert_int_eq(parse(c, "{\"user\":\"z\",\"ts\":2,\"n\":7,\"ok\":false}", &r), 0);
    ck_assert_int_eq(r.n, 7);
    weir_fields_free(c);
}
END_TEST

START_TEST(test_the_tape_is_preorder_with_counts)
{
    weir_json_t *j = weir_json_new();
    const char *text = "{\"a\":[1,\"x\\u0000y\",null],\"b\":{},\"c\":true}";
    int32_t n = weir_json_decode(j, text, (int32_t)strlen(text));
    ck_assert_int_eq(n, 10);
    const weir_json_tok_t *t = weir_json_tape(j);
    ck_assert_int_eq(t[0].kind, WEIR_JSON_OBJECT);
    ck_assert_int_eq(t[0].len, 3);
    ck_assert_int_eq(t[1].kind, WEIR_JSON_STRING); /* the key "a" */
    ck_assert_int_eq(t[2].kind, WEIR_JSON_ARRAY);
    ck_assert_int_eq(t[2].len, 3);
    ck_assert(t[3].kind == WEIR_JSON_NUMBER && t[3].num == 1);
    ck_assert_int_eq(t[4].len, 3); /* "x\0y": NUL kept */
    ck_assert(memcmp(t[4].str, "x\0y", 3) == 0);
    ck_assert_int_eq(t[5].kind, WEIR_JSON_NULL);
    ck_assert_int_eq(t[7].kind, WEIR_JSON_OBJECT);
    ck_assert_int_eq(t[7].len, 0);
    ck_assert_int_eq(t[9].kind, WEIR_JSON_TRUE);
    ck_assert_int_eq(weir_json_decode(j, "[1,", 3), -1);
    ck_assert_str_eq(weir_json_error(j), "column 3: ']' expected near end of file");
    ck_assert_int_eq(weir_json_decode(j, "18446744073709551615", 20), 1); /* 2^64 - 1 */
    ck_assert(weir_json_tape(j)[0].num == 18446744073709551616.0);
    ck_assert_int_eq(weir_json_decode(j, "12345678901234567890123", 23), -1); /* beyond 64 bits */
    ck_assert_str_eq(weir_json_error(j), "column 23: too big integer");
    ck_assert_int_eq(weir_json_decode(j, "1e400", 5), -1);
    ck_assert_int_eq(weir_json_decode(NULL, "1", 1), -1);
    weir_json_free(j);
    weir_json_free(NULL);
}
END_TEST

START_TEST(test_formats_need_names_and_header_needs_csv)
{
    weir_fields_t *f = weir_fields_new(8, ',');
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_DOUBLE, 0), 0);
    ck_assert_int_eq(weir_fields_set_format(f, WEIR_FORMAT_JSON, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_set_format(f, WEIR_FORMAT_TEXT, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_set_format(f, 7, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_add(f, WEIR_FIELD_STRING, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_STRING, 0, 1, "s"), WEIR_EINVAL);
    ck_assert_int_eq(weir_fields_add_named(f, WEIR_FIELD_STRING, 0, 9, "s"), WEIR_EINVAL);
    weir_fields_free(f);
}
END_TEST

static Suite *json_suite(void)
{
    Suite *s = suite_create("json");
    const check_case_t cases[] = {
        {"members_by_name", test_members_fill_fields_by_name_in_any_order},
        {"syntax_errors", test_syntax_errors_name_the_column_and_what_was_expected},
        {"wrong_kinds", test_members_of_the_wrong_kind_are_named},
        {"copy", test_a_copy_parses_as_its_original},
        {"tape", test_the_tape_is_preorder_with_counts},
        {"layout_checks", test_formats_need_names_and_header_needs_csv},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(json_suite());
}
