import { withFailingLine } from '../exec.js';
import { parseNftJson } from '../nft/json.js';
import { OWNER_MARK } from '../ownership.js';
import type { CommandRunner } from '../../exec/runner.js';

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

/** The hook rule the agent writes, marked as its own: `-A HOOK -m comment --comment wcf-agent -j CHAIN`. */
export function hookLine(hook: string, chain: string): string {
  return `-A ${hook} -m comment --comment ${OWNER_MARK} -j ${chain}`;
}

/** The unmarked hook earlier versions wrote: `-A HOOK -j CHAIN`. Taken as the agent's only while its chain is. */
export function legacyHookLine(hook: string, chain: string): string {
  return `-A ${hook} -j ${chain}`;
}

/** 1-based positions in chain `name` of the agent's hooks, marked and legacy. */
function hookPositions(rules: readonly string[], name: string, chain: string): { marked: number[]; legacy: number[] } {
  const marked: number[] = [];
  const legacy: number[] = [];
  const m = hookLine(name, chain);
  const l = legacyHookLine(name, chain);
  rules.forEach((r, i) => {
    if (r === m) marked.push(i + 1);
    else if (r === l) legacy.push(i + 1);
  });
  return { marked, legacy };
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
 * purpose (e.g. an accept for a management network). An earlier version's
 * unmarked hook is replaced by the marked one at the same position. Only for
 * a chain that is the agent's: the caller has checked that.
 */
export function planHooks(state: FilterState, chain: string, hooks: readonly string[]): HookPlan {
  const replace: string[] = [];
  const lines: string[] = [];
  const fixes: string[] = [];
  const unhooked: string[] = [];
  for (const [name, rules] of state.rules) {
    if (name === chain) continue;
    const { marked, legacy } = hookPositions(rules, name, chain);
    const wanted = hooks.includes(name);
    let keep: number | undefined;
    if (!wanted && marked.length + legacy.length > 0) unhooked.push(name);
    if (wanted) {
      keep = marked[0] ?? legacy[0];
      if (keep !== undefined && marked.length === 0) replace.push(`-R ${name} ${keep} ${hookLine(name, chain).slice(`-A ${name} `.length)}`);
    }
    // Deleted by position, highest first, so the positions still to delete stay valid.
    const extra = [...marked, ...legacy].filter((p) => p !== keep).sort((a, b) => b - a);
    for (const p of extra) lines.push(`-D ${name} ${p}`);
    if (extra.length > 0) fixes.push(wanted ? `duplicate hook ${name} -> ${chain} removed` : `stale hook ${name} -> ${chain} removed`);
  }
  for (const h of hooks) {
    const { marked, legacy } = hookPositions(state.rules.get(h) ?? [], h, chain);
    if (marked.length + legacy.length === 0) {
      lines.push(`-I ${h} 1 ${hookLine(h, chain).slice(`-A ${h} `.length)}`);
      fixes.push(`hook ${h} -> ${chain}`);
    }
  }
  // Replacements first: they keep positions, which the deletions that follow rely on.
  return { lines: [...replace, ...lines], fixes, unhooked };
}

/** True when any hook of the agent's chain (marked, or an earlier version's) exists in any chain. */
export function anyHook(state: FilterState, chain: string): boolean {
  for (const [name, rules] of state.rules) {
    const { marked, legacy } = hookPositions(rules, name, chain);
    if (marked.length + legacy.length > 0) return true;
  }
  return false;
}

/** True when a hook marked as the agent's jumps to `chain`. */
export function anyMarkedHook(state: FilterState, chain: string): boolean {
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
 * Lines removing the agent's hooks (marked, or an earlier version's exact
 * `-A X -j CHAIN`, in any chain) and its chain. Only for a chain that is the
 * agent's. Rules someone else wrote that jump to the chain are not touched;
 * the chain is then emptied but kept.
 */
export function planRemoval(state: FilterState, chain: string): RemovalPlan {
  const lines: string[] = [];
  const foreign: string[] = [];
  const unhooked: string[] = [];
  const ref = new RegExp(` -[jg] ${chain.replace(/[.*+?^${}()|[\]\\-]/g, '\\$&')}(?: |$)`);
  for (const [name, rules] of state.rules) {
    if (name === chain) continue;
    const { marked, legacy } = hookPositions(rules, name, chain);
    const ours = new Set([...marked, ...legacy]);
    // By rule text, not position: each delete removes one copy, whatever moved since the read.
    for (const _ of marked) lines.push(`-D ${hookLine(name, chain).slice(3)}`);
    for (const _ of legacy) lines.push(`-D ${legacyHookLine(name, chain).slice(3)}`);
    if (ours.size > 0) unhooked.push(name);
    rules.forEach((r, i) => {
      if (!ours.has(i + 1) && ref.test(r)) foreign.push(r);
    });
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
