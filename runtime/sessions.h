/* SPDX-License-Identifier: MIT */
/* sessions.h: the state of weir.sessionop, event-time session windows in C. Per key id (dense,
 * from 1: weir.wincontext's interner) a sorted array of its in-flight windows, each with its
 * state window (Flink's MergingWindowSet: the first window of a merge keeps its state window)
 * and the slot id where Lua keeps the state window's accumulator; a binary min-heap of timers
 * (time, registration) whose entries are checked when they come up (lazy deletion: a timer
 * counts only while its window is in flight). */
#ifndef WR_SESSIONS_H
#define WR_SESSIONS_H

#include <stdint.h>

#include "weir.h"

/* One in-flight window, 40 bytes. */
typedef struct wr_session {
    int64_t start, stop;   /* the window [start, stop) */
    int64_t sstart, sstop; /* its state window */
    int32_t slot;          /* the state window's slot (Lua holds its contents by slot) */
    int32_t pad;
} wr_session_t;

typedef struct wr_session_key {
    wr_session_t *v; /* sorted by start; never overlapping or touching */
    int32_t n, cap;
} wr_session_key_t;

/* One timer: at time, for key id kid's window [start, stop); what: WEIR_SESSION_FIRE (the
 * trigger's, at the window's max timestamp), WEIR_SESSION_CLEANUP, or both (one time). */
typedef struct wr_session_timer {
    int64_t time;
    uint64_t seq; /* registration order */
    int64_t start, stop;
    int32_t kid;
    int32_t what;
} wr_session_timer_t;

#endif
