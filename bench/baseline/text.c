/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/text.lua: the lines "key,ts" of a file parsed in plain C (one fread
 * buffer, digits by hand), then exactly bench/baseline/windows.c's windowed count (winagg.h):
 * tumbling 5 s event-time windows, a count per (key, window), and the same order-independent
 * checksum. Lines that are not two decimal numbers separated by a comma are an error (the
 * generated file has none). */
#define PROGRAM "bench_baseline_text"
#include "winagg.h"

#include <string.h>

/* Parses one line [p, end) as "<digits>,<digits>". */
static void parse_line(const char *p, const char *end, long long lineno)
{
    int64_t key = 0, ts = 0;
    const char *q = p;
    while (q < end && *q >= '0' && *q <= '9') {
        key = key * 10 + (*q++ - '0');
    }
    int ok = q > p && q < end && *q == ',';
    const char *t = ++q;
    while (q < end && *q >= '0' && *q <= '9') {
        ts = ts * 10 + (*q++ - '0');
    }
    if (!ok || q == t || q != end) {
        fprintf(stderr, "bench_baseline_text: line %lld: expected key,ts\n", lineno);
        exit(1);
    }
    add_event((int32_t)key, ts);
}

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
            parse_line(p, nl, ++lineno);
            p = nl + 1;
        }
        have = (size_t)(end - p);
        if (got == 0) { /* a last line without newline */
            if (have > 0) {
                parse_line(p, end, ++lineno);
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
