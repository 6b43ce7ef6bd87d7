#!/usr/bin/env bash
# Noise benchmark (not part of CI: it measures, it does not gate): runs this machine's quick suite
# N times while a background writer, in a cgroup of its own outside the run, writes and deletes
# 1 GiB files in a loop, and prints how often each scenario passed. Nothing a verdict depends on
# may come from that writer. Run as root from the repository root:
#
#   ci/noise.sh [N]                          # N runs (default 5)
#   MEMCGTEST_NO_CACHESTAT=1 ci/noise.sh 3   # the fallback (machine-wide counters) under noise
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-5}
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
out=$(mktemp -d)
writer=""
finish() {
  [ -n "$writer" ] && kill "$writer" 2>/dev/null && wait "$writer" 2>/dev/null || true
  rm -rf "$wdir" "$out"
  rmdir "$wgroup" 2>/dev/null || true
}
trap finish EXIT

(
  echo $BASHPID > "$wgroup/cgroup.procs"
  while :; do
    dd if=/dev/zero of="$wdir/f" bs=1M count=1024 status=none
    rm -f "$wdir/f"
  done
) &
writer=$!
sleep 1
echo "background writer $writer in $wgroup writing 1 GiB files to $wdir"
$bin env | grep -E '^(accounting oracle|other writers)'

for i in $(seq 1 "$n"); do
  set +e
  $bin run --quick --format json > "$out/run$i.json" 2> "$out/run$i.err"
  rc=$?
  set -e
  echo "run $i/$n: exit $rc"
done

python3 - "$out" "$n" <<'EOF'
import json, sys, glob, collections
out, n = sys.argv[1], int(sys.argv[2])
counts = collections.defaultdict(collections.Counter)
reasons = {}
for f in sorted(glob.glob(f"{out}/run*.json")):
    try:
        d = json.load(open(f))
    except Exception as e:
        print(f"{f}: unreadable: {e}")
        continue
    for s in d["scenarios"]:
        counts[s["name"]][s["status"]] += 1
        if s["status"] not in ("pass",) and s.get("reason"):
            reasons.setdefault(s["name"], s["reason"][:300])
print(f"\n{'scenario':26} pass  fail  skip  error  (of {n})")
bad = 0
for name, c in counts.items():
    print(f"{name:26} {c['pass']:4}  {c['fail']:4}  {c['skip']:4}  {c['error']:5}")
    bad += c["fail"] + c["error"]
for name, r in reasons.items():
    print(f"  {name}: {r}")
print(f"\nnoise: {'PASS' if bad == 0 else 'FAIL'}: {bad} failed or errored scenario runs")
EOF
