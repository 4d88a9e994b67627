/* SPDX-License-Identifier: MIT */
/* kafka_group.h: one member of a Kafka consumer group (issue 19, membership): librdkafka's
 * group protocol with the cooperative-sticky assignor and, given an instance id, static
 * membership. Rebalances become an ordered queue of events (partitions assigned, revoked,
 * lost) the caller takes between batches and finishes when it is ready: an assignment after
 * it restored the partitions' state (with the offsets to start at), a revoke after it took
 * the partitions' last snapshot. librdkafka waits for that finish (the member stays in the
 * group, heartbeats go on), so the next owner of a revoked partition gets it only after the
 * snapshot. Driven by libuv: the consumer queue signals a pipe a uv_poll watches, and every
 * librdkafka callback runs inside wr_kafka_group_consume, on the caller's thread. Part of the
 * event layer (it includes uv.h); no Lua. librdkafka's memory is outside weir's account. */
#ifndef WR_KAFKA_GROUP_H
#define WR_KAFKA_GROUP_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>
#include <uv.h>

#include "err.h"

typedef struct wr_kafka_group wr_kafka_group_t;

enum {
    WR_KAFKA_GROUP_ASSIGNED = 1, /* finish with the offsets to start at */
    WR_KAFKA_GROUP_REVOKED = 2,  /* cooperative revoke: snapshot, then finish */
    WR_KAFKA_GROUP_LOST = 3      /* the group gave them away already: drop, then finish */
};

/* A partition of an event or of the member's assignment. */
typedef struct wr_kafka_group_part {
    const char *topic;
    int32_t partition;
} wr_kafka_group_part_t;

/* One rebalance step. Its parts are borrowed: they live until the event is finished. */
typedef struct wr_kafka_group_event {
    int kind;
    int32_t n;
    const wr_kafka_group_part_t *parts;
    uint64_t seq; /* 1, 2, ...: the order of this member's events */
} wr_kafka_group_event_t;

typedef struct wr_kafka_group_opts {
    const char *bootstrap_servers;
    const char *group_id;
    const char *instance_id;    /* group.instance.id (static membership), or NULL */
    const char *const *topics;  /* subscribed (exact names) */
    int32_t ntopics;
    const char *const *conf;    /* more consumer properties, name/value pairs, or NULL */
    int32_t nconf;              /* entries in conf (twice the number of properties) */
    /* Called by the uv_poll callback when the consumer queue became non-empty (may be NULL:
     * then the caller consumes after every loop run). */
    void (*wake)(wr_kafka_group_t *g, void *arg);
    void *wake_arg;
} wr_kafka_group_opts_t;

/* A member of o->group_id, not yet joined. The properties weir fixes
 * (partition.assignment.strategy=cooperative-sticky, enable.auto.commit=false,
 * enable.auto.offset.store=false, enable.partition.eof=false, log.queue=true) and those with
 * options of their own (bootstrap.servers, group.id, group.instance.id) cannot be set in
 * o->conf: such a property is refused, as is one librdkafka refuses. The caller owns the
 * member; loop must outlive it. NULL with err set on failure. */
wr_kafka_group_t *wr_kafka_group_new(uv_loop_t *loop, const wr_kafka_group_opts_t *o,
                                     wr_err_t *err);
/* Subscribes (the group join starts) and starts watching the queue. 0 or a negative code. */
int wr_kafka_group_start(wr_kafka_group_t *g, wr_err_t *err);
/* Serves librdkafka's callbacks (rebalances become events) and takes up to max messages
 * without blocking; only messages of partitions the member owns and has not been asked to
 * give up are returned (others are destroyed), and messages with an error (m->err) pass
 * through. The caller destroys what it gets (rd_kafka_message_destroy). Returns the count,
 * or WEIR_ESOURCE once a fatal error happened (wr_kafka_group_error says it). */
int wr_kafka_group_consume(wr_kafka_group_t *g, rd_kafka_message_t **out, int max);
/* 1 when librdkafka's queue holds something (consume again before waiting), else 0. */
int wr_kafka_group_pending(const wr_kafka_group_t *g);
/* The oldest event not finished, or NULL. Borrowed until wr_kafka_group_finish. */
const wr_kafka_group_event_t *wr_kafka_group_event(const wr_kafka_group_t *g);
/* Finishes the oldest event. Until then librdkafka has paused the member's whole assignment
 * (rd_kafka_assignment_pause: no partition is fetched), so finish soon. ASSIGNED adds its
 * partitions to the assignment
 * (rd_kafka_incremental_assign), each at offsets[i] (the next offset to read; offsets NULL
 * or an entry < 0: the group's committed offset, else auto.offset.reset), and from then on
 * consume returns their messages; REVOKED and LOST take them away
 * (rd_kafka_incremental_unassign), so librdkafka can rejoin and the group hand them on.
 * 0, or a negative code with err set (WEIR_ESTATE: no event). */
int wr_kafka_group_finish(wr_kafka_group_t *g, const int64_t *offsets, wr_err_t *err);
/* Accepts the oldest event, an ASSIGNED one, before its finish: its partitions join the
 * assignment at once (rd_kafka_incremental_assign) at offsets[i], and are paused
 * (rd_kafka_pause_partitions), so librdkafka leaves WAIT_ASSIGN_CALL (the member can rejoin a
 * rebalance that starts while the caller restores, instead of holding the whole group up) and
 * resumes the member's other partitions; consume drops their messages until the finish, which
 * seeks each partition whose finish offset (>= 0) differs to it and resumes them all (the
 * accepted event is the oldest still: its finish comes before any later event's). Give
 * absolute offsets: an entry < 0 (or offsets NULL) makes librdkafka look the start up
 * (committed offset, auto.offset.reset) asynchronously, and that lookup's answer can land
 * after the finish's seek and win. 0, or a negative code with err set (WEIR_ESTATE: the
 * oldest event is no assignment, or is accepted already). */
int wr_kafka_group_accept(wr_kafka_group_t *g, const int64_t *offsets, wr_err_t *err);
/* The partitions in the member's assignment (finished assignments minus finished revokes
 * and losses; a partition whose revoke is not finished is in it, but consume drops its
 * messages), in no order, *n of them. Borrowed until the next call of this module. */
const wr_kafka_group_part_t *wr_kafka_group_owned(const wr_kafka_group_t *g, int32_t *n);
/* The member's consumer (borrowed: it lives until wr_kafka_group_close), for what the
 * caller asks of the cluster itself: metadata, watermark and committed offsets, commits,
 * pausing and resuming owned partitions. Never consume from it or close it. */
rd_kafka_t *wr_kafka_group_rk(wr_kafka_group_t *g);
/* The member id the coordinator gave (empty before the first join; a copy into buf). */
void wr_kafka_group_member_id(wr_kafka_group_t *g, char *buf, size_t size);
/* The fatal error that stopped the member, or NULL. */
const char *wr_kafka_group_error(const wr_kafka_group_t *g);
/* The last non-fatal error librdkafka reported (a broker down, ...), or NULL. */
const char *wr_kafka_group_last_warning(const wr_kafka_group_t *g);

enum {
    WR_KAFKA_GROUP_LEAVE = 0,  /* close: finish what is pending, revoke, leave the group
                                * (a static member does not send LeaveGroup: KIP-345) */
    WR_KAFKA_GROUP_VANISH = 1  /* drop the connection without a word, as a killed process */
};
/* Closes the member (how: WR_KAFKA_GROUP_LEAVE or _VANISH) and frees it once the uv_poll
 * has closed (the caller runs the loop). Unfinished events are finished first (assignments
 * without offsets). */
void wr_kafka_group_close(wr_kafka_group_t *g, int how);

#endif
