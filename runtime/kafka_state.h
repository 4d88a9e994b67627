/* SPDX-License-Identifier: MIT */
/* kafka_state.h: snapshots of input partitions kept in a Kafka topic (issue 19: state moves
 * with its partition). One snapshot is an opaque blob per input partition (topic, partition),
 * written as one or more chunk messages to the state topic (`<job>-state`, compacted where the
 * cluster lets weir create it so), all into state partition `partition % P` (P the state
 * topic's partitions), so a reader of some input partitions reads only their state
 * partitions. Each chunk carries a header with the snapshot's id, size, chunk index and count,
 * the blob's crc32 and its own crc32; a snapshot counts as taken once every chunk is
 * acknowledged (an idempotent producer, acks=all). Snapshots of a partition alternate between
 * two slots (keys `TOPIC/PARTITION/SLOT/CHUNK`), a write never into the slot holding the
 * latest acknowledged one, so compaction (latest per key) cannot erase the last complete
 * snapshot when a newer write is torn. The reader reads the state partitions from their start
 * to their end offsets at the time of the request, keeps the latest message per key itself
 * (a cluster that does not compact, such as librdkafka's mock, keeps every version), and per
 * input partition returns the complete, checksummed snapshot written last; broken newer ones
 * are counted and named. No libuv, no Lua: calls block (within a timeout) on the caller's
 * thread, and delivery reports are served there. librdkafka's memory is outside the account. */
#ifndef WR_KAFKA_STATE_H
#define WR_KAFKA_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

typedef struct wr_kafka_state wr_kafka_state_t;

typedef struct wr_kafka_state_opts {
    const char *bootstrap_servers;
    const char *topic;         /* the state topic, `<job>-state` */
    int32_t partitions;        /* its partitions, if weir creates it */
    const char *const *conf;   /* more librdkafka properties (producer and reader), pairs */
    int32_t nconf;             /* entries in conf */
    int64_t timeout_ms;        /* for creating, reading and the metadata */
} wr_kafka_state_opts_t;

enum {
    WR_KAFKA_STATE_HEADER = 48, /* bytes of a chunk's header */
    WR_KAFKA_STATE_SLACK = 1024 /* room left under message.max.bytes for key and framing */
};

/* Connects, and creates the topic with o->partitions and cleanup.policy=compact
 * (CreateTopics) unless it exists; a cluster without CreateTopics must have it already
 * (librdkafka's mock: its CreateTopics times out after o->timeout_ms). NULL with err set on
 * failure (a missing topic is named with what to do). The caller owns the store. */
wr_kafka_state_t *wr_kafka_state_open(const wr_kafka_state_opts_t *o, wr_err_t *err);
/* 1 when this store created the topic (compacted), -1 when it existed already (its cleanup
 * policy is what it was made with: the reader does not depend on it). */
int wr_kafka_state_compacted(const wr_kafka_state_t *s);
/* The state topic's partition count. */
int32_t wr_kafka_state_partitions(const wr_kafka_state_t *s);
/* The largest chunk payload: message.max.bytes less header and slack. */
size_t wr_kafka_state_chunk_bytes(const wr_kafka_state_t *s);

/* Queues snapshot id (the caller's number, e.g. its checkpoint id) of (topic, partition): the
 * blob's bytes are copied. Waits for room when librdkafka's queue is full (within the
 * timeout). 0, or a negative code with err set. */
int wr_kafka_state_put(wr_kafka_state_t *s, const char *topic, int32_t partition, uint64_t id,
                       const void *blob, size_t len, wr_err_t *err);
/* Waits until every snapshot put so far is acknowledged, at most timeout_ms: 0, or
 * WEIR_ESOURCE naming the first delivery that failed (the snapshot does not count) or the
 * timeout (they may still be delivered: flush again). */
int wr_kafka_state_flush(wr_kafka_state_t *s, int64_t timeout_ms, wr_err_t *err);
/* The id of the last snapshot of (topic, partition) acknowledged in full: 1 and *id, or 0
 * when none was. */
int wr_kafka_state_acked(const wr_kafka_state_t *s, const char *topic, int32_t partition,
                         uint64_t *id);

/* One input partition asked of wr_kafka_state_read, and what was found. */
typedef struct wr_kafka_state_snapshot {
    const char *topic;  /* in */
    int32_t partition;  /* in */
    int found;          /* out: 1 when a complete snapshot was found */
    uint64_t id;        /* out: its id */
    void *blob;         /* out: its bytes, the caller's (wr_free), NUL-terminated */
    size_t len;
    int rejected;       /* out: later snapshots that were broken (torn or corrupt) */
    char why[200];      /* out: what was wrong with the latest of them */
} wr_kafka_state_snapshot_t;

/* Reads the latest complete snapshot of each of want's n partitions from the state topic, from
 * the start of their state partitions to their end offsets now. The next put of a partition
 * read goes into the slot not holding what was found. 0, or a negative code with err set
 * (the blobs already given are still the caller's). */
int wr_kafka_state_read(wr_kafka_state_t *s, wr_kafka_state_snapshot_t *want, int32_t n,
                        wr_err_t *err);

void wr_kafka_state_free(wr_kafka_state_t *s);

/* The messages put writes for one snapshot, in order: emit(key, value, value_len, arg) per
 * chunk (the key NUL-terminated; both borrowed for the call), with payloads of at most
 * chunk_bytes (>= 1). Stops at the first emit that returns non-zero and returns that; else 0.
 * For the writer, and for tests and tools that write chunks themselves. */
int wr_kafka_state_encode(const char *topic, int32_t partition, int slot, uint64_t id,
                          const void *blob, size_t len, size_t chunk_bytes,
                          int (*emit)(const char *key, const void *value, size_t value_len,
                                      void *arg),
                          void *arg);

#endif
