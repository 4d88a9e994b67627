/* SPDX-License-Identifier: MIT */
/* aggs.c: the built-in aggregates' accumulators by window id and their batch operations for
 * the fast window operator's tumbling windows (aggs.h says what they compute). */
#include "aggs.h"
#include "ms.h"

#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "idtab.h"
#include "mem.h"
#include "weir.h"

enum { MIN_CAP = 64 };

void wr_aggs_init(wr_aggs_t *a, wr_agg_kind_t kind)
{
    memset(a, 0, sizeof *a);
    a->kind = kind;
}

void wr_aggs_close(wr_aggs_t *a)
{
    wr_release_counted(&a->bytes, a->acc, a->cap, sizeof *a->acc);
    memset(a, 0, sizeof *a);
}

/* Out of line: the growth is rare, and inlined it would put its registers on every add. */
__attribute__((noinline)) static void grow(wr_aggs_t *a, size_t need)
{
    size_t cap = a->cap ? a->cap : MIN_CAP;
    while (cap < need) {
        cap *= 2;
    }
    a->acc = wr_xresize_counted(&a->bytes, a->acc, a->cap, cap, sizeof *a->acc);
    a->cap = cap;
}

wr_agg_t *wr_aggs_at(wr_aggs_t *a, int32_t id)
{
    if ((size_t)id >= a->cap) {
        grow(a, (size_t)id + 1);
    }
    return &a->acc[id];
}

/* Lua's % on numbers: a - floor(a / b) * b (a floored modulo), so that the windows C finds are
 * the ones the Lua operator computes for the same timestamps. */
static inline double window_start(double ts, double size, double offset)
{
    double a = ts - offset;
    return ts - (a - floor(a / size) * size);
}

/* One function per kind: the switch of wr_agg_add folds away and the loop is the kind's. */
#define APPLY_LOOP(KIND)                                                                      \
    for (int32_t i = 0; i < n; i++) {                                                         \
        double q = window_start(ts[i], size, offset);                                         \
        bool is_new;                                                                          \
        int32_t id = wr_wintab_put(t, keys[i], wr_ms_from_double(q), &is_new);                \
        if (id < 0) {                                                                         \
            return id;                                                                        \
        }                                                                                     \
        wr_agg_t *acc = (size_t)id < a->cap ? &a->acc[id] : wr_aggs_at(a, id);                \
        if (is_new) {                                                                         \
            wr_agg_init(KIND, acc);                                                           \
            fresh[m] = i;                                                                     \
            fresh_start[m] = q;                                                               \
            m++;                                                                              \
        }                                                                                     \
        wr_agg_add(KIND, acc, x ? x[i] : 0);                                                  \
    }

int32_t wr_aggs_apply(wr_aggs_t *a, wr_wintab_t *t, int32_t n, const int32_t *keys,
                      const double *ts, const double *x, double size, double offset,
                      int32_t *fresh, double *fresh_start)
{
    int32_t m = 0;
    switch (a->kind) {
    case WR_AGG_COUNT:
        x = NULL;
        APPLY_LOOP(WR_AGG_COUNT)
        break;
    case WR_AGG_SUM:
        APPLY_LOOP(WR_AGG_SUM)
        break;
    case WR_AGG_MIN:
        APPLY_LOOP(WR_AGG_MIN)
        break;
    case WR_AGG_MAX:
        APPLY_LOOP(WR_AGG_MAX)
        break;
    default:
        APPLY_LOOP(WR_AGG_AVG)
        break;
    }
    return m;
}

int32_t wr_aggs_fire(wr_aggs_t *a, wr_wintab_t *t, const int32_t *keys, int32_t n,
                     int64_t start, bool drop, int32_t *ids, double *value, double *count)
{
    /* the ids first, all of them (wintab's gather prefetches the entries), then the
     * accumulators, prefetched in a pass of their own, so that the misses overlap */
    wr_wintab_gather(t, keys, n, start, ids);
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] >= 0) {
            __builtin_prefetch(wr_aggs_at(a, ids[i]));
        }
    }
    for (int32_t i = 0; i < n; i++) {
        int32_t id = ids[i];
        if (id < 0) {
            value[i] = 0;
            count[i] = 0;
            continue;
        }
        const wr_agg_t *acc = &a->acc[id];
        value[i] = wr_agg_result(a->kind, acc);
        count[i] = acc->n;
        if (drop) {
            wr_wintab_drop(t, keys[i], start);
        }
    }
    return n;
}

/* --- FFI --------------------------------------------------------------------------------- */

struct weir_aggs {
    wr_aggs_t a;
};

weir_aggs_t *weir_aggs_new(int32_t kind)
{
    if (kind < 0 || kind >= WR_AGG_KINDS) {
        return NULL;
    }
    weir_aggs_t *fa = wr_xmalloc(sizeof *fa);
    wr_aggs_init(&fa->a, (wr_agg_kind_t)kind);
    return fa;
}

void weir_aggs_free(weir_aggs_t *fa)
{
    if (!fa) {
        return;
    }
    wr_aggs_close(&fa->a);
    wr_free(fa);
}

int32_t weir_aggs_apply(weir_aggs_t *fa, weir_wintab_t *ft, int32_t n, const int32_t *keys,
                        const double *ts, const double *x, double size, double offset,
                        int32_t *fresh, double *fresh_start)
{
    if (!fa || !ft || n < 0 || (n > 0 && (!keys || !ts || !fresh || !fresh_start)) ||
        !(size > 0) || !isfinite(size) || !isfinite(offset)) {
        return WEIR_EINVAL;
    }
    if (n > 0 && !x && fa->a.kind != WR_AGG_COUNT) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0 || isnan(ts[i])) {
            return WEIR_EINVAL;
        }
    }
    return wr_aggs_apply(&fa->a, &ft->t, n, keys, ts, x, size, offset, fresh, fresh_start);
}

int32_t weir_aggs_add(weir_aggs_t *fa, weir_wintab_t *ft, double key, double start, double x,
                      int32_t *fresh)
{
    if (!fa || !ft || !fresh || wr_idtab_key_id(key) < 0 || isnan(start)) {
        return WEIR_EINVAL;
    }
    bool is_new;
    int32_t id = wr_wintab_put(&ft->t, wr_idtab_key_id(key), wr_ms_from_double(start), &is_new);
    if (id < 0) {
        return id;
    }
    wr_agg_t *acc = wr_aggs_at(&fa->a, id);
    if (is_new) {
        wr_agg_init(fa->a.kind, acc);
    }
    wr_agg_add(fa->a.kind, acc, x);
    *fresh = is_new;
    return id;
}

int32_t weir_aggs_fire(weir_aggs_t *fa, weir_wintab_t *ft, const int32_t *keys, int32_t n,
                       double start, int32_t drop, int32_t *ids, double *value, double *count)
{
    if (!fa || !ft || n < 0 || (n > 0 && (!keys || !ids || !value || !count)) || isnan(start)) {
        return WEIR_EINVAL;
    }
    for (int32_t i = 0; i < n; i++) {
        if (keys[i] < 0) {
            return WEIR_EINVAL;
        }
    }
    return wr_aggs_fire(&fa->a, &ft->t, keys, n, wr_ms_from_double(start), drop != 0, ids,
                        value, count);
}

int32_t weir_aggs_get(const weir_aggs_t *fa, int32_t id, double *out)
{
    if (!fa || !out || id < 0 || (size_t)id >= fa->a.cap) {
        return WEIR_EINVAL;
    }
    const wr_agg_t *acc = &fa->a.acc[id];
    out[0] = acc->v;
    out[1] = acc->n;
    out[2] = wr_agg_result(fa->a.kind, acc);
    return 0;
}

int32_t weir_aggs_set(weir_aggs_t *fa, int32_t id, double v, double n)
{
    if (!fa || id < 0 || isnan(v) || !(n >= 0)) {
        return WEIR_EINVAL;
    }
    wr_agg_t *acc = wr_aggs_at(&fa->a, id);
    acc->v = v;
    acc->n = n;
    return 0;
}

double weir_aggs_stat(const weir_aggs_t *fa, int32_t what)
{
    if (fa && what == WEIR_STORE_BYTES) {
        return (double)(sizeof *fa + fa->a.bytes);
    }
    return NAN;
}
