/* SPDX-License-Identifier: MIT */
/* inputlog.h: the input log of a source that cannot go back (a socket, stdin from a pipe;
 * weir run --input-log). Every byte the source reads is appended to the log (one write(2) per
 * read, before any record is cut from it), so a byte weir has read survives a crash of the
 * process (the page cache keeps it; a checkpoint fsyncs the log before it commits). A position
 * in the source is an offset into the log. A restore at offset O replays the log's bytes from O
 * to its end before the source reads live input again, appending to the same log, so offsets
 * stay valid across runs. The bytes no kept checkpoint needs are released by punching a hole
 * (the file keeps its size and offsets; where the file system cannot punch, the log grows). */
#ifndef WR_INPUTLOG_H
#define WR_INPUTLOG_H

#include <stddef.h>
#include <stdint.h>

#include "lines.h"

enum { WR_INPUTLOG_CHECK = 4096 }; /* bytes before a position whose crc32 a restore compares */

typedef struct wr_inputlog {
    int fd;             /* -1: no log */
    int64_t end;        /* the log's length: the offset the next live byte gets */
    int64_t fed;        /* the log offset of the next byte handed to the lines */
    int64_t replay_end; /* bytes [fed, replay_end) are replayed before live input */
    int64_t released;   /* the bytes before this were punched out */
} wr_inputlog_t;

void wr_inputlog_init(wr_inputlog_t *g);
/* Opens (creates) the log at path. from < 0: a fresh start, the log is emptied. from >= 0: a
 * restore at offset from: the log must hold at least from bytes, and when check >= 0 the
 * crc32 of the up to WR_INPUTLOG_CHECK bytes before from must equal it; the bytes after from
 * are replayed first. Returns 0, or a negative errno with what is wrong written to why (cap
 * bytes; "" for a system error, which the code names). */
int wr_inputlog_open(wr_inputlog_t *g, const char *path, int64_t from, double check, char *why,
                     size_t cap);
/* 1 while replayed bytes remain. */
int wr_inputlog_replaying(const wr_inputlog_t *g);
/* Hands up to chunk replayed bytes to l (pread). Returns 0 after progress, 1 when l's pinned
 * records leave less than min_room (nothing read), or a negative errno. */
int wr_inputlog_replay(wr_inputlog_t *g, wr_lines_t *l, size_t chunk, size_t min_room);
/* n live bytes at p were just committed to the lines: append them to the log. Returns 0 or a
 * negative errno (a short write is -ENOSPC). */
int wr_inputlog_append(wr_inputlog_t *g, const char *p, size_t n);
/* The log offset of the first byte not yet cut into a record, given the lines' pending bytes. */
int64_t wr_inputlog_position(const wr_inputlog_t *g, size_t pending);
/* crc32 of the up to WR_INPUTLOG_CHECK bytes before offset; -1 when they cannot be read. */
double wr_inputlog_check(const wr_inputlog_t *g, int64_t offset);
/* Releases the log's bytes before offset (whole 4 KiB blocks, keeping WR_INPUTLOG_CHECK bytes
 * before it for the check). Returns 0, or a negative errno other than "not supported". */
int wr_inputlog_release(wr_inputlog_t *g, int64_t offset);
void wr_inputlog_close(wr_inputlog_t *g);

#endif
