/* SPDX-License-Identifier: MIT */
/* kafka_mock.h: `weir kafka-mock`, librdkafka's mock Kafka cluster on 127.0.0.1 (a real
 * Kafka-protocol endpoint for tests and for trying jobs), serving until SIGINT/SIGTERM. */
#ifndef WR_KAFKA_MOCK_H
#define WR_KAFKA_MOCK_H

/* The parsed command line of `weir kafka-mock`. */
typedef struct wr_kafka_mock_opts {
    int brokers;          /* 1 to 16 */
    int ntopics;
    const char *topic[64];
    int partitions[64];
} wr_kafka_mock_opts_t;

/* Parses "NAME:PARTITIONS" (PARTITIONS 1 to 10000, NAME a legal Kafka topic name) into
 * o's next topic. Returns 0, or -1 (nothing added) when arg is not of that form. */
int wr_kafka_mock_add_topic(wr_kafka_mock_opts_t *o, char *arg);
/* Starts the cluster with o's brokers and topics, prints `bootstrap.servers=...` as the first
 * line of stdout (flushed), and serves until SIGINT or SIGTERM. Commands read from stdin, one
 * a line (until its end; stdin may be /dev/null): `down ID` / `up ID` set broker ID (1 to N)
 * down or up (rd_kafka_mock_broker_set_down/up), `topic NAME:PARTITIONS` creates a topic; each
 * is answered on stdout with `ok` or `error: ...`. Returns 0 after the signal, 1 when the
 * cluster cannot start (the reason on stderr). */
int wr_kafka_mock_serve(const wr_kafka_mock_opts_t *o);

#endif
