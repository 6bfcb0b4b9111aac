import type { configSchema } from './schema.js';

/**
 * What each config.json key means, in one place: the man page wcf-agent.json(5) and the key
 * tables of docs/configuration.md are generated from this table (scripts/man.ts), and
 * test/unit/config/descriptions.test.ts checks that it names every key of the schema and no
 * other. Types and defaults are not written here: they are read from the schema itself, so
 * only a key without a default in the schema says what happens when it is absent.
 *
 * Text: `code` in backticks, [links](page.md#anchor) relative to docs/ (the man page keeps
 * their text only). `absent` reads as the table's default column ("required", "derived") and
 * follows "default:" on the man page unless it starts with "required".
 */

export type ConfigKey = keyof typeof configSchema.shape;

export interface KeyDoc {
  /** The man page section and docs table the key is listed under. */
  readonly section: SectionId;
  readonly meaning: string;
  /** Only for keys without a default in the schema: what applies when the key is absent. */
  readonly absent?: string;
}

/** Sections in the order the pages list them. */
export const CONFIG_SECTIONS = {
  api: 'The API',
  settings: 'Local defaults of the stored configuration',
  protect: 'What is never blocked',
  firewall: 'Firewall',
  daemon: 'The daemon and its state',
  logs: 'Logs and metrics',
  url: 'URL feed and resolver',
} as const;
export type SectionId = keyof typeof CONFIG_SECTIONS;

export const CONFIG_KEY_DOCS = {
  agid: { section: 'api', absent: 'required', meaning: "this agent's ID on the platform" },
  base_url: {
    section: 'api',
    absent: 'required',
    meaning: 'API root, ending in `/api/v1`; `http` or `https` (TLS always verified)',
  },
  token: {
    section: 'api',
    absent: 'required unless `token_file` is given',
    meaning: 'API token (the JWT from the platform); give `token` or `token_file`, not both',
  },
  token_file: {
    section: 'api',
    absent: 'required unless `token` is given',
    meaning: 'a file holding only the API token (mode 0600), instead of `token`',
  },
  auth_scheme: { section: 'api', meaning: '`bearer` sends `Authorization: Bearer <token>`; `raw` sends the bare token' },
  plugin: { section: 'firewall', meaning: '`auto` (nftables, then ipset, then iptables), `ipset`, `nftables`, `iptables`, `dry-run`' },
  state_dir: {
    section: 'daemon',
    meaning:
      'cursor, feed cache, last applied set, lock, local overrides, the control socket (its path must stay under 108 bytes); see [what the state dir holds](daemon.md#state)',
  },
  allowlist: {
    section: 'protect',
    meaning: 'addresses/networks never blocked (the rest of the [protected set](firewall.md#the-protected-set) always is)',
  },
  protect_ssh_sessions: { section: 'protect', meaning: 'never block the remote address of a logged-in SSH session (utmp)' },
  min_prefix: { section: 'protect', meaning: 'never block networks wider than this' },
  set_name: { section: 'firewall', meaning: "the ipset / nft set name (at most 27 characters, so the swap set `<name>-tmp` fits ipset's 31)" },
  chain_name: { section: 'firewall', meaning: 'the iptables chain (at most 28 characters)' },
  table_name: { section: 'firewall', meaning: 'the nft table (family `inet`)' },
  hook_chains: {
    section: 'firewall',
    meaning:
      'built-in chains the agent chain is hooked into (DOCKER-USER added when present; OUTPUT added when `direction` blocks outbound, INPUT left out when it is `outbound` only)',
  },
  action: {
    section: 'firewall',
    meaning:
      '`DROP` or `REJECT` (a TCP reset for TCP, ICMP admin-prohibited otherwise: a local client fails at once instead of waiting for its connect timeout)',
  },
  direction: {
    section: 'firewall',
    meaning:
      '`inbound` (source matched: INPUT, FORWARD), `outbound` (destination matched: OUTPUT, FORWARD, so a local process or a container cannot reach a listed host), or `both`; one set serves both',
  },
  log_blocked: { section: 'firewall', meaning: 'rate-limited kernel log of blocked packets' },
  drop_hook: {
    section: 'firewall',
    absent: '`prerouting` with `DROP`, `filter` with `REJECT`',
    meaning:
      '`prerouting` (the default with `DROP`): blocked packets are dropped before connection tracking (nftables prerouting and output at priority -300; ipset and iptables in the raw table), so a flood from listed addresses costs no conntrack work; `filter` (the default with `REJECT`, which the kernel allows only there): in input, forward and output after connection tracking',
  },
  netns: {
    section: 'firewall',
    absent: "the host's own namespace",
    meaning: 'apply the rules inside this network namespace (`ip netns exec NAME`); its addresses are protected too',
  },
  maximum_rules: { section: 'settings', meaning: "most entries applied: the local default until the server's stored configuration gives one" },
  score_threshold: { section: 'settings', meaning: "lowest decayed score blocked: the local default until the server's stored configuration gives one" },
  sync_time: { section: 'settings', meaning: "minutes between syncs: the local default until the server's stored configuration gives one" },
  full_resync_hours: { section: 'api', meaning: 'hours between full re-pulls (`0` = always full)' },
  page_size: { section: 'api', meaning: 'feed page size' },
  max_feed_items: {
    section: 'api',
    absent: 'derived',
    meaning:
      'items one feed pull may receive before it is refused: the largest of 1,000,000, 4 × `maximum_rules` and twice the largest feed seen',
  },
  connect_timeout_ms: { section: 'api', meaning: 'TCP/TLS connect timeout (also to a proxy)' },
  request_timeout_ms: { section: 'api', meaning: 'headers and body-idle timeout' },
  request_deadline_ms: {
    section: 'api',
    absent: '2 × `request_timeout_ms`',
    meaning: 'overall limit of one request, body included (a trickling server never trips the idle timeout)',
  },
  min_bytes_per_second: {
    section: 'api',
    meaning: 'a feed page may outlast `request_deadline_ms` only while it arrives at least this fast on average (`0` = never)',
  },
  cycle_deadline_seconds: {
    section: 'api',
    meaning: "a cycle's API calls end after this; the cycle fails with code 20, the applied set stays, the daemon goes on",
  },
  retries: { section: 'api', meaning: 'retries with exponential backoff and jitter for network errors, 5xx, 429, garbled bodies; never for 4xx' },
  max_response_mb: { section: 'api', meaning: 'largest response accepted, counted decoded when the server sends it gzip-encoded' },
  ca_file: { section: 'api', absent: "Node's default roots only", meaning: "extra CA certificate(s) (PEM) for the API and an https proxy, added to Node's default roots (Mozilla's list bundled with Node, plus `NODE_EXTRA_CA_CERTS`)" },
  proxy: { section: 'api', absent: 'from the environment', meaning: '`http://` or `https://` proxy URL (credentials as `user:password@`, sent as Basic on CONNECT); without it `HTTPS_PROXY`/`HTTP_PROXY`/`NO_PROXY` apply; other schemes are refused' },
  dry_run_output: {
    section: 'firewall',
    absent: '`<state_dir>/dry-run.<format>`',
    meaning: 'where the dry-run backend writes the rules (`-` = stdout)',
  },
  dry_run_format: { section: 'firewall', meaning: '`ipset` (ipset restore syntax) or `nft`' },
  jitter_seconds: { section: 'daemon', meaning: 'daemon: random extra delay per cycle, so a fleet spreads its calls' },
  startup_delay_seconds: {
    section: 'daemon',
    meaning:
      'daemon: after a restart with a successful sync younger than `sync_time`, the first sync waits a random 0..this many seconds, never past the sync that is due, so a fleet restarted together does not call the API in one second (`0` = at once; see [Running a fleet](fleet.md#the-start-up-delay))',
  },
  report_max_kb: {
    section: 'api',
    meaning:
      'largest state report in KiB: the list of applied entries is shortened to fit, manual entries first; a 413 gets one much shorter retry (see [Running a fleet](fleet.md#a-bounded-state-report))',
  },
  decision_poll_seconds: {
    section: 'daemon',
    meaning:
      'daemon: seconds between polls of the manual block and whitelist feeds between cycles, applied at once when they change (`0` = off; see [Manual decisions between cycles](daemon.md#manual-decisions-between-cycles))',
  },
  shrink_guard_ratio: { section: 'daemon', meaning: 'daemon and sync: hold back a pull that removes more than this share (or all)' },
  on_stop: {
    section: 'daemon',
    meaning: 'daemon: on SIGTERM `keep` the rules or `flush` them (and, with `url_feed`, the names at the resolver)',
  },
  history_max_mb: {
    section: 'daemon',
    meaning:
      'MiB the change history (`history-*.bin` in `state_dir`) may take; the oldest changes are dropped first (the default keeps a month of a host at 10,000 entries with room to spare, about a day and a half at a million); see [the change history](history.md)',
  },
  watch_interval_seconds: {
    section: 'daemon',
    meaning:
      "daemon: seconds between the cheap checks of the agent's objects between cycles (see [Watching between cycles](daemon.md#watching-between-cycles)); `0` turns watching off",
  },
  metrics_listen: {
    section: 'logs',
    absent: 'off',
    meaning: 'Prometheus endpoint, e.g. `127.0.0.1:9464` (a bare port means loopback); see [the metrics](daemon.md#metrics)',
  },
  log_level: { section: 'logs', meaning: '`WCF_LOG_LEVEL` overrides' },
  log_format: {
    section: 'logs',
    meaning:
      '`journal` (one readable line per event with a `<N>` priority prefix, fields as `key=value`) when stderr is the systemd journal, `text` on a terminal, `json` (pino lines) otherwise; or force one',
  },
  url_feed: {
    section: 'url',
    meaning: 'pull the URL feed and block its host names at the resolver (see [URL feed and resolver](url-feed.md))',
  },
  dns_plugin: { section: 'url', meaning: '`unbound`, `rpz`, `dnsmasq` or `dry-run` (renders the zone to `<state_dir>/dns-dry-run.zone`)' },
  url_score_threshold: { section: 'url', absent: 'the `score_threshold` in force', meaning: 'minimum decayed URL score to block a name' },
  maximum_domains: { section: 'url', meaning: 'cap on blocked names' },
  domain_allowlist: { section: 'url', meaning: 'names never blocked (each covers its subdomains; their parents are not blocked either)' },
  shared_domains: { section: 'url', meaning: 'registrable domains added to the shipped shared-platform list' },
  cluster_domain: {
    section: 'url',
    meaning:
      "Kubernetes' cluster domain (kubelet's `clusterDomain`): it and every name under it are never blocked, nor its parents (see [names never blocked](url-feed.md#names-never-blocked))",
  },
  dns_action: { section: 'url', meaning: '`nxdomain`, or `sinkhole` (answers `sinkhole_address`)' },
  sinkhole_address: { section: 'url', absent: 'required with `dns_action` `sinkhole`', meaning: 'IPv4/IPv6 address for `dns_action: sinkhole`' },
  unbound_control: { section: 'url', meaning: 'the unbound-control command, an argument array' },
  unbound_conf_file: {
    section: 'url',
    meaning: 'file the agent owns, included by unbound.conf (keeps the blocks across unbound restarts)',
  },
  rpz_file: { section: 'url', absent: 'required with `dns_plugin` `rpz`', meaning: 'the RPZ zone file the agent owns' },
  rpz_reload: { section: 'url', absent: 'none', meaning: 'argument array run after each zone write, e.g. `["rndc","reload","rpz.wcf"]`' },
  dnsmasq_file: {
    section: 'url',
    meaning: "the servers-file the agent owns (one `server=/name/` line per blocked name), read by dnsmasq's `servers-file=`; not in dnsmasq's `conf-dir`",
  },
  dnsmasq_reload: {
    section: 'url',
    absent: 'required with `dns_plugin` `dnsmasq`',
    meaning: 'argument array that makes dnsmasq re-read the file (SIGHUP), run when the names changed, e.g. `["systemctl","kill","-s","HUP","dnsmasq"]`',
  },
} as const satisfies Record<ConfigKey, KeyDoc>;
