/* SPDX-License-Identifier: MIT */
/* The C baseline of bench/gen_sink.lua: i = 0..N-1 counted and summed. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    long long n = argc > 1 ? atoll(argv[1]) : 10000000LL;
    int64_t count = 0, sum = 0;
    for (long long i = 0; i < n; i++) {
        count += 1;
        sum += i;
    }
    printf("count %" PRId64 " sum %" PRId64 "\n", count, sum);
    return 0;
}
