/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/interval.lua: N records, N / 2 a side; left i has key i % 10000 and
 * timestamp i / 5 ms, right i the same key and i / 5 + 1 ms; an interval join between(-2, 2)
 * as Flink's IntervalJoinOperator runs it: per key and side a buffer of (timestamp, count)
 * buckets, each record added to its side's buffer and joined with the other side's buckets in
 * range, a cleanup timer per new bucket (at ts + 2 on either side here) in a binary min-heap,
 * and the watermark min(left max, right max) - 1 (Flink's monotonous generators) popping the
 * timers and dropping their buckets. The two sides are read alternately; the end of input
 * drops the rest. Plain C, no weir code. The checksum is bench/common.lua's: pairs, their
 * count, and digest = sum of (key + 1) * (left ts + 1) + right ts mod 2^32. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { KEYS = 10000, LO = -2, HI = 2 };

typedef struct bucket {
    int64_t ts;
    int64_t count;
} bucket_t;

typedef struct buffer {
    bucket_t *b;
    int32_t n, cap;
} buffer_t;

typedef struct timer {
    int64_t time;
    int64_t ts; /* the bucket it drops */
    int32_t key;
    int32_t side;
} ctimer_t;

static buffer_t buffers[2][KEYS];
static ctimer_t *heap;
static size_t heap_len, heap_cap = 1024;
static uint64_t pairs;
static uint32_t digest;

static void *xrealloc(void *p, size_t size)
{
    void *q = realloc(p, size);
    if (!q) {
        fprintf(stderr, "bench_baseline_interval: out of memory\n");
        exit(1);
    }
    return q;
}

static int before(const ctimer_t *a, const ctimer_t *b)
{
    return a->time < b->time;
}

static void heap_push(ctimer_t t)
{
    if (heap_len == heap_cap) {
        heap_cap *= 2;
        heap = xrealloc(heap, heap_cap * sizeof *heap);
    }
    size_t i = heap_len++;
    while (i > 0 && before(&t, &heap[(i - 1) / 2])) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = t;
}

static ctimer_t heap_pop(void)
{
    ctimer_t top = heap[0], last = heap[--heap_len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap_len) {
            break;
        }
        if (c + 1 < heap_len && before(&heap[c + 1], &heap[c])) {
            c++;
        }
        if (!before(&heap[c], &last)) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    if (heap_len > 0) {
        heap[i] = last;
    }
    return top;
}

static void drop(int side, int32_t key, int64_t ts)
{
    buffer_t *buf = &buffers[side][key];
    for (int32_t i = 0; i < buf->n; i++) {
        if (buf->b[i].ts == ts) {
            buf->b[i] = buf->b[--buf->n];
            return;
        }
    }
}

static void watermark(int64_t w)
{
    while (heap_len > 0 && heap[0].time <= w) {
        ctimer_t t = heap_pop();
        drop(t.side, t.key, t.ts);
    }
}

/* One record of side (0 left, 1 right) at ts; rlo, rhi its bounds relative to ts. */
static void record(int side, int32_t key, int64_t ts, int64_t rlo, int64_t rhi)
{
    buffer_t *ours = &buffers[side][key], *other = &buffers[!side][key];
    int32_t i;
    for (i = 0; i < ours->n && ours->b[i].ts != ts; i++) {
    }
    if (i == ours->n) {
        if (ours->n == ours->cap) {
            ours->cap = ours->cap ? 2 * ours->cap : 4;
            ours->b = xrealloc(ours->b, (size_t)ours->cap * sizeof *ours->b);
        }
        ours->b[ours->n++] = (bucket_t){ ts, 1 };
        int64_t cleanup = rhi > 0 ? ts + rhi : ts;
        heap_push((ctimer_t){ cleanup, ts, key, side });
    } else {
        ours->b[i].count++;
    }
    for (int32_t j = 0; j < other->n; j++) {
        int64_t t = other->b[j].ts;
        if (t < ts + rlo || t > ts + rhi) {
            continue;
        }
        int64_t lts = side == 0 ? ts : t, rts = side == 0 ? t : ts;
        for (int64_t c = 0; c < other->b[j].count; c++) {
            pairs++;
            digest += (uint32_t)((uint64_t)((key + 1) * (lts + 1) + rts) & 0xffffffffu);
        }
    }
}

int main(int argc, char **argv)
{
    int64_t n = argc > 1 ? strtoll(argv[1], NULL, 10) : 10000000;
    int64_t half = n / 2;
    heap = xrealloc(NULL, heap_cap * sizeof *heap);
    for (int64_t i = 0; i < half; i++) {
        int32_t key = (int32_t)(i % KEYS);
        int64_t lts = i / 5, rts = i / 5 + 1;
        record(0, key, lts, LO, HI);
        record(1, key, rts, -HI, -LO);
        watermark((lts < rts ? lts : rts) - 1);
    }
    watermark(INT64_MAX);
    printf("pairs %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", pairs, pairs, digest);
    for (int s = 0; s < 2; s++) {
        for (int k = 0; k < KEYS; k++) {
            free(buffers[s][k].b);
        }
    }
    free(heap);
    return 0;
}
