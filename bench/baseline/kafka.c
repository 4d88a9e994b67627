/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/kafka.lua: a plain librdkafka consumer of every partition of TOPIC
 * from its first offset to the offset that was latest at start, each message "key,ts" parsed
 * by hand, then bench/baseline/windows.c's windowed count (winagg.h): tumbling 5 s event-time
 * windows, a count per (key, window), the same checksum. Event time per partition, as weir's
 * source with `watermarks` (and Flink's KafkaSource): a partition's watermark is its largest
 * timestamp - 1, the consumer's the minimum over the partitions not finished, advanced after
 * each batch (weir's periodic generators advance it every 200 ms: fewer, never more, fires).
 *
 * What a C programmer would write, on the same terms as weir's source (runtime/source_kafka.c):
 * the same consumer properties (librdkafka's fetch defaults, auto-commit and offset store off,
 * no partition-EOF events), the partitions assigned, not subscribed; messages taken from the
 * consumer queue in batches of up to 1024 (weir's WEIR_BATCH_MAX) with
 * rd_kafka_consume_batch_queue. A batch asks for no more than the messages still to come: the
 * call waits (up to its timeout) until it has as many as it asked for, so asking for 1024 when
 * 10 are left would wait the whole timeout at the end. Per partition the consumer stops at its
 * offset latest at start, as weir's stopping_offsets = "latest" does. */
#define PROGRAM "bench_baseline_kafka"
#include "winagg.h"

#include <librdkafka/rdkafka.h>
#include <string.h>

enum { BATCH = 1024, TIMEOUT_MS = 1000 };

static void fail(const char *what)
{
    fprintf(stderr, "bench_baseline_kafka: %s\n", what);
    exit(1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_baseline_kafka BOOTSTRAP_SERVERS TOPIC [NAME=VALUE]...\n");
        return 2;
    }
    const char *topic = argv[2];
    static const char *const props[][2] = {
        {"group.id", "bench-baseline"}, /* assign needs one; never joined, never committed */
        {"enable.auto.commit", "false"},
        {"enable.auto.offset.store", "false"},
        {"enable.partition.eof", "false"},
        {"queued.min.messages", "1000000"}, /* weir's source's default (docs/API.md) */
    };
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", argv[1], err, sizeof err)) {
        fail(err);
    }
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) {
        if (rd_kafka_conf_set(conf, props[i][0], props[i][1], err, sizeof err)) {
            fail(err);
        }
    }
    for (int i = 3; i < argc; i++) { /* the benchmark's consumer properties (bench/run) */
        char *eq = strchr(argv[i], '=');
        if (!eq) {
            fail("a property is NAME=VALUE");
        }
        *eq = '\0';
        if (rd_kafka_conf_set(conf, argv[i], eq + 1, err, sizeof err)) {
            fail(err);
        }
    }
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
    if (!rk) {
        fail(err);
    }
    const struct rd_kafka_metadata *md;
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    if (rd_kafka_metadata(rk, 0, rkt, &md, 10000) || md->topic_cnt != 1 ||
        md->topics[0].err) {
        fail("no metadata for the topic");
    }
    int np = md->topics[0].partition_cnt;
    /* by partition id (0 .. np-1): the stop offset, the largest timestamp, still reading */
    int64_t *stop = xcalloc((size_t)np, sizeof *stop);
    int64_t *part_max = xcalloc((size_t)np, sizeof *part_max);
    char *live = xcalloc((size_t)np, 1);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(np);
    int64_t left = 0;
    for (int i = 0; i < np; i++) {
        int32_t id = md->topics[0].partitions[i].id;
        int64_t lo, hi;
        if (id < 0 || id >= np ||
            rd_kafka_query_watermark_offsets(rk, topic, id, &lo, &hi, 10000)) {
            fail("no offsets for a partition");
        }
        stop[id] = hi;
        part_max[id] = INT64_MIN;
        live[id] = hi > lo;
        if (hi > lo) {
            rd_kafka_topic_partition_list_add(l, topic, id)->offset = lo;
            left += hi - lo;
        }
    }
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    if (rd_kafka_assign(rk, l)) {
        fail("assign failed");
    }
    rd_kafka_topic_partition_list_destroy(l);
    rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
    init_windows();
    static rd_kafka_message_t *msgs[BATCH];
    long long n = 0;
    while (left > 0) {
        size_t want = left < BATCH ? (size_t)left : BATCH;
        ssize_t got = rd_kafka_consume_batch_queue(q, TIMEOUT_MS, msgs, want);
        if (got < 0) {
            fail(rd_kafka_err2str(rd_kafka_last_error()));
        }
        for (ssize_t i = 0; i < got; i++) {
            rd_kafka_message_t *m = msgs[i];
            if (m->err) {
                fprintf(stderr, "bench_baseline_kafka: %s\n", rd_kafka_message_errstr(m));
            } else if (m->offset < stop[m->partition]) {
                int32_t key;
                int64_t ts;
                parse_key_ts(m->payload, (const char *)m->payload + m->len, "message", ++n,
                             &key, &ts);
                count_event(key, ts);
                if (ts > part_max[m->partition]) {
                    part_max[m->partition] = ts;
                }
                if (m->offset + 1 >= stop[m->partition]) {
                    live[m->partition] = 0;
                }
                left--;
            }
            rd_kafka_message_destroy(m);
        }
        int64_t wm = INT64_MAX;
        for (int p = 0; p < np; p++) {
            if (live[p] && part_max[p] < wm) {
                wm = part_max[p];
            }
        }
        if (wm != INT64_MIN && wm != INT64_MAX) {
            advance_watermark(wm - 1);
        }
    }
    rd_kafka_queue_destroy(q);
    rd_kafka_consumer_close(rk);
    rd_kafka_destroy(rk);
    free(stop);
    free(part_max);
    free(live);
    finish_windows();
    return 0;
}
