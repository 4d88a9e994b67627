/* SPDX-License-Identifier: MIT */
/* check_mem: weir's memory account (mem.c): what it counts, the alarm and the check at the
 * limit, the Lua allocator's refusal and headroom, a hash table that waits to grow, and a
 * failing malloc that becomes a flag instead of abort(). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check_support.h"
#include "mem.h"
#include "weir.h"

enum { MIB = 1 << 20 };

static double c_bytes(void)
{
    return weir_mem_stat(WEIR_MEM_C);
}

START_TEST(test_mem_parse_size_reads_units_of_1024)
{
    ck_assert(weir_mem_parse_size("4096") == 4096);
    ck_assert(weir_mem_parse_size("100k") == 100 * 1024);
    ck_assert(weir_mem_parse_size("512m") == 512.0 * MIB);
    ck_assert(weir_mem_parse_size("2g") == 2.0 * 1024 * MIB);
    ck_assert(weir_mem_parse_size("2G") == 2.0 * 1024 * MIB);
    ck_assert(weir_mem_parse_size("2gb") == 2.0 * 1024 * MIB);
    ck_assert(weir_mem_parse_size("1.5g") == 1.5 * 1024 * MIB);
    ck_assert(weir_mem_parse_size("1t") == 1024.0 * 1024 * MIB);
    const char *bad[] = {"", "x", "5x", "-1", "1.2.3", "0", "k", " 5m", "5m ", "1e3", "0.1",
                         "99999999999t", "5mm"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ck_assert_msg(weir_mem_parse_size(bad[i]) == -1, "accepted \"%s\"", bad[i]);
    }
    ck_assert(weir_mem_parse_size(NULL) == -1);
    ck_assert_int_eq(weir_mem_set_limit(-1), WEIR_EINVAL);
    ck_assert_int_eq(weir_mem_set_limit(NAN), WEIR_EINVAL);
    ck_assert(isnan(weir_mem_stat(99)));
}
END_TEST

START_TEST(test_mem_counts_c_allocations_until_freed)
{
    weir_mem_set_limit(0);
    double before = c_bytes();
    char *p = wr_xmalloc(1000);
    ck_assert(c_bytes() >= before + 1000);
    p = wr_xrealloc(p, 100000);
    ck_assert(c_bytes() >= before + 100000);
    int32_t *q = wr_xcalloc(1000, sizeof *q);
    char *s = wr_xmemdup("abc", 3);
    ck_assert(c_bytes() >= before + 100000 + 4000 + 4);
    ck_assert(weir_mem_stat(WEIR_MEM_PEAK) >= weir_mem_stat(WEIR_MEM_TOTAL));
    wr_free(p);
    wr_free(q);
    wr_free(s);
    wr_free(NULL);
    ck_assert(c_bytes() == before);
    size_t held = 0;
    int *a = wr_xresize_counted(&held, NULL, 0, 10, sizeof *a);
    ck_assert_uint_eq(held, 10 * sizeof *a);
    wr_release_counted(&held, a, 10, sizeof *a);
    ck_assert_uint_eq(held, 0);
    ck_assert(c_bytes() == before);
    ck_assert_int_eq(weir_mem_alarm(), 0); /* no limit: nothing rings */
}
END_TEST

START_TEST(test_mem_c_past_the_limit_rings_and_the_check_fails)
{
    weir_mem_set_limit(0);
    double base = weir_mem_stat(WEIR_MEM_TOTAL);
    weir_mem_set_limit(base + 8.0 * MIB);
    ck_assert(weir_mem_stat(WEIR_MEM_LIMIT) == base + 8.0 * MIB);
    char *a = wr_xmalloc(6 * MIB);
    ck_assert_int_eq(weir_mem_alarm(), 0); /* under 7/8 of the limit */
    char *b = wr_xmalloc(MIB + MIB / 2);
    ck_assert_int_eq(weir_mem_alarm(), 1); /* past 7/8: the driver collects and checks */
    ck_assert_int_eq(weir_mem_check(), 0); /* still under the limit: go on */
    ck_assert_int_eq(weir_mem_alarm(), 0);
    char *c = wr_xmalloc(MIB / 8);
    ck_assert_int_eq(weir_mem_alarm(), 0); /* the next alarm is further on */
    char *d = wr_xmalloc(MIB); /* past the limit: C is never refused */
    ck_assert_ptr_nonnull(d);
    ck_assert_int_eq(weir_mem_alarm(), 1);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_OVER);
    ck_assert_int_eq(weir_mem_alarm(), 0);
    wr_free(a);
    wr_free(b);
    wr_free(c);
    wr_free(d);
    weir_mem_set_limit(0);
    ck_assert_int_eq(weir_mem_check(), 0);
}
END_TEST

START_TEST(test_mem_a_failing_malloc_is_a_flag_not_abort)
{
    weir_mem_set_limit(0); /* takes the reserve */
    wr_mem_fail_next(1);
    char *p = wr_xmalloc(100);
    ck_assert_ptr_nonnull(p); /* the retry, after the reserve went back */
    ck_assert_int_eq(weir_mem_alarm(), 1);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_FAILED);
    ck_assert(weir_mem_stat(WEIR_MEM_FAILED_BYTES) == 100);
    weir_mem_set_limit(0); /* takes a new reserve */
    wr_mem_fail_next(1);
    p = wr_xrealloc(p, 5000);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_FAILED);
    wr_mem_fail_next(1);
    int *q = wr_xcalloc(10, sizeof *q);
    ck_assert_int_eq(q[9], 0);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_FAILED);
    wr_free(p);
    wr_free(q);
}
END_TEST

/* the last resort: the retry fails as well */
START_TEST(test_mem_a_malloc_that_fails_twice_exits_1)
{
    weir_mem_set_limit(0);
    wr_mem_fail_next(2);
    wr_xmalloc(100);
}
END_TEST

static void *plain_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    (void)ud;
    (void)osize;
    if (nsize == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, nsize);
}

START_TEST(test_mem_lua_growth_past_the_limit_is_refused_then_headroom)
{
    wr_lua_alloc_t a = {plain_alloc, NULL};
    weir_mem_set_limit(0);
    wr_mem_set_lua_bytes(0);
    double base = weir_mem_stat(WEIR_MEM_TOTAL);
    weir_mem_set_limit(base + 2.0 * MIB);
    void *p = wr_mem_lua_alloc(&a, NULL, 0, MIB + MIB / 2);
    ck_assert_ptr_nonnull(p);
    ck_assert(weir_mem_stat(WEIR_MEM_LUA) >= MIB);
    /* a small block that would pass the limit is refused */
    ck_assert_ptr_null(wr_mem_lua_alloc(&a, NULL, 0, 768 * 1024));
    ck_assert_int_eq(weir_mem_alarm(), 1);
    /* the failure path may use the headroom: max(limit / 8, 4 MiB) */
    void *q = wr_mem_lua_alloc(&a, NULL, 0, 768 * 1024);
    ck_assert_ptr_nonnull(q);
    ck_assert_ptr_null(wr_mem_lua_alloc(&a, NULL, 0, 4 * MIB)); /* but not more */
    void *r = wr_mem_lua_alloc(&a, q, 768 * 1024, 512 * 1024); /* a shrink is never refused */
    ck_assert_ptr_nonnull(r);
    ck_assert_ptr_null(wr_mem_lua_alloc(&a, p, MIB + MIB / 2, 0)); /* a free */
    ck_assert_ptr_null(wr_mem_lua_alloc(&a, r, 512 * 1024, 0));
    ck_assert(weir_mem_stat(WEIR_MEM_LUA) == 0);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_REFUSED);
    /* a system failure of the Lua heap: the retry after the reserve went back succeeds */
    weir_mem_set_limit(0);
    wr_mem_fail_next(1);
    p = wr_mem_lua_alloc(&a, NULL, 0, 100);
    ck_assert_ptr_nonnull(p);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_FAILED);
    wr_mem_lua_alloc(&a, p, 100, 0);
    ck_assert(weir_mem_stat(WEIR_MEM_LUA) == 0);
}
END_TEST

/* A large Lua block past the limit (a table's doubling, often inside compiled code, where the
 * LuaJIT weir links dies on an out-of-memory error) is let through: the check after the batch
 * fails the job; back under the limit by then, the limit holds again. */
START_TEST(test_mem_a_large_lua_block_past_the_limit_waits_for_the_check)
{
    wr_lua_alloc_t a = {plain_alloc, NULL};
    weir_mem_set_limit(0);
    wr_mem_set_lua_bytes(0);
    double base = weir_mem_stat(WEIR_MEM_TOTAL);
    weir_mem_set_limit(base + 2.0 * MIB);
    void *p = wr_mem_lua_alloc(&a, NULL, 0, MIB + MIB / 2);
    ck_assert_ptr_nonnull(p);
    void *q = wr_mem_lua_alloc(&a, NULL, 0, 2 * MIB);
    ck_assert_ptr_nonnull(q);
    ck_assert_int_eq(weir_mem_alarm(), 1);
    void *s = wr_mem_lua_alloc(&a, NULL, 0, 1024); /* the rest of the batch has room */
    ck_assert_ptr_nonnull(s);
    ck_assert(weir_mem_check() & WEIR_MEM_OVER);
    wr_mem_lua_alloc(&a, s, 1024, 0);
    wr_mem_lua_alloc(&a, q, 2 * MIB, 0);
    /* again, but freed before the check: the job goes on and the limit holds */
    weir_mem_set_limit(base + 2.0 * MIB);
    q = wr_mem_lua_alloc(&a, NULL, 0, 2 * MIB);
    ck_assert_ptr_nonnull(q);
    wr_mem_lua_alloc(&a, q, 2 * MIB, 0);
    ck_assert_int_eq(weir_mem_check(), 0);
    ck_assert_ptr_null(wr_mem_lua_alloc(&a, NULL, 0, 768 * 1024)); /* refused as before */
    wr_mem_lua_alloc(&a, p, MIB + MIB / 2, 0);
    weir_mem_set_limit(0);
    ck_assert(weir_mem_stat(WEIR_MEM_LUA) == 0);
}
END_TEST

START_TEST(test_mem_a_hash_table_waits_to_grow_past_the_limit)
{
    weir_mem_set_limit(0);
    weir_wintab_t *t = weir_wintab_new();
    for (int32_t k = 0; k < 1000; k++) {
        weir_wintab_add(t, k, 0);
    }
    int32_t cap = weir_wintab_capacity(t);
    /* no room for a doubling: the table fills up instead, and grows only when one empty
     * entry would be left */
    weir_mem_set_limit(weir_mem_stat(WEIR_MEM_TOTAL) + 4096);
    int32_t n = 1000;
    while (weir_wintab_capacity(t) == cap) {
        ck_assert_int_ge(weir_wintab_add(t, n, 0), 0);
        n++;
    }
    ck_assert_int_eq(n, cap - 1); /* it took entries up to cap - 2 before growing */
    ck_assert_int_eq(weir_mem_alarm(), 1);
    ck_assert_int_eq(weir_mem_check(), WEIR_MEM_OVER);
    ck_assert(weir_mem_stat(WEIR_MEM_WANTED) >= 2.0 * cap * 8);
    for (int32_t k = 0; k < n; k++) {
        ck_assert_int_ge(weir_wintab_find(t, k, 0), 0);
    }
    weir_wintab_free(t);
    weir_mem_set_limit(0);
}
END_TEST

static Suite *mem_suite(void)
{
    Suite *s = suite_create("mem");
    add_case(s, "parse_size_reads_units_of_1024", test_mem_parse_size_reads_units_of_1024);
    add_case(s, "counts_c_allocations_until_freed", test_mem_counts_c_allocations_until_freed);
    add_case(s, "c_past_the_limit_rings_and_the_check_fails",
             test_mem_c_past_the_limit_rings_and_the_check_fails);
    add_case(s, "a_failing_malloc_is_a_flag_not_abort",
             test_mem_a_failing_malloc_is_a_flag_not_abort);
    TCase *tc = tcase_create("a_malloc_that_fails_twice_exits_1");
    tcase_add_exit_test(tc, test_mem_a_malloc_that_fails_twice_exits_1, 1);
    suite_add_tcase(s, tc);
    add_case(s, "lua_growth_past_the_limit_is_refused_then_headroom",
             test_mem_lua_growth_past_the_limit_is_refused_then_headroom);
    add_case(s, "a_large_lua_block_past_the_limit_waits_for_the_check",
             test_mem_a_large_lua_block_past_the_limit_waits_for_the_check);
    add_case(s, "a_hash_table_waits_to_grow_past_the_limit",
             test_mem_a_hash_table_waits_to_grow_past_the_limit);
    return s;
}

int main(void)
{
    return run_suite(mem_suite());
}
