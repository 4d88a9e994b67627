/* SPDX-License-Identifier: MIT */
/* check_support.h: what every Check suite shares: adding its tests to a Suite, one TCase
 * each, and the main that runs the Suite and turns its failures into the exit status. */
#ifndef WEIR_CHECK_SUPPORT_H
#define WEIR_CHECK_SUPPORT_H

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

/* One test of a suite's table: a TCase called name that runs test once. */
typedef struct check_case {
    const char *name;
    const TTest *test;
} check_case_t;

/* Adds test to s as a TCase of its own, called name. */
static inline void add_case(Suite *s, const char *name, const TTest *test)
{
    TCase *tc = tcase_create(name);
    tcase_add_test(tc, test);
    suite_add_tcase(s, tc);
}

/* Adds test to s as a TCase called name, run for _i in [0, loop_end). */
static inline void add_loop_case(Suite *s, const char *name, const TTest *test, int loop_end)
{
    TCase *tc = tcase_create(name);
    tcase_add_loop_test(tc, test, 0, loop_end);
    suite_add_tcase(s, tc);
}

/* Adds test to s as a TCase called name; timeout_s > 0 replaces Check's default timeout. */
static inline void add_timed_case(Suite *s, const char *name, const TTest *test, int timeout_s)
{
    TCase *tc = tcase_create(name);
    tcase_add_test(tc, test);
    if (timeout_s > 0) {
        tcase_set_timeout(tc, timeout_s);
    }
    suite_add_tcase(s, tc);
}

/* Adds the n tests of cases to s in table order, a TCase each. */
static inline void add_cases(Suite *s, const check_case_t *cases, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        add_case(s, cases[i].name, cases[i].test);
    }
}

/* Runs s (and frees it); EXIT_SUCCESS when no test failed: a suite's main returns this. */
static inline int run_suite(Suite *s)
{
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#endif
