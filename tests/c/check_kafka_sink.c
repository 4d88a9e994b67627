/* SPDX-License-Identifier: MIT */
/* check_kafka_sink.c: the Kafka sink's producer (kafka_sink.c) against librdkafka's mock
 * cluster in this process: messages with keys and partitions arrive and flush waits for them;
 * a failed delivery is kept and returned; a refused property is named. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <string.h>

#include "check_support.h"
#include "weir.h"

START_TEST(test_messages_arrive_and_flush_waits_for_them)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_int_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    rd_kafka_t *mock = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    ck_assert_ptr_nonnull(mock);
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(mock);
    ck_assert_int_eq(rd_kafka_mock_topic_create(mc, "t", 2, 1), 0);
    const char *props[] = {"bootstrap.servers", rd_kafka_mock_cluster_bootstraps(mc)};
    char err[256] = "";
    weir_kafka_sink_t *k = weir_kafka_sink_new(props, 2, "t", err, sizeof err);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(weir_kafka_sink_send(k, "a", 1, "v1", 2, 0), 0);
    ck_assert_int_eq(weir_kafka_sink_send(k, NULL, -1, "v2", 2, 1), 0);
    ck_assert_int_eq(weir_kafka_sink_send(k, "b", 1, "v3", 2, 1), 0);
    ck_assert_int_eq(weir_kafka_sink_flush(k, 10000), 0);
    ck_assert(weir_kafka_sink_delivered(k) == 3);
    ck_assert_str_eq(weir_kafka_sink_error(k), "");
    int64_t lo = -1;
    int64_t hi = -1;
    ck_assert_int_eq(rd_kafka_query_watermark_offsets(mock, "t", 0, &lo, &hi, 5000), 0);
    ck_assert(lo == 0 && hi == 1);
    ck_assert_int_eq(rd_kafka_query_watermark_offsets(mock, "t", 1, &lo, &hi, 5000), 0);
    ck_assert(lo == 0 && hi == 2);
    ck_assert_int_eq(weir_kafka_sink_send(k, "a", 1, "v", 1, 7), WEIR_ESOURCE); /* no such */
    ck_assert_ptr_nonnull(strstr(weir_kafka_sink_error(k), "topic t"));
    weir_kafka_sink_free(k);
    weir_kafka_sink_free(NULL);
    rd_kafka_destroy(mock);
}
END_TEST

START_TEST(test_a_failed_delivery_is_kept)
{
    const char *props[] = {"bootstrap.servers", "127.0.0.1:1", "message.timeout.ms", "200"};
    char err[256] = "";
    weir_kafka_sink_t *k = weir_kafka_sink_new(props, 4, "t", err, sizeof err);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(weir_kafka_sink_send(k, "a", 1, "v", 1, -1), 0);
    ck_assert_int_eq(weir_kafka_sink_flush(k, 10000), WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_kafka_sink_error(k), "delivery to topic t"));
    ck_assert_int_eq(weir_kafka_sink_send(k, "a", 1, "v", 1, -1), WEIR_ESOURCE);
    weir_kafka_sink_free(k);
}
END_TEST

START_TEST(test_a_refused_property_is_named)
{
    const char *props[] = {"no.such.thing", "1"};
    char err[256] = "";
    ck_assert_ptr_null(weir_kafka_sink_new(props, 2, "t", err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, "property no.such.thing: "));
}
END_TEST

static Suite *kafka_sink_suite(void)
{
    Suite *s = suite_create("kafka_sink");
    TCase *tc = tcase_create("kafka_sink");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_messages_arrive_and_flush_waits_for_them);
    tcase_add_test(tc, test_a_failed_delivery_is_kept);
    tcase_add_test(tc, test_a_refused_property_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(kafka_sink_suite());
}
