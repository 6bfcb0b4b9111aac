import { FirewallError } from '../../errors.js';
import type { CommandRunner } from '../../exec/runner.js';
import { fromNumber, type Cidr } from '../../net/ipv4.js';
import type { NftSetParsed } from './parse.js';
import type { NftLayout } from './text.js';

/**
 * Entries of the agent's sets overlapping `query` (see FirewallPlugin.lookup): the networks' set is listed (only it:
 * nft reads no other set's elements for that), addresses are asked for one by one in check mode
 * (`nft -c delete element`: "No such file or directory" when absent; nothing changes).
 */
export async function lookupNft(runner: CommandRunner, l: NftLayout, elements: (set: string) => Promise<NftSetParsed | undefined>, query: Cidr, hosts?: readonly number[]): Promise<Array<{ cidr: string; timeoutSeconds: number | undefined }>> {
  const out: Array<{ cidr: string; timeoutSeconds: number | undefined }> = [];
  const nets = await elements(l.nets);
  if (nets) for (let i = 0; i < nets.entries.length; i++) {
    const c = nets.entries.cidr(i);
    if (c.start <= query.end && query.start <= c.end) out.push({ cidr: c.text, timeoutSeconds: nets.entries.timeoutAt(i) });
  }
  let candidates: number[];
  if (query.prefix >= 24) candidates = Array.from({ length: query.end - query.start + 1 }, (_, i) => query.start + i);
  else if (hosts) candidates = hosts.filter((a) => a >= query.start && a <= query.end);
  else {
    const all = await elements(l.set);
    if (all) for (let i = 0; i < all.entries.length; i++) {
      const a = all.entries.starts[i]!;
      if (a >= query.start && a <= query.end) out.push({ cidr: all.entries.text(i), timeoutSeconds: all.entries.timeoutAt(i) });
    }
    return out;
  }
  for (let i = 0; i < candidates.length; i += 4096) {
    const part = candidates.slice(i, i + 4096);
    const cmds = part.map((a) => `delete element inet ${l.table} ${l.set} { ${fromNumber(a, 32).text} }`);
    let stderr = '';
    try {
      await runner.run('nft', ['-c', '-f', '-'], { input: cmds.join('\n') + '\n', readOnly: true });
    } catch (err) {
      if (!(err instanceof FirewallError) || err.stderr === undefined) throw err;
      stderr = err.stderr;
    }
    const absent = new Set<number>();
    for (const m of stderr.matchAll(/^[^\n:]*:(\d+):[\d-]+: Error: ([^\n]*)$/gm)) {
      if (!/No such file or directory/.test(m[2]!)) throw new FirewallError(`nft lookup failed: ${m[2]}`, { stderr });
      // nft's own evaluation (not the kernel) complains when the set or table is missing: nothing there.
      if (!m[2]!.startsWith('Could not process rule:')) return out;
      absent.add(Number(m[1]) - 1);
    }
    if (stderr !== '' && absent.size === 0) throw new FirewallError(`nft lookup failed: ${stderr.slice(0, 300)}`, { stderr });
    part.forEach((a, k) => {
      if (!absent.has(k)) out.push({ cidr: fromNumber(a, 32).text, timeoutSeconds: undefined });
    });
  }
  return out;
}

