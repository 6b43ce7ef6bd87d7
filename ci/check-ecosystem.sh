#!/usr/bin/env bash
# What memcgtest gives the tools around it, checked quickly (about 30 s once built):
#   - ci/lava/*.yaml and ci/examples/*.yml parse as YAML (PyYAML in the CI virtualenv), and
#     ci/run-examples.sh --dry-run plans the examples' jobs (ci/test.sh runs them after the VM tests);
#   - the LAVA wrapper script is valid sh;
#   - `memcgtest completions` prints scripts bash accepts (bash -n), for every shell clap_complete
#     knows; `memcgtest man` prints a roff page naming every subcommand;
#   - `cargo install --path .` installs a binary that runs (reusing the release build);
#   - the progress display: on a terminal (tmux) a live line with k/N, phase, elapsed and ETA,
#     cleared at the end; nothing on stderr when it is not a terminal; stdout free of escapes.
# Run as root from the repository root after `cargo build --release`: ci/check-ecosystem.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${MEMCGTEST_BIN:-$PWD/target/release/memcgtest}
fail() { echo "check-ecosystem: FAIL: $*"; exit 1; }
venv=${MEMCGTEST_VENV:-/var/cache/memcgtest-ci/venv}

need=()
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v tmux >/dev/null || need+=(tmux)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

echo "--- YAML: LAVA definition and CI examples"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
if "$venv/bin/python" -c 'import yaml' 2>/dev/null || "$venv/bin/pip" install -q --disable-pip-version-check pyyaml; then
  "$venv/bin/python" - ci/lava/*.yaml ci/examples/*.yml <<'EOF'
import sys, yaml
for f in sys.argv[1:]:
    d = yaml.safe_load(open(f))
    assert isinstance(d, dict) and d, f"{f}: not a mapping"
    print(f"{f}: ok ({', '.join(str(k) for k in list(d)[:4])}, ...)")
lava = yaml.safe_load(open("ci/lava/memcgtest.yaml"))
assert lava["metadata"]["format"] == "Lava-Test Test Definition 1.0"
assert any("memcgtest-lava.sh" in s for s in lava["run"]["steps"])
EOF
  # The examples' jobs as ci/run-examples.sh will run them (after the VM tests): every key and
  # ${{ }} expression known to the runner, each example with an ab job.
  MEMCGTEST_VENV=$venv ci/run-examples.sh --dry-run | grep '^run-examples:'
else
  echo "check-ecosystem: SKIP YAML parse: PyPI is unreachable (no PyYAML)"
fi
sh -n ci/lava/memcgtest-lava.sh

echo "--- completions and man page"
for sh in bash zsh fish elvish powershell; do
  "$bin" completions "$sh" > "/tmp/memcgtest-completion.$sh"
  grep -q "memcgtest" "/tmp/memcgtest-completion.$sh" || fail "completions $sh: empty"
done
bash -n /tmp/memcgtest-completion.bash || fail "completions bash: not valid bash"
bash -c 'source /tmp/memcgtest-completion.bash && complete -p memcgtest' >/dev/null || fail "bash completion does not register"
"$bin" man > /tmp/memcgtest.1
grep -q '^\.TH memcgtest 1' /tmp/memcgtest.1 || fail "man: no .TH header"
for cmd in env list check run vm ab compare cleanup completions man; do
  grep -qw -- "$cmd" /tmp/memcgtest.1 || fail "man page does not name $cmd"
done
echo "completions for 5 shells, man page $(wc -l < /tmp/memcgtest.1) lines"

echo "--- cargo install --path ."
root=$(mktemp -d)
CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target} cargo install --quiet --path . --root "$root" --locked
"$root/bin/memcgtest" --version | grep -q '^memcgtest ' || fail "installed binary does not run"
echo "installed: $("$root/bin/memcgtest" --version)"
rm -rf "$root"

echo "--- progress display"
out=$(mktemp) err=$(mktemp) screen=$(mktemp)
"$bin" run dirty-accounting --quick > "$out" 2> "$err" || fail "dirty-accounting --quick failed"
[ ! -s "$err" ] || { cat "$err"; fail "progress written to a stderr that is not a terminal"; }
tmux kill-session -t memcgtest-progress 2>/dev/null || true
tmux new-session -d -s memcgtest-progress -x 120 -y 30 \
  "$bin run dirty-accounting mmap-dirty --quick > $out; echo EXIT=\$? ; sleep 60"
seen=
for _ in $(seq 1 100); do
  sleep 0.2
  tmux capture-pane -p -t memcgtest-progress > "$screen"
  grep -qE '^\[[12]/2\] [a-z-]+ \| phase .* elapsed \| ETA' "$screen" && seen=1
  grep -q '^EXIT=' "$screen" && break
done
tmux capture-pane -p -t memcgtest-progress > "$screen"
tmux kill-session -t memcgtest-progress
cat "$screen" | sed '/^$/d'
[ -n "$seen" ] || fail "no live status line ([k/N] scenario | phase ... elapsed | ETA) seen on the terminal"
grep -q '^EXIT=0' "$screen" || fail "the run in tmux failed"
grep -q '^mmap-dirty: pass' "$screen" || fail "no scenario end line"
# The last screen has no status line left: it was cleared.
! grep -q 'elapsed | ETA' "$screen" || fail "the status line was not cleared at the end"
! grep -q $'\e' "$out" || fail "escape sequences on stdout"
grep -q "2 passed" "$out" || fail "stdout lacks the results"
rm -f "$out" "$err" "$screen"
echo "check-ecosystem: all passed"
