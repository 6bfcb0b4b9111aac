#!/usr/bin/env bash
# Builds the release's artifacts twice from this checkout's commit and compares them byte for
# byte (`npm run build:verify`): two fresh clones, at two paths of different lengths, one after
# the other, under a different umask, time zone and locale; each runs `scripts/release.sh`
# (both binaries, .debs, RPMs, the image archive and every SBOM). Exit 0 when every artifact is
# the same; 1 naming the first that differs, and the first file inside it that differs.
#
#   bash scripts/build-verify.sh [--arch x64|arm64] [--work DIR] [--keep]
#
#   --arch ARCH  one architecture's artifacts only (default: both)
#   --work DIR   where the clones go (default: a new temp dir)
#   --keep       keep the clones and their dist/ (default: removed at the end)
#
# What the two builds share is what is not under test: node_modules (as `npm ci` installed it
# here: the lock pins it; hard links when on the same file system) and Node's arm64 build.
# Each builds its own root file systems for the image (deploy/image/rootfs.sh, from this
# machine's apt sources: two builds are the same while the mirror serves the same packages).
# Uncommitted changes are not in a clone: the commit is what is verified. Environment: what the
# builds read (SOURCE_DATE_EPOCH, DEB_COMPRESSION, RPM_COMPRESSION) is passed to both.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

ARCH_ARGS=()
WORK=
KEEP=0
while [ $# -gt 0 ]; do
  case $1 in
    --arch) case $2 in x64|arm64) ARCH_ARGS=(--arch "$2") ;; *) echo "build-verify: --arch must be x64 or arm64" >&2; exit 2 ;; esac; shift 2 ;;
    --work) WORK=$(realpath -m -- "$2"); shift 2 ;;
    --keep) KEEP=1; shift ;;
    -h|--help) sed -n '2,21p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-verify: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
[ -d node_modules ] || { echo "build-verify: no node_modules here (run npm ci)" >&2; exit 1; }
COMMIT=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "build-verify: uncommitted changes are not built: verifying commit ${COMMIT:0:12} as committed" >&2
fi
if [ -z "$WORK" ]; then WORK=$(mktemp -d "${TMPDIR:-/tmp}/wcf-build-verify.XXXXXX"); fi
mkdir -p "$WORK"
[ "$KEEP" = 1 ] || trap 'rm -rf "$WORK"' EXIT

# build NAME UMASK TZ: a fresh clone at $WORK/NAME/..., built by release.sh; prints the clone's path.
build() {
  local dir=$WORK/$1 start
  start=$(date +%s)
  git clone --quiet --no-local --no-hardlinks "$ROOT" "$dir" >&2
  git -C "$dir" checkout --quiet --detach "$COMMIT" >&2
  # node_modules as installed here: hard links where the file system allows, else a copy.
  cp -al "$ROOT/node_modules" "$dir/node_modules" 2>/dev/null || cp -a "$ROOT/node_modules" "$dir/node_modules"
  if [ -d "$ROOT/packaging/node-arm64/node_modules" ]; then
    cp -al "$ROOT/packaging/node-arm64/node_modules" "$dir/packaging/node-arm64/" 2>/dev/null ||
      cp -a "$ROOT/packaging/node-arm64/node_modules" "$dir/packaging/node-arm64/"
  fi
  (cd "$dir" && umask "$2" && TZ=$3 LC_ALL=$4 bash scripts/release.sh "${ARCH_ARGS[@]}" >"$WORK/$1.log" 2>&1) ||
    { tail -30 "$WORK/$1.log" >&2; echo "build-verify: the build in $dir failed (log: $WORK/$1.log)" >&2; exit 1; }
  echo "build-verify: built ${COMMIT:0:12} in $dir in $(($(date +%s) - start)) s" >&2
  echo "$dir"
}

# first_difference A B: the first file inside two differing artifacts that differs, as a line.
first_difference() {
  local a=$1 b=$2 x=$WORK/.cmp
  rm -rf "$x" && mkdir -p "$x/a" "$x/b"
  case $a in
    *.deb)
      dpkg-deb -R "$a" "$x/a" && dpkg-deb -R "$b" "$x/b"
      diff -rq "$x/a" "$x/b" | head -1 | sed "s|$x/[ab]/||g"
      diff <(dpkg-deb -c "$a") <(dpkg-deb -c "$b") | grep -m1 '^[<>]' | sed 's/^/member list: /' ;;
    *.rpm)
      (cd "$x/a" && rpm2cpio "$a" | cpio -idm --quiet) && (cd "$x/b" && rpm2cpio "$b" | cpio -idm --quiet)
      diff -rq "$x/a" "$x/b" | head -1 | sed "s|$x/[ab]/||g"
      diff <(rpm -qp --nosignature --xml "$a") <(rpm -qp --nosignature --xml "$b") | grep -m1 '^[<>]' | sed 's/^/header: /' ;;
    *.tar)
      tar -C "$x/a" -xf "$a" && tar -C "$x/b" -xf "$b"
      local f
      f=$(cd "$x/a" && find . -type f | LC_ALL=C sort | while read -r m; do cmp -s "$m" "$x/b/$m" || { echo "$m"; break; }; done)
      if [ -n "$f" ] && gzip -t "$x/a/$f" 2>/dev/null; then
        # An image layer: its first differing member.
        echo "layer $f: $(diff <(zcat "$x/a/$f" | tar -tv --full-time) <(zcat "$x/b/$f" | tar -tv --full-time) | grep -m1 '^[<>]' ||
          echo "same member list; contents differ")"
      elif [ -n "$f" ]; then
        echo "$f: $(diff "$x/a/$f" "$x/b/$f" | grep -m1 '^[<>]' | cut -c1-200)"
      fi ;;
    *.json) diff "$a" "$b" | grep -m1 '^[<>]' ;;
    *) cmp "$a" "$b" | head -1 ;;
  esac
  rm -rf "$x"
}

one=$(build one 022 UTC C.UTF-8)
# Later, elsewhere, otherwise set up.
two=$(build second-build-of-the-same-commit 027 Pacific/Chatham POSIX)

ok=1
while read -r sum name; do
  other=$(awk -v n="$name" '$2 == n { print $1 }' "$two/dist/SHA256SUMS")
  if [ "$other" != "$sum" ]; then
    echo "build-verify: $name differs between the two builds of ${COMMIT:0:12}${other:+ ($sum, $other)}${other:- (missing in the second)}" >&2
    [ -z "$other" ] || first_difference "$one/dist/$name" "$two/dist/$name" | sed 's/^/build-verify:   first difference: /' >&2
    ok=0
    break
  fi
done <"$one/dist/SHA256SUMS"
if [ "$ok" = 1 ] && ! diff -q <(awk '{ print $2 }' "$one/dist/SHA256SUMS") <(awk '{ print $2 }' "$two/dist/SHA256SUMS") >/dev/null; then
  echo "build-verify: the second build made other artifacts: $(diff <(awk '{ print $2 }' "$one/dist/SHA256SUMS") <(awk '{ print $2 }' "$two/dist/SHA256SUMS") | grep -m1 '^[<>]')" >&2
  ok=0
fi
[ "$ok" = 1 ] || exit 1
cp "$one/dist/SHA256SUMS" "$WORK/SHA256SUMS"
echo "build-verify: $(wc -l <"$WORK/SHA256SUMS") files identical in both builds of ${COMMIT:0:12}:" >&2
sed 's/^/  /' "$WORK/SHA256SUMS" >&2
