/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/nexmark_q5.lua: Nexmark q5 (hot items) over the same bids, made by the
 * same generator (runtime/nexmark_gen.h, default configuration, seed 0). Sliding windows of
 * 10 s every 2 s, as Flink assigns them (a bid at ts lies in the windows starting at
 * ts - ts % 2000, then every 2 s back while start > ts - 10000); per window a hash map auction ->
 * count. Timestamps never go back, so at most 5 windows take bids at a time and a ring of 8
 * holds them: before a bid is added, every window whose end is at or below its timestamp fires
 * (the watermark of Flink's monotonous generator is max ts - 1), and what is left fires at the
 * end. A fired window yields every auction with the highest count; the checksum is
 * bench/common.lua's (results, events = sum of their counts, digest = sum of (auction + 1) *
 * (start / 2000 + 5) * count mod 2^32). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nexmark_gen.h"

enum { SIZE_MS = 10000, SLIDE_MS = 2000, RING = 8 };

typedef struct cell {
    int32_t auction;
    int32_t count; /* 0: empty */
} cell_t;

typedef struct window {
    int64_t start;
    int open;
    cell_t *cells;
    size_t cap; /* power of two */
    size_t used;
} window_t;

static window_t ring[RING];
static uint64_t results, events_counted;
static uint32_t digest;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (p == NULL) {
        fprintf(stderr, "bench_baseline_nexmark_q5: out of memory\n");
        exit(1);
    }
    return p;
}

static size_t slot_of(int32_t auction, size_t cap)
{
    return (size_t)(((uint64_t)(uint32_t)auction * 0x9e3779b97f4a7c15u) >> 40) & (cap - 1);
}

static void grow(window_t *w);

static void count_bid(window_t *w, int32_t auction)
{
    size_t i = slot_of(auction, w->cap);
    while (w->cells[i].count != 0) {
        if (w->cells[i].auction == auction) {
            w->cells[i].count++;
            return;
        }
        i = (i + 1) & (w->cap - 1);
    }
    if ((w->used + 1) * 2 > w->cap) {
        grow(w);
        count_bid(w, auction);
        return;
    }
    w->cells[i] = (cell_t){ auction, 1 };
    w->used++;
}

static void grow(window_t *w)
{
    cell_t *old = w->cells;
    size_t old_cap = w->cap;
    w->cap *= 2;
    w->cells = xcalloc(w->cap, sizeof *w->cells);
    for (size_t k = 0; k < old_cap; k++) {
        if (old[k].count != 0) {
            size_t i = slot_of(old[k].auction, w->cap);
            while (w->cells[i].count != 0) {
                i = (i + 1) & (w->cap - 1);
            }
            w->cells[i] = old[k];
        }
    }
    free(old);
}

static void fire(window_t *w)
{
    int32_t max = 0;
    for (size_t k = 0; k < w->cap; k++) {
        if (w->cells[k].count > max) {
            max = w->cells[k].count;
        }
    }
    for (size_t k = 0; k < w->cap; k++) {
        if (w->cells[k].count == max) {
            results++;
            events_counted += (uint64_t)max;
            uint64_t term = (uint64_t)(w->cells[k].auction + 1)
                            * (uint64_t)(w->start / SLIDE_MS + 5) * (uint64_t)max;
            digest = (uint32_t)(digest + term);
        }
    }
    memset(w->cells, 0, w->cap * sizeof *w->cells);
    w->used = 0;
    w->open = 0;
}

static window_t *window_at(int64_t start)
{
    /* start is a multiple of SLIDE_MS and >= -SIZE_MS */
    window_t *w = &ring[(size_t)((start + SIZE_MS) / SLIDE_MS) % RING];
    if (!w->open) {
        w->open = 1;
        w->start = start;
    }
    return w;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_baseline_nexmark_q5 N\n");
        return 2;
    }
    int64_t n = strtoll(argv[1], NULL, 10);
    for (int k = 0; k < RING; k++) {
        ring[k].cap = 1024;
        ring[k].cells = xcalloc(ring[k].cap, sizeof *ring[k].cells);
    }
    wr_nexmark_t config = wr_nexmark_defaults();
    for (int64_t i = 0; i < n; i++) {
        wr_nexmark_bid_t b = wr_nexmark_bid(&config, i);
        int64_t ts = (int64_t)b.ts;
        for (int k = 0; k < RING; k++) {
            if (ring[k].open && ring[k].start + SIZE_MS <= ts) {
                fire(&ring[k]);
            }
        }
        int64_t last = ts - ts % SLIDE_MS; /* ts >= 0 */
        for (int64_t s = last; s > ts - SIZE_MS; s -= SLIDE_MS) {
            count_bid(window_at(s), b.auction);
        }
    }
    for (int k = 0; k < RING; k++) {
        if (ring[k].open) {
            fire(&ring[k]);
        }
        free(ring[k].cells);
    }
    printf("hot %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", results, events_counted,
           digest);
    return 0;
}
