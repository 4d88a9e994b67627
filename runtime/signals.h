/* SPDX-License-Identifier: MIT */
/* signals.h: SIGINT, SIGTERM, SIGUSR1 and the stop's SIGALRM for the runtime that owns them (one
 * at a time), turned into flags the poll (loop.c) reads, and the wakeup that ends a blocked
 * uv_run. While the runtime's input delivered alone is reading (wr_rt_alone_live: the REPL),
 * SIGINT interrupts that input instead of stopping the job (docs/API.md, Signals). The
 * handlers touch only these flags, write(2), alarm(2) and uv_async_send. */
#ifndef WR_SIGNALS_H
#define WR_SIGNALS_H

#include <stdint.h>

#include "weir.h"

/* weir_rt_new: the async handle the handlers wake a blocked uv_run with. Returns 0 or a
 * UV_E* code. */
int wr_signals_init_wake(weir_rt_t *rt);
/* weir_rt_start: rt takes the signals unless another runtime has them. */
void wr_signals_install(weir_rt_t *rt);
/* weir_rt_free: the handlers rt replaced come back. */
void wr_signals_restore(weir_rt_t *rt);
/* The input delivered alone opened or stopped reading, or the STOP went out: re-decides whether
 * SIGINT is that input's (an interrupt, never a stop) for the runtime that owns the signals. */
void wr_signals_sync(weir_rt_t *rt);

/* weir_loop_poll's start: no operator runs now, and a Ctrl-C from here on asks for an INTERRUPT
 * event itself; a Ctrl-C between polls that Lua did not take becomes one. */
void wr_signals_poll_begin(weir_rt_t *rt);
/* weir_loop_poll's end: a Ctrl-C counts as between polls again. */
void wr_signals_poll_end(weir_rt_t *rt);

/* 1 once a first SIGINT or SIGTERM has reached rt (it stays 1), else 0. */
int wr_signals_stop_asked(const weir_rt_t *rt);
/* 1, and cleared, if a SIGUSR1 asked rt for a status report; else 0. */
int wr_signals_take_status(weir_rt_t *rt);
/* 1, and cleared, if a SIGINT asked for an INTERRUPT of the input delivered alone; else 0. */
int wr_signals_take_interrupt(weir_rt_t *rt);
/* Between polls: 1, and cleared, if a Ctrl-C arrived since the last call while the input
 * delivered alone is reading (Lua's debug hook ends a long command with it); else 0. */
int wr_signals_take_command_interrupt(weir_rt_t *rt);
/* 1 if such a Ctrl-C is waiting, without taking it. */
int wr_signals_command_interrupt_pending(const weir_rt_t *rt);

#endif
