#!/usr/bin/env bash
# Runs the CI examples (ci/examples/gitlab-ci.yml, ci/examples/github-actions.yml) as their CI
# systems would, on this machine, against the stock 6.12 kernel as both "base" and "candidate":
# every job's script lines in order (ci/run-examples.py: matrices expanded, jobs ordered by stage
# and needs, the CI's variables set, ${{ }} substituted, uses: steps, package installs and cargo
# build skipped with a note). Every job must exit 0, and each example's `memcgtest ab` job must
# judge the identical pair: exit 0, "no regression", at least one measurement judged.
#
# The pipeline variables keep both examples to about 5 minutes here (2 CPUs, qemu TCG; 5 min 14 s
# on 2026-12-05, docs/ci.md): the vm jobs run two short scenarios instead of the quick suite, the
# A/B runs fault-overhead --quick with 4 rounds, the configuration of ab's null test (docs/ab.md:
# 0 false alarms in its null A/Bs).
# Change them with MEMCGTEST_EXAMPLES_SCENARIOS, MEMCGTEST_EXAMPLES_AB_SCENARIOS and
# MEMCGTEST_EXAMPLES_AB_ROUNDS.
#
# Run as root from the repository root after `cargo build --release`, ci/vm-tests.sh (which
# installs qemu and builds the kernel) and ci/series.sh (whose repository, series and output
# directory the series jobs use): ci/run-examples.sh [--dry-run]
# MEMCGTEST_BIN (default target/release/memcgtest), MEMCGTEST_KERNEL (default: ci/build-kernel.sh's
# stock image), MEMCGTEST_CI_OUT (default /tmp/memcgtest-ci; work directories and job logs go to
# its examples/), MEMCGTEST_VENV (the virtualenv with PyYAML that ci/check-ecosystem.sh uses).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "run-examples: FAIL: $*"; exit 1; }
venv=${MEMCGTEST_VENV:-/var/cache/memcgtest-ci/venv}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/examples

[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -c 'import yaml' 2>/dev/null ||
  "$venv/bin/pip" install -q --disable-pip-version-check pyyaml ||
  fail "no PyYAML in $venv and PyPI is unreachable"

series_work=${MEMCGTEST_KERNEL_WORK:-/var/cache/memcgtest-ci}/series
sets=(
  --set "MEMCGTEST_SCENARIOS=${MEMCGTEST_EXAMPLES_SCENARIOS:-shmem-accounting truncate-dirty}"
  --set "MEMCGTEST_AB_SCENARIOS=${MEMCGTEST_EXAMPLES_AB_SCENARIOS:-fault-overhead}"
  --set "MEMCGTEST_AB_ROUNDS=${MEMCGTEST_EXAMPLES_AB_ROUNDS:-4}"
  # The series jobs gate the first two patches of ci/series.sh's series (green; its mutant is
  # patch 3) in its repository and output directory: their builds and runs are kept there.
  --set "MEMCGTEST_SERIES_TREE=${MEMCGTEST_EXAMPLES_SERIES_TREE:-$series_work/linux}"
  --set "MEMCGTEST_SERIES_BASE=base"
  --set "MEMCGTEST_SERIES_HEAD=ci-series~4"
  --set "MEMCGTEST_SERIES_SCENARIOS=dirty-accounting shmem-accounting"
  --set "MEMCGTEST_SERIES_OUTPUT=$series_work/out-ci"
)

if [ "${1:-}" = --dry-run ]; then
  exec "$venv/bin/python" ci/run-examples.py --dry-run "${sets[@]}"
fi

bin=${MEMCGTEST_BIN:-$PWD/target/release/memcgtest}
[ -x "$bin" ] || fail "no memcgtest binary at $bin (cargo build --release, or set MEMCGTEST_BIN)"
kernel=${MEMCGTEST_KERNEL:-$(ci/build-kernel.sh)}
[ -f "$kernel" ] || fail "no kernel image at $kernel"
# The examples' package installs are skipped: what they install must be here.
for tool in qemu-system-x86_64 mkfs.ext4 debugfs cpio; do
  command -v "$tool" >/dev/null || fail "$tool is missing (ci/vm-tests.sh installs it)"
done

start=$(date +%s)
set +e
"$venv/bin/python" ci/run-examples.py --binary "$bin" --kernel "$kernel" --out "$out" "${sets[@]}"
rc=$?
set -e
echo "run-examples: exit $rc after $(( $(date +%s) - start )) s"
exit "$rc"
