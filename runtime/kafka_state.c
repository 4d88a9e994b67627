/* SPDX-License-Identifier: MIT */
/* kafka_state.c: the state topic's writer and reader. A snapshot's chunks are produced in
 * order to one state partition by an idempotent producer, so they land in order and once; a
 * delivery report per chunk counts the snapshot down, and the last one marks it acknowledged
 * (or failed). The reader assigns the state partitions it needs at their low offsets, reads to
 * the high offsets it asked for first, keeps per key only the latest chunk (what compaction
 * keeps), and assembles each slot's chunks: complete, one id, crcs right, or rejected. zlib's
 * crc32, as checkpoint files use. */
#include "kafka_state.h"

#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "mem.h"
#include "weir.h"

enum { MAGIC = 0x504e5357 /* "WSNP" little-endian */, VERSION = 1 };

/* Per input partition the writer knows of: which slot holds its latest acknowledged (or
 * restored) snapshot. */
typedef struct state_part {
    char *topic; /* owned */
    int32_t partition;
    int valid_slot; /* -1: none known */
    int has_acked;
    uint64_t acked_id;
} state_part_t;

/* One snapshot in flight: its chunks' delivery reports count it down. */
typedef struct snap {
    struct snap *next; /* the store's list of snapshots in flight */
    int32_t part;      /* index into parts */
    int slot;
    uint64_t id;
    int32_t remaining;
    int failed;
} snap_t;

struct wr_kafka_state {
    rd_kafka_t *producer;
    char *topic;
    int32_t nstate; /* the state topic's partitions */
    size_t chunk_bytes;
    int compacted;
    int64_t timeout_ms;
    char *bootstrap;
    char **conf; /* owned copies of the caller's properties, for the reader */
    int32_t nconf;
    state_part_t *parts;
    int32_t nparts;
    snap_t *inflight;
    char first_error[400]; /* the first failed delivery since the last flush */
};

/* ---- the chunk format ------------------------------------------------------------------- */

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) {
        p[i] = (uint8_t)(v >> (8 * i));
    }
}

static uint32_t get32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

static uint64_t get64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) {
        v = v << 8 | p[i];
    }
    return v;
}

/* crc32 over any length (zlib's takes a uInt at a time) */
static uint32_t crc_of(uint32_t crc, const void *p, size_t n)
{
    const Bytef *b = p;
    while (n > 0) {
        uInt step = n > (1u << 30) ? (1u << 30) : (uInt)n;
        crc = (uint32_t)crc32(crc, b, step);
        b += step;
        n -= step;
    }
    return crc;
}

/* The header (little-endian): magic, version (u16), slot (u8), 0 (u8), id (u64), blob length
 * (u64), chunk index (u32), chunk count (u32), the chunk's offset in the blob (u64), the
 * blob's crc32, and the chunk's crc32 (of the 44 bytes before it and the payload). */
typedef struct chunk_head {
    int slot;
    uint64_t id;
    uint64_t total;
    uint32_t index;
    uint32_t count;
    uint64_t at;
    uint32_t blob_crc;
} chunk_head_t;

static void write_head(uint8_t *h, const chunk_head_t *c, const void *payload, size_t n)
{
    put32(h, MAGIC);
    h[4] = VERSION;
    h[5] = 0;
    h[6] = (uint8_t)c->slot;
    h[7] = 0;
    put64(h + 8, c->id);
    put64(h + 16, c->total);
    put32(h + 24, c->index);
    put32(h + 28, c->count);
    put64(h + 32, c->at);
    put32(h + 40, c->blob_crc);
    put32(h + 44, crc_of(crc_of(0, h, 44), payload, n));
}

/* Parses and checks a chunk message: 0 and *c, or -1 with why. */
static int read_head(const uint8_t *v, size_t n, chunk_head_t *c, char *why, size_t size)
{
    if (n < WR_KAFKA_STATE_HEADER || get32(v) != MAGIC) {
        snprintf(why, size, "not a snapshot chunk (%zu bytes)", n);
        return -1;
    }
    if (v[4] != VERSION || v[5] != 0) {
        snprintf(why, size, "chunk format %d (this weir reads %d)", v[4] | v[5] << 8, VERSION);
        return -1;
    }
    size_t payload = n - WR_KAFKA_STATE_HEADER;
    if (get32(v + 44) != crc_of(crc_of(0, v, 44), v + WR_KAFKA_STATE_HEADER, payload)) {
        snprintf(why, size, "chunk crc mismatch");
        return -1;
    }
    *c = (chunk_head_t){.slot = v[6],
                        .id = get64(v + 8),
                        .total = get64(v + 16),
                        .index = get32(v + 24),
                        .count = get32(v + 28),
                        .at = get64(v + 32),
                        .blob_crc = get32(v + 40)};
    if (c->slot > 1 || c->count == 0 || c->index >= c->count || c->at > c->total ||
        payload > c->total - c->at) {
        snprintf(why, size, "chunk %u of %u: inconsistent header", c->index, c->count);
        return -1;
    }
    return 0;
}

int wr_kafka_state_encode(const char *topic, int32_t partition, int slot, uint64_t id,
                          const void *blob, size_t len, size_t chunk_bytes,
                          int (*emit)(const char *key, const void *value, size_t value_len,
                                      void *arg),
                          void *arg)
{
    if (chunk_bytes < 1 || (slot != 0 && slot != 1) || (len > 0 && blob == NULL)) {
        return WEIR_EINVAL;
    }
    size_t count = len == 0 ? 1 : (len + chunk_bytes - 1) / chunk_bytes;
    if (count > UINT32_MAX) {
        return WEIR_EINVAL;
    }
    chunk_head_t c = {.slot = slot, .id = id, .total = len, .count = (uint32_t)count,
                      .blob_crc = crc_of(0, blob, len)};
    size_t first = len < chunk_bytes ? len : chunk_bytes;
    uint8_t *value = wr_xmalloc(WR_KAFKA_STATE_HEADER + first);
    char key[300];
    int rc = 0;
    for (uint32_t i = 0; i < count && rc == 0; i++) {
        c.index = i;
        c.at = (uint64_t)i * chunk_bytes;
        size_t n = len - c.at < chunk_bytes ? len - c.at : chunk_bytes;
        if (n > 0) {
            memcpy(value + WR_KAFKA_STATE_HEADER, (const uint8_t *)blob + c.at, n);
        }
        write_head(value, &c, value + WR_KAFKA_STATE_HEADER, n);
        snprintf(key, sizeof key, "%s/%d/%d/%u", topic, (int)partition, slot, i);
        rc = emit(key, value, WR_KAFKA_STATE_HEADER + n, arg);
    }
    wr_free(value);
    return rc;
}

/* ---- the writer ------------------------------------------------------------------------- */

static int32_t find_part(const wr_kafka_state_t *s, const char *topic, int32_t partition)
{
    for (int32_t i = 0; i < s->nparts; i++) {
        if (s->parts[i].partition == partition && strcmp(s->parts[i].topic, topic) == 0) {
            return i;
        }
    }
    return -1;
}

static int32_t get_part(wr_kafka_state_t *s, const char *topic, int32_t partition)
{
    int32_t i = find_part(s, topic, partition);
    if (i >= 0) {
        return i;
    }
    s->parts = wr_xreallocarray(s->parts, (size_t)s->nparts + 1, sizeof *s->parts);
    s->parts[s->nparts] = (state_part_t){
        .topic = wr_xstrdup(topic), .partition = partition, .valid_slot = -1};
    return s->nparts++;
}

static void unlink_snap(wr_kafka_state_t *s, snap_t *sn)
{
    for (snap_t **p = &s->inflight; *p; p = &(*p)->next) {
        if (*p == sn) {
            *p = sn->next;
            return;
        }
    }
}

/* One of sn's chunks is done (or, from put, the hold on it): the last one settles it. */
static void count_down(wr_kafka_state_t *s, snap_t *sn)
{
    if (--sn->remaining > 0) {
        return;
    }
    state_part_t *p = &s->parts[sn->part];
    if (!sn->failed) {
        p->valid_slot = sn->slot;
        p->has_acked = 1;
        p->acked_id = sn->id;
    }
    unlink_snap(s, sn);
    wr_free(sn);
}

/* Delivery reports, served by rd_kafka_poll/flush on the caller's thread. */
static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    wr_kafka_state_t *s = opaque;
    snap_t *sn = m->_private;
    if (m->err) {
        sn->failed = 1;
        if (s->first_error[0] == '\0') {
            state_part_t *p = &s->parts[sn->part];
            snprintf(s->first_error, sizeof s->first_error,
                     "snapshot %llu of %s/%d: delivery to %s partition %d failed: %s",
                     (unsigned long long)sn->id, p->topic, (int)p->partition, s->topic,
                     (int)m->partition, rd_kafka_err2str(m->err));
        }
    }
    count_down(s, sn);
}

static int64_t now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

typedef struct put_ctx {
    wr_kafka_state_t *s;
    snap_t *sn;
    int32_t state_partition;
    int64_t deadline;
    wr_err_t *err;
} put_ctx_t;

static int produce_chunk(const char *key, const void *value, size_t n, void *arg)
{
    put_ctx_t *c = arg;
    for (;;) {
        /* rd_kafka_produceva, not the variadic producev: weir forwards librdkafka's functions
         * (rdkafka_lazy.c), which a variadic one cannot be */
        rd_kafka_vu_t vu[6] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = c->s->topic},
            {.vtype = RD_KAFKA_VTYPE_PARTITION, .u.i32 = c->state_partition},
            {.vtype = RD_KAFKA_VTYPE_KEY, .u.mem = {(void *)key, strlen(key)}},
            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {(void *)value, n}},
            {.vtype = RD_KAFKA_VTYPE_MSGFLAGS, .u.i = RD_KAFKA_MSG_F_COPY},
            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = c->sn},
        };
        rd_kafka_error_t *pe = rd_kafka_produceva(c->s->producer, vu, 6);
        rd_kafka_resp_err_t e = pe ? rd_kafka_error_code(pe) : RD_KAFKA_RESP_ERR_NO_ERROR;
        if (pe) {
            rd_kafka_error_destroy(pe);
        }
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            c->sn->remaining++;
            return 0;
        }
        if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL || now_ms() >= c->deadline) {
            return wr_err_set(c->err, WEIR_ESOURCE, "state topic %s: producing %s: %s",
                              c->s->topic, key, rd_kafka_err2str(e));
        }
        rd_kafka_poll(c->s->producer, 10); /* deliveries make room */
    }
}

int wr_kafka_state_put(wr_kafka_state_t *s, const char *topic, int32_t partition, uint64_t id,
                       const void *blob, size_t len, wr_err_t *err)
{
    if (topic == NULL || partition < 0 || (len > 0 && blob == NULL)) {
        return wr_err_set(err, WEIR_EINVAL, "wr_kafka_state_put: bad arguments");
    }
    int32_t pi = get_part(s, topic, partition);
    snap_t *sn = wr_xcalloc(1, sizeof *sn);
    sn->part = pi;
    sn->id = id;
    sn->slot = s->parts[pi].valid_slot == 0 ? 1 : 0; /* never over the last good one */
    sn->remaining = 1; /* held until every chunk is queued */
    sn->next = s->inflight;
    s->inflight = sn;
    put_ctx_t c = {.s = s, .sn = sn, .state_partition = partition % s->nstate,
                   .deadline = now_ms() + s->timeout_ms, .err = err};
    int rc = wr_kafka_state_encode(topic, partition, sn->slot, id, blob, len, s->chunk_bytes,
                                   produce_chunk, &c);
    if (rc) {
        sn->failed = 1; /* what was queued may still land: a torn snapshot the reader skips */
    }
    count_down(s, sn); /* the hold */
    rd_kafka_poll(s->producer, 0);
    return rc;
}

int wr_kafka_state_flush(wr_kafka_state_t *s, int64_t timeout_ms, wr_err_t *err)
{
    rd_kafka_resp_err_t e = rd_kafka_flush(s->producer, (int)timeout_ms);
    if (s->first_error[0]) {
        wr_err_set(err, WEIR_ESOURCE, "%s", s->first_error);
        s->first_error[0] = '\0';
        return WEIR_ESOURCE;
    }
    if (e) {
        return wr_err_set(err, WEIR_ESOURCE,
                          "state topic %s: %d message(s) not acknowledged within %lld ms (%s)",
                          s->topic, rd_kafka_outq_len(s->producer), (long long)timeout_ms,
                          rd_kafka_err2str(e));
    }
    return 0;
}

int wr_kafka_state_acked(const wr_kafka_state_t *s, const char *topic, int32_t partition,
                         uint64_t *id)
{
    int32_t i = find_part(s, topic, partition);
    if (i < 0 || !s->parts[i].has_acked) {
        return 0;
    }
    *id = s->parts[i].acked_id;
    return 1;
}

/* ---- opening ---------------------------------------------------------------------------- */

static int apply_conf(rd_kafka_conf_t *c, const wr_kafka_state_t *s, wr_err_t *err)
{
    char errstr[512];
    for (int32_t i = 0; i + 1 < s->nconf; i += 2) {
        if (rd_kafka_conf_set(c, s->conf[i], s->conf[i + 1], errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            return wr_err_set(err, WEIR_EINVAL, "property %s: %s", s->conf[i], errstr);
        }
    }
    if (rd_kafka_conf_set(c, "bootstrap.servers", s->bootstrap, errstr, sizeof errstr) !=
        RD_KAFKA_CONF_OK) {
        return wr_err_set(err, WEIR_EINVAL, "bootstrap.servers: %s", errstr);
    }
    return 0;
}

static void on_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf)
{
    (void)rk;
    (void)level;
    (void)fac;
    (void)buf; /* failures reach the caller through delivery reports and results */
}

/* CreateTopics with cleanup.policy=compact: 1 created, -1 it existed, 0 the cluster cannot
 * create topics; or a negative code. */
static int create_topic(wr_kafka_state_t *s, int32_t partitions, wr_err_t *err)
{
    char errstr[512];
    rd_kafka_NewTopic_t *nt =
        rd_kafka_NewTopic_new(s->topic, partitions, -1, errstr, sizeof errstr);
    if (nt == NULL) {
        return wr_err_set(err, WEIR_EINVAL, "state topic %s: %s", s->topic, errstr);
    }
    rd_kafka_NewTopic_set_config(nt, "cleanup.policy", "compact");
    rd_kafka_queue_t *q = rd_kafka_queue_new(s->producer);
    rd_kafka_AdminOptions_t *ao = rd_kafka_AdminOptions_new(s->producer,
                                                            RD_KAFKA_ADMIN_OP_CREATETOPICS);
    rd_kafka_AdminOptions_set_request_timeout(ao, (int)s->timeout_ms, errstr, sizeof errstr);
    rd_kafka_AdminOptions_set_operation_timeout(ao, (int)s->timeout_ms, errstr, sizeof errstr);
    rd_kafka_CreateTopics(s->producer, &nt, 1, ao, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, (int)s->timeout_ms + 1000);
    int rc = 0;
    if (ev == NULL) {
        rc = 0;
    } else {
        rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
        const rd_kafka_CreateTopics_result_t *res = rd_kafka_event_CreateTopics_result(ev);
        size_t n = 0;
        const rd_kafka_topic_result_t **tr = res ? rd_kafka_CreateTopics_result_topics(res, &n)
                                                 : NULL;
        if (!e && n == 1) {
            e = rd_kafka_topic_result_error(tr[0]);
        }
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
            rc = 1;
        } else if (e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) {
            rc = -1;
        } else if (e == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE ||
                   e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
            rc = 0; /* librdkafka's mock has no CreateTopics: the request times out */
        } else {
            rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s: creating it: %s", s->topic,
                            rd_kafka_err2str(e));
        }
        rd_kafka_event_destroy(ev);
    }
    rd_kafka_AdminOptions_destroy(ao);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
    return rc;
}

/* The state topic's partition count from the metadata (1, s->nstate set), 0 when there is no
 * such topic, or a negative code. All topics are asked for: a request naming one may create
 * it (auto-creation, with the cluster's default partitions and cleanup policy). */
static int load_partitions(wr_kafka_state_t *s, wr_err_t *err)
{
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t e = rd_kafka_metadata(s->producer, 1, NULL, &md, (int)s->timeout_ms);
    if (e) {
        return wr_err_set(err, WEIR_ESOURCE, "state topic %s: the cluster's metadata: %s",
                          s->topic, rd_kafka_err2str(e));
    }
    const struct rd_kafka_metadata_topic *mt = NULL;
    for (int i = 0; i < md->topic_cnt; i++) {
        if (strcmp(md->topics[i].topic, s->topic) == 0) {
            mt = &md->topics[i];
        }
    }
    int rc = 0;
    if (mt && mt->err && mt->err != RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s: %s", s->topic,
                        rd_kafka_err2str(mt->err));
    } else if (mt && !mt->err && mt->partition_cnt > 0) {
        s->nstate = mt->partition_cnt;
        rc = 1;
    }
    rd_kafka_metadata_destroy(md);
    return rc;
}

wr_kafka_state_t *wr_kafka_state_open(const wr_kafka_state_opts_t *o, wr_err_t *err)
{
    if (o == NULL || o->bootstrap_servers == NULL || o->topic == NULL || o->topic[0] == '\0' ||
        o->partitions < 1 || o->nconf < 0 || o->nconf % 2 != 0 ||
        (o->nconf > 0 && o->conf == NULL) || !(o->timeout_ms >= 1 && o->timeout_ms <= 3600000)) {
        wr_err_set(err, WEIR_EINVAL, "wr_kafka_state_open: bad arguments");
        return NULL;
    }
    wr_kafka_state_t *s = wr_xcalloc(1, sizeof *s);
    s->topic = wr_xstrdup(o->topic);
    s->bootstrap = wr_xstrdup(o->bootstrap_servers);
    s->timeout_ms = o->timeout_ms;
    s->conf = wr_xcalloc((size_t)(o->nconf > 0 ? o->nconf : 1), sizeof *s->conf);
    s->nconf = o->nconf;
    for (int32_t i = 0; i < o->nconf; i++) {
        s->conf[i] = wr_xstrdup(o->conf[i]);
    }
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char errstr[512];
    static const char *const fixed[][2] = {
        {"enable.idempotence", "true"}, /* acks=all, in order, once */
    };
    if (apply_conf(c, s, err) != 0) {
        rd_kafka_conf_destroy(c);
        wr_kafka_state_free(s);
        return NULL;
    }
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (rd_kafka_conf_set(c, fixed[i][0], fixed[i][1], errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            wr_err_set(err, WEIR_EINVAL, "property %s: %s", fixed[i][0], errstr);
            rd_kafka_conf_destroy(c);
            wr_kafka_state_free(s);
            return NULL;
        }
    }
    char mmb[32];
    size_t mmb_len = sizeof mmb;
    long max_msg = 1000000;
    if (rd_kafka_conf_get(c, "message.max.bytes", mmb, &mmb_len) == RD_KAFKA_CONF_OK) {
        max_msg = strtol(mmb, NULL, 10);
    }
    long room = max_msg - WR_KAFKA_STATE_HEADER - WR_KAFKA_STATE_SLACK;
    s->chunk_bytes = room > 64 ? (size_t)room : 64;
    rd_kafka_conf_set_opaque(c, s);
    rd_kafka_conf_set_dr_msg_cb(c, on_delivery);
    rd_kafka_conf_set_log_cb(c, on_log);
    s->producer = rd_kafka_new(RD_KAFKA_PRODUCER, c, errstr, sizeof errstr);
    if (s->producer == NULL) {
        wr_err_set(err, WEIR_ESOURCE, "state topic %s: producer: %s", o->topic, errstr);
        wr_kafka_state_free(s);
        return NULL;
    }
    int rc = load_partitions(s, err);
    s->compacted = -1; /* it existed: its cleanup policy is the cluster's business */
    if (rc == 0) {
        rc = create_topic(s, o->partitions, err);
        s->compacted = rc;
        if (rc == 0 || rc == -1) {
            rc = load_partitions(s, err); /* made, by us or meanwhile by another weir */
            if (rc == 0) {
                rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s: no such topic, and the "
                                "cluster cannot create topics: create it with "
                                "cleanup.policy=compact", s->topic);
            }
        } else if (rc == 1) {
            rc = load_partitions(s, err);
        }
    }
    if (rc < 0 || rc == 0) {
        wr_kafka_state_free(s);
        return NULL;
    }
    return s;
}

int wr_kafka_state_compacted(const wr_kafka_state_t *s)
{
    return s->compacted;
}

int32_t wr_kafka_state_partitions(const wr_kafka_state_t *s)
{
    return s->nstate;
}

size_t wr_kafka_state_chunk_bytes(const wr_kafka_state_t *s)
{
    return s->chunk_bytes;
}

/* ---- the reader ------------------------------------------------------------------------- */

/* The latest chunk seen under one key of a wanted partition's slot. */
typedef struct chunk {
    uint8_t *value; /* owned: header and payload */
    size_t len;
    int64_t offset;
} chunk_t;

typedef struct slot_chunks {
    chunk_t *c;
    uint32_t n; /* room in c (by chunk index) */
    int64_t last; /* the highest offset of a chunk kept, -1 none */
} slot_chunks_t;

typedef struct reading {
    slot_chunks_t slot[2];
    int64_t bad_offset; /* the latest message under its keys that was no chunk */
    char bad_why[160];
} reading_t;

static void keep_chunk(slot_chunks_t *sc, uint32_t index, const rd_kafka_message_t *m)
{
    if (index >= sc->n) {
        uint32_t n = index + 1 > 2 * sc->n ? index + 1 : 2 * sc->n;
        sc->c = wr_xreallocarray(sc->c, n, sizeof *sc->c);
        memset(sc->c + sc->n, 0, (n - sc->n) * sizeof *sc->c);
        sc->n = n;
    }
    chunk_t *c = &sc->c[index];
    wr_free(c->value);
    c->value = (uint8_t *)wr_xmemdup(m->payload, m->len);
    c->len = m->len;
    c->offset = m->offset;
    if (m->offset > sc->last) {
        sc->last = m->offset;
    }
}

/* Parses a key `TOPIC/PARTITION/SLOT/CHUNK`: the slot and chunk, with the topic's length
 * (the part before the partition); -1 when it is not such a key. */
static int parse_key(const char *k, size_t n, size_t *topic_len, int32_t *partition, int *slot,
                     uint32_t *index)
{
    char buf[320];
    if (n == 0 || n >= sizeof buf) {
        return -1;
    }
    memcpy(buf, k, n);
    buf[n] = '\0';
    char *cut[3];
    for (int i = 2; i >= 0; i--) {
        cut[i] = strrchr(buf, '/');
        if (cut[i] == NULL || cut[i] == buf) {
            return -1;
        }
        *cut[i] = '\0';
    }
    char *end;
    long p = strtol(cut[0] + 1, &end, 10);
    if (*end || end == cut[0] + 1 || p < 0 || p > INT32_MAX) {
        return -1;
    }
    long sl = strtol(cut[1] + 1, &end, 10);
    if (*end || end == cut[1] + 1 || (sl != 0 && sl != 1)) {
        return -1;
    }
    unsigned long ix = strtoul(cut[2] + 1, &end, 10);
    if (*end || end == cut[2] + 1 || ix > UINT32_MAX) {
        return -1;
    }
    *topic_len = (size_t)(cut[0] - buf);
    *partition = (int32_t)p;
    *slot = (int)sl;
    *index = (uint32_t)ix;
    return 0;
}

static int32_t find_want(const wr_kafka_state_snapshot_t *want, int32_t n, const char *topic,
                         size_t topic_len, int32_t partition)
{
    for (int32_t i = 0; i < n; i++) {
        if (want[i].partition == partition && strlen(want[i].topic) == topic_len &&
            memcmp(want[i].topic, topic, topic_len) == 0) {
            return i;
        }
    }
    return -1;
}

/* Assembles a slot: 0 and the blob, or -1 with why (*id set when chunk 0 was sound). */
static int assemble(const slot_chunks_t *sc, uint64_t *id, void **blob, size_t *len, char *why,
                    size_t size)
{
    if (sc->n == 0 || sc->c[0].value == NULL) {
        snprintf(why, size, "its first chunk is missing");
        return -1;
    }
    chunk_head_t h0;
    if (read_head(sc->c[0].value, sc->c[0].len, &h0, why, size) != 0) {
        return -1;
    }
    *id = h0.id;
    if (h0.total > SIZE_MAX - 1) {
        snprintf(why, size, "snapshot %llu: too large", (unsigned long long)h0.id);
        return -1;
    }
    uint8_t *out = wr_xmalloc((size_t)h0.total + 1);
    size_t got = 0;
    uint32_t crc = 0;
    for (uint32_t i = 0; i < h0.count; i++) {
        chunk_head_t h;
        char w[120];
        if (i >= sc->n || sc->c[i].value == NULL) {
            snprintf(why, size, "snapshot %llu: chunk %u of %u is missing (a write that did "
                     "not finish)", (unsigned long long)h0.id, i, h0.count);
            wr_free(out);
            return -1;
        }
        if (read_head(sc->c[i].value, sc->c[i].len, &h, w, sizeof w) != 0) {
            snprintf(why, size, "snapshot %llu: chunk %u of %u: %s", (unsigned long long)h0.id,
                     i, h0.count, w);
            wr_free(out);
            return -1;
        }
        if (h.id != h0.id || h.count != h0.count || h.total != h0.total ||
            h.blob_crc != h0.blob_crc || h.index != i || h.at != got) {
            snprintf(why, size, "snapshot %llu: chunk %u of %u is missing (a write that did "
                     "not finish; the key holds snapshot %llu's)", (unsigned long long)h0.id, i,
                     h0.count, (unsigned long long)h.id);
            wr_free(out);
            return -1;
        }
        size_t n = sc->c[i].len - WR_KAFKA_STATE_HEADER;
        memcpy(out + got, sc->c[i].value + WR_KAFKA_STATE_HEADER, n);
        crc = crc_of(crc, out + got, n);
        got += n;
    }
    if (got != h0.total || crc != h0.blob_crc) {
        snprintf(why, size, "snapshot %llu: %s", (unsigned long long)h0.id,
                 got != h0.total ? "its chunks do not add up to its size" : "crc mismatch");
        wr_free(out);
        return -1;
    }
    out[got] = '\0';
    *blob = out;
    *len = got;
    return 0;
}

/* The wanted partition's result from its two slots: the latest complete one wins; a broken
 * one written after it is counted. */
static void choose(wr_kafka_state_snapshot_t *w, reading_t *r, state_part_t *p)
{
    int order[2] = {0, 1};
    if (r->slot[1].last > r->slot[0].last) {
        order[0] = 1;
        order[1] = 0;
    }
    for (int k = 0; k < 2; k++) {
        slot_chunks_t *sc = &r->slot[order[k]];
        if (sc->last < 0) {
            continue;
        }
        uint64_t id = 0;
        char why[sizeof w->why];
        if (assemble(sc, &id, &w->blob, &w->len, why, sizeof why) == 0) {
            w->found = 1;
            w->id = id;
            p->valid_slot = order[k];
            break;
        }
        w->rejected++;
        if (w->rejected == 1) {
            snprintf(w->why, sizeof w->why, "%s", why);
        }
    }
    if (!w->found && r->bad_offset >= 0 && w->rejected == 0) {
        w->rejected = 1;
        snprintf(w->why, sizeof w->why, "%s", r->bad_why);
    }
}

typedef struct spart {
    int32_t id;
    int64_t high; /* read to here (exclusive) */
    int done;
} spart_t;

static rd_kafka_t *new_reader(wr_kafka_state_t *s, wr_err_t *err)
{
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    char errstr[512];
    if (apply_conf(c, s, err) != 0) {
        rd_kafka_conf_destroy(c);
        return NULL;
    }
    static const char *const fixed[][2] = {
        {"group.id", "weir-state-reader"}, /* assign needs one; never joined or committed */
        {"enable.auto.commit", "false"},
        {"enable.partition.eof", "true"},
        {"auto.offset.reset", "earliest"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        if (rd_kafka_conf_set(c, fixed[i][0], fixed[i][1], errstr, sizeof errstr) !=
            RD_KAFKA_CONF_OK) {
            wr_err_set(err, WEIR_EINVAL, "property %s: %s", fixed[i][0], errstr);
            rd_kafka_conf_destroy(c);
            return NULL;
        }
    }
    rd_kafka_conf_set_log_cb(c, on_log);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, errstr, sizeof errstr);
    if (rk == NULL) {
        wr_err_set(err, WEIR_ESOURCE, "state topic %s: reader: %s", s->topic, errstr);
    }
    return rk;
}

static int32_t spart_of(spart_t *sp, int32_t nsp, int32_t id)
{
    for (int32_t i = 0; i < nsp; i++) {
        if (sp[i].id == id) {
            return i;
        }
    }
    return -1;
}

/* Reads the state partitions sp[0, nsp) to their high offsets into r (by wanted index). */
static int read_partitions(wr_kafka_state_t *s, rd_kafka_t *rk, spart_t *sp, int32_t nsp,
                           wr_kafka_state_snapshot_t *want, int32_t n, reading_t *r,
                           wr_err_t *err)
{
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(nsp);
    int32_t left = 0;
    for (int32_t i = 0; i < nsp; i++) {
        int64_t low = 0;
        int64_t high = 0;
        rd_kafka_resp_err_t e = rd_kafka_query_watermark_offsets(rk, s->topic, sp[i].id, &low,
                                                                 &high, (int)s->timeout_ms);
        if (e) {
            rd_kafka_topic_partition_list_destroy(l);
            return wr_err_set(err, WEIR_ESOURCE, "state topic %s partition %d: offsets: %s",
                              s->topic, (int)sp[i].id, rd_kafka_err2str(e));
        }
        sp[i].high = high;
        sp[i].done = low >= high;
        if (!sp[i].done) {
            rd_kafka_topic_partition_list_add(l, s->topic, sp[i].id)->offset = low;
            left++;
        }
    }
    int rc = 0;
    if (left > 0) {
        rd_kafka_resp_err_t e = rd_kafka_assign(rk, l);
        if (e) {
            rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s: assign: %s", s->topic,
                            rd_kafka_err2str(e));
        }
    }
    rd_kafka_topic_partition_list_destroy(l);
    int64_t deadline = now_ms() + s->timeout_ms;
    while (rc == 0 && left > 0) {
        int64_t wait = deadline - now_ms();
        if (wait <= 0) {
            rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s: not read to its end within "
                            "%lld ms", s->topic, (long long)s->timeout_ms);
            break;
        }
        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, (int)(wait < 100 ? wait : 100));
        if (m == NULL) {
            continue;
        }
        int32_t k = spart_of(sp, nsp, m->partition);
        int64_t next = m->offset + (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF ? 0 : 1);
        if (m->err && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rc = wr_err_set(err, WEIR_ESOURCE, "state topic %s partition %d: %s", s->topic,
                            (int)m->partition, rd_kafka_message_errstr(m));
        } else if (k >= 0 && !sp[k].done) {
            size_t topic_len;
            int32_t partition;
            int slot;
            uint32_t index;
            int32_t wi = -1;
            if (!m->err && m->key &&
                parse_key(m->key, m->key_len, &topic_len, &partition, &slot, &index) == 0) {
                wi = find_want(want, n, m->key, topic_len, partition);
            }
            if (wi >= 0) {
                chunk_head_t h;
                char why[120];
                if (read_head(m->payload, m->len, &h, why, sizeof why) == 0 &&
                    h.slot == slot && h.index == index) {
                    keep_chunk(&r[wi].slot[slot], index, m);
                } else {
                    /* a broken chunk replaces what the key held, as compaction would */
                    keep_chunk(&r[wi].slot[slot], index, m);
                    r[wi].bad_offset = m->offset;
                    snprintf(r[wi].bad_why, sizeof r[wi].bad_why, "offset %lld: %s",
                             (long long)m->offset, why);
                }
            }
            if (next >= sp[k].high) {
                sp[k].done = 1;
                left--;
            }
        }
        rd_kafka_message_destroy(m);
    }
    return rc;
}

int wr_kafka_state_read(wr_kafka_state_t *s, wr_kafka_state_snapshot_t *want, int32_t n,
                        wr_err_t *err)
{
    if (n < 0 || (n > 0 && want == NULL)) {
        return wr_err_set(err, WEIR_EINVAL, "wr_kafka_state_read: bad arguments");
    }
    for (int32_t i = 0; i < n; i++) {
        if (want[i].topic == NULL || want[i].partition < 0) {
            return wr_err_set(err, WEIR_EINVAL, "wr_kafka_state_read: bad arguments");
        }
        want[i].found = 0;
        want[i].id = 0;
        want[i].blob = NULL;
        want[i].len = 0;
        want[i].rejected = 0;
        want[i].why[0] = '\0';
    }
    if (n == 0) {
        return 0;
    }
    spart_t *sp = wr_xcalloc((size_t)n, sizeof *sp);
    int32_t nsp = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t id = want[i].partition % s->nstate;
        if (spart_of(sp, nsp, id) < 0) {
            sp[nsp++] = (spart_t){.id = id};
        }
    }
    reading_t *r = wr_xcalloc((size_t)n, sizeof *r);
    for (int32_t i = 0; i < n; i++) {
        r[i].slot[0].last = r[i].slot[1].last = -1;
        r[i].bad_offset = -1;
    }
    int rc = 0;
    rd_kafka_t *rk = new_reader(s, err);
    if (rk == NULL) {
        rc = err->code ? err->code : WEIR_ESOURCE;
    } else {
        rc = read_partitions(s, rk, sp, nsp, want, n, r, err);
        rd_kafka_consumer_close(rk);
        rd_kafka_destroy(rk);
    }
    for (int32_t i = 0; i < n; i++) {
        if (rc == 0) {
            int32_t pi = get_part(s, want[i].topic, want[i].partition); /* may move parts */
            choose(&want[i], &r[i], &s->parts[pi]);
        }
        for (int k = 0; k < 2; k++) {
            for (uint32_t j = 0; j < r[i].slot[k].n; j++) {
                wr_free(r[i].slot[k].c[j].value);
            }
            wr_free(r[i].slot[k].c);
        }
    }
    wr_free(r);
    wr_free(sp);
    return rc;
}

void wr_kafka_state_free(wr_kafka_state_t *s)
{
    if (s == NULL) {
        return;
    }
    if (s->producer) {
        /* what is not delivered is dropped; its delivery reports free the snapshots */
        rd_kafka_purge(s->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        rd_kafka_flush(s->producer, 1000);
        rd_kafka_destroy(s->producer);
    }
    while (s->inflight) {
        snap_t *sn = s->inflight;
        s->inflight = sn->next;
        wr_free(sn);
    }
    for (int32_t i = 0; i < s->nparts; i++) {
        wr_free(s->parts[i].topic);
    }
    for (int32_t i = 0; i < s->nconf; i++) {
        wr_free(s->conf[i]);
    }
    wr_free(s->conf);
    wr_free(s->parts);
    wr_free(s->bootstrap);
    wr_free(s->topic);
    wr_free(s);
}

/* The FFI's view (weir_ffi.h: weir.scaleout uses it) ---------------------------------------- */

struct weir_kafka_state {
    wr_kafka_state_t *s;
    wr_err_t err;
};

weir_kafka_state_t *weir_kafka_state_open(const char *bootstrap, const char *topic,
                                          int32_t partitions, const char *const *conf,
                                          int32_t nconf, double timeout_ms, char *err,
                                          int32_t err_size)
{
    wr_kafka_state_opts_t o = {.bootstrap_servers = bootstrap,
                               .topic = topic,
                               .partitions = partitions,
                               .conf = conf,
                               .nconf = nconf,
                               .timeout_ms = (int64_t)timeout_ms};
    wr_err_t e = {0};
    wr_kafka_state_t *s = wr_kafka_state_open(&o, &e);
    if (s == NULL) {
        if (err && err_size > 0) {
            snprintf(err, (size_t)err_size, "%s", e.msg);
        }
        return NULL;
    }
    weir_kafka_state_t *h = wr_xcalloc(1, sizeof *h);
    h->s = s;
    return h;
}

const char *weir_kafka_state_error(const weir_kafka_state_t *h)
{
    return h ? h->err.msg : "";
}

int weir_kafka_state_put(weir_kafka_state_t *h, const char *topic, int32_t partition, double id,
                         const void *blob, double len)
{
    return wr_kafka_state_put(h->s, topic, partition, (uint64_t)id, blob, (size_t)len, &h->err);
}

int weir_kafka_state_flush(weir_kafka_state_t *h, double timeout_ms)
{
    return wr_kafka_state_flush(h->s, (int64_t)timeout_ms, &h->err);
}

int32_t weir_kafka_state_partitions(const weir_kafka_state_t *h)
{
    return wr_kafka_state_partitions(h->s);
}

char *weir_kafka_state_read1(weir_kafka_state_t *h, const char *topic, int32_t partition,
                             double *out)
{
    wr_kafka_state_snapshot_t want = {.topic = topic, .partition = partition};
    out[0] = -1;
    if (wr_kafka_state_read(h->s, &want, 1, &h->err) != 0) {
        wr_free(want.blob);
        out[0] = -2;
        return NULL;
    }
    out[1] = (double)want.len;
    out[2] = want.rejected;
    snprintf(h->err.msg, sizeof h->err.msg, "%s", want.rejected ? want.why : "");
    if (!want.found) {
        wr_free(want.blob);
        return NULL;
    }
    out[0] = (double)want.id;
    return want.blob;
}

void weir_kafka_state_blob_free(char *blob)
{
    wr_free(blob);
}

void weir_kafka_state_close(weir_kafka_state_t *h)
{
    if (h) {
        wr_kafka_state_free(h->s);
        wr_free(h);
    }
}
