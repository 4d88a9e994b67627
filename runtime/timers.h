/* SPDX-License-Identifier: MIT */
/* timers.h: the timer service of one operator subtask (Flink's InternalTimerService, SEMANTICS.md
 * section 5.6) under weir's determinism rule (DESIGN.md, Time): per domain, a set of timers
 * (time, key, window start, window stop) that pops in (time, registration order). */
#ifndef WR_TIMERS_H
#define WR_TIMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "idtab.h"

/* The domains are the FFI's WEIR_TIME_EVENT (0) and WEIR_TIME_PROCESSING (1). */
enum { WR_TIMERS_DOMAINS = 2 };

/* Live timers per domain are capped so that counts fit the FFI's int32_t. */
enum { WR_TIMERS_MAX = INT32_MAX };

/* A timer. Times and window bounds are ms, INT64_MIN/INT64_MAX being -inf/+inf; key is a key id.
 * Two timers are the same timer when all four fields are equal. */
typedef struct wr_timer {
    int64_t time_ms;
    int64_t key;
    int64_t start;
    int64_t stop;
} wr_timer_t;

/* One heap entry. The order (time, seq) is inline so that sifting reads only the heap array;
 * `node` names the node holding the rest of the timer. */
typedef struct wr_timers_entry {
    int64_t time_ms;
    uint64_t seq; /* registration counter of the domain: the tie-breaker */
    uint32_t node;
} wr_timers_entry_t;

/* One index entry: a live node and the 32-bit hash of its timer. The hash is both where the
 * entry's probe run starts (hash & (index.cap - 1); index.cap <= 2^32) and a fingerprint that
 * a lookup compares before it reads the node, so probing past other timers stays in the index
 * and deletion and growth never rehash a timer. */
typedef struct wr_timers_slot {
    uint32_t node; /* UINT32_MAX = empty */
    uint32_t hash;
} wr_timers_slot_t;

/* A run: entries appended in (time, seq) order and taken from the front, a FIFO that holds
 * the timers that arrive in time order (most do: windows' ends, cleanup times, timeouts) at
 * O(1) per register and pop. A deleted entry stays as a tombstone (node UINT32_MAX) until the
 * front passes it or the run is compacted; the front entry is always live. */
enum { WR_TIMERS_RUNS = 4 };
typedef struct wr_timers_run {
    wr_timers_entry_t *e; /* [head, end) in use, cap allocated */
    uint32_t head, end, cap;
    uint32_t live; /* entries in [head, end) that are no tombstone */
} wr_timers_run_t;

/* One domain: a binary min-heap over (time, seq), a node pool with a free list, and an
 * open-addressing index (linear probing, power-of-two size, at most 3/4 full) from a timer's
 * four fields to its node. A node is a timer in `nodes` plus its heap position in `pos`, apart:
 * sifting rewrites positions in a dense array of 4-byte entries rather than in the 32-byte
 * timers, and the index (keyed by node id) never changes when the heap moves entries.
 * A live timer is in the heap or in one of the runs; pop takes the least (time, seq) of the
 * heap's top and the runs' fronts. Invariant: heap[0..len) plus the runs' live entries and the
 * live nodes correspond one to one; pos[n] is the heap position of a node in the heap, and
 * WR_TIMERS_IN_RUN | run << 28 | index for one in a run; the index holds exactly the live
 * nodes, each with the hash of its timer. */
typedef struct wr_timers_domain {
    wr_timers_entry_t *heap;  /* len used, cap allocated */
    wr_timer_t *nodes;        /* nodes_len ever used (live or free), cap allocated */
    uint32_t *pos;            /* per node: live, heap position; free, next free node */
    wr_idtab_t index;         /* of wr_timers_slot_t; no entries until the first timer */
    size_t len;               /* timers in the heap */
    size_t runs_len;          /* live timers in the runs */
    wr_timers_run_t run[WR_TIMERS_RUNS];
    size_t nodes_len;
    size_t cap;               /* of heap and nodes */
    uint32_t free_node;       /* head of the free list, or UINT32_MAX */
    uint32_t free_tail;       /* its last node when not empty (distinct services: FIFO) */
    uint64_t next_seq;
} wr_timers_domain_t;

/* Caller's storage; it owns the arrays of both domains. */
typedef struct wr_timers {
    wr_timers_domain_t dom[WR_TIMERS_DOMAINS];
    bool distinct; /* wr_timers_set_distinct: the caller keeps timers distinct, no index */
} wr_timers_t;

/* Empty service; allocates nothing until the first registration. */
void wr_timers_init(wr_timers_t *t);
/* Frees every array; the service is then empty again and may be reused. */
void wr_timers_close(wr_timers_t *t);

/* For a caller that never registers a timer already there and never deletes (the interval
 * join: one timer per buffered timestamp, registered when the timestamp's bucket is made and
 * popped when it goes): no index is kept, so register and pop do no hashing. Register then adds
 * without looking and delete returns WEIR_EINVAL; order, pop, next, count and list are as
 * always. Only on an empty service: WEIR_ESTATE otherwise, else 0. */
int wr_timers_set_distinct(wr_timers_t *t);

/* For all functions below, domain is 0 or 1 (asserted: the FFI checks user input).
 * Registers `timer`: 1 when added, 0 when it was there already (it keeps its place among equal
 * times), WEIR_ESTATE when the domain holds WR_TIMERS_MAX timers. O(1) when the time is at or
 * after the last time of one of the runs, else expected O(log n). */
int wr_timers_register(wr_timers_t *t, int domain, const wr_timer_t *timer);
/* Removes exactly `timer`: 1 when removed, 0 when absent. Expected O(log n). */
int wr_timers_delete(wr_timers_t *t, int domain, const wr_timer_t *timer);
/* Removes the earliest timer (ties: the earliest registered) into *out and returns 1 when its
 * time is <= upto_ms; else returns 0 and leaves *out alone. Timers registered between pops take
 * part, so a firing loop also fires timers registered during it with time <= upto_ms. When a
 * domain empties, large arrays go back to the allocator. O(log n). */
int wr_timers_pop(wr_timers_t *t, int domain, int64_t upto_ms, wr_timer_t *out);
/* The earliest time in the domain, or INT64_MAX when it is empty (a timer at +inf also says
 * INT64_MAX: wr_timers_count tells them apart). O(1). */
int64_t wr_timers_next(const wr_timers_t *t, int domain);
size_t wr_timers_count(const wr_timers_t *t, int domain);
/* Copies the first max timers of the domain, in pop order ((time, registration)), into out and
 * returns how many the domain holds (all of them, even when more than max). Changes nothing.
 * O(n log n): for inspection and checkpoints, not the hot path. */
size_t wr_timers_list(const wr_timers_t *t, int domain, wr_timer_t *out, size_t max);

#endif
