import { FirewallError, errorMessage } from '../errors.js';
import type { PluginName } from './plugin.js';
import type { CommandRunner } from '../exec/runner.js';
import { NFT_SLOW_ENTRIES } from './nft/scale.js';

export type DetectedPlugin = 'nftables' | 'ipset' | 'iptables';

/** Each backend and the read-only commands that prove its tools exist AND work here (module loaded, permission). */
const PROBES: ReadonlyArray<{ plugin: DetectedPlugin; commands: ReadonlyArray<readonly [string, readonly string[]]> }> = [
  // Check mode (`-c`): the kernel evaluates the batch and drops it. Not `nft list tables`: with a
  // large set anywhere in the ruleset, nft 1.0.x fetches every element even for that (minutes at a million).
  { plugin: 'nftables', commands: [['nft', ['-c', 'add', 'table', 'inet', 'wcf_agent_probe']]] },
  // The ipset backend hooks its set in with iptables: both must work.
  { plugin: 'ipset', commands: [['ipset', ['list', '-n']], ['iptables', ['-w', '10', '-t', 'filter', '-S']]] },
  { plugin: 'iptables', commands: [['iptables', ['-w', '10', '-t', 'filter', '-S']]] },
];

/**
 * `plugin: auto`: the first backend whose probes all succeed, in the order
 * nftables, ipset, iptables; ipset first when the agent is sized for more than
 * NFT_SLOW_ENTRIES (`capacity`: maximum_rules), where an nft set that large
 * slows every other nft user on the host (see nft/scale.ts). Probes only read.
 * Throws FirewallError with every probe's failure when none works.
 */
export async function detectPlugin(runner: CommandRunner, capacity = 0): Promise<DetectedPlugin> {
  const failures: string[] = [];
  const order = capacity > NFT_SLOW_ENTRIES ? [PROBES[1]!, PROBES[0]!, PROBES[2]!] : PROBES;
  for (const probe of order) {
    try {
      for (const [file, args] of probe.commands) await runner.run(file, args);
      return probe.plugin;
    } catch (err) {
      failures.push(`${probe.plugin}: ${errorMessage(err)}`);
    }
  }
  throw new FirewallError(`no usable firewall backend found (tried nftables, ipset, iptables):\n  ${failures.join('\n  ')}`, {
    stderr: failures.join('\n'),
  });
}

/** Every tool a backend may run. */
export const TOOLS = ['nft', 'ipset', 'iptables', 'iptables-restore'] as const;
export type Tool = (typeof TOOLS)[number];
/** The tools each backend runs (doctor checks they answer). */
export const PLUGIN_TOOLS: Record<Exclude<PluginName, 'dry-run'>, readonly Tool[]> = {
  nftables: ['nft'],
  ipset: ['ipset', 'iptables', 'iptables-restore'],
  iptables: ['iptables', 'iptables-restore'],
};

/** `TOOL --version` for each tool: its first output line, or null when missing or failing. */
export async function probeTools(runner: CommandRunner): Promise<Map<Tool, string | null>> {
  const out = new Map<Tool, string | null>();
  await Promise.all(
    TOOLS.map(async (t) => {
      try {
        const r = await runner.run(t, ['--version']);
        out.set(t, (r.stdout.trim() || r.stderr.trim()).split('\n')[0]!.trim() || t);
      } catch {
        out.set(t, null);
      }
    }),
  );
  return out;
}

