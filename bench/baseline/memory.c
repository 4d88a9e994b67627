/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/memory.lua: N events, event i with key i % KEYS, all in the one
 * tumbling window [0, 5000), so every (key, window) is open until the end of input. State is
 * an open-addressing hash map key -> count (8-byte entries, load at most 1/2): the plain-C
 * cost of an open aggregate window for this job. At the end every window fires; the checksum
 * is the one of the Lua job: windows, events, digest = sum of (key + 1) * count mod 2^32. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct entry {
    int32_t key;
    int32_t count; /* 0 = empty slot */
} entry_t;

static entry_t *table;
static size_t cap, used; /* cap is a power of two */

static entry_t *xcalloc(size_t n)
{
    entry_t *p = calloc(n, sizeof *p);
    if (p == NULL) {
        fprintf(stderr, "bench_baseline_memory: out of memory\n");
        exit(1);
    }
    return p;
}

static size_t hash(int32_t key)
{
    uint64_t h = (uint64_t)(uint32_t)key * 0x9e3779b97f4a7c15u;
    return (size_t)(h >> 17);
}

static void grow(void)
{
    entry_t *old = table;
    size_t old_cap = cap;
    cap *= 2;
    table = xcalloc(cap);
    for (size_t k = 0; k < old_cap; k++) {
        if (old[k].count != 0) {
            size_t i = hash(old[k].key) & (cap - 1);
            while (table[i].count != 0) {
                i = (i + 1) & (cap - 1);
            }
            table[i] = old[k];
        }
    }
    free(old);
}

static void add(int32_t key)
{
    size_t i = hash(key) & (cap - 1);
    while (table[i].count != 0) {
        if (table[i].key == key) {
            table[i].count++;
            return;
        }
        i = (i + 1) & (cap - 1);
    }
    if ((used + 1) * 2 > cap) {
        grow();
        add(key);
        return;
    }
    used++;
    table[i] = (entry_t){ key, 1 };
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 1000000LL;
    long long keys = argc > 2 ? atoll(argv[2]) : n;
    if (n < 1 || keys < 1 || keys > INT32_MAX) {
        fprintf(stderr, "usage: bench_baseline_memory N KEYS\n");
        return 2;
    }
    cap = 1024;
    table = xcalloc(cap);
    for (long long i = 0; i < n; i++) {
        add((int32_t)(i % keys)); /* every timestamp lies in [0, 5000): one window */
    }
    uint64_t windows = 0, events = 0;
    uint32_t digest = 0;
    for (size_t k = 0; k < cap; k++) {
        if (table[k].count != 0) {
            windows++;
            events += (uint64_t)table[k].count;
            digest = (uint32_t)(digest + (uint64_t)(table[k].key + 1) * (uint64_t)table[k].count);
        }
    }
    printf("windows %" PRIu64 " events %" PRIu64 " digest %" PRIu32 "\n", windows, events, digest);
    free(table);
    return 0;
}
