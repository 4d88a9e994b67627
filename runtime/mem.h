/* SPDX-License-Identifier: MIT */
/* mem.h: allocation wrappers and weir's memory account (weir_mem_* in weir_ffi.h).
 *
 * Every C allocation weir makes goes through wr_x* and is freed with wr_free, which count the
 * bytes malloc gave (malloc_usable_size); the Lua allocator below counts LuaJIT's heap in the
 * same account. The account never refuses a C allocation: C called from Lua cannot raise a Lua
 * error, so passing the limit only raises the alarm, and the Lua driver turns it into a clean
 * job failure at its next check (weir_mem_check). When malloc itself fails, the wrappers release
 * an emergency reserve and retry, so the failure path has memory to run in, and record the
 * failure for the same check. Only when even the retry fails do they print "weir: out of
 * memory" and exit(1) (stdio, and so weir's output, is flushed; close() does not run). */
#ifndef WR_MEM_H
#define WR_MEM_H

#include <stddef.h>
#include <stdint.h>

void *wr_xmalloc(size_t n);
void *wr_xcalloc(size_t count, size_t size);
void *wr_xrealloc(void *p, size_t n);
/* realloc to count * size; an overflow of the product fails as out of memory */
void *wr_xreallocarray(void *p, size_t count, size_t size);
/* Frees what the wr_x* functions returned (NULL is a no-op). Memory from elsewhere (libedit,
 * getaddrinfo) goes to free(), or the account drifts. */
void wr_free(void *p);
/* Counted allocation for structures that report the bytes they hold: resizes p from old_n to
 * new_n items of size bytes (as wr_xreallocarray) and moves *bytes by the difference; release
 * frees p's n items and takes them off *bytes. */
void *wr_xresize_counted(size_t *bytes, void *p, size_t old_n, size_t new_n, size_t size);
void wr_release_counted(size_t *bytes, void *p, size_t n, size_t size);
char *wr_xstrdup(const char *s);
char *wr_xmemdup(const void *p, size_t n); /* copies n bytes and adds a NUL */

/* A hash table asks before it doubles: 1 when it may allocate bytes more, 0 when that would pass
 * the memory limit (the alarm rings, and the next weir_mem_check reports the limit passed
 * unless a garbage collection made room) or, for 1 MiB or more, when a trial malloc fails (a
 * system failure, as below). A table told no keeps filling (its probes get longer) and grows
 * anyway when only one empty entry would be left, so the answer never breaks it; it keeps a
 * doubling from overshooting the limit, or from exiting, before the driver's next check. */
int wr_mem_may_grow(size_t bytes);
/* 1 while a memory limit is set (weir_mem_set_limit with bytes > 0), else 0. */
int wr_mem_limited(void);

/* The allocator of a lua_State (lua_Alloc's signature, without lua.h): counts into the account
 * and passes every call on to next (LuaJIT's own allocator, from lua_getallocf). It refuses
 * growth (returns NULL: LuaJIT raises "not enough memory") once the account would pass the
 * refusal point, never a shrink or a free. ud is a wr_lua_alloc_t that outlives the state. */
typedef void *(*wr_alloc_fn)(void *ud, void *ptr, size_t osize, size_t nsize);
typedef struct wr_lua_alloc {
    wr_alloc_fn next;
    void *next_ud;
} wr_lua_alloc_t;
void *wr_mem_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize);
/* Sets the Lua heap's count: when the allocator is installed on a state that already holds
 * bytes, and 0 after lua_close. */
void wr_mem_set_lua_bytes(size_t bytes);

/* Tests only: the next n mallocs weir makes (C and Lua) fail as if the system refused them. */
void wr_mem_fail_next(int n);

#endif
