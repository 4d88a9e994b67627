/* SPDX-License-Identifier: MIT */
/* err.c: the error slot. weir_strerror lives in loop.c, the file that may include uv.h. */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

int wr_err_set(wr_err_t *e, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
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
