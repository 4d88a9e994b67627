/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/nexmark_q7.lua: Nexmark q7 (highest bid per tumbling 10 s window) over
 * the same bids, made by the same generator (runtime/nexmark_gen.h, default configuration,
 * seed 0). Timestamps never go back, so one open window is enough: when a bid starts a new
 * window, the old one fires. Per window: the number of bids and the first bid with the highest
 * price; the checksum is bench/common.lua's (windows, events, digest = sum of (window index + 1)
 * * (price + auction + bidder) mod 2^32). */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "nexmark_gen.h"

enum { WINDOW_MS = 10000 };

static uint64_t windows_fired, events_counted;
static uint32_t digest;

typedef struct window {
    int64_t start;
    int64_t n; /* 0: none open */
    wr_nexmark_bid_t best;
} window_t;

static void fire(const window_t *w)
{
    windows_fired++;
    events_counted += (uint64_t)w->n;
    uint64_t term = (uint64_t)(w->start / WINDOW_MS + 1)
                    * (uint64_t)((int64_t)w->best.price + w->best.auction + w->best.bidder);
    digest = (uint32_t)(digest + term);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_baseline_nexmark_q7 N\n");
        return 2;
    }
    int64_t n = strtoll(argv[1], NULL, 10);
    wr_nexmark_t config = wr_nexmark_defaults();
    window_t w = { 0, 0, { 0, 0, 0, 0 } };
    for (int64_t i = 0; i < n; i++) {
        wr_nexmark_bid_t b = wr_nexmark_bid(&config, i);
        int64_t ts = (int64_t)b.ts;
        int64_t start = ts - ts % WINDOW_MS; /* ts >= 0 */
        if (w.n > 0 && start != w.start) {
            fire(&w);
            w.n = 0;
        }
        if (w.n == 0) {
            w.start = start;
            w.best = b;
        } else if (b.price > w.best.price) {
            w.best = b;
        }
        w.n++;
    }
    if (w.n > 0) {
        fire(&w);
    }
    printf("windows %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", windows_fired,
           events_counted, digest);
    return 0;
}
