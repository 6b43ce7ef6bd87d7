#!/bin/sh
# Runs memcgtest's quick suite and reports each scenario to LAVA with lava-test-case
# (pass, fail, skip; a scenario that could not finish is fail, its reason in the log above).
# Called by ci/lava/memcgtest.yaml; runs anywhere (without LAVA it prints what it would report).
# Usage: memcgtest-lava.sh MEMCGTEST CGROUP SCRATCH REPORT_DIR ORIGIN [SCENARIO...]
set -u
bin=$1 cgroup=$2 scratch=$3 report=$4 origin=$5
shift 5
case_result() {
  if command -v lava-test-case >/dev/null; then lava-test-case "$@"; else echo "lava-test-case $*"; fi
}
"$bin" env
"$bin" --cgroup "$cgroup" --scratch "$scratch" run --quick "$@" --format ktap \
  --origin "$origin" --report "$report" > /tmp/memcgtest.ktap
rc=$?
cat /tmp/memcgtest.ktap
echo "memcgtest exit code: $rc"
# KTAP: "ok N name", "ok N name # SKIP reason", "not ok N name", and "not ok N name # XFAIL
# issue" for a known failure (LAVA has no such result: skip).
awk '/^ok [0-9]+ / { print $3, (/ # SKIP/ ? "skip" : "pass") }
     /^not ok [0-9]+ / { print $4, (/ # XFAIL/ ? "skip" : "fail") }' /tmp/memcgtest.ktap |
  while read -r name result; do
    case_result "memcgtest-$name" --result "$result"
  done
# The run as a whole: 0 pass, 1 a kernel fault, 125 could not test here.
case $rc in
  0) case_result memcgtest --result pass ;;
  1) case_result memcgtest --result fail ;;
  *) case_result memcgtest --result skip ;;
esac
"$bin" cleanup
exit 0
