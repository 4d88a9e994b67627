/* SPDX-License-Identifier: MIT */
/* fuzz_keygroup.c: runtime/keygroup.c. Input: bytes 0-1 pick max_parallelism (1..32768), 2-3
 * the parallelism (1..max_parallelism); the rest is a key. Oracles: for valid UTF-8, Java's
 * String.hashCode over the UTF-16 units of a strict decoder written here; for a key of 8 or more
 * bytes, Java's hashCode of the double its first 8 bytes spell (Integer, Long or Double as
 * keygroup.h says); for any bytes, murmur >= 0, the key group in [0, max_parallelism), the
 * subtask in [0, parallelism), the key group inside the subtask's range, the ranges of
 * neighbouring subtasks adjacent, and the default max parallelism a power of two in bounds. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_support.h"
#include "keygroup.h"
#include "weir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF) into Java's hash of
 * the UTF-16 units. Returns 0 when p[0..n) is not valid UTF-8. */
static int java_hash_valid_utf8(const uint8_t *p, size_t n, uint32_t *hash)
{
    uint32_t h = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t c = p[i];
        size_t len = c < 0x80 ? 1 : c >= 0xC0 && c < 0xE0 ? 2 : c >= 0xE0 && c < 0xF0 ? 3
                   : c >= 0xF0 && c < 0xF8 ? 4 : 0;
        if (len == 0 || i + len > n) {
            return 0;
        }
        if (len > 1) {
            c &= 0x7Fu >> len;
        }
        for (size_t k = 1; k < len; k++) {
            if ((p[i + k] & 0xC0) != 0x80) {
                return 0;
            }
            c = c << 6 | (p[i + k] & 0x3Fu);
        }
        static const uint32_t MIN[] = { 0, 0, 0x80, 0x800, 0x10000 };
        if (c < MIN[len] || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF)) {
            return 0;
        }
        if (c >= 0x10000) {
            h = 31 * h + (0xD800 + ((c - 0x10000) >> 10));
            h = 31 * h + (0xDC00 + ((c - 0x10000) & 0x3FF));
        } else {
            h = 31 * h + c;
        }
        i += len;
    }
    *hash = h;
    return 1;
}

static uint32_t fold(uint64_t bits)
{
    return (uint32_t)(bits ^ (bits >> 32));
}

/* Java's hashCode of the boxed number weir makes of v (keygroup.h). */
static uint32_t java_hash_double(double v)
{
    if (v == 0) {
        return 0; /* 0 and -0.0 are the Integer 0 */
    }
    if (isfinite(v) && v == floor(v) && fabs(v) < 9223372036854775808.0) {
        if (v >= -2147483648.0 && v <= 2147483647.0) {
            return (uint32_t)(int32_t)v;
        }
        return fold((uint64_t)(int64_t)v);
    }
    if (v == 9223372036854775808.0 * -1) {
        return fold((uint64_t)INT64_MIN); /* -2^63 is a Long */
    }
    uint64_t bits = 0x7ff8000000000000u;
    if (!isnan(v)) {
        memcpy(&bits, &v, sizeof bits);
    }
    return fold(bits);
}

static void check_routing(int32_t hash, int32_t maxp, int32_t p)
{
    int32_t m = wr_keygroup_murmur(hash);
    FUZZ_CHECK(m >= 0, "murmur(%d) = %d < 0", hash, m);
    int32_t kg = wr_keygroup_of(hash, maxp);
    FUZZ_CHECK(kg >= 0 && kg < maxp && kg == m % maxp, "key group %d of hash %d, maxP %d", kg,
               hash, maxp);
    FUZZ_CHECK(weir_keygroup_of(hash, maxp) == kg, "weir_keygroup_of disagrees");
    int32_t sub = wr_keygroup_subtask(kg, maxp, p);
    FUZZ_CHECK(sub >= 0 && sub < p, "subtask %d of key group %d (maxP %d, p %d)", sub, kg, maxp,
               p);
    FUZZ_CHECK(weir_keygroup_subtask(kg, maxp, p) == sub, "weir_keygroup_subtask disagrees");
    wr_keygroup_range_t r = wr_keygroup_range(maxp, p, sub);
    FUZZ_CHECK(r.first <= kg && kg <= r.last, "key group %d outside subtask %d's [%d, %d]", kg,
               sub, r.first, r.last);
    if (sub + 1 < p) {
        wr_keygroup_range_t next = wr_keygroup_range(maxp, p, sub + 1);
        FUZZ_CHECK(next.first == r.last + 1, "ranges of subtasks %d and %d are not adjacent",
                   sub, sub + 1);
    } else {
        FUZZ_CHECK(r.last == maxp - 1, "the last subtask's range ends at %d, not %d", r.last,
                   maxp - 1);
    }
    if (sub == 0) {
        FUZZ_CHECK(r.first == 0, "the first subtask's range starts at %d", r.first);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) {
        return 0;
    }
    int32_t maxp =
        (int32_t)((uint32_t)data[0] << 8 | data[1]) % WR_KEYGROUP_MAX_PARALLELISM_MAX + 1;
    int32_t p = (int32_t)((uint32_t)data[2] << 8 | data[3]) % maxp + 1;
    const uint8_t *key = data + 4;
    size_t n = size - 4;

    int32_t h = wr_keygroup_java_hash_utf8((const char *)key, n);
    FUZZ_CHECK(weir_keygroup_hash_string((const char *)key, n) == h, "FFI hash disagrees");
    uint32_t want;
    if (java_hash_valid_utf8(key, n, &want)) {
        FUZZ_CHECK((uint32_t)h == want, "String.hashCode of %zu valid UTF-8 bytes: %d, want %d",
                   n, h, (int32_t)want);
    }
    check_routing(h, maxp, p);
    FUZZ_CHECK(weir_keygroup_of_string((const char *)key, n, maxp) == wr_keygroup_of(h, maxp),
               "weir_keygroup_of_string disagrees");

    if (n >= 8) {
        double v;
        memcpy(&v, key, sizeof v);
        int32_t hn = wr_keygroup_java_hash_number(v);
        FUZZ_CHECK((uint32_t)hn == java_hash_double(v), "hashCode(%.17g) = %d, want %d", v, hn,
                   (int32_t)java_hash_double(v));
        FUZZ_CHECK(weir_keygroup_hash_number(v) == hn, "FFI number hash disagrees");
        check_routing(hn, maxp, p);
    }

    int32_t dmp = wr_keygroup_default_max_parallelism(p);
    int64_t need = (int64_t)p + p / 2;
    FUZZ_CHECK(dmp >= WR_KEYGROUP_DEFAULT_MAX_PARALLELISM_LOW &&
                   dmp <= WR_KEYGROUP_MAX_PARALLELISM_MAX && (dmp & (dmp - 1)) == 0 &&
                   (dmp >= need || dmp == WR_KEYGROUP_MAX_PARALLELISM_MAX) &&
                   (dmp == WR_KEYGROUP_DEFAULT_MAX_PARALLELISM_LOW || dmp / 2 < need),
               "default max parallelism %d for parallelism %d", dmp, p);
    return 0;
}
