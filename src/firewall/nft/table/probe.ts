import { FirewallError } from '../../../errors.js';
import type { CommandRunner } from '../../../exec/runner.js';
import { chainDiffers, chainMatches, listChains, wantedChains, type ListedChain } from './chains.js';
import { setDefLine, setDefs } from './sets.js';
import { shadowName } from './shadow.js';
import type { NftLayout } from '../text.js';
import { layoutSpan } from './variants.js';

/**
 * A look at the agent's table that reads no set element. nft 1.0.x fetches every element of every
 * set for nearly any listing (`list table`, `list chain`, `list sets`, `get element`): at a million
 * elements 18 s and 645 MB, so it cannot be the watcher's check every few seconds. Instead:
 *
 * - the chains (name, handle, hook, priority, policy) come from `nft -j list chains`, the one
 *   listing that fetches no element;
 * - everything else is asked of the kernel in nft's check mode (`nft -c`: the batch is evaluated
 *   by the kernel and then aborted, nothing changes), one batch per look:
 *   - `create table` fails with "File exists" when the table is there;
 *   - `create set` fails with "File exists" when the set is there, and `add set` with the
 *     definition the agent writes then succeeds only if the kernel finds it the same;
 *   - `delete rule ... handle H` fails with "No such file or directory" unless chain C holds a
 *     rule H: asked for each handle just above the agent's first chain, this finds every rule of
 *     the agent's chains without reading one. The agent creates its chains and then their rules
 *     in one batch, and the kernel numbers a table's objects in the order of their creation, so
 *     its rules are one unbroken run of handles, in the order of its chains. A rule another
 *     process deleted, inserted or appended breaks that run or its count;
 *   - `delete set|counter|quota|... handle H` over the same handles succeeds for an object
 *     nothing refers to: one another process added (the agent's own sets are all in use).
 *
 * What this cannot see: a rule replaced in place (`nft replace rule`, which keeps its handle), and
 * conntrack objects (helpers, timeouts, expectations), which nft cannot name by handle.
 */

/** Handles past the agent's last rule that are asked for (objects someone else added to the table). */
const EXTRA_HANDLES = 8;

/** Kinds of table objects nft can delete by handle, asked for in the window (see above). */
const OBJECT_KINDS = ['set', 'flowtable', 'counter', 'quota', 'limit', 'secmark', 'synproxy'] as const;

/** Whether each of the layout's sets is there with the agent's definition, missing, or there with another. */
export type SetState = 'ok' | 'absent' | 'other';

export interface NftProbe {
  /** The table exists. */
  readonly table: boolean;
  /** What is missing or altered, worded as the repairs name it; empty: intact. */
  readonly missing: string[];
  /** Each set of the layout. */
  readonly sets: ReadonlyMap<string, SetState>;
  /** Every chain of the table, as listed. */
  readonly chains: readonly ListedChain[];
  /** Rules found in each chain of the table (by handle, ascending). */
  readonly rules: ReadonlyMap<string, readonly number[]>;
  /** The chains are not as laid out (missing, altered, another in the table, rules not the agent's run): they are rewritten. */
  readonly rewrite: boolean;
  /** Another process added objects to the table (chains, rules, sets, counters...). */
  readonly intruders: boolean;
  /** A shadow table (see shadow.ts) is there: an earlier re-creation did not finish. */
  readonly shadow: boolean;
}

/** One nft error report: the batch line it is about and what it says. */
interface Complaint {
  readonly line: number;
  readonly text: string;
}

function complaints(stderr: string): Complaint[] {
  const out: Complaint[] = [];
  for (const m of stderr.matchAll(/^[^\n:]*:(\d+):[\d-]+: Error: ([^\n]*)$/gm)) out.push({ line: Number(m[1]), text: m[2]! });
  return out;
}

/**
 * Whether the batch reached the kernel. nft evaluates the whole batch first and sends none of it
 * when any command fails there; so one complaint in the kernel's words ("Could not process rule:")
 * means every complaint is the kernel's. Not each complaint on its own: when the kernel answers
 * "No such file or directory", nft 1.0.6 looks for a similar name anywhere on the host and, if it
 * finds one (a chain `input` in another table), words the kernel's answer as "No such file or
 * directory; did you mean chain ‘input’ in table inet ‘filter’?", without that prefix. Read as
 * nft's own evaluation, that made every probe beside such a table fail.
 */
function reachedKernel(said: readonly Complaint[]): boolean {
  return said.some((c) => c.text.startsWith('Could not process rule:'));
}

/**
 * Lines per check-mode run. The kernel answers each failing command of a batch with a message, and
 * past a few hundred of them (408 in a 692-line probe) the rest are lost on the way back, so that
 * a command that failed looks as if it succeeded. Every run is kept well below that, and ends with
 * a command that always fails (SENTINEL): its complaint missing means answers were lost.
 */
const CHECK_LINES = 150;
// A table handle no host reaches (the kernel counts them up from 1 per namespace). Not handle 0:
// within a batch nft 1.0.6 reads that as "no handle" and the command goes unanswered.
const SENTINEL = 'delete table inet handle 4294967295';

/** nft's complaints about one check-mode run, by line (none when it has none). */
async function checkRun(runner: CommandRunner, commands: readonly string[]): Promise<Map<number, string>> {
  try {
    await runner.run('nft', ['-c', '-f', '-'], { input: commands.join('\n') + '\n' });
    return new Map();
  } catch (err) {
    if (!(err instanceof FirewallError) || err.stderr === undefined) throw err;
    const said = complaints(err.stderr);
    if (said.length === 0 || !reachedKernel(said)) {
      // nft's own evaluation stopped the batch (the table changed between the listing and the
      // check, or an nft that reads this syntax differently): nothing is known; the next look asks again.
      throw new FirewallError(`nft check of the agent's table failed: ${err.stderr.slice(0, 300)}`, { stderr: err.stderr, cause: err });
    }
    return new Map(said.map((c) => [c.line, c.text]));
  }
}

/**
 * nft's complaints about `commands` run in check mode (nothing changes), by line (1 = the first
 * command; none when it has none), in runs of at most CHECK_LINES.
 */
export async function checkBatch(runner: CommandRunner, commands: readonly string[]): Promise<Map<number, string>> {
  const out = new Map<number, string>();
  for (let from = 0; from < commands.length; from += CHECK_LINES) {
    const part = [...commands.slice(from, from + CHECK_LINES), SENTINEL];
    const said = await checkRun(runner, part);
    if (!said.has(part.length)) throw new FirewallError(`nft check of the agent's table lost answers (its last command, which always fails, was not answered): ${part.length} commands`);
    for (const [line, text] of said) if (line < part.length) out.set(from + line, text);
  }
  return out;
}


/**
 * The handles to ask about: just above the table's first chain, as many as a layout of the agent's
 * can take (`span`, see variants.ts), and a few more.
 */
function window(chains: readonly ListedChain[], span: number): { from: number; to: number } | undefined {
  if (chains.length === 0) return undefined;
  const first = Math.min(...chains.map((c) => c.handle));
  return { from: first + 1, to: first + Math.max(span, chains.length) + EXTRA_HANDLES };
}

/** Chains whose rules are looked for: the agent's names, not what another process may have added by the hundred. */
const RULE_CHAINS = new Set(['input', 'forward', 'output', 'prerouting', 'refuse']);

/** Probe the table (see above); `span`: the most handles a layout of the agent's takes. */
export async function probeNft(runner: CommandRunner, l: NftLayout, span = layoutSpan(l)): Promise<NftProbe> {
  const t = `inet ${l.table}`;
  const chains = (await listChains(runner)).get(t) ?? [];
  const lines: string[] = [`create table ${t}`, `create table inet ${shadowName(l)}`];
  const setLine = new Map<string, number>();
  for (const def of setDefs(l)) {
    setLine.set(def.name, lines.length + 1);
    lines.push(`create set ${t} ${def.name} ${setDefLine(l, def)}`, `add set ${t} ${def.name} ${setDefLine(l, def)}`);
  }
  const ruleLines: Array<{ line: number; chain: string; handle: number }> = [];
  const w = window(chains, span);
  const ruleChains = chains.filter((c) => RULE_CHAINS.has(c.name) || wantedChains(l).some((x) => x.name === c.name));
  for (let h = w?.from ?? 1; w && h <= w.to; h++) {
    for (const c of ruleChains) {
      lines.push(`delete rule ${t} ${c.name} handle ${h}`);
      ruleLines.push({ line: lines.length, chain: c.name, handle: h });
    }
  }
  const said = await checkBatch(runner, lines);
  // Any answer to `create table` means the table is there: "File exists", or "Operation not
  // permitted" for a table another process made with `flags owner` (whose then it is, and that it
  // is not the agent's, the ownership check says).
  const shadow = said.has(2);
  if (!said.has(1)) {
    return { table: false, missing: [`nft table ${t}`], sets: new Map(), chains: [], rules: new Map(), rewrite: true, intruders: false, shadow };
  }
  const sets = new Map<string, SetState>();
  for (const [name, line] of setLine) {
    sets.set(name, !said.has(line) ? 'absent' : said.has(line + 1) ? 'other' : 'ok');
  }
  const rules = new Map<string, number[]>(ruleChains.map((c) => [c.name, []]));
  for (const r of ruleLines) if (!said.has(r.line)) rules.get(r.chain)!.push(r.handle);
  const missing: string[] = [];
  for (const [name, state] of sets) {
    if (state === 'absent') missing.push(`nft set ${name}`);
    else if (state === 'other') missing.push(`nft set ${name} has another definition`);
  }
  const chainProblems = checkChains(l, chains, rules);
  missing.push(...chainProblems.missing);
  const intruders = chainProblems.intruders || (w !== undefined && (await objectsAdded(runner, l, chains, rules, w.from)));
  if (intruders) missing.push(`objects another process added to nft table ${t}`);
  return { table: true, missing, sets, chains, rules, rewrite: chainProblems.missing.length > 0 || intruders, intruders, shadow };
}

/**
 * Whether the table holds an object nothing refers to (a set, a counter...) among the handles from
 * `from` to a few past the last rule found: one another process added (see above). Handles of
 * rules and chains are not asked about.
 */
async function objectsAdded(runner: CommandRunner, l: NftLayout, chains: readonly ListedChain[], rules: ReadonlyMap<string, readonly number[]>, from: number): Promise<boolean> {
  const taken = new Set([...chains.map((c) => c.handle), ...[...rules.values()].flat()]);
  const last = Math.max(from - 1, ...taken);
  const lines: string[] = [];
  for (let h = from; h <= last + EXTRA_HANDLES; h++) {
    if (taken.has(h)) continue;
    for (const kind of OBJECT_KINDS) lines.push(`delete ${kind} inet ${l.table} handle ${h}`);
  }
  const said = await checkBatch(runner, lines);
  return lines.some((_, i) => !said.has(i + 1));
}

/**
 * The chains against the layout: each wanted chain there, declared as wanted, holding exactly its
 * rules as one run of handles that continues from the chain before (see above); no other chain.
 */
export function checkChains(l: NftLayout, chains: readonly ListedChain[], rules: ReadonlyMap<string, readonly number[]>): { missing: string[]; intruders: boolean } {
  const missing: string[] = [];
  const wanted = wantedChains(l);
  const names = new Set(wanted.map((c) => c.name));
  let next: number | undefined;
  let added = false;
  for (const want of wanted) {
    const listed = chains.find((c) => c.name === want.name);
    if (!listed) {
      missing.push(`nft chain ${want.name}`);
      next = undefined;
      continue;
    }
    if (!chainMatches(l, listed, want)) missing.push(chainDiffers(listed, want));
    const found = rules.get(want.name) ?? [];
    if (found.length === 0) missing.push(`rule in nft chain ${want.name}`);
    else if (found.length > want.rules.length) added = true; // a rule inserted or appended by another process
    else if (found.length < want.rules.length || found.some((h, i) => h !== (i === 0 ? (next ?? h) : found[i - 1]! + 1))) {
      missing.push(`rules of nft chain ${want.name} (differed from expected)`);
    }
    next = found.length === want.rules.length ? found.at(-1)! + 1 : undefined;
  }
  return { missing, intruders: added || chains.some((c) => !names.has(c.name)) };
}
