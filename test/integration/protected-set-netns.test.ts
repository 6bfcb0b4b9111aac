import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig, type CliResult } from '../helpers/cli.js';
import { ADDR, createLab, isRoot, type Lab } from '../netns/netns.js';
import { kernelSet, proxyIn, relayInto, type InNamespace } from '../netns/relay.js';

/**
 * The protected set on real netfilter. The agent (built CLI) runs INSIDE the
 * "host" namespace (`ip netns exec`), as on a real host: its API, proxy,
 * resolver and gateway are real addresses on the peer side of the veth, so a
 * rule for them would really cut the agent off. The simulator stays in the
 * test process on loopback and is relayed to those addresses. Root required.
 */

/** More peer addresses (198.18.0.0/15, never routed on the machine's own networks). */
const PEER = {
  api: ADDR.other, // 198.18.3.7: the API's address
  movedApi: '198.18.4.20', // the address the API moves to
  gateway: '198.18.4.1',
  resolver: '198.18.4.53',
  proxy: '198.18.4.8',
} as const;
const API_PORT = 8081;
const PROXY_PORT = 3128;
const AGENT_CONFIG = { maximum_rules: '200', score_threshold: '4', sync_time: '5', running: 'true' } as const;

interface SyncJson {
  ok: boolean;
  code: number;
}

function parseSync(r: CliResult): SyncJson {
  try {
    return JSON.parse(r.stdout) as SyncJson;
  } catch {
    throw new Error(`sync --json printed no JSON (exit ${r.exitCode}):\n${r.stdout}\n${r.stderr}`);
  }
}

async function startLab(): Promise<Lab> {
  const lab = await createLab();
  for (const a of Object.values(PEER)) if (a !== ADDR.other) await lab.peer.exec('ip', ['addr', 'add', `${a}/16`, 'dev', 'wcfp0', 'nodad']);
  return lab;
}

describe.each(['nftables', 'ipset'] as const)('protected set with the %s backend, the agent inside the namespace', (plugin) => {
  let sim: Simulator;
  let lab: Lab;
  const relays: InNamespace[] = [];
  const dirs: string[] = [];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 17, agentConfig: { ...AGENT_CONFIG } });
    lab = await startLab();
    const target = { host: '127.0.0.1', port: Number(new URL(sim.url).port) };
    relays.push(await relayInto(lab.peer, PEER.api, API_PORT, target), await relayInto(lab.peer, PEER.movedApi, API_PORT, target));
  });
  // Each test's agent has a state dir of its own: what one left in the kernel is, to the next,
  // another agent's table (refused, code 32). Removed between tests, as a reboot would.
  afterEach(async () => {
    await lab.host.exec('nft', ['flush', 'ruleset']);
    await lab.host.exec('sh', ['-c', 'ipset destroy 2>/dev/null; true']);
  });
  afterAll(async () => {
    for (const r of relays) await r.close();
    await lab?.destroy();
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  const values = (apiAddress: string) => ({
    agid: sim.agid,
    base_url: `http://${apiAddress}:${API_PORT}${new URL(sim.url).pathname}`,
    token: sim.token,
    plugin,
    retries: 0,
    connect_timeout_ms: 500,
    request_timeout_ms: 2000,
  });
  const config = (apiAddress: string) => {
    const c = writeConfig(values(apiAddress));
    dirs.push(c.dir);
    return c;
  };
  const sync = async (path: string) => parseSync(await runCli(['sync', '--once', '--json', '--config', path], {}, ['ip', 'netns', 'exec', lab.host.name]));

  it('manual blocks of the namespace’s own address and of the API’s real address never reach the kernel; traffic from both flows', async () => {
    const { path } = config(PEER.api);
    const blocks = [ADDR.host, PEER.api, ADDR.blocked];
    for (const ip of blocks) sim.setDecision(ip, 1);
    try {
      expect(await sync(path)).toMatchObject({ ok: true, code: 0 });
      const set = await kernelSet(lab.host, plugin);
      expect(set).toContain(ADDR.blocked); // the rules are live
      expect(set).not.toContain(ADDR.host);
      expect(set).not.toContain(PEER.api);
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
      // The API's address still reaches the host, and the agent still reaches its API.
      expect(await lab.connect(PEER.api)).toBe('connected');
      expect(await sync(path)).toMatchObject({ ok: true, code: 0 });
    } finally {
      for (const ip of blocks) sim.setDecision(ip, -1);
    }
  });

  it('a cycle whose pull fails still takes the API’s new address out of the kernel; the next cycle syncs', async () => {
    const before = config(PEER.api);
    sim.setDecision(PEER.movedApi, 1);
    sim.setDecision(ADDR.blocked, 1);
    try {
      expect(await sync(before.path)).toMatchObject({ ok: true, code: 0 });
      expect(await kernelSet(lab.host, plugin)).toEqual(expect.arrayContaining([PEER.movedApi, ADDR.blocked]));

      // The API moves to the blocked address: its answers are dropped, so this cycle's pull fails.
      // Same config file and state dir, new base_url.
      writeFileSync(before.path, JSON.stringify({ state_dir: 'state', ...values(PEER.movedApi) }));
      const moved = before;
      const failed = await runCli(['sync', '--once', '--json', '--config', moved.path], {}, ['ip', 'netns', 'exec', lab.host.name]);
      expect(failed.exitCode, failed.stderr).toBe(3);
      expect(parseSync(failed)).toMatchObject({ ok: false, code: 20 });
      expect(failed.stderr).toMatch(new RegExp(`${PEER.movedApi.replace(/\./g, '\\.')} is protected \\(api_server`));
      const after = await kernelSet(lab.host, plugin);
      expect(after).not.toContain(PEER.movedApi);
      expect(after).toContain(ADDR.blocked); // the rest of the enforcement is untouched
      expect(await sync(moved.path)).toMatchObject({ ok: true, code: 0 });
    } finally {
      sim.setDecision(PEER.movedApi, -1);
      sim.setDecision(ADDR.blocked, -1);
    }
  });
});

describe('protected set: proxy, resolver and gateway (nftables, the agent inside the namespace)', () => {
  let sim: Simulator;
  let lab: Lab;
  let proxy: InNamespace;
  let relay: InNamespace;
  let etcDir: string;
  const dirs: string[] = [];

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 18, agentConfig: { ...AGENT_CONFIG } });
    lab = await startLab();
    relay = await relayInto(lab.peer, PEER.api, API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });
    proxy = await proxyIn(lab.peer, PEER.proxy, PROXY_PORT);
    await lab.host.exec('ip', ['route', 'add', 'default', 'via', PEER.gateway]);
    // `ip netns exec` bind-mounts this over /etc/resolv.conf for the agent it starts.
    etcDir = join('/etc/netns', lab.host.name);
    mkdirSync(etcDir, { recursive: true });
    writeFileSync(join(etcDir, 'resolv.conf'), `nameserver ${PEER.resolver}\n`);
  });
  afterAll(async () => {
    if (etcDir) rmSync(etcDir, { recursive: true, force: true });
    await proxy?.close();
    await relay?.close();
    await lab?.destroy();
    await sim?.close();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  it('manual blocks of the proxy, the resolver and the gateway are never applied, and the agent still syncs (through the proxy)', async () => {
    const c = writeConfig({
      agid: sim.agid,
      base_url: `http://${PEER.api}:${API_PORT}${new URL(sim.url).pathname}`,
      token: sim.token,
      plugin: 'nftables',
      proxy: proxy.url,
      retries: 0,
      connect_timeout_ms: 500,
      request_timeout_ms: 2000,
    });
    dirs.push(c.dir);
    const sync = async () => parseSync(await runCli(['sync', '--once', '--json', '--config', c.path], {}, ['ip', 'netns', 'exec', lab.host.name]));
    const blocks = [PEER.proxy, PEER.resolver, PEER.gateway, ADDR.blocked];
    for (const ip of blocks) sim.setDecision(ip, 1);
    try {
      expect(await sync()).toMatchObject({ ok: true, code: 0 });
      const set = await kernelSet(lab.host, 'nftables');
      expect(set).toContain(ADDR.blocked);
      for (const ip of [PEER.proxy, PEER.resolver, PEER.gateway]) expect(set).not.toContain(ip);
      for (const ip of [PEER.proxy, PEER.resolver, PEER.gateway]) expect(await lab.connect(ip)).toBe('connected');
      const seen = proxy.lines.length;
      expect(await sync()).toMatchObject({ ok: true, code: 0 });
      // The second cycle went through the proxy.
      expect(proxy.lines.slice(seen).some((l) => l.includes(`${PEER.api}:${API_PORT}`))).toBe(true);
    } finally {
      for (const ip of blocks) sim.setDecision(ip, -1);
    }
  });
});

describe('protected set with config netns (the agent outside, its rules inside the namespace)', () => {
  let sim: Simulator;
  let lab: Lab;
  let dir: string | undefined;

  beforeAll(async () => {
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces');
    sim = await startSimulator({ indicators: 200, seed: 19, agentConfig: { ...AGENT_CONFIG } });
    lab = await createLab();
  });
  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a manual block of the namespace’s own address never reaches the kernel; the host still talks to itself on it', async () => {
    const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'ipset', netns: lab.host.name, retries: 0 });
    dir = c.dir;
    for (const ip of [ADDR.host, ADDR.blocked]) sim.setDecision(ip, 1);
    try {
      expect(parseSync(await runCli(['sync', '--once', '--json', '--config', c.path]))).toMatchObject({ ok: true, code: 0 });
      const set = await kernelSet(lab.host, 'ipset');
      expect(set).toContain(ADDR.blocked);
      expect(set).not.toContain(ADDR.host);
      expect(await lab.connect(ADDR.allowed)).toBe('connected');
      expect(await lab.connect(ADDR.blocked)).toBe('timeout');
      // A connection from the namespace's own address (source ADDR.host) to its own server.
      const self = `const s = require('node:net').connect({ host: '${ADDR.host}', port: ${lab.port}, localAddress: '${ADDR.host}' });
        const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, 1500);
        s.on('connect', () => { console.log('connected'); process.exit(0); });
        s.on('error', (e) => { console.log('error:' + e.code); process.exit(0); });`;
      expect((await lab.host.exec(process.execPath, ['-e', self])).trim()).toBe('connected');
    } finally {
      for (const ip of [ADDR.host, ADDR.blocked]) sim.setDecision(ip, -1);
    }
  });
});
