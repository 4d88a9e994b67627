/* SPDX-License-Identifier: MIT */
/* out.h: weir's standard output. Every stdout writer (print sinks, Lua's print and io.write,
 * the REPL) keeps using C stdio's stdout, so their order holds; weir only owns the memory of
 * that buffer, which lets a signal handler write out what is pending, and it watches every
 * write for errors (sticky) and for a stop that waits too long. */
#ifndef WR_OUT_H
#define WR_OUT_H

#include <stddef.h>

/* Once per process, before anything is written: fds 0-2 that are closed are reserved on
 * /dev/null opened the wrong way round (a write to a closed stdout fails with EBADF instead of
 * landing in a descriptor libuv opened), SIGPIPE becomes an EPIPE error, and stdout gets
 * weir's buffer (line-buffered on a terminal, as stdio's default). */
void wr_out_init(void);

/* After the job, and on the way out of a second signal (async-signal-safe): puts stdout's
 * flags back if the stop's bounded wait made it non-blocking (it may be a shared terminal). */
void wr_out_release(void);

/* fflush(stdout), checked: 0, or the sticky error of stdout as a negative (libuv) code. */
int wr_out_flush_stdout(void);

/* Async-signal-safe. A stop has waited too long: stdout turns non-blocking, so the write that
 * is stuck (and every later one) fails at once, and what was pending is counted as lost. */
void wr_out_overdue(void);

/* Async-signal-safe, for the exit on a second signal: writes the bytes pending in stdout's
 * buffer with write(2), waiting at most timeout_ms for a stalled reader. Returns how many
 * bytes could not be written. */
size_t wr_out_dump(int timeout_ms);

/* Erases the --progress line if it is on screen (weir_out_status), before weir's C code writes
 * to stderr. */
void wr_out_clear_status(void);

#endif
