/* SPDX-License-Identifier: MIT */
/* source_repl.h: the REPL's input, a source delivered alone (source.h); weir_repl_* (weir_ffi.h)
 * are Lua's side. The runtime owns its REPL (rt->alone): the first weir_repl_* call creates and
 * registers it, weir_rt_free closes and frees it. Lines reach Lua only as WEIR_EV_INPUT events
 * of weir_loop_poll, one per poll. */
#ifndef WR_SOURCE_REPL_H
#define WR_SOURCE_REPL_H

#include "weir.h"

/* weir_repl_open reading descriptor fd instead of 0 (tests feed a pipe). fd is duplicated; the
 * caller keeps its own. Line editing needs fd 0 to be a terminal: otherwise, or with
 * interactive 0, fd is read as plain lines. Returns 0 or a negative code (WEIR_ESTATE when a
 * REPL is open already), detail in weir_rt_error. */
int wr_source_repl_open_fd(weir_rt_t *rt, int fd, int interactive, const char *history_path);

#endif
