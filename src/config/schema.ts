import * as z from './zod.js';
import { parseCidr } from '../net/ipv4.js';
import { closestName } from './suggest.js';
import { checkDnsConfig, dnsConfigKeys } from './dns-schema.js';

/**
 * config.json: a flat object. Unknown keys are an error so a typo (`maximun_rules`) cannot pass
 * silently. Every key is documented in config.json.example, and described in descriptions.ts,
 * from which wcf-agent.json(5) and docs/configuration.md are written with the types and defaults
 * read from this schema.
 */

const cidrString = z.string().check(
  z.superRefine((s: string, ctx) => {
    const r = parseCidr(s);
    if (!r.ok) ctx.addIssue({ code: 'custom', message: r.error });
  }),
);

const nonEmpty = () => z.string().check(z.minLength(1));
const intIn = (min: number, max: number) => z.number().check(z.int(), z.gte(min), z.lte(max));
const numberIn = (min: number, max: number) => z.number().check(z.gte(min), z.lte(max));
const positiveInt = (max: number) => intIn(1, max);

export const HARD_LIMITS = {
  maximum_rules: 2_000_000,
  score_threshold: 1_000_000,
  sync_time: 10_080, // one week in minutes
} as const;

/** The change history's default bound: a month of a host at 10,000 entries, with room to spare (measured in docs/history.md). */
export const DEFAULT_HISTORY_MAX_MB = 8;

export const configSchema = z
  .strictObject({
    agid: z.string().check(z.minLength(1), z.maxLength(200)),
    base_url: z.url({ protocol: /^https?$/ }),
    token: z.optional(nonEmpty()),
    token_file: z.optional(nonEmpty()),
    auth_scheme: z._default(z.enum(['bearer', 'raw']), 'bearer'),
    plugin: z._default(z.enum(['auto', 'ipset', 'nftables', 'iptables', 'dry-run']), 'auto'),
    state_dir: z._default(nonEmpty(), '/var/lib/wcf-agent'),
    allowlist: z._default(z.array(cidrString), []),
    // Never block the remote address of a logged-in SSH session (utmp), so an admin's open session is never cut.
    protect_ssh_sessions: z._default(z.boolean(), true),
    min_prefix: z._default(intIn(0, 32), 8),
    set_name: z._default(nonEmpty(), 'wcf-blocklist'),
    chain_name: z._default(nonEmpty(), 'WCF-AGENT'),
    table_name: z._default(nonEmpty(), 'wcf_agent'),
    hook_chains: z._default(z.array(nonEmpty()).check(z.minLength(1)), ['INPUT', 'FORWARD']),
    action: z._default(z.enum(['DROP', 'REJECT']), 'DROP'),
    // Block packets from listed addresses (inbound), to them (outbound: a local process or a forwarded host reaching out), or both.
    direction: z._default(z.enum(['both', 'inbound', 'outbound']), 'both'),
    log_blocked: z._default(z.boolean(), false),
    // Where packets are dropped: before connection tracking (prerouting/raw: the default with DROP) or
    // in the filter stage (input/forward/output: the only place REJECT can answer; the default with REJECT).
    drop_hook: z.optional(z.enum(['prerouting', 'filter'])),
    // Apply the rules inside this network namespace (`ip netns exec NAME`) instead of the host's own.
    netns: z.optional(z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'a network namespace name (letters, digits, _ . -)'))),
    // Local defaults, used until the API's stored configuration says otherwise.
    maximum_rules: z._default(positiveInt(HARD_LIMITS.maximum_rules), 10_000),
    score_threshold: z._default(positiveInt(HARD_LIMITS.score_threshold), 3),
    sync_time: z._default(positiveInt(HARD_LIMITS.sync_time), 15),
    full_resync_hours: z._default(numberIn(0, 24 * 30), 24),
    page_size: z._default(intIn(1, 1000), 1000),
    // Items a feed pull may receive before it is refused (default: the larger of a million, 4 x
    // maximum_rules and twice the largest feed seen), so a server that never stops paging is stopped.
    max_feed_items: z.optional(intIn(1000, 100_000_000)),
    connect_timeout_ms: z._default(intIn(100, 120_000), 10_000),
    request_timeout_ms: z._default(intIn(100, 600_000), 30_000),
    // Overall limit of one request, body included (default 2 x request_timeout_ms): a server
    // trickling its answer byte by byte never trips the idle timeout above.
    request_deadline_ms: z.optional(intIn(100, 3_600_000)),
    // A feed page may run past request_deadline_ms while it arrives at least this fast on average.
    min_bytes_per_second: z._default(intIn(0, 1_000_000_000), 16_384),
    // A whole cycle's API calls end after this many seconds (reported as code 20); the daemon goes on.
    cycle_deadline_seconds: z._default(intIn(10, 86_400), 900),
    retries: z._default(intIn(0, 10), 3),
    max_response_mb: z._default(numberIn(1, 1024), 64),
    // Extra CA certificates (PEM), trusted in addition to Node's default roots.
    ca_file: z.optional(nonEmpty()),
    // The agent speaks HTTP to its proxy (CONNECT for an https API). Any other URL used to be
    // accepted and then ignored: calls went around the proxy.
    proxy: z.optional(z.url({ protocol: /^https?$/, error: 'must be an http:// or https:// URL, e.g. http://proxy.corp.example:3128' })),
    dry_run_output: z.optional(nonEmpty()),
    dry_run_format: z._default(z.enum(['ipset', 'nft']), 'ipset'),
    jitter_seconds: z._default(numberIn(0, 3600), 30),
    // Seconds between the daemon's polls of the manual-decision feeds between cycles (0 = off).
    decision_poll_seconds: z._default(intIn(0, 86_400), 30),
    // Daemon: after a restart with a successful sync younger than sync_time, the first sync waits
    // a random 0..this many seconds (never past the sync that is due), so a fleet restarted
    // together does not call the API in the same second. 0 = sync at once.
    startup_delay_seconds: z._default(intIn(0, 86_400), 60),
    // Largest state report (POST /feedback) in KiB: the applied list is shortened to fit, manual
    // entries first, then the selection's order. 256 stays well under common body limits (1 MiB).
    report_max_kb: z._default(intIn(4, 1_048_576), 256),
    shrink_guard_ratio: z._default(numberIn(0, 1), 0.5),
    on_stop: z._default(z.enum(['keep', 'flush']), 'keep'),
    // The change history in state_dir (history-*.bin): the oldest changes are dropped to stay within this.
    history_max_mb: z._default(numberIn(1, 65_536), DEFAULT_HISTORY_MAX_MB),
    // Daemon: seconds between cheap checks of the agent's objects where no change event exists; 0 = no watching.
    watch_interval_seconds: z._default(intIn(0, 3600), 5),
    metrics_listen: z.optional(nonEmpty()),
    log_level: z._default(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), 'info'),
    // auto: journal lines when stderr is the journal, readable text on a terminal, JSON lines otherwise.
    log_format: z._default(z.enum(['auto', 'json', 'text', 'journal']), 'auto'),
    // The URL feed, enforced at the host's resolver (src/config/dns-schema.ts).
    ...dnsConfigKeys,
  })
  .check(
    z.superRefine((c, ctx) => {
      if (c.token === undefined && c.token_file === undefined) {
        ctx.addIssue({ code: 'custom', path: ['token'], message: 'one of token or token_file is required' });
      }
      if (c.token !== undefined && c.token_file !== undefined) {
        ctx.addIssue({ code: 'custom', path: ['token_file'], message: 'give token or token_file, not both' });
      }
      if (c.action === 'REJECT' && c.drop_hook === 'prerouting') {
        ctx.addIssue({ code: 'custom', path: ['drop_hook'], message: 'REJECT answers the sender, which the kernel allows only in the filter stage: use drop_hook "filter" (the default with REJECT), or action DROP' });
      }
      checkDnsConfig(c, ctx);
    }),
  );

export type ConfigFile = z.infer<typeof configSchema>;

/**
 * zod issues as `path: message` lines, the one format every input error uses.
 * `knownKeys`: the top-level keys of the object, so an unknown key can be answered
 * with the closest known one (`maximum_rule: unknown key (did you mean maximum_rules?)`).
 */
export function formatIssues(error: z.core.$ZodError, knownKeys: readonly string[] = []): string[] {
  return error.issues.flatMap((i) => {
    const path = i.path.length ? i.path.map(String).join('.') : '(root)';
    if (i.code === 'unrecognized_keys') {
      return i.keys.map((k) => {
        const hint = i.path.length ? undefined : closestName(k, knownKeys);
        return `${i.path.length ? `${path}.${k}` : k}: unknown key${hint ? ` (did you mean ${hint}?)` : ''}`;
      });
    }
    return [`${path}: ${i.message}`];
  });
}

/** Every key config.json may hold. */
export const CONFIG_KEYS: readonly string[] = Object.keys(configSchema.shape);
