/* SPDX-License-Identifier: MIT */
/* fuzz_replay.c: weir.replay.parse (lua/weir/replay.lua, LPeg) inside a LuaJIT state, against a
 * reference reading of API.md's replay format written here: lines cut at "\n" with one "\r"
 * stripped, blank and "#" lines skipped, "@<digits>" or "+<duration>" then a space or the end
 * timing, "\" escaping a record. The clock's limit is weir.duration's MAX_TIME when it has one,
 * else 2^53 - 1 (fuzz_lua.h). When every time stays within it and never goes back, parse must
 * return exactly the reference's entries (time, offset, length, line) and start; otherwise it
 * must fail with a string naming "fuzz:<line>", the first bad line. A successful result must
 * also hold by itself: whole times within +-(2^53 - 1) that never go back, increasing line
 * numbers, records inside the text without a newline. */
#include <lauxlib.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "fuzz_lua.h"
#include "fuzz_support.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct entry {
    int64_t time;
    int64_t offset;
    int64_t len; /* -1: a time-only line */
    int64_t line;
} entry_t;

enum { MAX_ENTRIES = 1 << 16 };

/* the start of the text an oracle message shows */
#define SHOWN(size) ((size) < 200 ? (int)(size) : 200)

/* Returns 1 with the entries and start, or 0 with *bad_line the line that must fail. */
static int reference(const char *t, size_t n, int64_t limit, entry_t *e, size_t *n_e,
                     int64_t *start, int64_t *bad_line)
{
    int64_t now = 0, line_no = 0;
    int started = 0;
    size_t pos = 0, k = 0;
    *start = 0;
    while (pos < n) {
        const char *nl = memchr(t + pos, '\n', n - pos);
        size_t stop = nl ? (size_t)(nl - t) : n; /* one past the line */
        size_t end = stop;
        line_no++;
        if (end > pos && t[end - 1] == '\r') {
            end--;
        }
        const char *line = t + pos;
        size_t len = end - pos;
        if (len > 0 && line[0] != '#') {
            /* the timing token runs to the first space or the end of the line */
            const char *sp = memchr(line, ' ', len);
            size_t tok = sp ? (size_t)(sp - line) : len;
            int64_t at = 0;
            int timing = 0, range = 0;
            if (tok >= 2 && line[0] == '@') {
                size_t i = 1;
                while (i < tok && line[i] >= '0' && line[i] <= '9') {
                    i++;
                }
                if (i == tok) {
                    timing = 1;
                    at = fuzz_ref_digits(line + 1, tok - 1);
                    range = at > limit;
                }
            } else if (tok >= 2 && line[0] == '+') {
                int64_t d = 0;
                if (fuzz_ref_duration(line + 1, tok - 1, 0, &d)) {
                    timing = 1; /* only the clock is bounded: the sum, not each step */
                    range = d > limit - now;
                    at = range ? 0 : now + d;
                }
            }
            if (timing) {
                if (range || at < now) {
                    *bad_line = line_no;
                    return 0;
                }
                if (!started) {
                    *start = line[0] == '@' ? at : 0;
                    started = 1;
                }
                now = at;
                size_t rest = tok + 1; /* after the one space */
                if (rest < len) {
                    e[k++] = (entry_t){ now, (int64_t)(pos + rest), (int64_t)(len - rest),
                                        line_no };
                } else {
                    e[k++] = (entry_t){ now, 0, -1, line_no };
                }
            } else {
                started = 1; /* a record first: the clock starts at 0 */
                size_t skip = line[0] == '\\';
                if (len > skip) {
                    e[k++] = (entry_t){ now, (int64_t)(pos + skip), (int64_t)(len - skip),
                                        line_no };
                }
            }
        }
        pos = stop + 1;
    }
    *n_e = k;
    return 1;
}

static lua_State *L;
static int parse_ref;
static int64_t limit;

static int64_t field(int entry, int i, const char *what)
{
    lua_rawgeti(L, entry, i);
    FUZZ_CHECK(lua_type(L, -1) == LUA_TNUMBER, "entry field %s is a %s", what,
               luaL_typename(L, -1));
    double v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    FUZZ_CHECK(v == floor(v) && fabs(v) <= (double)FUZZ_TIME_MAX,
               "entry field %s = %.17g: not a whole number within +-(2^53 - 1)", what, v);
    return (int64_t)v;
}

static void check(const char *text, size_t size)
{
    static entry_t want[MAX_ENTRIES];
    size_t n_want = 0;
    int64_t want_start = 0, bad_line = 0;
    int ok_want = reference(text, size, limit, want, &n_want, &want_start, &bad_line);

    lua_rawgeti(L, LUA_REGISTRYINDEX, parse_ref);
    lua_pushlstring(L, text, size);
    lua_pushstring(L, "fuzz");
    if (lua_pcall(L, 2, 2, 0) != 0) {
        FUZZ_CHECK(lua_type(L, -1) == LUA_TSTRING, "parse failed with a %s, not a message",
                   luaL_typename(L, -1));
        const char *msg = lua_tostring(L, -1);
        FUZZ_CHECK(!ok_want, "parse of \"%.*s\" failed (%s), the reference reads %zu entries",
                   SHOWN(size), text, msg, n_want);
        char place[32];
        snprintf(place, sizeof place, "fuzz:%lld:", (long long)bad_line);
        FUZZ_CHECK(strstr(msg, place) != NULL, "the error does not name %s: %s", place, msg);
        lua_settop(L, 0);
        return;
    }
    FUZZ_CHECK(lua_type(L, -2) == LUA_TTABLE && lua_type(L, -1) == LUA_TNUMBER,
               "parse returned a %s and a %s", luaL_typename(L, -2), luaL_typename(L, -1));
    FUZZ_CHECK(ok_want, "parse of \"%.*s\" succeeded, but line %lld is out of range or goes back",
               SHOWN(size), text, (long long)bad_line);
    double start = lua_tonumber(L, -1);
    FUZZ_CHECK(start == (double)want_start, "start %.17g, the reference %lld", start,
               (long long)want_start);
    int entries = lua_gettop(L) - 1;
    size_t n = lua_objlen(L, entries);
    FUZZ_CHECK(n == n_want, "%zu entries, the reference %zu", n, n_want);
    int64_t prev_time = INT64_MIN, prev_line = 0;
    for (size_t i = 1; i <= n; i++) {
        lua_rawgeti(L, entries, (int)i);
        FUZZ_CHECK(lua_type(L, -1) == LUA_TTABLE, "entry %zu is a %s", i, luaL_typename(L, -1));
        int e = lua_gettop(L);
        entry_t got = { field(e, 1, "time"), field(e, 2, "offset"), field(e, 3, "len"),
                        field(e, 4, "line") };
        lua_pop(L, 1);
        /* the result's own invariants, whatever the reference says */
        FUZZ_CHECK(got.time >= prev_time && got.time >= (int64_t)start,
                   "entry %zu: time %lld goes back", i, (long long)got.time);
        FUZZ_CHECK(got.line > prev_line, "entry %zu: line %lld after %lld", i,
                   (long long)got.line, (long long)prev_line);
        FUZZ_CHECK(got.len == -1 || (got.len > 0 && got.offset >= 0 &&
                                     (size_t)(got.offset + got.len) <= size &&
                                     memchr(text + got.offset, '\n', (size_t)got.len) == NULL),
                   "entry %zu: record [%lld, +%lld) is not a piece of one line", i,
                   (long long)got.offset, (long long)got.len);
        prev_time = got.time;
        prev_line = got.line;
        const entry_t *w = &want[i - 1];
        FUZZ_CHECK(got.time == w->time && got.offset == w->offset && got.len == w->len &&
                       got.line == w->line,
                   "entry %zu: {%lld, %lld, %lld, line %lld}, the reference {%lld, %lld, %lld, "
                   "line %lld}",
                   i, (long long)got.time, (long long)got.offset, (long long)got.len,
                   (long long)got.line, (long long)w->time, (long long)w->offset,
                   (long long)w->len, (long long)w->line);
    }
    lua_settop(L, 0);
}

/* Once: the clock's limit and its neighbours, reached by "@" and by "+". */
static void check_bounds(void)
{
    const int64_t around[] = { limit - 1, limit, limit + 1, FUZZ_TIME_MAX, FUZZ_TIME_MAX + 1 };
    for (size_t i = 0; i < sizeof around / sizeof around[0]; i++) {
        char text[96];
        int n = snprintf(text, sizeof text, "@%lld a\n+0 b", (long long)around[i]);
        check(text, (size_t)n);
        n = snprintf(text, sizeof text, "@1\n+%lldms a", (long long)(around[i] - 1));
        check(text, (size_t)n);
        n = snprintf(text, sizeof text, "+%lld a\n+1 b", (long long)(around[i] - 1));
        check(text, (size_t)n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (L == NULL) {
        L = fuzz_lua_open("weir.replay", "parse", &parse_ref);
        limit = fuzz_lua_limit(L, "weir.duration", "MAX_TIME");
        check_bounds();
    }
    if (size < MAX_ENTRIES) {
        check((const char *)data, size);
    }
    return 0;
}
