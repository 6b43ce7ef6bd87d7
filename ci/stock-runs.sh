#!/usr/bin/env bash
# The repeated stock runs, outside CI: the stock 6.12 kernel's quick suite N times (default 3)
# under cgroup v2 and v1, no mutants; with "debian", Debian's 6.1 cloud kernel instead. Every
# scenario must pass every time; the README records the figures. Run as root from the repository
# root after `cargo build --release`:
#   ci/stock-runs.sh [N] [6.12|debian]
set -euo pipefail
cd "$(dirname "$0")/.."
MEMCGTEST_STOCK_RUNS=${1:-3} MEMCGTEST_STOCK=${2:-6.12} MEMCGTEST_MUTANTS=0 exec ci/matrix.sh
