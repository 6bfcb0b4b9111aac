#!/usr/bin/env bash
# A Debian root file system as a tar, made by mmdebstrap from this machine's own apt
# sources (no container registry involved), and cached: the same request within
# a week is answered from the cache.
#
#   bash deploy/image/rootfs.sh --variant extract|apt --include PKG,PKG... [--arch ARCH] [--cache DIR] [--no-cache]
#
#   --variant extract  the packages and their dependencies unpacked, no maintainer
#                      script run, no dpkg, no shell: what the agent's image is made of
#   --variant apt      a Debian system with dpkg and apt (the Ansible test's target)
#   --include          packages on top of the variant (comma-separated)
#   --arch ARCH        Debian architecture: amd64 (default) or arm64. A foreign one is
#                      only unpacked (extract variant): its programs cannot run here
#                      without qemu-user, and none is run by this script
#   --cache DIR        where the tars are kept (default .cache/rootfs in the checkout)
#   --no-cache         build again even when a cached tar matches
#
# Prints the path of the tar on stdout. Environment: SOURCE_DATE_EPOCH (file times;
# default: the last commit's time) and WCF_ROOTFS_SOURCES (an apt sources file to use
# instead of this machine's /etc/apt/sources.list{,.d}).
#
# The key of a cached tar is the hash of this script, the arguments and the apt
# sources, so a changed package list or mirror builds anew; a tar older than 7 days is
# rebuilt too, so the image picks up Debian's security updates.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# Files and directories made here get the same modes whatever the caller's umask (a build under
# umask 027 gave the image other directory modes).
umask 022

VARIANT=
INCLUDE=
ARCH=amd64
CACHE=$ROOT/.cache/rootfs
USE_CACHE=1
MAX_AGE_DAYS=7
while [ $# -gt 0 ]; do
  case $1 in
    --variant) VARIANT=$2; shift 2 ;;
    --include) INCLUDE=$2; shift 2 ;;
    --arch) ARCH=$2; shift 2 ;;
    --cache) CACHE=$(realpath -m -- "$2"); shift 2 ;;
    --no-cache) USE_CACHE=0; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "rootfs: unknown argument: $1" >&2; exit 2 ;;
  esac
done
case $VARIANT in
  extract|apt) ;;
  *) echo "rootfs: --variant must be extract or apt" >&2; exit 2 ;;
esac
case $ARCH in
  amd64|arm64) ;;
  *) echo "rootfs: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
# apt runs maintainer scripts in the apt variant: those of another architecture would need
# qemu-user registered with binfmt_misc, which the build does not count on.
if [ "$VARIANT" = apt ] && [ "$ARCH" != "$(dpkg --print-architecture)" ]; then
  echo "rootfs: --variant apt builds for this machine's architecture only" >&2; exit 2
fi
command -v mmdebstrap >/dev/null 2>&1 || { echo "rootfs: mmdebstrap not found (apt-get install mmdebstrap)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "rootfs: run as root (mmdebstrap's root mode keeps file owners as in the packages)" >&2; exit 1; }

# The machine's own apt sources: the same Debian release and mirror as the host's
# packages. mmdebstrap copies a *.list or *.sources file given as a mirror argument.
sources=()
if [ -n "${WCF_ROOTFS_SOURCES:-}" ]; then
  sources=("$WCF_ROOTFS_SOURCES")
else
  [ -s /etc/apt/sources.list ] && grep -q '^[[:space:]]*deb ' /etc/apt/sources.list && sources+=(/etc/apt/sources.list)
  for f in /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -s "$f" ] && sources+=("$f")
  done
fi
[ ${#sources[@]} -gt 0 ] || { echo "rootfs: no apt sources found in /etc/apt (set WCF_ROOTFS_SOURCES)" >&2; exit 1; }
. /etc/os-release
SUITE=${VERSION_CODENAME:?rootfs: /etc/os-release names no VERSION_CODENAME}

if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

# The request (variant, packages, architecture) names the tar; the key adds this script and
# the sources, so a newer tar of the same request replaces the older one, and different
# requests (the image's root, the arm64 build's sysroot) are cached side by side.
request=$(echo "$VARIANT $INCLUDE $ARCH" | sha256sum | cut -c1-8)
key=$( { cat "$0"; echo "$VARIANT $INCLUDE $SUITE $ARCH"; cat "${sources[@]}"; } | sha256sum | cut -c1-16)
OUT=$CACHE/$SUITE-$VARIANT-$ARCH-$request-$key.tar
mkdir -p "$CACHE"
if [ "$USE_CACHE" = 1 ] && [ -s "$OUT" ] && [ -z "$(find "$OUT" -mtime +$MAX_AGE_DAYS)" ]; then
  echo "rootfs: cached $OUT" >&2
  echo "$OUT"
  exit 0
fi

tmp=$OUT.tmp.$$
work=$CACHE/.work.$$
trap 'rm -rf "$tmp" "$work"' EXIT
start=$(date +%s)
# --skip=output/dev: no device nodes (a container runtime provides /dev). The apt
# cache is kept for the step below and removed there.
# --skip=check/qemu: an extract of another architecture runs none of its programs.
mmdebstrap --quiet --variant="$VARIANT" --architectures="$ARCH" --skip=check/qemu ${INCLUDE:+--include="$INCLUDE"} \
  --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
  --skip=output/dev --skip=cleanup/apt/cache --format=directory \
  "$SUITE" "$work" "${sources[@]}" >&2

if [ "$VARIANT" = extract ]; then
  # Nothing was configured and mmdebstrap runs no customize hook for this variant, so
  # what is left to do is done here: dpkg records for image scanners (one file per
  # package in /var/lib/dpkg/status.d, as distroless images have them: there is no
  # dpkg to keep a status file, and PKG.md5sums beside it lists the package's files),
  # no apt or dpkg state otherwise (the merged-/usr hook's placeholder package
  # included), documentation cut to the copyright files.
  mkdir -p "$work/var/lib/dpkg/status.d"
  for deb in "$work"/var/cache/apt/archives/*.deb; do
    pkg=$(dpkg-deb -f "$deb" Package)
    # SHA256: the .deb's own, as Debian's Packages index has it, for the image's SBOM (dpkg
    # keeps fields it does not know; scanners read Package, Version, Architecture, Source).
    { dpkg-deb -f "$deb" | sed '/^Description:/,$d'; echo "SHA256: $(sha256sum "$deb" | cut -d' ' -f1)"; echo "Status: install ok installed"; } >"$work/var/lib/dpkg/status.d/$pkg"
    dpkg-deb --info "$deb" md5sums >"$work/var/lib/dpkg/status.d/$pkg.md5sums" 2>/dev/null || rm -f "$work/var/lib/dpkg/status.d/$pkg.md5sums"
  done
  find "$work/var/lib/dpkg" -mindepth 1 -maxdepth 1 ! -name status.d -exec rm -rf {} +
  rm -rf "$work/var/lib/apt" "$work/var/cache/apt" "$work/var/cache/ldconfig" "$work/var/log/apt"
  # A package's doc directory may be a link to another's (libstdc++6 -> gcc-12-base): kept, so
  # its copyright file is found under its own name too, unless what it points to is gone.
  find "$work/usr/share/doc" -mindepth 1 ! -type d ! -type l ! -name copyright -delete
  find "$work/usr/share/doc" -mindepth 1 -type d -empty -delete
  find "$work/usr/share/doc" -mindepth 1 -xtype l -delete
  rm -rf "$work/usr/share/man" "$work/usr/share/info" "$work/usr/share/locale" "$work/usr/share/lintian" \
    "$work/usr/share/bash-completion" "$work/usr/share/gdb" "$work/usr/share/gcc"
  # The file lists name only what is left.
  for list in "$work"/var/lib/dpkg/status.d/*.md5sums; do
    while read -r sum path; do
      [ -e "$work/$path" ] && printf '%s  %s\n' "$sum" "$path"
    done <"$list" >"$list.tmp" || true
    mv "$list.tmp" "$list"
  done
else
  rm -rf "$work"/var/cache/apt/archives/*.deb
fi
# Same bytes for the same files: sorted, owners as numbers, times clamped to SOURCE_DATE_EPOCH.
tar -C "$work" --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime \
  --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$tmp" .
mv -f "$tmp" "$OUT"
# Older tars of the same variant are of no use any more.
find "$CACHE" -maxdepth 1 -name "$SUITE-$VARIANT-$ARCH-$request-*.tar" ! -path "$OUT" -delete
echo "rootfs: built $OUT ($(( $(stat -c %s "$OUT") / 1024 / 1024 )) MiB, $(( $(date +%s) - start )) s)" >&2
echo "$OUT"
