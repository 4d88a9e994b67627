/* SPDX-License-Identifier: MIT */
/* loop.h: what the sources (source_*.c) call back into the loop with while a poll fills its
 * batch, plus the pure time arithmetic. The poll model itself is weir_loop_poll (weir_ffi.h).
 * No uv.h here: rt.h has the structs, for loop.c and source_*.c only. */
#ifndef WR_LOOP_H
#define WR_LOOP_H

#include <stdint.h>

#include "lines.h"
#include "weir.h"

typedef struct wr_source wr_source_t;

/* "No such time": no wakeup, nothing due. A macro: an enum constant must fit an int. */
#define WR_NEVER INT64_MAX

/* The first point start + k * interval_ms (k >= 1) that is later than now_ms. */
int64_t wr_loop_next_tick(int64_t start_ms, int64_t interval_ms, int64_t now_ms);

/* Sets the detail of a failed API call (weir_rt_error) and returns code. */
int wr_loop_error(weir_rt_t *rt, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Fails the job: the next poll returns code and weir_rt_error says the message. The first
 * failure wins. Returns code. */
int wr_loop_fail(weir_rt_t *rt, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The REPL opened or stopped reading (repl.c, loop.c): re-decides whether SIGINT is the
 * REPL's (an interrupt, never a stop) for the runtime that owns the signals. */
void wr_loop_sync_signals(weir_rt_t *rt);

/* 1 if another source may still be added, else sets the error and returns 0. */
int wr_loop_may_add(weir_rt_t *rt);
/* Registers s (allocated by the caller, which gives it to the runtime) and returns its id, or a
 * negative code after start (WEIR_ESTATE). describe is copied. On error s is destroyed. */
int32_t wr_loop_add_source(weir_rt_t *rt, wr_source_t *s, const char *describe);

/* The clock reading that the events of the current pass carry. */
int64_t wr_loop_now(const weir_rt_t *rt);
/* Free event slots left in the batch being filled. */
int32_t wr_loop_room(const weir_rt_t *rt);
/* Appends an event of s to the batch (time = wr_loop_now) or returns NULL when it is full. */
weir_event_t *wr_loop_push(weir_rt_t *rt, wr_source_t *s, int32_t kind);
/* Moves records from l into the batch: complete ones, and with at_eof also the leftover.
 * Overlong records are counted and reported once per source on stderr. Returns 1 when nothing
 * more is available right now, 0 when the batch filled first. */
int wr_loop_emit_text(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof);
/* The typed text path: like wr_loop_emit_text, but each line is parsed with fields into the
 * next record of buf (room for cap records of wr_fields_size(fields) bytes; *used of them are
 * taken by this poll and not yet read by Lua, counted up here). Consecutive parsed lines go
 * out as one WEIR_EV_RECORDS run; a line that does not parse goes out as a WEIR_EV_LINE
 * flagged WEIR_LINE_MALFORMED, so Lua can name it. At most rt's batch size of records per
 * poll. Returns as wr_loop_emit_text (0 also when buf or the batch's record budget is full). */
int wr_loop_emit_fields(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof,
                        const weir_fields_t *fields, char *buf, int32_t cap, int32_t *used);
/* Appends END(flags) and marks s ended; returns 0 if the batch is full (try again later). */
int wr_loop_emit_end(weir_rt_t *rt, wr_source_t *s, int32_t flags);

/* Lua's double milliseconds as C's int64: +-inf become INT64_MAX/INT64_MIN (so +inf is
 * WR_NEVER), fractions are floored. Returns -1 for NaN, else 0. */
int wr_loop_ms(double v, int64_t *out);

#endif
