/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/sessions.lua: the same events (10,000 keys, bursts of 8 out of
 * order, see the job), event-time session windows with a 5 s gap, a count per session. Plain
 * C, no weir code: per key a sorted array of its open sessions [start, end) with their counts;
 * an element's window [t, t + gap) merges with every session it overlaps or touches (Flink's
 * TimeWindow.intersects), found by binary search. A binary min-heap of (end, key, start) plays
 * the event-time timers: a push per new or grown session, and an entry whose session has since
 * grown or fired is skipped when it comes up. The watermark is the largest timestamp so far
 * - 5 s - 1 (bounded out-of-orderness); a session fires once it reaches the end - 1. What is
 * left fires at the end of input. The job's watermarks are periodic, so they may lag this one:
 * the program stops with an error if an element is late here or touches a session that has
 * already fired, since either would make the two outputs differ. The checksum is the one of
 * the Lua job: sessions fired, events counted, digest = sum of (key + 1) *
 * ((start + 3 * end) % 65536 + 1) * count mod 2^32. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { KEYS = 10000, BURST_MS = 20000, GAP_MS = 5000, BOUND_MS = 5000 };

static const int64_t OFFSETS[8] = { 0, 1000, 2000, 8000, 4000, 9000, 10000, 11000 };

typedef struct session {
    int64_t start, end;
    int64_t count;
} session_t;

typedef struct key_sessions {
    session_t *v; /* sorted by start; never overlapping or touching */
    int n, cap;
    int64_t fired_end; /* the largest end of a fired session */
} key_sessions_t;

typedef struct timer {
    int64_t end;
    int64_t start;
    int32_t key;
} timer_t_;

static key_sessions_t keys[KEYS];
static timer_t_ *heap;
static size_t heap_len, heap_cap;

static uint64_t sessions_fired, events_counted;
static uint32_t digest;

static void *xrealloc(void *p, size_t size)
{
    p = realloc(p, size);
    if (p == NULL) {
        fprintf(stderr, "bench_baseline_sessions: out of memory\n");
        exit(1);
    }
    return p;
}

static void die(const char *what, int32_t key, int64_t t)
{
    fprintf(stderr, "bench_baseline_sessions: key %" PRId32 " element %" PRId64 ": %s\n", key, t,
            what);
    exit(1);
}

static void heap_push(timer_t_ x)
{
    if (heap_len == heap_cap) {
        heap_cap = heap_cap ? heap_cap * 2 : 1024;
        heap = xrealloc(heap, heap_cap * sizeof *heap);
    }
    size_t i = heap_len++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (heap[p].end <= x.end) {
            break;
        }
        heap[i] = heap[p];
        i = p;
    }
    heap[i] = x;
}

static timer_t_ heap_pop(void)
{
    timer_t_ top = heap[0];
    timer_t_ x = heap[--heap_len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap_len) {
            break;
        }
        if (c + 1 < heap_len && heap[c + 1].end < heap[c].end) {
            c++;
        }
        if (x.end <= heap[c].end) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    if (heap_len > 0) {
        heap[i] = x;
    }
    return top;
}

/* The index of the first session of ks whose end >= t (ks->n when none). */
static int first_reaching(const key_sessions_t *ks, int64_t t)
{
    int lo = 0, hi = ks->n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (ks->v[mid].end < t) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return lo;
}

static void add_element(int32_t key, int64_t t, int64_t wm)
{
    key_sessions_t *ks = &keys[key];
    int64_t start = t, end = t + GAP_MS;
    if (end - 1 <= wm) {
        die("late (the input pattern is wrong)", key, t);
    }
    if (start <= ks->fired_end) {
        die("touches a fired session (the input pattern is wrong)", key, t);
    }
    int a = first_reaching(ks, start);
    int b = a; /* sessions [a, b) intersect [start, end) */
    while (b < ks->n && ks->v[b].start <= end) {
        b++;
    }
    if (b - a == 1 && ks->v[a].start <= start && ks->v[a].end >= end) {
        ks->v[a].count++; /* inside a session: nothing changes but its contents */
        return;
    }
    int64_t count = 1;
    for (int i = a; i < b; i++) {
        if (ks->v[i].start < start) {
            start = ks->v[i].start;
        }
        if (ks->v[i].end > end) {
            end = ks->v[i].end;
        }
        count += ks->v[i].count;
    }
    if (a == b) { /* a new session at a */
        if (ks->n == ks->cap) {
            ks->cap = ks->cap ? ks->cap * 2 : 4;
            ks->v = xrealloc(ks->v, (size_t)ks->cap * sizeof *ks->v);
        }
        memmove(&ks->v[a + 1], &ks->v[a], (size_t)(ks->n - a) * sizeof *ks->v);
        ks->n++;
    } else if (b - a > 1) { /* sessions a + 1 .. b - 1 merge into a */
        memmove(&ks->v[a + 1], &ks->v[b], (size_t)(ks->n - b) * sizeof *ks->v);
        ks->n -= b - a - 1;
    }
    ks->v[a] = (session_t){ start, end, count };
    heap_push((timer_t_){ end, start, key });
}

/* Fires every session whose end - 1 <= wm. */
static void advance_watermark(int64_t wm)
{
    while (heap_len > 0 && heap[0].end - 1 <= wm) {
        timer_t_ x = heap_pop();
        key_sessions_t *ks = &keys[x.key];
        int i = first_reaching(ks, x.end);
        if (i == ks->n || ks->v[i].start != x.start || ks->v[i].end != x.end) {
            continue; /* the session grew or fired since */
        }
        uint64_t count = (uint64_t)ks->v[i].count;
        sessions_fired++;
        events_counted += count;
        uint64_t term = (uint64_t)(x.key + 1) * (uint64_t)((x.start + 3 * x.end) % 65536 + 1);
        digest = (uint32_t)(digest + term * count);
        if (x.end > ks->fired_end) {
            ks->fired_end = x.end;
        }
        memmove(&ks->v[i], &ks->v[i + 1], (size_t)(ks->n - i - 1) * sizeof *ks->v);
        ks->n--;
    }
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 10000000LL;
    for (int k = 0; k < KEYS; k++) {
        keys[k].fired_end = INT64_MIN;
    }
    int64_t max_ts = INT64_MIN;
    int64_t wm = INT64_MIN;
    for (long long i = 0; i < n; i++) {
        int32_t k = (int32_t)(i % KEYS);
        int64_t j = i / KEYS;
        int64_t ts = j / 8 * BURST_MS + OFFSETS[j % 8] + k / 10;
        if (ts > max_ts) {
            max_ts = ts;
            wm = max_ts - BOUND_MS - 1;
            advance_watermark(wm);
        }
        add_element(k, ts, wm);
    }
    advance_watermark(INT64_MAX);
    printf("sessions %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", sessions_fired,
           events_counted, digest);
    for (int k = 0; k < KEYS; k++) {
        free(keys[k].v);
    }
    free(heap);
    return 0;
}
