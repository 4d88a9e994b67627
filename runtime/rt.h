/* SPDX-License-Identifier: MIT */
/* rt.h: the runtime's and the source base's structs, private to the event layer (loop.c,
 * signals.c, source.c and the source_*.c files; it includes uv.h). The runtime owns the uv loop,
 * the clock and every source; a source is owned by the runtime from wr_source_add (or
 * wr_source_add_alone) until weir_rt_free. It includes no other module's header but the base
 * ones, so every part of the event layer may include it without a circle. */
#ifndef WR_RT_H
#define WR_RT_H

#include <signal.h>
#include <stdint.h>
#include <uv.h>

#include "clock.h"
#include "err.h"
#include "weir.h"

typedef struct wr_source wr_source_t; /* also in source.h: C11 allows the repeat */

/* What the loop asks of a source kind. Every hook but fill and pending may be NULL (pending
 * too for the input delivered alone, which weir_source_pending cannot name). */
typedef struct wr_source_ops {
    /* weir_rt_start: open files, start connecting. Returns 0 or a negative code with the
     * detail set through wr_err_set(&rt->err, ...). */
    int (*open)(wr_source_t *s);
    /* Start of a poll: records handed out by the previous poll are no longer referenced. */
    void (*begin)(wr_source_t *s);
    /* Append whatever is ready at wr_loop_now (records, then END) without blocking. The
     * input delivered alone appends at most one event, into an empty batch. */
    void (*fill)(wr_source_t *s);
    /* The next time the source becomes ready by time alone (rate generator, replay), or
     * WR_NEVER. */
    int64_t (*next_due)(const wr_source_t *s);
    /* weir_source_pending for a started source that has not ended: 1 when input is waiting
     * at clock reading now_ms (a record a poll would deliver without waiting for more bytes
     * or for time to pass), else 0. Reads only (ioctl FIONREAD at most). */
    int (*pending)(const wr_source_t *s, int64_t now_ms);
    /* After STOP: stop reading; fill then drains complete records and ends with STOPPED. */
    void (*stop)(wr_source_t *s);
    /* weir_rt_free: uv_close every handle and cancel requests; the loop then runs until all
     * close callbacks have run, and destroy frees the memory. */
    void (*close)(wr_source_t *s);
    void (*destroy)(wr_source_t *s);
    /* Checkpoints (weir_source_position, weir_source_seek; both optional: without them a
     * kind is not replayable). position fills the kind's fields of pos (offset, line,
     * skipping, check, replayable; the base has set the counters). seek, before start,
     * keeps pos for open; returns 0 or a negative code with the detail set. */
    void (*position)(const wr_source_t *s, weir_source_position_t *pos);
    int (*seek)(wr_source_t *s, const weir_source_position_t *pos);
    /* --input-log (inputlog.h): release the log's bytes before offset; optional. */
    int (*release_log)(wr_source_t *s, int64_t offset);
    /* Watermark alignment (weir_source_pause): on = 1 stops reading (a stream's uv_read_stop,
     * Kafka's rd_kafka_pause_partitions), 0 lets fill read again. Optional: without it the
     * base alone pauses the kind (no fill, no next_due while paused). Never after STOP. */
    void (*pause)(wr_source_t *s, int on);

    /* The input delivered alone (wr_source_add_alone) only, each optional: */
    /* The poll is about to wait in uv_run (after stdout was flushed): show a prompt. */
    void (*wait)(wr_source_t *s);
    /* The poll returns events or an error, so Lua is about to print: clear the prompt. */
    void (*returning)(wr_source_t *s);
    /* A SIGINT while a poll runs (signals.c): drop the line being typed and append the one
     * event that reports it. */
    void (*interrupt)(wr_source_t *s);
} wr_source_ops_t;

struct wr_source {
    const wr_source_ops_t *ops;
    weir_rt_t *rt;
    int32_t id;
    char *describe;    /* owned; e.g. "read_text_file data/words.txt" */
    const char *kind;  /* static; the first word of describe */
    int clocked;       /* due times drive the virtual clock (replay, generator with a rate) */
    int io;            /* reads through libuv streams, so a poll runs the loop for it */
    int fed;           /* only Lua feeds it (manual): a poll never waits for it */
    int stopping;      /* STOP was delivered: drain, then END(STOPPED) */
    int ended;         /* its END is in a delivered batch (delivered alone: not reading) */
    int drop_reported; /* the first overlong record has been reported on stderr */
    int paused;        /* weir_source_pause: fill and next_due skip it (until STOP) */
    int fills_paused;  /* the kind pauses itself (Kafka): fill still runs while paused */
    double stat[4];    /* WEIR_STAT_* */
    char *input_log;   /* owned; weir_source_input_log's path (inputlog.h), or NULL */
};

struct weir_rt {
    uv_loop_t loop;
    uv_timer_t timer; /* real clock: wakes uv_run for the next tick, wakeup or due item */
    uv_async_t wake;  /* the signal handler's way into a blocked uv_run */
    wr_clock_t clock;
    wr_err_t err;     /* detail of the last failed call */
    wr_err_t fail;    /* the job's failure, sticky; code 0 = none */

    wr_source_t **sources;
    int32_t nsources;
    size_t sources_cap;

    int started;
    int stop_requested;
    int stop_delivered;
    int signals_installed;
    struct sigaction old_sigint;
    struct sigaction old_sigterm;
    struct sigaction old_sigusr1;
    struct sigaction old_sigalrm;

    /* the labels the second-signal handler names (weir_op_slot), fixed from start on */
    char **op_labels;
    int32_t nop_labels;

    int64_t start_ms;  /* clock reading at weir_rt_start */
    int restored_clock;        /* weir_rt_restore_clock ran: start takes the two below */
    int64_t restored_start_ms;
    int64_t restored_next_tick_ms;
    int64_t tick_ms;   /* 0 = no ticks */
    int64_t next_tick_ms;
    int64_t wakeup_ms; /* WR_NEVER = none */
    int64_t advance_ms; /* virtual clock: weir_rt_advance's target; at or below now = none */
    int nowait;         /* weir_loop_poll_nowait: stop where a poll would read input or wait */
    int hold_clock;     /* weir_rt_hold_clock: only weir_rt_advance moves the virtual clock */

    wr_source_t *alone; /* owned; the input delivered alone (source_repl.c) or NULL */

    /* the batch being filled by the current poll */
    weir_event_t *out;
    int32_t n;
    int32_t max;
    int64_t now_ms;
    uint32_t rotate; /* real clock: the source that fills first, for fairness */
    int sources_first; /* real clock: the last poll gave a TIMER or TICK, so this one fills the
                          sources before another is given (a batch that outlasts the tick
                          interval must not starve the sources) */
};

/* 1 while the input delivered alone is reading and the STOP has not been delivered: a poll may
 * wait for it, and SIGINT is its interrupt instead of a stop (signals.c). */
static inline int wr_rt_alone_live(const weir_rt_t *rt)
{
    return rt->alone != NULL && !rt->alone->ended && !rt->stop_delivered;
}

/* 1 when the kernel holds unread bytes for h's descriptor (ioctl FIONREAD), else 0 (also when
 * h has no descriptor or the ioctl fails). For the pending hooks of stream sources (source.c). */
int wr_source_unread(const uv_handle_t *h);

#endif
