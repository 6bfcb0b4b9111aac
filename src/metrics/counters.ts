import { FirewallError } from '../errors.js';
import { stderrMatches } from '../firewall/exec.js';
import type { CommandRunner, OwnedNames, PluginName } from '../firewall/types.js';

/** Packets and bytes dropped (or rejected) by the agent's own rules since they were created. */
export interface DropCounters {
  packets: number;
  bytes: number;
}

const ZERO: DropCounters = { packets: 0, bytes: 0 };
/** nft: the table does not exist (running off, flushed, not synced yet). */
const NFT_ABSENT = /No such file or directory/i;
/** iptables: the chain does not exist (legacy wording; iptables-nft may instead call a missing chain "incompatible"). */
const IPT_ABSENT = /No chain\/target\/match by that name|does not exist/i;

/** Whether the filter table has a user chain `chain` (`iptables -S`, the listing the plugins read too). */
export async function iptablesChainExists(runner: CommandRunner, chain: string): Promise<boolean> {
  const { stdout } = await runner.run('iptables', ['-w', '5', '-t', 'filter', '-S']);
  return stdout.split('\n').some((l) => l.trim() === `-N ${chain}`);
}

/** Sum of every `counter` statement in the agent's table (`nft -j -t list table`: terse, no set elements). */
export function parseNftCounters(json: string): DropCounters {
  let items: unknown;
  try {
    items = (JSON.parse(json) as { nftables?: unknown }).nftables;
  } catch (err) {
    throw new FirewallError(`cannot parse nft JSON output: ${(err as Error).message}`, { cause: err });
  }
  if (!Array.isArray(items)) throw new FirewallError('cannot parse nft JSON output: no "nftables" array');
  const out = { ...ZERO };
  for (const item of items as Array<Record<string, unknown>>) {
    const rule = item?.rule as { expr?: unknown } | undefined;
    if (!rule || !Array.isArray(rule.expr)) continue;
    for (const e of rule.expr as Array<Record<string, unknown>>) {
      const c = e?.counter as { packets?: unknown; bytes?: unknown } | undefined;
      if (c && typeof c.packets === 'number' && typeof c.bytes === 'number') {
        out.packets += c.packets;
        out.bytes += c.bytes;
      }
    }
  }
  return out;
}

/**
 * Sum of the DROP/REJECT rules of `iptables -L CHAIN -v -x -n` (the ipset
 * plugin's set-match rule, or the iptables plugin's per-entry rules; LOG rules
 * are not counted, their packets reach the drop rule next).
 */
export function parseIptablesCounters(text: string): DropCounters {
  const out = { ...ZERO };
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    if (f.length < 3 || !/^\d+$/.test(f[0]!) || !/^\d+$/.test(f[1]!)) continue;
    if (f[2] !== 'DROP' && f[2] !== 'REJECT') continue;
    out.packets += Number(f[0]);
    out.bytes += Number(f[1]);
  }
  return out;
}

/**
 * Read the drop counters of the objects the agent owns. Read-only. Absent
 * objects count as zero; any other failure throws (the scrape keeps the last
 * values and flags the read as failed).
 */
export async function readDropCounters(plugin: PluginName, names: OwnedNames, runner: CommandRunner): Promise<DropCounters> {
  switch (plugin) {
    case 'dry-run':
      return { ...ZERO };
    case 'nftables':
      try {
        const { stdout } = await runner.run('nft', ['-j', '-t', 'list', 'table', 'inet', names.tableName]);
        return parseNftCounters(stdout);
      } catch (err) {
        if (stderrMatches(err, NFT_ABSENT)) return { ...ZERO };
        throw err;
      }
    case 'ipset':
    case 'iptables':
      try {
        const { stdout } = await runner.run('iptables', ['-w', '5', '-t', 'filter', '-L', names.chainName, '-v', '-x', '-n']);
        return parseIptablesCounters(stdout);
      } catch (err) {
        if (stderrMatches(err, IPT_ABSENT)) return { ...ZERO };
        // iptables-nft 1.8.x reports a chain missing from a missing table as "incompatible, use 'nft' tool".
        if (!(await iptablesChainExists(runner, names.chainName).catch(() => true))) return { ...ZERO };
        throw err;
      }
    default: {
      const never: never = plugin;
      throw new Error(`unknown plugin ${String(never)}`);
    }
  }
}
