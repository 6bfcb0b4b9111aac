/**
 * dnsmasq's limits with the agent's servers-file (not a test: figures belong here). A real
 * dnsmasq in a namespace, set up as the resolver tests set it up from docs/url-feed.md; per
 * size N, the agent's dnsmasq backend applies N names (the file written, then SIGHUP):
 *
 *   apply     the backend's write and signal;
 *   reloaded  from just before the apply until dnsmasq answers NXDOMAIN for a name new in that
 *             file (dnsmasq re-reads the file in one go, answering nothing meanwhile);
 *   start     a restart of dnsmasq with that file, until it answers;
 *   RSS       dnsmasq's resident memory after the reload (VmRSS), and its growth per name;
 *   lookups   median / 99th percentile of 2000 lookups of a blocked name and of an allowed one
 *             (answered from dnsmasq's cache), one after the other.
 *
 * Root required. Sizes beyond the defaults (a million) are for the machine that may run them.
 *
 *   npx tsx scripts/bench/standalone/dnsmasq-scale.ts [--names 10000,50000,100000,200000]
 */
import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createDnsmasqPlugin } from '../../../src/dns/dnsmasq/plugin.js';
import { createDnsRunner } from '../../../src/dns/exec.js';
import { dnsmasq } from '../../../test/integration/dns/labs/dnsmasq.js';
import { createRealResolverLab } from '../../../test/integration/dns/labs/real-resolver.js';
import { destroyAll } from '../../../test/netns/netns.js';
import { watchAnswers } from '../dns-watch.js';

const { values } = parseArgs({ options: { names: { type: 'string', default: '10000,50000,100000,200000' } } });
const sizes = values.names!.split(',').map(Number);
const ALLOWED = 'allowed.bench.test';
const lab = await createRealResolverLab(dnsmasq, { records: { [ALLOWED]: '198.18.7.1' }, file: 'servers.conf' });
const rssKb = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${readFileSync(join(lab.dir, 'dnsmasq.pid'), 'utf8').trim()}/status`, 'utf8'))![1]);
const plugin = createDnsmasqPlugin({ file: lab.file, reload: lab.agent.dnsmasq_reload as string[], runner: createDnsRunner(), logger: pino({ level: 'warn' }) });
let watch = watchAnswers(lab.ns.name);
try {
  await plugin.flush();
  await watch.until(ALLOWED, 'NOERROR', 10_000);
  const emptyKb = rssKb();
  console.log(`dnsmasq with an empty servers-file: RSS ${(emptyKb / 1024).toFixed(1)} MB`);
  for (const n of sizes) {
    // A name of each size's own, so "reloaded" sees this file, not the previous one.
    const names = Array.from({ length: n }, (_, i) => `n${i}.s${n}.bench.test`);
    const probe = names.at(-1)!;
    const t0 = Date.now();
    await plugin.apply(names);
    const applyMs = Date.now() - t0;
    const reloadedMs = (await watch.until(probe, 'NXDOMAIN', 600_000)) - t0;
    const kb = rssKb();
    await watch.until(ALLOWED, 'NOERROR', 10_000);
    const blocked = await watch.latency(names[Math.floor(n / 2)]!, 2000);
    const allowed = await watch.latency(ALLOWED, 2000);
    await watch.close();
    const s0 = Date.now();
    await lab.stop();
    await lab.start();
    const startMs = Date.now() - s0;
    watch = watchAnswers(lab.ns.name);
    console.log(
      `${n} names (${(statSync(lab.file).size / 1e6).toFixed(1)} MB file): apply ${applyMs} ms, reloaded ${reloadedMs} ms, start ${startMs} ms; ` +
        `RSS ${(kb / 1024).toFixed(1)} MB (+${Math.round(((kb - emptyKb) * 1024) / n)} B/name); ` +
        `lookups blocked ${blocked.medianUs}/${blocked.p99Us} us, allowed ${allowed.medianUs}/${allowed.p99Us} us (median/p99)`,
    );
  }
} finally {
  await watch.close();
  await lab.destroy();
  await destroyAll();
}
