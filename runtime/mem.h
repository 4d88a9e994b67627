/* SPDX-License-Identifier: MIT */
/* mem.h: allocation wrappers. A job that cannot allocate cannot recover, so these print
 * "weir: out of memory" and abort instead of returning NULL. */
#ifndef WR_MEM_H
#define WR_MEM_H

#include <stddef.h>

void *wr_xmalloc(size_t n);
void *wr_xcalloc(size_t count, size_t size);
void *wr_xrealloc(void *p, size_t n);
/* realloc to count * size, aborting on overflow of the product as on out of memory */
void *wr_xreallocarray(void *p, size_t count, size_t size);
/* Counted allocation for structures that report the bytes they hold: resizes p from old_n to
 * new_n items of size bytes (as wr_xreallocarray) and moves *bytes by the difference; release
 * frees p's n items and takes them off *bytes. */
void *wr_xresize_counted(size_t *bytes, void *p, size_t old_n, size_t new_n, size_t size);
void wr_release_counted(size_t *bytes, void *p, size_t n, size_t size);
char *wr_xstrdup(const char *s);
char *wr_xmemdup(const void *p, size_t n); /* copies n bytes and adds a NUL */

#endif
