/* SPDX-License-Identifier: MIT */
/* bridge.c: the one door to Lua. It creates the lua_State, makes the embedded weir modules
 * requirable (package.preload), and hands the job to weir.main under a traceback handler.
 * Everything else Lua needs from C goes through the FFI (weir_ffi.h), never through the Lua C
 * API, so this stays the only file that includes lua.h. */
#include "bridge.h"

#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <string.h>

#include "mem.h"
#include "weir.h"

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

static void preload_modules(lua_State *L)
{
    lua_getglobal(L, "package");
    lua_getfield(L, -1, "preload");
    for (const wr_lua_module_t *m = wr_lua_modules; m->name; m++) {
        lua_pushlightuserdata(L, (void *)m);
        lua_pushcclosure(L, load_embedded, 1);
        lua_setfield(L, -2, m->name);
    }
    lua_pop(L, 2);
}

static int traceback(lua_State *L)
{
    const char *msg = lua_tostring(L, 1);
    luaL_traceback(L, L, msg ? msg : "(error object is not a string)", 1);
    return 1;
}

enum { WR_GC_PAUSE = 150 }; /* percent; LuaJIT's default 200 */

static void push_job(lua_State *L, const wr_bridge_job_t *job)
{
    lua_createtable(L, 0, 8);
    lua_pushstring(L, job->mode);
    lua_setfield(L, -2, "mode");
    if (job->script) {
        lua_pushstring(L, job->script);
        lua_setfield(L, -2, "script");
    }
    if (job->script_dir) {
        lua_pushstring(L, job->script_dir);
        lua_setfield(L, -2, "script_dir");
    }
    if (job->cwd) {
        lua_pushstring(L, job->cwd);
        lua_setfield(L, -2, "cwd");
    }
    lua_pushinteger(L, job->parallelism);
    lua_setfield(L, -2, "parallelism");
    if (job->replay) {
        lua_pushstring(L, job->replay);
        lua_setfield(L, -2, "replay");
    }
    lua_pushboolean(L, job->check_triggers);
    lua_setfield(L, -2, "check_triggers");
    lua_pushboolean(L, job->jit_verbose);
    lua_setfield(L, -2, "jit_verbose");
    lua_pushboolean(L, job->progress);
    lua_setfield(L, -2, "progress");
    lua_pushboolean(L, job->stderr_tty);
    lua_setfield(L, -2, "stderr_tty");
    lua_pushboolean(L, job->interactive);
    lua_setfield(L, -2, "interactive");
    lua_pushboolean(L, job->manual);
    lua_setfield(L, -2, "manual");
    if (job->stall_warning) {
        lua_pushstring(L, job->stall_warning);
        lua_setfield(L, -2, "stall_warning");
    }
    if (job->max_memory) {
        lua_pushstring(L, job->max_memory);
        lua_setfield(L, -2, "max_memory");
    }
    lua_createtable(L, job->nparams, 0);
    for (int i = 0; i < job->nparams; i++) {
        lua_pushstring(L, job->params[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "params");
    if (job->output) {
        lua_pushstring(L, job->output);
        lua_setfield(L, -2, "output");
    }
    if (job->data) {
        lua_pushstring(L, job->data);
        lua_setfield(L, -2, "data");
    }
    const char *texts[][2] = {{"checkpoint_dir", job->checkpoint_dir},
                              {"checkpoint_interval", job->checkpoint_interval},
                              {"restore", job->restore},
                              {"group", job->group},
                              {"instance_id", job->instance_id}};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (texts[i][1]) {
            lua_pushstring(L, texts[i][1]);
            lua_setfield(L, -2, texts[i][0]);
        }
    }
    lua_pushboolean(L, job->fresh);
    lua_setfield(L, -2, "fresh");
    lua_pushboolean(L, job->allow_non_restored_state);
    lua_setfield(L, -2, "allow_non_restored_state");
    lua_pushboolean(L, job->input_log);
    lua_setfield(L, -2, "input_log");
    lua_pushboolean(L, job->verify_checkpoints);
    lua_setfield(L, -2, "verify_checkpoints");
    lua_createtable(L, job->argc, 0);
    for (int i = 0; i < job->argc; i++) {
        lua_pushstring(L, job->argv[i]);
        lua_rawseti(L, -2, i + 1);
    }
    lua_setfield(L, -2, "args");
}

/* LuaJIT's own allocator (luaL_newstate's, fast and the one its JIT is tuned for) behind the
 * memory account's: lua_newstate with a plain malloc would change what every table costs. */
static wr_lua_alloc_t lua_alloc;

static void count_lua_heap(lua_State *L)
{
    lua_alloc.next = lua_getallocf(L, &lua_alloc.next_ud);
    size_t held = (size_t)lua_gc(L, LUA_GCCOUNT, 0) * 1024 + (size_t)lua_gc(L, LUA_GCCOUNTB, 0);
    wr_mem_set_lua_bytes(held);
    lua_setallocf(L, wr_mem_lua_alloc, &lua_alloc);
}

/* lua_close frees LuaJIT's arena only when the state's allocator is LuaJIT's own again. */
static void close_state(lua_State *L)
{
    lua_setallocf(L, lua_alloc.next, lua_alloc.next_ud);
    lua_close(L);
    wr_mem_set_lua_bytes(0);
}

int wr_bridge_run(const wr_bridge_job_t *job)
{
    weir_mem_set_limit(0); /* takes the reserve that a failing malloc releases */
    lua_State *L = luaL_newstate();
    if (!L) {
        fputs("weir: cannot create the Lua state (out of memory)\n", stderr);
        return 1;
    }
    count_lua_heap(L);
    /* The collector's pause for stream jobs (docs/API.md, Garbage collector): a cycle starts when
     * the heap is 1.5x what the last one left (LuaJIT's default 2x). A job that makes a Lua
     * string and a table per record (read_text_file -> map) then keeps fewer dead strings in
     * LuaJIT's string table between cycles, which made text_lua 15% faster; the window jobs'
     * larger live heaps are marked more often, which cost them nothing measurable at 1.5x (at
     * 1x: 6-9%). A job's own collectgarbage("setpause", n) overrides it. */
    lua_gc(L, LUA_GCSETPAUSE, WR_GC_PAUSE);
    luaL_openlibs(L);
    preload_modules(L);

    lua_pushcfunction(L, traceback);
    int handler = lua_gettop(L);
    lua_getglobal(L, "require");
    lua_pushstring(L, "weir.main");
    int status = 1;
    if (lua_pcall(L, 1, 1, handler) == 0) {
        lua_getfield(L, -1, "run");
        push_job(L, job);
        if (lua_pcall(L, 1, 1, handler) == 0) {
            status = lua_isnumber(L, -1) ? (int)lua_tointeger(L, -1) : 1;
        } else {
            fflush(stdout);
            fprintf(stderr, "weir: internal error: %s\n", lua_tostring(L, -1));
        }
    } else {
        fprintf(stderr, "weir: internal error: %s\n", lua_tostring(L, -1));
    }
    fflush(stdout);
    close_state(L);
    return status;
}
