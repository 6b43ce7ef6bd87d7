#!/usr/bin/env bash
# The false-alarm rate of `memcgtest compare` on this machine (not part of CI: it measures, the
# docs record its figures). Runs the same kernel 2N times (the scenarios with performance checks,
# --quick, alternately into A/ and B/), then compares:
#   1. A/ with B/, N v N runs (the default: one sample per run, its median);
#   2. each pair A/i with B/i, one run a side: must be "too few runs", never a verdict;
#   3. the same pairs with --pool-repetitions (repetitions of one run as samples): the
#      pseudo-replication the default avoids; what it calls is counted, for the docs.
# Any regression or improvement in 1 or 2 is a false alarm: the kernel did not change.
# Run as root from the repository root:
#   ci/null-compare.sh [N] [SCENARIO...]     # default N=9, dirty-migration fault-overhead reclaim-parallel-read
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-9}
shift || true
scenarios=("$@")
[ ${#scenarios[@]} -gt 0 ] || scenarios=(dirty-migration fault-overhead reclaim-parallel-read)
[ "$(id -u)" = 0 ] || { echo "ci/null-compare.sh must run as root"; exit 1; }
cargo build --release -q
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/null-compare
rm -rf "$out"
mkdir -p "$out/A" "$out/B"

for i in $(seq 1 "$n"); do
  for side in A B; do
    set +e
    "$bin" run --quick --format json "${scenarios[@]}" > "$out/$side/$i.json" 2> "$out/$side/$i.err"
    rc=$?
    set -e
    echo "null-compare: run $i$side: exit $rc ($(date -u +%H:%M:%S))"
  done
done

# verdicts FILE: "regressions improvements judged measurements" of a compare --format json.
verdicts() {
  python3 - "$1" <<'EOF'
import json, sys
rows = json.load(open(sys.argv[1]))["measurements"]
c = lambda v: sum(1 for r in rows if r["verdict"] == v)
print(c("regression"), c("improvement"), len(rows) - c("too-few-samples"), len(rows))
EOF
}

"$bin" compare "$out/A" "$out/B" --format json > "$out/nvn.json" || true
"$bin" compare "$out/A" "$out/B" > "$out/nvn.txt" || true
read -r reg imp judged total < <(verdicts "$out/nvn.json")
echo "null-compare: $n v $n runs: $reg regressions, $imp improvements, $judged of $total measurements judged"
alarms=$((reg + imp))
pair_alarms=0 pair_judged=0 pooled_alarms=0 pooled_rows=0
for i in $(seq 1 "$n"); do
  "$bin" compare "$out/A/$i.json" "$out/B/$i.json" --format json > "$out/pair$i.json" || true
  read -r reg imp judged total < <(verdicts "$out/pair$i.json")
  pair_alarms=$((pair_alarms + reg + imp))
  pair_judged=$((pair_judged + judged))
  "$bin" compare "$out/A/$i.json" "$out/B/$i.json" --pool-repetitions --format json > "$out/pooled$i.json" || true
  read -r reg imp judged total < <(verdicts "$out/pooled$i.json")
  pooled_alarms=$((pooled_alarms + reg + imp))
  pooled_rows=$((pooled_rows + total))
done
echo "null-compare: $n pairs of single runs: $pair_alarms regressions or improvements, $pair_judged measurements judged (must be 0: one run a side is too few)"
echo "null-compare: the same pairs with --pool-repetitions: $pooled_alarms regressions or improvements in $pooled_rows measurements (repetitions of one run are not independent)"
cat "$out/nvn.txt"
alarms=$((alarms + pair_alarms + pair_judged))
if [ "$alarms" = 0 ]; then
  echo "null-compare: PASS: no false alarm ($n v $n and $n pairs; results in $out)"
else
  echo "null-compare: FAIL: $alarms false alarms (results in $out)"
  exit 1
fi
