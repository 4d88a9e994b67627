/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/text.lua: the lines "key,ts" of a file parsed in plain C (one fread
 * buffer, digits by hand), then exactly bench/baseline/windows.c's windowed count (winagg.h):
 * tumbling 5 s event-time windows, a count per (key, window), and the same order-independent
 * checksum. Lines that are not two decimal numbers separated by a comma are an error (the
 * generated file has none). */
#define PROGRAM "bench_baseline_text"
#include "winagg.h"

#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_baseline_text FILE\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (f == NULL) {
        perror(argv[1]);
        return 1;
    }
    init_windows();
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
            add_key_ts(p, nl, "line", ++lineno);
            p = nl + 1;
        }
        have = (size_t)(end - p);
        if (got == 0) { /* a last line without newline */
            if (have > 0) {
                add_key_ts(p, end, "line", ++lineno);
            }
            break;
        }
        if (have == BUF) {
            fprintf(stderr, "bench_baseline_text: line %lld too long\n", lineno + 1);
            return 1;
        }
        memmove(buf, p, have);
    }
    fclose(f);
    finish_windows();
    return 0;
}
