#!/usr/bin/env bash
# Builds every kernel the test command boots into ci/build-kernel.sh's cache (the stock 6.12, the
# mutant schemata kernel, each mutant of kernel-patches/) and fetches Debian's 6.1, so that a CI
# run on this machine finds them built. Not part of CI: on a new machine CI builds them itself
# (a full build 4-5 min, each mutant an incremental rebuild of 1-2 min on 2 CPUs), and this
# moves that time out of the CI's budget. Run as root from the repository root:
#
#   nice ci/prebuild.sh          # then ci/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
ci/fetch-debian-kernel.sh > /dev/null
ci/build-kernel.sh > /dev/null
ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch > /dev/null
# The mutants named first (PREBUILD_FIRST="a.patch b.patch"), then the rest.
for p in ${PREBUILD_FIRST:-} kernel-patches/*.patch; do
  ci/build-kernel.sh "$p" > /dev/null
done
echo "prebuild: every kernel is in the cache ($((SECONDS - t0)) s)"
