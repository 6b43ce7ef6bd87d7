#!/usr/bin/env bash
# Detection matrix: the stock 6.12 kernel and every mutant in kernel-patches/, each booted by
# `memcgtest vm`. The stock kernel runs the whole quick suite MEMCGTEST_STOCK_RUNS times (default
# 1) under cgroup v2 and v1; each mutant runs only the scenarios its "Caught-by:" header names
# (quick; cgroup v2 unless its "Cgroup:" header says v1), so CI stays short, and where its "Check:"
# header names a check kind, that check must be among those that failed; a mutant with a
# "Caught-by-ab:" header instead runs `memcgtest ab` stock vs it (4 rounds, quick). ci/stock-runs.sh
# repeats the stock runs alone (MEMCGTEST_MUTANTS=0) for the README's 3/3 figures. With
# MEMCGTEST_STOCK_KTAP_DIR (ci/test.sh) the first stock runs are ci/vm-tests.sh's quick suites
# there (linux-6.12-v2.ktap, -v1.ktap), when they are newer than the binary and the kernel.
# Prints a kernel x scenario table ('-' = not run) and one verdict line.
# Fails unless the stock kernel passes every scenario in each of its runs (a scenario that needs
# one version is n/a in the other; a flaky pass counts as a failure; a known failure, xfail, is
# what a scenario with a [[known]] entry for the stock kernel must give) and every mutant fails the
# scenario(s) its header names. Run as root from the repository root after `cargo build --release`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$PWD/target/release/memcgtest
runs=${MEMCGTEST_STOCK_RUNS:-1}
mutants=${MEMCGTEST_MUTANTS:-1}
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/matrix
rm -rf "$out"
mkdir -p "$out"

# MEMCGTEST_STOCK=debian: the stock runs boot Debian's 6.1 cloud kernel instead (stock-runs.sh).
vm_args=()
if [ "${MEMCGTEST_STOCK:-6.12}" = debian ]; then
  mapfile -t deb < <(ci/fetch-debian-kernel.sh)
  stock=${deb[0]}
  vm_args=(--modules "${deb[1]}")
  stock_name="Debian $(basename "$stock" | sed 's/^vmlinuz-//')"
else
  stock=$(ci/build-kernel.sh)
  stock_name="$(make -s -C "${MEMCGTEST_KERNEL_WORK:-/var/cache/memcgtest-ci}/linux-6.12" kernelversion 2>/dev/null)"
fi
scenarios=$("$bin" list | awk '/^[a-z]/ {print $1}')

# Runs the quick suite (or the NAMES given after the cgroup version) on KERNEL, saving
# LABEL.ktap, the console and the report directory.
suite() {
  local kernel=$1 label=$2 cg=${3:-v2}
  shift 3
  echo "matrix: $label (cgroup $cg) ${*:-all scenarios}" >&2
  local t0=$SECONDS
  set +e
  "$bin" --cgroup "$cg" vm --kernel "$kernel" "${vm_args[@]}" --console-log "$out/$label.console" --report "$out/$label" \
    -- run --quick --format ktap "$@" > "$out/$label.ktap" 2> "$out/$label.err"
  echo $? > "$out/$label.rc"
  set -e
  echo "matrix: $label took $((SECONDS - t0)) s" >&2
}

# The status of SCENARIO in LABEL.ktap: pass, skip, xfail (a known failure: the scenario's
# [[known]] entry matched, run exits 0), FAIL, ERROR or '-' (did not run); "n/a" is a skip
# because the scenario needs the other cgroup version, "n/a-kernel" one because the kernel lacks
# what it needs: every reason of the skip (they are joined by "; ") says so (Debian's 6.1 cannot
# reset memory.peak, has no swappiness= in memory.reclaim, cannot collapse a file without
# READ_ONLY_THP_FOR_FS). A skip with any other reason stays a skip.
lacks() {
  local part
  [ -n "$1" ] || return 1
  while IFS= read -r part; do
    grep -qE "this kernel (cannot|does not have|has no|refused|declined)|not available on this kernel" <<< "$part" || return 1
  done < <(sed 's/; /\n/g' <<< "$1")
}
status() {
  local f s=$2 reason
  f=$(last_ktap "$1" "$s")
  reason=$(sed -n "s/^ok [0-9]* $s # SKIP //p" "$f" 2>/dev/null | head -1 || true)
  if grep -qE "^ok [0-9]+ $s # SKIP needs cgroup" "$f"; then echo n/a
  elif lacks "$reason"; then echo n/a-kernel
  elif grep -qE "^ok [0-9]+ $s # SKIP" "$f"; then echo skip
  elif grep -qE "^ok [0-9]+ $s\$" "$f"; then echo pass
  elif grep -qE "^not ok [0-9]+ $s # XFAIL" "$f"; then echo xfail
  elif grep -qE "^# $s: error:" "$f"; then echo ERROR
  elif grep -qE "^not ok [0-9]+ $s\$" "$f"; then echo FAIL
  else echo -; fi
}

# The scenarios of stock LABEL whose performance verdict was withheld because other processes
# (on the guest or on the host beside it) used the CPUs: booted again alone, at most twice. Such a
# skip is not a pass: the stock kernel must still show that it passes them, or the matrix fails.
retry_busy() {
  local label=$1 cg=$2 try busy s
  for try in 1 2; do
    busy=()
    for s in $scenarios; do
      if [ "$(status "$label" "$s")" = skip ] &&
         grep -qE "^ok [0-9]+ $s # SKIP .*the machine was busy during" "$(last_ktap "$label" "$s")"; then
        busy+=("$s")
      fi
    done
    [ ${#busy[@]} -gt 0 ] || return 0
    echo "matrix: $label: ${busy[*]} withheld a verdict for a busy machine; booting again ($try of 2)" >&2
    suite "$stock" "$label-again$try" "$cg" "${busy[@]}"
  done
}
# LABEL's ktap that ran SCENARIO last: a stock scenario skipped for a busy machine and booted
# again (retry_busy) counts by its last run.
last_ktap() {
  local f="$out/$1.ktap" again
  for again in "$out/$1-again1.ktap" "$out/$1-again2.ktap"; do
    grep -qE "^(not )?ok [0-9]+ $2( |\$)" "$again" 2>/dev/null && f=$again
  done
  echo "$f"
}

sample=${MEMCGTEST_MATRIX_SAMPLE:-}
for n in $sample; do [ -f "kernel-patches/$n.patch" ] || { echo "matrix: no mutant $n in kernel-patches/"; exit 2; }; done
labels=()
for i in $(seq 1 "$runs"); do
  for cg in v2 v1; do
    # MEMCGTEST_STOCK_KTAP_DIR (ci/test.sh): ci/vm-tests.sh's quick suites of the same binary on
    # the same stock 6.12 (linux-6.12-v2.ktap, -v1.ktap, each required to exit 0 there) are the
    # first stock runs, not booted again.
    given=${MEMCGTEST_STOCK_KTAP_DIR:-}/linux-6.12-$cg.ktap
    if [ "$i" = 1 ] && [ -n "${MEMCGTEST_STOCK_KTAP_DIR:-}" ] && [ "${MEMCGTEST_STOCK:-6.12}" = 6.12 ] &&
       [ -s "$given" ] && [ "$given" -nt "$bin" ] && [ "$given" -nt "$stock" ]; then
      echo "matrix: stock-$cg-1 is ci/vm-tests.sh's run ($given)" >&2
      cp "$given" "$out/stock-$cg-1.ktap"
      echo 0 > "$out/stock-$cg-1.rc"
    else
      suite "$stock" "stock-$cg-$i" "$cg"
    fi
    retry_busy "stock-$cg-$i" "$cg"
    labels+=("stock-$cg-$i")
  done
done
vm_args=()
declare -A catches checks
ab_mutants=()
# MEMCGTEST_MATRIX_SAMPLE="a b ...": only these mutants run (ci/test.sh's sample); unset: all.
for p in kernel-patches/*.patch; do
  [ "$mutants" = 1 ] || break
  name=$(basename "$p" .patch)
  [ -z "$sample" ] || [[ " $sample " == *" $name "* ]] || continue
  # A mutant only a comparison with the stock kernel can see (a cost, not a wrong count):
  # `memcgtest ab` stock vs it on the scenarios its "Caught-by-ab:" header names must exit 1 with
  # a regression. The scenarios run in full, not --quick: quick's fault loops of a fraction of a
  # second vary from boot to boot in TCG by as much as the mutant's cost (docs/ab.md).
  ab_names=$(sed -n 's/^Caught-by-ab: *//p' "$p" | tr -d ' ')
  if [ -n "$ab_names" ]; then
    kernel=$(ci/build-kernel.sh "$p")
    # The base is the 6.12 the mutant patches, also when the stock runs were Debian's.
    base=$(ci/build-kernel.sh)
    echo "matrix: $name: ab stock vs it, ${ab_names//,/ }" >&2
    t0=$SECONDS
    set +e
    "$bin" --cgroup v2 ab --base "$base" --new "$kernel" --report "$out/$name" \
      -- run ${ab_names//,/ } > "$out/$name.ab" 2> "$out/$name.err"
    echo $? > "$out/$name.rc"
    set -e
    echo "matrix: $name took $((SECONDS - t0)) s" >&2
    ab_mutants+=("$name")
    continue
  fi
  catches[$name]=$(sed -n 's/^Caught-by: *//p' "$p" | tr -d ' ')
  checks[$name]=$(sed -n 's/^Check: *//p' "$p" | tr -d ' ')
  [ -n "${catches[$name]}" ] || { echo "matrix: $p has no Caught-by: header"; exit 1; }
  cg=$(sed -n 's/^Cgroup: *\(v[12]\).*/\1/p' "$p")
  kernel=$(ci/build-kernel.sh "$p")
  suite "$kernel" "$name" "${cg:-v2}" ${catches[$name]//,/ }
  labels+=("$name")
done

ok=1
problems=()
printf '\n%-22s' "kernel \\ scenario"
for s in $scenarios; do printf ' %-20s' "$s"; done
printf ' %s\n' "exit"
for l in "${labels[@]}"; do
  printf '%-22s' "$l"
  for s in $scenarios; do
    st=$(status "$l" "$s")
    mark=""
    case "$l" in
      stock-*) [[ "$st" = pass || "$st" = n/a || "$st" = n/a-kernel || "$st" = xfail ]] || { ok=0; problems+=("$l: $s is $st on the stock kernel"); } ;;
      *) if [[ ",${catches[$l]}," == *",$s,"* ]]; then
           mark="*"
           [ "$st" = FAIL ] || { ok=0; problems+=("$l: not caught by a check of $s ($st; an error or timeout is no diagnosis)"); }
           if [ "$st" = FAIL ] && [ -n "${checks[$l]}" ] &&
              ! grep -qE "^# $s: failed: (.*; )?${checks[$l]}\(" "$out/$l.ktap"; then
             ok=0; problems+=("$l: $s failed, but not by ${checks[$l]}: $(grep -m1 "^# $s: failed:" "$out/$l.ktap")")
           fi
         fi ;;
    esac
    printf ' %-20s' "$st$mark"
  done
  printf ' %s\n' "$(cat "$out/$l.rc")"
done
echo "(* = the scenario the mutant's Caught-by: header names; n/a = needs the other cgroup version; n/a-kernel = this kernel lacks what it needs; reports in $out)"
# What failed, for each mutant: the checks named (the Check: header's must be among them).
for l in "${labels[@]}"; do
  case "$l" in stock-*) continue ;; esac
  grep -h "^# [a-z0-9-]*: failed:" "$out/$l.ktap" | cut -c1-220 | sed "s/^# /$l: /"
done
for m in "${ab_mutants[@]}"; do
  n=$(grep -c "REGRESSION\$" "$out/$m.ab" || true)
  echo "$m (ab, stock vs it): exit $(cat "$out/$m.rc"), $n regressions"
  awk '/REGRESSION$/ {print "  " $0}' "$out/$m.ab"
  # Caught: exit 1 with a regression (the new kernel failing a scenario the base passed also
  # exits 1, but is not the comparison this mutant is here to prove).
  grep "^verdict:" "$out/$m.ab" | sed 's/^/  /'
  [ "$(cat "$out/$m.rc")" = 1 ] && [ "$n" -gt 0 ] || { ok=0; problems+=("$m: ab found no regression (see $out/$m.ab)"); }
done
lacking=()
for s in $scenarios; do
  passed=0 nak=0
  for i in $(seq 1 "$runs"); do
    for cg in v2 v1; do
      case "$(status "stock-$cg-$i" "$s")" in
        pass | xfail) passed=$((passed+1)) ;;
        n/a-kernel) nak=$((nak+1)) ;;
      esac
    done
  done
  [ $nak = 0 ] || lacking+=("$s ($nak runs)")
  [ $((passed + nak)) -ge "$runs" ] || { ok=0; problems+=("$s passed only $passed times on the stock kernel"); }
done
for p in "${problems[@]}"; do echo "matrix: $p"; done
if [ $ok = 1 ]; then
  caught="every mutant${sample:+ of the sample ($(wc -w <<< "$sample"))} was caught by a check of its scenario"
  [ "$mutants" = 1 ] || caught="mutants not run"
  echo "matrix: PASS: stock $stock_name passed every scenario $runs/$runs times under v2 and v1; $caught"
  [ ${#lacking[@]} = 0 ] || echo "matrix: n/a on this kernel (it lacks what they need): ${lacking[*]}"
else
  echo "matrix: FAIL"
  exit 1
fi
