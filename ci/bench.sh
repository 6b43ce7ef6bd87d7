#!/usr/bin/env bash
# Benchmarks of memcgtest itself. Not tests: they print figures and ratios, and never fail on a
# number (machines are noisy). Run as root from the repository root after `cargo build --release`.
#   1. The sampler's cost: dirty-accounting's writes with sampling every 10 ms vs every hour (60m, that
#      is, only at the start), RUNS alternating runs each (default 5, each with 5 write cycles);
#      `memcgtest compare` prints the change of the write MB/s medians and whether it is
#      significant.
#   2. The cost of one sampler pass (memory.stat of the group, /proc/vmstat twice): the median
#      and 99th percentile of the sampler.pass_us column over those runs; and the same over four
#      groups (ci/bench/sampler-4-groups.toml, RUNS runs).
#   3. The suite's wall time, quick and full profiles.
#   4. The quick suite's wall time in a TCG guest under v2 and v1, boot included (the quick gate).
set -euo pipefail
cd "$(dirname "$0")/.."

# The count, median, p99 and maximum of the sampler.pass_us column (the last) of CSV files.
pass_stats() {
  for f in "$@"; do tail -n +2 "$f" | awk -F, '{print $NF}'; done 2>/dev/null | sort -n > "$out/pass.tmp" || true
  local n
  n=$(wc -l < "$out/pass.tmp")
  echo "passes: $n  median: $(sed -n "$(( (n + 1) / 2 ))p" "$out/pass.tmp")  p99: $(sed -n "$(( n * 99 / 100 ))p" "$out/pass.tmp")  max: $(tail -1 "$out/pass.tmp")"
}
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_BENCH_OUT:-/tmp/memcgtest-bench}
runs=${RUNS:-5}
rm -rf "$out"
mkdir -p "$out/off" "$out/on"

echo "== 1. sampler cost: dirty-accounting writes, sampling every 10 ms vs none ($runs runs each)"
# Without samples the accounting checks are not exercised (every scenario skipped: exit 125, "nothing
# can be tested" on stderr); only the measurements matter here.
for i in $(seq 1 "$runs"); do
  "$bin" run dirty-accounting --format json --sample-interval 60m > "$out/off/$i.json" || true
  "$bin" run dirty-accounting --format json --sample-interval 10ms --report "$out/on/report-$i" > "$out/on/$i.json" || true
done
set +e
"$bin" compare "$out/off" "$out/on" --threshold 2 | grep -E "measurement|cycles: write|compared"
set -e

echo
echo "== 2. one sampler pass (group memory.stat + /proc/vmstat twice), microseconds"
pass_stats "$out"/on/report-*/dirty-accounting.csv

echo
echo "== 2b. one sampler pass over four groups (ci/bench/sampler-4-groups.toml: memory.stat and usage of each, cachestat of their files, /proc/vmstat twice), microseconds"
for i in $(seq 1 "$runs"); do
  "$bin" --scenario-dir ci/bench run sampler-4-groups --format json --report "$out/four-$i" > /dev/null || true
done
pass_stats "$out"/four-*/sampler-4-groups.csv

echo
echo "== 3. suite wall time"
for profile in quick full; do
  flag=""; [ $profile = quick ] && flag=--quick
  start=$(date +%s.%N)
  set +e
  "$bin" run $flag --format json > "$out/suite-$profile.json"
  rc=$?
  set -e
  echo "$profile: $(echo "$(date +%s.%N) - $start" | bc) s (exit $rc)"
done

echo
echo "== 4. the quick suite in a TCG guest, per cgroup version, including boot (the project's 6.12 kernel)"
if command -v qemu-system-x86_64 >/dev/null; then
  kernel=$(ci/build-kernel.sh)
  for cg in v2 v1; do
    start=$(date +%s.%N)
    set +e
    "$bin" --cgroup "$cg" vm --accel tcg --kernel "$kernel" -- run --quick --format json > "$out/vm-$cg.json" 2> "$out/vm-$cg.err"
    rc=$?
    set -e
    echo "$cg: $(echo "$(date +%s.%N) - $start" | bc) s (exit $rc)"
  done
else
  echo "skipped: no qemu-system-x86_64 (apt-get install qemu-system-x86)"
fi

