#!/usr/bin/env bash
# Repeated runs of the performance scenarios' quick profile on this machine: how often a stock
# kernel's performance verdicts cry wolf. Each scenario with a `ratio` or `throughput` check (or
# each one named) runs N times on its own, first on the machine as it is ("quiet"), then beside
# ci/noise.sh's cpu-io load (a CPU burner on every CPU, a writer of 1 GiB files, an unpacker of
# 20,000 small files). Prints per scenario and load the verdicts (a skip whose performance check
# was inconclusive counted apart, with its reason; "perf inc.": runs in which any performance
# check was inconclusive) and the spread of each ratio; exits 1 when any run failed or errored,
# 2 when the load died. Each run's JSON stays in $MEMCGTEST_CI_OUT/perf-runs (default
# /tmp/memcgtest-ci). Run as root from the repository root after `cargo build --release`:
#
#   ci/perf-runs.sh [N] [SCENARIO...]          # default 20 runs, every performance scenario
#   PERF_LOADS=quiet ci/perf-runs.sh 3         # CI's short form (about a minute)
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-20}
shift || true
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ci/perf-runs.sh: N must be a positive number of runs, not '$n'"; exit 2; }
scenarios=("$@")
if [ ${#scenarios[@]} -eq 0 ]; then
  mapfile -t scenarios < <(grep -lE '^kind = "(ratio|throughput)"' scenarios/*.toml | xargs -n1 basename | sed 's/\.toml$//')
fi
loads=${PERF_LOADS:-quiet cpu-io}
[ "$(id -u)" = 0 ] || { echo "ci/perf-runs.sh must run as root"; exit 1; }
bin=target/release/memcgtest
[ -x "$bin" ] || { echo "build first: cargo build --release"; exit 2; }
out=${MEMCGTEST_CI_OUT:-/tmp/memcgtest-ci}/perf-runs
rm -rf "$out"
mkdir -p "$out"
noise=""
stop_load() {
  if [ -n "$noise" ]; then kill "$noise" 2>/dev/null || true; wait "$noise" 2>/dev/null || true; fi
  noise=""
}
trap stop_load EXIT
load_alive() { [ -z "$noise" ] || kill -0 "$noise" 2>/dev/null; }

t0=$SECONDS
for load in $loads; do
  case "$load" in
    quiet) ;;
    cpu-io)
      NOISE=cpu-io NOISE_HOLD=86400 ci/noise.sh > "$out/noise.log" 2>&1 &
      noise=$!
      # The load is up once noise.sh says it holds it (it builds the binary first).
      for _ in $(seq 1 600); do
        grep -q "holding the load" "$out/noise.log" && break
        load_alive || break
        sleep 1
      done
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
      load_alive || { cat "$out/noise.log"; echo "perf-runs: the $load load died during run $i of $s"; exit 2; }
    done
  done
  stop_load
done
echo "perf-runs: $(( SECONDS - t0 )) s"

python3 - "$out" $loads <<'PY'
import collections, glob, json, os, re, statistics, sys
out, loads = sys.argv[1], sys.argv[2:]
def run_no(path):
    return int(os.path.basename(path).rsplit(".", 2)[-2])
rows = collections.OrderedDict()
for load in loads:
    for f in sorted(glob.glob(f"{out}/{load}.*.json"), key=lambda p: (os.path.basename(p).split(".")[1], run_no(p))):
        scenario = os.path.basename(f).split(".")[1]
        r = rows.setdefault((scenario, load), {"verdicts": collections.Counter(), "ratios": collections.defaultdict(list), "why": []})
        try:
            d = json.load(open(f))
        except Exception as e:
            r["verdicts"]["error"] += 1
            r["why"].append(f"unreadable report {f}: {e}")
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
runs = sum(sum(n for k, n in r["verdicts"].items() if k != "perf inconclusive") for r in rows.values())
print(f"\nperf-runs: {'PASS' if bad == 0 else 'FAIL'}: {bad} failed or errored runs of {runs} (each run's JSON in {out})")
sys.exit(1 if bad else 0)
PY
