/* SPDX-License-Identifier: MIT */
/* fuzz_lua.h: what the targets for weir's Lua parsers share (fuzz_lua.c): a LuaJIT state with
 * the embedded weir modules, as bridge.c makes it, and a reference reading of the duration
 * grammar of API.md (Durations) and the limits the parsers document. Test code: it uses the
 * Lua C API, which only bridge.c does in the runtime. */
#ifndef FUZZ_LUA_H
#define FUZZ_LUA_H

#include <stddef.h>
#include <stdint.h>

#include <lua.h>

/* The hard bound of the parsers' contract: every time and duration they return is a whole
 * number with |ms| <= 2^53 - 1, so that a double holds it exactly. */
#define FUZZ_TIME_MAX 9007199254740991LL

/* A Lua state with the standard libraries and every embedded module requirable; module.field
 * (a function) is left in the registry under the returned reference. Aborts on failure. */
lua_State *fuzz_lua_open(const char *module, const char *field, int *ref);

/* The limit the parsers document, inclusive: the number module.name when the module has one
 * (weir.duration's MAX_DURATION, MAX_TIME), else FUZZ_TIME_MAX; never above FUZZ_TIME_MAX. */
int64_t fuzz_lua_limit(lua_State *L, const char *module, const char *name);

/* Duration text p[0..n): "-"? then parts <digits><ms|s|m|h|d> or plain digits. Returns 1 with
 * *ms set, saturated to +-(FUZZ_TIME_MAX + 1) (beyond every limit), or 0 when it is not a
 * duration. allow_sign 0 refuses the "-" (replay's "+<duration>"). */
int fuzz_ref_duration(const char *p, size_t n, int allow_sign, int64_t *ms);

/* The decimal digits p[0..n) as a number, saturated to FUZZ_TIME_MAX + 1. */
int64_t fuzz_ref_digits(const char *p, size_t n);

#endif
