/**
 * Apply time of N names through unbound-control (not a test): a real unbound in a network
 * namespace (the resolver tests' lab), the agent's unbound plugin adding N names from
 * nothing, then a change of 1%, then a flush. Root required.
 *
 *   npx tsx scripts/bench/standalone/unbound.ts [--names 100000]
 */
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createDnsRunner } from '../../../src/dns/exec.js';
import { createUnboundPlugin } from '../../../src/dns/unbound/plugin.js';
import { createResolverLab } from '../../../test/integration/dns/resolver-lab.js';
import { destroyAll } from '../../../test/netns/netns.js';

const { values } = parseArgs({ options: { names: { type: 'string', default: '100000' } } });
const n = Number(values.names);
const lab = await createResolverLab({ records: { 'n1.bench.example': '198.18.0.1' } });
try {
  const plugin = createUnboundPlugin({ control: lab.control, confFile: lab.includeFile, answer: { action: 'nxdomain' }, runner: createDnsRunner(), logger: pino({ level: 'warn' }) });
  const names = Array.from({ length: n }, (_, i) => `n${i}.bench.example`);
  const time = async (what: string, f: () => Promise<unknown>) => {
    const t0 = performance.now();
    const r = await f();
    console.log(`${what}: ${((performance.now() - t0) / 1000).toFixed(2)} s ${r ? JSON.stringify({ ...(r as object), foreign: undefined }) : ''}`);
  };
  await time(`apply ${n} names (from none)`, () => plugin.apply(names));
  console.log(`  n1.bench.example -> ${await lab.status('n1.bench.example')}; zones in unbound: ${(await lab.localZones()).length}`);
  await time(`apply again, nothing changed`, () => plugin.apply(names));
  const changed = [...names.slice(n / 100), ...Array.from({ length: n / 100 }, (_, i) => `m${i}.bench.example`)];
  await time(`apply with 1% replaced`, () => plugin.apply(changed));
  await time('restart of unbound with the include file', async () => {
    await lab.stop();
    await lab.start();
  });
  console.log(`  after restart: m1.bench.example -> ${await lab.status('m1.bench.example')}`);
  await time('flush', () => plugin.flush());
} finally {
  await lab.destroy();
  await destroyAll();
}
