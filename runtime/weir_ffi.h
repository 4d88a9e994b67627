/* SPDX-License-Identifier: MIT */
/* weir_ffi.h: everything Lua may touch in the C runtime. It is read by the C compiler (through
 * weir.h) and by ffi.cdef (through the generated module weir._cdef), so it holds only what both
 * accept: no preprocessor lines, enum constants, fixed-width integers, full prototypes, opaque
 * handles. Times cross as double milliseconds: -inf is "before the first watermark" (INT64_MIN in
 * C), +inf is "end of input" (INT64_MAX in C).
 * Every double time (and key id) C keeps is converted by one rule (ms.h, wr_ms_from_double):
 * -inf and +inf become INT64_MIN and INT64_MAX, a finite value truncates toward zero and
 * saturates at those ends, and NaN is refused (WEIR_EINVAL) before converting. Lua passes only
 * whole numbers within +-2^53 (docs/API.md, Time range), which convert exactly and back; the
 * truncation is a safety net no result relies on. */

enum {
    WEIR_BATCH_MAX = 1024,

    /* weir_event_t.kind */
    WEIR_EV_LINE = 1,  /* a text record: ptr/len, valid until the next weir_loop_poll */
    WEIR_EV_RANGE = 2, /* a generator: indices [index, index + len) are due */
    WEIR_EV_END = 3,   /* the source has ended; flags = WEIR_END_* */
    WEIR_EV_TICK = 4,  /* periodic watermark tick (auto_watermark_interval) */
    WEIR_EV_TIMER = 5, /* the clock passed the wakeup time set with weir_rt_set_wakeup */
    WEIR_EV_STOP = 6,  /* SIGINT/SIGTERM or weir_rt_stop: sources stop, in-flight data drains */
    WEIR_EV_STATUS = 7, /* SIGUSR1: print the full status of the job */
    WEIR_EV_INPUT = 8,  /* a line typed at the REPL (ptr/len, no newline); flags WEIR_INPUT_* */
    WEIR_EV_RECORDS = 9, /* len fixed-size records filled by C at ptr (valid until the next
                          * poll); index: line number (text) or 0-based index of the first */

    /* weir_event_t.flags for WEIR_EV_INPUT */
    WEIR_INPUT_LINE = 0,
    WEIR_INPUT_EOF = 1,       /* Ctrl-D at an empty prompt, or the end of piped input */
    WEIR_INPUT_INTERRUPT = 2, /* Ctrl-C at the prompt: the line typed so far is dropped */

    /* weir_event_t.flags for WEIR_EV_END */
    WEIR_END_EXHAUSTED = 0, /* bounded input ran out (or the peer closed, no retries left) */
    WEIR_END_STOPPED = 1,   /* stopped by a signal or weir_rt_stop */

    /* weir_event_t.flags for WEIR_EV_LINE */
    WEIR_LINE_TRUNCATED_EOF = 1, /* the last line of the input had no delimiter */
    WEIR_LINE_MALFORMED = 2,     /* a source parsing into records could not parse this line */
    WEIR_LINE_KAFKA_NULL = 4,    /* a Kafka message without a value (a tombstone) */

    /* weir_fields_add kinds: the numeric field types of weir.record_type */
    WEIR_FIELD_INT8 = 1,
    WEIR_FIELD_INT16 = 2,
    WEIR_FIELD_INT32 = 3,
    WEIR_FIELD_UINT8 = 4,
    WEIR_FIELD_UINT16 = 5,
    WEIR_FIELD_UINT32 = 6,
    WEIR_FIELD_FLOAT = 7,
    WEIR_FIELD_DOUBLE = 8,
    WEIR_FIELD_BOOL = 9,
    WEIR_FIELD_STRING = 10, /* char[bytes]: at most bytes - 1 bytes, NUL-padded */

    /* weir_fields_set_format: what one line is */
    WEIR_FORMAT_TEXT = 0, /* fields cut at the separator, in declaration order */
    WEIR_FORMAT_JSON = 1, /* one JSON object, fields by name */
    WEIR_FORMAT_CSV = 2,  /* one RFC 4180 row, fields in order or by the header's names */

    /* weir_fields_parse failures, in the low byte of its result */
    WEIR_FIELDS_COUNT = 1,  /* the line has another number of fields (high bits: how many) */
    WEIR_FIELDS_NUMBER = 2, /* a field is not a number of its kind (high bits: which, 1-based) */
    WEIR_FIELDS_RANGE = 3,  /* a number does not fit its field's type (high bits: which) */
    WEIR_FIELDS_STRING = 4, /* a string field is longer than its bound or holds a NUL (which) */
    WEIR_FIELDS_FORMAT = 5, /* a JSON or CSV line does not fit: weir_fields_error says why */
    WEIR_FIELDS_HEADER = 6, /* not a record: the CSV header line, read into the layout */
    WEIR_FIELDS_N_MAX = 8388607, /* the high bits saturate here (2^23 - 1): "that many or more" */

    /* weir_rt_new clock kinds */
    WEIR_CLOCK_REAL = 0,
    WEIR_CLOCK_VIRTUAL = 1,

    /* weir_source_stat */
    WEIR_STAT_RECORDS = 0, /* records delivered */
    WEIR_STAT_BYTES = 1,   /* bytes read */
    WEIR_STAT_DROPPED = 2, /* records that could not be delivered (overlong lines) */
    WEIR_STAT_RECONNECTS = 3,

    /* weir's own error codes; libuv's UV_E* pass through unchanged */
    WEIR_EOK = 0,
    WEIR_EINVAL = -5000,
    WEIR_ESOURCE = -5001, /* a source failed; detail in weir_rt_error */
    WEIR_ESTATE = -5002   /* call not allowed in this state (e.g. adding a source after start) */
};

typedef struct weir_rt weir_rt_t; /* opaque: loop, clock, sources */
typedef struct weir_fields weir_fields_t; /* opaque: a record layout (fields.c, below) */

typedef struct weir_event {
    int32_t kind;
    int32_t source;  /* source id, or -1 for TICK/TIMER/STOP/STATUS/INPUT */
    const char *ptr; /* LINE, INPUT line: the bytes (no delimiter), valid until the next poll;
                      * NULL for INPUT EOF/INTERRUPT */
    int32_t len;     /* LINE, INPUT: byte length; RANGE: number of indices */
    int32_t flags;   /* END: WEIR_END_*; LINE: WEIR_LINE_*; INPUT: WEIR_INPUT_* */
    double index;    /* LINE: 1-based line number in its source; RANGE: first index (0-based) */
    double time_ms;  /* processing time of the event (virtual under replay) */
} weir_event_t;

/* Runtime: owns the uv loop, the clock and every source. weir_rt_free(NULL) is a no-op. */
weir_rt_t *weir_rt_new(int32_t clock_kind, double virtual_start_ms);
void weir_rt_free(weir_rt_t *rt);
const char *weir_rt_error(const weir_rt_t *rt); /* last failure; borrowed until the next call */
double weir_rt_now(weir_rt_t *rt);              /* processing time, ms since the epoch */
int weir_rt_set_tick(weir_rt_t *rt, double interval_ms); /* 0 = no ticks; before start */
int weir_rt_set_wakeup(weir_rt_t *rt, double due_ms);    /* +inf = none */
int weir_rt_start(weir_rt_t *rt);                        /* opens every source */
void weir_rt_stop(weir_rt_t *rt);                        /* as SIGINT: stop, then drain */
/* What a second SIGINT/SIGTERM names when it ends weir: label_op copies the label of operator
 * id (before start; WEIR_ESTATE after, WEIR_EINVAL for id outside [0, 65535]). op_slot is
 * where the driver stores the id of the operator running now (-1: none; each poll sets it);
 * one per process (one job runs at a time), valid for the process's life. */
int weir_rt_label_op(weir_rt_t *rt, int32_t id, const char *label);
int32_t *weir_op_slot(void);
int32_t weir_loop_poll(weir_rt_t *rt, weir_event_t *out, int32_t max);
/* The same without waiting and without reading REPL input: 0 = nothing ready right now. */
int32_t weir_loop_poll_nowait(weir_rt_t *rt, weir_event_t *out, int32_t max);

/* Sources: each returns its id (>= 0, in declaration order) or a negative error code. */
int32_t weir_source_file(weir_rt_t *rt, const char *path, const char *delimiter,
                         int32_t max_line_bytes);
int32_t weir_source_stdin(weir_rt_t *rt, const char *delimiter, int32_t max_line_bytes);
int32_t weir_source_socket(weir_rt_t *rt, const char *host, int32_t port, const char *delimiter,
                           int32_t max_retry, int32_t max_line_bytes);
int32_t weir_source_generate(weir_rt_t *rt, double count, double rate_per_s);
int32_t weir_source_replay(weir_rt_t *rt, const char *text, size_t len);
/* Makes a read_text_file or stdin source (before start) parse each line into a record laid out
 * by fields (copied): complete records come as WEIR_EV_RECORDS runs of consecutive lines; a
 * line weir_fields_parse rejects comes alone as a WEIR_EV_LINE flagged WEIR_LINE_MALFORMED.
 * Returns 0, WEIR_EINVAL (not such a source, NULL fields) or WEIR_ESTATE (started). */
int weir_source_parse_fields(weir_rt_t *rt, int32_t source, const weir_fields_t *fields);
/* Nexmark bids (nexmark_gen.h), count < 0 = unbounded, as WEIR_EV_RECORDS of record_size bytes
 * each (must be the generator's struct size; index = the first bid's 0-based number). */
typedef struct weir_nexmark_config {
    double seed;
    double events_per_second; /* of the whole Nexmark stream (bids are 46 of every 50) */
    double base_time_ms;      /* timestamp of event 0 */
    int32_t hot_auction_ratio;
    int32_t hot_bidder_ratio;
    int32_t in_flight_auctions;
    int32_t active_people;
} weir_nexmark_config_t;
int32_t weir_source_nexmark(weir_rt_t *rt, double count, const weir_nexmark_config_t *config,
                            int32_t record_size);

/* Kafka (source_kafka.c; docs/API.md, Kafka). weir_source_kafka: a consumer with the
 * librdkafka properties conf (nconf strings: name, value, name, value, ...) that reads every
 * partition of topics, asking the cluster for their metadata now (within timeout_ms: an
 * unreachable cluster or a missing topic is WEIR_ESOURCE, detail in weir_rt_error). Its
 * partitions are numbered 0..weir_kafka_partitions-1 in topic order, then partition id.
 * weir_kafka_offsets, before start: out[0] the partition's low and out[1] its high watermark
 * (the offset the next produced message gets), out[2] the group's committed offset (-1: none,
 * or no group.id), asked of the cluster now. weir_kafka_set_range, before start: read from
 * offset start (>= 0) and, with stop >= 0, until the next offset reaches stop (-1: unbounded).
 * Every message is a WEIR_EV_LINE event (its value; flags WEIR_LINE_KAFKA_NULL when it has
 * none) whose index is its slot in weir_kafka_meta's array (valid until the next poll).
 * weir_kafka_next_offset: the offset after the last message delivered (the start before the
 * first). weir_kafka_mark: remembers every partition's next offset (a checkpoint's snapshot
 * read them). weir_kafka_commit: commits every partition's remembered offset (its next one
 * before any mark) to the group (async, or with wait until the cluster answers; a failure is
 * reported on stderr; nothing without group.id). */
typedef struct {
    const char *key;    /* NULL: the message has no key */
    int32_t key_len;    /* -1 without a key */
    int32_t partition;  /* the source's partition number (weir_kafka_topic/_partition_id) */
    double offset;
    double timestamp;   /* ms since the epoch (CreateTime or LogAppendTime); -inf: none */
} weir_kafka_meta_t;
int32_t weir_source_kafka(weir_rt_t *rt, const char *describe, const char *const *conf,
                          int32_t nconf, const char *const *topics, int32_t ntopics,
                          double timeout_ms);
int32_t weir_kafka_partitions(const weir_rt_t *rt, int32_t source);
const char *weir_kafka_topic(const weir_rt_t *rt, int32_t source, int32_t i);
int32_t weir_kafka_partition_id(const weir_rt_t *rt, int32_t source, int32_t i);
int weir_kafka_offsets(weir_rt_t *rt, int32_t source, int32_t i, double *out);
int weir_kafka_set_range(weir_rt_t *rt, int32_t source, int32_t i, double start, double stop);
double weir_kafka_next_offset(const weir_rt_t *rt, int32_t source, int32_t i);
const weir_kafka_meta_t *weir_kafka_meta(const weir_rt_t *rt, int32_t source);
int weir_kafka_mark(weir_rt_t *rt, int32_t source);
int weir_kafka_commit(weir_rt_t *rt, int32_t source, int32_t wait);
/* weir_kafka_stats: librdkafka's newest statistics JSON (statistics.interval.ms, 1000 unless
 * set) or NULL before the first; out[0] how many have come, out[1] the JSON's length, out[2]
 * the errors error_cb reported. Valid until the next poll. weir_kafka_last_error: the last
 * error reported, "" since messages arrived again (weir.kafka_health). */
const char *weir_kafka_stats(const weir_rt_t *rt, int32_t source, double *out);
const char *weir_kafka_last_error(const weir_rt_t *rt, int32_t source);
/* Partition discovery (docs/API.md, Kafka): weir_kafka_discover asks the cluster, off the
 * loop's thread, for the partitions of the source's topics (and topics its "^..." patterns
 * match) it does not read yet (nothing while one request is in flight); weir_kafka_adopt
 * appends those found to the source's partitions, each from its first offset with no stop,
 * assigns them to the consumer and returns the partition count (negative: the error). */
int weir_kafka_discover(weir_rt_t *rt, int32_t source);
int32_t weir_kafka_adopt(weir_rt_t *rt, int32_t source);
/* Watermark alignment of one partition (Flink's split alignment): on = 1 pauses partition i
 * (rd_kafka_pause_partitions; messages of it already fetched are dropped and fetched again),
 * 0 resumes it from its next offset (a seek, then rd_kafka_resume_partitions). A done
 * partition stays paused. Returns 0 or WEIR_EINVAL. */
int weir_kafka_pause_partition(weir_rt_t *rt, int32_t source, int32_t i, int32_t on);
/* Group mode (weir run --group; docs/API.md, Scale-out): weir_source_kafka_group is
 * weir_source_kafka as a member of consumer group `group` (cooperative-sticky; instance_id:
 * static membership, or NULL): the source knows every partition of its topics, but reads only
 * those the group assigns it, from the offset its assignment's finish gives. Until then, and
 * after a revoke, a partition is not owned (weir_kafka_owned 0). weir_kafka_rebalance_event:
 * the oldest rebalance event not finished: returns its partition count (0: none; < 0: the
 * member failed, weir_rt_error says why), *kind 1 assigned, 2 revoked (cooperative), 3 lost,
 * and slots[0..max) the source's partition numbers (-1: one it did not know at its start).
 * weir_kafka_rebalance_finish: finishes it; an assignment reads each partition from
 * offsets[i] (< 0 or offsets NULL: its start offset); a revoke first commits the partitions'
 * next offsets (waiting). A bounded source (every partition with a stop offset) ends once an
 * assignment was finished, no event waits and every owned partition is done. */
int32_t weir_source_kafka_group(weir_rt_t *rt, const char *describe, const char *const *conf,
                                int32_t nconf, const char *const *topics, int32_t ntopics,
                                double timeout_ms, const char *group, const char *instance_id);
int32_t weir_kafka_rebalance_event(weir_rt_t *rt, int32_t source, int32_t *kind,
                                   int32_t *slots, int32_t max);
int weir_kafka_rebalance_finish(weir_rt_t *rt, int32_t source, const double *offsets);
/* weir_kafka_rebalance_accept: the oldest event, an assignment, joins the member's assignment
 * at once at offsets[i] (absolute) with its partitions paused (wr_kafka_group_accept: the
 * group need not wait while the caller restores them); its finish then seeks each partition
 * whose offset differs and resumes them. */
int weir_kafka_rebalance_accept(weir_rt_t *rt, int32_t source, const double *offsets);
/* Group mode: owned partition slot i is done now (its stop offset set to its next offset), as
 * if it had reached its stop offset: a repartition partition whose upstream partitions all
 * ended (weir.repartition). 0, or WEIR_EINVAL. */
int weir_kafka_finish_part(weir_rt_t *rt, int32_t source, int32_t i);
int weir_kafka_owned(const weir_rt_t *rt, int32_t source, int32_t i);
/* The state topic (kafka_state.c; weir.scaleout): per input partition, its latest snapshot
 * (an opaque blob, chunked and checksummed). open: NULL with the reason in err. put copies
 * the blob (id: the snapshot's number); flush waits until every put is acknowledged (0, or
 * WEIR_ESOURCE: weir_kafka_state_error says why). read1: the latest complete snapshot of
 * (topic, partition): its bytes (free with weir_kafka_state_blob_free), out[0] its id, out[1]
 * its length, out[2] the broken newer ones (weir_kafka_state_error names the latest); NULL
 * with out[0] -1 when there is none, -2 when the read failed. */
typedef struct weir_kafka_state weir_kafka_state_t;
weir_kafka_state_t *weir_kafka_state_open(const char *bootstrap, const char *topic,
                                          int32_t partitions, const char *const *conf,
                                          int32_t nconf, double timeout_ms, char *err,
                                          int32_t err_size);
const char *weir_kafka_state_error(const weir_kafka_state_t *h);
int weir_kafka_state_put(weir_kafka_state_t *h, const char *topic, int32_t partition, double id,
                         const void *blob, double len);
int weir_kafka_state_flush(weir_kafka_state_t *h, double timeout_ms);
int32_t weir_kafka_state_partitions(const weir_kafka_state_t *h);
char *weir_kafka_state_read1(weir_kafka_state_t *h, const char *topic, int32_t partition,
                             double *out);
void weir_kafka_state_blob_free(char *blob);
void weir_kafka_state_close(weir_kafka_state_t *h);
/* The Kafka sink (kafka_sink.c): a producer to topic with the librdkafka properties conf
 * (name, value, ...); NULL with the reason in err (err_size bytes) when librdkafka refuses
 * them. send copies one message (key_len -1: no key; partition -1: librdkafka's partitioner
 * over the key) and serves delivery reports; a full queue waits for deliveries. send and
 * flush return WEIR_ESOURCE once a delivery failed (after librdkafka's retries) or flush
 * timed out, with the reason in weir_kafka_sink_error ("" while none); flush waits up to
 * timeout_ms for every acknowledgement. free drops what is not flushed. */
typedef struct weir_kafka_sink weir_kafka_sink_t;
weir_kafka_sink_t *weir_kafka_sink_new(const char *const *conf, int32_t nconf, const char *topic,
                                       char *err, int32_t err_size);
int weir_kafka_sink_send(weir_kafka_sink_t *k, const char *key, int32_t key_len,
                         const char *value, int32_t value_len, int32_t partition);
/* As weir_kafka_sink_send into an explicit partition, with the message's timestamp (ms; below 0:
 * none, the producer's time): the repartition topics (weir.repartition). */
int weir_kafka_sink_send_ts(weir_kafka_sink_t *k, const char *key, int32_t key_len,
                            const char *value, int32_t value_len, int32_t partition,
                            double timestamp_ms);
/* The sink's topic made when the cluster has none (CreateTopics, with partitions; the
 * repartition topics, weir.repartition): its partition count (there already, or made), 0 when
 * it is missing and the cluster did not make it (no CreateTopics: librdkafka's mock), or
 * WEIR_ESOURCE (weir_kafka_sink_error says why). */
int weir_kafka_sink_ensure_topic(weir_kafka_sink_t *k, int32_t partitions, double timeout_ms);
int weir_kafka_sink_flush(weir_kafka_sink_t *k, double timeout_ms);
const char *weir_kafka_sink_error(const weir_kafka_sink_t *k);
double weir_kafka_sink_delivered(const weir_kafka_sink_t *k);
void weir_kafka_sink_free(weir_kafka_sink_t *k);
int weir_replay_add(weir_rt_t *rt, int32_t source, double time_ms, int32_t offset, int32_t len,
                    int32_t line_no);
double weir_source_stat(const weir_rt_t *rt, int32_t source, int32_t what);
const char *weir_source_describe(const weir_rt_t *rt, int32_t source);
/* 1 when the source has input waiting: complete records buffered in weir and not yet
 * delivered, unread bytes in the kernel (FIONREAD on a socket or pipe), a file or generator
 * not yet exhausted, a replay line or rate-generator index already due; 0 when it is truly
 * quiet (or has ended); negative for an unknown id. */
int32_t weir_source_pending(const weir_rt_t *rt, int32_t source);
/* Names a source in describe and messages: "<kind> <name>" (e.g. "replay input.replay");
 * NULL or "" leaves the kind alone. Any time; returns 0 or WEIR_EINVAL for an unknown id. */
int weir_source_set_name(weir_rt_t *rt, int32_t source, const char *name);
/* Watermark alignment (weir.alignment; docs/API.md): on = 1 pauses the source (it reads and
 * delivers nothing; a replay's lines wait and no longer drive the virtual clock; a stream
 * stops reading), 0 resumes it. Idempotent; a no-op once the source is stopping or ended.
 * Returns 0 or WEIR_EINVAL (unknown id). weir_source_paused: 1 paused, 0 not, or negative. */
int weir_source_pause(weir_rt_t *rt, int32_t source, int32_t on);
int32_t weir_source_paused(const weir_rt_t *rt, int32_t source);

/* Checkpoints (source.c and each source kind): where a source stands between two polls, when
 * every record it handed out has been processed, and how a new runtime continues from there.
 * position fills out: offset (read_text_file and stdin from a regular file: the byte offset of
 * the first byte not yet cut into a delivered record; replay: the first entry not consumed;
 * generate, from_elements, nexmark: the next index), line (text sources: records cut so far,
 * dropped ones included), the WEIR_STAT_* counters, ended (its END was delivered), skipping
 * (inside an overlong line), check (a file: crc32 of the up to 4096 bytes before offset, so a
 * restore notices a replaced file) and replayable (0: a pipe, socket or manual source, which
 * cannot go back; only the counters mean something; 2: an offset in its input log, see
 * weir_source_input_log). It returns 0 or WEIR_EINVAL (unknown id).
 * seek, before start: the source continues from pos when the runtime starts (a file is
 * reopened at offset after its check bytes are compared: WEIR_ESOURCE from weir_rt_start when
 * the file is shorter or differs); WEIR_ESTATE after start, WEIR_EINVAL for a kind that cannot
 * go back or a position outside the source. */
typedef struct {
    double offset;
    double line;
    double records;
    double bytes;
    double dropped;
    double check;
    int32_t replayable;
    int32_t ended;
    int32_t skipping;
    int32_t reserved;
} weir_source_position_t;
int weir_source_position(const weir_rt_t *rt, int32_t source, weir_source_position_t *out);
int weir_source_seek(weir_rt_t *rt, int32_t source, const weir_source_position_t *pos);
/* weir run --input-log: before start, a socket_text_stream or a stdin source that turns out to
 * be a pipe, tty or socket appends every byte it reads to the file at path (runtime/inputlog.h),
 * and its position becomes an offset in that log (replayable 2); seek to such a position
 * replays the log from there before live input. A fresh start empties the log. stdin from a
 * regular file needs no log and makes none. WEIR_EINVAL for other kinds, WEIR_ESTATE after
 * start. */
int weir_source_input_log(weir_rt_t *rt, int32_t source, const char *path);
/* After a checkpoint committed: the bytes of the source's input log before offset (the oldest
 * position a kept checkpoint holds) are released (a hole punched; no-op without a log, or where
 * the file system cannot punch). 0 or a negative code with the detail set. */
int weir_source_input_log_release(weir_rt_t *rt, int32_t source, double offset);
/* The clock and the tick grid, for a checkpoint: out[0] now, out[1] the reading at start,
 * out[2] the next tick (+inf: none). restore_clock, before start, on the virtual clock: moves
 * the clock to now_ms and makes start continue the grid of start_ms with the next tick at
 * next_tick_ms (+inf: from the grid), so ticks and rate generators go on where they were. On
 * the real clock it does nothing (the grid starts again at start). WEIR_ESTATE after start. */
int weir_rt_clock_state(const weir_rt_t *rt, double *out);
int weir_rt_restore_clock(weir_rt_t *rt, double now_ms, double start_ms, double next_tick_ms);

/* The REPL's input (source_repl.c): lines arrive as WEIR_EV_INPUT events from weir_loop_poll,
 * so sources, ticks and timers keep running while the user types. Interactive (stdin is a
 * terminal): libedit's callback interface on the uv loop, with history (read from and saved to
 * history_path, NULL for none; a link is refused) and tab completion over the words Lua
 * last gave. Otherwise stdin is read as
 * lines with no prompt and no editing. In REPL mode SIGINT does not stop the job: at the
 * prompt it yields WEIR_INPUT_INTERRUPT, while Lua runs a command it sets the flag that
 * weir_repl_interrupted reads.
 * Order: an INPUT event comes alone, at most one per poll, and only when nothing else is ready
 * (records, a due TICK/TIMER, an advance in progress), so what a line causes is delivered
 * before the next line and a piped session runs the same way every time. While the REPL is
 * open a poll with nothing to do waits for input (it returns 0 only after the EOF event, or
 * after STOP, when the REPL reads no more). The prompt is shown whenever a poll waits and
 * cleared from the screen when a poll returns events. A Ctrl-C between polls that Lua has not
 * taken by the next poll becomes that poll's INTERRUPT event; the third one untaken exits the
 * process (status 1), as a second stop signal does. After the EOF event SIGINT stops the job
 * again; SIGTERM always does. open fails with WEIR_ESTATE if a REPL is open on this runtime
 * (or, interactive, on another one); prompt and set_words may come before open. */
int weir_repl_open(weir_rt_t *rt, int32_t interactive, const char *history_path);
int weir_repl_prompt(weir_rt_t *rt, const char *prompt); /* shows it; the next line uses it */
/* words: NUL-separated, in three sections split by an empty word: completed only as the first
 * word of a line (the REPL's commands), anywhere, and anywhere but first (`:method` after an
 * expression). */
int weir_repl_set_words(weir_rt_t *rt, const char *words, size_t len);
int32_t weir_repl_interrupted(weir_rt_t *rt); /* 1 once per Ctrl-C during a command, else 0 */
int32_t weir_repl_interrupt_pending(weir_rt_t *rt); /* 1 while such a Ctrl-C is not taken */
/* A stop signal (SIGTERM, or SIGINT after the EOF event) came: 1 while no poll has seen it
 * (Lua has run meanwhile), 2 once a poll has (the sources are stopping); else 0. */
int32_t weir_repl_stop_asked(weir_rt_t *rt);

/* A manual source (the REPL's :push and tests): records pushed from Lua, delivered by the next
 * poll at the clock reading then (index: 1-based push count); ends only when closed, after its
 * queued records (END EXHAUSTED). It never moves or holds back the virtual clock and never
 * makes a poll wait: with nothing else to wait for, a poll returns 0 while it is open. push
 * copies the bytes (any time before close or STOP; then WEIR_ESTATE); close twice is fine. */
int32_t weir_source_manual(weir_rt_t *rt);
int weir_manual_push(weir_rt_t *rt, int32_t source, const char *bytes, size_t len);
int weir_manual_close(weir_rt_t *rt, int32_t source);

/* Virtual clock only: lets the clock move forward to target_ms; the following polls deliver
 * what falls due on the way (TIMER, then TICK, one per poll, in time order) and then leave the
 * clock at target_ms. Returns WEIR_ESTATE on the real clock or when target_ms is behind. Without
 * a target the clock moves only while a replay or rate generator drives it, as before; a later
 * call replaces the target. */
int weir_rt_advance(weir_rt_t *rt, double target_ms);
/* Virtual clock only: while on, clocked sources (replay, generator with a rate) no longer move
 * the clock; only weir_rt_advance's target does (the REPL's paused replay). */
int weir_rt_hold_clock(weir_rt_t *rt, int32_t on);
/* A replay stepped by the REPL: next is the index of its first entry not yet delivered (the
 * count of entries once all are); hold keeps entries from index upto on waiting, neither due
 * nor pending (upto < 0: none held, the default); end drops the entries not delivered, so the
 * next poll ends the source (END EXHAUSTED). WEIR_EINVAL for a source that is no replay. */
int32_t weir_replay_next(weir_rt_t *rt, int32_t source);
int weir_replay_hold(weir_rt_t *rt, int32_t source, int32_t upto);
int weir_replay_end(weir_rt_t *rt, int32_t source);

/* Output: stdout (fd 1) and stderr (fd 2) through C stdio, the same buffers Lua's print uses,
 * so user prints and print sinks keep one order. write and flush return 0 or a negative code;
 * an error is sticky per stream (every later call returns it; error reads it without writing:
 * EPIPE when the reader closed stdout, EBADF when it was closed, ENOSPC, EIO). After a stop
 * waited too long for a stalled stdout, stdout's output is dropped instead (0 is returned) and
 * lost counts the bytes. */
int weir_out_write(int32_t fd, const char *bytes, size_t len);
int weir_out_flush(void);
int weir_out_error(int32_t fd);
double weir_out_lost(void);
/* write_text's directory: path and its parents with mkdir(2) (mode 0777 before the umask),
 * as mkdir -p; 0, or a negative code (ENOTDIR when path exists and is no directory). */
int weir_out_mkdirs(const char *path);
/* The --progress line on a terminal: status draws text (no newline) in place on stderr; the
 * next write to stderr, or to stdout when it is a terminal too, and every weir_out_flush,
 * first erases it (so output never starts inside it). clear erases it now. status_shown is 1
 * while it is on screen, 0 once erased (the caller redraws it). */
void weir_out_status(const char *text, size_t len);
void weir_out_clear_status(void);
int weir_out_status_shown(void);

/* Memory (mem.c): weir's account of what it holds, for the whole process: C (every allocation
 * of the runtime, as malloc sized it) and the Lua heap (the blocks LuaJIT's allocator made,
 * garbage not yet collected included). The account never refuses C memory; it rings an alarm
 * that the Lua driver reads between batches (weir_mem_alarm, one load) and answers with a
 * garbage collection and weir_mem_check.
 * With a limit L (set_limit; 0 = none, the default; WEIR_EINVAL for a negative or NaN value or
 * one above 2^53): the alarm rings when the account passes 7/8 of L, and after a check that
 * found it under L, half way from there to L (at least L/32 on). Lua growth past L is refused
 * (LuaJIT raises "not enough memory"); a C hash table asks before it doubles and, told no,
 * keeps filling until the check. Once the job is failing (a check returned nonzero, a refusal,
 * a system failure) the refusal point moves up once by max(L/8, 4 MiB), so the failure path
 * can run. set_limit clears the alarm, what check would report, and that failing state.
 * Without a limit only a system failure rings: malloc returned NULL, weir released its 8 MiB
 * reserve and retried (C allocations: when the retry fails too, weir prints "weir: out of
 * memory" and exits 1). check returns the WEIR_MEM_* bits seen since the last check (OVER: the
 * account is above L, or would be with the growth a table was told to wait for) and clears
 * the alarm. parse_size reads "2g", "512m", "100k", "1.5g", "4096" (units of 1024; k, m, g, t
 * in either case, an optional b after): bytes, or -1 when the text is not a size or gives less
 * than 1 byte or more than 2^53. stat returns NaN for an unknown what. */
enum {
    WEIR_MEM_TOTAL = 0, /* weir_mem_stat: C + Lua */
    WEIR_MEM_C = 1,
    WEIR_MEM_LUA = 2,
    WEIR_MEM_PEAK = 3,  /* the highest total since the process started */
    WEIR_MEM_LIMIT = 4, /* 0: none */
    WEIR_MEM_FAILED_BYTES = 5, /* the size the system refused last */
    WEIR_MEM_WANTED = 6, /* the growth a table was refused, as the last check saw it */

    WEIR_MEM_OVER = 1,    /* weir_mem_check bits */
    WEIR_MEM_REFUSED = 2, /* a Lua allocation was refused at the limit */
    WEIR_MEM_FAILED = 4   /* the system refused an allocation */
};
double weir_mem_parse_size(const char *text);
int weir_mem_set_limit(double bytes);
double weir_mem_stat(int32_t what);
int32_t weir_mem_alarm(void);
int32_t weir_mem_check(void);

/* Flink key hashing (keygroup.c): Java hashCode of a key, then key group and subtask.
 * hash_string: String.hashCode of the UTF-8 text decoded as Java does (malformed bytes become
 * U+FFFD; bytes may be NULL when len is 0). hash_number: Integer, Long or Double hashCode (-0.0 is
 * the Integer 0). The other three return a value >= 0, or WEIR_EINVAL when max_parallelism is
 * outside [1, 32768], parallelism outside [1, max_parallelism] or key_group outside
 * [0, max_parallelism). */
int32_t weir_keygroup_hash_string(const char *bytes, size_t len);
int32_t weir_keygroup_hash_number(double v);
int32_t weir_keygroup_of(int32_t java_hash, int32_t max_parallelism);
int32_t weir_keygroup_subtask(int32_t key_group, int32_t max_parallelism, int32_t parallelism);
int32_t weir_keygroup_default_max_parallelism(int32_t parallelism);
/* hash and key group in one call, for the per-record path (same rules as above) */
int32_t weir_keygroup_of_string(const char *bytes, size_t len, int32_t max_parallelism);
int32_t weir_keygroup_of_number(double v, int32_t max_parallelism);
/* A hash exchange's memo of number keys (weir.exchange): keys[i] = i and subtasks[i] = the
 * subtask (of parallelism) of integer key i, for i in [0, n); WEIR_EINVAL for bad arguments or
 * parallelism > 32768. */
int32_t weir_keygroup_fill_memo(double *keys, int16_t *subtasks, int32_t n,
                                int32_t max_parallelism, int32_t parallelism);

/* Watermark valve (valve.c) over the input channels of one operator subtask. new returns NULL
 * for channels < 1; weir_valve_free(NULL) is a no-op. Watermarks in and out are ms: -inf is
 * INT64_MIN, +inf INT64_MAX, others truncate toward zero. watermark (wm on channel) and status
 * (idle != 0: IDLE, 0: ACTIVE) return bit flags: 1 = the output watermark advanced (read
 * weir_valve_output), 2 = the output status changed (read weir_valve_is_idle); 0 = no change;
 * WEIR_EINVAL for a channel out of range or a NaN wm. When one call returns 3 (the last channel
 * goes idle), forward the watermark before the IDLE status. */
typedef struct weir_valve weir_valve_t; /* opaque */
weir_valve_t *weir_valve_new(int32_t channels);
void weir_valve_free(weir_valve_t *v);
int32_t weir_valve_watermark(weir_valve_t *v, int32_t channel, double wm);
int32_t weir_valve_status(weir_valve_t *v, int32_t channel, int32_t idle);
/* A new last channel, active with no watermark (valve.h wr_valve_add_channel); returns 2 when
 * the output status changed (the valve was idle), else 0. */
int32_t weir_valve_add_channel(weir_valve_t *v);
double weir_valve_output(const weir_valve_t *v); /* -inf before the first watermark */
int32_t weir_valve_is_idle(const weir_valve_t *v); /* 1 = IDLE, 0 = ACTIVE */
/* One input channel, for status displays: its last watermark (-inf before any), and its state
 * as bits 1 = active, 2 = aligned (0 for a bad channel). */
double weir_valve_channel_watermark(const weir_valve_t *v, int32_t channel);
int32_t weir_valve_channel_state(const weir_valve_t *v, int32_t channel);
/* A restore (checkpoints): sets channel's watermark and state bits as the two readers above
 * gave them, or with channel -1 the output (wm: weir_valve_output, state 1 = idle). Nothing is
 * emitted. 0, or WEIR_EINVAL for a channel outside [-1, channels), NaN or state outside 0..3. */
int weir_valve_restore(weir_valve_t *v, int32_t channel, double wm, int32_t state);

/* Timer service (timers.c), one per operator subtask: Flink's InternalTimerService with weir's
 * determinism rule. A timer is (domain, time, key, window start, window stop); key is a key id
 * (an integer as a double) and a window is its [start, stop) in ms (-inf, +inf for the global
 * window). Set semantics: registering an existing timer is a no-op that keeps its place;
 * deleting removes exactly that timer (absent: no-op). Equal times pop in registration order.
 * All four numbers convert as watermarks do (-inf INT64_MIN, +inf INT64_MAX, others truncate
 * toward zero), so keys must be integers. register/delete/pop/count return WEIR_EINVAL for a
 * domain other than WEIR_TIME_* or a NaN argument (next returns NaN); register returns
 * WEIR_ESTATE when a domain already holds INT32_MAX timers. pop removes the earliest timer into
 * *out and returns 1 when its time <= upto_ms, else returns 0: pop until 0 fires every due timer,
 * including those registered meanwhile. weir_timers_free(NULL) is a no-op. */
enum { WEIR_TIME_EVENT = 0, WEIR_TIME_PROCESSING = 1 };
typedef struct weir_timers weir_timers_t; /* opaque */
typedef struct weir_timer {
    double time_ms;
    double key;
    double start;
    double stop;
} weir_timer_t;
weir_timers_t *weir_timers_new(void);
void weir_timers_free(weir_timers_t *t);
int32_t weir_timers_register(weir_timers_t *t, int32_t domain, double time_ms, double key,
                             double start, double stop); /* 1 added, 0 was there */
int32_t weir_timers_delete(weir_timers_t *t, int32_t domain, double time_ms, double key,
                           double start, double stop); /* 1 removed, 0 absent */
/* On an empty service (else WEIR_ESTATE): the caller never registers a timer already there
 * and never deletes (delete then returns WEIR_EINVAL), so no index is kept (timers.h). */
int32_t weir_timers_set_distinct(weir_timers_t *t);
int32_t weir_timers_pop(weir_timers_t *t, int32_t domain, double upto_ms, weir_timer_t *out);
double weir_timers_next(const weir_timers_t *t, int32_t domain); /* earliest time, or +inf */
int32_t weir_timers_count(const weir_timers_t *t, int32_t domain);
/* The first max timers of a domain in pop order into out; returns how many there are (or
 * WEIR_EINVAL for a bad domain or max < 0). For inspection and checkpoints. */
int32_t weir_timers_list(const weir_timers_t *t, int32_t domain, weir_timer_t *out, int32_t max);


/* Window store (store.c), one per window operator subtask: (key, window) -> slot, the id under
 * which the window's contents (held by Lua), its numeric state cells and its metadata live.
 * Slot ids are small integers >= 0, reused after weir_store_drop. Keys and bounds convert as in
 * the timer service (keys are integers). new returns NULL for cells_per_slot outside
 * [0, 65536]; weir_store_free(NULL) is a no-op. slot/find return WEIR_EINVAL for a NaN argument,
 * slot WEIR_ESTATE at INT32_MAX open slots. For a slot that is not open (never created, or
 * dropped): drop, count_add and count return WEIR_EINVAL, cells NULL.
 * count_add returns WEIR_EINVAL (count unchanged) when the count would leave [0, INT32_MAX].
 * cells: the slot's cells_per_slot doubles (NULL when cells_per_slot is 0), NaN until written;
 * the pointer stays valid until that slot is dropped or the store freed: creating other slots
 * never moves it. stat returns NaN for an unknown what. */
enum {
    WEIR_STORE_OPEN = 0,     /* weir_store_stat: open (key, window) slots */
    WEIR_STORE_ELEMENTS = 1, /* elements counted with weir_store_count_add */
    WEIR_STORE_BYTES = 2     /* bytes of C memory the store holds */
};
typedef struct weir_store weir_store_t; /* opaque */
weir_store_t *weir_store_new(int32_t cells_per_slot);
void weir_store_free(weir_store_t *s);
int32_t weir_store_slot(weir_store_t *s, double key, double start, double stop); /* get/create */
int32_t weir_store_find(const weir_store_t *s, double key, double start, double stop); /* or -1 */
int weir_store_drop(weir_store_t *s, int32_t slot);
double *weir_store_cells(weir_store_t *s, int32_t slot); /* cells_per_slot doubles, NaN = unset */
int32_t weir_store_count_add(weir_store_t *s, int32_t slot, int32_t delta); /* new count */
int32_t weir_store_count(const weir_store_t *s, int32_t slot);
/* The key, start and stop of an open slot into out[0..2] (for checkpoints); WEIR_EINVAL for a
 * slot that is not open. */
int weir_store_window(const weir_store_t *s, int32_t slot, double *out);
double weir_store_stat(const weir_store_t *s, int32_t what);

/* Keyed state (kstate.c), one per keyed operator subtask (weir.keyed): per key id (a whole
 * number in [0, 2^53]; other keys give NULL / WEIR_EINVAL) one row of WEIR_KSTATE_CELLS doubles
 * per state. set_states fixes the states per row (0 .. 1024) while there is no row (else
 * WEIR_ESTATE). row: the key's row or NULL; row_put: the same, created when absent (every state
 * empty: kind 0, expiry +inf, value NaN, SLOT = row slot * states + state); a row stays where it
 * is until it is dropped or the state freed. A state is live while its kind is not 0; Lua writes
 * the cells. clear empties (key, state) and drops the row when that was its last live state:
 * returns 1 when the row was dropped, 0 when not, -1 when the key has no row. expire looks at
 * up to max rows from where the last call stopped (wrapping) and empties the states whose
 * expiry time is <= now_ms (expiry +inf: never), dropping rows left empty; the SLOTs of those
 * of kind LUA go to dropped (room for max * states); returns how many. For enumeration: rows
 * run over [0, capacity); at returns the row's cells and its key in *key for an open row (else
 * NULL). stat takes WEIR_STORE_OPEN (live entries, O(rows)) and WEIR_STORE_BYTES (others:
 * NaN). weir_kstate_free(NULL) is a no-op. */
enum {
    WEIR_KSTATE_VALUE = 0,   /* the number (kind NUMBER) */
    WEIR_KSTATE_EXPIRES = 1, /* ms; +inf: never (no TTL) */
    WEIR_KSTATE_KIND = 2,    /* 0 empty, WEIR_KSTATE_NUMBER or WEIR_KSTATE_LUA */
    WEIR_KSTATE_SLOT = 3,    /* where Lua keeps the state's value when it is no number */
    WEIR_KSTATE_CELLS = 4,
    WEIR_KSTATE_NUMBER = 1,
    WEIR_KSTATE_LUA = 2
};
typedef struct weir_kstate weir_kstate_t; /* opaque */
weir_kstate_t *weir_kstate_new(void);
void weir_kstate_free(weir_kstate_t *k);
int weir_kstate_set_states(weir_kstate_t *k, int32_t states);
double *weir_kstate_row(weir_kstate_t *k, double key);
double *weir_kstate_row_put(weir_kstate_t *k, double key);
int32_t weir_kstate_clear(weir_kstate_t *k, double key, int32_t state);
int32_t weir_kstate_expire(weir_kstate_t *k, double now_ms, int32_t max, int32_t *dropped);
int32_t weir_kstate_capacity(const weir_kstate_t *k);
double *weir_kstate_at(weir_kstate_t *k, int32_t row, double *key);
double weir_kstate_stat(weir_kstate_t *k, int32_t what);

/* Window table (wintab.c), weir.aggwindow's state for tumbling windows: (key, window start) ->
 * id, the id under which Lua keeps the window's accumulator and count (small integers >= 0,
 * reused after drop). Keys are key ids: integers in [0, INT32_MAX] (any other key is
 * WEIR_EINVAL). add returns the id, created when absent (WEIR_ESTATE at INT32_MAX open
 * windows); find the id or -1; drop the id the window had or -1. A NaN start gives WEIR_EINVAL.
 * stat takes WEIR_STORE_OPEN and WEIR_STORE_BYTES (others: NaN). at reads entry i in
 * [0, capacity): its id (-1: empty) and, when open, out[0..1] = key, start; capacity first
 * puts into the table the windows it keeps apart (opened past their key's other windows), so
 * a walk by position sees every open window once (at does it too).
 * weir_wintab_free(NULL) is a no-op. */
typedef struct weir_wintab weir_wintab_t; /* opaque */
weir_wintab_t *weir_wintab_new(void);
void weir_wintab_free(weir_wintab_t *t);
int32_t weir_wintab_add(weir_wintab_t *t, double key, double start);
int32_t weir_wintab_find(const weir_wintab_t *t, double key, double start);
int32_t weir_wintab_drop(weir_wintab_t *t, double key, double start);
double weir_wintab_stat(const weir_wintab_t *t, int32_t what);
int32_t weir_wintab_capacity(weir_wintab_t *t);
int32_t weir_wintab_at(weir_wintab_t *t, int32_t i, double *out);
/* The ids of (keys[i], start), i < n, into ids (-1: absent), as n finds, with their cache
 * misses overlapping (a watermark fires the windows of many keys at once). Returns n, or
 * WEIR_EINVAL for a negative key, n < 0 or missing arrays. */
int32_t weir_wintab_gather(const weir_wintab_t *t, const int32_t *keys, int32_t n, double start,
                           int32_t *ids);
/* gather that also drops the windows it finds (their ids are free again: the caller's state
 * by id must be read before the next add); the table keeps its size, even left empty, until
 * trim, which returns an empty table to its initial size as a drop does. Returns n, or
 * WEIR_EINVAL as gather. */
int32_t weir_wintab_take(weir_wintab_t *t, const int32_t *keys, int32_t n, double start,
                         int32_t *ids);
void weir_wintab_trim(weir_wintab_t *t);

/* Slices (slices.c), weir.aggwindow's state for sliced sliding windows: per key id (an integer
 * in [0, INT32_MAX]; other keys are WEIR_EINVAL / NULL) its slices by start, each a number
 * accumulator and an element count. acc: the slice's accumulator (created NaN when absent)
 * with 1 added to its count, *fresh = 1 when it was created; valid until the next acc or drop
 * of that key; NULL for bad arguments or too many slices. range: the accumulators of the key's
 * slices starting in [lo, hi), in order (writes up to max, returns how many there are).
 * neighbors: out[0] the start of the key's slice just before start (-inf: none), out[1] the
 * one just after (+inf), start itself left out. drop: 1 removed, 0 absent. count_add: adds n to
 * the slice's count (1; 0 when absent), so a caller may count elements it added through a
 * pointer it kept. stat takes the
 * WEIR_STORE_* whats (OPEN counts slices). dump: every slice as (key, start, count) triples,
 * up to max of them; returns how many slices there are. weir_slices_free(NULL) is a no-op. */
typedef struct weir_slices weir_slices_t; /* opaque */
weir_slices_t *weir_slices_new(void);
void weir_slices_free(weir_slices_t *t);
/* span: the slices per window k (>= 1; else WEIR_EINVAL), a hint for the rings' capacity
 * (slices.h wr_slices_span); nothing a caller reads changes. */
int weir_slices_span(weir_slices_t *t, int32_t k);
double *weir_slices_acc(weir_slices_t *t, double key, double start, int32_t *fresh);
int32_t weir_slices_range(const weir_slices_t *t, double key, double lo, double hi, double *out,
                          int32_t max);
int weir_slices_neighbors(const weir_slices_t *t, double key, double start, double *out);
int weir_slices_drop(weir_slices_t *t, double key, double start);
int weir_slices_count_add(weir_slices_t *t, double key, double start, int32_t n);
double weir_slices_stat(const weir_slices_t *t, int32_t what);
double weir_slices_dump(const weir_slices_t *t, double *out, double max);
/* range for each of keys[0 .. n), with their cache misses overlapping: the runs one after
 * another in out (at most cap values), keys[i]'s being out[off[i] .. off[i + 1]) (off holds
 * n + 1 ints, scratch n). Returns the number of values (more than cap: only cap written, call
 * again with room), or WEIR_EINVAL. */
double weir_slices_gather(const weir_slices_t *t, const int32_t *keys, int32_t n, double lo,
                          double hi, double *out, double cap, int32_t *off, int32_t *scratch);
/* acc_near: acc, and when the slice is new, out[1] and out[2] the starts of the key's slices
 * just before and after it (neighbors); out[0] = 1 when new, 0 when not. NULL as acc. */
double *weir_slices_acc_near(weir_slices_t *t, double key, double start, double *out);
/* The fires of window [lo, hi) of keys[0 .. n) (distinct key ids) in one pass (slices.c,
 * wr_slices_fire): per key its accumulator into res[i] once the caller has run the ops it
 * returns, in order (*dst = merge(*l, *r), or *dst = *l when r is NULL: about three per fire,
 * amortized, whatever the window's length); flags[i] bit 1: the key has a slice in the window,
 * bit 2: slice lo was dropped (with drop), bit 4: it was the key's last. Key i's ops are ops[off[i] .. off[i + 1]). Returns
 * the keys done d (a prefix; off[0 .. d] set; at least one when cap > the slices of a window
 * + 1), or WEIR_EINVAL. scratch holds n ints. touch: an element went into the key's slice at
 * start (the fire queue forgets the slice if it holds it); forget: the key's next fire
 * rebuilds its queue (after ops that did not all run): 0, or WEIR_EINVAL. */
typedef struct weir_slices_op {
    double *dst;
    const double *l;
    const double *r;
} weir_slices_op_t;
int32_t weir_slices_fire(weir_slices_t *t, const int32_t *keys, int32_t n, double lo, double hi,
                         int32_t drop, double *res, int32_t *flags, int32_t *off,
                         weir_slices_op_t *ops, int32_t cap, int32_t *scratch);
/* Runs ops[0 .. n) of weir_slices_fire in order with the merge of a built-in aggregate of kind
 * (WEIR_AGG_COUNT or _SUM: l + r; _MIN: r < l ? r : l; _MAX: r > l ? r : l, as weir.aggregates'
 * Lua merges), an op without r a copy. Returns 0, or WEIR_EINVAL for another kind, n < 0 or
 * missing ops. */
int weir_slices_run_ops(int32_t kind, const weir_slices_op_t *ops, int32_t n);
/* The accumulators are a built-in count's or sum's (kind WEIR_AGG_COUNT or _SUM), or neither
 * (-1, the default): with count or sum, weir_slices_fire keeps a running sum per key where it
 * is exact (slices.h wr_slices_running) and the keys that have one get no ops (res[i] is their
 * result at once). 0, or WEIR_EINVAL for another kind. */
int weir_slices_running(weir_slices_t *t, int32_t kind);
/* A batch of a built-in count, sum, min or max's elements (kind WEIR_AGG_*): element i into
 * key id keys[i]'s slice at starts[i] with value x[i] (x unread for count; slices.h
 * wr_slices_apply), in order; the elements that created their slice are fresh[0 .. m) (their
 * indexes), with near[2 j], near[2 j + 1] the starts of the key's slices just before and after
 * (-inf / +inf: none) then (as acc_near's). Returns m, WEIR_EINVAL (nothing applied), or
 * WEIR_ESTATE when a key has too many slices (the elements before it applied). */
int32_t weir_slices_apply(weir_slices_t *t, int32_t kind, int32_t n, const int32_t *keys,
                          const double *starts, const double *x, int32_t *fresh, double *near);
int weir_slices_touch(weir_slices_t *t, double key, double start);
int weir_slices_forget(weir_slices_t *t, double key);
/* The slices the last weir_slices_fire (with drop, of window [lo, ...)) dropped for its keys
 * [from .. n), put back as they were (wr_slices_undrop: a fire that failed the job after the
 * pass). Returns how many, or WEIR_EINVAL. */
int32_t weir_slices_undrop(weir_slices_t *t, const int32_t *keys, int32_t from, int32_t n,
                           double lo);

/* Sessions (sessions.c), weir.sessionop's state for event-time session windows: per key id (an
 * integer >= 1) its in-flight windows sorted by start, each with its state window (Flink's
 * MergingWindowSet) and the slot id (>= 1) under which the caller keeps the state window's
 * contents; and the windows' event-time timers, popped in (time, registration) order, a timer
 * counting only while its window is in flight. new takes the allowed lateness (ms, >= 0).
 * add: the window [start, stop) of an element of kid, at watermark wm: WEIR_SESSION_LATE when
 * it touches no window and its cleanup time (stop - 1 + lateness) is at or before wm (nothing
 * changes); 0 when it lies inside a window; 1 when it is a new window; k + 1 when it merged
 * the k windows it touches (Flink's TimeWindow.intersects). out (valid until the next add):
 * out[0] the window the element belongs to now (slot: its state window's), out[1 .. k] the
 * swallowed windows as they were; a swallowed slot other than out[0]'s is freed (the caller
 * moves its contents into out[0]'s). A new or merged window gets its timers: the trigger's at
 * stop - 1 when that is after wm, the cleanup at stop - 1 + lateness (one timer, what = both,
 * when the two coincide; none past 2^63). due: the timers at or before wm, in order, into out
 * (at most max; returns how many): time, what, the window and its slot; a cleanup takes the
 * window out and frees its slot (the caller drops the contents). timers: the live timers in
 * pop order, windows: every in-flight window by key id and start; both write at most max and
 * return how many there are (out may be NULL with max 0). stat: WEIR_STORE_OPEN (windows),
 * WEIR_STORE_BYTES. Errors: WEIR_EINVAL (a key id < 1 or not whole, NaN or start >= stop).
 * weir_sessions_free(NULL) is a no-op. */
enum {
    WEIR_SESSION_LATE = -1,
    WEIR_SESSION_FIRE = 1,    /* weir_session_t.what: the trigger's timer (max timestamp) */
    WEIR_SESSION_CLEANUP = 2  /* the window's cleanup (both: 3) */
};
typedef struct weir_session {
    double start, stop;   /* the window */
    double sstart, sstop; /* its state window */
    double time;          /* a timer's time */
    int32_t kid;
    int32_t slot;
    int32_t what;
    int32_t pad;
} weir_session_t;
typedef struct weir_sessions weir_sessions_t; /* opaque */
weir_sessions_t *weir_sessions_new(double lateness);
void weir_sessions_free(weir_sessions_t *t);
int32_t weir_sessions_add(weir_sessions_t *t, double kid, double start, double stop, double wm);
const weir_session_t *weir_sessions_out(const weir_sessions_t *t);
int32_t weir_sessions_due(weir_sessions_t *t, double wm, weir_session_t *out, int32_t max);
int32_t weir_sessions_timers(const weir_sessions_t *t, weir_session_t *out, int32_t max);
int32_t weir_sessions_windows(const weir_sessions_t *t, weir_session_t *out, int32_t max);
double weir_sessions_stat(const weir_sessions_t *t, int32_t what);
/* The live timers' count into out[0] and the earliest one's time into out[1] (+inf: none),
 * without sorting (status reads them per tick): 0, or WEIR_EINVAL. */
int weir_sessions_timer_stat(const weir_sessions_t *t, double *out);
/* A restore's: put makes in-flight window [start, stop) of kid with state window [sstart,
 * sstop) and returns its new slot (WEIR_EINVAL when it overlaps or touches one of kid's, or for
 * bad arguments); timer registers the window's timer at time (after those registered before:
 * the order a restore gives), a trigger timer when time is its max timestamp, a cleanup when it
 * is its cleanup time: 0, or WEIR_EINVAL (no such window, or neither). */
int32_t weir_sessions_put(weir_sessions_t *t, double kid, double start, double stop,
                          double sstart, double sstop);
int weir_sessions_timer(weir_sessions_t *t, double kid, double start, double stop, double time);
/* A checkpoint's columns (weir.winckpt writes them as the general operator's sections): kids
 * writes the key ids that have in-flight windows, ascending (at most max; returns how many);
 * snap lays the state out by section, given per key id (< nkid) its section ksec[kid] (0 ..
 * nsec - 1) and its key index there kki[kid]. Section k's rows are [off[k], off[k + 1]) of
 * each column, in key id order within it. Windows: every in-flight window, then its state
 * window when that is another (wslot: the slot of the window's contents, the state window's;
 * 0 for an in-flight window whose state lies in another); merging sets: per key (mk, mn) and
 * its entries (md: start, stop, sstart, sstop), doff by entry; timers: the live ones, rank
 * their place in pop order, td the domain (event time). 0, or WEIR_EINVAL (a key id with
 * windows outside ksec, or a section index out of range); snap_free frees the columns. */
typedef struct weir_sessions_cols {
    int32_t nsec, nwin, nkey, nentry, ntimer, pad;
    int32_t *woff, *wk, *wslot;
    double *ws, *we;
    int32_t *moff, *mk, *mn, *doff;
    double *md;
    int32_t *toff, *tk, *tr, *td;
    double *tt, *ts, *te;
} weir_sessions_cols_t;
int32_t weir_sessions_kids(const weir_sessions_t *t, int32_t *out, int32_t max);
int weir_sessions_snap(const weir_sessions_t *t, const int32_t *ksec, const int32_t *kki,
                       int32_t nkid, int32_t nsec, weir_sessions_cols_t *out);
void weir_sessions_snap_free(weir_sessions_cols_t *s);

/* Built-in aggregates (aggs.c), weir.aggregates on the fast operator's tumbling windows: the
 * windows (key, start) of one operator's subtask, each with its accumulator (v, n): n the
 * elements added, v the count, sum, minimum or maximum (avg: the sum; the result is v / n).
 * new takes a WEIR_AGG_* kind (NULL for another). apply: the n elements (keys[i], ts[i], x[i])
 * in order into their tumbling windows of size at offset (created when absent; x may be NULL
 * for count); returns how many were created, WEIR_ESTATE when the table is full, WEIR_EINVAL
 * for a negative key, a NaN timestamp or bad arguments. created: the windows the applies
 * created since the last created_clear, in order, as *keys[i], *starts[i] (valid until the next
 * apply); returns how many (they are the windows' pending timers); created_add appends window
 * (key, start), made by add, to them (0, or WEIR_EINVAL). due: of those, the windows whose max
 * timestamp (start + size - 1) is at or below w, in timer order (start, then creation), up to
 * max of them: taken from the list, each removed, as keys[j], starts[j], with their result
 * value[j] and element count count[j] (0: absent); returns how many (0: none is due). add: one
 * element into window (key, start): 0, *fresh = 1 when created (WEIR_ESTATE: full). fire: per
 * keys[i], i < n, window (keys[i], start): its result into value[i] and element count into
 * count[i] (0: absent), removed when drop is not 0; returns n. drop: removes window (key,
 * start): 0, or -1 when there is none. get: out[0] = v, out[1] = n, out[2] = the result of
 * window (key, start): 0, or -1 when there is none; set: window (key, start) made with
 * accumulator (v, n) (the restore): 0 (WEIR_ESTATE: full). capacity and at list the windows:
 * at(i) for 0 <= i < capacity is 0 with out[0] = key, out[1] = start for a window, -1 for an
 * empty entry (valid until the next change; capacity first: it puts the windows that applies
 * opened ahead of their keys' earlier ones into the table). stat takes WEIR_STORE_OPEN (open windows) and
 * WEIR_STORE_BYTES (others: NaN). weir_aggs_free(NULL) is a no-op. */
enum {
    WEIR_AGG_COUNT = 0,
    WEIR_AGG_SUM = 1,
    WEIR_AGG_MIN = 2,
    WEIR_AGG_MAX = 3,
    WEIR_AGG_AVG = 4
};
typedef struct weir_aggs weir_aggs_t; /* opaque */
weir_aggs_t *weir_aggs_new(int32_t kind);
void weir_aggs_free(weir_aggs_t *a);
int32_t weir_aggs_apply(weir_aggs_t *a, int32_t n, const int32_t *keys, const double *ts,
                        const double *x, double size, double offset);
int32_t weir_aggs_created(weir_aggs_t *a, const int32_t **keys, const double **starts);
int32_t weir_aggs_created_add(weir_aggs_t *a, int32_t key, double start);
void weir_aggs_created_clear(weir_aggs_t *a);
int32_t weir_aggs_due(weir_aggs_t *a, double size, double w, int32_t max, int32_t *keys,
                      double *starts, double *value, double *count);
int32_t weir_aggs_add(weir_aggs_t *a, double key, double start, double x, int32_t *fresh);
int32_t weir_aggs_fire(weir_aggs_t *a, const int32_t *keys, int32_t n, double start,
                       int32_t drop, double *value, double *count);
int32_t weir_aggs_drop(weir_aggs_t *a, double key, double start);
int32_t weir_aggs_get(weir_aggs_t *a, double key, double start, double *out);
int32_t weir_aggs_set(weir_aggs_t *a, double key, double start, double v, double n);
int32_t weir_aggs_capacity(weir_aggs_t *a);
int32_t weir_aggs_at(const weir_aggs_t *a, int32_t i, double *out);
double weir_aggs_stat(const weir_aggs_t *a, int32_t what);

/* Field parsing (fields.c): a layout of numeric fields at byte offsets in a record of size
 * bytes, filled in declaration order from one line cut at separator. new returns NULL for size
 * outside [1, 65536]; add returns 0, or WEIR_EINVAL for a bad kind or a field that does not fit
 * in size bytes. weir_fields_free(NULL) is a no-op. parse fills out (size bytes) and returns 0,
 * or reason | n << 8 with reason a WEIR_FIELDS_* (out is then partly written) and n at most
 * WEIR_FIELDS_N_MAX (only a count of fields can reach it: the caller counts the separators). */
weir_fields_t *weir_fields_new(int32_t size, int32_t separator);
void weir_fields_free(weir_fields_t *f);
int weir_fields_add(weir_fields_t *f, int32_t kind, int32_t offset);
/* add with a name (JSON keys, CSV header names) and, for WEIR_FIELD_STRING, the array's bytes
 * (at least 2); other kinds ignore bytes. set_format makes lines JSON or CSV (every field must
 * have a name; header only for CSV: the first line parsed names the columns, and parse returns
 * WEIR_FIELDS_HEADER for it). A failure of a JSON or CSV line (WEIR_FIELDS_FORMAT) leaves its
 * message ("column 7: ...") for weir_fields_error until the next parse. */
int weir_fields_add_named(weir_fields_t *f, int32_t kind, int32_t offset, int32_t bytes,
                          const char *name);
int weir_fields_set_format(weir_fields_t *f, int32_t format, int32_t header);
const char *weir_fields_error(const weir_fields_t *f);
int32_t weir_fields_parse(weir_fields_t *f, const char *line, int32_t len, void *out);

/* JSON into Lua values (json.cc): decode parses one JSON text into a tape of tokens in
 * preorder -- a scalar is one token; an array is a token with len = its elements, followed by
 * them; an object a token with len = its members, followed by key (a STRING token) and value
 * for each -- and returns the number of tokens, or -1 (the message, "column 7: ...", from
 * weir_json_error). The tape and its strings (which may hold NUL bytes) live until the next
 * decode or free. */
enum {
    WEIR_JSON_NULL = 0,
    WEIR_JSON_FALSE = 1,
    WEIR_JSON_TRUE = 2,
    WEIR_JSON_NUMBER = 3,
    WEIR_JSON_STRING = 4,
    WEIR_JSON_ARRAY = 5,
    WEIR_JSON_OBJECT = 6
};
typedef struct weir_json_tok {
    int32_t kind;
    int32_t len;
    double num;
    const char *str;
} weir_json_tok_t;
typedef struct wr_json weir_json_t; /* opaque */
weir_json_t *weir_json_new(void);
void weir_json_free(weir_json_t *j);
int32_t weir_json_decode(weir_json_t *j, const char *line, int32_t len);
const weir_json_tok_t *weir_json_tape(const weir_json_t *j);
const char *weir_json_error(const weir_json_t *j);

/* CSV rows (csv.c): split cuts one line at sep by RFC 4180 (quoted fields, "" for a quote in
 * one) and returns the number of fields, or -1 (the message from weir_csv_error). Field i is
 * got with weir_csv_get(c, i, &len), valid until the next split or free. */
typedef struct wr_csv weir_csv_t; /* opaque */
weir_csv_t *weir_csv_new(int32_t sep);
void weir_csv_free(weir_csv_t *c);
int32_t weir_csv_split(weir_csv_t *c, const char *line, int32_t len);
const char *weir_csv_get(const weir_csv_t *c, int32_t i, int32_t *len);
const char *weir_csv_error(const weir_csv_t *c);

/* Checkpoint files (ckpt.c): the bytes weir.checkpoint builds, made durable in an order that
 * leaves a directory under its final name complete after a crash or a power loss. Every call
 * returns 0 (lock: a descriptor >= 0) or a negative errno (UV_E*: weir_strerror names it), or
 * WEIR_EINVAL for a NULL argument. crc32: zlib's CRC-32 (the one of gzip, PNG and Python's
 * zlib.crc32) of len bytes, continuing from crc (0 to start). lock: creates DIR/LOCK and takes
 * an exclusive flock on it without waiting; UV_EAGAIN when another writer holds it; the kernel
 * drops it when the process dies. write_file: creates or truncates path, writes every byte,
 * fsyncs and closes (ENOSPC, EIO, EDQUOT come back here). fsync_path: fsync of a file or a
 * directory by its path. commit: fsync tmp_dir, rename it to final_dir (UV_EEXIST when that
 * exists), fsync final_dir's parent. remove: unlinks the files of dir and removes it (0 when it
 * is absent). list: the names in dir (without . and ..), NUL-terminated one after another in
 * out while they fit in cap; returns the bytes all of them need. truncate: cuts path to length
 * bytes and fsyncs it. clock_ms: a monotonic reading in ms (CLOCK_MONOTONIC), for the pause and
 * restore times env:metrics().checkpoints reports; never the job's processing time. */
uint32_t weir_ckpt_crc32(uint32_t crc, const void *bytes, size_t len);
int weir_ckpt_lock(const char *dir);
int weir_ckpt_unlock(int32_t fd);
int weir_ckpt_write_file(const char *path, const void *bytes, size_t len);
int weir_ckpt_fsync_path(const char *path);
int weir_ckpt_commit(const char *tmp_dir, const char *final_dir);
int weir_ckpt_remove(const char *dir);
int32_t weir_ckpt_list(const char *dir, char *out, size_t cap);
int weir_ckpt_truncate(const char *path, double length);
double weir_ckpt_clock_ms(void);
/* The CPU time (user + system, ms) of the calling thread: a checkpoint's pause in CPU time. */
double weir_ckpt_cpu_ms(void);
/* The checkpoint writer process (weir.checkpoint_job). fork: returns the child's pid in the
 * job, 0 in the child (which closes lock_fd, dies with the job, ignores the job's signals), or
 * a negative errno; msg_fd gets the read end of a pipe in the job, its write end in the child.
 * child_exit: the child writes msg (at most WEIR_CKPT_MSG_MAX bytes) and _exits. wait: reaps
 * the child (block 0: without waiting): 0 while it runs; when it ended, the bytes of its
 * message + 1, the message NUL-terminated in out (cap bytes), status its exit code (or
 * -signal) and msg_fd closed; a negative errno when waitpid fails. writer_cpu_ms: the CPU
 * time (user + system, ms) of the writer wait reaped last (0 before any); writer_faults: its
 * page faults (minor + major). */
enum { WEIR_CKPT_MSG_MAX = 16384 };
int32_t weir_ckpt_fork(int32_t lock_fd, int32_t *msg_fd);
void weir_ckpt_child_exit(int32_t msg_fd, const char *msg, size_t len);
int32_t weir_ckpt_wait(int32_t pid, int32_t msg_fd, int32_t block, char *out, size_t cap,
                       int32_t *status);
double weir_ckpt_writer_cpu_ms(void);
double weir_ckpt_writer_faults(void);

/* The state file's framing (weir.checkpoint writes and reads it; docs/ARCHITECTURE.md, The
 * checkpoint format): one header, then each section as its header, its name and its payload,
 * the name and the payload each padded with zeros to a multiple of 8 bytes. Little-endian; a
 * host of the other order reads a format it does not know and refuses the file. */
typedef struct weir_ckpt_header {
    char magic[8];     /* "WEIRSTAT" */
    uint32_t format;   /* 1 */
    uint32_t sections;
    double id;         /* the checkpoint's id */
    uint32_t reserved; /* 0 */
    uint32_t crc;      /* crc32 of the 28 bytes before */
} weir_ckpt_header_t;
typedef struct weir_ckpt_section {
    char magic[4];        /* "SECT" */
    uint32_t name_len;    /* bytes of the name that follows (not padded) */
    int32_t key_group;    /* -1: not keyed */
    uint32_t payload_crc; /* crc32 of the payload (not padded) */
    double payload_len;   /* bytes of the payload (not padded) */
    uint32_t reserved;    /* 0 */
    uint32_t crc;         /* crc32 of the 28 bytes before, then of the name */
} weir_ckpt_section_t;

const char *weir_version(void);
const char *weir_strerror(int code);
