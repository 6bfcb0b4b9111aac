/**
 * How long a block and an unblock take to reach a resolver's answers, caches included (not a
 * test: timings belong here). Each resolver runs in a namespace as the resolver tests set it up
 * from docs/url-feed.md (BIND, PowerDNS Recursor, Knot Resolver, dnsmasq; unbound with the
 * agent's local zones and with an `rpz:` clause), forwarding to the labs' authority (answers
 * with TTL 60). Per run:
 *
 *   block:   a name is looked up (so the resolver holds its answer), then the agent's backend
 *            applies the names with it added; measured from just before that apply (the write
 *            of the file and the reload command) until the resolver first answers NXDOMAIN;
 *   unblock: that name is looked up again (NXDOMAIN, held by the resolver's caches where they
 *            keep it), then the backend applies the names without it; until the first answer.
 *
 * The backends are the agent's own (src/dns), with the lab's commands and paths. Prints the
 * apply time and the time to the changed answer, median and range. Root required.
 *
 *   npx tsx scripts/bench/standalone/resolver-latency.ts [--runs 5] [--only bind,pdns,...] [--pdns-default-cache]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { createDnsmasqPlugin } from '../../../src/dns/dnsmasq/plugin.js';
import { createDnsRunner } from '../../../src/dns/exec.js';
import { createRpzPlugin } from '../../../src/dns/rpz/plugin.js';
import { renderRpzZone } from '../../../src/dns/render.js';
import type { DnsPlugin } from '../../../src/dns/types.js';
import { createUnboundPlugin } from '../../../src/dns/unbound/plugin.js';
import { bind } from '../../../test/integration/dns/labs/bind.js';
import { dnsmasq } from '../../../test/integration/dns/labs/dnsmasq.js';
import { knot } from '../../../test/integration/dns/labs/knot.js';
import { pdns } from '../../../test/integration/dns/labs/pdns.js';
import { createRealResolverLab, type ResolverSpec } from '../../../test/integration/dns/labs/real-resolver.js';
import { createResolverLab } from '../../../test/integration/dns/resolver-lab.js';
import { destroyAll } from '../../../test/netns/netns.js';
import { watchAnswers } from '../dns-watch.js';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' }, only: { type: 'string' }, 'pdns-default-cache': { type: 'boolean', default: false } } });
const RUNS = Number(values.runs);
const logger = pino({ level: 'warn' });
const runner = createDnsRunner();
const NX = { action: 'nxdomain' } as const;
/** Blocked all along, so each apply changes one name among several. */
const BASE = ['base1.bench.test', 'base2.bench.test'];
const names = Array.from({ length: RUNS }, (_, i) => `n${i}.bench.test`);
const records = Object.fromEntries([...BASE, ...names].map((n, i) => [n, `198.18.7.${i + 1}`]));

/** PowerDNS Recursor without the documented packetcache-ttl line: its defaults. */
const pdnsDefault: ResolverSpec = {
  ...pdns,
  setup(o) {
    const r = pdns.setup(o);
    const conf = join(o.dir, 'recursor.conf');
    writeFileSync(conf, readFileSync(conf, 'utf8').replace(/^packetcache-ttl=.*$/m, ''));
    return r;
  },
};

interface Target {
  label: string;
  netns: string;
  plugin: DnsPlugin;
  close(): Promise<void>;
}

async function realTarget(label: string, spec: ResolverSpec, file: string): Promise<Target> {
  const isDnsmasq = spec.daemon === 'dnsmasq';
  const lab = await createRealResolverLab(spec, { records, file, ...(isDnsmasq ? {} : { initial: renderRpzZone([], NX, 1) }) });
  const plugin = isDnsmasq
    ? createDnsmasqPlugin({ file: lab.file, reload: lab.agent.dnsmasq_reload as string[], runner, logger })
    : createRpzPlugin({ zoneFile: lab.file, reload: lab.agent.rpz_reload as string[] | undefined, answer: NX, runner, logger, now: () => Math.floor(Date.now() / 1000) });
  return { label, netns: lab.ns.name, plugin, close: () => lab.destroy() };
}

async function unboundTarget(rpz: boolean): Promise<Target> {
  const lab = await createResolverLab({ records, rpz });
  const plugin = rpz
    ? createRpzPlugin({ zoneFile: lab.rpzFile, reload: [...lab.control, 'auth_zone_reload', 'rpz.wcf'], answer: NX, runner, logger, now: () => Math.floor(Date.now() / 1000) })
    : createUnboundPlugin({ control: lab.control, confFile: lab.includeFile, answer: NX, runner, logger });
  return { label: rpz ? 'unbound 1.17 (rpz: clause)' : 'unbound 1.17 (local zones)', netns: lab.ns.name, plugin, close: () => lab.destroy() };
}

const TARGETS: Record<string, () => Promise<Target>> = {
  bind: () => realTarget('BIND 9.18 (rndc reload)', bind, 'rpz.wcf.zone'),
  pdns: () => realTarget('PowerDNS Recursor 4.8 (packetcache-ttl=10)', pdns, 'rpz.wcf.zone'),
  knot: () => realTarget('Knot Resolver 5.6 (file watch)', knot, 'rpz.wcf.zone'),
  dnsmasq: () => realTarget('dnsmasq 2.90 (SIGHUP)', dnsmasq, 'servers.conf'),
  'unbound-local': () => unboundTarget(false),
  'unbound-rpz': () => unboundTarget(true),
  ...(values['pdns-default-cache'] ? { 'pdns-default': () => realTarget('PowerDNS Recursor 4.8 (packetcache-ttl 3600, its default)', pdnsDefault, 'rpz.wcf.zone') } : {}),
};

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `${s[Math.floor(s.length / 2)]} ms (${s[0]}-${s.at(-1)})`;
};

const selected = values.only ? values.only.split(',') : Object.keys(TARGETS);
console.log(`${RUNS} runs each; apply = the backend's write and reload command; answer = from just before the apply until the resolver's first changed answer`);
try {
  for (const key of selected) {
    const make = TARGETS[key];
    if (!make) throw new Error(`--only: unknown resolver ${key} (${Object.keys(TARGETS).join(', ')})`);
    const t = await make();
    const watch = watchAnswers(t.netns);
    const m = { blockApply: [] as number[], block: [] as number[], unblockApply: [] as number[], unblock: [] as number[] };
    try {
      await t.plugin.apply(BASE);
      for (const name of names) {
        await watch.until(name, 'NOERROR', 120_000); // looked up: the resolver holds the answer
        let t0 = Date.now();
        await t.plugin.apply([...BASE, name]);
        m.blockApply.push(Date.now() - t0);
        m.block.push((await watch.until(name, 'NXDOMAIN', 120_000)) - t0);
        await watch.until(name, 'NXDOMAIN', 1000); // the blocked answer, looked up again
        t0 = Date.now();
        await t.plugin.apply(BASE);
        m.unblockApply.push(Date.now() - t0);
        m.unblock.push((await watch.until(name, 'NOERROR', 120_000)) - t0);
      }
      console.log(`${t.label}\n  block:   apply ${stats(m.blockApply)}, answer ${stats(m.block)}\n  unblock: apply ${stats(m.unblockApply)}, answer ${stats(m.unblock)}`);
    } finally {
      await watch.close();
      await t.close();
    }
  }
} finally {
  await destroyAll();
}
