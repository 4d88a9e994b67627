/* SPDX-License-Identifier: MIT */
/* source_file.h: text read from a path or from standard input. A regular file (or character
 * device) is read synchronously, on demand, inside the poll; a pipe, tty or socket is read
 * through libuv. weir_source_file and weir_source_stdin (weir_ffi.h) are built on this. */
#ifndef WR_SOURCE_FILE_H
#define WR_SOURCE_FILE_H

#include <stdint.h>

#include "weir.h"

/* Declares a text source reading path, or file descriptor 0 when path is NULL; kind is the
 * first word of its describe string ("read_text_file", "stdin"). Returns the id or a negative
 * code (detail in weir_rt_error). */
int32_t wr_source_file_add(weir_rt_t *rt, const char *kind, const char *path,
                           const char *delimiter, int32_t max_line_bytes);

#endif
