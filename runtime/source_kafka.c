/* SPDX-License-Identifier: MIT */
/* source_kafka.c: the Kafka source (env:kafka_source), a librdkafka consumer that assigns every
 * partition of its topics itself (as Flink's KafkaSource: no group rebalancing; the group id is
 * only where offsets are committed). Set-up (weir_source_kafka, weir_kafka_offsets) asks the
 * cluster synchronously, before the job starts; from weir_rt_start on everything is driven by
 * the loop: librdkafka writes a byte into a pipe when its consumer or main queue goes non-empty
 * (rd_kafka_queue_io_event_enable), a uv_poll on the pipe wakes the loop, and fill takes
 * messages with rd_kafka_consume_batch_queue(timeout 0) and serves callbacks with
 * rd_kafka_poll(0), both on the loop's thread: librdkafka's threads never reach weir. Each
 * message is a LINE event (its value) whose index is its slot in the meta array (key,
 * partition, offset, timestamp) Lua reads; messages stay alive until the next poll begins.
 * Bounded: a partition with a stop offset is done when its next offset reaches it (it is then
 * paused and later messages of it dropped); the source ends when every partition is done.
 * librdkafka's memory is outside weir's account (it takes no allocator). */
#include <errno.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kafka_group.h"
#include "loop.h"
#include "mem.h"
#include "out.h"
#include "rt.h"
#include "source.h"

enum { KAFKA_CAP = 2 * WEIR_BATCH_MAX };

typedef struct kafka_part {
    char *topic; /* owned */
    int32_t partition;
    int64_t start; /* the first offset to read (concrete, >= 0) */
    int64_t stop;  /* -1: unbounded; else done when next >= stop */
    int64_t next;  /* the offset after the last message delivered */
    int64_t marked; /* next when the last checkpoint's snapshot read it (has_mark) */
    int has_mark;
    int done;
    int align_paused; /* weir_kafka_pause_partition: watermark alignment holds it */
    int rd_paused;    /* paused in librdkafka for alignment (a done one is paused for good) */
    int owned;        /* group mode: assigned to this member (else always 1) */
} kafka_part_t;

typedef struct kafka_source {
    wr_source_t base;
    rd_kafka_t *rk;
    rd_kafka_queue_t *queue; /* the consumer queue */
    rd_kafka_queue_t *main;  /* errors, logs, commit results */
    int pipe_fd[2];
    uv_poll_t poll;
    int poll_started;
    kafka_part_t *parts;
    int32_t nparts;
    int32_t nleft; /* partitions not done */
    int has_group;
    int64_t timeout_ms;
    rd_kafka_message_t *buf[KAFKA_CAP]; /* [0, given) handed out by this poll, [given, n) kept */
    int32_t given;
    int32_t n;
    int more; /* the last consume filled what it asked for: the queue may hold more */
    weir_kafka_meta_t meta[KAFKA_CAP];
    char last_error[256]; /* the last error_cb message printed (a repeat is not) */
    /* the partition slot of the last message (messages come in runs of one partition): its
     * topic handle, partition id and slot, so most messages need no find_part */
    const rd_kafka_topic_t *last_rkt;
    int32_t last_partition;
    int32_t last_slot;
    /* librdkafka's statistics (statistics.interval.ms; weir_kafka_stats): the newest JSON,
     * owned (rd_kafka_mem_free), and how many have come */
    char *stats;
    size_t stats_len;
    double stats_seq;
    /* partition discovery (weir_kafka_discover / weir_kafka_adopt): the source's topics and
     * patterns ("^..." names, POSIX extended regular expressions matching whole names); a
     * metadata request on libuv's thread pool (disc_work) finds the partitions not yet read,
     * with their first offsets, in found; after it, ready holds them until Lua adopts them */
    char **topics;
    regex_t *patterns; /* [ntopics]; only where topics[i][0] == '^' */
    int32_t ntopics;
    uv_work_t disc_work;
    int disc_busy;
    char **known; /* "topic\0" + partition, the partitions read when the work was queued */
    int32_t *known_id;
    int32_t nknown;
    kafka_part_t *found;
    int32_t nfound;
    kafka_part_t *ready;
    int32_t nready;
    double errors;
    /* group mode (weir_source_kafka_group, issue 19): the consumer group member whose
     * consumer is rk (borrowed: the member owns it); parts are the topics' partitions, those
     * the member owns marked owned, nleft counting the owned ones not done; rebalance events
     * wait in the member for Lua (weir_kafka_rebalance_event / _finish) */
    wr_kafka_group_t *group;
    int assigned_once; /* an assignment was finished: the source may end */
    int bounded;       /* every partition has a stop offset */
} kafka_source_t;

static kafka_source_t *kafka_of(const wr_source_t *s)
{
    return (kafka_source_t *)s;
}

/* The partition slot of (topic, partition), or -1. */
static int32_t find_part(const kafka_source_t *k, const char *topic, int32_t partition)
{
    for (int32_t i = 0; i < k->nparts; i++) {
        if (k->parts[i].partition == partition && strcmp(k->parts[i].topic, topic) == 0) {
            return i;
        }
    }
    return -1;
}

/* librdkafka's error callback (served by rd_kafka_poll on the loop's thread). A fatal error
 * fails the job; others (a broker down, all brokers down) are reported once each, and
 * librdkafka goes on reconnecting. */
static void on_error(rd_kafka_t *rk, int err, const char *reason, void *opaque)
{
    kafka_source_t *k = opaque;
    k->errors += 1;
    if (err == RD_KAFKA_RESP_ERR__FATAL) {
        char fatal[512];
        rd_kafka_fatal_error(rk, fatal, sizeof fatal);
        wr_loop_fail(k->base.rt, WEIR_ESOURCE, "%s: %s", k->base.describe, fatal);
        return;
    }
    if (strncmp(k->last_error, reason, sizeof k->last_error - 1) == 0) {
        return;
    }
    snprintf(k->last_error, sizeof k->last_error, "%s", reason);
    weir_out_flush();
    wr_out_clear_status();
    fprintf(stderr, "weir: %s: %s (librdkafka reconnects; the job goes on)\n", k->base.describe,
            reason);
}

/* The first message after an error was reported: said once, and the next error is reported
 * again (on_error says each error once until then). */
static void reading_again(kafka_source_t *k)
{
    weir_out_flush();
    wr_out_clear_status();
    fprintf(stderr, "weir: %s: messages arrive again (the last error was: %s)\n",
            k->base.describe, k->last_error);
    k->last_error[0] = '\0';
}

/* librdkafka's log lines (log.queue: served on the loop's thread): errors and worse only. */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)fac;
    (void)buf;
    (void)level; /* everything a job must know also reaches on_error */
}

/* librdkafka's statistics (served by rd_kafka_poll on the loop's thread): the newest is kept
 * for weir.kafka_health (the brokers' and partitions' state in --progress and the status). */
static int on_stats(rd_kafka_t *rk, char *json, size_t len, void *opaque)
{
    kafka_source_t *k = opaque;
    if (k->stats) {
        rd_kafka_mem_free(rk, k->stats);
    }
    k->stats = json;
    k->stats_len = len;
    k->stats_seq += 1;
    return 1; /* kept: freed by the next one or kafka_destroy */
}

static void on_commit(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets, void *opaque)
{
    kafka_source_t *k = opaque;
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
        weir_out_flush();
        wr_out_clear_status();
        fprintf(stderr, "weir: %s: committing offsets to Kafka failed: %s (the checkpoint "
                        "holds them; Kafka's copy is for monitoring)\n",
                k->base.describe, rd_kafka_err2str(err));
    }
}

static void on_readable(uv_poll_t *p, int status, int events)
{
    kafka_source_t *k = p->data;
    char drain[64];
    while (read(k->pipe_fd[0], drain, sizeof drain) > 0) {
    }
}

static void pause_part(kafka_source_t *k, kafka_part_t *p)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
    rd_kafka_pause_partitions(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
}

/* Watermark alignment: a partition is held while its source (base.paused) or it alone
 * (align_paused) is. Pausing drops what librdkafka prefetched for it, and fill drops the
 * messages of it weir took but did not deliver; so the resume seeks to the partition's next
 * offset first (waiting for the fetcher, so no message from the old position follows), and
 * nothing is lost or read twice. */
static void apply_pause(kafka_source_t *k, kafka_part_t *p)
{
    int want = (k->base.paused && !k->base.stopping) || p->align_paused;
    if (p->done || !p->owned || p->rd_paused == want || k->rk == NULL ||
        (k->queue == NULL && k->group == NULL)) {
        return;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = p->next;
    if (want) {
        rd_kafka_pause_partitions(k->rk, l);
    } else {
        rd_kafka_error_t *e = rd_kafka_seek_partitions(k->rk, l, (int)k->timeout_ms);
        if (e != NULL || l->elems[0].err) {
            wr_loop_fail(k->base.rt, WEIR_ESOURCE, "%s: topic %s partition %d: resuming at "
                         "offset %lld: %s", k->base.describe, p->topic, (int)p->partition,
                         (long long)p->next, e ? rd_kafka_error_string(e)
                                               : rd_kafka_err2str(l->elems[0].err));
            rd_kafka_error_destroy(e);
        }
        rd_kafka_resume_partitions(k->rk, l);
    }
    rd_kafka_topic_partition_list_destroy(l);
    p->rd_paused = want;
}

static void kafka_pause(wr_source_t *s, int on)
{
    (void)on;
    kafka_source_t *k = kafka_of(s);
    for (int32_t i = 0; i < k->nparts; i++) {
        apply_pause(k, &k->parts[i]);
    }
}

static void mark_done(kafka_source_t *k, kafka_part_t *p)
{
    if (!p->done) {
        p->done = 1;
        k->nleft--;
    }
}

/* Whether topic is one of the source's: named, or matched by one of its patterns. */
static int wanted_topic(const kafka_source_t *k, const char *topic)
{
    for (int32_t i = 0; i < k->ntopics; i++) {
        if (k->topics[i][0] == '^' ? regexec(&k->patterns[i], topic, 0, NULL, 0) == 0
                                   : strcmp(k->topics[i], topic) == 0) {
            return 1;
        }
    }
    return 0;
}

static int known_part(const kafka_source_t *k, const char *topic, int32_t id)
{
    for (int32_t i = 0; i < k->nknown; i++) {
        if (k->known_id[i] == id && strcmp(k->known[i], topic) == 0) {
            return 1;
        }
    }
    return 0;
}

/* On libuv's thread pool (no loop state, no Lua): the cluster's metadata, and for each
 * partition of a wanted topic that is not known, its first offset, into found. */
static void disc_run(uv_work_t *w)
{
    kafka_source_t *k = w->data;
    const struct rd_kafka_metadata *md = NULL;
    if (rd_kafka_metadata(k->rk, 1, NULL, &md, (int)k->timeout_ms) != 0) {
        return; /* tried again at the next interval; on_error reports what is down */
    }
    for (int t = 0; t < md->topic_cnt; t++) {
        const struct rd_kafka_metadata_topic *mt = &md->topics[t];
        if (mt->err || !wanted_topic(k, mt->topic)) {
            continue;
        }
        for (int j = 0; j < mt->partition_cnt; j++) {
            int32_t id = mt->partitions[j].id;
            int64_t low = 0;
            int64_t high = 0;
            if (known_part(k, mt->topic, id) ||
                rd_kafka_query_watermark_offsets(k->rk, mt->topic, id, &low, &high,
                                                 (int)k->timeout_ms) != 0) {
                continue;
            }
            k->found = wr_xreallocarray(k->found, (size_t)k->nfound + 1, sizeof *k->found);
            k->found[k->nfound++] = (kafka_part_t){.topic = wr_xstrdup(mt->topic),
                                                   .partition = id, .start = low, .stop = -1,
                                                   .next = low, .owned = 1};
        }
    }
    rd_kafka_metadata_destroy(md);
}

static void free_known(kafka_source_t *k)
{
    for (int32_t i = 0; i < k->nknown; i++) {
        wr_free(k->known[i]);
    }
    wr_free(k->known);
    wr_free(k->known_id);
    k->known = NULL;
    k->known_id = NULL;
    k->nknown = 0;
}

/* On the loop's thread: what the work found waits for weir_kafka_adopt. */
static void disc_done(uv_work_t *w, int status)
{
    kafka_source_t *k = w->data;
    (void)status;
    k->disc_busy = 0;
    free_known(k);
    for (int32_t i = 0; i < k->nfound; i++) {
        k->ready = wr_xreallocarray(k->ready, (size_t)k->nready + 1, sizeof *k->ready);
        k->ready[k->nready++] = k->found[i];
    }
    wr_free(k->found);
    k->found = NULL;
    k->nfound = 0;
}

static int group_open(kafka_source_t *k);

static int kafka_open(wr_source_t *s)
{
    kafka_source_t *k = kafka_of(s);
    weir_rt_t *rt = s->rt;
    if (pipe(k->pipe_fd) != 0) {
        k->pipe_fd[0] = k->pipe_fd[1] = -1;
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s: pipe: %s", s->describe, strerror(errno));
    }
    for (int i = 0; i < 2; i++) {
        fcntl(k->pipe_fd[i], F_SETFL, fcntl(k->pipe_fd[i], F_GETFL) | O_NONBLOCK);
        fcntl(k->pipe_fd[i], F_SETFD, FD_CLOEXEC);
    }
    if (k->group) {
        return group_open(k);
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k->nparts);
    for (int32_t i = 0; i < k->nparts; i++) {
        kafka_part_t *p = &k->parts[i];
        p->next = p->start;
        if (p->stop >= 0 && p->start >= p->stop) {
            mark_done(k, p);
            continue; /* nothing to read: not assigned */
        }
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = p->start;
    }
    rd_kafka_resp_err_t err = rd_kafka_assign(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s: assigning the partitions: %s",
                          s->describe, rd_kafka_err2str(err));
    }
    k->queue = rd_kafka_queue_get_consumer(k->rk);
    k->main = rd_kafka_queue_get_main(k->rk);
    rd_kafka_queue_io_event_enable(k->queue, k->pipe_fd[1], "1", 1);
    rd_kafka_queue_io_event_enable(k->main, k->pipe_fd[1], "1", 1);
    int rc = uv_poll_init(&rt->loop, &k->poll, k->pipe_fd[0]);
    if (rc < 0) {
        return wr_err_set(&rt->err, rc, "%s: uv_poll_init: %s", s->describe, uv_strerror(rc));
    }
    k->poll.data = k;
    k->poll_started = 1;
    uv_poll_start(&k->poll, UV_READABLE, on_readable);
    k->more = 1; /* the queue may have filled before io events were enabled */
    for (int32_t i = 0; i < k->nparts; i++) {
        apply_pause(k, &k->parts[i]); /* paused before the start (watermark alignment) */
    }
    return 0;
}

/* Messages of the previous poll are no longer referenced. */
static void kafka_begin(wr_source_t *s)
{
    kafka_source_t *k = kafka_of(s);
    if (k->given == 0) {
        return;
    }
    for (int32_t i = 0; i < k->given; i++) {
        rd_kafka_message_destroy(k->buf[i]);
    }
    memmove(k->buf, k->buf + k->given, (size_t)(k->n - k->given) * sizeof *k->buf);
    k->n -= k->given;
    k->given = 0;
}

/* A message that is an error (rkm->err): the end of a partition is nothing; an unknown topic
 * or partition fails the job; the rest are reported like on_error's. */
static void message_error(kafka_source_t *k, const rd_kafka_message_t *m)
{
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
        return;
    }
    const char *topic = m->rkt ? rd_kafka_topic_name(m->rkt) : "?";
    if (m->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC ||
        m->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART ||
        m->err == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ||
        m->err == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED ||
        m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE) {
        wr_loop_fail(k->base.rt, WEIR_ESOURCE, "%s: topic %s partition %d: %s",
                     k->base.describe, topic, (int)m->partition, rd_kafka_message_errstr(m));
        return;
    }
    on_error(k->rk, m->err, rd_kafka_message_errstr(m), k);
}

/* Takes messages from the queue into buf[n, ...) when buf has nothing waiting. */
static void refill(kafka_source_t *k)
{
    if (k->n > k->given) {
        return;
    }
    int32_t room = KAFKA_CAP - k->n;
    int32_t want = room < WEIR_BATCH_MAX ? room : WEIR_BATCH_MAX;
    if (want <= 0) {
        return;
    }
    ssize_t got;
    if (k->group) {
        got = wr_kafka_group_consume(k->group, k->buf + k->n, (int)want);
        if (got < 0) {
            wr_loop_fail(k->base.rt, WEIR_ESOURCE, "%s: group member: %s", k->base.describe,
                         wr_kafka_group_error(k->group));
            return;
        }
    } else {
        got = rd_kafka_consume_batch_queue(k->queue, 0, k->buf + k->n, (size_t)want);
    }
    if (got < 0) {
        wr_loop_fail(k->base.rt, WEIR_ESOURCE, "%s: consume: %s", k->base.describe,
                     rd_kafka_err2str(rd_kafka_last_error()));
        return;
    }
    k->more = got == want;
    k->n += (int32_t)got;
}

/* Whether the source is exhausted: every partition done; in group mode, once an assignment
 * was finished and no rebalance waits, every owned partition done (a bounded source only). */
static int group_exhausted(const kafka_source_t *k)
{
    if (k->group == NULL) {
        return k->nleft == 0;
    }
    return k->bounded && k->assigned_once && k->nleft == 0 &&
           wr_kafka_group_event(k->group) == NULL;
}

static void kafka_fill(wr_source_t *s)
{
    kafka_source_t *k = kafka_of(s);
    weir_rt_t *rt = s->rt;
    if (!s->stopping && k->group == NULL) {
        rd_kafka_poll(k->rk, 0); /* errors, commit results */
    }
    for (;;) {
        if (rt->fail.code != 0) {
            return;
        }
        if (group_exhausted(k) || s->stopping) {
            wr_source_emit_end(rt, s, s->stopping ? WEIR_END_STOPPED : WEIR_END_EXHAUSTED);
            return;
        }
        refill(k);
        if (k->n == k->given) {
            return; /* nothing waiting */
        }
        if (rt->n >= rt->max) {
            return;
        }
        int32_t i = k->given;
        rd_kafka_message_t *m = k->buf[i];
        if (m->err) {
            message_error(k, m);
            k->given++;
            continue;
        }
        int32_t pi = k->last_slot;
        if (m->rkt != k->last_rkt || m->partition != k->last_partition) {
            pi = find_part(k, rd_kafka_topic_name(m->rkt), m->partition);
            k->last_rkt = m->rkt;
            k->last_partition = m->partition;
            k->last_slot = pi;
        }
        kafka_part_t *p = pi >= 0 ? &k->parts[pi] : NULL;
        if (p == NULL || p->done || !p->owned || m->offset < p->next || p->rd_paused) {
            /* beyond its stop offset, not ours, or held by alignment (fetched again from
             * its next offset when it resumes): not delivered */
            k->given++;
            continue;
        }
        weir_event_t *e = wr_source_push(rt, s, WEIR_EV_LINE);
        if (e == NULL) {
            return;
        }
        k->given++;
        e->ptr = m->payload ? m->payload : "";
        e->len = m->len > INT32_MAX ? INT32_MAX : (int32_t)m->len;
        e->index = (double)i;
        e->flags = m->payload ? 0 : WEIR_LINE_KAFKA_NULL;
        rd_kafka_timestamp_type_t tt;
        int64_t ts = rd_kafka_message_timestamp(m, &tt);
        weir_kafka_meta_t *meta = &k->meta[i];
        meta->key = m->key;
        meta->key_len = m->key ? (int32_t)m->key_len : -1;
        meta->partition = pi;
        meta->offset = (double)m->offset;
        meta->timestamp = tt == RD_KAFKA_TIMESTAMP_NOT_AVAILABLE ? -INFINITY : (double)ts;
        s->stat[WEIR_STAT_RECORDS] += 1;
        s->stat[WEIR_STAT_BYTES] += (double)m->len;
        if (k->last_error[0] != '\0') {
            reading_again(k);
        }
        p->next = m->offset + 1;
        if (p->stop >= 0 && p->next >= p->stop) {
            mark_done(k, p);
            pause_part(k, p);
        }
    }
}

static int kafka_pending(const wr_source_t *s, int64_t now_ms)
{
    const kafka_source_t *k = kafka_of(s);
    if (k->n > k->given || group_exhausted(k)) {
        return 1;
    }
    if (k->group) {
        return wr_kafka_group_pending(k->group);
    }
    /* what librdkafka holds in the queue: its length, read without taking anything */
    return k->queue != NULL && rd_kafka_queue_length(k->queue) > 0;
}

static void group_close(kafka_source_t *k);
static int commit_parts(kafka_source_t *k, int32_t wait);

static void kafka_close(wr_source_t *s)
{
    kafka_source_t *k = kafka_of(s);
    if (k->poll_started) {
        uv_poll_stop(&k->poll);
        uv_close((uv_handle_t *)&k->poll, NULL);
    }
    group_close(k);
}

static void kafka_destroy(wr_source_t *s)
{
    kafka_source_t *k = kafka_of(s);
    /* discovery: the loop ran to its end before this, so no work is in flight */
    free_known(k);
    for (int32_t i = 0; i < k->nready; i++) {
        wr_free(k->ready[i].topic);
    }
    wr_free(k->ready);
    for (int32_t i = 0; i < k->ntopics; i++) {
        if (k->topics[i][0] == '^') {
            regfree(&k->patterns[i]);
        }
        wr_free(k->topics[i]);
    }
    wr_free(k->topics);
    wr_free(k->patterns);
    for (int32_t i = 0; i < k->n; i++) {
        rd_kafka_message_destroy(k->buf[i]);
    }
    if (k->queue) {
        rd_kafka_queue_io_event_enable(k->queue, -1, NULL, 0);
        rd_kafka_queue_destroy(k->queue);
    }
    if (k->main) {
        rd_kafka_queue_io_event_enable(k->main, -1, NULL, 0);
        rd_kafka_queue_destroy(k->main);
    }
    if (k->stats) {
        rd_kafka_mem_free(k->rk, k->stats);
    }
    group_close(k); /* not opened: the member goes here; its rk with it */
    if (k->rk) {
        rd_kafka_consumer_close(k->rk);
        rd_kafka_destroy(k->rk);
    }
    for (int i = 0; i < 2; i++) {
        if (k->pipe_fd[i] >= 0) {
            close(k->pipe_fd[i]);
        }
    }
    for (int32_t i = 0; i < k->nparts; i++) {
        wr_free(k->parts[i].topic);
    }
    wr_free(k->parts);
    wr_free(k);
}

/* The counters only: the offsets are weir_kafka_next_offset's, per partition. */
static void kafka_position(const wr_source_t *s, weir_source_position_t *pos)
{
    pos->offset = kafka_of(s)->base.stat[WEIR_STAT_RECORDS];
    pos->replayable = 1;
}

static int kafka_seek(wr_source_t *s, const weir_source_position_t *pos)
{
    return 0; /* weir_kafka_set_range sets each partition's offset */
}

static const wr_source_ops_t kafka_ops = {
    .open = kafka_open,
    .begin = kafka_begin,
    .fill = kafka_fill,
    .next_due = NULL,
    .pending = kafka_pending,
    .stop = NULL,
    .close = kafka_close,
    .destroy = kafka_destroy,
    .position = kafka_position,
    .seek = kafka_seek,
    .pause = kafka_pause,
};

/* The partitions of topics, from the cluster's metadata (within timeout_ms). All topics are
 * asked for: a request naming one may create it (auto-creation), and a missing topic is an
 * error here. */
static int load_partitions(kafka_source_t *k, const char *const *topics, int32_t ntopics)
{
    weir_rt_t *rt = k->base.rt;
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(k->rk, 1, NULL, &md, (int)k->timeout_ms);
    if (err) {
        if (err == RD_KAFKA_RESP_ERR__TRANSPORT || err == RD_KAFKA_RESP_ERR__TIMED_OUT) {
            return wr_err_set(&rt->err, WEIR_ESOURCE,
                              "no answer from the bootstrap servers within %lld ms (%s): is a "
                              "Kafka broker listening there?",
                              (long long)k->timeout_ms, rd_kafka_err2str(err));
        }
        return wr_err_set(&rt->err, WEIR_ESOURCE, "the cluster's metadata: %s",
                          rd_kafka_err2str(err));
    }
    int rc = 0;
    /* topics named "^..." are patterns: every topic they match, in metadata order (none is no
     * error: discovery may find some later) */
    for (int i = 0; i < md->topic_cnt && rc == 0; i++) {
        const struct rd_kafka_metadata_topic *mt = &md->topics[i];
        int match = 0;
        for (int32_t t = 0; t < ntopics; t++) {
            match |= topics[t][0] == '^' && regexec(&k->patterns[t], mt->topic, 0, NULL, 0) == 0;
        }
        for (int32_t t = 0; t < ntopics; t++) {
            match &= strcmp(topics[t], mt->topic) != 0; /* named too: read once, below */
        }
        if (!match || mt->err) {
            continue;
        }
        k->parts = wr_xreallocarray(k->parts, (size_t)(k->nparts + mt->partition_cnt),
                                    sizeof *k->parts);
        for (int32_t id = 0, found = 0; found < mt->partition_cnt && id <= 1000000; id++) {
            for (int j = 0; j < mt->partition_cnt; j++) {
                if (mt->partitions[j].id == id) {
                    k->parts[k->nparts++] = (kafka_part_t){
                        .topic = wr_xstrdup(mt->topic), .partition = id, .stop = -1,
                        .owned = 1};
                    found++;
                }
            }
        }
    }
    for (int32_t t = 0; t < ntopics && rc == 0; t++) {
        const struct rd_kafka_metadata_topic *mt = NULL;
        if (topics[t][0] == '^') {
            continue;
        }
        for (int i = 0; i < md->topic_cnt; i++) {
            if (strcmp(md->topics[i].topic, topics[t]) == 0) {
                mt = &md->topics[i];
            }
        }
        if (!mt || mt->err || mt->partition_cnt == 0) {
            rc = wr_err_set(&rt->err, WEIR_ESOURCE, "topic %s: %s", topics[t],
                            !mt || mt->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART
                                ? "no such topic"
                                : rd_kafka_err2str(mt->err));
            break;
        }
        /* partitions in id order (metadata may list them in any) */
        k->parts = wr_xreallocarray(k->parts, (size_t)(k->nparts + mt->partition_cnt),
                                    sizeof *k->parts);
        int32_t found = 0;
        for (int32_t id = 0; found < mt->partition_cnt && id <= 1000000; id++) {
            for (int j = 0; j < mt->partition_cnt; j++) {
                if (mt->partitions[j].id == id) {
                    k->parts[k->nparts++] = (kafka_part_t){
                        .topic = wr_xstrdup(topics[t]), .partition = id, .stop = -1,
                        .owned = 1};
                    found++;
                }
            }
        }
    }
    rd_kafka_metadata_destroy(md);
    k->nleft = k->nparts;
    return rc;
}

static int32_t add_source(weir_rt_t *rt, kafka_source_t *k, const char *describe,
                          const char *const *topics, int32_t ntopics);

int32_t weir_source_kafka(weir_rt_t *rt, const char *describe, const char *const *conf,
                          int32_t nconf, const char *const *topics, int32_t ntopics,
                          double timeout_ms)
{
    if (rt == NULL || describe == NULL || (nconf > 0 && conf == NULL) || topics == NULL ||
        ntopics < 1 || !(timeout_ms >= 1 && timeout_ms <= 3.6e6)) {
        if (rt) {
            wr_err_set(&rt->err, WEIR_EINVAL, "weir_source_kafka: bad arguments");
        }
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    char errstr[512];
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    int has_group = 0;
    int has_stats = 0;
    for (int32_t i = 0; i + 1 < nconf; i += 2) {
        if (rd_kafka_conf_set(c, conf[i], conf[i + 1], errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(c);
            return wr_err_set(&rt->err, WEIR_ESOURCE, "property %s: %s", conf[i], errstr);
        }
        has_group |= strcmp(conf[i], "group.id") == 0;
        has_stats |= strcmp(conf[i], "statistics.interval.ms") == 0;
    }
    /* librdkafka's assign needs a group handle: without group_id one of weir's own, never
     * joined or committed to */
    if (!has_group && rd_kafka_conf_set(c, "group.id", "weir-kafka-source", errstr,
                                        sizeof errstr) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(c);
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s", errstr);
    }
    kafka_source_t *k = wr_xcalloc(1, sizeof *k);
    k->pipe_fd[0] = k->pipe_fd[1] = -1;
    k->last_slot = -1;
    k->has_group = has_group;
    k->timeout_ms = (int64_t)timeout_ms;
    rd_kafka_conf_set_opaque(c, k);
    rd_kafka_conf_set_error_cb(c, on_error);
    rd_kafka_conf_set_log_cb(c, on_log);
    rd_kafka_conf_set_offset_commit_cb(c, on_commit);
    rd_kafka_conf_set_stats_cb(c, on_stats);
    /* the brokers' state for --progress and the status, once a second unless set */
    if (!has_stats && rd_kafka_conf_set(c, "statistics.interval.ms", "1000", errstr,
                                        sizeof errstr) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(c);
        wr_free(k);
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s", errstr);
    }
    static const char *const fixed[][2] = {
        {"enable.auto.commit", "false"},  /* offsets are committed after a checkpoint */
        {"enable.auto.offset.store", "false"},
        {"log.queue", "true"},            /* logs are served on the loop's thread */
        {"enable.partition.eof", "false"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (rd_kafka_conf_set(c, fixed[i][0], fixed[i][1], errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            rd_kafka_conf_destroy(c);
            wr_free(k);
            return wr_err_set(&rt->err, WEIR_ESOURCE, "%s", errstr);
        }
    }
    k->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    if (!k->rk) {
        wr_free(k);
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s", errstr);
    }
    rd_kafka_set_log_queue(k->rk, NULL);
    return add_source(rt, k, describe, topics, ntopics);
}

/* The rest of a source's making, its consumer k->rk made: the topics (patterns compiled),
 * their partitions from the cluster's metadata, and the source added to rt. */
static int32_t add_source(weir_rt_t *rt, kafka_source_t *k, const char *describe,
                          const char *const *topics, int32_t ntopics)
{
    k->base.ops = &kafka_ops;
    k->base.kind = "kafka_source";
    k->base.io = 1;
    k->base.fills_paused = 1; /* paused, it still serves callbacks; kafka_pause holds fetches */
    k->base.rt = rt;
    k->base.describe = (char *)describe; /* for messages until wr_source_add copies it */
    k->topics = wr_xcalloc((size_t)ntopics, sizeof *k->topics);
    k->patterns = wr_xcalloc((size_t)ntopics, sizeof *k->patterns);
    int rc = 0;
    for (int32_t t = 0; t < ntopics; t++) {
        k->topics[t] = wr_xstrdup(topics[t]);
        k->ntopics = t + 1;
        if (topics[t][0] == '^') {
            /* a whole-name match, as Flink's setTopicPattern (Pattern.matches) */
            size_t n = strlen(topics[t]);
            char *re = wr_xmalloc(n + 4);
            snprintf(re, n + 4, "^(%s)$", topics[t] + 1);
            int e = regcomp(&k->patterns[t], re, REG_EXTENDED | REG_NOSUB);
            wr_free(re);
            if (e != 0) {
                char why[128];
                regerror(e, &k->patterns[t], why, sizeof why);
                k->topics[t][0] = '\0'; /* nothing compiled to free */
                rc = wr_err_set(&rt->err, WEIR_ESOURCE, "topic pattern %s: %s", topics[t], why);
                break;
            }
        }
    }
    if (rc == 0) {
        rc = load_partitions(k, topics, ntopics);
    }
    k->base.describe = NULL;
    if (rc < 0) {
        wr_source_destroy(&k->base);
        return rc;
    }
    return wr_source_add(rt, &k->base, describe);
}

/* The Kafka source with that id, or NULL with the error set. */
static kafka_source_t *find_kafka(const weir_rt_t *rt, int32_t source)
{
    if (source < 0 || source >= rt->nsources || rt->sources[source]->ops != &kafka_ops) {
        return NULL;
    }
    return kafka_of(rt->sources[source]);
}

int32_t weir_kafka_partitions(const weir_rt_t *rt, int32_t source)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k ? k->nparts : WEIR_EINVAL;
}

const char *weir_kafka_topic(const weir_rt_t *rt, int32_t source, int32_t i)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k && i >= 0 && i < k->nparts ? k->parts[i].topic : NULL;
}

int32_t weir_kafka_partition_id(const weir_rt_t *rt, int32_t source, int32_t i)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k && i >= 0 && i < k->nparts ? k->parts[i].partition : WEIR_EINVAL;
}

int weir_kafka_offsets(weir_rt_t *rt, int32_t source, int32_t i, double *out)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || i < 0 || i >= k->nparts || !out) {
        return rt ? wr_err_set(&rt->err, WEIR_EINVAL, "weir_kafka_offsets: bad arguments")
                  : WEIR_EINVAL;
    }
    kafka_part_t *p = &k->parts[i];
    int64_t low = 0;
    int64_t high = 0;
    rd_kafka_resp_err_t err = rd_kafka_query_watermark_offsets(k->rk, p->topic, p->partition,
                                                               &low, &high, (int)k->timeout_ms);
    if (err) {
        return wr_err_set(&rt->err, WEIR_ESOURCE, "offsets of %s partition %d: %s", p->topic,
                          (int)p->partition, rd_kafka_err2str(err));
    }
    out[0] = (double)low;
    out[1] = (double)high;
    out[2] = -1;
    if (k->has_group) {
        rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(l, p->topic, p->partition);
        err = rd_kafka_committed(k->rk, l, (int)k->timeout_ms);
        if (!err && l->elems[0].err == 0 && l->elems[0].offset >= 0) {
            out[2] = (double)l->elems[0].offset;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (err) {
            return wr_err_set(&rt->err, WEIR_ESOURCE,
                              "the group's committed offset of %s partition %d: %s", p->topic, (int)p->partition,
                              rd_kafka_err2str(err));
        }
    }
    return 0;
}

int weir_kafka_set_range(weir_rt_t *rt, int32_t source, int32_t i, double start, double stop)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || i < 0 || i >= k->nparts || !(start >= 0 && start < 9.0e15) ||
        !(stop >= -1 && stop < 9.0e15)) {
        return rt ? wr_err_set(&rt->err, WEIR_EINVAL, "weir_kafka_set_range: bad arguments")
                  : WEIR_EINVAL;
    }
    if (rt->started) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_kafka_set_range: after start");
    }
    k->parts[i].start = (int64_t)start;
    k->parts[i].next = (int64_t)start;
    k->parts[i].stop = (int64_t)stop;
    return 0;
}

double weir_kafka_next_offset(const weir_rt_t *rt, int32_t source, int32_t i)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k && i >= 0 && i < k->nparts ? (double)k->parts[i].next : -1;
}

const weir_kafka_meta_t *weir_kafka_meta(const weir_rt_t *rt, int32_t source)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k ? k->meta : NULL;
}

int weir_kafka_mark(weir_rt_t *rt, int32_t source)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < k->nparts; i++) {
        k->parts[i].marked = k->parts[i].next;
        k->parts[i].has_mark = 1;
    }
    return 0;
}

static int commit_parts(kafka_source_t *k, int32_t wait);

int weir_kafka_commit(weir_rt_t *rt, int32_t source, int32_t wait)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k) {
        return WEIR_EINVAL;
    }
    return commit_parts(k, wait);
}

static int commit_parts(kafka_source_t *k, int32_t wait)
{
    weir_rt_t *rt = k->base.rt;
    if (!k->has_group || !rt->started) {
        return 0;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k->nparts);
    for (int32_t i = 0; i < k->nparts; i++) {
        if (!k->parts[i].owned) {
            continue; /* group mode: another member's */
        }
        rd_kafka_topic_partition_list_add(l, k->parts[i].topic, k->parts[i].partition)->offset =
            k->parts[i].has_mark ? k->parts[i].marked : k->parts[i].next;
    }
    if (l->cnt == 0) {
        rd_kafka_topic_partition_list_destroy(l);
        return 0;
    }
    /* async: on_commit reports; waiting: the last one, before the consumer closes */
    rd_kafka_resp_err_t err = rd_kafka_commit(k->rk, l, wait ? 0 : 1);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s: commit: %s", k->base.describe,
                          rd_kafka_err2str(err));
    }
    return 0;
}

const char *weir_kafka_stats(const weir_rt_t *rt, int32_t source, double *out)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || !out) {
        return NULL;
    }
    out[0] = k->stats_seq;
    out[1] = (double)k->stats_len;
    out[2] = k->errors;
    return k->stats;
}

const char *weir_kafka_last_error(const weir_rt_t *rt, int32_t source)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k ? k->last_error : NULL;
}

int weir_kafka_discover(weir_rt_t *rt, int32_t source)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k) {
        return WEIR_EINVAL;
    }
    if (k->disc_busy || !rt->started || k->base.stopping) {
        return 0;
    }
    int32_t n = k->nparts + k->nready;
    k->known = wr_xcalloc((size_t)n + 1, sizeof *k->known);
    k->known_id = wr_xcalloc((size_t)n + 1, sizeof *k->known_id);
    for (int32_t i = 0; i < n; i++) {
        const kafka_part_t *p = i < k->nparts ? &k->parts[i] : &k->ready[i - k->nparts];
        k->known[i] = wr_xstrdup(p->topic);
        k->known_id[i] = p->partition;
    }
    k->nknown = n;
    k->disc_work.data = k;
    int rc = uv_queue_work(&rt->loop, &k->disc_work, disc_run, disc_done);
    if (rc < 0) {
        free_known(k);
        return wr_err_set(&rt->err, rc, "%s: partition discovery: %s", k->base.describe,
                          uv_strerror(rc));
    }
    k->disc_busy = 1;
    return 0;
}

int32_t weir_kafka_adopt(weir_rt_t *rt, int32_t source)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k) {
        return WEIR_EINVAL;
    }
    if (k->nready == 0) {
        return k->nparts;
    }
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(k->nready);
    k->parts = wr_xreallocarray(k->parts, (size_t)(k->nparts + k->nready), sizeof *k->parts);
    int32_t first = k->nparts;
    for (int32_t i = 0; i < k->nready; i++) {
        k->parts[k->nparts++] = k->ready[i];
        k->nleft++;
        rd_kafka_topic_partition_list_add(l, k->ready[i].topic, k->ready[i].partition)->offset =
            k->ready[i].start;
    }
    k->nready = 0;
    rd_kafka_error_t *err = rd_kafka_incremental_assign(k->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
    if (err) {
        int rc = wr_err_set(&rt->err, WEIR_ESOURCE, "%s: assigning the new partitions: %s",
                            k->base.describe, rd_kafka_error_string(err));
        rd_kafka_error_destroy(err);
        return rc;
    }
    for (int32_t i = first; i < k->nparts; i++) {
        apply_pause(k, &k->parts[i]); /* a source paused by watermark alignment holds it too */
    }
    return k->nparts;
}

int weir_kafka_pause_partition(weir_rt_t *rt, int32_t source, int32_t i, int32_t on)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || i < 0 || i >= k->nparts) {
        return WEIR_EINVAL;
    }
    k->parts[i].align_paused = on != 0;
    if (rt->started && !k->base.stopping && !k->base.ended) {
        apply_pause(k, &k->parts[i]);
    }
    return 0;
}

/* Group mode (issue 19: docs/ARCHITECTURE.md, Scale-out) ---------------------------------- */

/* The member's subscription starts; no partition is owned until Lua finishes an assignment. */
static int group_open(kafka_source_t *k)
{
    weir_rt_t *rt = k->base.rt;
    k->bounded = 1;
    for (int32_t i = 0; i < k->nparts; i++) {
        kafka_part_t *p = &k->parts[i];
        p->next = p->start;
        p->owned = 0;
        k->bounded &= p->stop >= 0;
    }
    k->nleft = 0;
    wr_err_t err = {0};
    if (wr_kafka_group_start(k->group, &err) != 0) {
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s: joining the group: %s",
                          k->base.describe, err.msg);
    }
    k->more = 1;
    return 0;
}

/* Commits the owned partitions' next offsets (waiting), leaves the group (or, killed, does
 * not get here: the coordinator drops the member after its session timeout). */
static void group_close(kafka_source_t *k)
{
    if (k->group == NULL) {
        return;
    }
    if (k->base.rt->started) {
        if (commit_parts(k, 1) != 0) {
            weir_out_flush();
            wr_out_clear_status();
            fprintf(stderr, "weir: %s (at the end: the next owner of these partitions starts "
                            "from the offsets committed before)\n", k->base.rt->err.msg);
        }
    }
    for (int32_t i = 0; i < k->n; i++) {
        rd_kafka_message_destroy(k->buf[i]);
    }
    k->n = k->given = 0;
    wr_kafka_group_close(k->group, WR_KAFKA_GROUP_LEAVE);
    k->group = NULL;
    k->rk = NULL; /* the member's, destroyed with it */
}

int32_t weir_source_kafka_group(weir_rt_t *rt, const char *describe, const char *const *conf,
                                int32_t nconf, const char *const *topics, int32_t ntopics,
                                double timeout_ms, const char *group, const char *instance_id)
{
    if (rt == NULL || describe == NULL || (nconf > 0 && conf == NULL) || nconf % 2 != 0 ||
        topics == NULL || ntopics < 1 || !(timeout_ms >= 1 && timeout_ms <= 3.6e6) ||
        group == NULL || group[0] == '\0' || (instance_id != NULL && instance_id[0] == '\0')) {
        if (rt) {
            wr_err_set(&rt->err, WEIR_EINVAL, "weir_source_kafka_group: bad arguments");
        }
        return WEIR_EINVAL;
    }
    if (!wr_source_may_add(rt)) {
        return WEIR_ESTATE;
    }
    /* bootstrap.servers is an option of the member's; a group.id (the source's group_id) is
     * replaced by the group's name */
    const char *servers = NULL;
    const char **rest = wr_xcalloc((size_t)nconf + 1, sizeof *rest);
    int32_t nrest = 0;
    for (int32_t i = 0; i + 1 < nconf; i += 2) {
        if (strcmp(conf[i], "bootstrap.servers") == 0) {
            servers = conf[i + 1];
        } else if (strcmp(conf[i], "group.id") != 0) {
            rest[nrest++] = conf[i];
            rest[nrest++] = conf[i + 1];
        }
    }
    kafka_source_t *k = wr_xcalloc(1, sizeof *k);
    k->pipe_fd[0] = k->pipe_fd[1] = -1;
    k->last_slot = -1;
    k->has_group = 1;
    k->timeout_ms = (int64_t)timeout_ms;
    wr_kafka_group_opts_t o = {.bootstrap_servers = servers ? servers : "",
                               .group_id = group,
                               .instance_id = instance_id,
                               .topics = topics,
                               .ntopics = ntopics,
                               .conf = rest,
                               .nconf = nrest};
    wr_err_t err = {0};
    k->group = wr_kafka_group_new(&rt->loop, &o, &err);
    wr_free(rest);
    if (k->group == NULL) {
        wr_free(k);
        return wr_err_set(&rt->err, WEIR_ESOURCE, "group %s: %s", group, err.msg);
    }
    k->rk = wr_kafka_group_rk(k->group);
    return add_source(rt, k, describe, topics, ntopics);
}

int32_t weir_kafka_rebalance_event(weir_rt_t *rt, int32_t source, int32_t *kind,
                                   int32_t *slots, int32_t max)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || !kind || (max > 0 && !slots)) {
        return WEIR_EINVAL;
    }
    if (k->group == NULL) {
        return 0;
    }
    const char *fatal = wr_kafka_group_error(k->group);
    if (fatal) {
        return wr_err_set(&rt->err, WEIR_ESOURCE, "%s: group member: %s", k->base.describe,
                          fatal);
    }
    const wr_kafka_group_event_t *e = wr_kafka_group_event(k->group);
    if (e == NULL) {
        return 0;
    }
    *kind = e->kind;
    for (int32_t i = 0; i < e->n && i < max; i++) {
        slots[i] = find_part(k, e->parts[i].topic, e->parts[i].partition);
    }
    return e->n;
}

int weir_kafka_rebalance_accept(weir_rt_t *rt, int32_t source, const double *offsets)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || k->group == NULL) {
        return rt ? wr_err_set(&rt->err, WEIR_EINVAL, "weir_kafka_rebalance_accept: not a "
                                                       "group member")
                  : WEIR_EINVAL;
    }
    const wr_kafka_group_event_t *e = wr_kafka_group_event(k->group);
    int32_t n = e ? e->n : 0;
    int64_t *at = wr_xcalloc((size_t)(n > 0 ? n : 1), sizeof *at);
    for (int32_t i = 0; i < n; i++) {
        at[i] = offsets && offsets[i] >= 0 ? (int64_t)offsets[i] : -1;
    }
    wr_err_t err = {0};
    int rc = wr_kafka_group_accept(k->group, at, &err);
    wr_free(at);
    if (rc != 0) {
        return wr_err_set(&rt->err, err.code ? err.code : WEIR_ESOURCE, "group member: %s",
                          err.msg);
    }
    return 0;
}

int weir_kafka_rebalance_finish(weir_rt_t *rt, int32_t source, const double *offsets)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || k->group == NULL) {
        return rt ? wr_err_set(&rt->err, WEIR_EINVAL, "weir_kafka_rebalance_finish: not a "
                                                       "group member")
                  : WEIR_EINVAL;
    }
    const wr_kafka_group_event_t *e = wr_kafka_group_event(k->group);
    if (e == NULL) {
        return wr_err_set(&rt->err, WEIR_ESTATE, "weir_kafka_rebalance_finish: no event");
    }
    int kind = e->kind;
    int32_t n = e->n;
    int64_t *at = wr_xcalloc((size_t)(n > 0 ? n : 1), sizeof *at);
    int32_t *slot = wr_xcalloc((size_t)(n > 0 ? n : 1), sizeof *slot);
    rd_kafka_topic_partition_list_t *commit = rd_kafka_topic_partition_list_new(n > 0 ? n : 1);
    for (int32_t i = 0; i < n; i++) {
        slot[i] = find_part(k, e->parts[i].topic, e->parts[i].partition);
        at[i] = offsets && offsets[i] >= 0 ? (int64_t)offsets[i] : -1;
        if (kind == WR_KAFKA_GROUP_REVOKED && slot[i] >= 0) {
            /* the hand-off: where the next owner starts when it finds no snapshot */
            rd_kafka_topic_partition_list_add(commit, e->parts[i].topic, e->parts[i].partition)
                ->offset = k->parts[slot[i]].next;
        }
    }
    int rc = 0;
    if (commit->cnt > 0) {
        rd_kafka_resp_err_t cerr = rd_kafka_commit(k->rk, commit, 0);
        if (cerr) {
            weir_out_flush();
            wr_out_clear_status();
            fprintf(stderr, "weir: %s: committing the offsets of the revoked partitions: %s "
                            "(their next owner starts from its snapshot or starting_offsets)\n",
                    k->base.describe, rd_kafka_err2str(cerr));
        }
    }
    rd_kafka_topic_partition_list_destroy(commit);
    wr_err_t err = {0};
    if (wr_kafka_group_finish(k->group, at, &err) != 0) {
        rc = wr_err_set(&rt->err, WEIR_ESOURCE, "%s: group member: %s", k->base.describe,
                        err.msg);
    }
    for (int32_t i = 0; rc == 0 && i < n; i++) {
        if (slot[i] < 0) {
            continue; /* a partition the source did not know at its start: not read */
        }
        kafka_part_t *p = &k->parts[slot[i]];
        if (kind == WR_KAFKA_GROUP_ASSIGNED) {
            if (!p->owned) {
                p->owned = 1;
                p->done = 0;
                p->rd_paused = 0;
                p->next = at[i] >= 0 ? at[i] : p->start;
                p->has_mark = 0;
                k->nleft++;
                if (p->stop >= 0 && p->next >= p->stop) {
                    mark_done(k, p);
                    pause_part(k, p);
                } else {
                    apply_pause(k, p); /* held by alignment already */
                }
            }
        } else if (p->owned) {
            if (!p->done) {
                k->nleft--;
            }
            p->owned = 0;
            p->done = 0;
            p->rd_paused = 0;
        }
    }
    if (kind == WR_KAFKA_GROUP_ASSIGNED && rc == 0) {
        k->assigned_once = 1;
    }
    k->last_rkt = NULL; /* the slot cache: a partition's ownership changed */
    k->last_slot = -1;
    wr_free(at);
    wr_free(slot);
    return rc;
}

int weir_kafka_finish_part(weir_rt_t *rt, int32_t source, int32_t i)
{
    kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    if (!k || i < 0 || i >= k->nparts) {
        return WEIR_EINVAL;
    }
    kafka_part_t *p = &k->parts[i];
    p->stop = p->next;
    if (p->owned && !p->done) {
        mark_done(k, p);
        pause_part(k, p);
    }
    return 0;
}

int weir_kafka_owned(const weir_rt_t *rt, int32_t source, int32_t i)
{
    const kafka_source_t *k = rt ? find_kafka(rt, source) : NULL;
    return k && i >= 0 && i < k->nparts ? k->parts[i].owned : WEIR_EINVAL;
}
