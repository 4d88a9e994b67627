/* SPDX-License-Identifier: MIT */
/* source.h: the source base, what every source kind (source_*.c) calls while a poll fills its
 * batch: registration, appending events, cutting text into LINE or RECORDS events, END. The
 * structs are in rt.h; the poll that calls the kinds' hooks is loop.c. No uv.h here. */
#ifndef WR_SOURCE_H
#define WR_SOURCE_H

#include <stdint.h>

#include "lines.h"
#include "weir.h"

typedef struct wr_source wr_source_t;

/* 1 if another source may still be added, else sets the error and returns 0. */
int wr_source_may_add(weir_rt_t *rt);
/* Registers s (allocated by the caller, which gives it to the runtime) and returns its id, or a
 * negative code after start (WEIR_ESTATE). describe is copied. On error s is destroyed. */
int32_t wr_source_add(weir_rt_t *rt, wr_source_t *s, const char *describe);
/* Registers s as the runtime's input delivered alone (the REPL's): it gets no id (its events
 * carry source -1), it may come after start, and the poll asks it for one event only when no
 * other source has anything ready, alone in its batch (rt.h, wr_source_ops_t). s->ended says
 * whether it is reading; the STOP ends it too. At most one per runtime: WEIR_ESTATE, and s is
 * destroyed, when there is one. describe is copied. */
int wr_source_add_alone(weir_rt_t *rt, wr_source_t *s, const char *describe);
/* weir_rt_free, after every close callback has run: frees s (its describe, then its kind's
 * destroy hook). */
void wr_source_destroy(wr_source_t *s);

/* Appends an event of s (NULL: the runtime's own) to the batch, at the clock reading of this
 * pass, or returns NULL when it is full. */
weir_event_t *wr_source_push(weir_rt_t *rt, wr_source_t *s, int32_t kind);
/* The next record of l into rec, the unterminated last one too with at_eof: WR_LINES_RECORD,
 * WR_LINES_NONE (none complete yet, or nothing left), or WR_LINES_DROPPED for an overlong one,
 * which is counted (WEIR_STAT_DROPPED) and, the first per source, reported on stderr here. */
int wr_source_next_line(wr_source_t *s, wr_lines_t *l, int at_eof, wr_line_t *rec);
/* Moves records from l into the batch: complete ones, and with at_eof also the leftover.
 * Overlong records are dropped as wr_source_next_line says. Returns 1 when nothing more is
 * available right now, 0 when the batch filled first. */
int wr_source_emit_text(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof);
/* The typed text path: like wr_source_emit_text, but each line is parsed with fields into the
 * next record of buf (room for cap records of wr_fields_size(fields) bytes; *used of them are
 * taken by this poll and not yet read by Lua, counted up here). Consecutive parsed lines go
 * out as one WEIR_EV_RECORDS run; a line that does not parse goes out as a WEIR_EV_LINE
 * flagged WEIR_LINE_MALFORMED, so Lua can name it (a CSV header line too: Lua's own layout reads
 * it). At most rt's batch size of records per
 * poll. Returns as wr_source_emit_text (0 also when buf or the batch's record budget is full). */
int wr_source_emit_fields(weir_rt_t *rt, wr_source_t *s, wr_lines_t *l, int at_eof,
                          weir_fields_t *fields, char *buf, int32_t cap, int32_t *used);
/* Appends END(flags) and marks s ended; returns 0 if the batch is full (try again later). */
int wr_source_emit_end(weir_rt_t *rt, wr_source_t *s, int32_t flags);

/* 1 when the kernel holds unread bytes for descriptor fd (ioctl FIONREAD), else 0 (also when
 * the ioctl fails). For the pending hooks of stream sources; rt.h has the libuv handle form. */
int wr_source_unread_fd(int fd);

#endif
