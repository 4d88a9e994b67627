/* SPDX-License-Identifier: MIT */
/* mem.c: allocation wrappers that abort on failure (STYLE.md, section 3). */
#include "mem.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void out_of_memory(void)
{
    fputs("weir: out of memory\n", stderr);
    abort();
}

void *wr_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        out_of_memory();
    }
    return p;
}

void *wr_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) {
        out_of_memory();
    }
    return p;
}

void *wr_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) {
        out_of_memory();
    }
    return q;
}

void *wr_xreallocarray(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        out_of_memory();
    }
    return wr_xrealloc(p, count * size);
}

void *wr_xresize_counted(size_t *bytes, void *p, size_t old_n, size_t new_n, size_t size)
{
    void *q = wr_xreallocarray(p, new_n, size);
    *bytes = *bytes - old_n * size + new_n * size;
    return q;
}

void wr_release_counted(size_t *bytes, void *p, size_t n, size_t size)
{
    free(p);
    *bytes -= n * size;
}

char *wr_xstrdup(const char *s)
{
    return wr_xmemdup(s, strlen(s));
}

char *wr_xmemdup(const void *p, size_t n)
{
    char *q = wr_xmalloc(n + 1);
    memcpy(q, p, n);
    q[n] = '\0';
    return q;
}
