#!/usr/bin/env bash
# The web build's speed against the native build's, both sides in one run on this machine
# (docs/web.md#measured): the LOD drive (examples/scenes/lod.json with its inputs, 300 ticks) with
# `world.terrain` inline, natively (`world-streaming run`, release) and in Node through
# web/world-streaming.js (web/bench/lod-drive.mjs). Prints each side's best of RUNS and the
# ratio; exits 1 when the web side takes more than 3× the native side (the goal), or when the
# two sides' event counts differ.
#
# Usage: scripts/bench-web.sh [RUNS]   (default 5; builds what is missing first)
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-5}
ticks=300
inputs=examples/scenes/lod.inputs.jsonl

cargo build --release --locked -q
[ -f web/world_streaming.wasm ] || scripts/build-web.sh

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The shipped scene with its terrain inline (the wasm build runs inline whatever it says; the
# native side must be told).
sed 's/"workers": 0/"workers": "inline"/' examples/scenes/lod.json >"$tmp/lod-inline.json"
grep -q '"workers": "inline"' "$tmp/lod-inline.json" || {
  echo "bench-web: examples/scenes/lod.json no longer says \"workers\": 0" >&2
  exit 1
}

best_native=""
for _ in $(seq "$runs"); do
  start=$(date +%s%N)
  target/release/world-streaming run "$tmp/lod-inline.json" --inputs "$inputs" --ticks "$ticks" \
    --events "$tmp/native.jsonl" -q
  ms=$((($(date +%s%N) - start) / 1000000))
  if [ -z "$best_native" ] || [ "$ms" -lt "$best_native" ]; then best_native=$ms; fi
done
native_events=$(wc -l <"$tmp/native.jsonl")

web=$(node web/bench/lod-drive.mjs "$tmp/lod-inline.json" "$inputs" "$ticks" "$runs")
best_web=$(node -e 'const r = JSON.parse(process.argv[1]); console.log(Math.round(Math.min(...r.runs)))' "$web")
web_events=$(node -e 'console.log(JSON.parse(process.argv[1]).events)' "$web")

echo "bench-web: the LOD drive, $ticks ticks, terrain inline, best of $runs"
echo "  native (release, world-streaming run): $best_native ms, $native_events events"
echo "  wasm in Node $(node --version) (world-streaming.js): $best_web ms, $web_events events"
ratio=$(node -e 'console.log((process.argv[1] / Math.max(1, process.argv[2])).toFixed(2))' "$best_web" "$best_native")
echo "  ratio web / native: ${ratio}× (goal: at most 3×)"
if [ "$native_events" != "$web_events" ]; then
  echo "bench-web: the two sides' event counts differ" >&2
  exit 1
fi
if node -e 'process.exit(process.argv[1] > 3 ? 0 : 1)' "$ratio"; then
  echo "bench-web: over the goal" >&2
  exit 1
fi
