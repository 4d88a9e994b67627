/* SPDX-License-Identifier: MIT */
/* clock.h: processing time in integer ms since the epoch. Real: CLOCK_MONOTONIC mapped onto the
 * epoch once, at init, so it never goes back when the wall clock is adjusted. Virtual: a value
 * the runtime moves forward (replay). clock.c is the only reader of the wall clock. */
#ifndef WR_CLOCK_H
#define WR_CLOCK_H

#include <stdint.h>

typedef struct wr_clock {
    int is_virtual;
    int64_t virtual_ms; /* virtual: the current reading */
    int64_t epoch_ms;   /* real: CLOCK_REALTIME at init, in ms */
    int64_t mono_ns;    /* real: CLOCK_MONOTONIC at init, in ns */
} wr_clock_t;

/* Reads CLOCK_REALTIME once and CLOCK_MONOTONIC, and maps the second onto the first. */
void wr_clock_init_real(wr_clock_t *c);
void wr_clock_init_virtual(wr_clock_t *c, int64_t start_ms);
int wr_clock_is_virtual(const wr_clock_t *c);

/* The reading: real, ms since the epoch (monotonic); virtual, the current value. */
int64_t wr_clock_now(const wr_clock_t *c);
/* Virtual: moves the clock to ms if that is later (it never goes back). Real: no effect. */
void wr_clock_advance_to(wr_clock_t *c, int64_t ms);
/* Real: the reading that corresponds to a CLOCK_MONOTONIC value (pure; exposed for tests). */
int64_t wr_clock_real_at(const wr_clock_t *c, int64_t mono_ns);

#endif
