/* SPDX-License-Identifier: MIT */
/* weir.h: the FFI surface for C code. weir_ffi.h has no preprocessor lines (ffi.cdef reads it),
 * so the includes it needs live here. */
#ifndef WEIR_H
#define WEIR_H

#include <stddef.h>
#include <stdint.h>

#include "weir_ffi.h"

#define WEIR_VERSION "0.1.0"

#endif
