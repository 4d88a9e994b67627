/* SPDX-License-Identifier: MIT */
/* check_kafka_sink.c: the Kafka sink's producer (kafka_sink.c) against librdkafka's mock
 * cluster in this process: messages with keys and partitions arrive and flush waits for them;
 * a message sent with a timestamp (the repartition topics') carries it, and a topic there is
 * found by ensure_topic; a failed delivery is
 * kept and returned; a refused property is named. */
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

/* weir_kafka_sink_send_ts: into the partition given, with the timestamp given (none below 0) */
START_TEST(test_a_message_carries_its_timestamp)
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
    ck_assert_int_eq(rd_kafka_mock_topic_create(mc, "r", 2, 1), 0);
    const char *bs = rd_kafka_mock_cluster_bootstraps(mc);
    const char *props[] = {"bootstrap.servers", bs};
    char err[256] = "";
    weir_kafka_sink_t *k = weir_kafka_sink_new(props, 2, "r", err, sizeof err);
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(weir_kafka_sink_ensure_topic(k, 2, 5000), 2); /* there: its count */
    ck_assert_int_eq(weir_kafka_sink_send_ts(k, NULL, -1, "v1", 2, 1, 1234567), 0);
    ck_assert_int_eq(weir_kafka_sink_send_ts(k, "wm/0", 4, "v2", 2, 1, -1), 0);
    ck_assert_int_eq(weir_kafka_sink_flush(k, 10000), 0);
    ck_assert(weir_kafka_sink_delivered(k) == 2);
    ck_assert_int_eq(weir_kafka_sink_send_ts(k, NULL, -1, "v", 1, 5, 1), WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_kafka_sink_error(k), "topic r partition 5"));
    weir_kafka_sink_free(k);
    rd_kafka_conf_t *cc = rd_kafka_conf_new();
    ck_assert_int_eq(rd_kafka_conf_set(cc, "bootstrap.servers", bs, errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(cc, "group.id", "check", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    rd_kafka_t *c = rd_kafka_new(RD_KAFKA_CONSUMER, cc, errstr, sizeof errstr);
    ck_assert_ptr_nonnull(c);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, "r", 1)->offset = 0;
    ck_assert_int_eq(rd_kafka_assign(c, l), 0);
    rd_kafka_topic_partition_list_destroy(l);
    int got = 0;
    for (int tries = 0; got < 2 && tries < 100; tries++) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, 200);
        if (m == NULL) {
            continue;
        }
        if (m->err == 0) {
            rd_kafka_timestamp_type_t tt;
            int64_t ts = rd_kafka_message_timestamp(m, &tt);
            if (got == 0) {
                ck_assert(ts == 1234567);
                ck_assert(m->key == NULL);
            } else {
                ck_assert(ts >= 0); /* none given: the producer's time */
                ck_assert(m->key_len == 4 && memcmp(m->key, "wm/0", 4) == 0);
            }
            got++;
        }
        rd_kafka_message_destroy(m);
    }
    ck_assert_int_eq(got, 2);
    rd_kafka_consumer_close(c);
    rd_kafka_destroy(c);
    rd_kafka_destroy(mock);
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
    tcase_add_test(tc, test_a_message_carries_its_timestamp);
    tcase_add_test(tc, test_a_refused_property_is_named);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(kafka_sink_suite());
}
