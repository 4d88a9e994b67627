/* SPDX-License-Identifier: MIT */
/* clock.c: the only reader of the wall clock. The real clock is CLOCK_MONOTONIC plus a fixed
 * offset taken from CLOCK_REALTIME at init: readings are epoch ms, yet never go back. */
#include "clock.h"

#include <time.h>

static int64_t read_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void wr_clock_init_real(wr_clock_t *c)
{
    c->is_virtual = 0;
    c->virtual_ms = 0;
    c->mono_ns = read_ns(CLOCK_MONOTONIC);
    c->epoch_ms = read_ns(CLOCK_REALTIME) / 1000000;
}

void wr_clock_init_virtual(wr_clock_t *c, int64_t start_ms)
{
    c->is_virtual = 1;
    c->virtual_ms = start_ms;
    c->epoch_ms = 0;
    c->mono_ns = 0;
}

int wr_clock_is_virtual(const wr_clock_t *c)
{
    return c->is_virtual;
}

int64_t wr_clock_real_at(const wr_clock_t *c, int64_t mono_ns)
{
    int64_t d = mono_ns - c->mono_ns;
    /* floor division, so a reading just before init maps below epoch_ms, not onto it */
    int64_t ms = d / 1000000;
    if (d < 0 && d % 1000000 != 0) {
        ms--;
    }
    return c->epoch_ms + ms;
}

int64_t wr_clock_now(const wr_clock_t *c)
{
    if (c->is_virtual) {
        return c->virtual_ms;
    }
    return wr_clock_real_at(c, read_ns(CLOCK_MONOTONIC));
}

void wr_clock_advance_to(wr_clock_t *c, int64_t ms)
{
    if (c->is_virtual && ms > c->virtual_ms) {
        c->virtual_ms = ms;
    }
}
