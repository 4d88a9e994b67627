/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/text_mf.lua: the lines "key,ts" of a file read with one fread buffer,
 * the key's digits parsed by hand, the even keys counted and summed. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t count, sum;

static void line(const char *p, const char *end, long long lineno)
{
    int64_t key = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        key = key * 10 + (*q++ - '0');
    }
    if (q == p || q == end || *q != ',') {
        fprintf(stderr, "bench_baseline_text_mf: line %lld: expected key,ts\n", lineno);
        exit(1);
    }
    if (key % 2 == 0) {
        count += 1;
        sum += key;
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_baseline_text_mf FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    enum { BUF = 1 << 16 };
    static char buf[BUF];
    size_t have = 0;
    long long lineno = 0;
    for (;;) {
        size_t got = fread(buf + have, 1, BUF - have, f);
        have += got;
        if (have == 0) {
            break;
        }
        char *p = buf, *end = buf + have;
        for (;;) {
            char *nl = memchr(p, '\n', (size_t)(end - p));
            if (nl == NULL) {
                break;
            }
            line(p, nl, ++lineno);
            p = nl + 1;
        }
        have = (size_t)(end - p);
        if (got == 0) {
            if (have > 0) {
                line(p, end, ++lineno);
            }
            break;
        }
        if (have == BUF) {
            fprintf(stderr, "bench_baseline_text_mf: line %lld too long\n", lineno + 1);
            return 1;
        }
        memmove(buf, p, have);
    }
    fclose(f);
    printf("count %" PRId64 " sum %" PRId64 "\n", count, sum);
    return 0;
}
