/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/kafka.lua: a plain librdkafka consumer of every partition of TOPIC
 * from its first offset to the offset that was latest at start (rd_kafka_consume_batch_queue),
 * each message "key,ts" parsed by hand, then exactly bench/baseline/windows.c's windowed count
 * (winagg.h): tumbling 5 s event-time windows, a count per (key, window), the same checksum. */
#define PROGRAM "bench_baseline_kafka"
#include "winagg.h"

#include <librdkafka/rdkafka.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_baseline_kafka BOOTSTRAP_SERVERS TOPIC\n");
        return 2;
    }
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err) ||
        rd_kafka_conf_set(conf, "group.id", "bench-baseline", err, sizeof err) ||
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err)) {
        fprintf(stderr, "bench_baseline_kafka: %s\n", err);
        return 1;
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fprintf(stderr, "bench_baseline_kafka: %s\n", err);
        return 1;
    }
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, argv[2], NULL);
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topic_cnt != 1) {
        fprintf(stderr, "bench_baseline_kafka: no metadata for %s\n", argv[2]);
        return 1;
    }
    int np = md->topics[0].partition_cnt;
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int64_t left = 0;
    for (int i = 0; i < np; i++) {
        int32_t id = md->topics[0].partitions[i].id;
        int64_t lo, hi;
        rd_kafka_query_watermark_offsets(rk, argv[2], id, &lo, &hi, 10000);
        rd_kafka_topic_partition_list_add(l, argv[2], id)->offset = lo;
        left += hi - lo;
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    rd_kafka_assign(rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    init_windows();
    static rd_kafka_message_t *msgs[1024];
    long long n = 0;
    while (left > 0) {
        ssize_t got = rd_kafka_consume_batch_queue(q, 1000, msgs, 1024);
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (!m->err) {
                add_key_ts(m->payload, (const char *)m->payload + m->len, "message", ++n);
                left--;
            }
            rd_kafka_message_destroy(m);
        }
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    finish_windows();
    return 0;
}
