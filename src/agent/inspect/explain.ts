import { MAX_KERNEL_TIMEOUT_S } from '../../firewall/entries.js';
import type { AgentConfig } from '../../config/load.js';
import type { Settings } from '../../config/server.js';
import type { ThreatIntelApi } from '../../api/threat-intel.js';
import { errorMessage } from '../../errors.js';
import type { FirewallPlugin, PluginName } from '../../firewall/index.js';
import type { Logger } from '../../log.js';
import { toCidr, type Cidr } from '../../net/ipv4.js';
import { explainAddress, type Explanation } from '../../policy/explain.js';
import { selectEntries } from '../../policy/select.js';
import { computePlan } from '../cycle/cycle.js';
import { loadOfflineInput } from './offline-plan.js';
import { localProtectedSet } from '../cycle/protect-applied.js';
import { overrideFor, type LocalOverride } from '../../policy/overrides.js';
import { loadOverrides } from '../state/overrides-store.js';
import type { StateStore } from '../state/store.js';

/**
 * `explain ADDRESS`: the selection of the last pull (or of a fresh one with
 * `refresh`), run with `explainFor`, then the kernel and the hit counters.
 * Writes nothing: neither the state nor the firewall.
 */

/** One entry of the agent's set in the kernel that overlaps the query. */
export interface KernelEntryView {
  readonly cidr: string;
  /** Seconds the kernel still keeps it; null = no timeout; undefined = the backend cannot tell. */
  readonly timeoutSeconds: number | null | undefined;
}

export interface KernelView {
  /** The backend read; null when it could not even be chosen (auto-detection failed). */
  readonly plugin: PluginName | null;
  /** The set holds every address of the query; null when it could not be read. */
  readonly inKernel: boolean | null;
  readonly entries: readonly KernelEntryView[];
  /** Why it could not be read (inKernel null). */
  readonly error?: string;
}

/** Packets and bytes the blocking rules counted for the indicators covering an address, per direction. */
export interface HitCounters {
  readonly direction: 'in' | 'out';
  readonly packets: number;
  readonly bytes: number;
}

export interface ExplainReport {
  readonly explanation: Explanation;
  /** Epoch s the selection was run for. */
  readonly now: number;
  readonly settings: Settings;
  readonly minPrefix: number;
  /** Epoch s of the pull the answer comes from (now with `refresh`). */
  readonly feedAsOf: number;
  readonly refreshed: boolean;
  readonly kernel: KernelView;
  /** undefined: the backend's per-indicator counters are not available. */
  readonly hits: readonly HitCounters[] | undefined;
  /** The local override (`wcf-agent allow` / `block`) covering the address now, if any: it beats the feeds. */
  readonly override: LocalOverride | undefined;
}

/**
 * The hits the kernel counted (per direction) for the agent's entries that cover or
 * overlap the query: every hit address inside one of those entries. Undefined when the
 * backend has no per-address counters (dry-run) or they cannot be read.
 */
export async function hitCountersFor(plugin: FirewallPlugin, entries: readonly KernelEntryView[]): Promise<readonly HitCounters[] | undefined> {
  if (plugin.name === 'dry-run') return undefined;
  let hits: Awaited<ReturnType<FirewallPlugin['readHits']>>;
  try {
    hits = await plugin.readHits();
  } catch {
    return undefined;
  }
  const ranges = entries.flatMap((e) => toCidr(e.cidr) ?? []);
  const sum = { in: { packets: 0, bytes: 0 }, out: { packets: 0, bytes: 0 } };
  for (const h of hits) {
    const ip = toCidr(h.ip);
    if (!ip || !ranges.some((r) => r.start <= ip.start && ip.end <= r.end)) continue;
    sum[h.side].packets += h.packets;
    sum[h.side].bytes += h.bytes;
  }
  return (['in', 'out'] as const).map((direction) => ({ direction, ...sum[direction] }));
}

/** Whether `entries` (canonical CIDR text) together hold every address of `query`. */
export function coversAll(query: Cidr, entries: readonly string[]): boolean {
  const ranges = entries.flatMap((t) => {
    const c = toCidr(t);
    return c && c.start <= query.end && query.start <= c.end ? [c] : [];
  });
  ranges.sort((a, b) => a.start - b.start);
  let next = query.start;
  for (const r of ranges) {
    if (r.start > next) return false;
    if (r.end >= query.end) return true;
    next = Math.max(next, r.end + 1);
  }
  return false;
}

/** What the agent's set holds of `query` now (read-only); a failed open or read is reported, not thrown. */
export async function readKernel(open: Promise<FirewallPlugin>, query: Cidr): Promise<KernelView> {
  let plugin: FirewallPlugin;
  try {
    plugin = await open;
  } catch (err) {
    return { plugin: null, inKernel: null, entries: [], error: errorMessage(err) };
  }
  try {
    if (plugin.lookup) {
      // Only what overlaps the query (a million-element nft set is never listed whole for it).
      const found = await plugin.lookup(query);
      const entries = found.map((e) => ({ cidr: e.cidr, timeoutSeconds: e.timeoutSeconds ?? (e.cidr.includes('/') ? null : undefined) }));
      return { plugin: plugin.name, inKernel: coversAll(query, found.map((e) => e.cidr)), entries };
    }
    const timed = plugin.listTimeouts ? await plugin.listTimeouts() : undefined;
    const all = timed ? [...timed.keys()] : await plugin.list();
    const overlapping = all.filter((t) => {
      const c = toCidr(t);
      return c !== undefined && c.start <= query.end && query.start <= c.end;
    });
    const entries = overlapping.map((cidr) => ({ cidr, timeoutSeconds: timed ? (timed.get(cidr) ?? null) : undefined }));
    return { plugin: plugin.name, inKernel: coversAll(query, overlapping), entries };
  } catch (err) {
    return { plugin: plugin.name, inKernel: null, entries: [], error: errorMessage(err) };
  }
}

/**
 * Where the kernel read could tell presence but not the remaining time (an nft set of
 * addresses looked up one by one: listing it whole is what costs minutes at a million), the
 * time comes from what the agent applied: the kernel counts down from exactly that.
 */
function withRecordedTimeouts(kernel: KernelView, state: Pick<StateStore, 'loadApplied'>, now: number): KernelView {
  if (kernel.plugin === null || !kernel.entries.some((e) => e.timeoutSeconds === undefined)) return kernel;
  const wanted = new Set(kernel.entries.filter((e) => e.timeoutSeconds === undefined).map((e) => e.cidr));
  const expiry = new Map<string, number | null>();
  for (const e of state.loadApplied(kernel.plugin)?.entries ?? []) {
    const text = e.cidr.endsWith('/32') ? e.cidr.slice(0, -3) : e.cidr;
    if (wanted.has(text)) expiry.set(text, e.expiresAt);
  }
  return {
    ...kernel,
    entries: kernel.entries.map((e) => {
      if (e.timeoutSeconds !== undefined || !expiry.has(e.cidr)) return e;
      const at = expiry.get(e.cidr)!;
      return { ...e, timeoutSeconds: at === null ? null : Math.max(0, Math.min(MAX_KERNEL_TIMEOUT_S, at - now)) };
    }),
  };
}

export interface ExplainDeps {
  readonly config: AgentConfig;
  readonly state: StateStore;
  readonly logger: Logger;
  /** The configured backend (opened by the caller; a failure to open it is reported as the kernel's). */
  readonly plugin: Promise<FirewallPlugin>;
  /** Given: pull first (as `plan` does, without applying or writing anything). */
  readonly api?: ThreatIntelApi;
  readonly now?: number;
}

export async function explain(deps: ExplainDeps, query: Cidr): Promise<ExplainReport> {
  const { config, state, logger, plugin } = deps;
  // The kernel is read while the selection runs.
  const kernelP = readKernel(plugin, query);
  let selected: { explanation: Explanation; now: number; settings: Settings; feedAsOf: number };
  if (deps.api) {
    const protectedSet = localProtectedSet(config, state, logger);
    const plan = await computePlan({ config, state, logger, api: deps.api, protectedSet, explainFor: query, ...(deps.now ? { now: () => deps.now! } : {}) }, true);
    const explanation = explainAddress({ query, selection: plan.selection, protectedSet: await protectedSet, whitelist: plan.feeds.whitelist.values() });
    selected = { explanation, now: plan.now, settings: plan.settings, feedAsOf: plan.now };
  } else {
    const offline = await loadOfflineInput({ config, state, logger, ...(deps.now ? { now: deps.now } : {}) });
    const { input } = offline;
    const selection = selectEntries({ ...input, explainFor: query });
    const explanation = explainAddress({ query, selection, protectedSet: input.protectedSet, whitelist: input.whitelist });
    selected = { explanation, now: input.now, settings: offline.settings.settings, feedAsOf: offline.feedAsOf };
  }
  const kernel = withRecordedTimeouts(await kernelP, state, Math.floor(Date.now() / 1000));
  const hits = kernel.plugin !== null ? await hitCountersFor(await plugin, kernel.entries) : undefined;
  let override: LocalOverride | undefined;
  try {
    override = overrideFor(loadOverrides(config.state_dir), query, selected.now);
  } catch (err) {
    logger.warn(`local overrides unreadable: ${errorMessage(err)}`);
  }
  return { ...selected, minPrefix: config.min_prefix, refreshed: deps.api !== undefined, kernel, hits, override };
}
