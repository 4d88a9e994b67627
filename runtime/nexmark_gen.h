/* SPDX-License-Identifier: MIT */
/* nexmark_gen.h: the bids of a Nexmark event stream, as a pure function of (config, bid number).
 * Shared by the weir source (source_nexmark.c) and the plain-C benchmark baselines
 * (bench/baseline/nexmark_*.c), which include it without linking weir, so both see exactly the
 * same bids. Header-only (static functions) and dependent on nothing but libc and libm.
 *
 * The shape is the Nexmark generator's (Beam/Flink GeneratorConfig, BidGenerator): the stream
 * interleaves people, auctions and bids in proportions 1 : 3 : 46 of every 50 events, and a bid
 * names an auction and a bidder that exist by then. With probability 1 - 1/hot_auction_ratio a
 * bid goes to the hot auction (the first of the last batch of 100 auctions), else to one of the
 * last in_flight_auctions auctions (or up to 10 ahead); bidders likewise with hot_bidder_ratio,
 * over the last active_people people. Prices are round(10^(6u) * 100) cents, u uniform in [0, 1)
 * (log-uniform from 1 to 10^6 dollars), and event e is stamped base_time + e * 1000 /
 * events_per_second ms (floored), so timestamps never go back. Unlike Nexmark, which seeds
 * java.util.Random per event, each bid draws from splitmix64 seeded by (seed, event number):
 * any bid can be made on its own, in any order. */
#ifndef WR_NEXMARK_GEN_H
#define WR_NEXMARK_GEN_H

#include <math.h>
#include <stdint.h>

enum {
    WR_NEXMARK_PERSON_PROPORTION = 1,
    WR_NEXMARK_AUCTION_PROPORTION = 3,
    WR_NEXMARK_BID_PROPORTION = 46,
    WR_NEXMARK_TOTAL_PROPORTION = 50,
    WR_NEXMARK_HOT_BATCH = 100, /* hot auctions and bidders are the first of such a batch */
    WR_NEXMARK_FIRST_AUCTION_ID = 1000,
    WR_NEXMARK_FIRST_PERSON_ID = 1000,
    WR_NEXMARK_ID_LEAD = 10 /* a bid may name an auction or person up to this far ahead */
};

typedef struct wr_nexmark {
    uint64_t seed;
    double events_per_second; /* > 0 */
    double base_time_ms;
    int64_t hot_auction_ratio;  /* >= 1 */
    int64_t hot_bidder_ratio;   /* >= 1 */
    int64_t in_flight_auctions; /* >= 1 */
    int64_t active_people;      /* >= 1 */
} wr_nexmark_t;

/* One bid; weir.nexmark.bid is the same struct on the Lua side (offsets 0, 4, 8, 16). */
typedef struct wr_nexmark_bid {
    int32_t auction;
    int32_t bidder;
    int32_t price; /* cents */
    double ts;     /* ms */
} wr_nexmark_bid_t;

/* The defaults of the weir source (and Nexmark's, but for the fixed base time). */
static inline wr_nexmark_t wr_nexmark_defaults(void)
{
    wr_nexmark_t c = { 0, 10000.0, 0.0, 2, 4, 100, 1000 };
    return c;
}

static inline uint64_t wr_nexmark_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* Uniform in [0, n), n >= 1 (modulo bias below 2^-40 for the n used here). */
static inline int64_t wr_nexmark_below(uint64_t *state, int64_t n)
{
    return (int64_t)(wr_nexmark_next(state) % (uint64_t)n);
}

/* The event number of bid i: bids are events 4..49 of every 50. */
static inline int64_t wr_nexmark_event_of_bid(int64_t i)
{
    return i / WR_NEXMARK_BID_PROPORTION * WR_NEXMARK_TOTAL_PROPORTION
           + WR_NEXMARK_PERSON_PROPORTION + WR_NEXMARK_AUCTION_PROPORTION
           + i % WR_NEXMARK_BID_PROPORTION;
}

/* The last auction (0-based) created at or before a bid event. */
static inline int64_t wr_nexmark_last_auction(int64_t event)
{
    return event / WR_NEXMARK_TOTAL_PROPORTION * WR_NEXMARK_AUCTION_PROPORTION
           + WR_NEXMARK_AUCTION_PROPORTION - 1;
}

/* The last person (0-based) created at or before a bid event. */
static inline int64_t wr_nexmark_last_person(int64_t event)
{
    return event / WR_NEXMARK_TOTAL_PROPORTION * WR_NEXMARK_PERSON_PROPORTION
           + WR_NEXMARK_PERSON_PROPORTION - 1;
}

/* Bid number i (0-based) of the stream c describes. */
static inline wr_nexmark_bid_t wr_nexmark_bid(const wr_nexmark_t *c, int64_t i)
{
    int64_t event = wr_nexmark_event_of_bid(i);
    uint64_t state = c->seed * 0xd1b54a32d192ed03u + (uint64_t)event;
    wr_nexmark_bid_t b;

    int64_t last_auction = wr_nexmark_last_auction(event);
    int64_t auction;
    if (wr_nexmark_below(&state, c->hot_auction_ratio) > 0) {
        auction = last_auction / WR_NEXMARK_HOT_BATCH * WR_NEXMARK_HOT_BATCH;
    } else {
        int64_t lo = last_auction - c->in_flight_auctions;
        lo = lo > 0 ? lo : 0;
        auction = lo + wr_nexmark_below(&state, last_auction - lo + 1 + WR_NEXMARK_ID_LEAD);
    }
    b.auction = (int32_t)(auction + WR_NEXMARK_FIRST_AUCTION_ID);

    int64_t people = wr_nexmark_last_person(event) + 1;
    int64_t bidder;
    if (wr_nexmark_below(&state, c->hot_bidder_ratio) > 0) {
        bidder = (people - 1) / WR_NEXMARK_HOT_BATCH * WR_NEXMARK_HOT_BATCH + 1;
    } else {
        int64_t active = people < c->active_people ? people : c->active_people;
        bidder = people - active + wr_nexmark_below(&state, active + WR_NEXMARK_ID_LEAD);
    }
    b.bidder = (int32_t)(bidder + WR_NEXMARK_FIRST_PERSON_ID);

    double u = (double)(wr_nexmark_next(&state) >> 11) * 0x1.0p-53;
    b.price = (int32_t)llround(pow(10.0, u * 6.0) * 100.0);

    b.ts = c->base_time_ms + floor((double)event * 1000.0 / c->events_per_second);
    return b;
}

#endif
