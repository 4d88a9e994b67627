/* SPDX-License-Identifier: MIT */
/* mem.c: allocation wrappers and weir's memory account (mem.h has the contract). One account
 * per process: weir runs one job on one thread. Invariant: c_bytes is the sum of
 * malloc_usable_size over the live blocks of wr_x*, lua_bytes the sum of the blocks LuaJIT's
 * allocator made for what LuaJIT asked (lua_chunk); both move only here. The hot paths cost an
 * add and two compares: every other decision waits until the account passes `watch`, the lower
 * of the alarm and refusal points. */
#include "mem.h"

#include <malloc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "weir.h"

enum { RESERVE_BYTES = 8 << 20, MIN_HEADROOM = 4 << 20, PROBE_BYTES = 1 << 20 };

static struct {
    int64_t c_bytes, lua_bytes, peak;
    int64_t limit;      /* 0: none */
    int64_t soft;       /* limit - limit / 8: where the first alarm rings */
    int64_t headroom;   /* what the failure path may use past the refusal point */
    int64_t gc_at;      /* passing it rings the alarm */
    int64_t refuse_at;  /* Lua growth past it is refused */
    int64_t watch;      /* min(gc_at, refuse_at) */
    int64_t wanted;     /* the largest growth wr_mem_may_grow refused since the last check */
    int32_t alarm;      /* weir_mem_check has something to look at */
    int32_t why;        /* WEIR_MEM_* bits not yet reported by weir_mem_check */
    int32_t tripped;    /* the failure path's headroom is given out */
    int32_t let_through; /* tripped by a large Lua block let past the limit (not a failure yet) */
    int64_t last_wanted; /* wanted, as the last check saw it */
    double failed_bytes;
    void *reserve;      /* released when malloc fails, so the failure path can run */
    int fail_next;      /* tests: mallocs still to fail */
} acct = {.gc_at = INT64_MAX, .refuse_at = INT64_MAX, .watch = INT64_MAX};

static void set_points(int64_t gc_at, int64_t refuse_at)
{
    acct.gc_at = gc_at;
    acct.refuse_at = refuse_at;
    acct.watch = gc_at < refuse_at ? gc_at : refuse_at;
}

static int64_t total(void)
{
    return acct.c_bytes + acct.lua_bytes;
}

/* The job is failing: no more alarms, and the refusal point moves up by the headroom once, so
 * unwinding, the error message, close() and the output flush can allocate. */
static void trip(void)
{
    if (acct.tripped) {
        return;
    }
    acct.tripped = 1;
    int64_t from = total() > acct.refuse_at ? total() : acct.refuse_at;
    set_points(INT64_MAX, acct.refuse_at == INT64_MAX ? INT64_MAX : from + acct.headroom);
}

/* ---- the system allocator, with the tests' failures ------------------------------------- */

static int injected_failure(void)
{
    if (acct.fail_next > 0) {
        acct.fail_next--;
        return 1;
    }
    return 0;
}

static void *sys_malloc(size_t n)
{
    return injected_failure() ? NULL : malloc(n);
}

static void *sys_calloc(size_t count, size_t size)
{
    return injected_failure() ? NULL : calloc(count, size);
}

static void *sys_realloc(void *p, size_t n)
{
    return injected_failure() ? NULL : realloc(p, n);
}

/* Address space (PROT_NONE, never resident) held for the Lua heap's next large block: twice
 * its largest block so far. A Lua allocation must not fail: from JIT-compiled code, LuaJIT up to
 * 2.1-20230119 (before its 2d8300c1, "Fix frame for on-trace out-of-memory error") raises the
 * error from a stale L->base and writes "not enough memory" over a live slot of the trace's
 * frame; the trace exit then reads that string as a function (SIGSEGV). So the address space a
 * large block's doubling needs is taken early, where a refusal is only a flag for the check
 * between batches, and given back when the system refuses the Lua heap. */
static void *lua_reserve;
static size_t lua_reserve_bytes;

static void release_lua_reserve(void)
{
    if (lua_reserve) {
        munmap(lua_reserve, lua_reserve_bytes);
        lua_reserve = NULL;
        lua_reserve_bytes = 0;
    }
}

/* malloc refused n bytes: record it for weir_mem_check and give back the reserves, so that the
 * caller's retry (and what follows) can succeed. */
static void system_refused(size_t n)
{
    acct.why |= WEIR_MEM_FAILED;
    acct.alarm = 1;
    acct.failed_bytes = (double)n;
    free(acct.reserve);
    acct.reserve = NULL;
    release_lua_reserve();
    trip();
}

static void grow_lua_reserve(size_t want)
{
    if (want <= lua_reserve_bytes || acct.tripped) {
        return;
    }
    release_lua_reserve();
    void *p = mmap(NULL, want, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        system_refused(want / 2); /* the block the Lua heap would want next */
        return;
    }
    lua_reserve = p;
    lua_reserve_bytes = want;
}

static void out_of_memory(size_t n)
{
    fprintf(stderr, "weir: out of memory: the system refused %zu bytes even after weir released "
                    "its reserve (weir held %.1f MiB)\n",
            n, (double)total() / 1048576.0);
    exit(1); /* not abort(): stdio, and with it weir's output, is flushed */
}

static void count_c(int64_t delta)
{
    acct.c_bytes += delta;
    int64_t t = total();
    if (t > acct.peak) {
        acct.peak = t;
    }
    if (t > acct.gc_at) {
        acct.alarm = 1;
    }
}

/* ---- C allocations ---------------------------------------------------------------------- */

void *wr_xmalloc(size_t n)
{
    n = n ? n : 1;
    void *p = sys_malloc(n);
    if (!p) {
        system_refused(n);
        p = sys_malloc(n);
        if (!p) {
            out_of_memory(n);
        }
    }
    count_c((int64_t)malloc_usable_size(p));
    return p;
}

void *wr_xcalloc(size_t count, size_t size)
{
    count = count ? count : 1;
    size = size ? size : 1;
    if (count > SIZE_MAX / size) {
        out_of_memory(SIZE_MAX);
    }
    void *p = sys_calloc(count, size);
    if (!p) {
        system_refused(count * size);
        p = sys_calloc(count, size);
        if (!p) {
            out_of_memory(count * size);
        }
    }
    count_c((int64_t)malloc_usable_size(p));
    return p;
}

void *wr_xrealloc(void *p, size_t n)
{
    n = n ? n : 1;
    int64_t old = p ? (int64_t)malloc_usable_size(p) : 0;
    void *q = sys_realloc(p, n);
    if (!q) {
        system_refused(n); /* p is still valid: realloc leaves it alone on failure */
        q = sys_realloc(p, n);
        if (!q) {
            out_of_memory(n);
        }
    }
    count_c((int64_t)malloc_usable_size(q) - old);
    return q;
}

void *wr_xreallocarray(void *p, size_t count, size_t size)
{
    if (size && count > SIZE_MAX / size) {
        out_of_memory(SIZE_MAX);
    }
    return wr_xrealloc(p, count * size);
}

void wr_free(void *p)
{
    if (p) {
        acct.c_bytes -= (int64_t)malloc_usable_size(p);
        free(p);
    }
}

void *wr_xresize_counted(size_t *bytes, void *p, size_t old_n, size_t new_n, size_t size)
{
    void *q = wr_xreallocarray(p, new_n, size);
    *bytes = *bytes - old_n * size + new_n * size;
    return q;
}

void wr_release_counted(size_t *bytes, void *p, size_t n, size_t size)
{
    wr_free(p);
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

int wr_mem_limited(void)
{
    return acct.limit > 0;
}

int wr_mem_may_grow(size_t bytes)
{
    if (total() + (int64_t)bytes > acct.refuse_at) {
        if ((int64_t)bytes > acct.wanted) {
            acct.wanted = (int64_t)bytes;
        }
        acct.alarm = 1;
        return 0;
    }
    if (bytes >= PROBE_BYTES) {
        /* A doubling is the largest allocation weir makes, too large for the reserve to make
         * up for: a trial mapping of its size (malloc maps blocks this large too) turns a
         * system that cannot give it into a wait and a flag instead of an exit. Not a trial
         * malloc: freeing it would raise glibc's mmap threshold, and later large blocks would
         * come from the heap, where realloc copies and free keeps the pages. */
        void *p = acct.fail_next > 0 ? MAP_FAILED
                                     : mmap(NULL, bytes, PROT_READ | PROT_WRITE,
                                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            injected_failure();
            system_refused(bytes);
            return 0;
        }
        munmap(p, bytes);
    }
    return 1;
}

/* ---- the Lua heap ----------------------------------------------------------------------- */

/* What a block of n bytes takes in LuaJIT's allocator (lj_alloc.c, dlmalloc's layout): n plus
 * an 8-byte header, rounded up to 8, at least 32. Most Lua objects are small, so counting this
 * instead of n keeps the count near the resident size. */
static int64_t lua_chunk(size_t n)
{
    return n == 0 ? 0 : n <= 24 ? 32 : (int64_t)((n + 15) & ~(size_t)7);
}

void *wr_mem_lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
    const wr_lua_alloc_t *a = ud;
    int64_t grow = lua_chunk(nsize) - lua_chunk(osize);
    if (grow > 0) {
        int64_t t = total() + grow;
        if (t > acct.watch) {
            if (t > acct.refuse_at && nsize >= PROBE_BYTES && !acct.tripped) {
                /* A large block past the limit is a table's doubling, most often inside
                 * compiled code, where LuaJIT 2.1-20230119 mishandles an out-of-memory error
                 * (it can die by SIGSEGV): it is let through, the job over its limit by that
                 * one block, with room for the rest of the batch; the check after the batch
                 * fails the job (or, if a collection brought it back under, goes on). */
                acct.let_through = 1;
                trip();
            } else if (t > acct.refuse_at) {
                acct.why |= WEIR_MEM_REFUSED;
                acct.alarm = 1;
                trip();
                return NULL; /* LuaJIT raises "not enough memory" */
            }
            acct.alarm = 1;
        }
        if (t > acct.peak) {
            acct.peak = t;
        }
    }
    void *q = injected_failure() ? NULL : a->next(a->next_ud, ptr, osize, nsize);
    if (!q && nsize > 0) {
        system_refused(nsize);
        q = a->next(a->next_ud, ptr, osize, nsize);
        if (!q) {
            return NULL; /* rare now: the Lua reserve covers a large block's doubling */
        }
    }
    acct.lua_bytes += grow;
    if (grow > 0 && nsize >= PROBE_BYTES && nsize <= SIZE_MAX / 2) {
        grow_lua_reserve(2 * nsize);
    }
    return q;
}

void wr_mem_set_lua_bytes(size_t bytes)
{
    acct.lua_bytes = (int64_t)bytes;
}

void wr_mem_fail_next(int n)
{
    acct.fail_next = n;
}

/* ---- the FFI surface -------------------------------------------------------------------- */

double weir_mem_parse_size(const char *text)
{
    if (!text) {
        return -1;
    }
    const char *s = text;
    double v = 0;
    int digits = 0;
    for (; *s >= '0' && *s <= '9'; s++, digits++) {
        v = v * 10 + (*s - '0');
    }
    if (*s == '.') {
        double scale = 0.1;
        for (s++; *s >= '0' && *s <= '9'; s++, digits++, scale /= 10) {
            v += (*s - '0') * scale;
        }
    }
    if (digits == 0 || digits > 30) {
        return -1;
    }
    double unit = 1;
    const char *units = "kmgt";
    const char *u = *s ? strchr(units, *s | 0x20) : NULL;
    if (u) {
        unit = ldexp(1, 10 * (int)(u - units + 1));
        s++;
    }
    if (*s == 'b' || *s == 'B') {
        s++;
    }
    double bytes = floor(v * unit);
    if (*s || bytes < 1 || bytes > 9007199254740992.0) {
        return -1;
    }
    return bytes;
}

int weir_mem_set_limit(double bytes)
{
    if (!(bytes >= 0) || bytes > 9007199254740992.0) {
        return WEIR_EINVAL;
    }
    if (!acct.reserve) {
        acct.reserve = malloc(RESERVE_BYTES); /* untouched: address space, not resident */
    }
    acct.limit = (int64_t)bytes;
    acct.why = 0;
    acct.alarm = 0;
    acct.tripped = acct.let_through = 0;
    acct.wanted = acct.last_wanted = 0;
    if (acct.limit == 0) {
        acct.soft = acct.headroom = 0;
        set_points(INT64_MAX, INT64_MAX);
        return 0;
    }
    acct.soft = acct.limit - acct.limit / 8;
    acct.headroom = acct.limit / 8 > MIN_HEADROOM ? acct.limit / 8 : MIN_HEADROOM;
    set_points(acct.soft, acct.limit);
    acct.alarm = total() > acct.gc_at;
    return 0;
}

double weir_mem_stat(int32_t what)
{
    switch (what) {
    case WEIR_MEM_TOTAL:
        return (double)total();
    case WEIR_MEM_C:
        return (double)acct.c_bytes;
    case WEIR_MEM_LUA:
        return (double)acct.lua_bytes;
    case WEIR_MEM_PEAK:
        return (double)acct.peak;
    case WEIR_MEM_LIMIT:
        return (double)acct.limit;
    case WEIR_MEM_FAILED_BYTES:
        return acct.failed_bytes;
    case WEIR_MEM_WANTED:
        return (double)acct.last_wanted;
    default:
        return NAN;
    }
}

int32_t weir_mem_alarm(void)
{
    return acct.alarm;
}

int32_t weir_mem_check(void)
{
    int64_t t = total();
    int32_t why = acct.why;
    if (acct.limit > 0 && t + acct.wanted > acct.limit) {
        why |= WEIR_MEM_OVER;
    }
    acct.why = 0;
    acct.last_wanted = acct.wanted;
    acct.wanted = 0;
    acct.alarm = 0;
    if (why) {
        acct.let_through = 0;
        trip();
        return why;
    }
    if (acct.let_through) { /* back under the limit after a large block: the limit holds again */
        acct.let_through = 0;
        acct.tripped = 0;
    }
    if (acct.limit > 0 && !acct.tripped) {
        /* under the limit (after the caller's collection): the next alarm half way to it, and at
         * least limit/32 on, so a heap that stays near the limit is not collected on every
         * check (past the limit, Lua's growth is refused anyway) */
        int64_t step = (acct.limit - t) / 2 > acct.limit / 32 ? (acct.limit - t) / 2
                                                               : acct.limit / 32;
        set_points(t + step > acct.soft ? t + step : acct.soft, acct.limit);
    }
    return 0;
}
