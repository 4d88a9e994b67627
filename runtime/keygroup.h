/* SPDX-License-Identifier: MIT */
/* keygroup.h: Flink's keyBy routing (SEMANTICS.md section 10), pure: the Java hashCode of a key,
 * the murmur spread, key group, subtask and the key-group range a subtask owns. */
#ifndef WR_KEYGROUP_H
#define WR_KEYGROUP_H

#include <stddef.h>
#include <stdint.h>

/* Flink's bounds on maxParallelism (KeyGroupRangeAssignment). */
enum {
    WR_KEYGROUP_MAX_PARALLELISM_MIN = 1,
    WR_KEYGROUP_MAX_PARALLELISM_MAX = 32768,   /* 1 << 15 */
    WR_KEYGROUP_DEFAULT_MAX_PARALLELISM_LOW = 128
};

/* Inclusive range of key groups [first, last]; empty when first > last (more subtasks than key
 * groups). */
typedef struct wr_keygroup_range {
    int32_t first;
    int32_t last;
} wr_keygroup_range_t;

/* Java String.hashCode of the UTF-8 text p[0..n) (p may be NULL when n == 0). The bytes are
 * decoded as Java's UTF-8 decoder does with REPLACE (new String(bytes, UTF_8), or a Reader), and
 * the resulting UTF-16 code units are hashed: a non-BMP character counts as its surrogate pair.
 * Each malformed piece becomes one U+FFFD; keygroup.c spells out which bytes make one piece. */
int32_t wr_keygroup_java_hash_utf8(const char *p, size_t n);

/* Java hashCode of a Lua number: integral values within int32 hash as Integer (the value), other
 * integral values below 2^63 in magnitude as Long, everything else (fractions, +-inf, NaN, and
 * integral values of 2^63 and beyond) as Double with the canonical NaN. -0.0 hashes as the
 * Integer 0: Lua keys cannot tell it from 0 (t[-0.0] is t[0]), so neither may its subtask. */
int32_t wr_keygroup_java_hash_number(double v);

/* Flink's MathUtils.murmurHash: a non-negative spread of a Java hash code. */
int32_t wr_keygroup_murmur(int32_t java_hash);

/* Key group of a key with this Java hash: murmur(java_hash) % max_parallelism, in
 * [0, max_parallelism). Requires max_parallelism in [1, 32768]. */
int32_t wr_keygroup_of(int32_t java_hash, int32_t max_parallelism);

/* 0-based subtask owning key_group: key_group * parallelism / max_parallelism. Requires
 * max_parallelism in [1, 32768], parallelism in [1, max_parallelism] and key_group in
 * [0, max_parallelism). */
int32_t wr_keygroup_subtask(int32_t key_group, int32_t max_parallelism, int32_t parallelism);

/* Flink's default maxParallelism for an operator of this parallelism:
 * min(max(roundUpPow2(p + p / 2), 128), 32768). Requires parallelism >= 1. */
int32_t wr_keygroup_default_max_parallelism(int32_t parallelism);

/* The contiguous key groups subtask `index` owns: [ceil(index * maxP / p),
 * floor(((index + 1) * maxP - 1) / p)]. Exactly the key groups wr_keygroup_subtask maps to
 * index. Requires the bounds of wr_keygroup_subtask and index in [0, parallelism). */
wr_keygroup_range_t wr_keygroup_range(int32_t max_parallelism, int32_t parallelism, int32_t index);

#endif
