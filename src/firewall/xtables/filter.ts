import { withFailingLine } from '../exec.js';
import { parseNftJson } from '../nft/json.js';
import type { CommandRunner } from '../plugin.js';

/**
 * iptables (filter table) helpers shared by the ipset and iptables plugins:
 * reading the table with `iptables -S`, planning the agent's hooks, and
 * applying changes with ONE `iptables-restore --noflush` run (one commit, so
 * each change is atomic and touches only the lines given).
 */

/** Wait at most this long for the xtables lock (legacy iptables; the nft variant ignores it). */
export const XTABLES_WAIT_S = '10';

export interface FilterState {
  /** Every chain of the filter table: built-ins (`-P`) and user chains (`-N`). */
  readonly chains: ReadonlySet<string>;
  /** `-A CHAIN ...` lines by chain, in order. */
  readonly rules: ReadonlyMap<string, readonly string[]>;
}

export function parseIptablesS(text: string): FilterState {
  const chains = new Set<string>();
  const rules = new Map<string, string[]>();
  for (const raw of text.split('\n')) {
    const line = raw.trimEnd();
    if (line.startsWith('-P ') || line.startsWith('-N ')) {
      const name = line.split(' ')[1];
      if (name) chains.add(name);
    } else if (line.startsWith('-A ')) {
      const name = line.split(' ')[1];
      if (!name) continue;
      let list = rules.get(name);
      if (!list) rules.set(name, (list = []));
      list.push(line);
    }
  }
  return { chains, rules };
}

export async function readFilter(runner: CommandRunner): Promise<FilterState> {
  const { stdout } = await runner.run('iptables', ['-w', XTABLES_WAIT_S, '-t', 'filter', '-S']);
  return parseIptablesS(stdout);
}

/** Run lines inside one `*filter ... COMMIT` block with `iptables-restore --noflush`. */
export async function iptablesRestore(runner: CommandRunner, lines: readonly string[]): Promise<void> {
  if (lines.length === 0) return;
  const input = `*filter\n${lines.join('\n')}\nCOMMIT\n`;
  try {
    await runner.run('iptables-restore', ['-w', XTABLES_WAIT_S, '--noflush'], { input });
  } catch (err) {
    throw withFailingLine(err, input, /Error occurred at line: (\d+)/);
  }
}

/** The exact rule the agent uses as a hook: `-A HOOK -j CHAIN`. */
export function hookLine(hook: string, chain: string): string {
  return `-A ${hook} -j ${chain}`;
}

/**
 * Chains to hook into: the configured ones that exist. DOCKER-USER is hooked
 * when it exists and either is configured or FORWARD is (traffic to
 * containers is forwarded traffic, and Docker's own FORWARD rules can accept
 * it before a FORWARD hook placed after them). A missing DOCKER-USER is never
 * created: it is Docker's chain.
 */
export function effectiveHooks(hookChains: readonly string[], state: FilterState): string[] {
  const out: string[] = [];
  for (const h of hookChains) if (state.chains.has(h) && !out.includes(h)) out.push(h);
  if (hookChains.includes('FORWARD') && state.chains.has('DOCKER-USER') && !out.includes('DOCKER-USER')) out.push('DOCKER-USER');
  return out;
}

export interface HookPlan {
  /** iptables-restore lines. */
  readonly lines: string[];
  /** Human-readable descriptions of what was missing or wrong. */
  readonly fixes: string[];
  /** Chains whose last hook to the agent's chain these lines remove (a direction change, a stale hook). */
  readonly unhooked: string[];
}

/**
 * Lines that make the agent's chain hooked exactly once into each wanted
 * chain (inserted at position 1 when missing) and nowhere else. An existing
 * hook is left where it is: an administrator may have put rules above it on
 * purpose (e.g. an accept for a management network).
 */
export function planHooks(state: FilterState, chain: string, hooks: readonly string[]): HookPlan {
  const lines: string[] = [];
  const fixes: string[] = [];
  const unhooked: string[] = [];
  for (const [name, rules] of state.rules) {
    if (name === chain) continue;
    const count = rules.filter((r) => r === hookLine(name, chain)).length;
    const wanted = hooks.includes(name);
    const extra = wanted ? count - 1 : count;
    if (!wanted && count > 0) unhooked.push(name);
    for (let i = 0; i < extra; i++) lines.push(`-D ${name} -j ${chain}`);
    if (extra > 0) fixes.push(wanted ? `duplicate hook ${name} -> ${chain} removed` : `stale hook ${name} -> ${chain} removed`);
  }
  for (const h of hooks) {
    const count = (state.rules.get(h) ?? []).filter((r) => r === hookLine(h, chain)).length;
    if (count === 0) {
      lines.push(`-I ${h} 1 -j ${chain}`);
      fixes.push(`hook ${h} -> ${chain}`);
    }
  }
  return { lines, fixes, unhooked };
}

/** True when any hook of the agent's chain exists in any chain. */
export function anyHook(state: FilterState, chain: string): boolean {
  for (const [name, rules] of state.rules) if (rules.includes(hookLine(name, chain))) return true;
  return false;
}

export interface RemovalPlan {
  readonly lines: string[];
  /** Chains from which a hook is removed. */
  readonly unhooked: string[];
  /** Rules the agent did not create that jump to its chain: the chain cannot be deleted while they exist. */
  readonly foreign: string[];
}

/**
 * Lines removing the agent's hooks (exactly `-A X -j CHAIN`, in any chain)
 * and its chain. Rules someone else wrote that jump to the chain are not
 * touched; the chain is then emptied but kept.
 */
export function planRemoval(state: FilterState, chain: string): RemovalPlan {
  const lines: string[] = [];
  const foreign: string[] = [];
  const unhooked: string[] = [];
  const ref = new RegExp(` -[jg] ${chain.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?: |$)`);
  for (const [name, rules] of state.rules) {
    if (name === chain) continue;
    for (const r of rules) {
      if (r === hookLine(name, chain)) {
        lines.push(`-D ${name} -j ${chain}`);
        unhooked.push(name);
      }
      else if (ref.test(r)) foreign.push(r);
    }
  }
  if (state.chains.has(chain)) {
    lines.push(`-F ${chain}`);
    if (foreign.length === 0) lines.push(`-X ${chain}`);
  }
  return { lines, unhooked, foreign };
}

const BUILT_IN = new Set(['INPUT', 'FORWARD', 'OUTPUT']);

/**
 * With the nf_tables variant of iptables, built-in chains exist only once a
 * rule has been put in them: hooking FORWARD makes iptables-nft create the
 * nft base chain `ip filter FORWARD` (and the table), and deleting the hook
 * leaves that chain behind, empty. After the agent removed its hooks, delete
 * such leftovers so the ruleset is as before the agent came: only built-in
 * chains it just unhooked, only when empty with policy accept (which filters
 * nothing: iptables shows exactly the same ruleset with or without them), and
 * the table only when nothing at all is left in it. Anything else (legacy
 * iptables, a rule or a drop policy someone set, a race) leaves them alone.
 */
export async function removeLeftoverBaseChains(runner: CommandRunner, unhooked: readonly string[]): Promise<string[]> {
  const candidates = [...new Set(unhooked)].filter((c) => BUILT_IN.has(c));
  if (candidates.length === 0) return [];
  try {
    const v = await runner.run('iptables', ['-V']);
    if (!/nf_tables/.test(`${v.stdout}${v.stderr}`)) return [];
    const { stdout } = await runner.run('nft', ['-j', 'list', 'table', 'ip', 'filter']);
    const items = parseNftJson(stdout) as Array<Record<string, Record<string, unknown> | undefined>>;
    const chains = new Map<string, Record<string, unknown>>();
    const ruleCount = new Map<string, number>();
    let others = 0;
    for (const item of items) {
      if (item.chain) chains.set(String(item.chain.name), item.chain);
      else if (item.rule) ruleCount.set(String(item.rule.chain), (ruleCount.get(String(item.rule.chain)) ?? 0) + 1);
      else if (!item.table && !item.metainfo) others++;
    }
    const remove = candidates.filter((c) => {
      const ch = chains.get(c);
      return ch !== undefined && ch.hook === c.toLowerCase() && ch.policy === 'accept' && (ruleCount.get(c) ?? 0) === 0;
    });
    if (remove.length === 0) return [];
    const lines = remove.map((c) => `delete chain ip filter ${c}`);
    const emptiesTable = others === 0 && ruleCount.size === 0 && [...chains.keys()].every((c) => remove.includes(c));
    if (emptiesTable) lines.push('delete table ip filter');
    await runner.run('nft', ['-f', '-'], { input: `${lines.join('\n')}\n` });
    return emptiesTable ? [...remove, 'table ip filter'] : remove;
  } catch {
    // Not the nft variant, no nft binary, or someone changed the table meanwhile: leave it.
    return [];
  }
}
