import { describe, expect, it } from 'vitest';
import { counterRunner } from '../../../src/metrics/index.js';

describe('counterRunner', () => {
  it('with netns, reads counters through `ip netns exec NAME`, the prefix the agent applies its rules with', async () => {
    // A namespace that does not exist: the failure names the command that was run.
    await expect(counterRunner('wcf-unit-no-such-ns').run('nft', ['-j', 'list', 'ruleset'])).rejects.toThrow(/command failed: ip netns exec wcf-unit-no-such-ns nft -j list ruleset/);
  });

  it('without netns, runs the tool directly', async () => {
    const r = await counterRunner(undefined).run(process.execPath, ['-e', 'process.stdout.write("direct")']);
    expect(r.stdout).toBe('direct');
  });
});
