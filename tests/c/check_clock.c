/* SPDX-License-Identifier: MIT */
/* check_clock.c: processing time (runtime/clock.c), virtual and real. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "check_support.h"
#include "clock.h"

START_TEST(test_virtual_clock_starts_at_the_given_time)
{
    wr_clock_t c;
    wr_clock_init_virtual(&c, 1718088600500);
    ck_assert(wr_clock_is_virtual(&c));
    ck_assert_int_eq(wr_clock_now(&c), 1718088600500);
    ck_assert_int_eq(wr_clock_now(&c), 1718088600500); /* reading does not move it */
}
END_TEST

START_TEST(test_virtual_clock_only_moves_forward)
{
    wr_clock_t c;
    wr_clock_init_virtual(&c, 1000);
    wr_clock_advance_to(&c, 1500);
    ck_assert_int_eq(wr_clock_now(&c), 1500);
    wr_clock_advance_to(&c, 1200);
    ck_assert_int_eq(wr_clock_now(&c), 1500);
    wr_clock_advance_to(&c, 1501);
    ck_assert_int_eq(wr_clock_now(&c), 1501);
}
END_TEST

START_TEST(test_real_clock_reads_epoch_milliseconds)
{
    wr_clock_t c;
    struct timespec before;
    struct timespec after;
    clock_gettime(CLOCK_REALTIME, &before);
    wr_clock_init_real(&c);
    int64_t now = wr_clock_now(&c);
    clock_gettime(CLOCK_REALTIME, &after);
    ck_assert(!wr_clock_is_virtual(&c));
    int64_t lo = (int64_t)before.tv_sec * 1000 + before.tv_nsec / 1000000;
    int64_t hi = (int64_t)after.tv_sec * 1000 + after.tv_nsec / 1000000;
    ck_assert_int_ge(now, lo);
    ck_assert_int_le(now, hi + 1);
}
END_TEST

START_TEST(test_real_clock_never_goes_back)
{
    wr_clock_t c;
    wr_clock_init_real(&c);
    int64_t prev = wr_clock_now(&c);
    for (int i = 0; i < 100000; i++) {
        int64_t now = wr_clock_now(&c);
        ck_assert_int_ge(now, prev);
        prev = now;
    }
}
END_TEST

START_TEST(test_real_clock_is_monotonic_time_plus_a_fixed_offset)
{
    wr_clock_t c = {.is_virtual = 0, .epoch_ms = 1000000, .mono_ns = 5000000000};
    ck_assert_int_eq(wr_clock_real_at(&c, 5000000000), 1000000);
    ck_assert_int_eq(wr_clock_real_at(&c, 5000999999), 1000000);
    ck_assert_int_eq(wr_clock_real_at(&c, 5001000000), 1000001);
    ck_assert_int_eq(wr_clock_real_at(&c, 4999999999), 999999); /* floors below the start */
    ck_assert_int_eq(wr_clock_real_at(&c, 65000000000), 1060000);
}
END_TEST

START_TEST(test_advancing_the_real_clock_has_no_effect)
{
    wr_clock_t c;
    wr_clock_init_real(&c);
    int64_t now = wr_clock_now(&c);
    wr_clock_advance_to(&c, now + 3600000);
    ck_assert_int_lt(wr_clock_now(&c), now + 3600000);
}
END_TEST

static Suite *clock_suite(void)
{
    Suite *s = suite_create("clock");
    const check_case_t cases[] = {
        {"virtual_clock_starts_at_given_time", test_virtual_clock_starts_at_the_given_time},
        {"virtual_clock_only_moves_forward", test_virtual_clock_only_moves_forward},
        {"real_clock_reads_epoch_ms", test_real_clock_reads_epoch_milliseconds},
        {"real_clock_never_goes_back", test_real_clock_never_goes_back},
        {"real_clock_is_monotonic_plus_offset",
         test_real_clock_is_monotonic_time_plus_a_fixed_offset},
        {"advancing_real_clock_has_no_effect", test_advancing_the_real_clock_has_no_effect},
    };
    add_cases(s, cases, sizeof cases / sizeof cases[0]);
    return s;
}

int main(void)
{
    return run_suite(clock_suite());
}
