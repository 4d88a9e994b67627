/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/keyed.lua: events i = 0..N-1 with key i % 10000 and timestamp i / 10
 * ms; per key the count of its current 5 s period and one event-time timer at the period's end
 * - 1, as the keyed process function keeps them: a record of a later period emits the finished
 * period and moves the timer, a timer that fires emits the last period. Plain C, no weir code:
 * an open-addressing map key -> {period, count, timer}, a binary min-heap of (time, key) timers
 * (a moved timer stays in the heap and is skipped when it pops: lazy deletion), the watermark
 * the largest timestamp so far - 1 (Flink's monotonous generator); the end of input fires the
 * rest. The checksum is bench/common.lua's: results, counts, and digest = sum of (key + 1) *
 * (period index + 1) * count mod 2^32. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { KEYS = 10000, PERIOD_MS = 5000 };

typedef struct slot {
    int32_t key;
    int32_t used;
    int64_t period;
    int64_t count;
    int64_t timer; /* -1: none */
} slot_t;

typedef struct timer {
    int64_t time;
    int32_t key;
} timer_t_;

static slot_t *table;
static size_t cap = 1024, used;
static timer_t_ *heap;
static size_t heap_len, heap_cap = 1024;
static uint64_t results, counted;
static uint32_t digest;

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n, size);
    if (!p) {
        fprintf(stderr, "bench_baseline_keyed: out of memory\n");
        exit(1);
    }
    return p;
}

static size_t hash(int32_t key)
{
    return (size_t)(((uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15u) >> 20);
}

static slot_t *lookup(int32_t key);

static void grow(void)
{
    slot_t *old = table;
    size_t old_cap = cap;
    cap *= 2;
    table = xcalloc(cap, sizeof *table);
    used = 0;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].used) {
            *lookup(old[i].key) = old[i];
        }
    }
    free(old);
}

static slot_t *lookup(int32_t key)
{
    size_t i = hash(key) & (cap - 1);
    while (table[i].used && table[i].key != key) {
        i = (i + 1) & (cap - 1);
    }
    if (!table[i].used) {
        if ((used + 1) * 2 > cap) {
            grow();
            return lookup(key);
        }
        used++;
        table[i] = (slot_t){.key = key, .used = 1, .period = -1, .count = 0, .timer = -1};
    }
    return &table[i];
}

static void push(int64_t time, int32_t key)
{
    if (heap_len == heap_cap) {
        heap_cap *= 2;
        heap = realloc(heap, heap_cap * sizeof *heap);
        if (!heap) {
            fprintf(stderr, "bench_baseline_keyed: out of memory\n");
            exit(1);
        }
    }
    size_t i = heap_len++;
    while (i > 0 && heap[(i - 1) / 2].time > time) {
        heap[i] = heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    heap[i] = (timer_t_){time, key};
}

static timer_t_ pop(void)
{
    timer_t_ top = heap[0];
    timer_t_ last = heap[--heap_len];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= heap_len) {
            break;
        }
        if (c + 1 < heap_len && heap[c + 1].time < heap[c].time) {
            c++;
        }
        if (heap[c].time >= last.time) {
            break;
        }
        heap[i] = heap[c];
        i = c;
    }
    heap[i] = last;
    return top;
}

static void emit(int32_t key, int64_t period, int64_t count)
{
    results++;
    counted += (uint64_t)count;
    digest += (uint32_t)((uint64_t)(key + 1) * (uint64_t)(period / PERIOD_MS + 1) *
                         (uint64_t)count);
}

static void fire_until(int64_t watermark)
{
    while (heap_len > 0 && heap[0].time <= watermark) {
        timer_t_ t = pop();
        slot_t *s = lookup(t.key);
        if (s->timer != t.time) {
            continue; /* moved: deleted */
        }
        emit(t.key, s->period, s->count);
        s->period = -1;
        s->count = 0;
        s->timer = -1;
    }
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 10000000LL;
    table = xcalloc(cap, sizeof *table);
    heap = xcalloc(heap_cap, sizeof *heap);
    int64_t watermark = INT64_MIN;
    for (long long i = 0; i < n; i++) {
        int32_t key = (int32_t)(i % KEYS);
        int64_t ts = i / 10;
        slot_t *s = lookup(key);
        int64_t p = ts - ts % PERIOD_MS;
        if (s->period == p) {
            s->count++;
        } else {
            if (s->period >= 0) {
                emit(key, s->period, s->count);
            }
            s->period = p;
            s->count = 1;
            s->timer = p + PERIOD_MS - 1;
            push(s->timer, key);
        }
        if (ts - 1 > watermark) {
            watermark = ts - 1;
            fire_until(watermark);
        }
    }
    fire_until(INT64_MAX);
    printf("windows %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", results, counted,
           digest);
    free(table);
    free(heap);
    return 0;
}
