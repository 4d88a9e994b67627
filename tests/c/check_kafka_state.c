/* SPDX-License-Identifier: MIT */
/* check_kafka_state.c: the state store on a Kafka topic (kafka_state.c) against librdkafka's
 * mock cluster in this process: snapshots written and read back per partition, the latest
 * winning; blobs larger than message.max.bytes in chunks (200 KB in 10 KB messages, 4 MB in
 * 1 MB ones); a snapshot whose writer died between chunks, and one with a flipped byte, are
 * rejected and the previous one used; a snapshot counts only once acknowledged (the broker
 * down, then up); a missing topic on a cluster that cannot create topics is named. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_support.h"
#include "kafka_state.h"
#include "mem.h"
#include "weir.h"

enum { STATE_PARTS = 4 };

typedef struct cluster {
    rd_kafka_t *producer; /* holds the mock cluster; also the test's raw producer */
    rd_kafka_mock_cluster_t *mc;
    char bootstrap[256];
} cluster_t;

static void cluster_start(cluster_t *c)
{
    char errstr[256];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_int_eq(rd_kafka_conf_set(conf, "test.mock.num.brokers", "1", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    ck_assert_int_eq(rd_kafka_conf_set(conf, "log_level", "2", errstr, sizeof errstr),
                     RD_KAFKA_CONF_OK);
    c->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
    ck_assert_ptr_nonnull(c->producer);
    c->mc = rd_kafka_handle_mock_cluster(c->producer);
    ck_assert_ptr_nonnull(c->mc);
    ck_assert_int_eq(rd_kafka_mock_topic_create(c->mc, "job-state", STATE_PARTS, 1), 0);
    snprintf(c->bootstrap, sizeof c->bootstrap, "%s", rd_kafka_mock_cluster_bootstraps(c->mc));
}

static void cluster_stop(cluster_t *c)
{
    rd_kafka_destroy(c->producer);
}

/* A store on job-state with max_bytes as message.max.bytes (NULL: librdkafka's default). */
static wr_kafka_state_t *open_store(cluster_t *c, const char *max_bytes)
{
    const char *conf[] = {"message.max.bytes", max_bytes, "log_level", "2"};
    wr_kafka_state_opts_t o = {.bootstrap_servers = c->bootstrap,
                               .topic = "job-state",
                               .partitions = STATE_PARTS,
                               .conf = max_bytes ? conf : conf + 2,
                               .nconf = max_bytes ? 4 : 2,
                               .timeout_ms = 20000};
    wr_err_t err = {0};
    wr_kafka_state_t *s = wr_kafka_state_open(&o, &err);
    ck_assert_msg(s != NULL, "%s", err.msg);
    return s;
}

static void put(wr_kafka_state_t *s, int32_t partition, uint64_t id, const void *blob,
                size_t len)
{
    wr_err_t err = {0};
    ck_assert_msg(wr_kafka_state_put(s, "clicks", partition, id, blob, len, &err) == 0, "%s",
                  err.msg);
}

static void flush(wr_kafka_state_t *s)
{
    wr_err_t err = {0};
    ck_assert_msg(wr_kafka_state_flush(s, 20000, &err) == 0, "%s", err.msg);
}

/* Reads partition p of "clicks" into *w (the caller frees w->blob). */
static void read_one(wr_kafka_state_t *s, int32_t p, wr_kafka_state_snapshot_t *w)
{
    memset(w, 0, sizeof *w);
    w->topic = "clicks";
    w->partition = p;
    wr_err_t err = {0};
    ck_assert_msg(wr_kafka_state_read(s, w, 1, &err) == 0, "%s", err.msg);
}

static uint8_t *pattern(size_t n, unsigned seed)
{
    uint8_t *b = wr_xmalloc(n);
    uint32_t x = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        b[i] = (uint8_t)(x >> 16);
    }
    return b;
}

START_TEST(test_snapshots_are_read_back_per_partition_and_the_latest_wins)
{
    cluster_t c;
    cluster_start(&c);
    wr_kafka_state_t *s = open_store(&c, NULL);
    ck_assert_int_eq(wr_kafka_state_partitions(s), STATE_PARTS);
    ck_assert_int_eq(wr_kafka_state_compacted(s), -1); /* it existed */
    uint64_t id = 0;
    ck_assert_int_eq(wr_kafka_state_acked(s, "clicks", 0, &id), 0);
    put(s, 0, 1, "zero-1", 6);
    put(s, 1, 1, "one-1", 5);
    put(s, 4, 1, "four-1", 6); /* the same state partition as 0 */
    flush(s);
    put(s, 0, 2, "zero-2", 6);
    put(s, 0, 3, "", 0); /* an empty blob is a snapshot too */
    put(s, 4, 2, "four-2", 6);
    flush(s);
    ck_assert_int_eq(wr_kafka_state_acked(s, "clicks", 0, &id), 1);
    ck_assert(id == 3);
    ck_assert_int_eq(wr_kafka_state_acked(s, "clicks", 1, &id), 1);
    ck_assert(id == 1);

    /* another store (another process) reads them */
    wr_kafka_state_t *r = open_store(&c, NULL);
    wr_kafka_state_snapshot_t w[4] = {{.topic = "clicks", .partition = 0},
                                      {.topic = "clicks", .partition = 1},
                                      {.topic = "clicks", .partition = 4},
                                      {.topic = "clicks", .partition = 5}};
    wr_err_t err = {0};
    ck_assert_msg(wr_kafka_state_read(r, w, 4, &err) == 0, "%s", err.msg);
    ck_assert(w[0].found && w[0].id == 3 && w[0].len == 0);
    ck_assert(w[1].found && w[1].id == 1 && w[1].len == 5);
    ck_assert_str_eq(w[1].blob, "one-1");
    ck_assert(w[2].found && w[2].id == 2);
    ck_assert_str_eq(w[2].blob, "four-2");
    ck_assert(!w[3].found && w[3].blob == NULL && w[3].rejected == 0);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(w[i].rejected, 0);
        wr_free(w[i].blob);
    }
    /* another topic's partition 0 is another snapshot */
    wr_kafka_state_snapshot_t o = {.topic = "views", .partition = 0};
    ck_assert_int_eq(wr_kafka_state_read(r, &o, 1, &err), 0);
    ck_assert(!o.found);
    wr_kafka_state_free(r);
    wr_kafka_state_free(s);
    cluster_stop(&c);
}
END_TEST

START_TEST(test_blobs_larger_than_a_message_go_in_chunks)
{
    cluster_t c;
    cluster_start(&c);
    wr_kafka_state_t *s = open_store(&c, "10000");
    size_t chunk = wr_kafka_state_chunk_bytes(s);
    ck_assert(chunk > 0 && chunk + WR_KAFKA_STATE_HEADER + 100 <= 10000);
    size_t n = 200 * 1024;
    uint8_t *b = pattern(n, 1);
    put(s, 2, 7, b, n);
    flush(s);
    wr_kafka_state_snapshot_t w;
    read_one(s, 2, &w);
    ck_assert(w.found && w.id == 7 && w.len == n);
    ck_assert(memcmp(w.blob, b, n) == 0);
    ck_assert_int_eq(w.rejected, 0);
    wr_free(w.blob);
    wr_free(b);
    wr_kafka_state_free(s);

    /* 4 MB with librdkafka's default message.max.bytes (1 MB); not more: the mock keeps at most
     * 5 MiB per partition (rdkafka_mock.c: max_size), dropping the oldest messages */
    s = open_store(&c, NULL);
    n = 4 * 1024 * 1024 + 17;
    b = pattern(n, 2);
    put(s, 3, 8, b, n);
    flush(s);
    read_one(s, 3, &w);
    ck_assert_msg(w.found && w.id == 8 && w.len == n, "found %d id %llu len %zu rejected %d: %s",
                  w.found, (unsigned long long)w.id, w.len, w.rejected, w.why);
    ck_assert(memcmp(w.blob, b, n) == 0);
    wr_free(w.blob);
    wr_free(b);
    wr_kafka_state_free(s);
    cluster_stop(&c);
}
END_TEST

/* The test's own writer of chunks (a writer that dies after `stop_after` chunks, or flips a
 * byte of chunk `flip`), producing as kafka_state.c does. */
typedef struct raw {
    rd_kafka_t *rk;
    int32_t state_partition;
    int emitted;
    int stop_after; /* -1: all */
    int flip;       /* -1: none */
} raw_t;

static int raw_emit(const char *key, const void *value, size_t len, void *arg)
{
    raw_t *r = arg;
    if (r->stop_after >= 0 && r->emitted == r->stop_after) {
        return 1; /* the writer is gone */
    }
    uint8_t *v = (uint8_t *)wr_xmemdup(value, len);
    if (r->emitted == r->flip) {
        v[len - 1] ^= 0x20;
    }
    r->emitted++;
    rd_kafka_resp_err_t e = rd_kafka_producev(
        r->rk, RD_KAFKA_V_TOPIC("job-state"), RD_KAFKA_V_PARTITION(r->state_partition),
        RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE(v, len),
        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
    wr_free(v);
    ck_assert_int_eq(e, 0);
    return 0;
}

START_TEST(test_a_torn_or_corrupt_snapshot_falls_back_to_the_previous_one)
{
    cluster_t c;
    cluster_start(&c);
    wr_kafka_state_t *s = open_store(&c, "10000");
    size_t chunk = wr_kafka_state_chunk_bytes(s);
    size_t n = 5 * chunk + 100; /* 6 chunks */
    uint8_t *b1 = pattern(n, 11);
    put(s, 6, 1, b1, n); /* slot 0 */
    flush(s);

    /* snapshot 2 into slot 1; its writer dies after 2 of its 6 chunks */
    uint8_t *b2 = pattern(n, 12);
    raw_t raw = {.rk = c.producer, .state_partition = 6 % STATE_PARTS, .stop_after = 2,
                 .flip = -1};
    ck_assert_int_eq(wr_kafka_state_encode("clicks", 6, 1, 2, b2, n, chunk, raw_emit, &raw), 1);
    ck_assert_int_eq(rd_kafka_flush(c.producer, 10000), 0);
    wr_kafka_state_t *r = open_store(&c, "10000");
    wr_kafka_state_snapshot_t w;
    read_one(r, 6, &w);
    ck_assert(w.found && w.id == 1 && w.len == n && memcmp(w.blob, b1, n) == 0);
    ck_assert_int_eq(w.rejected, 1);
    ck_assert_msg(strstr(w.why, "snapshot 2: chunk 2 of 6 is missing") != NULL, "%s", w.why);
    wr_free(w.blob);

    /* the reader's next snapshot goes into slot 1 (not over snapshot 1) and wins */
    uint8_t *b3 = pattern(n / 2, 13);
    put(r, 6, 3, b3, n / 2);
    flush(r);
    read_one(s, 6, &w);
    ck_assert(w.found && w.id == 3 && w.len == n / 2 && memcmp(w.blob, b3, n / 2) == 0);
    ck_assert_int_eq(w.rejected, 0); /* slot 1's leftover chunks of 2 are not a snapshot */
    wr_free(w.blob);

    /* snapshot 4 into slot 0, complete, but a byte of its chunk 3 flipped on the way */
    raw = (raw_t){.rk = c.producer, .state_partition = 6 % STATE_PARTS, .stop_after = -1,
                  .flip = 3};
    ck_assert_int_eq(wr_kafka_state_encode("clicks", 6, 0, 4, b2, n, chunk, raw_emit, &raw), 0);
    ck_assert_int_eq(rd_kafka_flush(c.producer, 10000), 0);
    read_one(r, 6, &w);
    ck_assert(w.found && w.id == 3 && memcmp(w.blob, b3, n / 2) == 0);
    ck_assert_int_eq(w.rejected, 1);
    ck_assert_msg(strstr(w.why, "snapshot 4: chunk 3 of 6: chunk crc mismatch") != NULL, "%s",
                  w.why);
    wr_free(w.blob);

    /* a message under the partition's keys that is no chunk at all is named too */
    const char *junk_key = "clicks/9/0/0";
    ck_assert_int_eq(rd_kafka_producev(c.producer, RD_KAFKA_V_TOPIC("job-state"),
                                       RD_KAFKA_V_PARTITION(9 % STATE_PARTS),
                                       RD_KAFKA_V_KEY(junk_key, strlen(junk_key)),
                                       RD_KAFKA_V_VALUE("hello", 5),
                                       RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                     0);
    ck_assert_int_eq(rd_kafka_flush(c.producer, 10000), 0);
    read_one(r, 9, &w);
    ck_assert(!w.found);
    ck_assert_int_eq(w.rejected, 1);
    ck_assert_msg(strstr(w.why, "not a snapshot chunk") != NULL, "%s", w.why);
    wr_free(b1);
    wr_free(b2);
    wr_free(b3);
    wr_kafka_state_free(r);
    wr_kafka_state_free(s);
    cluster_stop(&c);
}
END_TEST

START_TEST(test_a_snapshot_counts_only_once_acknowledged)
{
    cluster_t c;
    cluster_start(&c);
    wr_kafka_state_t *s = open_store(&c, NULL);
    put(s, 1, 1, "one", 3);
    flush(s);
    ck_assert_int_eq(rd_kafka_mock_broker_set_down(c.mc, 1), 0);
    put(s, 1, 2, "two", 3);
    wr_err_t err = {0};
    ck_assert_int_eq(wr_kafka_state_flush(s, 1500, &err), WEIR_ESOURCE);
    ck_assert_msg(strstr(err.msg, "not acknowledged within 1500 ms") != NULL, "%s", err.msg);
    uint64_t id = 0;
    ck_assert_int_eq(wr_kafka_state_acked(s, "clicks", 1, &id), 1);
    ck_assert(id == 1);
    ck_assert_int_eq(rd_kafka_mock_broker_set_up(c.mc, 1), 0);
    flush(s);
    ck_assert_int_eq(wr_kafka_state_acked(s, "clicks", 1, &id), 1);
    ck_assert(id == 2);
    wr_kafka_state_snapshot_t w;
    read_one(s, 1, &w);
    ck_assert(w.found && w.id == 2);
    ck_assert_str_eq(w.blob, "two");
    wr_free(w.blob);
    wr_kafka_state_free(s);
    cluster_stop(&c);
}
END_TEST

START_TEST(test_a_missing_topic_and_bad_arguments_are_named)
{
    cluster_t c;
    cluster_start(&c);
    wr_kafka_state_opts_t o = {.bootstrap_servers = c.bootstrap, .topic = "nosuch-state",
                               .partitions = 4, .timeout_ms = 1000};
    wr_err_t err = {0};
    ck_assert_ptr_null(wr_kafka_state_open(&o, &err)); /* the mock's CreateTopics times out */
    ck_assert_str_eq(err.msg, "state topic nosuch-state: no such topic, and the cluster cannot "
                              "create topics: create it with cleanup.policy=compact");
    o.topic = "job-state";
    o.partitions = 0;
    ck_assert_ptr_null(wr_kafka_state_open(&o, &err));
    o.partitions = 4;
    const char *bad[] = {"no.such.property", "1"};
    o.conf = bad;
    o.nconf = 2;
    ck_assert_ptr_null(wr_kafka_state_open(&o, &err));
    ck_assert_ptr_nonnull(strstr(err.msg, "property no.such.property: "));
    cluster_stop(&c);
}
END_TEST

static Suite *kafka_state_suite(void)
{
    Suite *s = suite_create("kafka_state");
    add_timed_case(s, "latest_wins", test_snapshots_are_read_back_per_partition_and_the_latest_wins,
                   120);
    add_timed_case(s, "chunks", test_blobs_larger_than_a_message_go_in_chunks, 120);
    add_timed_case(s, "torn_and_corrupt",
                   test_a_torn_or_corrupt_snapshot_falls_back_to_the_previous_one, 120);
    add_timed_case(s, "acknowledged", test_a_snapshot_counts_only_once_acknowledged, 120);
    add_timed_case(s, "errors", test_a_missing_topic_and_bad_arguments_are_named, 60);
    return s;
}

int main(void)
{
    return run_suite(kafka_state_suite());
}
