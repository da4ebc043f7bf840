/* Runs one Lua workload in a fresh state (with "hook": under a count hook every 1000 instructions): the driver of benches/vm/overhead.sh, which builds it
** against the stock Lua 5.4.7 and against vendor/lua-5.4.7 and counts machine instructions with
** callgrind (deterministic, whatever else the machine does). */
#include <stdio.h>
#include <string.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"

static const char *const WORKLOADS[][2] = {
  {"arith", "local s = 0 for i = 1, 2000000 do s = s + i % 7 end"},
  {"calls", "local function f(a, b) return a + b end local s = 0 for i = 1, 500000 do s = f(s, i) end"},
  {"tables", "for j = 1, 50 do local t = {} for i = 1, 2000 do t[i] = {x = i, z = -i} end end"},
  {"find", "local s, n = 'the quick brown fox jumps over the lazy dog', 0 for i = 1, 100000 do if s:find('l%a+') then n = n + 1 end end"},
  {"gsub", "local s = ('key=value; '):rep(50) for i = 1, 2000 do s:gsub('(%w+)=(%w+)', function(k, v) end) end"},
  {"concat", "for j = 1, 100 do local t = {} for i = 1, 1000 do t[#t + 1] = 'x' .. i end local s = table.concat(t) end"},
};

/* The budget as a count hook (the sandbox's design before the patch), with an empty hook. */
static void count_hook (lua_State *L, lua_Debug *ar) {
  (void)L; (void)ar;
}

int main (int argc, char **argv) {
  size_t i;
  if (argc != 2 && argc != 3) return 2;
  for (i = 0; i < sizeof(WORKLOADS) / sizeof(WORKLOADS[0]); i++) {
    if (strcmp(argv[1], WORKLOADS[i][0]) == 0) {
      lua_State *L = luaL_newstate();
      int status;
      luaL_openlibs(L);
      if (argc == 3 && strcmp(argv[2], "hook") == 0)
        lua_sethook(L, count_hook, LUA_MASKCOUNT, 1000);
      status = luaL_dostring(L, WORKLOADS[i][1]);
      if (status != LUA_OK) fprintf(stderr, "%s\n", lua_tostring(L, -1));
      lua_close(L);
      return status;
    }
  }
  return 2;
}
