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

/* One in-flight window, 80 bytes, and its timers: the trigger's (pending while fire_pending,
 * at fire_t, registered as fire_s) and the cleanup (at clean_t, registered as clean_s;
 * INT64_MAX: none). A timer's registration number orders equal times. With no allowed
 * lateness the two are one timer (the same time and number). */
typedef struct wr_session {
    int64_t start, stop;   /* the window [start, stop) */
    int64_t sstart, sstop; /* its state window */
    int64_t fire_t, clean_t;
    uint64_t fire_s, clean_s;
    int64_t htime; /* the key of the window's one live heap entry (INT64_MAX, UINT64_MAX: */
    uint64_t hseq; /* none) */
    int32_t slot;  /* the state window's slot (Lua holds its contents by slot) */
    int32_t fire_pending;
} wr_session_t;

typedef struct wr_session_key {
    wr_session_t *v; /* sorted by start; never overlapping or touching */
    int32_t n, cap;
} wr_session_key_t;

/* A heap entry, 32 bytes: window (kid, start)'s earliest timer as it was when pushed. A
 * window has one live entry (seq == its hseq); when the window's timers moved later (it grew)
 * the entry comes up early and is pushed again with the window's earliest timer, and an entry
 * whose window is gone, or not its live one, is dropped. */
typedef struct wr_session_timer {
    int64_t time;
    uint64_t seq;
    int64_t start;
    int32_t kid;
    int32_t pad;
} wr_session_timer_t;

#endif
