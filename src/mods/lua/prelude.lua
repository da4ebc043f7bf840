-- The trusted prelude of one Lua mod's sandbox (see src/mods/lua/mod.rs).
--
-- It runs once per mod state, with the real globals, before the mod does. It returns the mod's
-- environment, built from an allow-list, and the runner that every call into the mod goes
-- through. The real globals and the real library tables stay out of the mod's reach: the mod
-- sees copies. The library functions are Lua's own: the VM they run on (vendor/lua-5.4.7)
-- charges their work to the budget, never shows an address, seeds nothing from the clock, sorts
-- deterministically and ignores `__gc` on tables and `__mode`. Only `pairs` (a fixed key order)
-- and `print`/`log` are written here. `R` holds the Rust half (see sandbox.rs, api.rs and the
-- kits' tables, built with src/script/).
local R = ...

local native_pcall, native_error = pcall, error
local native_tostring, native_type, native_select = tostring, type, select
local native_rawget = rawget
local native_pairs, native_ipairs = pairs, ipairs
local native_string, native_table, native_math, native_utf8 = string, table, math, utf8
local pack, concat = native_table.pack, native_table.concat

local sorted_keys, raw_metatable, emit = R.sorted_keys, R.raw_metatable, R.emit

-- No function can be dumped to bytecode, not even through ("").dump.
native_string.dump = nil

-- Rust functions answer `true, results...` or `false, message`; the message is raised at the
-- mod's call.
local function lift(raw)
  return function(...)
    local r = pack(raw(...))
    if r[1] then
      return native_table.unpack(r, 2, r.n)
    end
    native_error(r[2], 2)
  end
end

-- print(...) and log(...): the arguments, converted like tostring, joined by tabs.
-- An error of a `__tostring` goes to the mod unchanged (raised here, Lua would name this line).
local function log_(...)
  local args = pack(...)
  local parts = {}
  for i = 1, args.n do
    local ok, text = native_pcall(native_tostring, args[i])
    if not ok then
      native_error(text, 0)
    end
    parts[i] = text
  end
  emit(concat(parts, "\t", 1, args.n))
end

-- pairs: keys in a fixed order (numbers ascending, then strings bytewise, then false, true);
-- `__pairs` is honoured; a value that is not a table fails at the first step, as in Lua.
local function pairs_(...)
  if native_select("#", ...) == 0 then
    native_error("bad argument #1 to 'pairs' (value expected)", 2)
  end
  local t = ...
  local mt = raw_metatable(t)
  local meta = mt and native_rawget(mt, "__pairs")
  if meta ~= nil then
    local f, s, c = meta(t)
    return f, s, c
  end
  if native_type(t) ~= "table" then
    local kind = native_type(t)
    return function()
      native_error("bad argument #1 to 'for iterator' (table expected, got " .. kind .. ")", 2)
    end, t, nil
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

native_math.randomseed(R.seed)

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
-- Method calls on strings ("x"):upper() use the same table; it has no dump.
getmetatable("").__index = S

local env = {
  assert = assert,
  error = native_error,
  getmetatable = getmetatable,
  ipairs = native_ipairs,
  pairs = pairs_,
  pcall = native_pcall,
  rawequal = rawequal,
  rawget = native_rawget,
  rawlen = rawlen,
  rawset = rawset,
  select = native_select,
  setmetatable = setmetatable,
  tonumber = tonumber,
  tostring = native_tostring,
  type = native_type,
  xpcall = xpcall,
  string = S,
  table = copy(native_table),
  math = copy(native_math),
  utf8 = copy(native_utf8),
  print = log_,
  log = log_,
  on = lift(R.on),
  cancel = lift(R.cancel),
  mod = { id = R.mod_id },
  -- Saved with the game and restored on load (plain data; see storage.rs).
  storage = {},
}

-- The service tables of the kits the scene enables (`streaming`, `terrain`, …: `R.services`, in
-- catalog order), each function lifted.
for _, service in native_ipairs(R.services) do
  if R[service] then
    local t = {}
    for name, raw in native_pairs(R[service]) do
      t[name] = lift(raw)
    end
    env[service] = t
  end
end

-- The runner: every call into the mod (its top level, a handler, a callback) goes through it.
-- Once the budget is spent, no Lua instruction runs on (the VM raises at each one), so neither a
-- `pcall` nor an `xpcall` message handler in the mod can continue.
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
