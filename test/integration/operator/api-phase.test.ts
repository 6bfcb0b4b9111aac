// An API the agent cannot use: the error says which step failed (DNS, TCP connect, TLS, HTTP) and
// the address it tried, so the next thing to check is plain. Each step is made to fail for real:
// a name no resolver answers (in a namespace with no network), a closed port, a connection that
// goes nowhere, a server that speaks no TLS, a server that never answers.
import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { Netns, isRoot } from '../../netns/netns.js';

let sim: Simulator;
let silent: Server;
const sockets = new Set<Socket>();
let ns: Netns;

const FAST = { retries: 0, connect_timeout_ms: 500, request_timeout_ms: 500 };
const agentsList = (baseUrl: string, prefix: string[] = []) => runCli(['agents', 'list', '--config', writeConfig({ agid: 'a', base_url: baseUrl, token: 't', ...FAST }).path], {}, prefix);

beforeAll(async () => {
  if (!isRoot) throw new Error('this test needs root: it makes a network namespace with no way out');
  sim = await startSimulator({ indicators: 10, seed: 3 });
  // Accepts, never answers.
  silent = createServer((s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  // A namespace with no way out, and a subnet on a veth link where nobody answers (ARP never
  // resolves: a connection there waits until its timeout).
  ns = await Netns.create();
  await ns.exec('ip', ['link', 'add', 'wcfa0', 'type', 'veth', 'peer', 'name', 'wcfb0']);
  await ns.exec('ip', ['addr', 'add', '198.18.9.1/24', 'dev', 'wcfa0']);
  await ns.exec('ip', ['link', 'set', 'wcfa0', 'up']);
  await ns.exec('ip', ['link', 'set', 'wcfb0', 'up']);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await new Promise((r) => silent?.close(r));
  await sim?.close();
  await ns?.destroy();
});

describe('an unreachable API names the step that failed and the address tried', () => {
  it('DNS: the name does not resolve', async () => {
    const r = await agentsList('http://api.wcf-agent-test.invalid/api/v1', ['ip', 'netns', 'exec', ns.name]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/WCF_ERR_API_UNREACHABLE: GET \/\S+: DNS lookup of api\.wcf-agent-test\.invalid failed: /);
  });

  it('TCP connect: refused', async () => {
    const r = await agentsList('http://127.0.0.1:9/api/v1');
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/: TCP connect to 127\.0\.0\.1:9 failed: .*ECONNREFUSED/);
    // A name: the address it resolved to is the one said.
    const named = await agentsList('http://localhost:9/api/v1');
    expect(named.stderr).toMatch(/: TCP connect to (127\.0\.0\.1|\[::1\]):9 failed: .*ECONNREFUSED/);
  });

  it('TCP connect: no answer within connect_timeout_ms, with the resolved address', async () => {
    const r = await agentsList('http://198.18.9.2:8080/api/v1', ['ip', 'netns', 'exec', ns.name]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(/: TCP connect to 198\.18\.9\.2:8080 failed: .*CONNECT_TIMEOUT/);
  });

  it('TLS: the server does not speak it', async () => {
    const port = new URL(sim.url).port;
    const r = await agentsList(`https://127.0.0.1:${port}/api/v1`);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`: TLS handshake with 127\\.0\\.0\\.1:${port} failed: `));
  });

  it('HTTP: connected, and no answer', async () => {
    const port = (silent.address() as { port: number }).port;
    const r = await agentsList(`http://127.0.0.1:${port}/api/v1`);
    expect(r.exitCode).toBe(3);
    expect(r.stderr).toMatch(new RegExp(`: HTTP exchange with 127\\.0\\.0\\.1:${port} failed: .*HEADERS_TIMEOUT`));
  });

  it('following the steps leaves nothing on a kept-alive connection: many requests on one socket, no listener warning', async () => {
    // 15 pages of 1,000, all on one keep-alive socket (Node warns past ten listeners of one kind).
    const many = await startSimulator({ indicators: 15_000, seed: 4, batchImport: false });
    try {
      const cfg = writeConfig({ agid: many.agid, base_url: many.url, token: many.token, retries: 0 });
      const r = await runCli(['plan', '--json', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(0);
      expect(many.requests.length).toBeGreaterThan(12);
      expect(r.stderr).not.toMatch(/MaxListenersExceededWarning|Warning/);
    } finally {
      await many.close();
    }
  });

  it('the same words in the state a failed sync leaves (status shows them)', async () => {
    const cfg = writeConfig({ agid: 'a', base_url: 'http://127.0.0.1:9/api/v1', token: 't', ...FAST });
    expect((await runCli(['sync', '--config', cfg.path])).exitCode).toBe(3);
    const status = JSON.parse((await runCli(['status', '--json', '--config', cfg.path])).stdout) as { message: string };
    expect(status.message).toMatch(/TCP connect to 127\.0\.0\.1:9 failed/);
  });
});
