/* SPDX-License-Identifier: MIT */
/* fuzz_duration.c: weir.duration.parse (lua/weir/duration.lua, LPeg) inside a LuaJIT state.
 * The limit is the module's MAX_DURATION when it has one, else 2^53 - 1 (fuzz_lua.h). The input
 * as a string must give what the reference reading of API.md's grammar gives (fuzz_lua.c): the
 * same whole number of milliseconds when it is a duration within +-limit, and a Lua error with
 * a string message when it is not a duration or is beyond the limit. An input of 8 bytes or
 * more is also passed as the double its first 8 bytes spell: a whole number within +-limit
 * comes back unchanged, anything else is an error. Whatever the limit, no success may be a
 * fraction or beyond +-(2^53 - 1). */
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_lua.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static lua_State *L;
static int parse_ref;
static int64_t limit;

/* Calls parse(arg at the top of the stack). Returns 1 with the number in *v, or 0 on an
 * error, having checked that its message is a non-empty string. */
static int call_parse(double *v, const char *what)
{
    lua_rawgeti(L, LUA_REGISTRYINDEX, parse_ref);
    lua_insert(L, -2);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        FUZZ_CHECK(lua_type(L, -1) == LUA_TSTRING && lua_objlen(L, -1) > 0,
                   "parse(%s) failed with a %s, not a message", what, luaL_typename(L, -1));
        lua_pop(L, 1);
        return 0;
    }
    FUZZ_CHECK(lua_type(L, -1) == LUA_TNUMBER, "parse(%s) returned a %s", what,
               luaL_typename(L, -1));
    *v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    FUZZ_CHECK(*v == floor(*v) && fabs(*v) <= (double)FUZZ_TIME_MAX,
               "parse(%s) = %.17g: not a whole number within +-(2^53 - 1)", what, *v);
    return 1;
}

static void check_text(const char *text, size_t size)
{
    int64_t want = 0;
    int syntax = fuzz_ref_duration(text, size, 1, &want);
    int in_range = syntax && want >= -limit && want <= limit;
    lua_pushlstring(L, text, size);
    double got = 0;
    char what[96];
    snprintf(what, sizeof what, "\"%.*s\"", size < 80 ? (int)size : 80, text);
    int ok = call_parse(&got, what);
    FUZZ_CHECK(ok == in_range, "parse(\"%.*s\") %s, the reference says %s", (int)size, text,
               ok ? "succeeded" : "failed",
               in_range ? "a duration" : syntax ? "beyond the limit" : "not a duration");
    FUZZ_CHECK(!ok || got == (double)want, "parse gave %.17g, the reference %lld", got,
               (long long)want);
}

static void check_number(double d)
{
    int valid = d == floor(d) && fabs(d) <= (double)limit; /* NaN, inf fail */
    lua_pushnumber(L, d);
    double got = 0;
    char what[40];
    snprintf(what, sizeof what, "%.17g", d);
    int ok = call_parse(&got, what);
    FUZZ_CHECK(ok == valid, "parse(%.17g) %s", d, ok ? "succeeded" : "failed");
    FUZZ_CHECK(!ok || got == d, "parse(%.17g) gave %.17g", d, got);
}

/* Once: the limit and its neighbours, which random inputs would hardly hit exactly. */
static void check_bounds(void)
{
    const int64_t around[] = { limit - 1, limit, limit + 1, FUZZ_TIME_MAX, FUZZ_TIME_MAX + 1 };
    for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) {
        for (int sign = 1; sign >= -1; sign -= 2) {
            char text[32];
            int n = snprintf(text, sizeof text, "%lld", (long long)(sign * around[i]));
            check_text(text, (size_t)n);
            n = snprintf(text, sizeof text, "%lldms", (long long)(sign * around[i]));
            check_text(text, (size_t)n);
            check_number((double)(sign * around[i]));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (L == NULL) {
        L = fuzz_lua_open("weir.duration", "parse", &parse_ref);
        limit = fuzz_lua_limit(L, "weir.duration", "MAX_DURATION");
        check_bounds();
    }
    check_text((const char *)data, size);
    if (size >= 8) {
        double d;
        memcpy(&d, data, sizeof d);
        check_number(d);
    }
    lua_settop(L, 0);
    return 0;
}
