#!/usr/bin/env bash
# The behaviour A/B (`ab --behaviour`) outside CI; docs/ab.md records the figures.
#   ci/ab-behaviour.sh null [N] [v1|v2]   stock 6.12 against itself, the quick suite, 3 rounds
#                                          (6 boots, 12 when the first set finds a candidate),
#                                          N times (default 5): any change reported is a false alarm
#   ci/ab-behaviour.sh mutants [NAME...]  each behaviour mutant below (all by default) against its
#                                          base, with the scenarios that show it: a change must
#                                          be reported (on these mutants the quick suite passes)
#   ci/ab-behaviour.sh sample             CI's sample (exit 1 unless both hold): stock against
#                                          itself on kernel-memory and oom-group-count reports no
#                                          change; percpu-double reports percpu changed
# Run as root from the repository root after `cargo build --release`. Each A/B's report is in
# $MEMCGTEST_CI_OUT/ab-behaviour/LABEL (default /tmp/memcgtest-ci).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MEMCGTEST_BIN:-$PWD/target/release/memcgtest}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/ab-behaviour
mkdir -p "$out"

# NAME LAYOUT KERNEL NEW_APPEND SCENARIOS: the behaviour mutants. KERNEL `schemata` is the mutant
# schemata kernel booted as both sides, the mutant chosen for new by its command line; a patch
# is a reversed upstream fix of the corpus, against stock 6.12.
MUTANTS=(
  "percpu-objcg-uncharged v2 kernel-patches/corpus/percpu-objcg-uncharged.patch - kernel-memory"
  "percpu-double v2 schemata memcg_mutate=stat:percpu:double kernel-memory"
  "slab-unreclaimable-double v2 schemata memcg_mutate=stat:slab_unreclaimable:double kernel-memory"
  "high-events-double v2 schemata memcg_mutate=memevent:high:double memory-high"
  "oom-events-double v2 schemata memcg_mutate=memevent:oom:double oom-group-count"
  "pgscan-khugepaged-double v2 schemata memcg_mutate=event:pgscan_khugepaged:double machine-pressure"
  "kmem-fraction v1 schemata memcg_mutate=counter:kmem:fraction kmem-limit"
)

# ab LABEL LAYOUT BASE NEW NEW_APPEND RUN_ARGS...: one A/B; prints its exit code and its
# changes' count and lines.
ab() {
  local label=$1 layout=$2 base=$3 new=$4 append=$5
  shift 5
  set +e
  "$bin" --cgroup "$layout" ab --base "$base" --new "$new" --new-append "$append" --rounds 3 \
    --behaviour --report "$out/$label" -- run --quick "$@" > "$out/$label.ab" 2> "$out/$label.err"
  local rc=$?
  set -e
  echo "$label: exit $rc, $(changes "$label") change(s); $(grep '^verdict' "$out/$label.ab" || tail -1 "$out/$label.err")"
  { grep '^behaviour changed' "$out/$label.ab" || true; } | head -5 | sed 's/^/  /'
}

# changes LABEL: how many changes that A/B reported.
changes() { grep -c '^behaviour changed' "$out/$1.ab" || true; }

case ${1:-} in
  sample)
    stock=$(ci/build-kernel.sh)
    schemata=$(ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch)
    ab null-sample v2 "$stock" "$stock" "" kernel-memory oom-group-count
    ab percpu-double-sample v2 "$schemata" "$schemata" memcg_mutate=stat:percpu:double kernel-memory
    bad=()
    grep -q '(exit 0)$' "$out/null-sample.ab" || bad+=("the null A/B did not exit 0")
    [ "$(changes null-sample)" = 0 ] || bad+=("the null A/B reported a change (a false alarm)")
    grep -q '(exit 0)$' "$out/percpu-double-sample.ab" || bad+=("the mutant's A/B did not exit 0")
    grep -q '^behaviour changed .*\.percpu ' "$out/percpu-double-sample.ab" ||
      bad+=("stat:percpu:double: no change of percpu reported")
    if [ ${#bad[@]} -gt 0 ]; then
      printf 'ab-behaviour sample: FAIL: %s\n' "${bad[@]}" >&2
      exit 1
    fi
    echo "ab-behaviour sample: PASS"
    ;;
  null)
    n=${2:-5} layout=${3:-v2}
    stock=$(ci/build-kernel.sh)
    for i in $(seq 1 "$n"); do ab "null-$layout-$i" "$layout" "$stock" "$stock" ""; done
    ;;
  mutants)
    shift
    stock=$(ci/build-kernel.sh)
    schemata=$(ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch)
    for m in "${MUTANTS[@]}"; do
      read -r name layout kernel append scenarios <<< "$m"
      if [ $# -gt 0 ] && [[ " $* " != *" $name "* ]]; then continue; fi
      if [ "$kernel" = schemata ]; then
        ab "$name" "$layout" "$schemata" "$schemata" "$append" $scenarios
      else
        image=$(ci/build-kernel.sh "$kernel")
        ab "$name" "$layout" "$stock" "$image" "" $scenarios
      fi
    done
    ;;
  *)
    sed -n '2,14p' "$0" >&2
    exit 2
    ;;
esac
