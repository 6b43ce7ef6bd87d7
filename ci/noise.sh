#!/usr/bin/env bash
# Noise benchmark (not part of CI: it measures, it does not gate): runs this machine's quick suite
# (or the scenarios given) N times beside a load in a cgroup of its own outside the run, and
# prints how often each scenario passed, failed, was skipped (inconclusive skips of the
# performance checks counted apart) or errored. Nothing a verdict depends on may come from that
# load. Two loads:
#   writer  (default): a background writer writes and deletes 1 GiB files in a loop;
#   cpu-io  (NOISE=cpu-io): a CPU burner on every CPU, the writer, and an unpacker that unpacks a
#           tarball of 20,000 small files and deletes them, over and over (page cache churn).
#   build   (NOISE=build): the writer and a kernel build (Debian's linux-source-6.12 unpacked
#           into the load's directory, tinyconfig, make -j CPUs, make clean, over and over), as a
#           developer's machine is while they try the suite (issue 52).
# NOISE_PROFILE=full runs the scenarios' full profile (the README's main job, `run`), not --quick.
# Run as root from the repository root:
#
#   ci/noise.sh [N] [SCENARIO...]            # N runs (default 5), the writer
#   NOISE=cpu-io ci/noise.sh 30 dirty-migration fault-overhead reclaim-parallel-read
#   MEMCGTEST_NO_CACHESTAT=1 ci/noise.sh 3   # the fallback (machine-wide counters) under noise
#   MEMCGTEST_RUN_ARGS=--require-performance NOISE=cpu-io ci/noise.sh 3 fault-overhead
#   NOISE=cpu-io NOISE_HOLD=600 ci/noise.sh &   # only the load, for 10 minutes (a VM beside it)
#   NOISE=build NOISE_PROFILE=full ci/noise.sh 5 # the main job 5 times beside a kernel build
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
shift || true
scenarios=("$@")
mode=${NOISE:-writer}
case "$mode" in writer|cpu-io|build) ;; *) echo "NOISE must be writer, cpu-io or build"; exit 2 ;; esac
profile=(--quick)
case "${NOISE_PROFILE:-quick}" in quick) ;; full) profile=() ;; *) echo "NOISE_PROFILE must be quick or full"; exit 2 ;; esac
[ "$mode" != build ] || [ -f /usr/src/linux-source-6.12.tar.xz ] || { echo "NOISE=build needs /usr/src/linux-source-6.12.tar.xz (apt-get install linux-source-6.12)"; exit 2; }
[ "$(id -u)" = 0 ] || { echo "ci/noise.sh must run as root"; exit 1; }
cargo build --release -q
bin=target/release/memcgtest

# The writer's group: below our own cgroup (v1 memory hierarchy, else cgroup2), never ours.
own=$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup)
if [ -n "$own" ] && [ -d "/sys/fs/cgroup/memory$own" ]; then
  wgroup="/sys/fs/cgroup/memory${own%/}/noise-writer-$$"
else
  own=$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
  wgroup="/sys/fs/cgroup${own%/}/noise-writer-$$"
fi
wdir=$(mktemp -d /var/tmp/noise-writer.XXXXXX)
mkdir "$wgroup"
# Each run's JSON, stderr and report directory (the samples as CSV) stay in $MEMCGTEST_CI_OUT/noise
# (default /tmp/memcgtest-ci/noise).
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/noise
rm -rf "$out"
mkdir -p "$out"
loads=()
finish() {
  for p in "${loads[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${loads[@]}"; do wait "$p" 2>/dev/null || true; done
  # Their children (a dd, a tar mid-unpack) live on in the group: kill them too before the
  # files go, or rm races an unpacker.
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    pids=$(cat "$wgroup/cgroup.procs" 2>/dev/null || true)
    [ -n "$pids" ] || break
    kill -9 $pids 2>/dev/null || true
    sleep 0.2
  done
  rm -rf "$wdir"
  rmdir "$wgroup" 2>/dev/null || true
}
trap finish EXIT
# A TERM (ci/perf-runs.sh ending the load it borrowed) ends the hold at once, the load with it.
trap 'exit 143' TERM
trap 'exit 130' INT

# in_group CMD...: runs CMD in the load's group, in the background.
in_group() {
  ( echo $BASHPID > "$wgroup/cgroup.procs"; exec "$@" ) &
  loads+=($!)
}
in_group bash -c "while :; do dd if=/dev/zero of='$wdir/f' bs=1M count=1024 status=none; rm -f '$wdir/f'; done"
echo "background writer in $wgroup writing 1 GiB files to $wdir"
if [ "$mode" = cpu-io ]; then
  for _ in $(seq 1 "$(nproc)"); do
    in_group bash -c 'while :; do :; done'
  done
  mkdir -p "$wdir/src"
  for d in $(seq 1 20); do
    mkdir -p "$wdir/src/$d"
    for f in $(seq 1 1000); do echo "$d $f" > "$wdir/src/$d/$f"; done
  done
  tar -cf "$wdir/files.tar" -C "$wdir" src
  rm -rf "$wdir/src"
  in_group bash -c "while :; do mkdir -p '$wdir/u'; tar -xf '$wdir/files.tar' -C '$wdir/u'; rm -rf '$wdir/u'; done"
  echo "and $(nproc) CPU burners and an unpacker of 20,000 small files, in $wgroup"
fi
if [ "$mode" = build ]; then
  # The build starts once the tree is unpacked (that is load too); each pass from a clean tree.
  in_group bash -c "tar -xf /usr/src/linux-source-6.12.tar.xz -C '$wdir' && cd '$wdir/linux-source-6.12' && make -s tinyconfig >/dev/null && while :; do make -s -j$(nproc) >/dev/null 2>&1; make -s clean; done"
  echo "and a kernel build (tinyconfig, make -j$(nproc), over and over), in $wgroup"
fi
sleep 1
$bin env | grep -E '^(accounting oracle|other writers)'

# NOISE_HOLD=SECONDS: only hold the load that long (for a VM or another command beside it).
if [ -n "${NOISE_HOLD:-}" ]; then
  echo "holding the load for $NOISE_HOLD s"
  sleep "$NOISE_HOLD" &
  loads+=($!)
  wait $! || true
  exit 0
fi

codes=()
for i in $(seq 1 "$n"); do
  set +e
  t0=$SECONDS
  $bin run ${MEMCGTEST_RUN_ARGS:-} "${profile[@]}" --format json --report "$out/report$i" "${scenarios[@]}" > "$out/run$i.json" 2> "$out/run$i.err"
  rc=$?
  set -e
  echo "run $i/$n: exit $rc, $((SECONDS - t0)) s"
  codes+=("$rc")
done
echo "exit codes: ${codes[*]}"

python3 - "$out" "$n" "$mode" <<'EOF'
import json, sys, glob, collections
out, n = sys.argv[1], int(sys.argv[2])
counts = collections.defaultdict(collections.Counter)
reasons = {}
inconclusive = collections.Counter()
for f in sorted(glob.glob(f"{out}/run*.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"{f}: unreadable: {e}")
        continue
    for s in d["scenarios"]:
        counts[s["name"]][s["status"]] += 1
        if s["status"] == "skip" and any(c.get("purpose") and c.get("outcome") == "inconclusive" for c in s.get("checks", [])):
            inconclusive[s["name"]] += 1
        # Checks left inconclusive by a busy machine, in scenarios that passed or skipped.
        for c in s.get("checks", []):
            if c.get("outcome") == "inconclusive":
                counts[s["name"]]["inconclusive checks"] += 1
        if s["status"] not in ("pass",) and s.get("reason"):
            reasons.setdefault(s["name"], s["reason"][:300])
print(f"\n{'scenario':26} pass  fail  skip (inconclusive)  error  inconclusive checks  (of {n})")
bad = 0
for name, c in counts.items():
    print(f"{name:26} {c['pass']:4}  {c['fail']:4}  {c['skip']:4} ({inconclusive[name]:2})        {c['error']:5}  {c['inconclusive checks']:4}")
    bad += c["fail"] + c["error"]
for name, r in reasons.items():
    print(f"  {name}: {r}")
print(f"\nnoise ({sys.argv[3]}): {'PASS' if bad == 0 else 'FAIL'}: {bad} failed or errored scenario runs")
EOF
