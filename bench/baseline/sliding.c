/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/sliding.lua: events i = 0..N-1 with key i % 10000 and timestamp
 * i / 10 ms, sliding event-time windows of 60 s every 1 s, a count per (key, window). Plain C
 * with slices, the efficient way for this job: per key a ring of the counts of its last 60
 * one-second slices and their running sum, which is the count of the oldest window not yet
 * fired. Timestamps are monotonous and the watermark is the largest timestamp so far - 1
 * (Flink's monotonous generator), so windows fire in start order: once the watermark reaches
 * the end - 1 of the window starting at slice s, every key whose sum is not 0 (the window
 * holds an element, so it exists) fires (key, s * 1000, sum) and slice s leaves its ring.
 * What is left fires at the end of input. The checksum is the one of the Lua job: windows
 * fired, events counted, digest = sum of (key + 1) * (start / 1000 + 60) * count mod 2^32. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { KEYS = 10000, SLIDE_MS = 1000, SLICES = 60 /* size / slide */ };

static uint32_t ring[KEYS][SLICES];
static uint64_t sum[KEYS];
static int64_t next_s; /* the slice where the oldest window not yet fired starts */

static uint64_t windows_fired, events_counted;
static uint32_t digest;

static int slot(int64_t s)
{
    return (int)(((s % SLICES) + SLICES) % SLICES);
}

/* Fires the window starting at slice next_s for every key, and drops slice next_s. */
static void fire_next(void)
{
    int k = slot(next_s);
    uint64_t index = (uint64_t)(next_s + SLICES); /* start / 1000 + 60 >= 1 */
    for (int key = 0; key < KEYS; key++) {
        uint64_t count = sum[key];
        if (count != 0) {
            windows_fired++;
            events_counted += count;
            digest = (uint32_t)(digest + (uint64_t)(key + 1) * index * count);
            sum[key] -= ring[key][k];
            ring[key][k] = 0;
        }
    }
    next_s++;
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 1000000LL;
    int64_t max_ts = INT64_MIN;
    for (long long i = 0; i < n; i++) {
        int32_t key = (int32_t)(i % KEYS);
        int64_t ts = i / 10;
        int64_t s = ts / SLIDE_MS; /* ts >= 0 */
        if (max_ts == INT64_MIN) {
            next_s = s - (SLICES - 1);
        }
        if (ts > max_ts) {
            max_ts = ts;
            /* watermark max_ts - 1 >= window end - 1 = (next_s + 60) * 1000 - 1 */
            while ((next_s + SLICES) * SLIDE_MS <= max_ts) {
                fire_next();
            }
        }
        ring[key][slot(s)]++;
        sum[key]++;
    }
    if (max_ts != INT64_MIN) {
        while (next_s <= max_ts / SLIDE_MS) {
            fire_next();
        }
    }
    printf("windows %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", windows_fired,
           events_counted, digest);
    return 0;
}
