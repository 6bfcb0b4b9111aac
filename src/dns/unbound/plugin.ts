import type { Logger } from '../../log.js';
import { readOwned, writeOwned } from '../owned-file.js';
import { parseUnboundInclude, renderUnboundInclude, sinkholeRecord, unboundZoneType } from '../render.js';
import type { DnsAnswer, DnsApplyResult, DnsPlugin } from '../types.js';
import type { CommandRunner } from '../../exec/runner.js';
import { runTool } from '../exec.js';

/** Lines per unbound-control call: large enough to stay quick, small enough to keep each call short. */
export const BATCH = 10_000;

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
 * Ownership: the agent's names are those in its include file. A name it wants to block
 * that unbound already holds as someone else's zone is left alone (never taken over, so
 * never removed later); only names of the include file are ever removed. Additions go first
 * and removals after, so a failure half-way never leaves fewer blocks than before; the file
 * is written last, once the runtime agrees with it (the next cycle repairs a difference).
 */
export function createUnboundPlugin(o: UnboundOptions): DnsPlugin {
  const ctl = (args: string[], input?: string) => runTool(o.runner, [...o.control, ...args], input);
  const type = unboundZoneType(o.answer);

  async function inBatches(args: string[], lines: readonly string[]): Promise<void> {
    for (let i = 0; i < lines.length; i += BATCH) await ctl(args, lines.slice(i, i + BATCH).join('\n') + '\n');
  }

  return {
    name: 'unbound',
    async list() {
      return parseUnboundInclude(readOwned(o.confFile));
    },
    async apply(names): Promise<DnsApplyResult> {
      const owned = new Set(parseUnboundInclude(readOwned(o.confFile)));
      const runtime = parseLocalZones(await ctl(['list_local_zones']));
      const want = new Set<string>();
      const foreign: string[] = [];
      const add: string[] = [];
      for (const n of names) {
        const has = runtime.get(n);
        if (has !== undefined && !owned.has(n)) {
          foreign.push(n);
          continue;
        }
        want.add(n);
        if (has !== type) add.push(n);
      }
      if (foreign.length) o.logger.warn({ names: foreign.slice(0, 10), count: foreign.length }, 'unbound already has zones of these names that are not the agent\'s: left alone');
      const remove = [...owned].filter((n) => !want.has(n) && runtime.has(n));
      await inBatches(['local_zones'], add.map((n) => `${n} ${type}`));
      if (o.answer.action === 'sinkhole') {
        const address = o.answer.address;
        await inBatches(['local_datas'], add.map((n) => sinkholeRecord(n, address)));
      }
      await inBatches(['local_zones_remove'], remove);
      const sorted = [...want].sort();
      writeOwned(o.confFile, renderUnboundInclude(sorted, o.answer));
      return { added: add.length, removed: remove.length, total: sorted.length, foreign };
    },
    async flush() {
      const owned = parseUnboundInclude(readOwned(o.confFile));
      const runtime = parseLocalZones(await ctl(['list_local_zones']));
      await inBatches(['local_zones_remove'], owned.filter((n) => runtime.has(n)));
      // Emptied, not deleted: unbound.conf includes the file, and a missing include stops unbound from starting.
      writeOwned(o.confFile, renderUnboundInclude([], o.answer));
    },
  };
}
