import { FirewallError, LockHeldError, UsageError, errorMessage, exitCodeOf } from '../../errors.js';
import { parseCidr, type Cidr } from '../../net/ipv4.js';
import { activeOverrides, refuseBlock, refusalText, type LocalOverride } from '../../policy/overrides.js';
import { localSettings } from '../../config/local-settings.js';
import { askDaemon } from '../../agent/daemon/control-socket.js';
import { withLock } from '../../agent/state/lock.js';
import { applyLocal, baseFromApplied } from '../../agent/cycle/overrides-apply.js';
import { loadOverrides, MAX_NOTE, saveOverrides, withOverride, withoutOverride } from '../../agent/state/overrides-store.js';
import { localProtectedSet } from '../../agent/cycle/protect-applied.js';
import { runningDaemon } from '../../agent/state/daemon-presence.js';
import { escapeControls } from '../../util/terminal-text.js';
import type { AgentConfig } from '../../config/load.js';
import type { Logger } from '../../log.js';
import { duration, isoTime, printJson, table } from '../format.js';
import { loadContext, openPlugin, openState, type GlobalOptions } from '../context.js';
import { requireKernelRights } from '../kernel-rights.js';

/** The overrides store has its own lock, held only while the file is rewritten (the agent lock may be a long cycle's). */
const STORE_LOCK = 'overrides.lock';
/** How long `allow`/`block` wait for the daemon to apply: it may first finish a cycle in flight. */
const DAEMON_ANSWER_MS = 120_000;
/**
 * How long a command waits for a lock another `allow`/`block` holds (several run at once by
 * an operator or a script): each holds the store lock for milliseconds and, without a daemon,
 * the agent lock for one local apply. Longer than that is a sync in progress.
 */
const LOCK_WAIT_MS = 15_000;
const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

const epochNow = () => Math.floor(Date.now() / 1000);

export function parseAddress(value: string): Cidr {
  const r = parseCidr(value.trim());
  if (!r.ok) throw new UsageError(`ADDRESS: ${r.error}`);
  return r.cidr;
}

/** `--for 90s`, `30m`, `2h`, `7d` or plain seconds; undefined = until removed. */
export function parseFor(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const m = /^(\d{1,9})([smhd])?$/.exec(value.trim());
  if (!m || Number(m[1]) === 0) throw new UsageError(`--for: expected a duration such as 90s, 30m, 2h or 7d, got ${JSON.stringify(value)}`);
  return Number(m[1]) * UNIT_S[m[2] ?? 's']!;
}

export function parseNote(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > MAX_NOTE) throw new UsageError(`--note: at most ${MAX_NOTE} characters`);
  return value;
}

/** Who put the change in the firewall (`pending`: stored, a busy daemon or a sync in progress applies it), and the line to print. */
interface Enforced {
  readonly by: 'daemon' | 'command' | 'pending';
  readonly text: string;
}

/**
 * Tell the daemon to apply the overrides file, or apply it here under the
 * agent lock when no daemon runs. Answers what happened, or throws.
 */
async function enforceNow(config: AgentConfig, logger: Logger): Promise<Enforced> {
  let answer: string | undefined;
  try {
    answer = await askDaemon(config.state_dir, 'overrides', DAEMON_ANSWER_MS);
  } catch (err) {
    // The request stays queued in the daemon: it applies the file once the cycle in flight ends.
    return { by: 'pending', text: `stored; the daemon is busy (${errorMessage(err)}) and applies it when its cycle ends` };
  }
  const daemon = await runningDaemon(config.state_dir);
  if (answer !== undefined) {
    if (answer.startsWith('ok')) return { by: 'daemon', text: `applied by the daemon${daemon ? ` (${daemon.who})` : ''}: ${escapeControls(answer.slice(3))}` };
    throw new FirewallError(`the daemon could not apply it: ${escapeControls(answer.replace(/^error /, ''))}`);
  }
  // A daemon runs but its socket is not open (yet): applied here, its watcher would take the
  // change for another tool's and put its own set back. It reads the file at its next cycle.
  if (daemon) return { by: 'pending', text: `stored; the daemon (${daemon.who}) does not answer on its control socket (starting, or the socket could not be opened): it applies it at its next cycle` };
  const state = openState(config, logger);
  const plugin = await openPlugin(config, logger, false);
  try {
    const r = await withLock(
      config.state_dir,
      () => {
        state.refresh(); // another allow may have applied (and written the record) while this one waited
        const now = epochNow();
        return applyLocal({ config, state, plugin, logger, settings: state.small.settings ?? localSettings(config) }, baseFromApplied(state.loadApplied(plugin.name), now), now);
      },
      'agent.lock',
      LOCK_WAIT_MS,
    );
    return { by: 'command', text: `applied (no daemon running): ${r.applied} entries on ${plugin.name}` };
  } catch (err) {
    if (err instanceof LockHeldError) return { by: 'pending', text: `stored; a sync in progress (${err.who}) applies it` };
    throw err;
  }
}

function describe(o: LocalOverride, now: number): string {
  const until = o.expiresAt === null ? 'until removed' : `for ${duration(o.expiresAt - now)} (until ${isoTime(o.expiresAt)})`;
  return `${o.action === 'allow' ? 'allowed' : 'blocked'} ${o.cidr.text} ${until}`;
}

type OverrideFlags = GlobalOptions & { for?: string; note?: string; json?: boolean };

/** The answer of allow, block and overrides remove: the line on a terminal, one object with --json. */
async function answer(json: boolean | undefined, line: string, fields: Record<string, unknown>, enforced: Enforced): Promise<void> {
  if (json) await printJson({ ...fields, applied: { by: enforced.by, message: enforced.text } });
  else process.stdout.write(`${line}: ${enforced.text}\n`);
}

async function addOverride(action: 'allow' | 'block', address: string, opts: OverrideFlags): Promise<number> {
  const cidr = parseAddress(address);
  const seconds = parseFor(opts.for);
  const note = parseNote(opts.note);
  const { config, logger } = loadContext(opts);
  const now = epochNow();
  // Without a daemon this command writes the kernel itself: refused before anything is stored when it could not.
  if (!(await runningDaemon(config.state_dir))) requireKernelRights(config, action);
  const state = openState(config, logger); // creates the state dir (0700) on first use
  const override: LocalOverride = { cidr, action, createdAt: now, expiresAt: seconds === undefined ? null : now + seconds, ...(note !== undefined ? { note } : {}) };
  await withLock(
    config.state_dir,
    async () => {
      const list = loadOverrides(config.state_dir);
      if (action === 'block') {
        const allows = activeOverrides(list, now).filter((o) => o.action === 'allow' && o.cidr.text !== cidr.text);
        const refusal = refuseBlock(cidr, { protectedSet: await localProtectedSet(config, state, logger), minPrefix: config.min_prefix, allows });
        if (refusal) throw new UsageError(`ADDRESS: not blocked: ${refusalText(cidr, refusal)}`);
      }
      saveOverrides(config.state_dir, withOverride(list, override, now));
    },
    STORE_LOCK,
    LOCK_WAIT_MS,
  );
  const line = describe(override, now);
  try {
    const fields = { address: cidr.text, action, created: override.createdAt, expires: override.expiresAt, note: override.note ?? null };
    await answer(opts.json, line, fields, await enforceNow(config, logger));
    return 0;
  } catch (err) {
    process.stderr.write(`wcf-agent: ${line} (stored in ${config.state_dir}), but not in the firewall yet: ${errorMessage(err)}\n`);
    return exitCodeOf(err);
  }
}

export const allowCommand = (address: string, opts: OverrideFlags) => addOverride('allow', address, opts);
export const blockCommand = (address: string, opts: OverrideFlags) => addOverride('block', address, opts);

export async function overridesListCommand(opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const { config } = loadContext(opts);
  const now = epochNow();
  const live = activeOverrides(loadOverrides(config.state_dir), now);
  if (opts.json) {
    await printJson({
      overrides: live.map((o) => ({
        address: o.cidr.text,
        action: o.action,
        created: o.createdAt,
        expires: o.expiresAt,
        expires_in: o.expiresAt === null ? null : o.expiresAt - now,
        note: o.note ?? null,
      })),
    });
    return 0;
  }
  if (live.length === 0) {
    process.stdout.write('no local overrides\n');
    return 0;
  }
  const rows = live.map((o) => [o.cidr.text, o.action, o.expiresAt === null ? 'never' : `${isoTime(o.expiresAt)} (in ${duration(o.expiresAt - now)})`, isoTime(o.createdAt), escapeControls(o.note ?? '')]);
  process.stdout.write(table(['address', 'action', 'expires', 'created', 'note'], rows) + '\n');
  return 0;
}

export async function overridesRemoveCommand(address: string, opts: GlobalOptions & { json?: boolean }): Promise<number> {
  const cidr = parseAddress(address);
  const { config, logger } = loadContext(opts);
  const now = epochNow();
  if (!(await runningDaemon(config.state_dir))) requireKernelRights(config, 'overrides remove');
  openState(config, logger); // creates the state dir on first use
  await withLock(
    config.state_dir,
    async () => {
      const next = withoutOverride(loadOverrides(config.state_dir), cidr.text, now);
      if (!next) throw new UsageError(`ADDRESS: no local override for ${cidr.text} (see wcf-agent overrides)`);
      saveOverrides(config.state_dir, next);
    },
    STORE_LOCK,
    LOCK_WAIT_MS,
  );
  try {
    await answer(opts.json, `removed the local override for ${cidr.text}`, { address: cidr.text, removed: true }, await enforceNow(config, logger));
    return 0;
  } catch (err) {
    process.stderr.write(`wcf-agent: removed the local override for ${cidr.text}, but the firewall is not updated yet: ${errorMessage(err)}\n`);
    return exitCodeOf(err);
  }
}
