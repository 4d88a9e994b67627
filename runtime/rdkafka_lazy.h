/* SPDX-License-Identifier: MIT */
/* rdkafka_lazy.h: librdkafka is loaded on the first call of one of its functions
 * (rdkafka_lazy.c); weir is not linked against it. */
#ifndef WEIR_RDKAFKA_LAZY_H
#define WEIR_RDKAFKA_LAZY_H

/* The name weir loads librdkafka by (its soname, "librdkafka.so.1"). */
const char *wr_rdkafka_soname(void);

#endif
