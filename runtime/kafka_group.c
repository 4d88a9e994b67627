/* SPDX-License-Identifier: MIT */
/* kafka_group.c: a consumer group member whose rebalances are events the caller finishes.
 * librdkafka calls the rebalance callback from inside rd_kafka_consume_batch_queue (on the
 * caller's thread); the callback only records the event, and the rd_kafka_incremental_assign
 * or _unassign librdkafka waits for (join states WAIT_ASSIGN_CALL / WAIT_UNASSIGN_CALL, in
 * which it keeps heartbeating) is made by wr_kafka_group_finish, when the caller is ready.
 * Invariant: a partition is in `owned` from the finish of its assignment to the finish of its
 * revoke or loss; it is `giving` (its messages dropped) from the revoke's arrival on. */
#include "kafka_group.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "mem.h"
#include "weir.h"

typedef struct owned_part {
    char *topic; /* owned */
    int32_t partition;
    int giving; /* a revoke or loss of it is queued, not finished */
    int restoring; /* assigned by an accepted event, paused until its finish seeks it */
} owned_part_t;

typedef struct group_event {
    wr_kafka_group_event_t pub;
    rd_kafka_topic_partition_list_t *list; /* owned: what finish hands to librdkafka */
    wr_kafka_group_part_t *parts;          /* owned; topics point into list */
    int accepted; /* an assignment applied at once, paused (wr_kafka_group_accept) */
} group_event_t;

struct wr_kafka_group {
    uv_loop_t *loop;
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue; /* the consumer queue; the main queue is forwarded to it */
    int pipe_fd[2];
    uv_poll_t poll;
    int poll_started;
    int closing; /* the rebalance callback (un)assigns at once: consumer_close waits for it */
    char **topics; /* owned copies */
    int32_t ntopics;
    void (*wake)(wr_kafka_group_t *g, void *arg);
    void *wake_arg;
    group_event_t *events; /* a FIFO: [head, nevents) unfinished */
    int32_t head;
    int32_t nevents;
    int32_t cap_events;
    uint64_t seq;
    owned_part_t *owned;
    int32_t nowned;
    wr_kafka_group_part_t *owned_view; /* what wr_kafka_group_owned hands out */
    char fatal[512];
    char warning[512];
};

static const char *const fixed_conf[][2] = {
    {"partition.assignment.strategy", "cooperative-sticky"},
    {"enable.auto.commit", "false"}, /* offsets go into snapshots; commits are the caller's */
    {"enable.auto.offset.store", "false"},
    {"enable.partition.eof", "false"},
    {"log.queue", "true"}, /* logs are served on the caller's thread */
};

static int32_t find_owned(const wr_kafka_group_t *g, const char *topic, int32_t partition)
{
    for (int32_t i = 0; i < g->nowned; i++) {
        if (g->owned[i].partition == partition && strcmp(g->owned[i].topic, topic) == 0) {
            return i;
        }
    }
    return -1;
}

static void on_error(rd_kafka_t *rk, int code, const char *reason, void *opaque)
{
    wr_kafka_group_t *g = opaque;
    if (code == RD_KAFKA_RESP_ERR__FATAL) {
        char why[400];
        rd_kafka_fatal_error(rk, why, sizeof why);
        snprintf(g->fatal, sizeof g->fatal, "%s", why);
        return;
    }
    snprintf(g->warning, sizeof g->warning, "%s", reason);
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)level;
    (void)fac;
    (void)buf; /* what a member must know also reaches on_error */
}

/* Calls the incremental (un)assign librdkafka waits for; a failure is recorded as fatal (the
 * member's view and librdkafka's would part). */
static int apply(wr_kafka_group_t *g, int assign, rd_kafka_topic_partition_list_t *list)
{
    rd_kafka_error_t *e = assign ? rd_kafka_incremental_assign(g->rk, list)
                                 : rd_kafka_incremental_unassign(g->rk, list);
    if (e == NULL) {
        return 0;
    }
    snprintf(g->fatal, sizeof g->fatal, "%s: %s",
             assign ? "rd_kafka_incremental_assign" : "rd_kafka_incremental_unassign",
             rd_kafka_error_string(e));
    rd_kafka_error_destroy(e);
    return WEIR_ESOURCE;
}

static void push_event(wr_kafka_group_t *g, int kind, const rd_kafka_topic_partition_list_t *l)
{
    if (g->head > 0 && g->head == g->nevents) {
        g->head = g->nevents = 0; /* empty: start over at the front */
    }
    if (g->nevents == g->cap_events) {
        g->cap_events = g->cap_events ? 2 * g->cap_events : 4;
        g->events = wr_xreallocarray(g->events, (size_t)g->cap_events, sizeof *g->events);
    }
    group_event_t *e = &g->events[g->nevents++];
    e->accepted = 0;
    e->list = rd_kafka_topic_partition_list_copy(l);
    e->parts = wr_xcalloc((size_t)(l->cnt > 0 ? l->cnt : 1), sizeof *e->parts);
    for (int i = 0; i < l->cnt; i++) {
        e->parts[i].topic = e->list->elems[i].topic;
        e->parts[i].partition = e->list->elems[i].partition;
    }
    e->pub = (wr_kafka_group_event_t){
        .kind = kind, .n = l->cnt, .parts = e->parts, .seq = ++g->seq};
    if (kind != WR_KAFKA_GROUP_ASSIGNED) {
        for (int i = 0; i < l->cnt; i++) {
            int32_t k = find_owned(g, l->elems[i].topic, l->elems[i].partition);
            if (k >= 0) {
                g->owned[k].giving = 1;
            }
        }
    }
}

/* 1 when a queued, unfinished revoke or loss names (topic, partition). */
static int leaving(const wr_kafka_group_t *g, const char *topic, int32_t partition)
{
    for (int32_t e = g->head; e < g->nevents; e++) {
        const rd_kafka_topic_partition_list_t *l = g->events[e].list;
        for (int i = 0; g->events[e].pub.kind != WR_KAFKA_GROUP_ASSIGNED && i < l->cnt; i++) {
            if (l->elems[i].partition == partition && strcmp(l->elems[i].topic, topic) == 0) {
                return 1;
            }
        }
    }
    return 0;
}

static void take_owned(wr_kafka_group_t *g, const rd_kafka_topic_partition_list_t *l, int add)
{
    for (int i = 0; i < l->cnt; i++) {
        int32_t k = find_owned(g, l->elems[i].topic, l->elems[i].partition);
        if (add && k < 0) {
            g->owned = wr_xreallocarray(g->owned, (size_t)g->nowned + 1, sizeof *g->owned);
            g->owned[g->nowned++] = (owned_part_t){
                .topic = wr_xstrdup(l->elems[i].topic),
                .partition = l->elems[i].partition,
                /* assigned, and already asked back by a later event */
                .giving = leaving(g, l->elems[i].topic, l->elems[i].partition)};
        } else if (!add && k >= 0) {
            wr_free(g->owned[k].topic);
            g->owned[k] = g->owned[--g->nowned];
        }
    }
}

/* librdkafka's rebalance callback (cooperative: partitions is the increment). An empty
 * increment is acknowledged at once (librdkafka still waits for the call); so is every one
 * while closing (rd_kafka_consumer_close serves the callback and waits). */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions, void *opaque)
{
    wr_kafka_group_t *g = opaque;
    int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
    if (!assign && err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
        snprintf(g->fatal, sizeof g->fatal, "rebalance failed: %s", rd_kafka_err2str(err));
        apply(g, 0, partitions);
        take_owned(g, partitions, 0);
        return;
    }
    if (partitions->cnt == 0 || g->closing) {
        if (apply(g, assign, partitions) == 0) {
            take_owned(g, partitions, assign);
        }
        return;
    }
    int kind = assign ? WR_KAFKA_GROUP_ASSIGNED
                      : rd_kafka_assignment_lost(rk) ? WR_KAFKA_GROUP_LOST
                                                     : WR_KAFKA_GROUP_REVOKED;
    push_event(g, kind, partitions);
}

static void on_readable(uv_poll_t *p, int status, int events)
{
    wr_kafka_group_t *g = p->data;
    char drain[64];
    while (read(g->pipe_fd[0], drain, sizeof drain) > 0) {
    }
    if (g->wake) {
        g->wake(g, g->wake_arg);
    }
}

static int is_fixed(const char *name)
{
    for (size_t i = 0; i < sizeof fixed_conf / sizeof fixed_conf[0]; i++) {
        if (strcmp(name, fixed_conf[i][0]) == 0) {
            return 1;
        }
    }
    return strcmp(name, "bootstrap.servers") == 0 || strcmp(name, "group.id") == 0 ||
           strcmp(name, "group.instance.id") == 0;
}

static int set_conf(rd_kafka_conf_t *c, const char *name, const char *value, wr_err_t *err)
{
    char errstr[512];
    if (rd_kafka_conf_set(c, name, value, errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
        return wr_err_set(err, WEIR_EINVAL, "property %s: %s", name, errstr);
    }
    return 0;
}

wr_kafka_group_t *wr_kafka_group_new(uv_loop_t *loop, const wr_kafka_group_opts_t *o,
                                     wr_err_t *err)
{
    if (loop == NULL || o == NULL || o->bootstrap_servers == NULL || o->group_id == NULL ||
        o->group_id[0] == '\0' || o->topics == NULL || o->ntopics < 1 || o->nconf < 0 ||
        o->nconf % 2 != 0 || (o->nconf > 0 && o->conf == NULL) ||
        (o->instance_id != NULL && o->instance_id[0] == '\0')) {
        wr_err_set(err, WEIR_EINVAL, "wr_kafka_group_new: bad arguments");
        return NULL;
    }
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    int rc = 0;
    for (int32_t i = 0; i < o->nconf && rc == 0; i += 2) {
        if (is_fixed(o->conf[i])) {
            rc = wr_err_set(err, WEIR_EINVAL, "property %s: set by weir (the group member "
                                              "needs its value)", o->conf[i]);
        } else {
            rc = set_conf(c, o->conf[i], o->conf[i + 1], err);
        }
    }
    rc = rc ? rc : set_conf(c, "bootstrap.servers", o->bootstrap_servers, err);
    rc = rc ? rc : set_conf(c, "group.id", o->group_id, err);
    if (rc == 0 && o->instance_id) {
        rc = set_conf(c, "group.instance.id", o->instance_id, err);
    }
    for (size_t i = 0; rc == 0 && i < sizeof fixed_conf / sizeof fixed_conf[0]; i++) {
        rc = set_conf(c, fixed_conf[i][0], fixed_conf[i][1], err);
    }
    if (rc) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    wr_kafka_group_t *g = wr_xcalloc(1, sizeof *g);
    g->loop = loop;
    g->pipe_fd[0] = g->pipe_fd[1] = -1;
    g->wake = o->wake;
    g->wake_arg = o->wake_arg;
    rd_kafka_conf_set_opaque(c, g);
    rd_kafka_conf_set_error_cb(c, on_error);
    rd_kafka_conf_set_log_cb(c, on_log);
    rd_kafka_conf_set_rebalance_cb(c, on_rebalance);
    char errstr[512];
    g->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    if (g->rk == NULL) {
        wr_err_set(err, WEIR_ESOURCE, "consumer: %s", errstr);
        wr_free(g);
        return NULL;
    }
    rd_kafka_set_log_queue(g->rk, NULL);
    rd_kafka_poll_set_consumer(g->rk); /* errors and logs come through the consumer queue */
    g->queue = rd_kafka_queue_get_consumer(g->rk);
    g->topics = wr_xcalloc((size_t)o->ntopics, sizeof *g->topics);
    g->ntopics = o->ntopics;
    for (int32_t i = 0; i < o->ntopics; i++) {
        g->topics[i] = wr_xstrdup(o->topics[i]);
    }
    return g;
}

int wr_kafka_group_start(wr_kafka_group_t *g, wr_err_t *err)
{
    if (g->poll_started) {
        return wr_err_set(err, WEIR_ESTATE, "wr_kafka_group_start: started already");
    }
    if (pipe(g->pipe_fd) != 0) {
        g->pipe_fd[0] = g->pipe_fd[1] = -1;
        return wr_err_set(err, WEIR_ESOURCE, "pipe: %s", strerror(errno));
    }
    for (int i = 0; i < 2; i++) {
        fcntl(g->pipe_fd[i], F_SETFL, fcntl(g->pipe_fd[i], F_GETFL) | O_NONBLOCK);
        fcntl(g->pipe_fd[i], F_SETFD, FD_CLOEXEC);
    }
    int rc = uv_poll_init(g->loop, &g->poll, g->pipe_fd[0]);
    if (rc < 0) {
        return wr_err_set(err, rc, "uv_poll_init: %s", uv_strerror(rc));
    }
    g->poll.data = g;
    g->poll_started = 1;
    uv_poll_start(&g->poll, UV_READABLE, on_readable);
    rd_kafka_queue_io_event_enable(g->queue, g->pipe_fd[1], "1", 1);
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(g->ntopics);
    for (int32_t i = 0; i < g->ntopics; i++) {
        rd_kafka_topic_partition_list_add(l, g->topics[i], RD_KAFKA_PARTITION_UA);
    }
    rd_kafka_resp_err_t e = rd_kafka_subscribe(g->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (e) {
        return wr_err_set(err, WEIR_ESOURCE, "subscribe: %s", rd_kafka_err2str(e));
    }
    return 0;
}

int wr_kafka_group_consume(wr_kafka_group_t *g, rd_kafka_message_t **out, int max)
{
    if (g->fatal[0]) {
        return WEIR_ESOURCE;
    }
    if (max <= 0) {
        return 0;
    }
    ssize_t got = rd_kafka_consume_batch_queue(g->queue, 0, out, (size_t)max);
    if (got < 0) {
        snprintf(g->fatal, sizeof g->fatal, "consume: %s",
                 rd_kafka_err2str(rd_kafka_last_error()));
        return WEIR_ESOURCE;
    }
    /* Keep what the caller may read now; a revoke served in this call already marks its
     * partitions giving, so messages of theirs fetched before it are dropped too (the
     * snapshot the caller takes is then at what it had read before this call). */
    int kept = 0;
    for (ssize_t i = 0; i < got; i++) {
        rd_kafka_message_t *m = out[i];
        int32_t k = m->err ? -1 : find_owned(g, rd_kafka_topic_name(m->rkt), m->partition);
        if (m->err || (k >= 0 && !g->owned[k].giving && !g->owned[k].restoring)) {
            out[kept++] = m;
        } else {
            rd_kafka_message_destroy(m);
        }
    }
    return g->fatal[0] ? WEIR_ESOURCE : kept;
}

int wr_kafka_group_pending(const wr_kafka_group_t *g)
{
    return rd_kafka_queue_length(g->queue) > 0;
}

const wr_kafka_group_event_t *wr_kafka_group_event(const wr_kafka_group_t *g)
{
    return g->head < g->nevents ? &g->events[g->head].pub : NULL;
}

static void set_restoring(wr_kafka_group_t *g, const rd_kafka_topic_partition_list_t *l, int on)
{
    for (int i = 0; i < l->cnt; i++) {
        int32_t k = find_owned(g, l->elems[i].topic, l->elems[i].partition);
        if (k >= 0) {
            g->owned[k].restoring = on;
        }
    }
}

/* A failed call on some of list's partitions (its per-partition errors): fatal. */
static int partitions_failed(wr_kafka_group_t *g, const char *what,
                             const rd_kafka_topic_partition_list_t *l)
{
    for (int i = 0; i < l->cnt; i++) {
        if (l->elems[i].err) {
            snprintf(g->fatal, sizeof g->fatal, "%s %s/%d: %s", what, l->elems[i].topic,
                     (int)l->elems[i].partition, rd_kafka_err2str(l->elems[i].err));
            return WEIR_ESOURCE;
        }
    }
    return 0;
}

int wr_kafka_group_accept(wr_kafka_group_t *g, const int64_t *offsets, wr_err_t *err)
{
    if (g->head >= g->nevents || g->events[g->head].pub.kind != WR_KAFKA_GROUP_ASSIGNED ||
        g->events[g->head].accepted) {
        return wr_err_set(err, WEIR_ESTATE, "wr_kafka_group_accept: no assignment waiting");
    }
    group_event_t *e = &g->events[g->head];
    for (int i = 0; i < e->list->cnt; i++) {
        e->list->elems[i].offset =
            offsets && offsets[i] >= 0 ? offsets[i] : RD_KAFKA_OFFSET_INVALID;
    }
    int rc = apply(g, 1, e->list);
    if (rc == 0) {
        take_owned(g, e->list, 1);
        set_restoring(g, e->list, 1);
        e->accepted = 1;
        rd_kafka_resp_err_t pe = rd_kafka_pause_partitions(g->rk, e->list);
        if (pe) {
            snprintf(g->fatal, sizeof g->fatal, "rd_kafka_pause_partitions: %s",
                     rd_kafka_err2str(pe));
            rc = WEIR_ESOURCE;
        } else {
            rc = partitions_failed(g, "pausing", e->list);
        }
    }
    return rc ? wr_err_set(err, rc, "%s", g->fatal) : 0;
}

/* An accepted assignment's finish: each partition whose offset differs from the one it was
 * accepted at is sought to it, then all are resumed; librdkafka drops what it fetched before
 * the seek (an older fetch version). */
static int start_accepted(wr_kafka_group_t *g, group_event_t *e, const int64_t *offsets)
{
    rd_kafka_topic_partition_list_t *seek = rd_kafka_topic_partition_list_new(e->list->cnt);
    for (int i = 0; i < e->list->cnt; i++) {
        if (offsets && offsets[i] >= 0 && offsets[i] != e->list->elems[i].offset) {
            rd_kafka_topic_partition_list_add(seek, e->list->elems[i].topic,
                                              e->list->elems[i].partition)->offset = offsets[i];
        }
    }
    if (seek->cnt > 0) {
        rd_kafka_error_t *se = rd_kafka_seek_partitions(g->rk, seek, 30000);
        if (se) {
            snprintf(g->fatal, sizeof g->fatal, "rd_kafka_seek_partitions: %s",
                     rd_kafka_error_string(se));
            rd_kafka_error_destroy(se);
            rd_kafka_topic_partition_list_destroy(seek);
            return WEIR_ESOURCE;
        }
        if (partitions_failed(g, "seeking", seek)) {
            rd_kafka_topic_partition_list_destroy(seek);
            return WEIR_ESOURCE;
        }
    }
    rd_kafka_topic_partition_list_destroy(seek);
    set_restoring(g, e->list, 0);
    rd_kafka_resp_err_t re = rd_kafka_resume_partitions(g->rk, e->list);
    if (re) {
        snprintf(g->fatal, sizeof g->fatal, "rd_kafka_resume_partitions: %s",
                 rd_kafka_err2str(re));
        return WEIR_ESOURCE;
    }
    return partitions_failed(g, "resuming", e->list);
}

int wr_kafka_group_finish(wr_kafka_group_t *g, const int64_t *offsets, wr_err_t *err)
{
    if (g->head >= g->nevents) {
        return wr_err_set(err, WEIR_ESTATE, "wr_kafka_group_finish: no event");
    }
    group_event_t *e = &g->events[g->head++];
    int assign = e->pub.kind == WR_KAFKA_GROUP_ASSIGNED;
    int rc;
    if (e->accepted) {
        rc = offsets == NULL && g->closing ? 0 : start_accepted(g, e, offsets);
    } else {
        for (int i = 0; assign && i < e->list->cnt; i++) {
            e->list->elems[i].offset =
                offsets && offsets[i] >= 0 ? offsets[i] : RD_KAFKA_OFFSET_INVALID;
        }
        rc = apply(g, assign, e->list);
        if (rc == 0) {
            take_owned(g, e->list, assign);
        }
    }
    rd_kafka_topic_partition_list_destroy(e->list);
    wr_free(e->parts);
    if (rc) {
        return wr_err_set(err, rc, "%s", g->fatal);
    }
    return 0;
}

const wr_kafka_group_part_t *wr_kafka_group_owned(const wr_kafka_group_t *g, int32_t *n)
{
    wr_kafka_group_t *m = (wr_kafka_group_t *)g; /* the view is a cache */
    m->owned_view = wr_xreallocarray(m->owned_view, (size_t)(g->nowned ? g->nowned : 1),
                                     sizeof *m->owned_view);
    for (int32_t i = 0; i < g->nowned; i++) {
        m->owned_view[i] = (wr_kafka_group_part_t){g->owned[i].topic, g->owned[i].partition};
    }
    *n = g->nowned;
    return m->owned_view;
}

rd_kafka_t *wr_kafka_group_rk(wr_kafka_group_t *g)
{
    return g->rk;
}

void wr_kafka_group_member_id(wr_kafka_group_t *g, char *buf, size_t size)
{
    char *id = rd_kafka_memberid(g->rk);
    snprintf(buf, size, "%s", id ? id : "");
    rd_kafka_mem_free(g->rk, id);
}

const char *wr_kafka_group_error(const wr_kafka_group_t *g)
{
    return g->fatal[0] ? g->fatal : NULL;
}

const char *wr_kafka_group_last_warning(const wr_kafka_group_t *g)
{
    return g->warning[0] ? g->warning : NULL;
}

static void free_group(wr_kafka_group_t *g)
{
    for (int32_t i = 0; i < g->nowned; i++) {
        wr_free(g->owned[i].topic);
    }
    for (int32_t i = 0; i < g->ntopics; i++) {
        wr_free(g->topics[i]);
    }
    for (int i = 0; i < 2; i++) {
        if (g->pipe_fd[i] >= 0) {
            close(g->pipe_fd[i]);
        }
    }
    wr_free(g->owned);
    wr_free(g->owned_view);
    wr_free(g->topics);
    wr_free(g->events);
    wr_free(g);
}

static void on_poll_closed(uv_handle_t *h)
{
    free_group(h->data);
}

void wr_kafka_group_close(wr_kafka_group_t *g, int how)
{
    if (g == NULL) {
        return;
    }
    rd_kafka_queue_io_event_enable(g->queue, -1, NULL, 0);
    g->closing = 1;
    if (how == WR_KAFKA_GROUP_VANISH) {
        for (int32_t i = g->head; i < g->nevents; i++) {
            rd_kafka_topic_partition_list_destroy(g->events[i].list);
            wr_free(g->events[i].parts);
        }
        g->head = g->nevents;
        rd_kafka_queue_destroy(g->queue);
        rd_kafka_destroy_flags(g->rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
    } else {
        while (g->head < g->nevents) {
            wr_err_t ignored;
            wr_kafka_group_finish(g, NULL, &ignored);
        }
        rd_kafka_consumer_close(g->rk); /* serves the last revoke through on_rebalance */
        rd_kafka_queue_destroy(g->queue);
        rd_kafka_destroy(g->rk);
    }
    if (g->poll_started) {
        uv_poll_stop(&g->poll);
        uv_close((uv_handle_t *)&g->poll, on_poll_closed);
    } else {
        free_group(g);
    }
}
