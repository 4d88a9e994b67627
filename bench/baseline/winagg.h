/* SPDX-License-Identifier: MIT */
/* winagg.h: the windowed count that bench/baseline/windows.c, text.c and kafka.c share, in
 * plain C with no weir code: tumbling 5 s event-time windows, a count per (key, window). State
 * is an open-addressing hash map (key, window start) -> count; a FIFO of (key, window start) in
 * first-element order plays the event-time timers (timestamps are monotonous, so window ends come
 * in FIFO order); the watermark is the largest timestamp so far - 1 (Flink's monotonous
 * generator), and a window fires and is freed once the watermark reaches its end - 1; what is
 * left fires at the end of input. The checksum is order-independent, as in the Lua jobs: windows
 * fired, events counted, and digest = sum of (key + 1) * (window index + 1) * count mod 2^32.
 *
 * A header of static functions and state, not a .c of its own: each program compiles the
 * aggregation into its own translation unit, so add_event() inlines into its loop as it did
 * before the two shared it. The includer defines PROGRAM (its name, for error messages) first,
 * and calls init_windows(), add_event() (or add_key_ts() for a "key,ts" text) per event, then
 * finish_windows() once. */
#ifndef BENCH_WINAGG_H
#define BENCH_WINAGG_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { WINDOW_MS = 5000 };

typedef struct entry {
    int64_t start;
    int32_t key;
    int32_t count; /* 0 = empty slot */
} entry_t;

typedef struct pending {
    int64_t start;
    int32_t key;
} pending_t;

static entry_t *table;
static size_t cap; /* power of two */
static size_t used;

static pending_t *fifo; /* ring buffer of windows waiting for their end */
static size_t fifo_cap, fifo_head, fifo_len;

static uint64_t windows_fired, events_counted;
static uint32_t digest;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL) {
        fprintf(stderr, "%s: out of memory\n", PROGRAM);
        exit(1);
    }
    return p;
}

static size_t hash(int32_t key, int64_t start)
{
    uint64_t h = ((uint64_t)start << 20) ^ (uint32_t)key;
    h *= 0x9e3779b97f4a7c15u;
    return (size_t)(h >> 17);
}

static void grow_table(void);

/* The entry of (key, start), created with count 0 (and its window queued) when absent. */
static entry_t *find_or_add(int32_t key, int64_t start)
{
    size_t mask = cap - 1;
    size_t i = hash(key, start) & mask;
    while (table[i].count != 0) {
        if (table[i].key == key && table[i].start == start) {
            return &table[i];
        }
        i = (i + 1) & mask;
    }
    if ((used + 1) * 2 > cap) {
        grow_table();
        return find_or_add(key, start);
    }
    used++;
    table[i].key = key;
    table[i].start = start;
    if (fifo_len == fifo_cap) {
        size_t ncap = fifo_cap * 2;
        pending_t *n = xcalloc(ncap, sizeof *n);
        for (size_t k = 0; k < fifo_len; k++) {
            n[k] = fifo[(fifo_head + k) & (fifo_cap - 1)];
        }
        free(fifo);
        fifo = n;
        fifo_cap = ncap;
        fifo_head = 0;
    }
    fifo[(fifo_head + fifo_len) & (fifo_cap - 1)] = (pending_t){ start, key };
    fifo_len++;
    return &table[i];
}

static void grow_table(void)
{
    entry_t *old = table;
    size_t old_cap = cap;
    cap *= 2;
    table = xcalloc(cap, sizeof *table);
    for (size_t k = 0; k < old_cap; k++) {
        if (old[k].count != 0) {
            size_t i = hash(old[k].key, old[k].start) & (cap - 1);
            while (table[i].count != 0) {
                i = (i + 1) & (cap - 1);
            }
            table[i] = old[k];
        }
    }
    free(old);
}

/* Linear probing deletion by backward shift: no tombstones, probe chains stay short. */
static void remove_at(size_t i)
{
    size_t mask = cap - 1;
    size_t j = i;
    for (;;) {
        j = (j + 1) & mask;
        if (table[j].count == 0) {
            break;
        }
        size_t home = hash(table[j].key, table[j].start) & mask;
        /* move j back to i unless its home lies cyclically in (i, j] */
        if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
            table[i] = table[j];
            i = j;
        }
    }
    table[i].count = 0;
    used--;
}

static void fire(int32_t key, int64_t start)
{
    size_t mask = cap - 1;
    size_t i = hash(key, start) & mask;
    while (!(table[i].key == key && table[i].start == start)) {
        i = (i + 1) & mask;
    }
    uint64_t count = (uint64_t)table[i].count;
    windows_fired++;
    events_counted += count;
    uint64_t term = (uint64_t)(key + 1) * (uint64_t)(start / WINDOW_MS + 1) * count;
    digest = (uint32_t)(digest + term);
    remove_at(i);
}

/* Fires every window whose max timestamp (end - 1) is <= wm, in FIFO (= end) order. */
static void advance_watermark(int64_t wm)
{
    while (fifo_len > 0) {
        pending_t p = fifo[fifo_head];
        if (p.start + WINDOW_MS - 1 > wm) {
            break;
        }
        fifo_head = (fifo_head + 1) & (fifo_cap - 1);
        fifo_len--;
        fire(p.key, p.start);
    }
}

static int64_t max_ts = INT64_MIN;

static void init_windows(void)
{
    cap = 1u << 16;
    table = xcalloc(cap, sizeof *table);
    fifo_cap = 1u << 15;
    fifo = xcalloc(fifo_cap, sizeof *fifo);
}

/* One event, ts >= 0. A late event (its window already fired) is not dropped as in Flink: it
 * opens its window again. Neither program's input has one: timestamps never go back. */
static void add_event(int32_t key, int64_t ts)
{
    if (ts > max_ts) {
        max_ts = ts;
        advance_watermark(max_ts - 1);
    }
    int64_t start = ts - ts % WINDOW_MS; /* ts >= 0 */
    find_or_add(key, start)->count++;
}

/* End of input: fires what is left, prints the checksum line and frees the state. */
static void finish_windows(void)
{
    advance_watermark(INT64_MAX);
    printf("windows %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", windows_fired,
           events_counted, digest);
    free(table);
    free(fifo);
}

/* Parses [p, end) as "<digits>,<digits>" into *key and *ts; anything else is an error naming
 * what (e.g. "line", "message") and its number n. */
static inline void parse_key_ts(const char *p, const char *end, const char *what, long long n,
                                int32_t *key_out, int64_t *ts_out)
{
    int64_t key = 0, ts = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        key = key * 10 + (*q++ - '0');
    }
    int ok = q > p && q < end && *q == ',';
    const char *t = ++q;
    while (q < end && *q >= '0' && *q <= '9') {
        ts = ts * 10 + (*q++ - '0');
    }
    if (!ok || q == t || q != end) {
        fprintf(stderr, "%s: %s %lld: expected key,ts\n", PROGRAM, what, n);
        exit(1);
    }
    *key_out = (int32_t)key;
    *ts_out = ts;
}

/* Parses [p, end) as parse_key_ts does and adds the event. */
static inline void add_key_ts(const char *p, const char *end, const char *what, long long n)
{
    int32_t key;
    int64_t ts;
    parse_key_ts(p, end, what, n, &key, &ts);
    add_event(key, ts);
}

/* Counts an event in its window without moving the watermark (the caller advances it with
 * advance_watermark, e.g. per-partition watermarks' minimum); ts >= 0. */
static inline void count_event(int32_t key, int64_t ts)
{
    find_or_add(key, ts - ts % WINDOW_MS)->count++;
}

#endif
