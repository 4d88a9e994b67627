/* SPDX-License-Identifier: MIT */
/* fuzz_lua.c: the Lua state and the duration reference of fuzz_lua.h. The reference is written
 * from API.md's grammar, not from duration.lua: digits then a unit, "ms" before "m", repeated;
 * or digits alone. Sums saturate just above the hard bound, so no input can overflow them. */
#include "fuzz_lua.h"

#include <lauxlib.h>
#include <lualib.h>
#include <string.h>

#include "bridge.h"
#include "fuzz_support.h"

static int load_embedded(lua_State *L)
{
    const wr_lua_module_t *m = lua_touserdata(L, lua_upvalueindex(1));
    if (luaL_loadbuffer(L, (const char *)m->text, m->len, m->chunk) != 0) {
        return lua_error(L);
    }
    lua_pushstring(L, m->name);
    lua_call(L, 1, 1);
    return 1;
}

lua_State *fuzz_lua_open(const char *module, const char *field, int *ref)
{
    lua_State *L = luaL_newstate();
    FUZZ_CHECK(L != NULL, "no Lua state");
    luaL_openlibs(L);
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    for (const wr_lua_module_t *m = wr_lua_modules; m->name; m++) {
        lua_pushlightuserdata(L, (void *)m);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 2);
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        fuzz_fail("require %s: %s", module, lua_tostring(L, -1));
    }
    lua_getfield(L, -1, field);
    FUZZ_CHECK(lua_isfunction(L, -1), "%s.%s is not a function", module, field);
    *ref = luaL_ref(L, LUA_REGISTRYINDEX);
    lua_pop(L, 1);
    return L;
}

int64_t fuzz_lua_limit(lua_State *L, const char *module, const char *name)
{
    lua_getglobal(L, "require");
    lua_pushstring(L, module);
    if (lua_pcall(L, 1, 1, 0) != 0) {
        fuzz_fail("require %s: %s", module, lua_tostring(L, -1));
    }
    lua_getfield(L, -1, name);
    int64_t limit = FUZZ_TIME_MAX;
    if (lua_type(L, -1) == LUA_TNUMBER && lua_tonumber(L, -1) >= 0 &&
        lua_tonumber(L, -1) < (double)FUZZ_TIME_MAX) {
        limit = (int64_t)lua_tonumber(L, -1);
    }
    lua_pop(L, 2);
    return limit;
}

static const int64_t CAP = FUZZ_TIME_MAX + 1; /* saturation: "beyond the range" */

static int64_t sat_add(int64_t a, int64_t b)
{
    return a >= CAP - b ? CAP : a + b;
}

static int64_t sat_mul(int64_t a, int64_t b)
{
    return b != 0 && a > CAP / b ? CAP : a * b; /* a <= CAP / b: a * b <= CAP */
}

int64_t fuzz_ref_digits(const char *p, size_t n)
{
    int64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        x = sat_add(sat_mul(x, 10), p[i] - '0');
    }
    return x;
}

static size_t digit_run(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n && p[i] >= '0' && p[i] <= '9') {
        i++;
    }
    return i;
}

int fuzz_ref_duration(const char *p, size_t n, int allow_sign, int64_t *ms)
{
    int neg = 0;
    if (allow_sign && n > 0 && p[0] == '-') {
        neg = 1;
        p++;
        n--;
    }
    size_t d = digit_run(p, n);
    if (d == 0) {
        return 0;
    }
    int64_t total = 0;
    if (d == n) {
        total = fuzz_ref_digits(p, n);
    } else {
        size_t i = 0;
        while (i < n) {
            d = digit_run(p + i, n - i);
            if (d == 0) {
                return 0;
            }
            int64_t v = fuzz_ref_digits(p + i, d);
            i += d;
            int64_t unit;
            if (i + 1 < n && p[i] == 'm' && p[i + 1] == 's') {
                unit = 1;
                i += 2;
            } else if (i < n && (p[i] == 's' || p[i] == 'm' || p[i] == 'h' || p[i] == 'd')) {
                unit = p[i] == 's' ? 1000 : p[i] == 'm' ? 60000 : p[i] == 'h' ? 3600000 : 86400000;
                i++;
            } else {
                return 0;
            }
            total = sat_add(total, sat_mul(v, unit));
        }
    }
    *ms = neg ? -total : total;
    return 1;
}
