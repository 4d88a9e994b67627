/* SPDX-License-Identifier: MIT */
/* ms.h: time (and integer ids) across the FFI. Lua gives doubles with -inf/+inf for the ends
 * of time; C keeps int64 ms with INT64_MIN/INT64_MAX for them. Finite values truncate toward
 * zero and saturate; callers reject NaN before converting. */
#ifndef WR_MS_H
#define WR_MS_H

#include <math.h>
#include <stdint.h>

static inline int64_t wr_ms_from_double(double ms)
{
    if (ms <= -9223372036854775808.0) {
        return INT64_MIN;
    }
    if (ms >= 9223372036854775808.0) {
        return INT64_MAX;
    }
    return (int64_t)ms;
}

static inline double wr_ms_to_double(int64_t ms)
{
    if (ms == INT64_MIN) {
        return -INFINITY;
    }
    if (ms == INT64_MAX) {
        return INFINITY;
    }
    return (double)ms;
}

#endif
