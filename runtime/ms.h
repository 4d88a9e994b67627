/* SPDX-License-Identifier: MIT */
/* ms.h: time (and integer ids) across the FFI, the one conversion every C API uses (its rule is
 * stated in weir_ffi.h too). Lua gives doubles with -inf/+inf for the ends
 * of time; C keeps int64 ms with INT64_MIN/INT64_MAX for them. The Lua side passes only whole
 * numbers within +-2^53 (API.md, Time range: timestamps, durations and replay times are
 * bounded so that every time derived from them stays there), which convert exactly and back.
 * Beyond that, as a safety net and not a rule any result relies on: finite values truncate
 * toward zero and saturate, so a time at or beyond +-2^63 becomes an end of time; callers
 * reject NaN before converting. */
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
