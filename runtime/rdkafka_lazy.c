/* SPDX-License-Identifier: MIT */
/* rdkafka_lazy.c: librdkafka, loaded on first use. weir is not linked against librdkafka: every
 * librdkafka function weir calls is defined here, with the prototype of <librdkafka/rdkafka.h>
 * (the compiler checks each against it), and forwards to the library's own, which the first
 * call of any of them loads with dlopen. A job without Kafka never maps librdkafka and what it
 * pulls in (OpenSSL, SASL, lz4, zstd): they were about half of weir's start-up (the loader's
 * relocations and the page faults of ~10 shared libraries, ~2 ms of CPU per process).
 * A librdkafka function called anywhere in runtime/ must have its line below (the link fails
 * with an undefined reference otherwise). The Check suites that call librdkafka themselves
 * link it as well; these definitions then forward to the same, already loaded, library. */
#include <dlfcn.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>

#include "rdkafka_lazy.h"
#include "lazy_fn.h"

#ifndef WEIR_RDKAFKA_SONAME
#define WEIR_RDKAFKA_SONAME "librdkafka.so.1"
#endif

const char *wr_rdkafka_soname(void)
{
    return WEIR_RDKAFKA_SONAME;
}

/* The library's definition of name. The library cannot be missing in a working install (it is
 * a dependency of weir's package), so a failure ends the process, saying what is missing. */
static void *symbol(const char *name)
{
    static void *lib;
    void *h = __atomic_load_n(&lib, __ATOMIC_ACQUIRE);
    if (h == NULL) {
        h = dlopen(WEIR_RDKAFKA_SONAME, RTLD_NOW | RTLD_LOCAL); /* reference counted: a race
                                                                   loads it once */
        if (h == NULL) {
            fprintf(stderr, "weir: Kafka needs %s, which cannot be loaded: %s\n",
                    WEIR_RDKAFKA_SONAME, dlerror());
            exit(1);
        }
        __atomic_store_n(&lib, h, __ATOMIC_RELEASE);
    }
    void *f = dlsym(h, name);
    if (f == NULL) {
        fprintf(stderr, "weir: %s has no %s (is it older than the librdkafka weir was built "
                        "with?)\n",
                WEIR_RDKAFKA_SONAME, name);
        exit(1);
    }
    return f;
}

typedef void (*dr_msg_cb_t)(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage, void *opaque);
typedef void (*error_cb_t)(rd_kafka_t *rk, int err, const char *reason, void *opaque);
typedef void (*log_cb_t)(const rd_kafka_t *rk, int level, const char *fac, const char *buf);
typedef void (*offset_commit_cb_t)(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                   rd_kafka_topic_partition_list_t *offsets, void *opaque);
typedef void (*rebalance_cb_t)(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                               rd_kafka_topic_partition_list_t *partitions, void *opaque);
typedef int (*stats_cb_t)(rd_kafka_t *rk, char *json, size_t json_len, void *opaque);

/* configuration and handles */
LAZY(rd_kafka_conf_t *, rd_kafka_conf_new, (void), ())
LAZY_VOID(rd_kafka_conf_destroy, (rd_kafka_conf_t * conf), (conf))
LAZY(rd_kafka_conf_res_t, rd_kafka_conf_set,
     (rd_kafka_conf_t * conf, const char *name, const char *value, char *errstr,
      size_t errstr_size),
     (conf, name, value, errstr, errstr_size))
LAZY_VOID(rd_kafka_conf_set_dr_msg_cb, (rd_kafka_conf_t * conf, dr_msg_cb_t cb), (conf, cb))
LAZY_VOID(rd_kafka_conf_set_error_cb, (rd_kafka_conf_t * conf, error_cb_t cb), (conf, cb))
LAZY_VOID(rd_kafka_conf_set_log_cb, (rd_kafka_conf_t * conf, log_cb_t cb), (conf, cb))
LAZY_VOID(rd_kafka_conf_set_offset_commit_cb, (rd_kafka_conf_t * conf, offset_commit_cb_t cb),
          (conf, cb))
LAZY_VOID(rd_kafka_conf_set_opaque, (rd_kafka_conf_t * conf, void *opaque), (conf, opaque))
LAZY(rd_kafka_t *, rd_kafka_new,
     (rd_kafka_type_t type, rd_kafka_conf_t *conf, char *errstr, size_t errstr_size),
     (type, conf, errstr, errstr_size))
LAZY_VOID(rd_kafka_destroy, (rd_kafka_t * rk), (rk))
LAZY(const char *, rd_kafka_err2str, (rd_kafka_resp_err_t err), (err))
LAZY(rd_kafka_resp_err_t, rd_kafka_fatal_error, (rd_kafka_t * rk, char *errstr, size_t size),
     (rk, errstr, size))
LAZY(rd_kafka_resp_err_t, rd_kafka_last_error, (void), ())
LAZY(int, rd_kafka_poll, (rd_kafka_t * rk, int timeout_ms), (rk, timeout_ms))
LAZY(int, rd_kafka_outq_len, (rd_kafka_t * rk), (rk))
LAZY(rd_kafka_resp_err_t, rd_kafka_flush, (rd_kafka_t * rk, int timeout_ms), (rk, timeout_ms))
LAZY(rd_kafka_resp_err_t, rd_kafka_metadata,
     (rd_kafka_t * rk, int all_topics, rd_kafka_topic_t *only_rkt,
      const struct rd_kafka_metadata **metadatap, int timeout_ms),
     (rk, all_topics, only_rkt, metadatap, timeout_ms))
LAZY_VOID(rd_kafka_metadata_destroy, (const struct rd_kafka_metadata *metadata), (metadata))
LAZY(rd_kafka_resp_err_t, rd_kafka_query_watermark_offsets,
     (rd_kafka_t * rk, const char *topic, int32_t partition, int64_t *low, int64_t *high,
      int timeout_ms),
     (rk, topic, partition, low, high, timeout_ms))

/* consuming */
LAZY(rd_kafka_resp_err_t, rd_kafka_assign,
     (rd_kafka_t * rk, const rd_kafka_topic_partition_list_t *partitions), (rk, partitions))
LAZY(rd_kafka_resp_err_t, rd_kafka_commit,
     (rd_kafka_t * rk, const rd_kafka_topic_partition_list_t *offsets, int async),
     (rk, offsets, async))
LAZY(rd_kafka_resp_err_t, rd_kafka_committed,
     (rd_kafka_t * rk, rd_kafka_topic_partition_list_t *partitions, int timeout_ms),
     (rk, partitions, timeout_ms))
LAZY(ssize_t, rd_kafka_consume_batch_queue,
     (rd_kafka_queue_t * rkqu, int timeout_ms, rd_kafka_message_t **rkmessages, size_t size),
     (rkqu, timeout_ms, rkmessages, size))
LAZY(rd_kafka_resp_err_t, rd_kafka_consumer_close, (rd_kafka_t * rk), (rk))
LAZY(rd_kafka_resp_err_t, rd_kafka_pause_partitions,
     (rd_kafka_t * rk, rd_kafka_topic_partition_list_t *partitions), (rk, partitions))
LAZY(rd_kafka_resp_err_t, rd_kafka_resume_partitions,
     (rd_kafka_t * rk, rd_kafka_topic_partition_list_t *partitions), (rk, partitions))
LAZY_VOID(rd_kafka_message_destroy, (rd_kafka_message_t * rkmessage), (rkmessage))
LAZY(const char *, rd_kafka_message_errstr, (const rd_kafka_message_t *rkmessage), (rkmessage))
LAZY(int64_t, rd_kafka_message_timestamp,
     (const rd_kafka_message_t *rkmessage, rd_kafka_timestamp_type_t *tstype),
     (rkmessage, tstype))

/* queues */
LAZY_VOID(rd_kafka_queue_destroy, (rd_kafka_queue_t * rkqu), (rkqu))
LAZY(rd_kafka_queue_t *, rd_kafka_queue_get_consumer, (rd_kafka_t * rk), (rk))
LAZY(rd_kafka_queue_t *, rd_kafka_queue_get_main, (rd_kafka_t * rk), (rk))
LAZY_VOID(rd_kafka_queue_io_event_enable,
          (rd_kafka_queue_t * rkqu, int fd, const void *payload, size_t size),
          (rkqu, fd, payload, size))
LAZY(size_t, rd_kafka_queue_length, (rd_kafka_queue_t * rkqu), (rkqu))
LAZY(rd_kafka_resp_err_t, rd_kafka_set_log_queue, (rd_kafka_t * rk, rd_kafka_queue_t *rkqu),
     (rk, rkqu))

/* topics and partition lists */
LAZY(rd_kafka_topic_t *, rd_kafka_topic_new,
     (rd_kafka_t * rk, const char *topic, rd_kafka_topic_conf_t *conf), (rk, topic, conf))
LAZY_VOID(rd_kafka_topic_destroy, (rd_kafka_topic_t * rkt), (rkt))
LAZY(const char *, rd_kafka_topic_name, (const rd_kafka_topic_t *rkt), (rkt))
LAZY(int, rd_kafka_produce,
     (rd_kafka_topic_t * rkt, int32_t partition, int msgflags, void *payload, size_t len,
      const void *key, size_t keylen, void *msg_opaque),
     (rkt, partition, msgflags, payload, len, key, keylen, msg_opaque))
LAZY(rd_kafka_topic_partition_list_t *, rd_kafka_topic_partition_list_new, (int size), (size))
LAZY_VOID(rd_kafka_topic_partition_list_destroy, (rd_kafka_topic_partition_list_t * list),
          (list))
LAZY(rd_kafka_topic_partition_t *, rd_kafka_topic_partition_list_add,
     (rd_kafka_topic_partition_list_t * list, const char *topic, int32_t partition),
     (list, topic, partition))

/* the mock cluster (weir kafka-mock) */
LAZY(rd_kafka_mock_cluster_t *, rd_kafka_mock_cluster_new, (rd_kafka_t * rk, int broker_cnt),
     (rk, broker_cnt))
LAZY_VOID(rd_kafka_mock_cluster_destroy, (rd_kafka_mock_cluster_t * mcluster), (mcluster))
LAZY(const char *, rd_kafka_mock_cluster_bootstraps, (const rd_kafka_mock_cluster_t *mcluster),
     (mcluster))
LAZY(rd_kafka_resp_err_t, rd_kafka_mock_topic_create,
     (rd_kafka_mock_cluster_t * mcluster, const char *topic, int partition_cnt,
      int replication_factor),
     (mcluster, topic, partition_cnt, replication_factor))
LAZY(rd_kafka_resp_err_t, rd_kafka_mock_broker_set_down,
     (rd_kafka_mock_cluster_t * mcluster, int32_t broker_id), (mcluster, broker_id))
LAZY(rd_kafka_resp_err_t, rd_kafka_mock_broker_set_up,
     (rd_kafka_mock_cluster_t * mcluster, int32_t broker_id), (mcluster, broker_id))

/* consumer groups, the state topic's producer and admin requests, errors (issue 19) */
LAZY_VOID(rd_kafka_AdminOptions_destroy, (rd_kafka_AdminOptions_t *options), (options))
LAZY(rd_kafka_AdminOptions_t *, rd_kafka_AdminOptions_new,
     (rd_kafka_t *rk, rd_kafka_admin_op_t for_api),
     (rk, for_api))
LAZY(rd_kafka_resp_err_t, rd_kafka_AdminOptions_set_operation_timeout,
     (rd_kafka_AdminOptions_t *options, int timeout_ms, char *errstr, size_t errstr_size),
     (options, timeout_ms, errstr, errstr_size))
LAZY(rd_kafka_resp_err_t, rd_kafka_AdminOptions_set_request_timeout,
     (rd_kafka_AdminOptions_t *options, int timeout_ms, char *errstr, size_t errstr_size),
     (options, timeout_ms, errstr, errstr_size))
LAZY_VOID(rd_kafka_CreateTopics,
          (rd_kafka_t *rk, rd_kafka_NewTopic_t **new_topics, size_t new_topic_cnt,
           const rd_kafka_AdminOptions_t *options, rd_kafka_queue_t *rkqu),
          (rk, new_topics, new_topic_cnt, options, rkqu))
LAZY(const rd_kafka_topic_result_t **, rd_kafka_CreateTopics_result_topics,
     (const rd_kafka_CreateTopics_result_t *result, size_t *cntp),
     (result, cntp))
LAZY_VOID(rd_kafka_NewTopic_destroy, (rd_kafka_NewTopic_t *new_topic), (new_topic))
LAZY(rd_kafka_NewTopic_t *, rd_kafka_NewTopic_new,
     (const char *topic, int num_partitions, int replication_factor, char *errstr,
      size_t errstr_size),
     (topic, num_partitions, replication_factor, errstr, errstr_size))
LAZY(rd_kafka_resp_err_t, rd_kafka_NewTopic_set_config,
     (rd_kafka_NewTopic_t *new_topic, const char *name, const char *value),
     (new_topic, name, value))
LAZY(int, rd_kafka_assignment_lost, (rd_kafka_t *rk), (rk))
LAZY(rd_kafka_conf_res_t, rd_kafka_conf_get,
     (const rd_kafka_conf_t *conf, const char *name, char *dest, size_t *dest_size),
     (conf, name, dest, dest_size))
LAZY(rd_kafka_message_t *, rd_kafka_consumer_poll,
     (rd_kafka_t *rk, int timeout_ms),
     (rk, timeout_ms))
LAZY_VOID(rd_kafka_destroy_flags, (rd_kafka_t *rk, int flags), (rk, flags))
LAZY_VOID(rd_kafka_error_destroy, (rd_kafka_error_t *error), (error))
LAZY(const char *, rd_kafka_error_string, (const rd_kafka_error_t *error), (error))
LAZY(const rd_kafka_CreateTopics_result_t *, rd_kafka_event_CreateTopics_result,
     (rd_kafka_event_t *rkev),
     (rkev))
LAZY_VOID(rd_kafka_event_destroy, (rd_kafka_event_t *rkev), (rkev))
LAZY(rd_kafka_resp_err_t, rd_kafka_event_error, (rd_kafka_event_t *rkev), (rkev))
LAZY(rd_kafka_error_t *, rd_kafka_incremental_assign,
     (rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions),
     (rk, partitions))
LAZY(rd_kafka_error_t *, rd_kafka_incremental_unassign,
     (rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *partitions),
     (rk, partitions))
LAZY_VOID(rd_kafka_mem_free, (rd_kafka_t *rk, void *ptr), (rk, ptr))
LAZY(char *, rd_kafka_memberid, (const rd_kafka_t *rk), (rk))
LAZY(rd_kafka_resp_err_t, rd_kafka_poll_set_consumer, (rd_kafka_t *rk), (rk))
LAZY(rd_kafka_resp_err_t, rd_kafka_purge, (rd_kafka_t *rk, int purge_flags), (rk, purge_flags))
LAZY(rd_kafka_queue_t *, rd_kafka_queue_new, (rd_kafka_t *rk), (rk))
LAZY(rd_kafka_event_t *, rd_kafka_queue_poll,
     (rd_kafka_queue_t *rkqu, int timeout_ms),
     (rkqu, timeout_ms))
LAZY(rd_kafka_error_t *, rd_kafka_seek_partitions,
     (rd_kafka_t *rk, rd_kafka_topic_partition_list_t *partitions, int timeout_ms),
     (rk, partitions, timeout_ms))
LAZY(rd_kafka_resp_err_t, rd_kafka_subscribe,
     (rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *topics),
     (rk, topics))
LAZY(rd_kafka_topic_partition_list_t *, rd_kafka_topic_partition_list_copy,
     (const rd_kafka_topic_partition_list_t *src),
     (src))
LAZY(rd_kafka_resp_err_t, rd_kafka_topic_result_error,
     (const rd_kafka_topic_result_t *topicres),
     (topicres))
LAZY(rd_kafka_error_t *, rd_kafka_produceva,
     (rd_kafka_t *rk, const rd_kafka_vu_t *vus, size_t cnt),
     (rk, vus, cnt))
LAZY(rd_kafka_resp_err_t, rd_kafka_error_code, (const rd_kafka_error_t *error), (error))
LAZY_VOID(rd_kafka_conf_set_rebalance_cb, (rd_kafka_conf_t * conf, rebalance_cb_t cb), (conf, cb))
LAZY_VOID(rd_kafka_conf_set_stats_cb, (rd_kafka_conf_t * conf, stats_cb_t cb), (conf, cb))
