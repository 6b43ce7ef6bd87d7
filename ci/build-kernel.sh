#!/usr/bin/env bash
# Builds the project's test kernel: Debian's linux-source-6.12, `make tinyconfig`, ci/kernel.config
# merged on top, `make bzImage`. With PATCH arguments (kernel-patches/*.patch) the patches are
# applied for this build and reversed afterwards, so a mutant is an incremental rebuild.
#
#   ci/build-kernel.sh                       -> $WORK/out/stock.bzImage
#   ci/build-kernel.sh kernel-patches/x.patch -> $WORK/out/x.bzImage
#
# Prints the path of the bzImage on stdout (progress goes to stderr). The work directory
# (MEMCGTEST_KERNEL_WORK, default /var/cache/memcgtest-ci) is kept between runs as a cache: a
# bzImage whose stamp (the source tarball, ci/kernel.config and the patches, hashed) matches is
# not built again.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=${MEMCGTEST_KERNEL_WORK:-/var/cache/memcgtest-ci}
src=$work/linux-6.12
out=$work/out
log() { echo "build-kernel: $*" >&2; }
patches=()
for p in "$@"; do
  [ -f "$p" ] || { log "no such patch: $p"; exit 1; }
  patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
done

need=()
[ -f /usr/src/linux-source-6.12.tar.xz ] || need+=(linux-source-6.12)
for t in bc flex bison make gcc; do command -v $t >/dev/null || need+=($t); done
[ -f /usr/include/libelf.h ] || need+=(libelf-dev)
[ -f /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >&2
fi

mkdir -p "$work" "$out"
if [ ! -f "$src/Makefile" ]; then
  log "unpacking /usr/src/linux-source-6.12.tar.xz"
  rm -rf "$work/linux-source-6.12" "$src"
  tar -xf /usr/src/linux-source-6.12.tar.xz -C "$work"
  mv "$work/linux-source-6.12" "$src"
fi
cd "$src"

# Configure again whenever the fragment changed.
want=$(sha256sum "$repo/ci/kernel.config" | cut -d' ' -f1)
if [ ! -f .config ] || [ "$(cat .memcgtest-config 2>/dev/null)" != "$want" ]; then
  log "configuring (tinyconfig + ci/kernel.config)"
  make -s tinyconfig >&2
  scripts/kconfig/merge_config.sh -m .config "$repo/ci/kernel.config" >&2
  make -s olddefconfig >&2
  missing=0
  while read -r line; do
    case "$line" in CONFIG_*=*) grep -qx "$line" .config || { log "not set after olddefconfig: $line"; missing=1; } ;; esac
  done < "$repo/ci/kernel.config"
  [ $missing = 0 ] || exit 1
  echo "$want" > .memcgtest-config
fi

name=stock
if [ ${#patches[@]} -gt 0 ]; then
  name=""
  for p in "${patches[@]}"; do name="${name:+$name+}$(basename "$p" .patch)"; done
fi
stamp=$( { stat -c '%s %Y' /usr/src/linux-source-6.12.tar.xz; cat "$repo/ci/kernel.config"; \
  for p in "${patches[@]}"; do cat "$p"; done; } | sha256sum | cut -d' ' -f1)
if [ -f "$out/$name.bzImage" ] && [ "$(cat "$out/$name.stamp" 2>/dev/null)" = "$stamp" ]; then
  log "$name is built (stamp matches)"
  echo "$out/$name.bzImage"
  exit 0
fi
applied=()
reverse() {
  for ((i=${#applied[@]}-1; i>=0; i--)); do patch -p1 -R -s < "${applied[$i]}" >&2 || log "could not reverse ${applied[$i]}"; done
}
trap reverse EXIT
if [ ${#patches[@]} -gt 0 ]; then
  name=""
  for p in "${patches[@]}"; do
    patch -p1 -s --dry-run < "$p" >&2 || { log "$p does not apply to $(make -s kernelversion)"; exit 1; }
    patch -p1 -s < "$p" >&2
    applied+=("$p")
    name="${name:+$name+}$(basename "$p" .patch)"
  done
fi
log "building $name ($(make -s kernelversion)) with $(nproc) jobs"
start=$(date +%s)
if ! make -j"$(nproc)" bzImage > "$work/build-$name.log" 2>&1; then
  tail -30 "$work/build-$name.log" >&2
  log "build of $name failed (log: $work/build-$name.log)"
  exit 1
fi
cp arch/x86/boot/bzImage "$out/$name.bzImage"
echo "$stamp" > "$out/$name.stamp"
log "built $name in $(( $(date +%s) - start ))s"
echo "$out/$name.bzImage"
