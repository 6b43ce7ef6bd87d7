#!/usr/bin/env bash
# The kill matrix's fixed sample in CI (docs/mutate.md): the mutant schemata kernel
# (kernel-patches/schemata/memcg-mutate.patch, built and cached by ci/build-kernel.sh):
#   1. v2, no mutant chosen: the quick suite green (the patch with nothing chosen is the stock
#      kernel), then SAMPLE_V2, one boot each: every one killed, its killing message naming the
#      field;
#   2. v1: SAMPLE_V1 the same, on the quick suite's v1 results of ci/vm-tests.sh (no baseline boot);
#   3. coverage reads the matrix: the proven column and the headline.
# Every boot runs again (a fresh output directory). 5-6 min on this 2-CPU machine (TCG,
# 2026-12-05).
# Run as root from the repository root after ci/vm-tests.sh: ci/mutate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}
dir=$out/mutate
log() { echo "mutate: $*" >&2; }
fail() { echo "mutate: FAIL: $*" >&2; exit 1; }
rm -rf "$dir"
mkdir -p "$dir"
kernel=$(ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch)

# Each kind and fault, the new invariants' mutants among them (usage-covers' LRU sum:
# inactive_anon double, where every new anonymous page starts; active_anon double is not in the
# sample: its kill depends on refaults being activated, which varies between boots (stop 61's CI
# boot activated 11 and 3 of 4096 refaults in swap-out and was killed by
# change(s.workingset_activate_anon), a check that does not name the field; five boots here
# activated them all and were killed by usage-covers(s)); hierarchy((top)): a statistic not
# passed up, file_mapped and file_dirty local; within-node: pgscan_direct double; hierarchy's flush moment under v1: shmem local;
# the migration path's per-node moves in two-node guests: placed and numa-stat, numa-migration);
# each killed in the full matrix by a wide margin (a kill by a hair would be flaky).
SAMPLE_V2=(
  stat:file_dirty:drop
  stat:anon:leak
  stat:inactive_anon:double
  stat:file_mapped:local
  stat:file_dirty:local
  event:pgfault:double
  memevent:oom_kill:drop
  memevent:oom_kill:double
  counter:memory:double
  counter:swap:double
  event:pgscan_direct:double
  migrate:shmem:fraction
  migrate:file_dirty:drop
)
SAMPLE_V1=(
  stat:file_writeback:drop
  stat:shmem:leak
  counter:memsw:double
  stat:shmem:local
)

judge() { # $1 matrix file, $2 how many mutants it must hold
  python3 - "$1" "$2" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
want = int(sys.argv[2])
es = m["entries"]
bad = [e for e in es if e["fate"] != "killed" or not e["names_field"]]
for e in es:
    mt = e["mutant"]
    print(f'  {mt["kind"]}:{mt["item"]}:{mt["mode"]}: {e["fate"]} in {e["seconds"]:.0f} s by {e.get("scenario")} {e.get("check")}: {e["message"][:120]}')
if len(es) != want:
    sys.exit(f"{len(es)} mutants in the matrix, not {want}")
# A mutant that escaped is read from here: its whole message, its scenarios and the end of its
# guest's console (the CI log keeps only its tail).
import os
for e in bad:
    mt = e["mutant"]
    name = f'{mt["kind"]}-{mt["item"]}-{mt["mode"]}'
    print(f'escaped: {name}: fate {e["fate"]}, scenarios {e["scenarios"]}, by {e.get("scenario")} {e.get("check")}: {e["message"]}')
    console = os.path.join(os.path.dirname(sys.argv[1]), m.get("cgroup", "v2"), name + ".console")
    if os.path.exists(console):
        print(f'escaped: the last lines of {console}:')
        print("".join(open(console, errors="replace").readlines()[-25:]))
if bad:
    sys.exit("not killed, or killed by a message that does not name the field: " + ", ".join(f'{e["mutant"]["item"]}:{e["mutant"]["mode"]}' for e in bad))
EOF
}

args=()
for m in "${SAMPLE_V2[@]}"; do args+=(--mutant "$m"); done
log "v2: no mutant (the quick suite must pass), then ${#SAMPLE_V2[@]} mutants"
start=$SECONDS
"$bin" --cgroup v2 mutate --kernel "$kernel" --output "$dir" "${args[@]}" > "$dir/v2.txt" 2> "$dir/v2.err" \
  || { tail -20 "$dir/v2.err"; fail "mutate v2 exited $?"; }
tail -1 "$dir/v2.txt"
judge "$dir/matrix-v2.json" "${#SAMPLE_V2[@]}" || fail "v2 sample"
log "v2 in $((SECONDS - start)) s"

args=()
for m in "${SAMPLE_V1[@]}"; do args+=(--mutant "$m"); done
log "v1: ${#SAMPLE_V1[@]} mutants on ci/vm-tests.sh's v1 results"
start=$SECONDS
"$bin" --cgroup v1 mutate --kernel "$kernel" --output "$dir" --results "$out/linux-6.12-v1/results.json" \
  "${args[@]}" > "$dir/v1.txt" 2> "$dir/v1.err" || { tail -20 "$dir/v1.err"; fail "mutate v1 exited $?"; }
tail -1 "$dir/v1.txt"
judge "$dir/matrix-v1.json" "${#SAMPLE_V1[@]}" || fail "v1 sample"
log "v1 in $((SECONDS - start)) s"

# The proven column from the sample's matrix: file_dirty is proven for drop.
"$bin" coverage --results "$out/linux-6.12-v2/results.json" --matrix "$dir/matrix-v2.json" > "$dir/coverage.txt"
grep -q '% proven' "$dir/coverage.txt" || fail "coverage's headline names no share proven"
grep -E '^memory.stat:file_dirty ' "$dir/coverage.txt" | grep -q ' drop' \
  || fail "coverage's proven column of memory.stat:file_dirty lacks drop"
echo "mutate: PASS"
