/* SPDX-License-Identifier: MIT */
/* source_file.h: text read from a path or from standard input. A regular file (or character
 * device) is read synchronously, on demand, inside the poll; a pipe, tty or socket is read
 * through libuv. weir_source_file and weir_source_stdin (weir_ffi.h) are built on this. */
#ifndef WR_SOURCE_FILE_H
#define WR_SOURCE_FILE_H

#include <stdint.h>
#include <stddef.h>

#include "lines.h"
#include "weir.h"

/* Declares a text source reading path, or file descriptor 0 when path is NULL; kind is the
 * first word of its describe string ("read_text_file", "stdin"). Returns the id or a negative
 * code (detail in weir_rt_error). */
int32_t wr_source_file_add(weir_rt_t *rt, const char *kind, const char *path,
                           const char *delimiter, int32_t max_line_bytes);

/* One read(2) of descriptor fd into l: up to chunk bytes (more, up to 4 * chunk, when l has
 * that much room), EINTR retried. Returns 0 with *nread the bytes read and committed to l (0:
 * end of input), 1 with nothing read when l's records are pinned and leave less than
 * min_room, or a negative UV_E* code when read(2) failed. The file source and the REPL's
 * plain input (source_repl.c) read regular files with it. */
int wr_source_file_read(int fd, wr_lines_t *l, size_t chunk, size_t min_room, size_t *nread);

#endif
