/* SPDX-License-Identifier: MIT */
/* check_keygroup.c: Flink key hashing and key-group routing against SEMANTICS.md section 10's
 * vectors, plus Java hashCode values computed with OpenJDK 17. */
#include <check.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "keygroup.h"
#include "weir.h"

static int32_t hash_str(const char *s)
{
    return wr_keygroup_java_hash_utf8(s, strlen(s));
}

/* One row of the section 10 table. */
typedef struct key_vector {
    const char *utf8;
    int32_t java_hash;
    int32_t murmur;
    int32_t key_group; /* maxP 128 */
    int32_t subtask_p2;
    int32_t subtask_p3;
    int32_t subtask_p4;
} key_vector_t;

static const key_vector_t string_vectors[] = {
    {"a", 97, 1455541201, 81, 1, 1, 2},
    {"b", 98, 516420758, 22, 0, 0, 0},
    {"c", 99, 1219591486, 62, 0, 1, 1},
    {"\xc3\xa9", 233, 1107437598, 30, 0, 0, 0},             /* U+00E9 */
    {"\xe2\x82\xac", 8364, 520806086, 70, 1, 1, 2},         /* U+20AC */
    {"\xf0\x9f\x98\x80", 1772899, 1934073014, 54, 0, 1, 1}, /* U+1F600, a surrogate pair */
    {"", 0, 593689054, 94, 1, 2, 2},
};

START_TEST(test_keygroup_string_vectors_match_semantics_table)
{
    const key_vector_t *kv = &string_vectors[_i];
    int32_t h = hash_str(kv->utf8);
    ck_assert_int_eq(h, kv->java_hash);
    ck_assert_int_eq(wr_keygroup_murmur(h), kv->murmur);
    int32_t kg = wr_keygroup_of(h, 128);
    ck_assert_int_eq(kg, kv->key_group);
    ck_assert_int_eq(wr_keygroup_subtask(kg, 128, 2), kv->subtask_p2);
    ck_assert_int_eq(wr_keygroup_subtask(kg, 128, 3), kv->subtask_p3);
    ck_assert_int_eq(wr_keygroup_subtask(kg, 128, 4), kv->subtask_p4);
}
END_TEST

START_TEST(test_keygroup_string_vectors_through_ffi)
{
    const key_vector_t *kv = &string_vectors[_i];
    int32_t h = weir_keygroup_hash_string(kv->utf8, strlen(kv->utf8));
    ck_assert_int_eq(h, kv->java_hash);
    int32_t kg = weir_keygroup_of(h, 128);
    ck_assert_int_eq(kg, kv->key_group);
    ck_assert_int_eq(weir_keygroup_subtask(kg, 128, 2), kv->subtask_p2);
    ck_assert_int_eq(weir_keygroup_of_string(kv->utf8, strlen(kv->utf8), 128), kv->key_group);
}
END_TEST

START_TEST(test_keygroup_of_number_combines_hash_and_group)
{
    for (int v = -3; v <= 300; v++) {
        ck_assert_int_eq(weir_keygroup_of_number(v, 128), wr_keygroup_of(v, 128));
    }
    ck_assert_int_eq(weir_keygroup_of_number(1.5, 128),
                     wr_keygroup_of(wr_keygroup_java_hash_number(1.5), 128));
    ck_assert_int_eq(weir_keygroup_of_number(1.0, 0), WEIR_EINVAL);
}
END_TEST

START_TEST(test_keygroup_fill_memo_matches_of_number)
{
    /* the hash exchange's memo (weir.exchange): key i's subtask, as key_by computes it */
    enum { N = 5000 };
    static double keys[N];
    static int16_t subtasks[N];
    const int32_t ps[] = {2, 3, 7, 128};
    for (size_t j = 0; j < sizeof ps / sizeof ps[0]; j++) {
        ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, N, 128, ps[j]), 0);
        for (int i = 0; i < N; i++) {
            ck_assert(keys[i] == (double)i);
            ck_assert_int_eq(subtasks[i],
                             weir_keygroup_subtask(weir_keygroup_of_number(i, 128), 128, ps[j]));
        }
    }
    ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, N, 96, 5), 0); /* not a power of 2 */
    ck_assert_int_eq(subtasks[4999],
                     weir_keygroup_subtask(weir_keygroup_of_number(4999, 96), 96, 5));
    ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, N, 0, 2), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, N, 128, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, N, 128, 129), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_fill_memo(keys, subtasks, -1, 128, 2), WEIR_EINVAL);
}
END_TEST

START_TEST(test_keygroup_seed_transcript_prefixes)
{
    /* "2> a", "1> b", "1> c" at parallelism 2 with the default maxParallelism. */
    int32_t maxp = wr_keygroup_default_max_parallelism(2);
    ck_assert_int_eq(maxp, 128);
    ck_assert_int_eq(wr_keygroup_subtask(wr_keygroup_of(hash_str("a"), maxp), maxp, 2) + 1, 2);
    ck_assert_int_eq(wr_keygroup_subtask(wr_keygroup_of(hash_str("b"), maxp), maxp, 2) + 1, 1);
    ck_assert_int_eq(wr_keygroup_subtask(wr_keygroup_of(hash_str("c"), maxp), maxp, 2) + 1, 1);
}
END_TEST

START_TEST(test_keygroup_string_hash_is_over_utf16_units)
{
    ck_assert_int_eq(hash_str("hello, w\xc3\xb6rld \xe2\x82\xac \xf0\x9f\x98\x80"), -1505128206);
    ck_assert_int_eq(wr_keygroup_java_hash_utf8(NULL, 0), 0);
    /* An embedded NUL is a character like any other. */
    ck_assert_int_eq(wr_keygroup_java_hash_utf8("a\0b", 3), 31 * 31 * 97 + 98);
}
END_TEST

START_TEST(test_keygroup_integers_hash_as_integer_table)
{
    static const int32_t groups[] = {94, 86, 127, 113, 7, 126};
    static const int32_t subtasks_p2[] = {1, 1, 1, 1, 0, 1};
    for (int v = 0; v <= 5; v++) {
        int32_t h = wr_keygroup_java_hash_number(v);
        ck_assert_int_eq(h, v);
        ck_assert_int_eq(wr_keygroup_of(h, 128), groups[v]);
        ck_assert_int_eq(wr_keygroup_subtask(groups[v], 128, 2), subtasks_p2[v]);
        ck_assert_int_eq(weir_keygroup_hash_number(v), v);
    }
    ck_assert_int_eq(wr_keygroup_java_hash_number(-7.0), -7);
    ck_assert_int_eq(wr_keygroup_java_hash_number(2147483647.0), INT32_MAX);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-2147483648.0), INT32_MIN);
}
END_TEST

START_TEST(test_keygroup_integers_beyond_int32_hash_as_long)
{
    ck_assert_int_eq(wr_keygroup_java_hash_number(2147483648.0), INT32_MIN);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-2147483649.0), INT32_MIN);
    ck_assert_int_eq(wr_keygroup_java_hash_number(4294967296.0), 1);
    ck_assert_int_eq(wr_keygroup_java_hash_number(12345678901.0), -539222985);
    ck_assert_int_eq(wr_keygroup_java_hash_number(1e15), -1530589826);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-1e15), -1530531199);
    ck_assert_int_eq(wr_keygroup_java_hash_number(9007199254740992.0), 2097152); /* 2^53 */
    ck_assert_int_eq(wr_keygroup_java_hash_number(-9223372036854775808.0), INT32_MIN);
}
END_TEST

START_TEST(test_keygroup_other_numbers_hash_as_double)
{
    ck_assert_int_eq(wr_keygroup_java_hash_number(0.5), 1071644672);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-0.5), -1075838976);
    ck_assert_int_eq(wr_keygroup_java_hash_number(1.5), 1073217536);
    ck_assert_int_eq(wr_keygroup_java_hash_number(3.14), 300063655);
    ck_assert_int_eq(wr_keygroup_java_hash_number(5e-324), 1);
    /* Integral, but outside int64: Java's Long cannot hold them, so Double. */
    ck_assert_int_eq(wr_keygroup_java_hash_number(9223372036854775808.0), 1138753536);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-18446744073709551616.0), -1007681536);
    ck_assert_int_eq(wr_keygroup_java_hash_number(1e300), -164130400);
    ck_assert_int_eq(wr_keygroup_java_hash_number(INFINITY), 2146435072);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-INFINITY), -1048576);
}
END_TEST

START_TEST(test_keygroup_every_nan_hashes_as_canonical_nan)
{
    uint64_t patterns[] = {0x7ff8000000000000u, 0xfff8000000000000u, 0x7ff0000000000001u,
                           0x7fffffffffffffffu};
    for (size_t i = 0; i < sizeof patterns / sizeof patterns[0]; i++) {
        double nan_value = 0;
        memcpy(&nan_value, &patterns[i], sizeof nan_value);
        ck_assert_int_eq(wr_keygroup_java_hash_number(nan_value), 2146959360);
    }
}
END_TEST

START_TEST(test_keygroup_negative_zero_hashes_as_integer_zero)
{
    /* Java's Double.hashCode(-0.0) is INT32_MIN, but a Lua table key -0.0 is the key 0, so
     * weir routes it as Integer 0 (see keygroup.h). */
    ck_assert_int_eq(wr_keygroup_java_hash_number(-0.0), 0);
    ck_assert_int_eq(wr_keygroup_java_hash_number(-0.0), wr_keygroup_java_hash_number(0.0));
}
END_TEST

/* Malformed input: each case equals the string with Java's U+FFFD replacements spelled out
 * (EF BF BD), and the hash OpenJDK 17 computes for new String(bytes, UTF_8). */
typedef struct malformed_vector {
    const char *bytes;
    size_t len;
    const char *replaced; /* valid UTF-8 of what Java decodes */
    int32_t java_hash;
} malformed_vector_t;

#define FFFD "\xef\xbf\xbd"

static const malformed_vector_t malformed_vectors[] = {
    {"\xff", 1, FFFD, 65533},                                /* never a UTF-8 byte */
    {"a\xe2\x82" "b", 4, "a" FFFD "b", 2124838},             /* 3-byte cut short by 'b' */
    {"\xe0\x80\x80", 3, FFFD FFFD FFFD, 65074269},           /* overlong: each byte alone */
    {"\xc0\xaf", 2, FFFD FFFD, 2097056},                     /* overlong 2-byte lead */
    {"\xed\xa0\x80", 3, FFFD, 65533},                        /* encoded surrogate: ONE (Java) */
    {"\xed\xa0" "A", 3, FFFD "A", 2031588},                  /* surrogate prefix: one */
    {"\xf0\x9f\x98", 3, FFFD, 65533},                        /* truncated at the end: one */
    {"\xf4\x90\x80\x80", 4, FFFD FFFD FFFD FFFD, 2017367872}, /* above U+10FFFF */
    {"\x80", 1, FFFD, 65533},                                /* lone trail byte */
    {"\xf8\x88\x80\x80\x80", 5, FFFD FFFD FFFD FFFD FFFD, -1886039875}, /* 5-byte form */
};

START_TEST(test_keygroup_malformed_utf8_counts_as_replacement_chars)
{
    const malformed_vector_t *mv = &malformed_vectors[_i];
    int32_t h = wr_keygroup_java_hash_utf8(mv->bytes, mv->len);
    ck_assert_int_eq(h, hash_str(mv->replaced));
    ck_assert_int_eq(h, mv->java_hash);
}
END_TEST

START_TEST(test_keygroup_default_max_parallelism_boundaries)
{
    static const int32_t cases[][2] = {
        {1, 128},     {85, 128},     {86, 256},      {171, 256},   {172, 512},
        {341, 512},   {342, 1024},   {683, 1024},    {684, 2048},  {1365, 2048},
        {10923, 16384}, {10924, 32768}, {100000, 32768}, {INT32_MAX, 32768},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ck_assert_int_eq(wr_keygroup_default_max_parallelism(cases[i][0]), cases[i][1]);
        ck_assert_int_eq(weir_keygroup_default_max_parallelism(cases[i][0]), cases[i][1]);
    }
}
END_TEST

START_TEST(test_keygroup_ranges_are_contiguous_as_flink)
{
    wr_keygroup_range_t r = wr_keygroup_range(128, 2, 0);
    ck_assert_int_eq(r.first, 0);
    ck_assert_int_eq(r.last, 63);
    r = wr_keygroup_range(128, 2, 1);
    ck_assert_int_eq(r.first, 64);
    ck_assert_int_eq(r.last, 127);
    r = wr_keygroup_range(128, 3, 0);
    ck_assert_int_eq(r.first, 0);
    ck_assert_int_eq(r.last, 42);
    r = wr_keygroup_range(128, 3, 1);
    ck_assert_int_eq(r.first, 43);
    ck_assert_int_eq(r.last, 85);
    r = wr_keygroup_range(128, 3, 2);
    ck_assert_int_eq(r.first, 86);
    ck_assert_int_eq(r.last, 127);
    r = wr_keygroup_range(32768, 32768, 32767);
    ck_assert_int_eq(r.first, 32767);
    ck_assert_int_eq(r.last, 32767);
}
END_TEST

START_TEST(test_keygroup_range_is_exactly_what_subtask_maps_there)
{
    static const int32_t maxps[] = {1, 7, 128, 129, 1000, 32768};
    for (size_t m = 0; m < sizeof maxps / sizeof maxps[0]; m++) {
        int32_t maxp = maxps[m];
        for (int32_t p = 1; p <= maxp && p <= 40; p++) {
            int32_t next = 0; /* ranges tile [0, maxp) in subtask order */
            for (int32_t i = 0; i < p; i++) {
                wr_keygroup_range_t r = wr_keygroup_range(maxp, p, i);
                ck_assert_int_eq(r.first, next);
                ck_assert_int_le(r.first, r.last);
                bool all_map_here = true; /* one assert per range: Check's are slow */
                for (int32_t kg = r.first; kg <= r.last; kg++) {
                    all_map_here = all_map_here && wr_keygroup_subtask(kg, maxp, p) == i;
                }
                ck_assert(all_map_here);
                next = r.last + 1;
            }
            ck_assert_int_eq(next, maxp);
        }
    }
}
END_TEST

START_TEST(test_keygroup_ffi_rejects_bad_parallelism)
{
    ck_assert_int_eq(weir_keygroup_of(97, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_of(97, 32769), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_of(97, 32768), wr_keygroup_of(97, 32768));
    ck_assert_int_eq(weir_keygroup_subtask(81, 128, 0), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_subtask(81, 128, 129), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_subtask(128, 128, 2), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_subtask(-1, 128, 2), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_subtask(81, 0, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_default_max_parallelism(0), WEIR_EINVAL);
    ck_assert_int_eq(weir_keygroup_default_max_parallelism(-3), WEIR_EINVAL);
}
END_TEST

START_TEST(test_keygroup_murmur_is_non_negative)
{
    uint32_t x = 12345;
    bool all_non_negative = true;
    for (int i = 0; i < 100000; i++) {
        x = x * 1664525u + 1013904223u;
        int32_t h = 0;
        memcpy(&h, &x, sizeof h);
        all_non_negative = all_non_negative && wr_keygroup_murmur(h) >= 0;
    }
    ck_assert(all_non_negative);
    ck_assert_int_ge(wr_keygroup_murmur(INT32_MIN), 0);
    ck_assert_int_ge(wr_keygroup_murmur(INT32_MAX), 0);
}
END_TEST

static Suite *keygroup_suite(void)
{
    Suite *s = suite_create("keygroup");
    const struct {
        const char *name;
        const TTest *test;
        int loop_end;
    } cases[] = {
        {"string_vectors_match_semantics_table",
         test_keygroup_string_vectors_match_semantics_table,
         (int)(sizeof string_vectors / sizeof string_vectors[0])},
        {"string_vectors_through_ffi", test_keygroup_string_vectors_through_ffi,
         (int)(sizeof string_vectors / sizeof string_vectors[0])},
        {"of_number_combines_hash_and_group", test_keygroup_of_number_combines_hash_and_group, 1},
        {"fill_memo_matches_of_number", test_keygroup_fill_memo_matches_of_number, 1},
        {"seed_transcript_prefixes", test_keygroup_seed_transcript_prefixes, 1},
        {"string_hash_is_over_utf16_units", test_keygroup_string_hash_is_over_utf16_units, 1},
        {"integers_hash_as_integer_table", test_keygroup_integers_hash_as_integer_table, 1},
        {"integers_beyond_int32_hash_as_long", test_keygroup_integers_beyond_int32_hash_as_long,
         1},
        {"other_numbers_hash_as_double", test_keygroup_other_numbers_hash_as_double, 1},
        {"every_nan_hashes_as_canonical_nan", test_keygroup_every_nan_hashes_as_canonical_nan,
         1},
        {"negative_zero_hashes_as_integer_zero",
         test_keygroup_negative_zero_hashes_as_integer_zero, 1},
        {"malformed_utf8_counts_as_replacement_chars",
         test_keygroup_malformed_utf8_counts_as_replacement_chars,
         (int)(sizeof malformed_vectors / sizeof malformed_vectors[0])},
        {"default_max_parallelism_boundaries", test_keygroup_default_max_parallelism_boundaries,
         1},
        {"ranges_are_contiguous_as_flink", test_keygroup_ranges_are_contiguous_as_flink, 1},
        {"range_is_exactly_what_subtask_maps_there",
         test_keygroup_range_is_exactly_what_subtask_maps_there, 1},
        {"ffi_rejects_bad_parallelism", test_keygroup_ffi_rejects_bad_parallelism, 1},
        {"murmur_is_non_negative", test_keygroup_murmur_is_non_negative, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        add_loop_case(s, cases[i].name, cases[i].test, cases[i].loop_end);
    }
    return s;
}

int main(void)
{
    return run_suite(keygroup_suite());
}
