/* SPDX-License-Identifier: MIT */
/* check_rdkafka_lazy.c: librdkafka is loaded on the first call of one of its functions
 * (rdkafka_lazy.c), not at start: this suite is not linked against it, it is not mapped before
 * the first call, and the calls reach the library (a configuration is made, set, refused and
 * destroyed; an error code has librdkafka's text). */
#include <check.h>
#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <string.h>

#include "check_support.h"
#include "rdkafka_lazy.h"

static int mapped(void)
{
    void *h = dlopen(wr_rdkafka_soname(), RTLD_NOW | RTLD_NOLOAD);
    if (h != NULL) {
        dlclose(h);
    }
    return h != NULL;
}

START_TEST(test_loaded_by_the_first_call)
{
    ck_assert_int_eq(mapped(), 0);
    ck_assert_str_eq(rd_kafka_err2str(RD_KAFKA_RESP_ERR_NO_ERROR), "Success");
    ck_assert_int_eq(mapped(), 1);
    char errstr[256] = "";
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_ptr_nonnull(conf);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "client.id", "weir", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "no.such.property", "1", errstr, sizeof errstr),
                     RD_KAFKA_CONF_UNKNOWN);
    ck_assert_ptr_nonnull(strstr(errstr, "no.such.property"));
    rd_kafka_conf_destroy(conf);
}
END_TEST

static Suite *rdkafka_lazy_suite(void)
{
    Suite *s = suite_create("rdkafka_lazy");
    add_case(s, "loaded_by_the_first_call", test_loaded_by_the_first_call);
    return s;
}

int main(void)
{
    return run_suite(rdkafka_lazy_suite());
}
