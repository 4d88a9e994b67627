/* SPDX-License-Identifier: MIT */
/* kafka_sink.c: the Kafka sink (ds:kafka_sink), one librdkafka producer per sink operator.
 * Records are copied into librdkafka's queue (RD_KAFKA_MSG_F_COPY); delivery reports are
 * served by rd_kafka_poll(0) on the caller's thread at every send and at flush, so no
 * librdkafka thread reaches weir. The first failed delivery (after librdkafka's retries,
 * within message.timeout.ms) is kept: every later send and flush return it, and the job
 * fails. At-least-once: a checkpoint flushes (waits for every acknowledgement) first. A full
 * queue waits for deliveries (backpressure). librdkafka's memory is outside weir's account. */
#include "kafka_sink.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"

struct weir_kafka_sink {
    rd_kafka_t *rk;
    rd_kafka_topic_t *topic;
    char error[512]; /* the first failed delivery; "" = none */
    double delivered;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    weir_kafka_sink_t *k = opaque;
    if (m->err) {
        if (k->error[0] == '\0') {
            snprintf(k->error, sizeof k->error, "delivery to topic %s partition %d failed: %s",
                     rd_kafka_topic_name(m->rkt), (int)m->partition, rd_kafka_err2str(m->err));
        }
    } else {
        k->delivered += 1;
    }
}

/* Quiet: what matters reaches on_delivery (librdkafka retries the rest). */
static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
}

weir_kafka_sink_t *weir_kafka_sink_new(const char *const *conf, int32_t nconf, const char *topic,
                                       char *err, int32_t err_size)
{
    if (err == NULL || err_size < 2 || topic == NULL || (nconf > 0 && conf == NULL)) {
        return NULL;
    }
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    for (int32_t i = 0; i + 1 < nconf; i += 2) {
        char why[256];
        if (rd_kafka_conf_set(c, conf[i], conf[i + 1], why, sizeof why) != RD_KAFKA_CONF_OK) {
            snprintf(err, (size_t)err_size, "property %s: %s", conf[i], why);
            rd_kafka_conf_destroy(c);
            return NULL;
        }
    }
    weir_kafka_sink_t *k = wr_xcalloc(1, sizeof *k);
    rd_kafka_conf_set_opaque(c, k);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    rd_kafka_conf_set_log_cb(c, on_log);
    k->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, err, (size_t)err_size);
    if (!k->rk) {
        wr_free(k);
        return NULL;
    }
    k->topic = rd_kafka_topic_new(k->rk, topic, NULL);
    if (!k->topic) {
        snprintf(err, (size_t)err_size, "topic %s: %s", topic,
                 rd_kafka_err2str(rd_kafka_last_error()));
        rd_kafka_destroy(k->rk);
        wr_free(k);
        return NULL;
    }
    return k;
}

int weir_kafka_sink_send(weir_kafka_sink_t *k, const char *key, int32_t key_len,
                         const char *value, int32_t value_len, int32_t partition)
{
    if (k->error[0]) {
        return WEIR_ESOURCE;
    }
    for (;;) {
        int rc = rd_kafka_produce(k->topic, partition < 0 ? RD_KAFKA_PARTITION_UA : partition,
                                  RD_KAFKA_MSG_F_COPY, (void *)value, (size_t)value_len,
                                  key_len >= 0 ? key : NULL, key_len >= 0 ? (size_t)key_len : 0,
                                  NULL);
        if (rc == 0) {
            break;
        }
        rd_kafka_resp_err_t e = rd_kafka_last_error();
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            snprintf(k->error, sizeof k->error, "producing to topic %s%s: %s",
                     rd_kafka_topic_name(k->topic),
                     e == RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION ? " (the partition function's "
                                                                 "partition)"
                                                               : "",
                     rd_kafka_err2str(e));
            return WEIR_ESOURCE;
        }
        rd_kafka_poll(k->rk, 100); /* the queue is full: wait for deliveries */
        if (k->error[0]) {
            return WEIR_ESOURCE;
        }
    }
    rd_kafka_poll(k->rk, 0);
    return k->error[0] ? WEIR_ESOURCE : 0;
}

int weir_kafka_sink_send_ts(weir_kafka_sink_t *k, const char *key, int32_t key_len,
                            const char *value, int32_t value_len, int32_t partition,
                            double timestamp_ms)
{
    if (k->error[0]) {
        return WEIR_ESOURCE;
    }
    int64_t ts = timestamp_ms >= 0 && timestamp_ms < 9.0e15 ? (int64_t)timestamp_ms : 0;
    const void *kp = key_len >= 0 ? (const void *)key : NULL;
    size_t kn = key_len >= 0 ? (size_t)key_len : 0;
    for (;;) {
        /* produceva: a variadic producev cannot be forwarded (rdkafka_lazy.c) */
        rd_kafka_vu_t vu[6] = {
            {.vtype = RD_KAFKA_VTYPE_RKT, .u.rkt = k->topic},
            {.vtype = RD_KAFKA_VTYPE_PARTITION, .u.i32 = partition},
            {.vtype = RD_KAFKA_VTYPE_KEY, .u.mem = {(void *)kp, kn}},
            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {(void *)value, (size_t)value_len}},
            {.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY},
            {.vtype = RD_KAFKA_VTYPE_TIMESTAMP, .u.i64 = ts},
        };
        rd_kafka_error_t *pe = rd_kafka_produceva(k->rk, vu, 6);
        rd_kafka_resp_err_t e = pe ? rd_kafka_error_code(pe) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (pe) {
            rd_kafka_error_destroy(pe);
        }
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            break;
        }
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
            snprintf(k->error, sizeof k->error, "producing to topic %s partition %d: %s",
                     rd_kafka_topic_name(k->topic), (int)partition, rd_kafka_err2str(e));
            return WEIR_ESOURCE;
        }
        rd_kafka_poll(k->rk, 100); /* the queue is full: wait for deliveries */
        if (k->error[0]) {
            return WEIR_ESOURCE;
        }
    }
    rd_kafka_poll(k->rk, 0);
    return k->error[0] ? WEIR_ESOURCE : 0;
}

/* The sink's topic's partition count from the cluster's metadata (all topics asked for: a
 * request naming one may auto-create it), 0 when there is no such topic, or WEIR_ESOURCE. */
static int topic_partitions(weir_kafka_sink_t *k, int timeout_ms)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(k->rk, 1, NULL, &md, timeout_ms);
    if (e) {
        snprintf(k->error, sizeof k->error, "topic %s: the cluster's metadata: %s",
                 rd_kafka_topic_name(k->topic), rd_kafka_err2str(e));
        return WEIR_ESOURCE;
    }
    int n = 0;
    for (int i = 0; i < md->topic_cnt; i++) {
        const struct rd_kafka_metadata_topic *mt = &md->topics[i];
        if (strcmp(mt->topic, rd_kafka_topic_name(k->topic)) == 0 && !mt->err) {
            n = mt->partition_cnt;
        }
    }
    rd_kafka_metadata_destroy(md);
    return n;
}

int weir_kafka_sink_ensure_topic(weir_kafka_sink_t *k, int32_t partitions, double timeout_ms)
{
    int t = timeout_ms > 6e5 ? 600000 : timeout_ms < 1 ? 1 : (int)timeout_ms;
    int n = topic_partitions(k, t);
    if (n != 0) {
        return n; /* there, or the metadata's error */
    }
    char errstr[256];
    const char *name = rd_kafka_topic_name(k->topic);
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(name, partitions, -1, errstr, sizeof errstr);
    if (nt == NULL) {
        snprintf(k->error, sizeof k->error, "topic %.200s: %s", name, errstr);
        return WEIR_ESOURCE;
    }
    rd_kafka_queue_t *q = rd_kafka_queue_new(k->rk);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(k->rk, RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(ao, t, errstr, sizeof errstr);
    rd_kafka_AdminOptions_set_operation_timeout(ao, t, errstr, sizeof errstr);
    rd_kafka_CreateTopics(k->rk, &nt, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, t + 1000);
    int rc = 0; /* no answer (librdkafka's mock has no CreateTopics: the request times out) */
    if (ev != NULL) {
        rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t nr = 0;
        const rd_kafka_topic_result_t **tr =
            res ? rd_kafka_CreateTopics_result_topics(res, &nr) : NULL;
        if (!e && nr == 1) {
            e = rd_kafka_topic_result_error(tr[0]);
        }
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            rc = partitions; /* made (by this process or another member) */
        } else if (e != RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE &&
                   e != RD_KAFKA_RESP_ERR__TIMED_OUT) {
            snprintf(k->error, sizeof k->error, "topic %s: creating it: %s", name,
                     rd_kafka_err2str(e));
            rc = WEIR_ESOURCE;
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return rc;
}

int weir_kafka_sink_flush(weir_kafka_sink_t *k, double timeout_ms)
{
    rd_kafka_resp_err_t e = rd_kafka_flush(k->rk, timeout_ms > 2e9 ? 2000000000 : (int)timeout_ms);
    if (k->error[0]) {
        return WEIR_ESOURCE;
    }
    if (e) {
        snprintf(k->error, sizeof k->error,
                 "%d message(s) to topic %s still unacknowledged after %.0f ms: %s",
                 rd_kafka_outq_len(k->rk), rd_kafka_topic_name(k->topic), timeout_ms,
                 rd_kafka_err2str(e));
        return WEIR_ESOURCE;
    }
    return 0;
}

const char *weir_kafka_sink_error(const weir_kafka_sink_t *k)
{
    return k->error;
}

double weir_kafka_sink_delivered(const weir_kafka_sink_t *k)
{
    return k->delivered;
}

void weir_kafka_sink_free(weir_kafka_sink_t *k)
{
    if (k == NULL) {
        return;
    }
    rd_kafka_topic_destroy(k->topic);
    rd_kafka_destroy(k->rk); /* what is unflushed is dropped: flush first */
    wr_free(k);
}
