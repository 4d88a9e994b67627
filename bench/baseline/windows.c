/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/windows.lua: events i = 0..N-1 with key i % 10000 and timestamp
 * i / 10 ms, tumbling 5 s event-time windows, a count per (key, window). Plain C on purpose, no
 * weir code: what a hand-written program for exactly this job costs. The windows, their state,
 * timers and checksum are winagg.h's, shared with bench/baseline/text.c. */
#define PROGRAM "bench_baseline_windows"
#include "winagg.h"

enum { KEYS = 10000 };

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 10000000LL;
    init_windows();
    for (long long i = 0; i < n; i++) {
        add_event((int32_t)(i % KEYS), i / 10);
    }
    finish_windows();
    return 0;
}
