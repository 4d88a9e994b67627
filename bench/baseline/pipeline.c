/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/pipeline.lua: generate i = 0..N-1, map to v = i % 1024, key by v
 * (Flink's key groups at parallelism 2, max parallelism 128), and per subtask count and sum.
 * Plain C on purpose: no weir code, the key-group math written out from SEMANTICS.md §10, so
 * the benchmark compares weir with what the same computation costs without it. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

enum { PARALLELISM = 2, MAX_PARALLELISM = 128 };

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* Flink MathUtils.murmurHash: one 32-bit block, length 4, made non-negative. */
static int32_t murmur(int32_t code)
{
    uint32_t h = (uint32_t)code;
    h *= 0xcc9e2d51u;
    h = rotl32(h, 15);
    h *= 0x1b873593u;
    h = rotl32(h, 13);
    h = h * 5u + 0xe6546b64u;
    h ^= 4u;
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    int32_t r = (int32_t)h;
    if (r >= 0) {
        return r;
    }
    return r != INT32_MIN ? -r : 0;
}

/* Integer.hashCode is the value itself. */
static int subtask_of(int32_t key)
{
    int32_t key_group = murmur(key) % MAX_PARALLELISM;
    return key_group * PARALLELISM / MAX_PARALLELISM;
}

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 10000000LL;
    int64_t count[PARALLELISM] = { 0 };
    int64_t sum[PARALLELISM] = { 0 };
    for (long long i = 0; i < n; i++) {
        int32_t v = (int32_t)(i % 1024);
        int s = subtask_of(v);
        count[s] += 1;
        sum[s] += v;
    }
    for (int s = 0; s < PARALLELISM; s++) {
        printf("subtask %d count %" PRId64 " sum %" PRId64 "\n", s, count[s], sum[s]);
    }
    return 0;
}
