#!/usr/bin/env bash
# Builds the kernels the test command boots into ci/build-kernel.sh's cache (the stock 6.12, the
# mutant schemata kernel, each mutant of kernel-patches/ and each reversed fix of its corpus/) and fetches Debian's 6.1, so that a CI
# run on this machine finds them built. Not part of CI: on a new machine CI builds them itself
# (measured 2026-12-06 on 2 CPUs: the 6.12 kernel about 10 min, the schemata kernel about 9 min
# more, each mutant 12 s after that). ci/series.sh keeps a tree and builds of its own (6.5 min
# cold), which this leaves to it. Run as root from the repository root:
#
#   nice ci/prebuild.sh          # then ci/test.sh
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
ci/fetch-debian-kernel.sh > /dev/null
ci/build-kernel.sh > /dev/null
ci/build-kernel.sh kernel-patches/schemata/memcg-mutate.patch > /dev/null
for p in kernel-patches/*.patch kernel-patches/corpus/*.patch; do
  ci/build-kernel.sh "$p" > /dev/null
done
echo "prebuild: every kernel is in the cache ($((SECONDS - t0)) s)"
