#!/usr/bin/env bash
# The coverage of the memcg interface: which fields of 6.12's memory.stat, memory.events(.local),
# memory.swap.*, memory.numa_stat and limit files an invariant judged while they moved, in the
# quick suite of ci/vm-tests.sh (its results under $MEMCGTEST_CI_OUT, default /tmp/memcgtest-ci).
# Fails when less than 90 % of them are covered under cgroup v2 or v1. With --write it also
# regenerates docs/coverage.md from those results (then commit it).
# Run from the repository root after ci/vm-tests.sh: ci/coverage.sh [--write]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}
results=(--results "$out/linux-6.12-v2/results.json" --results "$out/linux-6.12-v1/results.json")
"$bin" coverage "${results[@]}" > "$out/coverage.txt"
grep '^cgroup' "$out/coverage.txt"
if [ "${1:-}" = --write ]; then
  {
    "$bin" coverage "${results[@]}" --format markdown
    printf '\nGenerated %s on %s (%s) by `ci/coverage.sh --write` from the quick suite of `ci/vm-tests.sh`.\n' \
      "$(date -u +%Y-%m-%d)" "$(hostname)" "$(nproc) CPUs, qemu TCG"
  } > docs/coverage.md
  echo "coverage: wrote docs/coverage.md"
fi
"$bin" coverage "${results[@]}" --require 90 > /dev/null
echo "coverage: at least 90 % covered under v2 and v1 (table: $out/coverage.txt)"
