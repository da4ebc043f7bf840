#!/usr/bin/env bash
# What the sandbox's VM patches cost plain Lua code: machine instructions (callgrind) of each
# workload of driver.c on the stock Lua 5.4.7 (the lua-src crate's copy, from cargo's registry)
# and on vendor/lua-5.4.7 (the budget is never set, so it counts down from "unmetered", as the
# host's own Lua does between calls), and on the stock VM under a count hook every 1000
# instructions (the sandbox's budget before the patch, with an empty C hook: a lower bound of
# what mlua's hook cost). Needs gcc and valgrind.
#   benches/vm/overhead.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
stock=$(ls -d "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/lua-src-547.*/lua-5.4.7 | head -n 1)
out=$(mktemp -d)
build() { # name sourcedir
  gcc -O2 -DLUA_COMPAT_5_3 -DLUA_USE_LINUX -I"$2" -o "$out/$1" benches/vm/driver.c \
    $(ls "$2"/*.c | grep -v -e '/lua\.c$' -e '/luac\.c$') -lm -ldl
}
build stock "$stock"
build patched vendor/lua-5.4.7
count() { # binary workload [hook]
  valgrind --tool=callgrind --callgrind-out-file=/dev/null "$out/$1" "$2" ${3:-} 2>&1 |
    sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
ratio() { awk "BEGIN{printf \"%.3f\", $1/$2}"; }
printf '%-8s %14s %14s %7s %14s %7s\n' workload stock patched ratio 'stock+hook' ratio
for w in arith calls tables find gsub concat; do
  s=$(count stock "$w"); p=$(count patched "$w"); h=$(count stock "$w" hook)
  printf '%-8s %14s %14s %7s %14s %7s\n' "$w" "$s" "$p" "$(ratio "$p" "$s")" "$h" "$(ratio "$h" "$s")"
done
rm -rf "$out"
