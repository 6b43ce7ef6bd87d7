#!/usr/bin/env bash
# VM tests: the quick suite in Debian's 6.1 cloud kernel and in the project's 6.12 kernel, under
# cgroup v2 and v1, plus the VM runner's failure modes (panic, hang, not a kernel).
# Run as root from the repository root after `cargo build --release`: ci/vm-tests.sh
# Reports (KTAP, JSON, JUnit, KCIDB, index.html and its screenshot index.png, CSV, SVG) and console
# logs go to $MEMCGTEST_CI_OUT (default /tmp/memcgtest-ci).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}
mkdir -p "$out"
log() { printf '\n=== [%s] %s\n' "$(date +%T)" "$*"; }
fail() { echo "vm-tests: FAIL: $*"; exit 1; }

need=()
command -v qemu-system-x86_64 >/dev/null || need+=(qemu-system-x86)
command -v mkfs.ext4 >/dev/null || need+=(e2fsprogs)
command -v debugfs >/dev/null || need+=(e2fsprogs)
command -v cpio >/dev/null || need+=(cpio)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

log "kernels"
mapfile -t deb < <(ci/fetch-debian-kernel.sh)
stock=$(ci/build-kernel.sh)
echo "debian: ${deb[0]} (modules ${deb[1]})"
echo "built:  $stock"

# Usage: suite NAME CGROUP KERNEL [vm options...]
suite() {
  local name=$1 cg=$2 kernel=$3; shift 3
  log "quick suite: $name, cgroup $cg"
  set +e
  "$bin" --cgroup "$cg" vm --kernel "$kernel" "$@" --console-log "$out/$name-$cg.console" \
    --report "$out/$name-$cg" -- run --quick --format ktap | tee "$out/$name-$cg.ktap"
  local rc=${PIPESTATUS[0]}
  set -e
  echo "exit code: $rc"
  [ "$rc" = 0 ] || fail "$name under cgroup $cg exited $rc"
  grep -q "^# Totals: pass:[1-9]" "$out/$name-$cg.ktap" || fail "$name/$cg: nothing passed"
  cmp "$out/$name-$cg.ktap" "$out/$name-$cg/results.ktap" || fail "$name/$cg: stdout and the report's results.ktap differ"
}
suite debian-6.1 v2 "${deb[0]}" --modules "${deb[1]}"
suite debian-6.1 v1 "${deb[0]}" --modules "${deb[1]}"
suite linux-6.12 v2 "$stock"
log "the VM run's report as CI systems read it (JUnit, kcidb-io, headless Chromium)"
ci/check-report.sh "$out/linux-6.12-v2"
suite linux-6.12 v1 "$stock"

log "explore in the 6.12 kernel, cgroup v2: generated cases for 2 minutes (seed 1), none may fail"
set +e
"$bin" --cgroup v2 vm --kernel "$stock" --report "$out/explore-6.12-v2" -- explore --seed 1 --budget 2m --shrink-time 2m --format ktap > "$out/explore-6.12-v2.ktap"
rc=$?
set -e
cat "$out/explore-6.12-v2/explore/summary.txt" || true
[ "$rc" = 0 ] || fail "explore in 6.12 v2 exited $rc"

log "coverage of the memcg interface by the quick suite (6.12, v2 and v1): at least 90 %"
ci/coverage.sh

log "contracts of the cgroup memory docs judged by the quick suite (6.12, v2 and v1): at least 90 %"
ci/contracts.sh

log "the move rate of a task holding 2 GiB (full size, 6.12, cgroup v1, 4 GiB guest)"
set +e
"$bin" --cgroup v1 vm --kernel "$stock" --memory 4G --swap 0 -- run move-charge-anon --format ktap > "$out/move-2g.ktap"
rc=$?
set -e
grep -E "moved task|^(not )?ok" "$out/move-2g.ktap"
[ "$rc" = 0 ] || fail "move-charge-anon (2 GiB) exited $rc"

log "a kernel panic is a failure (exit 1, 'kernel panic')"
set +e
"$bin" vm --kernel "$stock" --selftest panic -- run > /dev/null 2> "$out/panic.err"
rc=$?
set -e
tail -3 "$out/panic.err"
[ "$rc" = 1 ] || fail "panic: exit $rc, expected 1"
grep -q "kernel panic" "$out/panic.err" || fail "panic: no 'kernel panic' in the reason"

log "a hung guest is a failure (exit 1, 'timeout') within --timeout plus a few seconds"
start=$(date +%s)
set +e
"$bin" vm --kernel "$stock" --selftest hang --timeout 20s -- run > /dev/null 2> "$out/hang.err"
rc=$?
set -e
took=$(( $(date +%s) - start ))
tail -2 "$out/hang.err"
[ "$rc" = 1 ] || fail "hang: exit $rc, expected 1"
grep -q "timeout" "$out/hang.err" || fail "hang: no 'timeout' in the reason"
[ "$took" -le 30 ] || fail "hang: took ${took}s with --timeout 20s"

log "not a kernel: exit 125 with a clear message"
set +e
"$bin" vm --kernel "$bin" -- run > /dev/null 2> "$out/notkernel.err"
rc=$?
set -e
cat "$out/notkernel.err"
[ "$rc" = 125 ] || fail "not a kernel: exit $rc, expected 125"
grep -q "not a bootable x86 kernel image" "$out/notkernel.err" || fail "not a kernel: unclear message"

log "ab: a guest --format is a usage error (2) before any boot; a base that is not a kernel is 125"
set +e
"$bin" ab --base "$stock" --new "$stock" -- run --format json > /dev/null 2> "$out/ab-usage.err"
rc=$?
"$bin" ab --base "$bin" --new "$stock" -- run fault-overhead --quick > "$out/ab-notkernel.out" 2> "$out/ab-notkernel.err"
rc2=$?
set -e
cat "$out/ab-usage.err" "$out/ab-notkernel.err"
[ "$rc" = 2 ] || fail "ab with a guest --format: exit $rc, expected 2"
grep -q "without --format" "$out/ab-usage.err" || fail "ab with a guest --format: unclear message"
[ "$rc2" = 125 ] || fail "ab with a base that is not a kernel: exit $rc2, expected 125"
grep -q "not a bootable x86 kernel image" "$out/ab-notkernel.err" || fail "ab with a base that is not a kernel: unclear message"

left=$(find /var/tmp -maxdepth 1 -name 'memcgtest-[0-9]*' 2>/dev/null || true)
[ -z "$left" ] || fail "leftover work directories: $left"
echo "vm-tests: all passed"
