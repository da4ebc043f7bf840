#!/usr/bin/env bash
# Runs every fuzz target for SECONDS (default 600) each, seeding the corpora from the repo's
# example files. Needs cargo-fuzz (`cargo install cargo-fuzz`); on the stable toolchain it runs
# with RUSTC_BOOTSTRAP=1 (cargo fuzz needs nightly-only sanitizer flags).
#   fuzz/run.sh            # 10 minutes per target
#   fuzz/run.sh 60 scene   # one minute of the scene target
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-600}
shift || true
targets=${*:-scene inputs json_mod lua_mod save region_decode region_record}
mkdir -p fuzz/corpus/{scene,inputs,json_mod,lua_mod,save,region_decode,region_record}
cp examples/scenes/*.json fuzz/corpus/scene/
cp examples/scenes/*.jsonl fuzz/corpus/inputs/
cp mods/*.json fuzz/corpus/json_mod/
cp mods/*.lua fuzz/corpus/lua_mod/ 2>/dev/null || true
cp fuzz/seeds/lua_mod/*.lua fuzz/corpus/lua_mod/  # hostile mods: the budget's known holes
cp fuzz/seeds/region_decode/* fuzz/corpus/region_decode/  # encoded regions (tests/fuzz_regressions.rs)
cp fuzz/seeds/region_record/* fuzz/corpus/region_record/
cargo run -q --release -- run examples/scenes/drive.json --inputs examples/scenes/drive.inputs.jsonl >/dev/null
printf '{"tick": 60, "do": "save", "path": "fuzz/corpus/save/drive.save.json"}\n' > /tmp/ws-fuzz-save.jsonl
cargo run -q --release -- run examples/scenes/drive.json --inputs /tmp/ws-fuzz-save.jsonl >/dev/null
for t in $targets; do
  echo "== $t: ${seconds}s"
  # lua_mod runs without AddressSanitizer: its longjmp interceptor unpoisons the stack at every
  # Lua error, which made a loop of caught errors 300x slower than the release build (13 s for
  # an input that runs in 40 ms) and flooded the run with false timeouts. The Lua VM is C that
  # ASan does not instrument anyway; the other targets are safe Rust.
  sanitizer=address
  [ "$t" = lua_mod ] && sanitizer=none
  RUSTC_BOOTSTRAP=1 cargo fuzz run -O --sanitizer "$sanitizer" "$t" "fuzz/corpus/$t" -- \
    -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -max_len=65536 2>&1 | grep -v "^#[0-9]*\s*\(NEW\|REDUCE\|pulse\)" | tail -n 40
done
