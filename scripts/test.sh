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
# The deployment tests (test/integration/deploy): the image is built with mmdebstrap and
# run by podman with runc (crun refuses this kernel's hybrid cgroups), the compose file
# by podman-compose, the Ansible role through Debian's ansible (its containers.podman
# collection has the podman connection plugin). They use a podman configuration and
# image store of their own, never /etc/containers or the machine's images.
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || missing+=(runc)
command -v mmdebstrap >/dev/null 2>&1 || missing+=(mmdebstrap)
command -v podman-compose >/dev/null 2>&1 || missing+=(podman-compose)
{ command -v ansible-playbook >/dev/null 2>&1 && [ -d /usr/lib/python3/dist-packages/ansible_collections/containers/podman ]; } || missing+=(ansible)
# The URL feed's resolvers besides unbound, each started by its test inside a namespace:
# BIND 9, PowerDNS Recursor, Knot Resolver (RPZ) and dnsmasq (its own backend).
command -v named >/dev/null 2>&1 || missing+=(bind9)
command -v pdns_recursor >/dev/null 2>&1 || missing+=(pdns-recursor)
command -v kresd >/dev/null 2>&1 || missing+=(knot-resolver)
command -v dnsmasq >/dev/null 2>&1 || missing+=(dnsmasq)
# The alerting and recording rules are checked and tested with promtool, and a real
# Prometheus scrapes a daemon in a namespace.
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
# arm64 builds are run under user-mode emulation; the RPM is built with rpmbuild and
# installed into a throwaway root.
command -v qemu-aarch64-static >/dev/null 2>&1 || missing+=(qemu-user-static)
command -v rpmbuild >/dev/null 2>&1 || missing+=(rpm)
# A release is signed with gpg (RPMs through rpmsign, the apt repository's Release file made by
# apt-ftparchive) or minisign, and the release test checks it as the docs say.
command -v apt-ftparchive >/dev/null 2>&1 || missing+=(apt-utils)
command -v minisign >/dev/null 2>&1 || missing+=(minisign)
command -v gpgv >/dev/null 2>&1 || missing+=(gpgv)
# Coexistence with the firewall managers of RHEL and Ubuntu, run for real in namespaces
# (firewalld talks D-Bus: the test starts a bus of its own).
command -v firewall-cmd >/dev/null 2>&1 || missing+=(firewalld)
command -v ufw >/dev/null 2>&1 || missing+=(ufw)
command -v dbus-daemon >/dev/null 2>&1 || missing+=(dbus)
# The shell completions are loaded in each shell the way it loads them (bash through
# bash-completion's loader); the compose file is run by Debian's docker-compose on podman's API.
[ -e /usr/share/bash-completion/bash_completion ] || missing+=(bash-completion)
command -v zsh >/dev/null 2>&1 || missing+=(zsh)
command -v fish >/dev/null 2>&1 || missing+=(fish)
command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
# The arm64 build reads ELF headers (readelf) and strips the arm64 binary with the cross strip.
command -v readelf >/dev/null 2>&1 || missing+=(binutils)
command -v aarch64-linux-gnu-strip >/dev/null 2>&1 || missing+=(binutils-aarch64-linux-gnu)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test: installing ${missing[*]} for the netfilter tests" >&2
    apt-get update -qq
    # Never a service started by the install: named, pdns_recursor, dnsmasq, firewalld and
    # prometheus would otherwise start on the machine itself (firewalld rewriting its
    # ruleset). policy-rc.d answering 101 tells the packages' scripts not to start anything.
    placed_policy=
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d && placed_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    if [ -n "$placed_policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
  else
    echo "test: missing ${missing[*]}; the netfilter tests will fail (install them, run as root)" >&2
  fi
fi

npm run --silent build
npx tsc -p tsconfig.test.json
npx vitest run "$@"
