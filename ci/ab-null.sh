#!/usr/bin/env bash
# The A/B null test and detection size, outside CI (the README records the figures):
#   1. `memcgtest ab` with the stock 6.12 kernel on both sides, N times (default 5): any
#      regression reported is a false alarm.
#   2. `memcgtest ab` stock vs the charging-cost mutant built with each per-page cost in COSTS
#      (default "1000 500" ns per page per level): which sizes it detects.
# Each ab runs fault-overhead (in full, as the matrix does) in 4 rounds (its default). Run as root from the repository root after
# `cargo build --release`:
#   ci/ab-null.sh [N] [COSTS]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
n=${1:-5}
costs=${2:-1000 500}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/ab-null
rm -rf "$out"
mkdir -p "$out"
stock=$(ci/build-kernel.sh)

# verdicts LABEL [VERDICT...]: how many measurements of that A/B's ab.json ended with one of the
# verdicts (after the second set, when the first found a change: a change must repeat).
verdicts() {
  python3 - "$out/$1/ab.json" "${@:2}" <<'PY'
import json, sys
rows = json.load(open(sys.argv[1]))["rows"]
print(sum(r["verdict"] in sys.argv[2:] for r in rows))
PY
}

# ab BASE NEW LABEL: runs one A/B, prints its exit code and regression count.
ab() {
  set +e
  "$bin" --cgroup v2 ab --base "$1" --new "$2" --report "$out/$3" -- run fault-overhead \
    > "$out/$3.ab" 2> "$out/$3.err"
  local rc=$?
  set -e
  echo "$rc $(verdicts "$3" regression)"
}

alarms=0 untestable=0
for i in $(seq 1 "$n"); do
  read -r rc regs < <(ab "$stock" "$stock" "null-$i")
  echo "ab-null: stock vs stock #$i: exit $rc, $regs regressions, reruns for a busy host: $(grep -c 'booting it again' "$out/null-$i.err" || true), second set: $(grep -c 'more rounds, judged on their own' "$out/null-$i.err" || true)"
  case "$rc" in
    0) ;;
    1) alarms=$((alarms + 1)) ;;
    *) untestable=$((untestable + 1)) ;;
  esac
done
echo "ab-null: false alarms (exit 1): $alarms of $n; runs that could not judge (exit 2 or 125): $untestable"

for c in $costs; do
  p=$out/charging-cost-${c}ns.patch
  sed -e "s/ndelay(1000 \* nr_pages)/ndelay($c * nr_pages)/" -e "s/pays 1 us per page/pays $c ns per page/" \
    kernel-patches/charging-cost.patch > "$p"
  kernel=$(ci/build-kernel.sh "$p")
  read -r rc regs < <(ab "$stock" "$kernel" "cost-$c")
  judged=$(verdicts "cost-$c" regression improvement no-significant-change not-repeated)
  echo "ab-null: stock vs charging-cost at $c ns/page/level: exit $rc, $regs of $judged measurements regressed"
  awk '/REGRESSION$/ {print "  " $0}' "$out/cost-$c.ab"
done
