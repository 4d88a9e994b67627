/* SPDX-License-Identifier: MIT */
/* loop.h: what the sources (source_*.c) ask the loop while a poll runs: the clock reading, the
 * job's failure, the pure tick arithmetic. The poll model itself is weir_loop_poll
 * (weir_ffi.h); the calls that fill the batch are the source base's (source.h). No uv.h here:
 * rt.h has the structs, for the event layer only. */
#ifndef WR_LOOP_H
#define WR_LOOP_H

#include <stdint.h>

#include "weir.h"

/* "No such time": no wakeup, nothing due. A macro: an enum constant must fit an int. */
#define WR_NEVER INT64_MAX

/* The first point start + k * interval_ms (k >= 1) that is later than now_ms. */
int64_t wr_loop_next_tick(int64_t start_ms, int64_t interval_ms, int64_t now_ms);

/* Fails the job: the next poll returns code and weir_rt_error says the message. The first
 * failure wins. Returns code. */
int wr_loop_fail(weir_rt_t *rt, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The clock reading that the events of the current pass carry. */
int64_t wr_loop_now(const weir_rt_t *rt);
/* 1 when rt runs on the virtual clock (weir_rt_new(WEIR_CLOCK_VIRTUAL)), else 0. */
int wr_loop_clock_is_virtual(const weir_rt_t *rt);

#endif
