#!/bin/sh
# Builds pristine Lua 5.4.7 — vendor/lua-5.4.7 as first committed, before any sandbox patch
# (commit 2520b2e, the lua-src 547.0.0 sources unmodified) — with the configuration build.rs uses
# (LUA_COMPAT_5_3, LUA_USE_LINUX), and runs the Lua files given on it. This is how the expected
# answers of "pristine Lua" in tests/lua_sandbox.rs were obtained.
#
#   scripts/pristine-lua.sh FILE.lua...      (needs git and a C compiler; nothing is installed)
set -eu
BASE=2520b2e
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${PRISTINE_LUA_DIR:-${TMPDIR:-/tmp}/ws-pristine-lua}
if [ ! -x "$out/lua" ]; then
  rm -rf "$out" && mkdir -p "$out"
  git -C "$repo" archive "$BASE" vendor/lua-5.4.7 | tar -x -C "$out"
  cat > "$out/driver.c" <<'C'
#include <stdio.h>
#include "lua.h"
#include "lauxlib.h"
#include "lualib.h"
int main(int argc, char **argv) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  for (int i = 1; i < argc; i++)
    if (luaL_dofile(L, argv[i]) != LUA_OK) {
      fprintf(stderr, "%s\n", lua_tostring(L, -1));
      return 1;
    }
  lua_close(L);
  return 0;
}
C
  src="$out/vendor/lua-5.4.7"
  cc -O1 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -I"$src" -o "$out/lua" "$out/driver.c" "$src"/*.c -lm -ldl
fi
exec "$out/lua" "$@"
