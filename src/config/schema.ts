import { z } from 'zod';
import { parseCidr } from '../net/ipv4.js';
import { closestName } from './suggest.js';
import { checkDnsConfig, dnsConfigKeys } from './dns-schema.js';

/**
 * config.json: a flat object (the keys are listed in the README). Unknown keys are an error so a
 * typo (`maximun_rules`) cannot pass silently. Every key is documented in
 * config.json.example; defaults here are the ones the README lists.
 */

const cidrString = z.string().superRefine((s, ctx) => {
  const r = parseCidr(s);
  if (!r.ok) ctx.addIssue({ code: 'custom', message: r.error });
});

const positiveInt = (max: number) => z.number().int().min(1).max(max);

export const HARD_LIMITS = {
  maximum_rules: 2_000_000,
  score_threshold: 1_000_000,
  sync_time: 10_080, // one week in minutes
} as const;

export const configSchema = z
  .strictObject({
    agid: z.string().min(1).max(200),
    base_url: z.url({ protocol: /^https?$/ }),
    token: z.string().min(1).optional(),
    token_file: z.string().min(1).optional(),
    auth_scheme: z.enum(['bearer', 'raw']).default('bearer'),
    plugin: z.enum(['auto', 'ipset', 'nftables', 'iptables', 'dry-run']).default('auto'),
    state_dir: z.string().min(1).default('/var/lib/wcf-agent'),
    allowlist: z.array(cidrString).default([]),
    // Never block the remote address of a logged-in SSH session (utmp), so an admin's open session is never cut.
    protect_ssh_sessions: z.boolean().default(true),
    min_prefix: z.number().int().min(0).max(32).default(8),
    set_name: z.string().min(1).default('wcf-blocklist'),
    chain_name: z.string().min(1).default('WCF-AGENT'),
    table_name: z.string().min(1).default('wcf_agent'),
    hook_chains: z.array(z.string().min(1)).min(1).default(['INPUT', 'FORWARD']),
    action: z.enum(['DROP', 'REJECT']).default('DROP'),
    // Block packets from listed addresses (inbound), to them (outbound: a local process or a forwarded host reaching out), or both.
    direction: z.enum(['both', 'inbound', 'outbound']).default('both'),
    log_blocked: z.boolean().default(false),
    // Apply the rules inside this network namespace (`ip netns exec NAME`) instead of the host's own.
    netns: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/, 'a network namespace name (letters, digits, _ . -)').optional(),
    // Local defaults, used until the API's stored configuration says otherwise.
    maximum_rules: positiveInt(HARD_LIMITS.maximum_rules).default(10_000),
    score_threshold: positiveInt(HARD_LIMITS.score_threshold).default(3),
    sync_time: positiveInt(HARD_LIMITS.sync_time).default(15),
    full_resync_hours: z.number().min(0).max(24 * 30).default(24),
    page_size: z.number().int().min(1).max(1000).default(1000),
    // Items a feed pull may receive before it is refused (default: the larger of a million, 4 x
    // maximum_rules and twice the largest feed seen), so a server that never stops paging is stopped.
    max_feed_items: z.number().int().min(1000).max(100_000_000).optional(),
    connect_timeout_ms: z.number().int().min(100).max(120_000).default(10_000),
    request_timeout_ms: z.number().int().min(100).max(600_000).default(30_000),
    // Overall limit of one request, body included (default 2 x request_timeout_ms): a server
    // trickling its answer byte by byte never trips the idle timeout above.
    request_deadline_ms: z.number().int().min(100).max(3_600_000).optional(),
    // A feed page may run past request_deadline_ms while it arrives at least this fast on average.
    min_bytes_per_second: z.number().int().min(0).max(1_000_000_000).default(16_384),
    // A whole cycle's API calls end after this many seconds (reported as code 20); the daemon goes on.
    cycle_deadline_seconds: z.number().int().min(10).max(86_400).default(900),
    retries: z.number().int().min(0).max(10).default(3),
    max_response_mb: z.number().min(1).max(1024).default(64),
    ca_file: z.string().min(1).optional(),
    proxy: z.url().optional(),
    dry_run_output: z.string().min(1).optional(),
    dry_run_format: z.enum(['ipset', 'nft']).default('ipset'),
    jitter_seconds: z.number().min(0).max(3600).default(30),
    // Seconds between the daemon's polls of the manual-decision feeds between cycles (0 = off).
    decision_poll_seconds: z.number().int().min(0).max(86_400).default(30),
    shrink_guard_ratio: z.number().min(0).max(1).default(0.5),
    on_stop: z.enum(['keep', 'flush']).default('keep'),
    // Daemon: seconds between cheap checks of the agent's objects where no change event exists; 0 = no watching.
    watch_interval_seconds: z.number().int().min(0).max(3600).default(5),
    metrics_listen: z.string().min(1).optional(),
    log_level: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    // auto: journal lines when stderr is the journal, readable text on a terminal, JSON lines otherwise.
    log_format: z.enum(['auto', 'json', 'text', 'journal']).default('auto'),
    // The URL feed, enforced at the host's resolver (src/config/dns-schema.ts).
    ...dnsConfigKeys,
  })
  .superRefine((c, ctx) => {
    if (c.token === undefined && c.token_file === undefined) {
      ctx.addIssue({ code: 'custom', path: ['token'], message: 'one of token or token_file is required' });
    }
    if (c.token !== undefined && c.token_file !== undefined) {
      ctx.addIssue({ code: 'custom', path: ['token_file'], message: 'give token or token_file, not both' });
    }
    checkDnsConfig(c, ctx);
  });

export type ConfigFile = z.infer<typeof configSchema>;

/**
 * zod issues as `path: message` lines, the one format every input error uses.
 * `knownKeys`: the top-level keys of the object, so an unknown key can be answered
 * with the closest known one (`maximum_rule: unknown key (did you mean maximum_rules?)`).
 */
export function formatIssues(error: z.ZodError, knownKeys: readonly string[] = []): string[] {
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
