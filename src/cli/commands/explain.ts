import { explain, type ExplainReport } from '../../agent/inspect/explain.js';
import { UsageError } from '../../errors.js';
import { parseCidr, type Cidr } from '../../net/ipv4.js';
import type { ProtectedMember } from '../../policy/protect.js';
import type { Explanation, RecordExplained } from '../../policy/explain.js';
import { escapeControls } from '../../util/terminal-text.js';
import { createApi, loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { roundScore } from './plan.js';

/** The ADDRESS argument: an IPv4 address or network, else a usage error naming it. */
export function parseAddressArgument(value: string): Cidr {
  const r = parseCidr(value.trim());
  if (!r.ok) throw new UsageError(`ADDRESS: ${escapeControls(r.error)}`);
  return r.cidr;
}

const whole = (t: number | null) => (t === null ? null : Math.floor(t));

function memberJson(m: ProtectedMember | undefined) {
  return m ? { ip: m.cidr.text, source: m.source, detail: m.detail ?? null } : null;
}

function recordJson(r: RecordExplained, report: ExplainReport) {
  return {
    ip: r.cidr.text,
    covers: r.covers,
    stored_score: r.storedScore,
    ts: r.ts,
    score: roundScore(r.score),
    threshold: report.settings.score_threshold,
    below_threshold_at: whole(r.belowAt),
    outcome: r.result,
    rank: r.rank ?? null,
    protected_by: memberJson(r.protectedBy),
    whitelisted_by: r.whitelistedBy?.text ?? null,
  };
}

/**
 * What holds on this host, which text and JSON both say: a local override (`wcf-agent
 * allow` / `block`) beats the feeds, except that nothing blocks a protected address (every
 * write goes through the protected set). `why` is the feeds' verdict when no override decides.
 */
export function effectiveVerdict(report: ExplainReport): { blocked: boolean; why: string } {
  const e = report.explanation;
  const o = report.override;
  if (!o) return { blocked: e.blocked, why: e.verdict };
  if (o.action === 'block' && e.protectedBy) return { blocked: false, why: 'protected' };
  return { blocked: o.action === 'block', why: `local ${o.action}` };
}

/** `explain --json`: one object. */
export function explainToJson(report: ExplainReport) {
  const e = report.explanation;
  const d = e.decidedBy;
  return {
    address: e.query.text,
    // What holds here (local overrides included); `verdict` and `feed_blocked` are what the feeds decided.
    blocked: effectiveVerdict(report).blocked,
    feed_blocked: e.blocked,
    verdict: e.verdict,
    local_override: report.override
      ? { ip: report.override.cidr.text, action: report.override.action, expires: report.override.expiresAt, note: report.override.note ?? null }
      : null,
    rule: {
      record: d?.cidr.text ?? null,
      kind: d?.kind ?? null,
      rank: d?.rank ?? null,
      maximum_rules: report.settings.maximum_rules,
      score_threshold: report.settings.score_threshold,
      min_prefix: report.minPrefix,
      protected_by: memberJson(d?.protectedBy),
      whitelisted_by: d?.whitelistedBy?.text ?? null,
    },
    protected_by: memberJson(e.protectedBy),
    records: e.records.map((r) => recordJson(r, report)),
    manual: [
      ...e.manualBlocks.map((r) => ({ ip: r.cidr.text, decision: 'block', covers: r.covers, ts: r.ts, outcome: r.result, rank: r.rank ?? null })),
      ...e.whitelist.map((w) => ({ ip: w.cidr.text, decision: 'whitelist', covers: w.cidr.start <= e.query.start && e.query.end <= w.cidr.end, ts: w.ts, outcome: null, rank: null })),
    ],
    in_kernel: report.kernel.inKernel,
    kernel: {
      plugin: report.kernel.plugin,
      entries: report.kernel.entries.map((k) => ({ ip: k.cidr, timeout: k.timeoutSeconds === undefined ? null : k.timeoutSeconds, timeout_known: k.timeoutSeconds !== undefined })),
      error: report.kernel.error ?? null,
    },
    hits: report.hits ?? null,
    generated_at: report.now,
    feed_as_of: report.feedAsOf,
    refreshed: report.refreshed,
  };
}

const score = (s: number | null) => (s === null ? '-' : s.toFixed(2));
const when = (t: number | null, now: number) => (t === null ? 'never' : t <= now ? `${isoTime(Math.floor(t))} (passed)` : `${isoTime(Math.floor(t))} (in ${duration(t - now)})`);
const member = (m: ProtectedMember) => `${m.source} ${m.cidr.text}${m.detail ? ` (${escapeControls(m.detail)})` : ''}`;

/** The rule that decided, in one sentence. */
export function ruleSentence(e: Explanation, report: ExplainReport): string {
  const d = e.decidedBy;
  const { maximum_rules: cap, score_threshold: threshold } = report.settings;
  if (!d) {
    const inside = [...e.records, ...e.manualBlocks].filter((r) => !r.covers);
    if (inside.length === 0) return 'no feed record or manual block covers it';
    const blocked = inside.filter((r) => r.result === 'selected').length;
    return `no feed record or manual block covers all of it; ${inside.length} lie inside it, ${blocked} of them blocked`;
  }
  const rec = `${d.kind === 'manual' ? 'manual block' : 'feed record'} ${d.cidr.text}`;
  switch (e.verdict) {
    case 'manual':
      return `${rec}, rank ${d.rank} of maximum_rules ${cap}`;
    case 'score':
      return `${rec}: score ${score(d.score)} now >= threshold ${threshold}, rank ${d.rank} of maximum_rules ${cap}, until ${when(d.belowAt, report.now)}`;
    case 'over_cap':
      return `${rec} would be blocked, but it ranks ${d.rank} and maximum_rules is ${cap}`;
    case 'below_threshold':
      return `${rec}: score ${score(d.score)} now < threshold ${threshold}${d.belowAt === null ? '' : ` (below since ${isoTime(Math.floor(d.belowAt))})`}`;
    case 'too_wide':
      return `${rec} is wider than min_prefix /${report.minPrefix}`;
    case 'whitelist':
      return `${rec} overlaps the whitelisted ${d.whitelistedBy?.text ?? 'indicator'}`;
    case 'allowlist':
    case 'protected':
      return `${rec} overlaps the protected ${d.protectedBy ? member(d.protectedBy) : 'set'}`;
    default:
      return rec;
  }
}

function printText(report: ExplainReport): void {
  const e = report.explanation;
  const out: string[] = [];
  const verdict = (blocked: boolean, why: string) => `${blocked ? 'BLOCKED' : 'not blocked'} (${why})`;
  const here = effectiveVerdict(report);
  out.push(`${e.query.text}: ${verdict(here.blocked, here.why)}`);
  // With a local override in force, the feeds' own verdict second: it holds again once the override ends.
  if (report.override) out.push(`  feeds:  ${verdict(e.blocked, e.verdict)}`);
  out.push(`  rule:   ${ruleSentence(e, report)}`);
  const o = report.override;
  if (o) {
    const until = o.expiresAt === null ? 'until removed' : `until ${isoTime(o.expiresAt)}`;
    out.push(`  local override: ${o.action} ${o.cidr.text} ${until}${o.note ? ` (${escapeControls(o.note)})` : ''}: ${here.why === 'protected' ? 'not applied, the address is protected' : `it beats the feeds, so the address is ${here.blocked ? 'BLOCKED' : 'not blocked'} here`}`);
  }
  if (e.protectedBy) out.push(`  never blocked: protected (${member(e.protectedBy)})`);
  const k = report.kernel;
  const held = k.entries.map((x) => `${x.cidr}${x.timeoutSeconds === undefined ? '' : x.timeoutSeconds === null ? ' (no timeout)' : ` (timeout ${duration(x.timeoutSeconds)})`}`);
  out.push(
    `  kernel: ${k.inKernel === null ? `could not be read (${escapeControls(k.error ?? '')})` : k.inKernel ? `held (${k.plugin}): ${held.join(', ')}` : `not held (${k.plugin ?? '-'})${held.length ? `; holds ${held.join(', ')} inside it` : ''}`}`,
  );
  out.push(`  hits:   ${report.hits ? report.hits.map((h) => `${h.direction} ${h.packets} packets, ${h.bytes} bytes`).join('; ') : 'not available'}`);
  out.push(
    report.refreshed
      ? `from a pull just now (nothing applied); threshold ${report.settings.score_threshold}, maximum_rules ${report.settings.maximum_rules}, min_prefix ${report.minPrefix}`
      : `from the pull of ${isoTime(report.feedAsOf)} (${duration(report.now - report.feedAsOf)} ago); threshold ${report.settings.score_threshold}, maximum_rules ${report.settings.maximum_rules}, min_prefix ${report.minPrefix}`,
  );
  if (e.records.length) {
    const rows = e.records.map((r) => [
      r.cidr.text,
      r.covers ? 'yes' : 'inside',
      r.storedScore.toFixed(2),
      isoTime(r.ts),
      score(r.score),
      when(r.belowAt, report.now),
      `${r.result}${r.rank !== undefined ? ` (rank ${r.rank})` : ''}`,
    ]);
    out.push('', 'feed records:', table(['ip', 'covers', 'score', 'ts', 'now', 'below threshold', 'outcome'], rows, ['l', 'l', 'r', 'l', 'r', 'l', 'l']));
  }
  if (e.manualBlocks.length || e.whitelist.length) {
    out.push('', 'manual decisions:');
    for (const m of e.manualBlocks) out.push(`  block ${m.cidr.text} (${m.result}${m.rank !== undefined ? `, rank ${m.rank}` : ''})`);
    for (const w of e.whitelist) out.push(`  whitelist ${w.cidr.text}`);
  }
  process.stdout.write(out.join('\n') + '\n');
}

export async function explainCommand(address: string, opts: GlobalOptions & { json?: boolean; refresh?: boolean }): Promise<number> {
  const query = parseAddressArgument(address); // before anything is read or sent
  const { config, logger } = loadContext(opts);
  const state = openState(config, logger);
  const plugin = openPlugin(config, logger, false);
  plugin.catch(() => undefined); // reported as the kernel's error, not unhandled meanwhile
  const api = opts.refresh ? createApi(config, logger) : undefined;
  try {
    const report = await explain({ config, state, logger, plugin, ...(api ? { api } : {}) }, query);
    if (opts.json) await printJson(explainToJson(report));
    else printText(report);
    return 0;
  } finally {
    await api?.client.close();
  }
}
