/* SPDX-License-Identifier: MIT */
/* check_source_kafka.c: the Kafka source (source_kafka.c) against librdkafka's mock cluster in
 * this process: partitions and offsets at set-up, a bounded read of every partition (values,
 * keys, partitions, offsets, tombstones, the end), a range inside a partition, a missing topic,
 * an unreachable cluster, a partition paused and resumed (watermark alignment); and
 * kafka_mock.c's --topic parser. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "kafka_mock.h"
#include "weir.h"

/* A mock cluster with topic "t" (2 partitions) holding p0: a=1, b=2, (no key)=3; p1: c=4 and a
 * tombstone with key d; its producer stays alive as long as the cluster. */
typedef struct cluster {
    rd_kafka_t *producer;
    char bootstrap[256];
} cluster_t;

static void produce(rd_kafka_t *rk, int32_t part, const char *key, const char *value)
{
    rd_kafka_resp_err_t err = rd_kafka_producev(
        rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(part),
        RD_KAFKA_V_KEY(key, key ? strlen(key) : 0),
        RD_KAFKA_V_VALUE((void *)value, value ? strlen(value) : 0), RD_KAFKA_V_END);
    ck_assert_int_eq(err, 0);
}

static void cluster_start(cluster_t *c)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_int_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK); /* not the mock's notice on stderr */
    c->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    ck_assert_ptr_nonnull(c->producer);
    rd_kafka_mock_cluster_t *mc = rd_kafka_handle_mock_cluster(c->producer);
    ck_assert_ptr_nonnull(mc);
    ck_assert_int_eq(rd_kafka_mock_topic_create(mc, "t", 2, 1), 0);
    snprintf(c->bootstrap, sizeof c->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(mc));
    produce(c->producer, 0, "a", "1");
    produce(c->producer, 0, "b", "2");
    produce(c->producer, 0, NULL, "3");
    produce(c->producer, 1, "c", "4");
    produce(c->producer, 1, "d", NULL);
    ck_assert_int_eq(rd_kafka_flush(c->producer, 10000), 0);
}

static void cluster_stop(cluster_t *c)
{
    rd_kafka_destroy(c->producer);
}

static int32_t open_source(weir_rt_t *rt, const char *bootstrap, const char *topic)
{
    const char *conf[] = {"bootstrap.servers", bootstrap};
    const char *topics[] = {topic};
    return weir_source_kafka(rt, "kafka_source test", conf, 2, topics, 1, 5000);
}

/* One delivered message, copied out of the batch. */
typedef struct msg {
    char value[16];
    char key[16];
    int has_key;
    int null_value;
    int32_t partition;
    double offset;
    double timestamp;
} msg_t;

/* Polls until the source ends; returns the number of messages (at most max) and the END flags
 * in *end. */
static int read_all(weir_rt_t *rt, int32_t id, msg_t *out, int max, int32_t *end)
{
    weir_event_t batch[64];
    int n = 0;
    *end = -1;
    while (*end < 0) {
        int32_t got = weir_loop_poll(rt, batch, 64);
        ck_assert_int_ge(got, 0);
        const weir_kafka_meta_t *meta = weir_kafka_meta(rt, id);
        for (int32_t i = 0; i < got; i++) {
            if (batch[i].kind == WEIR_EV_END) {
                *end = batch[i].flags;
            } else if (batch[i].kind == WEIR_EV_LINE) {
                ck_assert_int_lt(n, max);
                msg_t *m = &out[n++];
                memset(m, 0, sizeof *m);
                const weir_kafka_meta_t *k = &meta[(int)batch[i].index];
                memcpy(m->value, batch[i].ptr, (size_t)batch[i].len);
                m->null_value = (batch[i].flags & WEIR_LINE_KAFKA_NULL) != 0;
                m->has_key = k->key != NULL;
                if (k->key) {
                    memcpy(m->key, k->key, (size_t)k->key_len);
                }
                m->partition = k->partition;
                m->offset = k->offset;
                m->timestamp = k->timestamp;
            }
        }
    }
    return n;
}

START_TEST(test_partitions_offsets_and_a_bounded_read)
{
    cluster_t c;
    cluster_start(&c);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t id = open_source(rt, c.bootstrap, "t");
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(weir_kafka_partitions(rt, id), 2);
    ck_assert_str_eq(weir_kafka_topic(rt, id, 1), "t");
    ck_assert_int_eq(weir_kafka_partition_id(rt, id, 1), 1);
    double off[3];
    ck_assert_int_eq(weir_kafka_offsets(rt, id, 0, off), 0);
    ck_assert(off[0] == 0 && off[1] == 3 && off[2] == -1);
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 0, 0, 3), 0);
    ck_assert_int_eq(weir_kafka_offsets(rt, id, 1, off), 0);
    ck_assert(off[0] == 0 && off[1] == 2);
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 1, 0, 2), 0);
    ck_assert_int_eq(weir_rt_start(rt), 0);
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 1, 0, 2), WEIR_ESTATE);
    msg_t m[8];
    int32_t end;
    int n = read_all(rt, id, m, 8, &end);
    ck_assert_int_eq(end, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(n, 5);
    int seen0 = 0;
    int seen1 = 0;
    for (int i = 0; i < n; i++) {
        ck_assert(isfinite(m[i].timestamp) && m[i].timestamp > 0); /* CreateTime */
        if (m[i].partition == 0) {
            ck_assert(m[i].offset == seen0); /* in offset order within a partition */
            const char *vals[] = {"1", "2", "3"};
            ck_assert_str_eq(m[i].value, vals[seen0]);
            ck_assert_int_eq(m[i].has_key, seen0 < 2);
            if (seen0 < 2) {
                ck_assert_str_eq(m[i].key, seen0 == 0 ? "a" : "b");
            }
            seen0++;
        } else {
            ck_assert_int_eq(m[i].partition, 1);
            ck_assert(m[i].offset == seen1);
            ck_assert_str_eq(m[i].key, seen1 == 0 ? "c" : "d");
            ck_assert_int_eq(m[i].null_value, seen1 == 1); /* the tombstone */
            seen1++;
        }
    }
    ck_assert(weir_kafka_next_offset(rt, id, 0) == 3 && weir_kafka_next_offset(rt, id, 1) == 2);
    weir_rt_free(rt);
    cluster_stop(&c);
}
END_TEST

START_TEST(test_a_range_inside_a_partition_and_an_empty_one)
{
    cluster_t c;
    cluster_start(&c);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t id = open_source(rt, c.bootstrap, "t");
    ck_assert_int_eq(id, 0);
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 0, 1, 2), 0); /* offset 1 only */
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 1, 2, 2), 0); /* nothing: done at start */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    msg_t m[8];
    int32_t end;
    ck_assert_int_eq(read_all(rt, id, m, 8, &end), 1);
    ck_assert_int_eq(end, WEIR_END_EXHAUSTED);
    ck_assert_str_eq(m[0].value, "2");
    ck_assert(m[0].offset == 1);
    ck_assert(weir_kafka_next_offset(rt, id, 1) == 2);
    weir_rt_free(rt);
    cluster_stop(&c);
}
END_TEST

/* Watermark alignment: a paused partition delivers nothing while the other goes on; resumed,
 * it continues at its next offset (what was fetched before the pause is fetched again), each
 * message once. A paused source pauses every partition. */
START_TEST(test_a_paused_partition_waits_and_resumes_at_its_next_offset)
{
    cluster_t c;
    cluster_start(&c);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    int32_t id = open_source(rt, c.bootstrap, "t");
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 0, 0, 3), 0);
    ck_assert_int_eq(weir_kafka_set_range(rt, id, 1, 0, 2), 0);
    ck_assert_int_eq(weir_kafka_pause_partition(rt, id, 2, 1), WEIR_EINVAL);
    ck_assert_int_eq(weir_kafka_pause_partition(rt, id, 1, 1), 0); /* before the start */
    ck_assert_int_eq(weir_rt_start(rt), 0);
    weir_event_t batch[64];
    int p0 = 0;
    while (p0 < 3) {
        int32_t got = weir_loop_poll(rt, batch, 64);
        ck_assert_int_gt(got, 0);
        const weir_kafka_meta_t *meta = weir_kafka_meta(rt, id);
        for (int32_t i = 0; i < got; i++) {
            ck_assert_int_ne(batch[i].kind, WEIR_EV_END);
            if (batch[i].kind == WEIR_EV_LINE) {
                ck_assert_int_eq(meta[(int)batch[i].index].partition, 0); /* never 1 */
                p0++;
            }
        }
    }
    ck_assert_double_eq(weir_kafka_next_offset(rt, id, 1), 0);
    /* the source paused as a whole keeps partition 1 paused when it alone is resumed */
    ck_assert_int_eq(weir_source_pause(rt, id, 1), 0);
    ck_assert_int_eq(weir_kafka_pause_partition(rt, id, 1, 0), 0);
    ck_assert_int_eq(weir_source_paused(rt, id), 1);
    ck_assert_int_eq(weir_source_pause(rt, id, 0), 0);
    msg_t m[8];
    int32_t end;
    int n = read_all(rt, id, m, 8, &end);
    ck_assert_int_eq(end, WEIR_END_EXHAUSTED);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(m[0].partition, 1);
    ck_assert_double_eq(m[0].offset, 0);
    ck_assert_str_eq(m[0].value, "4");
    ck_assert_double_eq(m[1].offset, 1);
    ck_assert_int_eq(m[1].null_value, 1);
    weir_rt_free(rt);
    cluster_stop(&c);
}
END_TEST

START_TEST(test_a_missing_topic_and_an_unreachable_cluster_are_errors)
{
    cluster_t c;
    cluster_start(&c);
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    ck_assert_int_eq(open_source(rt, c.bootstrap, "nosuch"), WEIR_ESOURCE);
    ck_assert_str_eq(weir_rt_error(rt), "topic nosuch: no such topic");
    weir_rt_free(rt);
    cluster_stop(&c);

    rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    const char *conf[] = {"bootstrap.servers", "127.0.0.1:1"};
    const char *topics[] = {"t"};
    ck_assert_int_eq(weir_source_kafka(rt, "kafka_source x", conf, 2, topics, 1, 300),
                     WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "no answer from the bootstrap servers"));
    ck_assert_int_eq(weir_kafka_partitions(rt, 0), WEIR_EINVAL);
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_a_bad_property_is_named)
{
    weir_rt_t *rt = weir_rt_new(WEIR_CLOCK_REAL, 0);
    const char *conf[] = {"bootstrap.servers", "127.0.0.1:1", "no.such.property", "1"};
    const char *topics[] = {"t"};
    ck_assert_int_eq(weir_source_kafka(rt, "kafka_source x", conf, 4, topics, 1, 300),
                     WEIR_ESOURCE);
    ck_assert_ptr_nonnull(strstr(weir_rt_error(rt), "property no.such.property: "));
    weir_rt_free(rt);
}
END_TEST

START_TEST(test_kafka_mock_topic_argument)
{
    wr_kafka_mock_opts_t o = {0};
    char ok1[] = "clicks:4";
    char ok2[] = "a.b-c_d:1";
    char bad1[] = "clicks";
    char bad2[] = "clicks:0";
    char bad3[] = ":3";
    char bad4[] = "cl icks:3";
    char bad5[] = "clicks:3x";
    ck_assert_int_eq(wr_kafka_mock_add_topic(&o, ok1), 0);
    ck_assert_int_eq(wr_kafka_mock_add_topic(&o, ok2), 0);
    ck_assert_int_eq(o.ntopics, 2);
    ck_assert_str_eq(o.topic[0], "clicks");
    ck_assert_int_eq(o.partitions[0], 4);
    ck_assert_str_eq(o.topic[1], "a.b-c_d");
    char *bad[] = {bad1, bad2, bad3, bad4, bad5};
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(wr_kafka_mock_add_topic(&o, bad[i]), -1);
    }
    ck_assert_int_eq(o.ntopics, 2);
}
END_TEST

static Suite *source_kafka_suite(void)
{
    Suite *s = suite_create("source_kafka");
    TCase *tc = tcase_create("kafka");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_partitions_offsets_and_a_bounded_read);
    tcase_add_test(tc, test_a_range_inside_a_partition_and_an_empty_one);
    tcase_add_test(tc, test_a_paused_partition_waits_and_resumes_at_its_next_offset);
    tcase_add_test(tc, test_a_missing_topic_and_an_unreachable_cluster_are_errors);
    tcase_add_test(tc, test_a_bad_property_is_named);
    tcase_add_test(tc, test_kafka_mock_topic_argument);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return run_suite(source_kafka_suite());
}
