/* SPDX-License-Identifier: MIT */
/* err.c: the error slot, and weir_strerror, which names weir's codes and libuv's (so it
 * includes uv.h, for uv_strerror_r only). */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>
#include <uv.h>

int wr_err_set(wr_err_t *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    wr_err_vset(e, code, fmt, ap);
    va_end(ap);
    return code;
}

int wr_err_vset(wr_err_t *e, int code, const char *fmt, va_list ap)
{
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    e->code = code;
    return code;
}

void wr_err_clear(wr_err_t *e)
{
    e->code = 0;
    e->msg[0] = '\0';
}

const char *weir_version(void)
{
    return WEIR_VERSION;
}

const char *weir_strerror(int code)
{
    switch (code) {
    case WEIR_EOK:
        return "success";
    case WEIR_EINVAL:
        return "invalid argument";
    case WEIR_ESOURCE:
        return "source failed";
    case WEIR_ESTATE:
        return "call not allowed in this state";
    default:
        break;
    }
    if (code < 0) {
        /* uv_strerror leaks for unknown codes; the _r form writes into our buffer */
        static _Thread_local char buf[128];
        return uv_strerror_r(code, buf, sizeof buf);
    }
    return "unknown error";
}
