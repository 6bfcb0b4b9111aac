import { errorMessage } from '../../errors.js';
import type { Logger } from '../../log.js';
import { readOwned, writeOwned } from '../owned-file.js';
import { parseUnboundInclude, renderUnboundInclude, sinkholeRecord, unboundZoneType } from '../render.js';
import type { DnsAnswer, DnsApplyResult, DnsPlugin, LeftAlone } from '../types.js';
import type { CommandRunner } from '../../exec/runner.js';
import { runTool } from '../exec.js';
import { LocalDataView } from './local-data.js';

/** Lines per unbound-control call: large enough to stay quick, small enough to keep each call short. */
export const BATCH = 10_000;

/** The longest name unbound-control lists whole: it prints one of 253 characters (DNS's limit) cut short, ending in `&`. */
export const UNBOUND_LISTED_NAME_MAX = 252;

/**
 * Why unbound must not be given `name` as a zone, or undefined. A zone of a name unbound lists
 * cut short could never be found again in `list_local_zones`, so it would never be removed: it
 * would stay blocked until unbound restarts.
 */
export function unboundRefusal(name: string): string | undefined {
  if (name.length > UNBOUND_LISTED_NAME_MAX) return `too long for unbound (${name.length} characters; unbound-control lists a name of more than ${UNBOUND_LISTED_NAME_MAX} cut short, so its zone could never be removed)`;
  return undefined;
}

export interface UnboundOptions {
  /** e.g. ['unbound-control'] or ['unbound-control', '-c', '/etc/unbound/unbound.conf']. */
  control: readonly string[];
  /** The include file the agent owns (unbound.conf includes it). */
  confFile: string;
  answer: DnsAnswer;
  runner: CommandRunner;
  logger: Logger;
}

/** `name. type` lines of `unbound-control list_local_zones`, as name -> type. */
export function parseLocalZones(text: string): Map<string, string> {
  const zones = new Map<string, string>();
  for (const line of text.split('\n')) {
    const m = /^(\S+?)\.?\s+(\S+)\s*$/.exec(line.trim());
    if (m) zones.set(m[1]!.toLowerCase(), m[2]!);
  }
  return zones;
}

/**
 * unbound: runtime zones through `unbound-control local_zones` / `local_zones_remove` (names
 * on stdin, in batches), plus the include file so a restart of unbound keeps the blocks.
 *
 * Ownership: the agent's names are those in its include file, and the file is written before
 * the running unbound gets a name, never after: a write that fails (a full disk) then stops
 * the cycle before anything changed, and every zone the agent ever added can be found, and
 * removed, by a later cycle or `flush`. Additions go first and removals after, so a failure
 * half-way never leaves fewer blocks than before; the file is written again at the end with
 * exactly the names in force.
 *
 * Never taken over: a name unbound already holds as someone else's zone, or that carries
 * someone else's local data (see LocalDataView). An agent's zone that someone else's data
 * has moved into (an unbound restart) is given up, with that data put back.
 */
export function createUnboundPlugin(o: UnboundOptions): DnsPlugin {
  const ctl = (args: string[], input?: string) => runTool(o.runner, [...o.control, ...args], input);
  const type = unboundZoneType(o.answer);

  async function inBatches(args: string[], lines: readonly string[]): Promise<void> {
    for (let i = 0; i < lines.length; i += BATCH) await ctl(args, lines.slice(i, i + BATCH).join('\n') + '\n');
  }

  /** What unbound runs now, and someone else's data around the names in question. */
  async function look(owned: ReadonlySet<string>, names: Iterable<string>) {
    const runtime = parseLocalZones(await ctl(['list_local_zones']));
    const agentZones = new Set([...owned].filter((n) => runtime.has(n)));
    const data = new LocalDataView(await ctl(['list_local_data']), runtime, agentZones, new Set([...owned, ...names]));
    return { runtime, data };
  }

  /** Removes the agent's zones `names`, then puts back someone else's records they held. */
  async function removeZones(names: readonly string[], data: LocalDataView): Promise<void> {
    await inBatches(['local_zones_remove'], names);
    const back = names.flatMap((n) => data.foreignInside(n));
    if (back.length === 0) return;
    try {
      await inBatches(['local_datas'], back);
      o.logger.info({ records: back.length }, 'put back local data of someone else\'s that unbound held inside the agent\'s zones');
    } catch (err) {
      o.logger.error({ records: back.slice(0, 10) }, `local data of someone else's was inside the agent's zones and could not be put back (unbound has it again after a restart): ${errorMessage(err)}`);
    }
  }

  return {
    name: 'unbound',
    async list() {
      return parseUnboundInclude(readOwned(o.confFile));
    },
    async apply(names): Promise<DnsApplyResult> {
      const owned = new Set(parseUnboundInclude(readOwned(o.confFile)));
      const { runtime, data } = await look(owned, names);
      const want = new Set<string>();
      const leftAlone: LeftAlone[] = [];
      const add: string[] = [];
      for (const n of names) {
        const has = runtime.get(n);
        const record = data.foreignDataAt(n);
        // The record first: a local-data line without a zone of its own gets a transparent zone from unbound, and the record is what the administrator wrote.
        if (record !== undefined) leftAlone.push({ name: n, held: `local-data "${record.replace(/\s+/g, ' ')}"` });
        else if (has !== undefined && !owned.has(n)) leftAlone.push({ name: n, held: `local-zone "${n}." ${has}` });
        else {
          want.add(n);
          if (has !== type) add.push(n);
        }
      }
      // Logged by the cycle, once per change of this list (not every cycle).
      if (leftAlone.length) o.logger.debug({ names: leftAlone.slice(0, 10).map((l) => l.name), count: leftAlone.length }, 'unbound already has zones or local data at these names that are not the agent\'s: left alone');
      const remove = [...owned].filter((n) => !want.has(n) && runtime.has(n));
      // Recorded first: the file names every zone the agent is about to add (and those it still has).
      if (add.length) writeOwned(o.confFile, renderUnboundInclude([...new Set([...owned, ...want])].sort(), o.answer));
      await inBatches(['local_zones'], add.map((n) => `${n} ${type}`));
      if (o.answer.action === 'sinkhole') {
        const address = o.answer.address;
        await inBatches(['local_datas'], add.map((n) => sinkholeRecord(n, address)));
      }
      await removeZones(remove, data);
      const sorted = [...want].sort();
      writeOwned(o.confFile, renderUnboundInclude(sorted, o.answer));
      return { added: add.length, removed: remove.length, total: sorted.length, foreign: leftAlone.map((l) => l.name), leftAlone };
    },
    async flush() {
      const owned = parseUnboundInclude(readOwned(o.confFile));
      const { runtime, data } = await look(new Set(owned), []);
      await removeZones(owned.filter((n) => runtime.has(n)), data);
      // Emptied, not deleted: unbound.conf includes the file, and a missing include stops unbound from starting.
      writeOwned(o.confFile, renderUnboundInclude([], o.answer));
    },
  };
}
