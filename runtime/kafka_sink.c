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
