/* SPDX-License-Identifier: MIT */
/* repl.h: the REPL's input as loop.c sees it; weir_repl_* (weir_ffi.h) are Lua's side. The
 * runtime owns its REPL (rt->repl): the first weir_repl_* call creates it, weir_rt_free closes
 * and frees it. Lines reach Lua only as WEIR_EV_INPUT events of weir_loop_poll, one per poll. */
#ifndef WR_REPL_H
#define WR_REPL_H

#include "weir.h"

typedef struct wr_repl wr_repl_t; /* opaque outside repl.c */

/* weir_repl_open reading descriptor fd instead of 0 (tests feed a pipe). fd is duplicated; the
 * caller keeps its own. Line editing needs fd 0 to be a terminal: otherwise, or with
 * interactive 0, fd is read as plain lines. Returns 0 or a negative code (WEIR_ESTATE when a
 * REPL is open already), detail in weir_rt_error. */
int wr_repl_open_fd(weir_rt_t *rt, int fd, int interactive, const char *history_path);

/* 1 while the REPL is open and its EOF event has not been delivered: a poll may wait for it. */
int wr_repl_live(const weir_rt_t *rt);
/* Start of a poll: the line handed out by the previous poll is no longer referenced. */
void wr_repl_begin(weir_rt_t *rt);
/* Appends one INPUT event, a line or (once) EOF, if one is ready; returns 1 if it did. A
 * regular file is read here, synchronously; streams and the terminal are read by uv_run. */
int wr_repl_emit(weir_rt_t *rt);
/* Ctrl-C at the prompt: the line being edited is dropped; the next wait shows a fresh one. */
void wr_repl_interrupt(weir_rt_t *rt);
/* The poll is about to wait in uv_run: show the prompt and read keys (line editing). */
void wr_repl_wait(weir_rt_t *rt);
/* The poll returns events or an error: clear the prompt line, so what Lua prints does not
 * land on it. */
void wr_repl_returning(weir_rt_t *rt);
/* weir_rt_free: give the terminal back and uv_close the handles (before the loop runs out). */
void wr_repl_close(weir_rt_t *rt);
/* weir_rt_free, after every close callback has run. */
void wr_repl_free(weir_rt_t *rt);

#endif
