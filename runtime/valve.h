/* SPDX-License-Identifier: MIT */
/* valve.h: the watermark valve of one operator input (Flink's StatusWatermarkValve, SEMANTICS.md
 * section 3, with the FLINK-40475 rules): combines the watermarks and idle/active statuses of N
 * input channels into one output watermark that never goes back, and one output status. */
#ifndef WR_VALVE_H
#define WR_VALVE_H

#include <stdbool.h>
#include <stdint.h>

/* What a status change did to the valve's output; a bit set, 0 = nothing. The values are also
 * the FFI's (weir_valve_watermark, weir_valve_status in weir_ffi.h). */
enum {
    WR_VALVE_ADVANCED = 1,      /* the output watermark moved forward: read wr_valve_output */
    WR_VALVE_STATUS_CHANGED = 2 /* the output status flipped: read wr_valve_is_idle */
};

typedef struct wr_valve_channel {
    int64_t wm;   /* highest watermark seen on the channel; INT64_MIN before the first */
    bool active;  /* false after IDLE, until ACTIVE */
    bool aligned; /* counts towards the min: active and wm caught up with the output */
} wr_valve_channel_t;

/* Caller's storage; the valve owns `ch`. When both a watermark and a status change come out of
 * one call, the watermark comes first (the flush when every channel goes idle). */
typedef struct wr_valve {
    wr_valve_channel_t *ch;
    int channels;
    int64_t last_out; /* output watermark; INT64_MIN until the first one */
    bool idle;        /* output status: true once every channel is idle */
} wr_valve_t;

/* Sets up a valve over `channels` channels (>= 1), all active with no watermark; output
 * INT64_MIN, ACTIVE. Returns 0, or WEIR_EINVAL for channels < 1 (then v is empty and
 * wr_valve_close is still safe). */
int wr_valve_init(wr_valve_t *v, int channels);
void wr_valve_close(wr_valve_t *v);

/* Watermark wm arrives on channel ch (0 <= ch < channels). Returns the output watermark after
 * the call: larger than before exactly when the output advanced. Ignored while ch is idle, while
 * the whole valve is idle, and when wm is not above the channel's previous watermark. */
int64_t wr_valve_advance(wr_valve_t *v, int ch, int64_t wm);

/* Channel ch reports IDLE / ACTIVE. A repeat of the channel's current status does nothing.
 * Return WR_VALVE_* bits. */
int wr_valve_mark_idle(wr_valve_t *v, int ch);
int wr_valve_mark_active(wr_valve_t *v, int ch);

/* Adds a channel (the last, number channels - 1 after the call), active with no watermark:
 * it holds the output where it is until it has a watermark or goes idle (a Kafka partition
 * discovered while the job runs). Returns WR_VALVE_STATUS_CHANGED when the valve was idle. */
int wr_valve_add_channel(wr_valve_t *v);
int64_t wr_valve_output(const wr_valve_t *v);
bool wr_valve_is_idle(const wr_valve_t *v);

#endif
