#!/usr/bin/env bash
# The contracts of the cgroup memory documentation: which promises of cgroup-v2.rst and
# cgroup-v1/memory.rst a check judged in the quick suite of ci/vm-tests.sh (its results under
# $MEMCGTEST_CI_OUT, default /tmp/memcgtest-ci), and how each came out. Fails when the results
# judge less than 90 % of the promises of the versions they ran under. With --write it also
# regenerates docs/contracts.md from those results (then commit it).
# Run from the repository root after ci/vm-tests.sh: ci/contracts.sh [--write]
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}
results=(--results "$out/linux-6.12-v2/results.json" --results "$out/linux-6.12-v1/results.json")
"$bin" contracts "${results[@]}" > "$out/contracts.txt"
head -1 "$out/contracts.txt"
if [ "${1:-}" = --write ]; then
  {
    "$bin" contracts "${results[@]}" --format markdown
    printf '\nGenerated %s on %s (%s) by `ci/contracts.sh --write` from the quick suite of `ci/vm-tests.sh`.\n' \
      "$(date -u +%Y-%m-%d)" "$(hostname)" "$(nproc) CPUs, qemu TCG"
  } > docs/contracts.md
  echo "contracts: wrote docs/contracts.md"
fi
"$bin" contracts "${results[@]}" --require 90 > /dev/null
echo "contracts: at least 90 % of the promises judged by the quick suite (table: $out/contracts.txt)"
