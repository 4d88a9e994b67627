-- weir.failure: how a job fails. Owns the job error (job_error: main.lua prints it and exits
-- 1), the xpcall handler that reads the failing stack (which operator, subtask, record, key,
-- window, and what fired it), the job's worker coroutine (Job:protected), routing a failed
-- record or fire to the on_error side output (route, fire_guard), the text of a job failure
-- with the user's part of the traceback (failure_text), and the out-of-memory reserve.
-- Methods of the job (weir.run mixes them into Job); the source wording of a failure that
-- found no operator is weir.sources (Job:source_place, record_number, driver_record).
local ffi = require("ffi")
local C = require("weir.ffi")
local format = require("weir.format")
local windows = require("weir.windows")
local memory = require("weir.memory")
local windowing = require("weir.windowing")

local M = {}
local Job = {}
M.methods = Job

local EV_LINE, EV_RANGE = tonumber(C.WEIR_EV_LINE), tonumber(C.WEIR_EV_RANGE)
local EV_RECORDS = tonumber(C.WEIR_EV_RECORDS)
local INF = math.huge
local RECORD_CUT = 200
M.RECORD_CUT = RECORD_CUT

-- Errors ------------------------------------------------------------------------------------

---A failure that ends the job: main.lua prints "weir: " .. text and exits 1.
local function job_error(text)
  error({ weir_job_error = true, text = text }, 0)
end
M.job_error = job_error

---What a failed write to stdout or stderr (weir_out_write's code) means, for the message.
function M.out_error_text(fd, code)
  local name = fd == 2 and "standard error" or "standard output"
  local why = ffi.string(C.weir_strerror(code))
  if why == "broken pipe" then
    return name .. " closed (broken pipe)"
  elseif why == "bad file descriptor" then
    return name .. " is closed (bad file descriptor)"
  end
  return ("cannot write to %s: %s"):format(name, why)
end

local function record_text(v)
  return format.brief(v, RECORD_CUT)
end

---The text of an error value, whatever it is: error(nil), error({}), an error object whose
---__tostring fails. Never raises (it runs on the error path).
local function message_text(msg)
  local t = type(msg)
  if msg == "error in error handling" then
    -- LuaJIT's word when the handler itself could not run: after a stack overflow in compiled
    -- code it may have no stack left for it (weir's handler raises nothing else)
    return "stack overflow (LuaJIT had no stack left to run weir's error handler)"
  elseif t == "string" then
    return msg
  elseif t == "nil" then
    return "nil (error() was called without a message)"
  elseif t == "table" then
    local mt = getmetatable(msg)
    if type(mt) == "table" and mt.__tostring ~= nil then
      local ok, s = pcall(tostring, msg)
      if ok and type(s) == "string" then
        return s
      end
      return "an error object whose __tostring fails"
    end
    return "error object " .. record_text(msg)
  end
  return record_text(msg)
end

---The user-facing part of a traceback: frames in the user's files, not weir's or C's.
local function user_traceback(tb)
  if type(tb) ~= "string" then
    return ""
  end
  local out = {}
  local frames = tb:match("\nstack traceback:\n(.*)$") or ""
  for line in frames:gmatch("[^\n]+") do
    local t = line:match("^%s*(.-)%s*$")
    if not (t:find("^%[C%]") or t:find("^weir/") or t:find("^%[weir") or t:find("^weir op ")
        or t:find("^%(tail call%)") or t:find("^%.%.%.$")) then
      out[#out + 1] = "    " .. t
    end
  end
  if #out == 0 then
    return ""
  end
  return "  stack traceback:\n" .. table.concat(out, "\n")
end

-- The handler --------------------------------------------------------------------------------
-- The xpcall handler (error_handler) runs where the error happened, before the stack unwinds.
-- It finds the innermost frame weir recognises -- an operator's push function, a key
-- selector's sender, a source driver, or a window operator's watermark or timer entry
-- (job.firers) -- and reads the subtask, record and key from its arguments; then, above it,
-- the window operator's frames that say which (key, window) is firing (job.places) and the
-- trigger or evictor method that failed (job.user_places). None of it costs anything per
-- record. The handler survives anything: a stack overflow (it reads the failed coroutine's
-- stack from another one), an error value that cannot be printed, an error inside the analysis
-- (the failure then names less). When LuaJIT runs no handler at all (out of memory), Job:failed
-- gets a bare message and names what it can (Job:source_place).

local MAX_SCAN = 250 -- frames searched from the error (and from the bottom of a deep stack)

local getinfo, getlocal = debug.getinfo, debug.getlocal

-- The n-th local of the frame at `level` in thread th.
local function loc(th, level, n)
  local _, v = getlocal(th, level, n)
  return v
end

local function frame_kind(job, f)
  if job.pushes[f] then
    return "push"
  elseif job.senders[f] then
    return "sender"
  elseif job.drivers[f] then
    return "driver"
  elseif job.firers[f] then
    return "firer"
  end
end

-- The level in th of the innermost recognised frame, and its kind.
local function innermost_frame(job, th)
  for level = 0, MAX_SCAN do
    local d = getinfo(th, level, "f")
    if not d then
      return nil
    end
    local kind = frame_kind(job, d.func)
    if kind then
      return level, kind
    end
  end
  -- a deep stack (a stack overflow): the recognised frames are near its bottom
  local lo, hi = MAX_SCAN, MAX_SCAN * 2
  while getinfo(th, hi, "f") do
    lo, hi = hi, hi * 2
  end
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if getinfo(th, mid, "f") then
      lo = mid
    else
      hi = mid
    end
  end
  local found, kind, since = nil, nil, 0
  for level = lo, MAX_SCAN, -1 do
    local k = frame_kind(job, getinfo(th, level, "f").func)
    if k then
      found, kind, since = level, k, 0
    elseif found then
      since = since + 1
      if since > MAX_SCAN then
        break
      end
    end
  end
  return found, kind
end

-- The number of frames on th's stack (doubling, then a binary search: a deep stack is long).
local function depth(th)
  local lo, hi = 0, 16
  while getinfo(th, hi, "f") do
    lo, hi = hi, hi * 2
  end
  while hi - lo > 1 do
    local mid = math.floor((lo + hi) / 2)
    if getinfo(th, mid, "f") then
      lo = mid
    else
      hi = mid
    end
  end
  return hi
end

-- The generate and typed-record drivers keep the index of the record they deliver in their
-- loop's local i, not in job.progress[2] (a store per record): the handler reads it from the
-- driver's frame, near the bottom of the stack (under it only the dispatch and the worker).
local function driver_index(job, th)
  local bottom = depth(th) - 1
  for level = bottom, math.max(0, bottom - MAX_SCAN), -1 do
    local d = getinfo(th, level, "f")
    local node = d and job.drivers[d.func]
    if node then
      if d.func == node.range or d.func == node.records then
        for n = 1, 32 do
          local name, v = getlocal(th, level, n)
          if name == nil then
            break
          elseif name == "i" then
            job.progress[2] = v
            break
          end
        end
      end
      return
    end
  end
end

-- Fills info from the stack of thread th, the one that failed (see Failures above).
local function analyse(job, info, th)
  local ok, tb = pcall(debug.traceback, th, info.text, 0)
  if ok then
    info.traceback = tb
  end
  if job.progress[2] == -1 then
    driver_index(job, th)
  end
  local stop, kind = innermost_frame(job, th)
  if not stop then
    return
  end
  local f = getinfo(th, stop, "f").func
  if kind == "push" then
    local node = job.pushes[f]
    info.node, info.st = node, loc(th, stop, 1)
    info.record, info.has_record = loc(th, stop, 2), true
    local key = loc(th, stop, 4)
    if key ~= nil then
      info.key, info.has_key = key, true
    end
  elseif kind == "sender" then
    info.node, info.key_selector, info.has_record = job.senders[f], true, true
    info.key_site = job.key_sites[f]
    info.record = loc(th, stop, 2)
  elseif kind == "driver" then
    local node = job.drivers[f]
    info.node, info.st = node, 0
    local record, known = job:driver_record(node)
    if known == "record" then
      info.record, info.has_record = record, true
    elseif known == "routed" then
      -- a malformed line of a typed text source: the message already shows it
      info.record, info.routed_record = record, true
    end
    return
  else
    local fr = job.firers[f]
    local inst = loc(th, stop, 1)
    info.node, info.st = fr.node, inst.index
    if fr.processing then
      if loc(th, stop, 3) then
        info.fired_by = "the end of input (pending processing-time timers)"
      else
        info.fired_by = "processing-time timers due at " .. format.value(loc(th, stop, 2))
      end
    else
      local w = loc(th, stop, 2)
      info.fired_by = w == INF and "the end of input (the final watermark)"
        or ("the watermark " .. format.value(w))
    end
  end
  -- a window operator's frames above: which (key, window), and which trigger or evictor method
  local node = info.node
  local inst = node and info.st and node.instances and node.instances[info.st + 1]
  if inst and (node.kind == "keyed_process" or node.kind == "co_process") then
    -- a keyed operator's timer (weir.keyed): its frame is there, and its context holds the
    -- key, domain and time (set before on_timer runs: its arguments may be dead locals, stale
    -- after a trace exit)
    for level = stop - 1, math.max(0, stop - MAX_SCAN), -1 do
      local p = job.places[getinfo(th, level, "f").func]
      if p and p.node == node and p.timer then
        local ctx = inst.kctx
        info.key, info.has_key = ctx.key, true
        info.timer = ("%s timer at %s"):format(ctx.domain == "event_time" and "event-time"
          or "processing-time", format.value(ctx.ts))
        break
      end
    end
    return
  end
  if not (inst and node.kind == "window") then
    return
  end
  local place, plevel, user, ulevel
  for level = stop - 1, math.max(0, stop - MAX_SCAN), -1 do
    local fn = getinfo(th, level, "f").func
    local p = job.places[fn]
    if p and p.node == node then
      place, plevel = p, level
    end
    local u = job.user_places[fn]
    if u and u[node] then
      user, ulevel = u[node], level
    end
  end
  if user then
    info.what = user.what
  end
  local tctx = inst.tctx
  if user and user.tctx and tctx and tctx.window and (not place or ulevel < plevel) then
    -- trigger and evictor methods: the trigger context says their key and window
    info.key, info.window = tctx.key, tctx.window
  elseif place then
    local key
    if place.kid then
      local kid = loc(th, plevel, place.kid)
      key = windowing.key_of(node, inst, kid)
    else
      key = loc(th, plevel, place.key)
    end
    local w = place.win and loc(th, plevel, place.win)
    if not w then
      if place.range then
        local r = loc(th, plevel, place.range)
        w = windows.window(r.start, r.stop)
      elseif place.size then
        local a = loc(th, plevel, place.start)
        w = windows.window(a, a + place.size)
      else
        w = windows.window(loc(th, plevel, place.start), loc(th, plevel, place.stop))
      end
    end
    info.key, info.window = key, w
  end
  info.has_key = node.keyed and true or nil
end

---The xpcall handler: runs where the error happened (see Failures above). Returns the table
---info: msg, text, traceback, and where found: node, st, record (has_record), key (has_key),
---window, what, fired_by, key_selector. The analysis runs in a coroutine of its own, on the
---stack of the job's worker (Job:protected): after a stack overflow the failing stack has
---about 40 slots left (LuaJIT grows it by 2 * LUA_MINSTACK for the handler), too few for it.
function Job:error_handler()
  local job = self
  return function(msg)
    if type(msg) == "table" and (msg.weir_job_error or msg.weir_info) then
      local th = coroutine.running()
      if th and job.progress[2] == -1 then -- a job failure (an interrupt) in a driver's batch
        coroutine.resume(coroutine.create(driver_index), job, th)
      end
      return msg -- already a job failure, or a failure a guard passes on
    end
    local info = { weir_info = true, msg = msg, text = msg, traceback = "" }
    if type(msg) ~= "string" then
      local ok, text = pcall(message_text, msg)
      info.text = ok and text or "an error value that cannot be shown"
    end
    local th = coroutine.running()
    if th then
      local ok = coroutine.resume(coroutine.create(analyse), job, info, th)
      if not ok then
        -- a half-found place would mislead
        info.node, info.st, info.key, info.has_key, info.window = nil, nil, nil, nil, nil
        info.fired_by, info.what, info.record, info.has_record = nil, nil, nil, nil
        info.key_selector, info.routed_record, info.timer = nil, nil, nil
      end
    else
      local ok, tb = pcall(debug.traceback, info.text, 2)
      info.traceback = ok and tb or ""
    end
    return info
  end
end

-- The job's worker: a coroutine that runs f(...) under xpcall with the job's handler, again
-- and again, so that a failure's stack can be read from another coroutine.
local function serve(handler, f, ...)
  return serve(handler, coroutine.yield(xpcall(f, handler, ...)))
end

local function resumed(ok, ...)
  if ok then
    return ...
  end
  return false, (...) -- the worker itself failed: cannot happen past its xpcall, but say so
end

-- A failure's way out of the worker: the job's failure hooks run first (Job:on_failure).
local function unwound(job, ok, ...)
  if not ok then
    local hooks = job.failure_hooks
    for i = 1, #hooks do
      hooks[i]()
    end
  end
  return ok, ...
end

---Registers f(), run when a failure has left the job's worker (Job:protected), before anything
---reads the job's state: an operator's tidying of state that the failure left half-changed
---(weir.aggwindow: a chunk of fires C took from its tables). An xpcall of the operator's own
---around its work would do the same, but a trace that returns through it aborts ("NYI: return
---to lower frame"), at every watermark.
function Job:on_failure(f)
  local hooks = self.failure_hooks
  hooks[#hooks + 1] = f
end

---xpcall(f, handler, ...) in the job's worker coroutine: returns what xpcall returns, after the
---failure hooks when it failed.
function Job:protected(f, ...)
  self.handler = self.handler or self:error_handler()
  local co = self.worker
  if not co or coroutine.status(co) ~= "suspended" then
    local handler = self.handler
    -- the frames outside the worker (the script's env:execute() call), for failure_text
    self.outer_frames = debug.traceback("", 2):match("\nstack traceback:\n(.*)$")
    co = coroutine.create(function(g, ...)
      return serve(handler, g, ...)
    end)
    self.worker = co
  end
  return unwound(self, resumed(coroutine.resume(co, f, ...)))
end

---Whether failure info can go to the on_error side output: a user function's failure on a
---record or in a window's fire, at a known operator and subtask.
function Job:routable(info)
  return self.plan.env.on_error and not info.fatal and info.node and info.st
    and not info.key_selector and info.node.side
    and (info.has_record or info.routed_record or info.window or info.timer) and true
end

---Sends failure info to the on_error side output of its operator (or, when no one reads it,
---to stderr). A fire's record: { value = the record when one drove the fire, error,
---operator, key, window } (API.md, Errors).
function Job:route(info)
  local on_error = self.plan.env.on_error
  local node, st = info.node, info.st
  local rec = { value = info.record, error = info.text, operator = node.label }
  if info.window then
    rec.key, rec.window = info.key, info.window
  elseif info.timer then
    rec.key, rec.timer = info.key, info.timer
  end
  local side = node.side[on_error.id]
  if side then
    side(st, rec, nil)
  else
    if info.has_record or info.routed_record then
      self.unread_errors = self.unread_errors + 1
    else
      self.unread_fires = self.unread_fires + 1
    end
    C.weir_out_flush()
    -- a routed record (a line a source could not parse) is in the message already
    local what = info.has_record and ("record " .. record_text(info.record) .. "; ") or
      info.routed_record and "" or
      ("key " .. record_text(info.key) .. ", " .. (info.timer or ("window "
        .. tostring(info.window))) .. "; ")
    io.stderr:write(("weir: %s: %s (%sno one reads side output '%s')\n"):format(
      node.label, info.text, what, on_error.id))
  end
end

---For a window operator: guard(f, ...) calls f(...) and returns true and its results; when f
---fails in a way on_error routes, it routes the failure and returns false; other failures go
---on up (the job fails). nil without on_error: then fires are not protected, and cost nothing
---more.
function Job:fire_guard()
  if not self.plan.env.on_error then
    return nil
  end
  self.handler = self.handler or self:error_handler()
  local handler = self.handler
  local function finish(ok, ...)
    if ok then
      return true, ...
    end
    local info = ...
    if type(info) ~= "table" or info.weir_job_error or not self:routable(info) then
      if type(info) == "table" and info.weir_info then
        info.fatal = true
      end
      error(info, 0)
    end
    self:route(info)
    return false
  end
  return function(f, ...)
    return finish(xpcall(f, handler, ...))
  end
end

---The text of a failure that ends the job: where (operator, subtask; key, window and what fired
---it; the record), what, and the user's part of the traceback.
function Job:failure_text(info)
  local node, st = info.node, info.st
  local where = node and node.label
  if info.key_selector then
    where = ("key_by (%skey selector feeding %s)"):format(
      info.key_site and (info.key_site .. ", ") or "", where)
  elseif node and st then
    where = ("%s, subtask %d/%d"):format(where, st + 1, node.parallelism)
  end
  if where and info.what then
    where = where .. ", " .. info.what
  end
  local text = info.text
  if where then
    text = ("%s: %s"):format(where, text)
  else
    -- no handler ran (out of memory): a window whose watermark fires were cut short says where
    for _, n in ipairs(self.timer_nodes) do
      for _, inst in ipairs(n.instances) do
        if inst.firing and not where then
          where = ("%s, subtask %d/%d, firing its windows"):format(n.label, inst.index + 1,
            n.parallelism)
        end
      end
    end
    if not where then
      local place, has, rec = self:source_place()
      where = place
      if has and not info.has_record then
        info.has_record, info.record = true, rec
      end
    end
    text = ("%s (%s)"):format(text, where)
  end
  if info.has_key then
    text = text .. "\n  key: " .. record_text(info.key)
  end
  if info.window then
    text = text .. "\n  window: " .. tostring(info.window)
  end
  if info.timer then
    text = text .. "\n  timer: " .. info.timer
  end
  if info.fired_by then
    text = text .. "\n  fired by: " .. info.fired_by
  end
  if info.has_record then
    local r = info.record
    local empty = type(r) == "table" and next(r) == nil and not getmetatable(r)
    text = text .. "\n  record: "
      .. (empty and "{} (an empty table: what {a, b} is when a and b are nil)" or record_text(r))
    local e = self.events[self.progress[1]]
    if e.kind == EV_RECORDS and not info.fired_by then
      -- which one: a typed text source counts lines, a generator records from 0
      text = text .. " " .. self:record_number(e)
    end
  end
  local full = info.traceback
  if type(full) == "string" and self.outer_frames and full:find("\nstack traceback:\n") then
    full = full .. "\n" .. self.outer_frames
  end
  local tb = user_traceback(full)
  if os.getenv("WEIR_DEBUG") and type(full) == "string" then
    tb = full
  end
  if tb ~= "" then
    text = text .. "\n" .. tb
  end
  return text
end

---Turns a failure caught by the batch xpcall into a routed error record (returning where to
---resume) or a job failure. info is the handler's table, or a bare message when LuaJIT called
---no handler (out of memory) or the handler itself failed.
local function out_of_memory(info)
  return info == "not enough memory" or type(info) == "table" and info.msg == "not enough memory"
end

---Failure info as the handler makes it, from whatever the batch's xpcall returned.
local function as_info(info)
  if type(info) ~= "table" or not (info.weir_info or info.weir_job_error) then
    return { weir_info = true, msg = info, text = message_text(info), traceback = "" }
  end
  return info
end

---Out of memory: what is still held may fill the heap, so give back the reserve first.
function Job:release_reserve(info)
  if out_of_memory(info) and self.reserve then
    self.reserve = nil
    collectgarbage()
  end
end

function Job:failed(info, fatal)
  self:release_reserve(info)
  info = as_info(info)
  local progress = self.progress
  local e = self.events[progress[1]]
  if not fatal and (e.kind == EV_RANGE or e.kind == EV_RECORDS) and progress[2] >= 0 then
    self:uncount(self.by_source[e.source], e, progress[2], info) -- (weir.exchange)
  end
  if info.weir_job_error then
    error(info, 0)
  end
  if type(info.msg) == "table" and info.msg.weir_job_error then
    error(info.msg, 0)
  end
  local kind = e.kind
  -- (a record of a generator or typed source whose index the handler could not read cannot be
  -- skipped: resuming would deliver its batch again)
  if not fatal and self:routable(info) and not info.fired_by
      and (kind == EV_LINE or ((kind == EV_RANGE or kind == EV_RECORDS) and progress[2] >= 0)) then
    -- what reads the side output may fail too: that fails the job, named as any failure
    local ok, why = self:protected(self.route, self, info)
    if not ok then
      return self:failed(why, true)
    end
    if kind == EV_LINE then
      return progress[1] + 1, nil
    end
    if kind == EV_RECORDS then
      if progress[2] < e.len - 1 then
        return progress[1], progress[2] + 1
      end
      return progress[1] + 1, nil
    end
    if progress[2] < e.index + e.len - 1 then
      return progress[1], progress[2] + 1
    end
    return progress[1] + 1, nil
  end
  job_error(self:failure_text(info))
end

---The window operator holding the most C state (then the most windows and elements), from
---Job:metrics(): {label, open_windows, elements, store_bytes}; nil without window operators.
local function most_state(m)
  local best
  for label, t in pairs(m) do
    local size = t.open_windows + t.elements
    if not best or t.store_bytes > best.store_bytes or (t.store_bytes == best.store_bytes
        and (size > best.size or (size == best.size and label < best.label))) then
      best = { label = label, open_windows = t.open_windows, elements = t.elements,
               store_bytes = t.store_bytes, size = size }
    end
  end
  return best
end

---The memory account rang (runtime/mem.c): after a collection, either weir goes on or the job
---fails with the figures and the operator holding the most state (weir.run's execute still
---runs the user's close()).
function Job:check_memory(info)
  local why, figures = memory.check()
  if not why then
    return
  end
  local m = self:metrics(figures)
  self.plan.env.final_metrics = m
  local text = memory.failure_text(why, figures, most_state(m))
  if info ~= nil and not (type(info) == "table" and info.weir_job_error) then
    -- where the allocation failed: the operator or record, as for any failure
    local i = as_info(info)
    if out_of_memory(info) then
      i.text = "the allocation was refused"
    end
    local ok, where = pcall(self.failure_text, self, i)
    if ok then
      text = text .. "\n  " .. where:gsub("\n", "\n  ")
    end
  end
  error({ weir_job_error = true, memory = true, text = text }, 0)
end

-- set-up code, never traced (weir.codegen, "Set-up code"): each runs once per job or window
-- operator, and makes a closure (FNEW, which LuaJIT cannot compile: "NYI: bytecode 51", and
-- UCLO, "NYI: bytecode 50"); the handlers they make run on failures only, and stay compilable
jit.off(Job.error_handler)
jit.off(Job.fire_guard)

return M
