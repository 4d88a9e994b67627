/* SPDX-License-Identifier: MIT */
/* fuzz_support.h: what the libFuzzer targets share: an oracle failure that libFuzzer reports as
 * a crash (with the reproducer saved), and a small deterministic PRNG seeded from the input, so
 * one input always replays the same run. */
#ifndef FUZZ_SUPPORT_H
#define FUZZ_SUPPORT_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* An oracle mismatch: say what, then abort so libFuzzer saves the input as crash-*. */
__attribute__((format(printf, 1, 2), noreturn)) static inline void fuzz_fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("ORACLE FAILURE: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

#define FUZZ_CHECK(cond, ...)                                                                 \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fuzz_fail(__VA_ARGS__);                                                           \
        }                                                                                     \
    } while (0)

/* xorshift64*: cheap, and never 0 once seeded with a non-zero state */
typedef struct fuzz_rng {
    uint64_t s;
} fuzz_rng_t;

static inline void fuzz_rng_seed(fuzz_rng_t *r, uint64_t seed)
{
    r->s = seed * 0x9e3779b97f4a7c15u + 0x2545f4914f6cdd1du;
    if (r->s == 0) {
        r->s = 1;
    }
}

static inline uint32_t fuzz_rng_next(fuzz_rng_t *r)
{
    r->s ^= r->s >> 12;
    r->s ^= r->s << 25;
    r->s ^= r->s >> 27;
    return (uint32_t)((r->s * 0x2545f4914f6cdd1du) >> 32);
}

/* A value in [0, n), n >= 1 */
static inline uint32_t fuzz_rng_below(fuzz_rng_t *r, uint32_t n)
{
    return fuzz_rng_next(r) % n;
}

#endif
