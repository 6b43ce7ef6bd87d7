#!/usr/bin/env bash
# Explore against mutants: for each mutant (default: 16 across every class of kernel-patches/),
# boot it with `memcgtest vm` and explore (seed $MEMCGTEST_SEED, default 1; budget
# $MEMCGTEST_BUDGET, default 15m; shrink time $MEMCGTEST_SHRINK, default 10m; --first), then
# print one table row per mutant:
# whether a confirmed failure was found, when its case first failed, the shrunk case's size and
# the check that names it. The shrunk case then runs on its own (up to 3 times, until it
# fails; if it never does, up to 3 of the shrinker's larger cases twice each): the row says
# which failed on its own. Explore never starts from the built-in scenarios. Hours of TCG time:
# not part of CI; docs/explore.md records the figures. Run as root from the repository root after
# `cargo build --release`:  ci/explore-mutants.sh [kernel-patches/x.patch ...]
set -euo pipefail
cd "$(dirname "$0")/.."
# MEMCGTEST_BIN: a copy of the binary, so that a build during the hours this runs changes nothing.
bin=${MEMCGTEST_BIN:-$PWD/target/release/memcgtest}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/explore-mutants
seed=${MEMCGTEST_SEED:-1}
budget=${MEMCGTEST_BUDGET:-15m}
shrink=${MEMCGTEST_SHRINK:-10m}
mkdir -p "$out"
if [ $# -eq 0 ]; then
  set -- dirty-accounting writeback-accounting hierarchy-dirty file-accounting anon-accounting \
    shmem-accounting move-charge limit-events limit-slack high-ignored oom-kill-event \
    protection-ignored kernel-stack-double pgfault-double swap-current-half low-events-local
  set -- "${@/#/kernel-patches/}"
  set -- "${@/%/.patch}"
fi

rows=()
for p in "$@"; do
  name=$(basename "$p" .patch)
  kernel=$(ci/build-kernel.sh "$p")
  # Charge moving exists only in cgroup v1: a mutant's "Cgroup:" header chooses the layout.
  cg=$(sed -n 's/^Cgroup: \(v[12]\).*/\1/p' "$p" | head -1)
  cg=${cg:-v2}
  rm -rf "$out/$name"
  echo "=== $name (cgroup $cg, seed $seed, budget $budget)" >&2
  start=$(date +%s)
  set +e
  "$bin" --cgroup "$cg" vm --kernel "$kernel" --report "$out/$name" -- \
    explore --seed "$seed" --budget "$budget" --shrink-time "$shrink" --first --format ktap \
    > "$out/$name.ktap" 2> "$out/$name.err"
  rc=$?
  set -e
  took=$(( $(date +%s) - start ))
  summary=$out/$name/explore/summary.txt
  line=$(grep -E '^  explore-' "$summary" 2>/dev/null | head -1 || true)
  if [ "$rc" = 1 ] && [ -n "$line" ]; then
    check=$(sed -E 's/^  [^:]+: (.*) — first failed.*/\1/' <<<"$line")
    at=$(sed -E 's/.*first failed ([0-9]+) s in.*/\1/' <<<"$line")
    size=$(sed -E 's/.* to ([0-9]+ groups and [0-9]+ steps):.*/\1/' <<<"$line")
    alone=$(sed -E 's/.*\(((it|neither) [^)]*)\)$/\1/' <<<"$line")
    rows+=("| $name | $cg | found | $at s | $size; $alone | $check | $took s |")
  else
    cases=$(head -1 "$summary" 2>/dev/null | sed -E 's/^seed [0-9]+: ([0-9]+ cases in [0-9]+ s).*/\1/' || true)
    rows+=("| $name | $cg | missed (exit $rc; ${cases:-no summary}) | - | - | - | $took s |")
  fi
  echo "${rows[-1]}" >&2
done

echo "| mutant | cgroup | explore (seed $seed, $budget) | first failure after | shrunk case | check | VM run |"
echo "|---|---|---|---|---|---|---|"
printf '%s\n' "${rows[@]}"
found=$(printf '%s\n' "${rows[@]}" | grep -c '| found |' || true)
echo "found $found of ${#rows[@]}"
