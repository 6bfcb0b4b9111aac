import { describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { detectPlugin } from '../../../src/firewall/detect.js';
import type { CommandRunner } from '../../../src/exec/runner.js';

function runner(working: string[]): CommandRunner & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async run(file, args) {
      calls.push([file, ...args].join(' '));
      if (!working.includes(file)) throw new FirewallError(`command failed: ${file}: exit code 1: ${file} broken`, { stderr: `${file} broken` });
      return { stdout: '', stderr: '' };
    },
  };
}

describe('detectPlugin', () => {
  it('prefers nftables, then ipset (with iptables), then iptables', async () => {
    expect(await detectPlugin(runner(['nft', 'ipset', 'iptables']))).toBe('nftables');
    expect(await detectPlugin(runner(['ipset', 'iptables']))).toBe('ipset');
    // ipset alone is not enough: its set is hooked in with iptables
    await expect(detectPlugin(runner(['ipset']))).rejects.toBeInstanceOf(FirewallError);
    expect(await detectPlugin(runner(['iptables']))).toBe('iptables');
  });

  it('probes that the tools work, read-only', async () => {
    const r = runner(['nft']);
    await detectPlugin(r);
    expect(r.calls).toEqual(['nft -c add table inet wcf_agent_probe']);
  });

  it('throws FirewallError naming every failure when nothing works', async () => {
    const err = await detectPlugin(runner([])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    expect((err as Error).message).toMatch(/nftables: .*nft broken/);
    expect((err as Error).message).toMatch(/ipset: .*ipset broken/);
    expect((err as Error).message).toMatch(/iptables: .*iptables broken/);
  });
});
