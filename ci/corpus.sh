#!/usr/bin/env bash
# Corpus matrix: every real upstream memcg fix reversed on 6.12 (kernel-patches/corpus/*.patch),
# each booted by `memcgtest vm` with the whole quick suite under the layout(s) its "Cgroup:"
# header names (both: v2 and v1). A reversed fix is caught when the suite exits 1 with a failing
# check (an error, a panic or a timeout is no diagnosis) and, where its "Caught-by:" header names a
# scenario, that scenario is among the failures, its failure naming the fix ("[guards <id>]": the
# scenario's `fixes` tag). A patch with a "Not-caught:" header is one the suite is known to miss;
# the header says why (a race the VM cannot make likely, an effect no file shows) and the matrix
# reports it as missed, not as a failure of the matrix, unless the suite now catches it (then
# the header is stale).
#
#   ci/corpus.sh                                 every reversed fix, whole quick suite
#   MEMCGTEST_CORPUS_SAMPLE="a b" ci/corpus.sh   only these (ci/test.sh's sample)
#   MEMCGTEST_CORPUS_NAMED=1                     run only the scenarios "Caught-by:" names (fast)
#
# Prints a table (reversed fix, upstream commit, layout, what failed, tag named, seconds) and
# one verdict line; docs/corpus.md holds the last full table. Run as root from the repository
# root after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MEMCGTEST_BIN:-$PWD/target/release/memcgtest}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/corpus
sample=${MEMCGTEST_CORPUS_SAMPLE:-}
named=${MEMCGTEST_CORPUS_NAMED:-0}
rm -rf "$out"
mkdir -p "$out"
header() { sed -n "s/^$1: *//p" "$2" | head -1; }

for n in $sample; do
  [ -f "kernel-patches/corpus/$n.patch" ] || { echo "corpus: no reversed fix $n in kernel-patches/corpus/"; exit 2; }
done
rows=()
ok=1 total=0 caught=0 missed=0
problems=()
for p in kernel-patches/corpus/*.patch; do
  name=$(basename "$p" .patch)
  [ -z "$sample" ] || [[ " $sample " == *" $name "* ]] || continue
  fix=$(header Fix "$p")
  commit=${fix%% *}
  [[ "$commit" =~ ^[0-9a-f]{12}$ ]] || { echo "corpus: $p: no Fix: <12 hex digits> (\"subject\") header"; exit 2; }
  want=$(header Caught-by "$p" | tr -d ' ')
  not=$(header Not-caught "$p")
  case "$(header Cgroup "$p")" in
    v1*) layouts=(v1) ;;
    both*) layouts=(v2 v1) ;;
    *) layouts=(v2) ;;
  esac
  names=()
  [ "$named" = 1 ] && [ -n "$want" ] && names=(${want//,/ })
  kernel=$(ci/build-kernel.sh "$p")
  for cg in "${layouts[@]}"; do
    label=$name-$cg
    total=$((total + 1))
    echo "corpus: $label (${names[*]:-the quick suite})" >&2
    t0=$SECONDS
    set +e
    "$bin" --cgroup "$cg" vm --kernel "$kernel" --console-log "$out/$label.console" --report "$out/$label" \
      -- run --quick --format ktap "${names[@]}" > "$out/$label.ktap" 2> "$out/$label.err"
    rc=$?
    set -e
    secs=$((SECONDS - t0))
    # A failed check, or a step the kernel made fail (an error blamed on the kernel: only those
    # carry the guards tag), in a scenario that guards this fix.
    failed=$( { sed -n 's/^# \([a-z0-9-]*\): failed: .*/\1/p' "$out/$label.ktap"
      sed -n "s/^# \([a-z0-9-]*\): error: .*\[guards .*$commit.*/\1/p" "$out/$label.ktap"; } | sort -u | tr '\n' ' ')
    first=$(grep -m1 -E "^# [a-z0-9-]*: (failed:|error: .*\[guards .*$commit)" "$out/$label.ktap" | cut -c3-160 || true)
    tagged=no
    grep -qE "^# [a-z0-9-]*: (failed|error): .*\[guards .*$commit" "$out/$label.ktap" && tagged=yes
    verdict=missed
    if [ "$rc" = 1 ] && [ -n "$failed" ]; then
      verdict=caught
      if [ -n "$want" ]; then
        hit=0
        for s in ${want//,/ }; do [[ " $failed " == *" $s "* ]] && hit=1; done
        [ $hit = 1 ] || verdict="caught elsewhere"
      fi
    fi
    case "$verdict" in
      caught) caught=$((caught + 1))
              [ -z "$not" ] || problems+=("$label: caught, but its Not-caught: header says it is missed (stale)")
              [ $tagged = yes ] || problems+=("$label: caught, but no failure names fix $commit") ;;
      missed) missed=$((missed + 1))
              [ -n "$not" ] || problems+=("$label: not caught (exit $rc; $(grep -c '^ok ' "$out/$label.ktap" || true) scenarios ok)") ;;
      *) problems+=("$label: $verdict: failed $failed, not ${want//,/ }") ;;
    esac
    rows+=("$(printf '%-28s %-12s %-3s %-8s %-5s %4s  %s' "$name" "$commit" "$cg" "${verdict%% *}" "$tagged" "$secs" "${first:-${not:+missed: $not}}")")
  done
done
[ "$total" -gt 0 ] || { echo "corpus: no reversed fixes ran"; exit 2; }
printf '\n%-28s %-12s %-3s %-8s %-5s %4s  %s\n' "reversed fix" "upstream" "cg" "verdict" "tag" "s" "first failure (or why missed)"
for r in "${rows[@]}"; do echo "$r"; done
for p in "${problems[@]}"; do echo "corpus: $p"; done
echo "corpus: $caught of $total caught ($((100 * caught / total)) %), $missed missed; reports in $out"
[ ${#problems[@]} = 0 ] || { echo "corpus: FAIL"; exit 1; }
echo "corpus: PASS"
