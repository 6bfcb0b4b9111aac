#!/usr/bin/env bash
# The README's test command (`npm ci && npm test`) ends here. It runs EVERY test:
# unit, integration against the simulator, and the netfilter tests inside network
# namespaces, which need root and the netfilter tools (and unbound + dig for the resolver tests). Nothing is skipped silently:
# without root or the tools, the netns tests fail and say why.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v ip >/dev/null 2>&1 || missing+=(iproute2)
command -v iptables >/dev/null 2>&1 && command -v iptables-legacy >/dev/null 2>&1 || missing+=(iptables)
command -v ipset >/dev/null 2>&1 || missing+=(ipset)
command -v nft >/dev/null 2>&1 || missing+=(nftables)
# The resolver tests start their own unbound inside a namespace and query it with dig.
command -v unbound >/dev/null 2>&1 || missing+=(unbound)
command -v dig >/dev/null 2>&1 || missing+=(dnsutils)
# The man page tests render the generated pages with man -l (groff underneath) and read them with lexgrog.
{ command -v man && command -v lexgrog; } >/dev/null 2>&1 || missing+=(man-db)
command -v groff >/dev/null 2>&1 || missing+=(groff-base)
# The unit file is checked with systemd-analyze verify and security --offline (systemd >= 250).
command -v systemd-analyze >/dev/null 2>&1 || missing+=(systemd)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${missing[*]} for the netfilter tests" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    echo "test: missing ${missing[*]}; the netfilter tests will fail (install them, run as root)" >&2
  fi
fi

npm run --silent build
npx tsc -p tsconfig.test.json
npx vitest run "$@"
