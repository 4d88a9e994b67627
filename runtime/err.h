/* SPDX-License-Identifier: MIT */
/* err.h: weir's error slot. Functions return 0 or a negative code (libuv's UV_E* pass through,
 * weir's own are enum WEIR_E* in weir_ffi.h); the slot holds the human detail. */
#ifndef WR_ERR_H
#define WR_ERR_H

#include <stdarg.h>

#include "weir.h"

enum { WR_ERR_MSG_MAX = 1024 };

typedef struct wr_err {
    int code;
    char msg[WR_ERR_MSG_MAX];
} wr_err_t;

/* Records code and the formatted detail in e, and returns code, so failing is one line. */
int wr_err_set(wr_err_t *e, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* wr_err_set with the arguments as a va_list (for a setter of its own, such as wr_loop_fail). */
int wr_err_vset(wr_err_t *e, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
void wr_err_clear(wr_err_t *e);

#endif
