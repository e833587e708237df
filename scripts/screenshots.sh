#!/usr/bin/env bash
# Screenshots of three reports for docs/images/, so a reader sees a report before running
# anything (issue 17). Each is the top of the page in a 1400-pixel-wide headless Chromium window,
# tall enough to hold the verdicts, what went wrong, the timeline and its legend:
#
#   scripts/screenshots.sh                 (CHROMIUM=/path/to/chromium to pick another browser)
#
# The pictures are made from seed 1 of library scenarios, so they change only when the report's
# look or those runs change; re-run this after either and commit the PNGs.
set -euo pipefail
cd "$(dirname "$0")/.."
CHROMIUM=${CHROMIUM:-chromium}
OUT=${OUT:-target/screenshots}
cargo build --release -q -p coordsim
rm -rf "$OUT"
mkdir -p "$OUT" docs/images

# shot NAME HEIGHT: run NAME at seed 1 (as expected: exit 0) and save its report's top HEIGHT pixels.
shot() {
    target/release/coordsim run "$1" --seed 1 --out "$OUT" > /dev/null
    "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run --hide-scrollbars \
        --disable-background-networking --virtual-time-budget=3000 --window-size=1400,"$2" \
        --user-data-dir="$OUT/profile" --screenshot="docs/images/$1.png" \
        "file://$PWD/$OUT/$1/seed-1/report.html" 2> "$OUT/$1.chromium.log"
    echo "docs/images/$1.png ($(stat -c %s "docs/images/$1.png") bytes)"
}
shot split-brain-gc-pause 2000
shot zk-holder-cut-off-session-policy 2000
shot split-brain-chaos 2300
