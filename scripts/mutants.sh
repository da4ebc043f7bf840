#!/usr/bin/env bash
# Mutation testing of the kit's core with cargo-mutants (config: .cargo/mutants.toml). Not part of
# CI: every mutant is a rebuild and a test run, 10-20 s each on 2 cores (~70 min for the core,
# after a first build of the dependencies of ~8 min).
#
#   scripts/mutants.sh                                   # the core: grid, kits, hooks, save format
#   scripts/mutants.sh src/kits/streaming/residency.rs        # one file (globs allowed)
#   MUTANTS_ARGS="-o /tmp/m --baseline skip --timeout 300" scripts/mutants.sh src/host/hooks.rs
#                                                        # more cargo-mutants options
#
# Results land in mutants.out/ (caught.txt, missed.txt, unviable.txt, timeout.txt, outcomes.json).
# The tests run against each mutant are the ones that hold the planner, hooks and saves to the
# contract with independent expectations; tests/invariants.rs is left out (the reference test in
# tests/reference.rs checks everything it does against an independent planner, in half the time).
# docs/reference/streaming.md#the-resident-cap (anchors, tickets, the cap) is held by
# tests/reference_foci.rs and tests/many_foci*.rs.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-mutants >/dev/null; then
    echo "cargo-mutants is not installed: cargo install cargo-mutants --locked" >&2
    exit 2
fi
read -r -a args <<<"${MUTANTS_ARGS:-}"
if [ $# -eq 0 ]; then
    set -- src/grid.rs 'src/kits/**/*.rs' src/host/hooks.rs src/files/save.rs
fi
for f in "$@"; do
    args+=(--file "$f")
done
# Mutants build in a copy of the tree; a target directory of their own that outlives the copy
# keeps the dependencies built between runs (and away from the working tree's target lock).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target/mutants}"
exec cargo mutants --jobs 1 ${args[@]+"${args[@]}"} \
    -- --lib --test world_streaming --test hooks --test reference --test reference_foci \
    --test many_foci --test many_foci_edges --test many_foci_props --test saves --test baseline
