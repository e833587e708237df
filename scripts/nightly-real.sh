#!/usr/bin/env bash
# The nightly differential against the real systems (issue 16): every library scenario that real
# etcd or real ZooKeeper can run, one run each, against the verdicts the simulator expects, and the
# long lease-checkpoint pair (two 400 s runs on real etcd 3.4: without checkpoints the dead
# client's 6-minute lease outlives its bound, with --experimental-enable-lease-checkpoint it does
# not). About 45 minutes on 2 cores; too long for CI, which runs a dozen of them.
#
#   scripts/install-real.sh && cargo build --release -p coordsim --features real
#   scripts/nightly-real.sh                 (OUT=target/nightly-real)
#
# Prints one line per run and a last line counting the runs not as expected; exits 1 if any.
# Scenarios a real cluster cannot run (switches of the simulated servers, faults with no real
# counterpart) are refused by `coordsim real` with exit 2 and skipped here.
set -uo pipefail
cd "$(dirname "$0")/.."
bin=target/release/coordsim
OUT=${OUT:-target/nightly-real}
[ -x "$bin" ] || { echo "build first: cargo build --release -p coordsim --features real" >&2; exit 2; }
$bin real doctor > /dev/null || { echo "coordsim real doctor: not ready" >&2; exit 2; }
runs=0
unexpected=0
one() {
  local system=$1 scenario=$2 out rc
  out=$(timeout 1200 "$bin" real "$system" "$scenario" --out "$OUT" 2>&1)
  rc=$?
  [ $rc -eq 2 ] && return
  runs=$((runs + 1))
  if [ $rc -eq 0 ]; then
    echo "as expected      $system $scenario"
  else
    unexpected=$((unexpected + 1))
    echo "NOT as expected  $system $scenario (exit $rc)"
    echo "$out" | grep -E "^  run|^           [a-z_]+: |^error" | cut -c1-400 | sed 's/^/    /'
  fi
}
one etcd long-lease-ttl-reset
one etcd long-lease-checkpointed
for scenario in $($bin list | awk '{print $1}'); do
  case $scenario in long-lease-*) continue ;; esac
  one etcd "$scenario"
  one zookeeper "$scenario"
done
echo "$runs real runs, $unexpected not as expected (folders under $OUT)"
# The verdict table of docs/real-systems.md: copy $OUT/real-verdicts.json and .md into
# docs/data/real/ to publish a new measurement.
etcd_version=$(/usr/bin/etcd --version 2>/dev/null | sed -n 's/^etcd Version: //p')
zk_version=$(ls /usr/share/java/zookeeper-3*.jar 2>/dev/null | head -1 | sed 's/.*zookeeper-\(3[0-9.]*[0-9]\)\.jar/\1/')
echo "One run of every library scenario a real cluster accepts (\`scripts/nightly-real.sh\`, $(date -u +%F), etcd ${etcd_version:-?}, ZooKeeper ${zk_version:-?}, $(nproc) cores)." > "$OUT/source.txt"
rm -f "$OUT/real-verdicts.json"
$bin report "$OUT"
[ $unexpected -eq 0 ]
