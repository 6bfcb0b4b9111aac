/**
 * What a proxy costs in memory, and what undici's ProxyAgent would have cost instead of the
 * agent's own CONNECT tunnel (src/api/proxy-tunnel.ts):
 *
 *   npx tsx scripts/bench/standalone/proxy.ts [--runs 5] [--size 10000] [--cycles 3] [--gap-ms 3000] [--entry OTHER/dist/cli.js]
 *
 * 1. The daemon (`dist/cli.js run`, the unit's environment, dry-run backend) against the
 *    simulator behind a TLS front: https direct, and https through an honest loopback proxy.
 *    VmRSS half-way between cycles after the last of `cycles` cycles, and VmHWM. With `--entry`,
 *    also another build's daemon, https direct (e.g. the build before ca_file was added to the
 *    default roots, which trusted ca_file alone).
 * 2. The transport alone, each bundled by esbuild as the agent is, in a fresh Node with the
 *    agent's flags: one https call through the proxy with the agent's transport (HttpTransport
 *    and its tunnel), the same call with undici's ProxyAgent, and the agent's transport direct
 *    (no proxy). VmRSS after the call and a full collection, its connection kept open.
 *
 * Each run measures every variant once, in turn; medians over the runs.
 */
import { execFile } from 'node:child_process';
import { parseArgs, promisify } from 'node:util';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as esbuild from 'esbuild';
import { procMemory, startDaemon, useAgentEntry } from '../daemon.js';
import { onExit } from '../netns.js';
import { startSimulatorProcess } from '../simulator.js';
import { log, median } from '../stats.js';
import { agentNodeFlags } from '../sync.js';
import { startTlsFront } from '../tls-front.js';

const ROOT = join(import.meta.dirname, '../../..');
const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '5' },
    size: { type: 'string', default: '10000' },
    cycles: { type: 'string', default: '3' },
    'gap-ms': { type: 'string', default: '3000' },
    entry: { type: 'string' },
  },
});
const runs = Number(values.runs);
const size = Number(values.size);
const cycles = Number(values.cycles);
const gapMs = Number(values['gap-ms']);

/** An honest forward proxy: CONNECT, 200, then bytes both ways. */
async function startProxy(): Promise<{ url: string; close(): void }> {
  const open = new Set<Socket>();
  const server = createServer((s) => {
    open.add(s);
    s.on('close', () => open.delete(s)).on('error', () => undefined);
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      s.off('data', onData);
      const [host, port] = head.split(' ')[1]!.split(':');
      const up = connect(Number(port), host, () => {
        s.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        up.pipe(s).pipe(up);
      });
      up.on('error', () => s.destroy());
      s.on('close', () => up.destroy());
    };
    s.on('data', onData);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => (open.forEach((s) => s.destroy()), server.close()) };
}

const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));

const ENTRIES = {
  agentTunnel: `
    import { HttpTransport } from ${JSON.stringify(join(ROOT, 'src/api/http.ts'))};
    import { readFileSync } from 'node:fs';
    const [url, proxy, caFile] = process.argv.slice(2);
    const t = new HttpTransport({ connectTimeoutMs: 10000, idleTimeoutMs: 10000, ca: readFileSync(caFile, 'utf8'), proxy: proxy === '-' ? undefined : proxy, env: {} });
    const res = await t.request(new URL(url), { method: 'GET', headers: {}, signal: new AbortController().signal });
    for await (const _ of res.body);
    if (res.statusCode !== 200) throw new Error('status ' + res.statusCode);
    report();`,
  undiciProxyAgent: `
    import { ProxyAgent, request } from 'undici';
    import tls from 'node:tls';
    import { readFileSync } from 'node:fs';
    const [url, proxy, caFile] = process.argv.slice(2);
    const ca = [...tls.getCACertificates('default'), readFileSync(caFile, 'utf8')];
    const dispatcher = new ProxyAgent({ uri: proxy, requestTls: { ca }, connectTimeout: 10000 });
    const res = await request(url, { dispatcher });
    await res.body.text();
    if (res.statusCode !== 200) throw new Error('status ' + res.statusCode);
    report();`,
};
const REPORT = `
  function report() {
    globalThis.gc();
    setTimeout(() => {
      globalThis.gc();
      const kb = Number(/VmRSS:\\s+(\\d+)/.exec(require('node:fs').readFileSync('/proc/self/status', 'utf8'))[1]);
      process.stdout.write(String(kb * 1024 / 1e6) + '\\n');
      process.exit(0);
    }, 300);
  }`;

async function bundleEntries(dir: string): Promise<Record<keyof typeof ENTRIES, string>> {
  const out = {} as Record<keyof typeof ENTRIES, string>;
  for (const [name, body] of Object.entries(ENTRIES) as [keyof typeof ENTRIES, string][]) {
    const src = join(dir, `${name}.ts`);
    writeFileSync(src, `${REPORT}\n${body}`);
    out[name] = join(dir, `${name}.mjs`);
    await esbuild.build({
      absWorkingDir: ROOT,
      entryPoints: [src],
      // The entries are written to a temp dir: their packages come from the agent's node_modules.
      nodePaths: [join(ROOT, 'node_modules')],
      outfile: out[name],
      bundle: true,
      platform: 'node',
      target: 'node24',
      format: 'esm',
      minifyWhitespace: true,
      minifySyntax: true,
      keepNames: true,
      legalComments: 'none',
      logLevel: 'warning',
      banner: { js: `import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);` },
    });
  }
  return out;
}

/** Not execFileSync: the TLS front and the proxy run in this process and must keep answering. */
async function transportRss(file: string, args: string[]): Promise<number> {
  const flags = agentNodeFlags(join(ROOT, 'dist/cli.js'));
  const { stdout } = await promisify(execFile)(process.execPath, [...flags, '--expose-gc', file, ...args], { encoding: 'utf8' });
  return Number(stdout.trim());
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-proxy-'));
  const forget = onExit(() => rmSync(dir, { recursive: true, force: true }));
  const sim = await startSimulatorProcess(size, 1);
  const front = await startTlsFront(sim.url, dir);
  const proxy = await startProxy();
  try {
    await sim.setAgentConfig({ maximum_rules: size, score_threshold: 3, sync_time: 1 });
    const variants = values.entry ? (['direct', 'proxy', 'other build'] as const) : (['direct', 'proxy'] as const);
    const daemon = Object.fromEntries(variants.map((v) => [v, { held: [] as number[], peak: [] as number[] }]));
    const transport: Record<'agentDirect' | 'agentTunnel' | 'undiciProxyAgent', number[]> = { agentDirect: [], agentTunnel: [], undiciProxyAgent: [] };
    const entries = await bundleEntries(dir);
    const versionUrl = `${front.url}/version`;
    for (let i = 0; i < runs; i++) {
      for (const variant of variants) {
        useAgentEntry(variant === 'other build' ? values.entry! : join(ROOT, 'dist/cli.js'));
        const state = join(dir, `state-${variant.replace(' ', '-')}-${i}`);
        const configPath = join(dir, `config-${variant.replace(' ', '-')}.json`);
        const config = { agid: sim.agid, base_url: front.url, ca_file: front.caFile, token: sim.token, plugin: 'dry-run', state_dir: state, maximum_rules: size, jitter_seconds: 0, ...(variant === 'proxy' ? { proxy: proxy.url } : {}) };
        writeFileSync(configPath, JSON.stringify(config), { mode: 0o600 });
        const d = startDaemon('node', configPath, gapMs);
        try {
          for (let c = 0; c < cycles; c++) await d.nextCycle();
          await wait(gapMs / 2);
          const m = procMemory(d.child.pid!);
          daemon[variant]!.held.push(m.rssMB);
          daemon[variant]!.peak.push(m.hwmMB);
          log(`run ${i + 1} daemon ${variant}: held ${m.rssMB.toFixed(1)} MB, peak ${m.hwmMB.toFixed(1)} MB`);
        } finally {
          await d.stop();
        }
      }
      transport.agentDirect.push(await transportRss(entries.agentTunnel, [versionUrl, '-', front.caFile]));
      transport.agentTunnel.push(await transportRss(entries.agentTunnel, [versionUrl, proxy.url, front.caFile]));
      transport.undiciProxyAgent.push(await transportRss(entries.undiciProxyAgent, [versionUrl, proxy.url, front.caFile]));
      log(`run ${i + 1} transport: direct ${transport.agentDirect.at(-1)!.toFixed(1)}, agent tunnel ${transport.agentTunnel.at(-1)!.toFixed(1)}, undici ProxyAgent ${transport.undiciProxyAgent.at(-1)!.toFixed(1)} MB`);
    }
    const f = (xs: number[]) => `${median(xs).toFixed(1)} MB (${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)})`;
    console.log(`\nmedians of ${runs} runs, ${size} indicators, https API:`);
    for (const v of variants) console.log(`daemon ${v}: held after ${cycles} cycles ${f(daemon[v]!.held)}, peak ${f(daemon[v]!.peak)}`);
    console.log(`transport alone, one call:   agent direct ${f(transport.agentDirect)}, agent tunnel ${f(transport.agentTunnel)}, undici ProxyAgent ${f(transport.undiciProxyAgent)}`);
  } finally {
    proxy.close();
    await front.close();
    await sim.close();
    rmSync(dir, { recursive: true, force: true });
    forget();
  }
}

await main();
