#!/usr/bin/env bash
# Side by side with Porcupine (issue 19): the same history files checked by `coordsim check` and by
# Porcupine, one process per file, with wall time and peak RSS from /usr/bin/time.
#
#   scripts/porcupine-side-by-side.sh [SCRATCH]      (default target/porcupine-side-by-side)
#
# Files: the Porcupine corpus (Jepsen etcd logs, kv files) shipped in checker/tests/data, and the
# generated register histories of the scaling grid (`coordsim bench check --write-grid`).
# Needs Go (Debian: apt-get install golang-go) and Porcupine: PORCUPINE_DIR=<a checkout>, else it
# is cloned from GitHub into SCRATCH. Nothing of Porcupine is committed; the harness in
# scripts/porcupine-harness is ours. TIMEOUT (seconds, default 60) bounds each check of both tools.
set -euo pipefail
cd "$(dirname "$0")/.."
SCRATCH=${1:-target/porcupine-side-by-side}
TIMEOUT=${TIMEOUT:-60}
mkdir -p "$SCRATCH"
SCRATCH=$(cd "$SCRATCH" && pwd)
if [ -z "${PORCUPINE_DIR:-}" ]; then
    PORCUPINE_DIR=$SCRATCH/porcupine
    [ -d "$PORCUPINE_DIR" ] || git clone -q https://github.com/anishathalye/porcupine "$PORCUPINE_DIR"
fi
PORCUPINE_DIR=$(cd "$PORCUPINE_DIR" && pwd)

# The harness, built against that checkout.
rm -rf "$SCRATCH/harness" && mkdir -p "$SCRATCH/harness"
cp scripts/porcupine-harness/main.go "$SCRATCH/harness/"
cat > "$SCRATCH/harness/go.mod" <<MOD
module porcupineharness

go 1.18

require github.com/anishathalye/porcupine v0.0.0
replace github.com/anishathalye/porcupine => $PORCUPINE_DIR
MOD
(cd "$SCRATCH/harness" && GOFLAGS=-mod=mod GOCACHE="$SCRATCH/gocache" go build -o "$SCRATCH/porcupine-check" .)

cargo build --release -q -p coordsim
COORDSIM=target/release/coordsim
"$COORDSIM" bench check --write-grid "$SCRATCH/grid" > /dev/null

FILES=(checker/tests/data/porcupine/jepsen/etcd_000.log checker/tests/data/porcupine/jepsen/etcd_002.log
       checker/tests/data/porcupine/kv/*.txt "$SCRATCH"/grid/*.log)
printf '%-28s %9s | %-16s %9s %8s | %-16s %9s %8s\n' file ops coordsim seconds MB porcupine seconds MB
for file in "${FILES[@]}"; do
    ours=$( { /usr/bin/time -f '%e %M' "$COORDSIM" check "$file" --timeout "${TIMEOUT}s" --memory-limit 16GiB > "$SCRATCH/ours.out" || true; } 2>&1 | tail -1)
    verdict=$(grep -m1 -oE '^  (NOT linearizable|linearizable|unknown)' "$SCRATCH/ours.out" | sed 's/^  //' || echo error)
    ops=$(grep -m1 -oE '[0-9]+ operations' "$SCRATCH/ours.out" | cut -d' ' -f1 || echo '?')
    theirs=$( { TIMEOUT=$TIMEOUT /usr/bin/time -f '%e %M' "$SCRATCH/porcupine-check" "$file" > "$SCRATCH/theirs.out" || true; } 2>&1 | tail -1)
    their_verdict=$(cut -f3 "$SCRATCH/theirs.out" 2>/dev/null || echo error)
    printf '%-28s %9s | %-16s %9s %8d | %-16s %9s %8d\n' "$(basename "$file")" "$ops" \
        "$verdict" "${ours% *}" "$(( ${ours#* } / 1024 ))" "${their_verdict:-error}" "${theirs% *}" "$(( ${theirs#* } / 1024 ))"
done
