/* SPDX-License-Identifier: MIT */
/* kafka_sink.h: the Kafka sink's producer (ds:kafka_sink). Its functions are FFI entries
 * (weir_kafka_sink_*, in weir_ffi.h); nothing else in C calls them. */
#ifndef WR_KAFKA_SINK_H
#define WR_KAFKA_SINK_H

#include "weir.h"

#endif
