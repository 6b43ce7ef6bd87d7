#!/usr/bin/env bash
# The test command: installs what it needs, checks formatting and lints, runs the unit tests and the
# root integration tests on this machine's real cgroups, then the whole suite as a user would and
# checks its report the way CI systems read it (ci/check-report.sh), the performance scenarios'
# quick profile 3 times each (ci/perf-runs.sh's short form), then what memcgtest gives the
# tools around it (ci/check-ecosystem.sh), then the VM suites, a patch series gated patch by patch
# (ci/series.sh), the kill matrix's sample (ci/mutate.sh), the CI examples' jobs (ci/run-examples.sh), the detection matrix and a sample of the regression corpus (ci/corpus.sh).
# Reports (with index.png, the page's screenshot) go to $MEMCGTEST_CI_OUT (default /tmp/memcgtest-ci).
# Run as root from the repository root: ci/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."

# Each stage's line carries the minutes since the start, and the end lists each stage's time (the
# CI budget is 45 minutes; docs/ci.md has the figures).
ci_start=$(date +%s)
stage_start=$ci_start
stage_name=""
stages=()
end_stage() {
  [ -n "$stage_name" ] && stages+=("$(printf '%4d s  %s' $(( $(date +%s) - stage_start )) "${stage_name:0:90}")")
  stage_start=$(date +%s)
}
log() {
  end_stage
  stage_name=$*
  printf '\n=== [%d:%02d] %s\n' $(( (stage_start - ci_start) / 60 )) $(( (stage_start - ci_start) % 60 )) "$*"
}
stage_times() {
  end_stage
  echo "stage times (total $(( $(date +%s) - ci_start )) s):"
  printf '  %s\n' "${stages[@]}"
}

need_pkgs=()
command -v mkfs.ext4 >/dev/null || need_pkgs+=(e2fsprogs)
command -v setpriv >/dev/null || need_pkgs+=(util-linux)
if [ ${#need_pkgs[@]} -gt 0 ]; then
  log "installing ${need_pkgs[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need_pkgs[@]}" >/dev/null
fi
rustup component list --installed 2>/dev/null | grep -q '^clippy' || rustup component add clippy rustfmt

log "cargo fmt --check"
cargo fmt --all -- --check
log "cargo clippy -D warnings"
cargo clippy --release --all-targets -- -D warnings
log "no function over 100 lines outside tests, no source file over 800 lines"
ci/longest-fns.sh --check

log "unit and integration tests (root, real cgroups)"
[ "$(id -u)" = 0 ] || { echo "ci/test.sh must run as root (the integration tests create cgroups)"; exit 1; }
# One test at a time: the root tests run real workloads whose paired measurements are judged
# only while the rest of the machine is quiet (a sibling test would make them inconclusive).
cargo test --release -- --include-ignored --test-threads=1 2>&1 | tee /tmp/memcgtest-cargo-test.log
grep -q "test result: ok" /tmp/memcgtest-cargo-test.log

log "the suite on this machine's kernel"
bin=target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}
$bin env
report=$out/host-report
rm -rf "$report"
mkdir -p "$report"
set +e
$bin run --format ktap --report "$report"
rc=$?
set -e
echo "memcgtest run exit code: $rc"
$bin cleanup
left=$(find /sys/fs/cgroup -maxdepth 8 -type d -name 'memcgtest-[0-9]*' 2>/dev/null || true)
[ -z "$left" ] || { echo "leftover test cgroups: $left"; exit 1; }
[ "$rc" = 0 ] || exit 1

log "the performance scenarios' quick profile, 3 runs each on this quiet machine: none may fail (ci/perf-runs.sh's short form; 20 runs quiet and beside a load is the command docs/benchmarks.md records)"
PERF_LOADS=quiet ci/perf-runs.sh 3

log "explore on this machine's kernel: 8 generated cases (seed 1), none may fail (known failures, such as 6.18 v1's memsw.failcnt, are not failures)"
set +e
$bin explore --seed 1 --cases 8 --shrink-time 1m --out "$out/explore-host" --format ktap > "$out/explore-host.ktap"
rc=$?
set -e
cat "$out/explore-host/summary.txt" || true
left=$(find /sys/fs/cgroup -maxdepth 8 -type d -name 'memcgtest-[0-9]*' 2>/dev/null || true)
[ -z "$left" ] || { echo "explore left test cgroups: $left"; exit 1; }
[ "$rc" = 0 ] || { echo "explore exited $rc"; exit 1; }

log "that run's report as CI systems read it: results.xml (XML parser), kcidb.json (kcidb-io), index.html (headless Chromium)"
ci/check-report.sh "$report"

log "LAVA and CI examples (YAML), completions, man page, cargo install, the progress display (tmux)"
ci/check-ecosystem.sh

log "the suite in VMs: Debian 6.1 and the project's 6.12 kernel, cgroup v1 and v2"
ci/vm-tests.sh

log "series: a 6-patch series on Debian's 6.12 as a git repository (the dirty-accounting mutant third) as a range and as an mbox, a patch that does not build, an mbox that does not apply"
ci/series.sh

log "the kill matrix's fixed sample: the mutant schemata kernel with no mutant (the quick suite green under v2), 11 v2 and 4 v1 mutants, each killed by a message naming its field"
ci/mutate.sh

log "behaviour A/B sample: stock 6.12 against itself (kernel-memory, oom-group-count) reports no change; the schemata kernel's stat:percpu:double reports percpu changed"
ci/ab-behaviour.sh sample

log "the CI examples run as GitLab CI and GitHub Actions would, the stock 6.12 kernel as base and candidate: vm jobs and an ab verdict each"
ci/run-examples.sh

# A fixed sample of the mutants, one or two per family of checks and both cgroup versions; the
# whole matrix (every mutant, the A/B one too) is `ci/matrix.sh` (docs/detection.md).
sample="dirty-accounting dirty-migration writeback-accounting file-leak limit-slack peak-watermark
  limit-events reclaim-uncharge-serial high-unthrottled oom-kill-event swap-max-ignored
  kernel-stack-double protection-ignored move-charge threshold-down-silent"
log "detection matrix: the stock 6.12 kernel (ci/vm-tests.sh's quick suites above) and a sample of 15 mutants of kernel-patches/"
MEMCGTEST_STOCK_KTAP_DIR=$out MEMCGTEST_MATRIX_SAMPLE="$sample" ci/matrix.sh

# A sample of the regression corpus (real upstream fixes reversed on 6.12), each booted with the
# scenarios its Caught-by: header names; the whole corpus with the whole quick suite is
# `ci/corpus.sh` (docs/corpus.md).
log "regression corpus sample: reversed upstream fixes, each caught by the scenario that guards it, its failure naming the fix"
MEMCGTEST_CORPUS_NAMED=1 MEMCGTEST_CORPUS_SAMPLE="reclaim-overshoot high-ancestor-unthrottled low-excess-not-counted limit-write-pressure slab-large-kmalloc numa-thp-migration high-write-reclaim-first protected-usage-propagation" ci/corpus.sh
stage_times
echo "ci/test.sh: all checks passed"
# The plain closing line: the unit and integration tests' counts (the suites above are all green).
passed=$(grep -oE "test result: ok\. [0-9]+ passed" /tmp/memcgtest-cargo-test.log | awk '{s += $4} END {print s + 0}')
echo "tests: $passed passed, 0 failed"
