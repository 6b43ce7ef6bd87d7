#!/usr/bin/env bash
# `memcgtest series` end to end on Debian's linux-source-6.12 as a git repository:
#   1. a 6-patch series as a range, the dirty-accounting mutant of kernel-patches/ third, a
#      harmless code patch after it, gated head first (--strategy head, the default above 3
#      patches): exit 1, "first bad patch:" names the mutant after 4 runs (base, head, two
#      bisection steps), the check that caught it is listed, the patch before it green;
#   2. the same series as an mbox (git format-patch) into the same output directory: the same
#      table, nothing built or booted again (what is built and run is keyed by the commit's tree);
#      then as a range with --strategy every: the same first bad patch in 7 runs (3 new boots);
#   3. a series whose second patch does not compile: exit 1, the compiler's error lines;
#   4. an mbox whose patch does not apply to the base: exit 2, the patch named.
# The repository and the builds are kept under $MEMCGTEST_KERNEL_WORK/series (a cache, like
# ci/build-kernel.sh's); the runs of step 1 are removed first, so every boot runs again.
# Cold (no cache): 6.5 min on this 2-CPU machine (the base's full build 4-5 min; making the
# repository ~2 min more); warm (builds kept, every boot again): under 2 min.
# Run as root from the repository root: ci/series.sh
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
bin=$repo/target/release/memcgtest
work=${MEMCGTEST_KERNEL_WORK:-/var/cache/memcgtest-ci}/series
tree=$work/linux
out=$work/out-ci
log() { echo "series: $*" >&2; }
fail() { echo "series: FAIL: $*" >&2; exit 1; }
mkdir -p "$work"
# ci/build-kernel.sh (run by ci/vm-tests.sh before) installed the kernel build's tools.
command -v patch >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq patch; }

# Debian's tree as a repository (its .gitignore, which ignores everything at the top for the
# Debian packaging, cut to the kernel's own), tagged base.
if ! git -C "$tree" rev-parse -q --verify base >/dev/null 2>&1; then
  log "making $tree a git repository of /usr/src/linux-source-6.12.tar.xz"
  rm -rf "$tree" "$work/linux-source-6.12"
  tar -xf /usr/src/linux-source-6.12.tar.xz -C "$work"
  mv "$work/linux-source-6.12" "$tree"
  sed -i '/^# Debian packaging/,$d' "$tree/.gitignore"
  git -C "$tree" init -q -b master
  git -C "$tree" add -A
  git -C "$tree" -c user.name=Debian -c user.email=debian-kernel@lists.debian.org \
    commit -qm "Debian linux-source-6.12"
  git -C "$tree" tag base
fi
export GIT_AUTHOR_NAME="memcgtest ci" GIT_AUTHOR_EMAIL=ci@memcgtest.invalid
export GIT_COMMITTER_NAME="memcgtest ci" GIT_COMMITTER_EMAIL=ci@memcgtest.invalid
export GIT_AUTHOR_DATE="2026-12-05T12:00:00Z" GIT_COMMITTER_DATE="2026-12-05T12:00:00Z"

# The series (made again each time, the same commits: fixed dates and names).
commit() { git -C "$tree" commit -qam "$1" ${2:+-m "$2"}; }
git -C "$tree" checkout -q -f -B ci-series base
sed -i 's|^static bool consume_stock(|/* The per-CPU stock: pages charged ahead to one memcg. */\n&|' "$tree/mm/memcontrol.c"
commit "mm: memcontrol: say what the per-CPU stock holds"
sed -i '0,/^  memory.current$/s//  memory.current (the page counter)/' "$tree/Documentation/admin-guide/cgroup-v2.rst"
commit "Documentation: cgroup-v2: memory.current is the page counter"
patch -d "$tree" -p1 -s < kernel-patches/dirty-accounting.patch
commit "mm: page-writeback: account odd-index dirty folios on the node only" \
  "The dirty-accounting mutant of memcgtest (kernel-patches/dirty-accounting.patch)."
sed -i 's|^void folio_account_cleaned(|/* Undo what folio_account_dirtied() counted. */\n&|' "$tree/mm/page-writeback.c"
commit "mm: page-writeback: comment folio_account_cleaned()"
sed -i 's|^unsigned long try_to_free_mem_cgroup_pages(|/* Reclaim from a memcg and its descendants. */\n&|' "$tree/mm/vmscan.c"
commit "mm: vmscan: comment try_to_free_mem_cgroup_pages()"
printf '\nThe usage files are page counters.\n' >> "$tree/Documentation/admin-guide/cgroup-v1/memory.rst"
commit "Documentation: cgroup-v1: the usage files are page counters"
git -C "$tree" checkout -q -f base

guest=(-- run --quick dirty-accounting shmem-accounting)
rm -f "$out"/patches/*/v2-*.json
start=$(date +%s)
set +e
"$bin" series --tree "$tree" --range base..ci-series --output "$out" "${guest[@]}" > "$out.range.txt"
rc=$?
set -e
cat "$out.range.txt"
log "range: exit $rc in $(( $(date +%s) - start )) s"
[ "$rc" = 1 ] || fail "range: exit $rc, expected 1"
grep -q "^first bad patch: [0-9a-f]\{12\} mm: page-writeback: account odd-index dirty folios on the node only$" "$out.range.txt" \
  || fail "range: the mutant is not named the first bad patch"
grep -q "^  #3 [0-9a-f]\{12\}: dirty-accounting (v2) " "$out.range.txt" || fail "range: no check of dirty-accounting turned red at #3"
grep -Eq "^ +2  .* green " "$out.range.txt" || fail "range: patch 2 is not green"
[ "$(grep -c ' BAD ' "$out.range.txt")" = 1 ] || fail "range: more than one patch blamed"
# 6 patches: --strategy head by default. The base and the head (6, red), then bisection: 3 (red),
# 2 (green): 4 runs where every patch takes 7.
grep -q "^strategy head: 4 runs (4 booted now, 0 recorded before); every patch: 7 runs$" "$out.range.txt" \
  || fail "range: not the head strategy's 4 runs"
python3 - "$out/series.json" "$out/kcidb.json" <<'EOF'
import json, sys
rep = json.load(open(sys.argv[1]))
assert rep["first_bad"] == 3, rep["first_bad"]
assert [p["verdict"] for p in rep["patches"]] == ["base", "not-booted", "green", "bad", "not-booted", "not-booted", "still-red"], [p["verdict"] for p in rep["patches"]]
assert rep["strategy"] == "head" and rep["cost"] == {"runs": 4, "booted": 4, "every": 7}, rep["cost"]
k = json.load(open(sys.argv[2]))
assert len(k["checkouts"]) == 7 and len(k["builds"]) == 7, (len(k["checkouts"]), len(k["builds"]))
print("series.json and kcidb.json: 7 patches, first bad #3")
EOF
venv=${MEMCGTEST_VENV:-/var/cache/memcgtest-ci/venv}
if "$venv/bin/python" -c 'import kcidb_io' 2>/dev/null; then
  "$venv/bin/python" - "$out/kcidb.json" <<'EOF'
import json, sys
import kcidb_io
data = json.load(open(sys.argv[1]))
kcidb_io.schema.LATEST.validate(data)
assert len(set(t["id"] for t in data["tests"])) == len(data["tests"]), "duplicate test ids"
print(f"kcidb.json: valid (kcidb-io), {len(data['builds'])} builds, {len(data['tests'])} tests")
EOF
else
  log "kcidb-io is not installed in $venv (ci/check-report.sh installs it): kcidb.json not validated"
fi

git -C "$tree" format-patch -q --stdout base..ci-series > "$work/ci-series.mbox"
start=$(date +%s)
set +e
"$bin" series --tree "$tree" --mbox "$work/ci-series.mbox" --base base --output "$out" "${guest[@]}" > "$out.mbox.txt" 2> "$out.mbox.err"
rc=$?
set -e
log "mbox: exit $rc in $(( $(date +%s) - start )) s"
[ "$rc" = 1 ] || { cat "$out.mbox.err"; fail "mbox: exit $rc, expected 1"; }
# The same table: the commit ids differ (git am makes new commits), nothing else; its 4 runs
# were all recorded by the range's.
strip() { sed -E 's/[0-9a-f]{12}//g; /^strategy /d' "$1"; }
diff <(strip "$out.range.txt") <(strip "$out.mbox.txt") || fail "mbox: another table than the range's"
if grep -E ": (building|booting)$" "$out.mbox.err"; then fail "mbox: built or booted again"; fi
grep -q "^strategy head: 4 runs (0 booted now, 4 recorded before)" "$out.mbox.txt" || fail "mbox: runs not reused"

# Every patch booted (the 3 the head strategy did not boot now, the rest recorded): the same first
# bad patch, in 7 runs.
set +e
"$bin" series --tree "$tree" --range base..ci-series --output "$out" --strategy every "${guest[@]}" > "$out.every.txt" 2>/dev/null
rc=$?
set -e
cat "$out.every.txt"
[ "$rc" = 1 ] || fail "every: exit $rc, expected 1"
grep -q "^first bad patch: [0-9a-f]\{12\} mm: page-writeback: account odd-index dirty folios on the node only$" "$out.every.txt" \
  || fail "every: another first bad patch than the head strategy's"
grep -q "^strategy every: 7 runs (3 booted now, 4 recorded before); every patch: 7 runs$" "$out.every.txt" \
  || fail "every: not 7 runs, 3 of them new"
for i in 1 2; do
  grep -Eq "^ +$i  .* green " "$out.every.txt" || fail "every: patch $i is not green"
done
for i in 4 5 6; do
  grep -Eq "^ +$i  .* still red " "$out.every.txt" || fail "every: patch $i is not still red"
done

# A patch that does not build (after one that does: both of the base's and patch 1's work reused).
git -C "$tree" checkout -q -f -B ci-broken ci-series~5
sed -i 's|^static bool consume_stock(|static int memcgtest_ci_broken = ;\n&|' "$tree/mm/memcontrol.c"
commit "mm: memcontrol: a patch that does not compile"
git -C "$tree" checkout -q -f base
set +e
"$bin" series --tree "$tree" --range base..ci-broken --output "$out" "${guest[@]}" > "$out.broken.txt" 2>/dev/null
rc=$?
set -e
cat "$out.broken.txt"
[ "$rc" = 1 ] || fail "broken: exit $rc, expected 1"
grep -q "BUILD FAILED" "$out.broken.txt" || fail "broken: no BUILD FAILED"
grep -q "mm/memcontrol.c:[0-9]*:[0-9]*: error: " "$out.broken.txt" || fail "broken: the compiler's error line is not shown"

# An mbox that does not apply to the base: its patch changes the comment patch 1 added.
git -C "$tree" checkout -q -f -B ci-stale ci-series
sed -i 's|^/\* The per-CPU stock: pages charged ahead to one memcg. \*/$|/* The per-CPU stock: pages charged ahead to one memcg, used up first. */|' "$tree/mm/memcontrol.c"
commit "mm: memcontrol: say how the per-CPU stock is used"
git -C "$tree" checkout -q -f base
git -C "$tree" format-patch -q --stdout ci-stale~1..ci-stale > "$work/ci-stale.mbox"
set +e
"$bin" series --tree "$tree" --mbox "$work/ci-stale.mbox" --base base --output "$out" "${guest[@]}" > "$out.stale.txt" 2>/dev/null
rc=$?
set -e
cat "$out.stale.txt"
[ "$rc" = 2 ] || fail "does not apply: exit $rc, expected 2"
grep -q "^patch 1 does not apply: mm: memcontrol: say how the per-CPU stock is used" "$out.stale.txt" \
  || fail "does not apply: the patch is not named"
log "PASS"
