/* SPDX-License-Identifier: MIT */
/* ckpt.h: the checkpoint directory's files: the checksum, whole-file writes made durable, the
 * commit of a checkpoint directory by rename, the writer's lock, listing and removal. What goes
 * into the files (sections, the MANIFEST) is weir.checkpoint's (Lua); this module only moves
 * bytes, in the order that makes a visible checkpoint complete after a crash or power loss.
 * No libuv, no Lua; its one clock reading (weir_ckpt_clock_ms) times the checkpoint's own
 * phases, never the job's. The FFI entries (weir_ckpt_*) are declared in weir_ffi.h. */
#ifndef WR_CKPT_H
#define WR_CKPT_H

#include "weir.h"

#endif
