/* SPDX-License-Identifier: MIT */
/* keygroup.c: Flink's keyBy routing, restating KeyGroupRangeAssignment and MathUtils (SEMANTICS.md
 * section 10). Pure functions: the same key always reaches the same subtask Flink would pick. */
#include "keygroup.h"

#include <assert.h>
#include <string.h>

#include "weir.h"

enum {
    REPLACEMENT_CHAR = 0xFFFD,
    JAVA_HASH_MULTIPLIER = 31
};

/* Java's (int) of a 32-bit pattern, without relying on implementation-defined conversion. */
static int32_t as_int32(uint32_t u)
{
    if (u <= (uint32_t)INT32_MAX) {
        return (int32_t)u;
    }
    return (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static uint32_t hash_unit(uint32_t h, uint32_t utf16_unit)
{
    return JAVA_HASH_MULTIPLIER * h + utf16_unit;
}

static int is_trail(uint8_t b)
{
    return (b & 0xC0) == 0x80;
}

/* Decodes the next piece of p[0..n) (n >= 1) into *cp and returns its length in bytes. A
 * malformed piece decodes to U+FFFD. The pieces are those of Java's UTF-8 decoder with the
 * REPLACE action (JDK 17 String(byte[], UTF_8) and sun.nio.cs.UTF_8, which agree):
 *  - 00..7F: one byte, itself.
 *  - C2..DF need one trail byte (80..BF). E0..EF need two: the second in A0..BF after E0 (no
 *    overlong form), 80..BF after every other lead, ED included. F0..F4 need three: the second
 *    in 90..BF after F0 (no overlong), 80..8F after F4 (nothing above U+10FFFF), else 80..BF.
 *  - If the k-th byte of a sequence is missing (end of text) or outside its range, the lead and
 *    the k-1 good bytes after it become one U+FFFD, and decoding resumes at the k-th byte. So a
 *    truncated sequence at the end is one U+FFFD, and E0 80 80 is three.
 *  - 80..C1 and F5..FF as a lead: one U+FFFD for that byte.
 *  - Where Java departs from Unicode's "maximal subpart" rule: ED A0..BF xx, a UTF-8-encoded
 *    surrogate, is structurally complete for Java, so the three bytes become ONE U+FFFD (Unicode
 *    would give three), and ED A0..BF followed by a non-trail byte or the end is one U+FFFD over
 *    the two bytes (Unicode: two). We follow Java, since the hash must be the one Flink sees. */
static size_t decode_next(const uint8_t *p, size_t n, uint32_t *cp)
{
    uint8_t lead = p[0];
    if (lead < 0x80) {
        *cp = lead;
        return 1;
    }
    size_t need = 0;
    uint8_t lo = 0x80;
    uint8_t hi = 0xBF;
    uint32_t value = 0;
    if (lead >= 0xC2 && lead <= 0xDF) {
        need = 1;
        value = lead & 0x1Fu;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
        need = 2;
        value = lead & 0x0Fu;
        if (lead == 0xE0) {
            lo = 0xA0;
        }
    } else if (lead >= 0xF0 && lead <= 0xF4) {
        need = 3;
        value = lead & 0x07u;
        if (lead == 0xF0) {
            lo = 0x90;
        } else if (lead == 0xF4) {
            hi = 0x8F;
        }
    } else {
        *cp = REPLACEMENT_CHAR;
        return 1;
    }
    for (size_t k = 1; k <= need; k++) {
        int ok = k < n && (k == 1 ? (p[k] >= lo && p[k] <= hi) : is_trail(p[k]));
        if (!ok) {
            *cp = REPLACEMENT_CHAR;
            return k;
        }
        value = (value << 6) | (p[k] & 0x3Fu);
    }
    if (value >= 0xD800 && value <= 0xDFFF) {
        value = REPLACEMENT_CHAR;
    }
    *cp = value;
    return need + 1;
}

int32_t wr_keygroup_java_hash_utf8(const char *p, size_t n)
{
    const uint8_t *s = (const uint8_t *)p;
    uint32_t h = 0;
    size_t i = 0;
    while (i < n) {
        uint32_t cp = 0;
        i += decode_next(s + i, n - i, &cp);
        if (cp < 0x10000) {
            h = hash_unit(h, cp);
        } else {
            uint32_t offset = cp - 0x10000;
            h = hash_unit(h, 0xD800 + (offset >> 10));
            h = hash_unit(h, 0xDC00 + (offset & 0x3FF));
        }
    }
    return as_int32(h);
}

/* Long.hashCode and Double.hashCode both fold a 64-bit pattern: (int)(b ^ (b >>> 32)). */
static int32_t fold64(uint64_t b)
{
    return as_int32((uint32_t)(b ^ (b >> 32)));
}

int32_t wr_keygroup_java_hash_number(double v)
{
    /* The range test comes first: casting NaN or a double outside int64 to int64 is undefined.
     * -2^63 is an int64, 2^63 is not. -0.0 casts to 0 and compares equal, so it is Integer 0. */
    if (v >= -9223372036854775808.0 && v < 9223372036854775808.0) {
        int64_t i = (int64_t)v;
        if ((double)i == v) {
            if (i >= INT32_MIN && i <= INT32_MAX) {
                return (int32_t)i;
            }
            return fold64((uint64_t)i);
        }
    }
    uint64_t bits = 0x7ff8000000000000u; /* doubleToLongBits folds every NaN to this one */
    if (v == v) {
        memcpy(&bits, &v, sizeof bits);
    }
    return fold64(bits);
}

static uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* inline: key_by's per-record path (weir_keygroup_of_number) was three calls deep */
static inline int32_t murmur(int32_t java_hash)
{
    /* One 4-byte block of MurmurHash3_x86_32 with seed 0, then the finalizer, as Flink's
     * MathUtils.murmurHash; unsigned arithmetic gives Java's int wraparound. */
    uint32_t h = (uint32_t)java_hash;
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
    int32_t r = as_int32(h);
    if (r >= 0) {
        return r;
    }
    /* Flink maps the one value without a positive negation to 0. */
    return r != INT32_MIN ? -r : 0;
}

int32_t wr_keygroup_murmur(int32_t java_hash)
{
    return murmur(java_hash);
}

static int max_parallelism_ok(int32_t max_parallelism)
{
    return max_parallelism >= WR_KEYGROUP_MAX_PARALLELISM_MIN &&
           max_parallelism <= WR_KEYGROUP_MAX_PARALLELISM_MAX;
}

static inline int32_t group_of(int32_t java_hash, int32_t max_parallelism)
{
    int32_t m = murmur(java_hash);
    /* m >= 0, so for the usual power-of-two max parallelism the remainder is a mask: this is
     * the per-record path of key_by, and a division costs more than the whole hash. */
    if ((max_parallelism & (max_parallelism - 1)) == 0) {
        return m & (max_parallelism - 1);
    }
    return m % max_parallelism;
}

int32_t wr_keygroup_of(int32_t java_hash, int32_t max_parallelism)
{
    assert(max_parallelism_ok(max_parallelism));
    return group_of(java_hash, max_parallelism);
}

int32_t wr_keygroup_subtask(int32_t key_group, int32_t max_parallelism, int32_t parallelism)
{
    assert(max_parallelism_ok(max_parallelism));
    assert(parallelism >= 1 && parallelism <= max_parallelism);
    assert(key_group >= 0 && key_group < max_parallelism);
    return (int32_t)((int64_t)key_group * parallelism / max_parallelism);
}

int32_t wr_keygroup_default_max_parallelism(int32_t parallelism)
{
    assert(parallelism >= 1);
    /* int64: p + p / 2 overflows int32 for p near INT32_MAX (Flink's would; we clamp). */
    int64_t want = (int64_t)parallelism + parallelism / 2;
    if (want >= WR_KEYGROUP_MAX_PARALLELISM_MAX) {
        return WR_KEYGROUP_MAX_PARALLELISM_MAX;
    }
    int32_t pow2 = WR_KEYGROUP_DEFAULT_MAX_PARALLELISM_LOW;
    while (pow2 < want) {
        pow2 *= 2;
    }
    return pow2;
}

wr_keygroup_range_t wr_keygroup_range(int32_t max_parallelism, int32_t parallelism, int32_t index)
{
    assert(max_parallelism_ok(max_parallelism));
    assert(parallelism >= 1 && parallelism <= max_parallelism);
    assert(index >= 0 && index < parallelism);
    int64_t maxp = max_parallelism;
    int64_t first = (index * maxp + parallelism - 1) / parallelism;
    int64_t last = ((index + 1) * maxp - 1) / parallelism;
    wr_keygroup_range_t r = {(int32_t)first, (int32_t)last};
    return r;
}

/* FFI wrappers (weir_ffi.h): the same functions, with argument checks instead of asserts,
 * since the arguments come from user jobs. */

int32_t weir_keygroup_hash_string(const char *bytes, size_t len)
{
    return wr_keygroup_java_hash_utf8(bytes, len);
}

int32_t weir_keygroup_hash_number(double v)
{
    return wr_keygroup_java_hash_number(v);
}

int32_t weir_keygroup_of(int32_t java_hash, int32_t max_parallelism)
{
    if (!max_parallelism_ok(max_parallelism)) {
        return WEIR_EINVAL;
    }
    return wr_keygroup_of(java_hash, max_parallelism);
}

int32_t weir_keygroup_subtask(int32_t key_group, int32_t max_parallelism, int32_t parallelism)
{
    if (!max_parallelism_ok(max_parallelism) || parallelism < 1 ||
        parallelism > max_parallelism || key_group < 0 || key_group >= max_parallelism) {
        return WEIR_EINVAL;
    }
    return wr_keygroup_subtask(key_group, max_parallelism, parallelism);
}

int32_t weir_keygroup_default_max_parallelism(int32_t parallelism)
{
    if (parallelism < 1) {
        return WEIR_EINVAL;
    }
    return wr_keygroup_default_max_parallelism(parallelism);
}

int32_t weir_keygroup_of_string(const char *bytes, size_t len, int32_t max_parallelism)
{
    return weir_keygroup_of(wr_keygroup_java_hash_utf8(bytes, len), max_parallelism);
}

int32_t weir_keygroup_of_number(double v, int32_t max_parallelism)
{
    if (!max_parallelism_ok(max_parallelism)) {
        return WEIR_EINVAL;
    }
    /* key_by's per-record path for number keys: an integer in int32's range is its own Java
     * hash (Integer.hashCode; -0.0 is 0), as in wr_keygroup_java_hash_number, without the calls */
    if (v >= -2147483648.0 && v <= 2147483647.0) {
        int32_t i = (int32_t)v;
        if ((double)i == v) {
            return group_of(i, max_parallelism);
        }
    }
    return group_of(wr_keygroup_java_hash_number(v), max_parallelism);
}

int32_t weir_keygroup_fill_memo(double *keys, int16_t *subtasks, int32_t n,
                                int32_t max_parallelism, int32_t parallelism)
{
    if (!max_parallelism_ok(max_parallelism) || parallelism < 1 ||
        parallelism > max_parallelism || parallelism > INT16_MAX + 1 || n < 0) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        keys[i] = (double)i;
        subtasks[i] = (int16_t)wr_keygroup_subtask(group_of(i, max_parallelism), max_parallelism,
                                                   parallelism);
    }
    return 0;
}
