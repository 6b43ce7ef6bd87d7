#!/usr/bin/env bash
# Repeated runs of the performance scenarios' quick profile on this machine (not part of CI but
# for its short form; it measures how often a stock kernel's performance verdicts cry wolf): each
# scenario with a `ratio` or `throughput` check (or those named) runs N times on its own, first on
# the machine as it is ("quiet"), then beside ci/noise.sh's cpu-io load (a CPU burner on every
# CPU, a writer of 1 GiB files, an unpacker of 20,000 small files). Prints per scenario and load
# the verdicts (a skip whose performance check was inconclusive counted apart, with its reason;
# "perf inc.": runs in which any performance check was inconclusive) and the spread of each ratio; exits 1 when any run failed or errored. Run as root from the
# repository root after `cargo build --release`:
#
#   ci/perf-runs.sh [N] [SCENARIO...]          # default 20 runs, every performance scenario
#   PERF_LOADS=quiet ci/perf-runs.sh 3 reclaim-parallel-read     # CI's short form
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
shift || true
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  mapfile -t scenarios < <(grep -lE '^kind = "(ratio|throughput)"' scenarios/*.toml | xargs -n1 basename | sed 's/\.toml$//')
fi
loads=${PERF_LOADS:-quiet cpu-io}
[ "$(id -u)" = 0 ] || { echo "ci/perf-runs.sh must run as root"; exit 1; }
bin=target/release/memcgtest
[ -x "$bin" ] || { echo "build first: cargo build --release"; exit 2; }
out=$(mktemp -d)
noise=""
finish() {
  if [ -n "$noise" ]; then kill "$noise" 2>/dev/null || true; wait "$noise" 2>/dev/null || true; fi
  rm -rf "$out"
}
trap finish EXIT

t0=$SECONDS
for load in $loads; do
  case "$load" in
    quiet) ;;
    cpu-io)
      NOISE=cpu-io NOISE_HOLD=86400 ci/noise.sh > "$out/noise.log" 2>&1 &
      noise=$!
      # The load is up once noise.sh says it holds it.
      for _ in $(seq 1 120); do grep -q "holding the load" "$out/noise.log" && break; sleep 1; done
      grep -q "holding the load" "$out/noise.log" || { cat "$out/noise.log"; echo "perf-runs: the load did not start"; exit 2; }
      ;;
    *) echo "PERF_LOADS: quiet or cpu-io, not $load"; exit 2 ;;
  esac
  for s in "${scenarios[@]}"; do
    for i in $(seq 1 "$n"); do
      set +e
      $bin run --quick --format json "$s" > "$out/$load.$s.$i.json" 2> "$out/$load.$s.$i.err"
      rc=$?
      set -e
      echo "perf-runs: $load $s run $i/$n: exit $rc" >&2
    done
  done
  if [ -n "$noise" ]; then kill "$noise"; wait "$noise" 2>/dev/null || true; noise=""; fi
done
echo "perf-runs: $(( SECONDS - t0 )) s"

python3 - "$out" "$n" <<'PY'
import collections, glob, json, os, re, statistics, sys
out, n = sys.argv[1], int(sys.argv[2])
rows = collections.OrderedDict()
for f in sorted(glob.glob(f"{out}/*.json"), key=lambda p: [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", p)]):
    load, scenario = os.path.basename(f).split(".")[:2]
    r = rows.setdefault((scenario, load), {"verdicts": collections.Counter(), "ratios": collections.defaultdict(list), "why": []})
    try:
        d = json.load(open(f))
    except Exception as e:
        r["verdicts"]["error"] += 1
        r["why"].append(f"unreadable report: {e}")
        continue
    for sc in d["scenarios"]:
        perf = [c for c in sc.get("checks", []) if c.get("performance")]
        status = sc["status"]
        if status == "skip" and any(c.get("outcome") == "inconclusive" for c in perf):
            status = "skip (inconclusive)"
        r["verdicts"][status] += 1
        if any(c.get("outcome") == "inconclusive" for c in perf):
            r["verdicts"]["perf inconclusive"] += 1
        if sc["status"] in ("fail", "error") or status == "skip (inconclusive)":
            r["why"].append(sc.get("reason", "")[:240])
        for c in perf:
            m = re.match(r"([0-9.]+)", c.get("actual") or "")
            if m and c.get("outcome") in ("pass", "fail"):
                r["ratios"][c["name"]].append(float(m.group(1)))
bad = 0
print(f"\n{'scenario':24} {'load':7} {'pass':>4} {'fail':>4} {'error':>5} {'skip':>4} {'inconcl.':>8} {'perf inc.':>9}  ratios (min / median / max, of judged runs)")
for (scenario, load), r in rows.items():
    v = r["verdicts"]
    bad += v["fail"] + v["error"]
    ratios = "; ".join(f"{name} {min(xs):.2f} / {statistics.median(xs):.2f} / {max(xs):.2f}" for name, xs in r["ratios"].items())
    print(f"{scenario:24} {load:7} {v['pass']:4} {v['fail']:4} {v['error']:5} {v['skip']:4} {v['skip (inconclusive)']:8} {v['perf inconclusive']:9}  {ratios}")
    for why in sorted(set(r["why"]))[:3]:
        print(f"    {why}")
print(f"\nperf-runs: {'PASS' if bad == 0 else 'FAIL'}: {bad} failed or errored runs of {sum(sum(r['verdicts'].values()) for r in rows.values())}")
sys.exit(1 if bad else 0)
PY
