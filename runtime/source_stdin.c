/* SPDX-License-Identifier: MIT */
/* source_stdin.c: standard input as a text source. The reading itself is source_file.c's: a
 * regular file on descriptor 0 is read like read_text_file, a pipe, tty or socket through
 * libuv; end of input ends the source. */
#include "source_file.h"

int32_t weir_source_stdin(weir_rt_t *rt, const char *delimiter, int32_t max_line_bytes)
{
    return wr_source_file_add(rt, "stdin", NULL, delimiter, max_line_bytes);
}
