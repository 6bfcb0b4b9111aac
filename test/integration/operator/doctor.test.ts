import { chmodSync, existsSync, readdirSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 500, seed: 3, agentConfig: { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true', version: '0.1.0' } });
});
afterAll(async () => {
  await sim?.close();
});

interface DoctorJson {
  checks: { name: string; status: 'ok' | 'warn' | 'fail'; message: string; hint: string | null }[];
  ok: boolean;
}
const byName = (d: DoctorJson) => Object.fromEntries(d.checks.map((c) => [c.name, c]));

// The tests run as root in the root namespace, where the agent's objects do not exist: doctor only
// reads (firewall checks may warn), and must leave nothing behind.
describe('doctor', () => {
  it('good config: ok lines, exit 0, nothing created', async () => {
    const { path, dir } = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'auto', allowlist: ['203.0.113.10'] });
    const mark = sim.requests.length;
    const r = await runCli(['doctor', '--config', path]);
    expect(r.exitCode, r.stdout + r.stderr).toBe(0);
    for (const name of ['config', 'api', 'clock', 'token', 'agent record', 'firewall tools', 'plugin', 'CAP_NET_ADMIN', 'state dir', 'allowlist']) {
      expect(r.stdout).toMatch(new RegExp(`^(ok|WARN)\\s+${name}\\s`, 'm'));
    }
    expect(r.stdout).toMatch(/^ok\s+token\s+token accepted/m);
    expect(r.stdout).toMatch(/^ok\s+plugin\s+plugin auto: auto would pick (nftables|ipset|iptables)/m);
    expect(r.stdout).toMatch(/^(ok|WARN)\s+firewall objects\s/m);
    expect(r.stdout).toMatch(/\d+ ok, \d+ warn, 0 fail/);
    // Read-only: no state dir made, no API writes.
    expect(existsSync(join(dir, 'state'))).toBe(false);
    expect(sim.requests.slice(mark).every((q) => q.method === 'GET')).toBe(true);
  });

  it('a config holding the token that every user can read: the config check warns (exit stays 0)', async () => {
    const { path } = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token });
    chmodSync(path, 0o644);
    const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
    expect(r.exitCode, r.stderr).toBe(0);
    const c = byName(JSON.parse(r.stdout) as DoctorJson);
    expect(c.config).toMatchObject({ status: 'warn', message: expect.stringMatching(/holds the API token and every user can read it \(mode 0644\)/) });
  });

  it('--json prints {checks, ok}; an empty allowlist warns with a hint', async () => {
    const { path, dir } = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token });
    const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
    expect(r.exitCode, r.stderr).toBe(0);
    const d = JSON.parse(r.stdout) as DoctorJson;
    expect(d.ok).toBe(true);
    for (const c of d.checks) expect(Object.keys(c).sort()).toEqual(['hint', 'message', 'name', 'status']);
    const c = byName(d);
    expect(c.config!.status).toBe('ok');
    expect(c.token!.status).toBe('ok');
    expect(c['agent record']!.message).toMatch(/maximum_rules 300, score_threshold 4/);
    expect(c.clock!.status).toBe('ok');
    expect(c.plugin!.message).toMatch(/dry-run/);
    expect(c.allowlist).toMatchObject({ status: 'warn', hint: expect.stringMatching(/admin\/bastion/) });
    expect(c.allowlist!.message).toMatch(/always protected/);
    // The state dir probe removed its temp file.
    expect(existsSync(join(dir, 'state')) ? readdirSync(join(dir, 'state')) : []).toEqual([]);
  });

  it('wrong token: fail "token refused", exit 3', async () => {
    const { path } = writeConfig({ agid: sim.agid, base_url: sim.url, token: 'wrong' });
    const r = await runCli(['doctor', '--config', path]);
    expect(r.exitCode).toBe(3);
    expect(r.stdout).toMatch(/^FAIL\s+token\s+token refused: .*403/m);
    expect(r.stdout).toMatch(/hint: .*auth_scheme/);
  });

  it('API unreachable: fail, exit 3', async () => {
    const { path } = writeConfig({ agid: sim.agid, base_url: 'http://127.0.0.1:9/api/v1', token: 't', connect_timeout_ms: 500 });
    const r = await runCli(['doctor', '--json', '--config', path]);
    expect(r.exitCode).toBe(3);
    const d = JSON.parse(r.stdout) as DoctorJson;
    expect(d.ok).toBe(false);
    expect(byName(d).api).toMatchObject({ status: 'fail', message: expect.stringMatching(/ECONNREFUSED/) });
  });

  it('bad config: fail with the path: message lines, exit 2', async () => {
    const { path } = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, maximun_rules: 5, min_prefix: 99 });
    const r = await runCli(['doctor', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stdout).toMatch(/^FAIL\s+config\s/m);
    expect(r.stdout).toMatch(/maximun_rules: unknown key/);
    expect(r.stdout).toMatch(/min_prefix: /);
    // Checks that need no config still run.
    expect(r.stdout).toMatch(/^(ok|WARN|FAIL)\s+firewall tools/m);
  });

  it('a clock 10 minutes off the API fails the clock check, exit 1', async () => {
    // A stand-in API whose Date header is 10 minutes behind (the simulator sends the real time).
    const server = createServer((req, res) => {
      res.setHeader('date', new Date(Date.now() - 600_000).toUTCString());
      res.setHeader('content-type', 'application/json');
      res.end(req.url?.startsWith('/api/v1/version') ? '{"version":"x"}' : '[]');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const { port } = server.address() as AddressInfo;
      const { path } = writeConfig({ agid: 'a', base_url: `http://127.0.0.1:${port}/api/v1`, token: 't', allowlist: ['203.0.113.10'] });
      const r = await runCli(['doctor', '--json', '--config', path]);
      expect(r.exitCode, r.stdout).toBe(1);
      const c = byName(JSON.parse(r.stdout) as DoctorJson);
      expect(c.clock).toMatchObject({ status: 'fail', message: expect.stringMatching(/(599|600|601) s ahead of the API/), hint: expect.stringMatching(/NTP/) });
      // E7 answered []: the record is missing, a warning.
      expect(c['agent record']).toMatchObject({ status: 'warn', message: expect.stringMatching(/no record for agid a/) });
    } finally {
      server.close();
    }
  });

  it('an API host name that does not resolve here is a warning with a hint, even when the API answers (through a proxy)', async () => {
    // A forward proxy that sends every request (CONNECT tunnel or absolute-form) to the simulator,
    // so the API works while its host name has no address on this host.
    const sim0 = new URL(sim.url);
    const proxy = createServer((req, res) => {
      const target = new URL(req.url!);
      const up = request({ host: sim0.hostname, port: sim0.port, method: req.method, path: target.pathname + target.search, headers: req.headers }, (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      });
      req.pipe(up);
    });
    proxy.on('connect', (_req, socket, head) => {
      const up = connect(Number(sim0.port), sim0.hostname, () => {
        socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        up.write(head);
        up.pipe(socket);
        socket.pipe(up);
      });
      up.on('error', () => socket.destroy());
      socket.on('error', () => up.destroy());
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    try {
      const { port } = proxy.address() as AddressInfo;
      const host = 'wcf-api.no-such-host.invalid'; // .invalid never resolves (RFC 6761)
      const { path } = writeConfig({
        agid: sim.agid,
        base_url: `http://${host}/api/v1`,
        token: sim.token,
        proxy: `http://127.0.0.1:${port}`,
        allowlist: ['203.0.113.10'],
      });
      const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
      const c = byName(JSON.parse(r.stdout) as DoctorJson);
      expect(c.api!.status, c.api!.message).toBe('ok');
      expect(c.token!.status).toBe('ok');
      expect(c.allowlist).toMatchObject({
        status: 'warn',
        message: expect.stringMatching(new RegExp(`the API host ${host.replace(/\./g, '\\.')} does not resolve to an IPv4 address here .*could block the API`)),
        hint: expect.stringMatching(new RegExp(`getent ahostsv4 ${host.replace(/\./g, '\\.')}.*add the API's addresses to allowlist`)),
      });
      // A warning, not a failure.
      expect(r.exitCode, r.stdout).toBe(0);

      // The human output shows it as WARN with the hint.
      const h = await runCli(['doctor', '--config', path], { WCF_LOG_LEVEL: 'silent' });
      expect(h.stdout).toMatch(/^WARN\s+allowlist\s+the API host .* does not resolve/m);
      expect(h.stdout).toMatch(/hint: make .* resolve on this host/);
    } finally {
      proxy.closeAllConnections();
      proxy.close();
    }
  });

  it('a resolvable API host with an allowlist: ok, naming the API address', async () => {
    const { path } = writeConfig({ agid: sim.agid, base_url: sim.url.replace('127.0.0.1', 'localhost'), token: sim.token, allowlist: ['203.0.113.10'] });
    const r = await runCli(['doctor', '--json', '--config', path], { WCF_LOG_LEVEL: 'silent' });
    expect(byName(JSON.parse(r.stdout) as DoctorJson).allowlist).toMatchObject({ status: 'ok', message: expect.stringMatching(/API 127\.0\.0\.1/) });
  });
});
