/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/text.lua's json variants: the JSON lines
 * {"key":<digits>,"ts":<digits>,"page":"..."} of a file, read with one fread buffer and their
 * two numbers found by hand (the members' names and order are known: no JSON parser, the fastest
 * plain C can be for this shape), then exactly bench/baseline/windows.c's windowed count
 * (winagg.h). A line of another shape is an error (the generated file has none). */
#define PROGRAM "bench_baseline_json"
#include "winagg.h"

#include <string.h>

/* The digits right after the member name `name` (with its quotes and colon) in [p, end). */
static const char *number_after(const char *p, const char *end, const char *name, int64_t *v)
{
    size_t n = strlen(name);
    if ((size_t)(end - p) < n || memcmp(p, name, n) != 0) {
        return NULL;
    }
    const char *q = p + n, *start = q;
    int64_t x = 0;
    while (q < end && *q >= '0' && *q <= '9') {
        x = x * 10 + (*q++ - '0');
    }
    *v = x;
    return q > start ? q : NULL;
}

static void parse_line(const char *p, const char *end, long long lineno)
{
    int64_t key = 0, ts = 0;
    const char *q = number_after(p, end, "{\"key\":", &key);
    if (q != NULL && q < end && *q == ',') {
        q = number_after(q + 1, end, "\"ts\":", &ts);
    } else {
        q = NULL;
    }
    if (q == NULL || end[-1] != '}') {
        fprintf(stderr, "bench_baseline_json: line %lld: expected {\"key\":K,\"ts\":T,...}\n",
                lineno);
        exit(1);
    }
    add_event((int32_t)key, ts);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bench_baseline_json FILE\n");
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
        if (got == 0) {
            if (have > 0) {
                parse_line(p, end, ++lineno);
            }
            break;
        }
        if (have == BUF) {
            fprintf(stderr, "bench_baseline_json: line %lld too long\n", lineno + 1);
            return 1;
        }
        memmove(buf, p, have);
    }
    fclose(f);
    finish_windows();
    return 0;
}
