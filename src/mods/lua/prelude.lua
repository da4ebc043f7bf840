-- The trusted prelude of one Lua mod's sandbox (see src/mods/lua/mod.rs).
--
-- It runs once per mod state, with the real globals, before the mod does. It returns the mod's
-- environment, built from an allow-list, and the runner that every call into the mod goes
-- through. The real globals and the real library tables stay out of the mod's reach: the mod
-- sees copies, some functions wrapped so that they are deterministic and charged to the
-- instruction budget. `R` holds the Rust half (see sandbox.rs and api.rs).
local R = ...

local native_pcall, native_xpcall, native_error = pcall, xpcall, error
local native_tostring, native_tonumber, native_type, native_select = tostring, tonumber, type, select
local native_setmetatable, native_getmetatable, native_rawget = setmetatable, getmetatable, rawget
local native_pairs, native_ipairs = pairs, ipairs
local native_string, native_table, native_math, native_utf8 = string, table, math, utf8
local pack, unpack, concat = native_table.pack, native_table.unpack, native_table.concat
local str_byte, str_sub = native_string.byte, native_string.sub
local math_tointeger = native_math.tointeger

local charge, charge_span, recheck = R.charge, R.charge_span, R.recheck
local sorted_keys, special_tostring, emit = R.sorted_keys, R.special_tostring, R.emit
local pm_find, pm_next, pm_gsub = R.pm_find, R.pm_next, R.pm_gsub

-- No function can be dumped to bytecode, not even through ("").dump.
native_string.dump = nil

local function typename(v)
  return native_type(v)
end

-- Lua's own string-to-integer coercion (as luaL_checkinteger does it); nil when there is none.
local function to_int(v)
  if native_type(v) == "string" then
    v = native_tonumber(v)
  end
  if native_type(v) == "number" then
    return math_tointeger(v)
  end
  return nil
end

-- Calls a native function (always in tail position); its error is raised again at the mod's
-- call, so that messages name the mod's line and not the prelude's.
local function native_call(f, ...)
  local r = pack(native_pcall(f, ...))
  if r[1] then
    return unpack(r, 2, r.n)
  end
  recheck()
  local e = r[2]
  if native_type(e) == "string" and e ~= "not enough memory" then
    native_error(e, 2)
  end
  native_error(e, 0)
end

-- Rust functions answer `true, results...` or `false, message`; the message is raised at the
-- mod's call.
local function lift(raw)
  return function(...)
    local r = pack(raw(...))
    if r[1] then
      return unpack(r, 2, r.n)
    end
    native_error(r[2], 2)
  end
end

-- tostring: tables, functions, threads and userdata print as their type name, never an address.
local function tostring_(...)
  if native_select("#", ...) == 0 then
    native_error("bad argument #1 to 'tostring' (value expected)", 2)
  end
  local v = ...
  local s = special_tostring(v)
  if native_type(s) == "string" then
    return s
  end
  if s == nil then
    return native_tostring(v)
  end
  local r = s(v) -- the table's __tostring
  local t = native_type(r)
  if t == "string" then
    return r
  elseif t == "number" then
    return native_tostring(r)
  end
  native_error("'__tostring' must return a string", 2)
end

-- print(...) and log(...): the arguments, converted like tostring, joined by tabs.
local function log_(...)
  local args = pack(...)
  local parts = {}
  for i = 1, args.n do
    parts[i] = tostring_(args[i])
  end
  emit(concat(parts, "\t", 1, args.n))
end

-- pairs: keys in a fixed order (numbers ascending, then strings bytewise, then false, true).
local function pairs_(t)
  if native_type(t) ~= "table" then
    native_error("bad argument #1 to 'pairs' (table expected, got " .. typename(t) .. ")", 2)
  end
  local keys, problem = sorted_keys(t)
  if keys == nil then
    native_error(problem, 2)
  end
  local i = 0
  return function()
    while true do
      i = i + 1
      local k = keys[i]
      if k == nil then
        return nil
      end
      local v = native_rawget(t, k)
      if v ~= nil then
        return k, v
      end
    end
  end, t, nil
end

local function setmetatable_(t, mt)
  if native_type(mt) == "table" and (native_rawget(mt, "__gc") ~= nil or native_rawget(mt, "__mode") ~= nil) then
    native_error("setmetatable: __gc and __mode are not available to mods "
      .. "(finalizers and weak tables run when the collector decides)", 2)
  end
  return native_call(native_setmetatable, t, mt)
end

-- pcall/xpcall cannot swallow a spent instruction budget: it is raised again on the way out.
local function pcall_(...)
  if native_select("#", ...) == 0 then
    native_error("bad argument #1 to 'pcall' (value expected)", 2)
  end
  return recheck(native_pcall(...))
end

local function xpcall_(...)
  if native_select("#", ...) < 2 then
    native_error("bad argument #2 to 'xpcall' (value expected)", 2)
  end
  return recheck(native_xpcall(...))
end

---------------------------------------------------------------------------------------------------
-- string

local native_format, native_rep = native_string.format, native_string.rep

local function format_(fmt, ...)
  local args = pack(...)
  if native_type(fmt) == "string" then
    local i, n, a = 1, #fmt, 0
    while i <= n do
      if str_byte(fmt, i) == 37 then -- '%'
        i = i + 1
        if str_byte(fmt, i) ~= 37 then
          a = a + 1
          local c = str_byte(fmt, i)
          while c and (c == 45 or c == 43 or c == 32 or c == 35 or c == 46 or (c >= 48 and c <= 57)) do
            i = i + 1
            c = str_byte(fmt, i)
          end
          if c == 112 then -- 'p'
            native_error("string.format: '%p' is not available to mods (addresses are not deterministic)", 2)
          elseif c == 115 then -- 's'
            local t = native_type(args[a])
            if t == "table" or t == "userdata" or t == "function" or t == "thread" then
              args[a] = tostring_(args[a])
            end
          end
        end
      end
      i = i + 1
    end
  end
  return native_call(native_format, fmt, unpack(args, 1, args.n))
end

local function rep_(...)
  local s, n, sep = ...
  local k = to_int(n)
  if k and k > 0 then
    local ts, tsep = native_type(s), native_type(sep)
    if (ts == "string" or ts == "number") and (sep == nil or tsep == "string" or tsep == "number") then
      local l = #native_tostring(s)
      if sep ~= nil then
        l = l + #native_tostring(sep)
      end
      if l == 0 then
        return "" -- the native function would copy nothing k times
      end
      charge(k // 32 + 1)
    end
  end
  return native_call(native_rep, ...)
end

local function str_arg(v, i, name)
  local t = native_type(v)
  if t == "string" then
    return v
  elseif t == "number" then
    return native_tostring(v)
  end
  native_error("bad argument #" .. i .. " to '" .. name .. "' (string expected, got " .. typename(v) .. ")", 3)
end

local function int_arg(v, i, name, default)
  if v == nil then
    return default
  end
  local k = to_int(v)
  if k then
    return k
  end
  if native_type(v) == "number" or (native_type(v) == "string" and native_tonumber(v)) then
    native_error("bad argument #" .. i .. " to '" .. name .. "' (number has no integer representation)", 3)
  end
  native_error("bad argument #" .. i .. " to '" .. name .. "' (number expected, got " .. typename(v) .. ")", 3)
end

-- string.find and string.match share the metered matcher; `find` also returns the positions.
local function search(name, s, p, init, plain, positions)
  s = str_arg(s, 1, name)
  p = str_arg(p, 2, name)
  init = int_arg(init, 3, name, 1)
  local r = pack(pm_find(s, p, init, plain, positions))
  if r[1] then
    return unpack(r, 2, r.n)
  end
  native_error(r[2], 2) -- find_ and match_ tail-call search: level 2 is the mod's own code
end

local function find_(s, p, init, plain)
  return search("find", s, p, init, plain and true or false, true)
end

local function match_(s, p, init)
  return search("match", s, p, init, false, false)
end

local function gmatch_(s, p, init)
  s = str_arg(s, 1, "gmatch")
  p = str_arg(p, 2, "gmatch")
  local len = #s
  local src = int_arg(init, 3, "gmatch", 1)
  if src > 0 then
    src = src - 1
  elseif src == 0 or src < -len then
    src = 0
  else
    src = len + src
  end
  if src > len then
    src = len + 1
  end
  local last = -1
  return function()
    local r = pack(pm_next(s, p, src, last, false))
    if not r[1] then
      native_error(r[2], 2)
    end
    if r[2] == nil then
      return -- no values at all, like the native iterator
    end
    src, last = r[3], r[3]
    return unpack(r, 4, r.n)
  end
end

local function gsub_(s, p, repl, max_n)
  s = str_arg(s, 1, "gsub")
  p = str_arg(p, 2, "gsub")
  local tr = native_type(repl)
  if tr == "number" then
    repl, tr = native_tostring(repl), "string"
  end
  if tr ~= "string" and tr ~= "function" and tr ~= "table" then
    native_error("bad argument #3 to 'gsub' (string/function/table expected, got " .. typename(repl) .. ")", 2)
  end
  max_n = int_arg(max_n, 4, "gsub", #s + 1)
  if tr == "string" then
    local r = pack(pm_gsub(s, p, repl, max_n))
    if r[1] then
      return r[2], r[3]
    end
    if r[2] == "not enough memory" then
      native_error(r[2], 0)
    end
    native_error(r[2], 2)
  end
  local anchored = str_byte(p, 1) == 94 -- '^'
  local pieces, np = {}, 0
  local src, last, n = 0, -1, 0
  while n < max_n do
    local r = pack(pm_next(s, p, src, last, true))
    if not r[1] then
      native_error(r[2], 2)
    end
    local st = r[2]
    if st == nil then
      break
    end
    local e = r[3]
    n = n + 1
    local v
    if tr == "function" then
      v = repl(unpack(r, 4, r.n))
    else
      v = repl[r[4]]
    end
    np = np + 1
    pieces[np] = str_sub(s, src + 1, st)
    np = np + 1
    if not v then
      pieces[np] = str_sub(s, st + 1, e)
    else
      local tv = native_type(v)
      if tv ~= "string" and tv ~= "number" then
        native_error("invalid replacement value (a " .. tv .. ")", 2)
      end
      pieces[np] = v
    end
    src, last = e, e
    if anchored then
      break
    end
  end
  np = np + 1
  pieces[np] = str_sub(s, src + 1)
  return concat(pieces, "", 1, np), n
end

---------------------------------------------------------------------------------------------------
-- table

local native_insert, native_remove, native_move, native_unpack =
  native_table.insert, native_table.remove, native_table.move, native_table.unpack

-- Shifting elements runs in C: charge one instruction per element moved.
local function insert_(t, ...)
  if native_select("#", ...) == 2 and native_type(t) == "table" then
    local pos, e = to_int((...)), to_int(#t)
    if pos and e then
      charge_span(pos, e)
    end
  end
  return native_call(native_insert, t, ...)
end

local function remove_(t, ...)
  if native_select("#", ...) >= 1 and native_type(t) == "table" then
    local pos, e = to_int((...)), to_int(#t)
    if pos and e then
      charge_span(pos, e)
    end
  end
  return native_call(native_remove, t, ...)
end

local function move_(...)
  local _, f, e = ...
  local fi, ei = to_int(f), to_int(e)
  if fi and ei then
    charge_span(fi, ei)
  end
  return native_call(native_move, ...)
end

local function unpack_(...)
  local t, i, j = ...
  local a, b = 1, nil
  if i ~= nil then
    a = to_int(i)
  end
  if j ~= nil then
    b = to_int(j)
  elseif native_type(t) == "table" then
    b = to_int(#t)
  end
  if a and b then
    charge_span(a, b)
  end
  return native_call(native_unpack, ...)
end

-- table.sort: a stable merge sort in Lua. The native sort picks pivots from the clock, which
-- would make the order of equal elements (and the comparator's calls) differ between runs.
local function sort_(t, lt)
  if native_type(t) ~= "table" then
    native_error("bad argument #1 to 'sort' (table expected, got " .. typename(t) .. ")", 2)
  end
  if lt ~= nil and native_type(lt) ~= "function" then
    native_error("bad argument #2 to 'sort' (function expected, got " .. typename(lt) .. ")", 2)
  end
  local n = #t
  if n < 2 then
    return
  end
  local a, b = {}, {}
  for i = 1, n do
    a[i] = t[i]
  end
  local width = 1
  while width < n do
    local lo = 1
    while lo <= n do
      local mid, hi = lo + width - 1, lo + 2 * width - 1
      if mid > n then
        mid = n
      end
      if hi > n then
        hi = n
      end
      local l, r, k = lo, mid + 1, lo
      while l <= mid and r <= hi do
        local x, y = a[l], a[r]
        local less
        if lt then
          less = lt(y, x)
        else
          less = y < x
        end
        if less then
          b[k], r = y, r + 1
        else
          b[k], l = x, l + 1
        end
        k = k + 1
      end
      while l <= mid do
        b[k], l, k = a[l], l + 1, k + 1
      end
      while r <= hi do
        b[k], r, k = a[r], r + 1, k + 1
      end
      lo = lo + 2 * width
    end
    a, b = b, a
    width = width * 2
  end
  for i = 1, n do
    t[i] = a[i]
  end
end

---------------------------------------------------------------------------------------------------
-- math

local native_randomseed = native_math.randomseed

local function randomseed_(...)
  if native_select("#", ...) == 0 then
    native_error("math.randomseed: a seed is required (mods are deterministic)", 2)
  end
  return native_call(native_randomseed, ...)
end

native_randomseed(R.seed)

---------------------------------------------------------------------------------------------------
-- the environment

local function copy(t)
  local c = {}
  for k, v in native_pairs(t) do
    c[k] = v
  end
  return c
end

local S = copy(native_string)
S.format, S.rep, S.find, S.match, S.gmatch, S.gsub = format_, rep_, find_, match_, gmatch_, gsub_
-- Method calls on strings ("x"):upper() use the same table; it has no dump.
native_getmetatable("").__index = S

local T = copy(native_table)
T.insert, T.remove, T.move, T.unpack, T.sort = insert_, remove_, move_, unpack_, sort_

local M = copy(native_math)
M.randomseed = randomseed_

local env = {
  assert = assert,
  error = native_error,
  getmetatable = native_getmetatable,
  ipairs = native_ipairs,
  pairs = pairs_,
  pcall = pcall_,
  rawequal = rawequal,
  rawget = native_rawget,
  rawlen = rawlen,
  rawset = rawset,
  select = native_select,
  setmetatable = setmetatable_,
  tonumber = native_tonumber,
  tostring = tostring_,
  type = native_type,
  xpcall = xpcall_,
  string = S,
  table = T,
  math = M,
  utf8 = copy(native_utf8),
  print = log_,
  log = log_,
  on = lift(R.on),
  cancel = lift(R.cancel),
  mod = { id = R.mod_id },
}

if R.streaming then
  local st = {}
  for name, raw in native_pairs(R.streaming) do
    st[name] = lift(raw)
  end
  env.streaming = st
end

-- The runner: every call into the mod (its top level, a handler, a callback) goes through it.
local function run(f, ...)
  local ok, r = native_pcall(f, ...)
  if ok then
    return true, r
  end
  if native_type(r) == "number" then
    r = native_tostring(r)
  end
  return false, r
end

-- Defence in depth: the real globals are unreachable, and lose what could load code anyway.
for _, name in native_ipairs({ "load", "loadstring", "dofile", "loadfile", "require", "collectgarbage",
  "module", "package", "io", "os", "debug", "coroutine", "next" }) do
  _G[name] = nil
end

return env, run
