#!/usr/bin/env bash
# Downloads Debian's cloud kernel (the package linux-image-cloud-amd64 points to) with
# `apt-get download` and extracts it. Prints two lines: the vmlinuz path and the lib/modules/<release>
# directory. Cached in MEMCGTEST_KERNEL_WORK (default /var/cache/memcgtest-ci).
set -euo pipefail
work=${MEMCGTEST_KERNEL_WORK:-/var/cache/memcgtest-ci}/debian
mkdir -p "$work"
cd "$work"
pkg=$(apt-cache depends linux-image-cloud-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
if [ -z "$pkg" ]; then
  apt-get update -qq >&2
  pkg=$(apt-cache depends linux-image-cloud-amd64 | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
fi
[ -n "$pkg" ] || { echo "fetch-debian-kernel: cannot resolve linux-image-cloud-amd64" >&2; exit 1; }
rel=${pkg#linux-image-}
if [ ! -f "$pkg/boot/vmlinuz-$rel" ]; then
  echo "fetch-debian-kernel: downloading $pkg" >&2
  rm -f ./"$pkg"_*.deb
  apt-get download "$pkg" >&2 2> >(grep -v "couldn't be accessed by user '_apt'" >&2)
  rm -rf "$pkg"
  dpkg-deb -x ./"$pkg"_*.deb "$pkg"
fi
echo "$work/$pkg/boot/vmlinuz-$rel"
echo "$work/$pkg/lib/modules/$rel"
