import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** Every firewall-related tool the agent (or a backend it could pick) might run. */
export const FIREWALL_TOOLS = [
  'ipset',
  'nft',
  'iptables',
  'iptables-save',
  'iptables-restore',
  'iptables-legacy',
  'iptables-nft',
  'ip6tables',
  'ip6tables-restore',
  'ip',
  'modprobe',
] as const;

export interface FakeTools {
  /** Temp dir holding everything (remove it when done). */
  dir: string;
  /** Directory of the fakes. */
  bin: string;
  /** File every fake appends one line (`name args...`) to. */
  log: string;
  /** A PATH value with the fakes first. */
  path: string;
  /** The recorded calls, one per line (empty when none). */
  calls(): string[];
}

/**
 * A temp dir of shell scripts named like the firewall tools: each records its
 * name and arguments and exits 0 with no output, touching nothing.
 */
export function fakeFirewallTools(): FakeTools {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-fake-tools-'));
  const bin = join(dir, 'bin');
  const log = join(dir, 'calls.log');
  mkdirSync(bin);
  for (const tool of FIREWALL_TOOLS) {
    writeFileSync(join(bin, tool), `#!/bin/sh\necho "${tool} $*" >> '${log}'\nexit 0\n`, { mode: 0o755 });
  }
  return {
    dir,
    bin,
    log,
    path: `${bin}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}`,
    calls: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : []),
  };
}
