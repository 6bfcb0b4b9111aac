import type { AgentConfig } from '../config/load.js';
import type { Logger } from '../log.js';
import { foreignSummary, type EntryCheck, type EntryColumns, type OwnedObject, type PluginName } from '../firewall/index.js';
import { errorMessage } from '../errors.js';
import { runningDaemon, type DaemonPresence } from '../agent/state/daemon-presence.js';
import { lockHolder } from '../agent/state/lock.js';
import { describeHolder } from '../agent/state/flock.js';
import { loadOverrides } from '../agent/state/overrides-store.js';
import { countOverrides } from '../policy/overrides.js';
import { openPlugin } from './context.js';
import { missingKernelRights } from './kernel-rights.js';

/** What `status` reads besides state.json: the kernel, the daemon, the overrides. Read-only. */
export interface LiveStatus {
  daemon: DaemonPresence | undefined;
  /** Who holds the agent lock (a cycle in progress), if anyone: its PID when it recorded one, and "pid N" with its PID namespace when another. */
  lock: { pid: number | undefined; who: string } | undefined;
  firewall: {
    plugin: PluginName | null;
    objects: OwnedObject[];
    /** Entries in the owned set now; null when it cannot be read (or for the dry run), or was not listed. */
    entries: number | null;
    /** Not listed (a backend whose listing is slow past this size): the count the agent last applied. */
    appliedNotListed?: number;
    /** The last applied set checked against the kernel (FirewallPlugin.verify), when there is one. */
    check?: EntryCheck;
    /** Why the backend could not even be opened (no tool found). */
    error?: string;
  };
  overrides: { allow: number; block: number } | { error: string };
}

export type Enforcing = { enforcing: boolean | null; why: string };

/**
 * Whether the firewall holds the agent's rules now, from the kernel's own
 * answer: never "yes" with the dry run, with running disabled, with any owned
 * object missing (after `flush`, before the first sync, after another tool
 * removed a hook), or when the kernel cannot be read.
 */
export function enforcingOf(live: LiveStatus, running: boolean): Enforcing {
  const fw = live.firewall;
  if (fw.plugin === 'dry-run') return { enforcing: false, why: 'dry run: nothing enforced' };
  if (!running) return { enforcing: false, why: 'running disabled' };
  if (fw.error !== undefined) return { enforcing: null, why: `cannot read the firewall: ${fw.error}` };
  const unreadable = fw.objects.filter((o) => o.state === 'unreadable');
  if (unreadable.length) return { enforcing: null, why: `cannot read ${byError(unreadable)}` };
  const missing = fw.objects.filter((o) => o.state === 'absent');
  if (missing.length === fw.objects.length) return { enforcing: false, why: 'none of the agent\'s objects is in the kernel (flushed, or never synced)' };
  if (missing.length) return { enforcing: false, why: `missing from the kernel: ${missing.map((o) => o.what).join(', ')}` };
  // An object under the agent's name that the agent did not create: it refuses to touch it, so nothing it owns enforces.
  const foreign = fw.objects.filter((o) => o.state === 'foreign');
  if (foreign.length) return { enforcing: false, why: foreignSummary(foreign)! };
  // Every object there says nothing of what the set holds: a flushed set blocks nothing.
  const check = fw.check;
  if (check && check.missing > 0) return { enforcing: false, why: `the kernel lacks entries the agent applied (${check.missing} of ${check.checked} not found: a set flushed or entries deleted by another process)` };
  if (check && fw.entries === null) return { enforcing: true, why: `${check.checked} applied entries in the kernel (each one checked; the set is not listed past ${LIST_UP_TO.toLocaleString('en')} entries)` };
  if (check) return { enforcing: true, why: `${fw.entries} entries in the kernel` };
  if (fw.entries === null && fw.appliedNotListed !== undefined) return { enforcing: true, why: `${fw.appliedNotListed} entries applied (not listed from the kernel past ${LIST_UP_TO.toLocaleString('en')} entries)` };
  return { enforcing: true, why: `${fw.entries ?? '?'} entries in the kernel` };
}

/** `a, b (error)` for objects sharing one error: a tool's refusal is said once, not once per object. */
export function byError(objects: readonly OwnedObject[]): string {
  const groups = new Map<string, string[]>();
  for (const o of objects) groups.set(o.error ?? 'error', [...(groups.get(o.error ?? 'error') ?? []), o.what]);
  return [...groups].map(([error, what]) => `${what.join(', ')} (${error})`).join('; ');
}

/**
 * Largest set `status` lists to count it, for a backend whose listing fetches every element
 * (nftables: about half a second at this size; a minute and hundreds of MB at a million).
 */
export const LIST_UP_TO = 20_000;

/** The agent's objects as the kernel holds them; an error (said once) when they cannot be read. */
async function readFirewall(config: AgentConfig, logger: Logger, applied: number, lastApplied?: (plugin: PluginName) => EntryColumns | undefined): Promise<LiveStatus['firewall']> {
  const firewall: LiveStatus['firewall'] = { plugin: null, objects: [], entries: null };
  // Without the capability every read of the kernel is refused: said once, and no tool is run.
  const missing = missingKernelRights(config.plugin, { write: false });
  if (missing) return { ...firewall, plugin: config.plugin === 'auto' ? null : config.plugin, error: missing };
  try {
    // Quiet: the auto-detection line would mix into the status output on a terminal.
    const plugin = await openPlugin(config, logger.child({}, { level: 'warn' }), false);
    firewall.plugin = plugin.name;
    if (plugin.name !== 'dry-run') {
      firewall.objects = await plugin.objects();
      // Not past LIST_UP_TO for a backend whose whole listing is slow at scale (nftables fetches every
      // element): the applied count in the state says what the agent put there.
      if (firewall.objects.every((o) => o.state === 'present')) {
        if (!plugin.lookup || applied <= LIST_UP_TO) firewall.entries = (await plugin.list()).length;
        else firewall.appliedNotListed = applied;
        const entries = plugin.verify ? lastApplied?.(plugin.name) : undefined;
        if (entries) firewall.check = await plugin.verify!(() => entries);
      }
    }
  } catch (err) {
    firewall.error = errorMessage(err);
  }
  return firewall;
}

/**
 * `applied`: how many entries the agent last applied (state.json), to judge whether a listing is cheap;
 * `lastApplied`: those entries as of now (the applied record), to check the kernel holds them.
 */
export async function readLiveStatus(config: AgentConfig, logger: Logger, applied = 0, lastApplied?: (plugin: PluginName) => EntryColumns | undefined): Promise<LiveStatus> {
  const now = Math.floor(Date.now() / 1000);
  let overrides: LiveStatus['overrides'];
  try {
    overrides = countOverrides(loadOverrides(config.state_dir), now);
  } catch (err) {
    overrides = { error: errorMessage(err) };
  }
  const firewall = await readFirewall(config, logger, applied, lastApplied);
  const held = await lockHolder(config.state_dir);
  const lock = held ? { pid: held.holder?.pid, who: describeHolder(held.holder) } : undefined;
  return { daemon: await runningDaemon(config.state_dir), lock, firewall, overrides };
}
