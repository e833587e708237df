#!/usr/bin/env bash
# The nightly volume check of the whole library (issue 38 item 1): every library scenario, as
# written, over seeds 1..1,000 (`SEEDS=N`), each of which must be as the scenario expects. The
# swarm scenarios' switch-off half runs longer in scripts/nightly-switch-off-sweep.sh; this one
# covers everything CI sweeps over 20 seeds. About 100,000 runs: several hours on 2 cores, so
# shard it across machines or nights and merge:
#
#   scripts/nightly-library-sweep.sh                         (SEEDS=1000, one machine)
#   SHARD=2/4 scripts/nightly-library-sweep.sh               (shard 2 of 4, into $OUT/shard-2)
#   target/release/coordsim merge $OUT/shard-*/sweep.json -o $OUT/sweep.json
#
# Exit 0 when every run is as expected, 1 otherwise (the replay commands are printed and in
# $OUT/summary.md), 2 on bad input.
set -euo pipefail
cd "$(dirname "$0")/.."
SEEDS=${SEEDS:-1000}
OUT=${OUT:-target/nightly-library}
JOBS=${JOBS:-$(nproc)}
cargo build --release -q -p coordsim
shard=()
if [ -n "${SHARD:-}" ]; then
    shard=(--shard "$SHARD")
    OUT=$OUT/shard-${SHARD%/*}
fi
exec target/release/coordsim run all --seeds "1..$SEEDS" "${shard[@]}" --jobs "$JOBS" --report md --out "$OUT"
