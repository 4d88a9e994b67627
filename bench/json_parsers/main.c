/* SPDX-License-Identifier: MIT */
/* The JSON parser comparison behind weir's choice (bench/README.md, JSON parsers): each
 * candidate Debian 12 packages parses every line of a file of JSON lines and stores two members
 * by name into a small C record (a string "user" into a char array, a number "ts" into a
 * double) -- the work of format = "json" with record = T. Prints lines/s and MB/s per parser;
 * the checksum proves each read the same values. Built by bench/json_parsers/run.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "parsers.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static char *buf;
static size_t blen;

static void run(const char *name, parse_fn f)
{
    double t0 = now(), sum = 0;
    long lines = 0;
    char *p = buf, *end = buf + blen;
    rec_t r;
    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL) {
            nl = end;
        }
        if (f(p, (size_t)(nl - p), &r) != 0) {
            fprintf(stderr, "%s: line %ld does not parse\n", name, lines + 1);
            exit(1);
        }
        sum += r.ts + (double)(unsigned char)r.user[4];
        lines++;
        p = nl + 1;
    }
    double dt = now() - t0;
    printf("%-10s %6.2f M lines/s %7.1f MB/s %6.0f ns/line  checksum %.0f\n", name,
           (double)lines / dt / 1e6, (double)blen / dt / 1e6, dt / (double)lines * 1e9, sum);
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: json_parsers FILE ROUNDS\n");
        return 2;
    }
    FILE *fh = fopen(argv[1], "rb");
    if (fh == NULL) {
        perror(argv[1]);
        return 1;
    }
    fseek(fh, 0, SEEK_END);
    blen = (size_t)ftell(fh);
    rewind(fh);
    buf = malloc(blen + PAD); /* simdjson reads up to 64 bytes past a line: padding */
    if (fread(buf, 1, blen, fh) != blen) {
        return 1;
    }
    memset(buf + blen, 0, PAD);
    fclose(fh);
    jsonc_init();
    for (int k = 0; k < atoi(argv[2]); k++) {
        run("simdjson", parse_simdjson);
        run("cJSON", parse_cjson);
        run("jansson", parse_jansson);
        run("json-c", parse_jsonc);
    }
    return 0;
}
