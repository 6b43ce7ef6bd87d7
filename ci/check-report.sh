#!/usr/bin/env bash
# Checks a --report directory the way its consumers read it:
#   results.xml  parsed by Python's XML parser: one testcase per check (plus one per scenario whose
#                status no check explains), as many failures as failed checks;
#   kcidb.json   validated by kcidb-io (PyPI, in a virtualenv) against KCIDB's latest schema;
#   results.ktap parsed by the kernel's KTAP parser (kunit.py parse), nested subtests included;
#   index.html   rendered by headless Chromium: a screenshot (kept as index.png in the directory)
#                that is not blank, and no console error or failed load.
# Usage: ci/check-report.sh DIR
# Installs what it needs (python3-venv, chromium); PyPI unreachable skips the kcidb-io step with a
# message, anything else failing fails. Takes ~15 s once installed.
set -euo pipefail
dir=$(cd "$1" && pwd)
cd "$(dirname "$0")/.."
fail() { echo "check-report: FAIL: $*"; exit 1; }
venv=${MEMCGTEST_VENV:-/var/cache/memcgtest-ci/venv}

need=()
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" fonts-dejavu-core >/dev/null
fi

for f in results.json results.xml kcidb.json index.html results.ktap; do
  [ -s "$dir/$f" ] || fail "$dir/$f is missing or empty"
done

echo "--- results.ktap (the kernel's own KTAP parser, tools/testing/kunit of linux-source-6.12)"
# Each check is a subtest of its scenario (indented two spaces, KTAP's nesting); the parser must
# read every line without an error. (It counts an XFAIL as failed: it does not know the directive.)
# (kunit.py wants to live under tools/testing/kunit: it finds the tree's root from its path.)
kunit=/var/cache/memcgtest-ci/kunit-tool/tools/testing/kunit
if [ ! -f "$kunit/kunit.py" ] && [ -f /usr/src/linux-source-6.12.tar.xz ]; then
  mkdir -p /var/cache/memcgtest-ci/kunit-tool
  tar -xJf /usr/src/linux-source-6.12.tar.xz -C /var/cache/memcgtest-ci/kunit-tool --strip-components=1 \
    --wildcards '*/tools/testing/kunit/*.py'
fi
if [ -f "$kunit/kunit.py" ]; then
  parsed=$(python3 "$kunit/kunit.py" parse "$dir/results.ktap" 2>&1 || true)
  grep -q "Testing complete" <<< "$parsed" || fail "kunit.py parse did not complete: $(tail -3 <<< "$parsed")"
  ! grep -E "\[ERROR\]|Traceback" <<< "$parsed" || fail "kunit.py parse reported errors in results.ktap"
  grep "Testing complete" <<< "$parsed"
else
  echo "check-report: SKIP KTAP parse: no /usr/src/linux-source-6.12.tar.xz"
fi

echo "--- results.xml (JUnit)"
python3 - "$dir" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
res = json.load(open(f"{d}/results.json"))
root = ET.parse(f"{d}/results.xml").getroot()
assert root.tag == "testsuites", root.tag
suites = root.findall("testsuite")
assert len(suites) == len(res["scenarios"]), (len(suites), len(res["scenarios"]))
checks = sum(len(s["checks"]) for s in res["scenarios"])
# A known failure (a check a scenario's [[known]] entry expects to fail here) is a skipped testcase.
failed = sum(1 for s in res["scenarios"] for c in s["checks"] if c["outcome"] == "fail" and not c.get("known"))
known = sum(1 for s in res["scenarios"] for c in s["checks"] if c["outcome"] == "fail" and c.get("known"))
skipped_known = sum(1 for m in root.findall("testsuite/testcase/skipped") if (m.get("message") or "").startswith("known failure"))
assert skipped_known == known, (skipped_known, known)
cases = root.findall("testsuite/testcase")
# A scenario's own testcase names the scenario; the others are its checks.
own = [c for c in cases if c.get("name") == c.get("classname").removeprefix("memcgtest.")]
assert len(cases) - len(own) == checks, (len(cases), len(own), checks)
fails = root.findall("testsuite/testcase/failure")
assert len(fails) >= failed, (len(fails), failed)
assert int(root.get("tests")) == len(cases)
print(f"results.xml: {len(suites)} testsuites, {len(cases)} testcases = {checks} checks + {len(own)} scenario statuses, {len(fails)} failures, {known} known failures (skipped)")
EOF

echo "--- kcidb.json (kcidb-io)"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import kcidb_io, yaml' 2>/dev/null; then
  mkdir -p "$(dirname "$venv")"
  python3 -m venv "$venv"
  if ! "$venv/bin/pip" install -q --disable-pip-version-check kcidb-io pyyaml; then
    # Only an unreachable index is a reason to skip; an install that fails otherwise is a failure.
    if "$venv/bin/pip" download -q --no-deps -d "$(mktemp -d)" kcidb-io >/dev/null 2>&1; then
      fail "pip install kcidb-io failed"
    fi
    echo "check-report: SKIP kcidb-io validation: PyPI is unreachable"
    venv=
  fi
fi
if [ -n "$venv" ]; then
  "$venv/bin/python" - "$dir/kcidb.json" <<'EOF'
import json, sys
import kcidb_io
data = json.load(open(sys.argv[1]))
v = kcidb_io.schema.LATEST
v.validate(data)
assert (data["version"]["major"], data["version"]["minor"]) == (v.major, v.minor), data["version"]
paths = [t["path"] for t in data["tests"]]
assert len(set(t["id"] for t in data["tests"])) == len(paths), "duplicate test ids"
print(f"kcidb.json: valid against KCIDB schema v{v.major}.{v.minor} (kcidb-io), {len(paths)} tests, e.g. {paths[1] if len(paths) > 1 else paths[0]}")
EOF
fi

echo "--- index.html (headless Chromium)"
profile=$(mktemp -d)
log=$(mktemp)
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage
  --disable-background-networking --disable-component-update --disable-sync --no-first-run
  --user-data-dir="$profile" --enable-logging=stderr --v=0)
rm -f "$dir/index.png"
timeout 60 "${chrome[@]}" --window-size=1280,2400 --screenshot="$dir/index.png" "file://$dir/index.html" 2> "$log" >/dev/null \
  || { tail -20 "$log"; fail "chromium exited non-zero"; }
dom=$(timeout 60 "${chrome[@]}" --dump-dom "file://$dir/index.html" 2>> "$log")
rm -rf "$profile"
[ -s "$dir/index.png" ] || fail "no screenshot"
# Console messages from the page are logged as CONSOLE(...) / "Uncaught"; a failed load as ERR_.
if grep -E 'CONSOLE|Uncaught|ERR_FILE_NOT_FOUND|ERR_NAME|Failed to load' "$log"; then
  fail "the page logged errors (above)"
fi
grep -q '<h1>memcgtest' <<< "$dom" || fail "the rendered DOM has no heading"
scenarios=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["scenarios"]))' "$dir/results.json")
rows=$(grep -o '<section id="s-' <<< "$dom" | wc -l)
[ "$rows" = "$scenarios" ] || fail "the page shows $rows scenario sections, results.json has $scenarios"
python3 - "$dir/index.png" <<'EOF'
# Not blank: the PNG decodes and its pixels are not all one colour (stdlib only: zlib + filters).
import struct, sys, zlib
data = open(sys.argv[1], "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat, w = 8, b"", 0
while pos < len(data):
    n, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + n]
    if kind == b"IHDR":
        w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
        assert depth == 8 and ctype in (2, 6), (depth, ctype)
        bpp = 3 if ctype == 2 else 4
    elif kind == b"IDAT":
        idat += body
    pos += 12 + n
raw = zlib.decompress(idat)
stride = w * bpp
prev = bytearray(stride)
colours = set()
for y in range(h):
    f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
    for i in range(stride):
        a = line[i - bpp] if i >= bpp else 0
        b, c = prev[i], prev[i - bpp] if i >= bpp else 0
        if f == 1: line[i] = (line[i] + a) & 255
        elif f == 2: line[i] = (line[i] + b) & 255
        elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    if y % 8 == 0:
        for x in range(0, w, 8):
            colours.add(bytes(line[x * bpp:x * bpp + 3]))
    prev = line
dark = sum(1 for c in colours if sum(c) < 200)
assert len(colours) > 10 and dark > 0, f"blank screenshot: {len(colours)} colours, {dark} dark"
print(f"index.png: {w}x{h}, {len(colours)} colours sampled, text present")
EOF
echo "check-report: $dir passed (screenshot $dir/index.png)"
