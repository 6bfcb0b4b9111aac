import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { proxyIn, relayInto, type InNamespace } from '../../netns/relay.js';
import { createResolverLab, type ResolverLab } from './resolver-lab.js';

/**
 * The agent reaches its API through a proxy named by host name, and resolves that name with
 * the unbound it writes to (as on a host whose resolver is the local unbound). A feed URL on
 * the proxy's host, or on its parent, must never be blocked: the next cycle would fail with
 * ENOTFOUND and only the unreachable API could lift the block. Everything runs inside the
 * lab's namespace: the agent, its resolv.conf (`ip netns exec` mounts /etc/netns/NAME), the
 * proxy, and a relay to the simulator.
 */

const API_PORT = 8080;
const PROXY_PORT = 3128;
const RECORDS: Record<string, string> = {
  'proxy.corp.lan': '127.0.0.1',
  'corp.lan': '198.18.0.30',
  'evil-site.example': '198.18.0.10',
};

describe.each(['config', 'environment'] as const)('the proxy named in the %s is never blocked (unbound)', (where) => {
  let sim: Simulator;
  let lab: ResolverLab;
  let proxy: InNamespace;
  let relay: InNamespace;
  let etc: string;
  let cfg: { path: string; dir: string };
  const proxyUrl = `http://proxy.corp.lan:${PROXY_PORT}`;
  // Whatever the test runner's own environment says: only the proxy under test.
  const env: Record<string, string> = { HTTP_PROXY: where === 'environment' ? proxyUrl : '', HTTPS_PROXY: '', http_proxy: '', https_proxy: '', NO_PROXY: '', no_proxy: '' };
  const sync = () => runCli(['sync', '--once', '--json', '--config', cfg.path], env, ['ip', 'netns', 'exec', lab.ns.name]);

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 27, agentConfig: { score_threshold: '4' } });
    const now = sim.clock.now();
    sim.upsertUrl('http://proxy.corp.lan/login', { score: 9, ts: now });
    sim.upsertUrl('http://corp.lan/portal', { score: 9, ts: now });
    sim.upsertUrl('http://evil-site.example/a', { score: 9, ts: now });
    lab = await createResolverLab({ records: RECORDS });
    relay = await relayInto(lab.ns, '127.0.0.1', API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });
    proxy = await proxyIn(lab.ns, '127.0.0.1', PROXY_PORT);
    etc = `/etc/netns/${lab.ns.name}`;
    mkdirSync(etc, { recursive: true });
    writeFileSync(`${etc}/resolv.conf`, 'nameserver 127.0.0.1\n');
    cfg = writeConfig({
      agid: sim.agid,
      base_url: `http://127.0.0.1:${API_PORT}${new URL(sim.url).pathname}`,
      token: sim.token,
      // A real firewall backend (the agent runs inside the namespace): with the dry-run one the resolver is not written either.
      plugin: 'nftables',
      retries: 0,
      connect_timeout_ms: 1000,
      request_timeout_ms: 5000,
      url_feed: true,
      dns_plugin: 'unbound',
      unbound_control: lab.control,
      unbound_conf_file: lab.includeFile,
      ...(where === 'config' ? { proxy: proxyUrl } : {}),
    });
  });

  afterAll(async () => {
    if (etc) rmSync(etc, { recursive: true, force: true });
    await proxy?.close();
    await relay?.close();
    await lab?.destroy();
    await sim?.close();
  });

  it('feed URLs on the proxy host and its parent are skipped; the next cycles still reach the API through the proxy', async () => {
    const first = await sync();
    expect(first.exitCode, first.stderr).toBe(0);
    expect(await lab.status('evil-site.example')).toBe('NXDOMAIN');
    expect(await lab.answers('proxy.corp.lan')).toEqual(['127.0.0.1']);
    expect(await lab.answers('corp.lan')).toEqual([RECORDS['corp.lan']]);
    const seen = proxy.lines.length;
    const second = await sync();
    expect(second.exitCode, second.stderr).toBe(0);
    // It went through the proxy, found by its name.
    expect(proxy.lines.slice(seen).some((l) => l.includes(`127.0.0.1:${API_PORT}`))).toBe(true);
  });
});
