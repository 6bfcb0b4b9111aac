import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { waitFor } from '../../helpers/cli.js';
import { ROOT, VERSION } from '../../helpers/packaging.js';
import { ADDR, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../../netns/netns.js';
import { relayInto, type InNamespace } from '../../netns/relay.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { API_PORT, kernelEntries, seedSimulator, TOKEN_PATH } from './agent-image.js';
import { ARCHIVE, IMAGE, Podman, uniqueName } from './podman.js';

/**
 * deploy/compose.yaml as docs/deployment.md runs it on Debian 12: Debian's docker-compose
 * (1.29) against podman's Docker-compatible API (`podman system service`, what podman.socket
 * starts), copied next to a config.json and a token file, `docker-compose up -d`. Debian 12's
 * podman-compose 1.0.3 cannot run this file (it adds the project's network to a
 * `network_mode: host` service, which podman refuses, and wraps every health check in
 * `/bin/sh -c`, which the image has not); the docs say so.
 *
 * The API service runs under nsenter in a test namespace, so `network_mode: host` is that
 * namespace, never the machine's, and on the test's own podman configuration. The health check
 * is the one compose gave the container, run by podman itself (`podman healthcheck run`):
 * exec form, no shell.
 */

describe('deploy/compose.yaml under docker-compose, on podman', () => {
  let podman: Podman;
  let sim: Simulator;
  let lab: Lab;
  let relay: InNamespace;
  let original: RulesetSnapshot;
  let dir: string;
  let service: ResultPromise | undefined;
  const project = uniqueName('compose').replace(/-/g, '_');
  const container = `${project}_wcf-agent_1`;
  const compose = (args: string[]) =>
    execa('docker-compose', ['-p', project, '-f', join(dir, 'compose.yaml'), ...args], {
      cwd: dir,
      reject: false,
      timeout: 180_000,
      env: { DOCKER_HOST: `unix://${join(dir, 'podman.sock')}` },
    });

  beforeAll(async () => {
    if (!isRoot) throw new Error('the deployment tests need root (network namespaces, podman)');
    if ((await execa('sh', ['-c', 'command -v docker-compose'], { reject: false })).exitCode !== 0) {
      throw new Error('docker-compose is not installed: apt-get install docker-compose (what docs/deployment.md names for compose on Debian 12)');
    }
    podman = Podman.create();
    await podman.loadImage();
    sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: '100', score_threshold: '4', running: 'true' } });
    seedSimulator(sim);
    lab = await createLab();
    original = await snapshot(lab.host);
    relay = await relayInto(lab.host, '127.0.0.1', API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });
    dir = mkdtempSync(join(tmpdir(), 'wcf-compose-'));
    copyFileSync(join(ROOT, 'deploy', 'compose.yaml'), join(dir, 'compose.yaml'));
    writeFileSync(
      join(dir, 'config.json'),
      JSON.stringify({ agid: sim.agid, base_url: `http://127.0.0.1:${API_PORT}${new URL(sim.url).pathname}`, token_file: TOKEN_PATH, plugin: 'ipset', retries: 0 }),
      { mode: 0o644 },
    );
    writeFileSync(join(dir, 'token'), sim.token, { mode: 0o600 });
    // podman's Docker-compatible API, in the test namespace.
    service = execa('nsenter', [`--net=/run/netns/${lab.host.name}`, 'podman', 'system', 'service', '--time=0', `unix://${join(dir, 'podman.sock')}`], {
      env: podman.env,
      reject: false,
    });
    await waitFor(() => existsSync(join(dir, 'podman.sock')), 'the podman API socket', 30_000);
  }, 600_000);

  afterAll(async () => {
    if (dir && service) await compose(['down']).catch(() => undefined);
    service?.kill('SIGTERM');
    await service?.catch(() => undefined);
    await podman?.destroy();
    await relay?.close();
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('names the image this version builds', () => {
    const file = parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8')) as { services: Record<string, { image: string }> };
    expect(file.services['wcf-agent']!.image).toBe(IMAGE);
    expect(IMAGE).toBe(`localhost/wcf-agent:${VERSION}`);
  });

  it("the image carries the same health check, in exec form, for Docker's `docker run` (podman reads none from an OCI image)", async () => {
    const manifest = JSON.parse((await execa('tar', ['-xOf', ARCHIVE, './manifest.json'])).stdout) as { Config: string }[];
    const config = JSON.parse((await execa('tar', ['-xOf', ARCHIVE, `./${manifest[0]!.Config}`])).stdout) as { config: { Healthcheck: { Test: string[] } } };
    const file = parse(readFileSync(join(ROOT, 'deploy', 'compose.yaml'), 'utf8')) as { services: Record<string, { healthcheck: { test: string[] } }> };
    expect(config.config.Healthcheck.Test).toEqual(file.services['wcf-agent']!.healthcheck.test);
  });

  it('up: the namespace holds exactly what plan selects, and podman runs the health check, in exec form, healthy', async () => {
    const up = await compose(['up', '-d']);
    expect(up.exitCode, String(up.stderr)).toBe(0);
    const plan = (JSON.parse(await podman.ok(['exec', container, 'wcf-agent', 'plan', '--json'], { netns: lab.host.name })) as { entries: { ip: string }[] }).entries
      .map((e) => e.ip)
      .sort();
    expect(plan).toHaveLength(100);
    await waitFor(async () => JSON.stringify(await kernelEntries(lab.host, 'ipset')) === JSON.stringify(plan), 'the kernel set to equal plan', 60_000, 250).catch(async (err: Error) => {
      throw new Error(`${err.message}; logs:\n${(await podman.run(['logs', container])).stderr}`);
    });
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    // The container's health check is the compose file's, as it wrote it: no shell in between.
    const check = (parse(readFileSync(join(dir, 'compose.yaml'), 'utf8')) as { services: Record<string, { healthcheck: { test: string[] } }> }).services['wcf-agent']!.healthcheck.test;
    expect(check).toEqual(['CMD', '/usr/bin/wcf-agent', 'status', '--probe']);
    expect(JSON.parse(await podman.ok(['inspect', '-f', '{{json .Config.Healthcheck.Test}}', container]))).toEqual(check);
    // Run by the runtime (podman runs the configured check itself; systemd timers would run it every interval).
    const health = await podman.run(['healthcheck', 'run', container], { netns: lab.host.name });
    // Exit 0 is healthy (podman 4.3 prints "unhealthy" and exits 1 otherwise).
    expect(health.exitCode, health.stdout + health.stderr).toBe(0);
    const log = JSON.parse(await podman.ok(['inspect', '-f', '{{json .State.Health.Log}}', container])) as { ExitCode: number; Output: string }[];
    expect(log.at(-1)).toMatchObject({ ExitCode: 0, Output: expect.stringMatching(/^ready: enforcing, 100 entries in the kernel/) });
  });

  it("README.md's podman run, as written (its two host paths pointed at the test's files): enforces, and podman runs its health check, healthy", async () => {
    // After the compose container is gone (two agents would take turns at the same objects).
    expect((await compose(['down'])).exitCode).toBe(0);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const block = /```sh\n([^`]*?podman run[^`]*?)```/.exec(readme)![1]!;
    const line = block.replace(/\\\n\s*/g, ' ').split('\n').find((l) => l.includes('podman run'))!;
    const words = [...line.matchAll(/'([^']*)'|(\S+)/g)].map((m) => m[1] ?? m[2]!);
    const args = words.slice(words.indexOf('run') + 1).map((w) =>
      w.replace('/etc/wcf-agent/config.json:/etc', `${join(dir, 'config.json')}:/etc`).replace('/etc/wcf-agent/token:/run', `${join(dir, 'token')}:/run`),
    );
    expect(args).toEqual(expect.arrayContaining(['--network', 'host', '--health-cmd', '["/usr/bin/wcf-agent", "status", "--probe"]']));
    const run = await podman.run(['run', ...args], { netns: lab.host.name });
    expect(run.exitCode, run.stderr).toBe(0);
    await waitFor(async () => (await kernelEntries(lab.host, 'ipset')).length === 100, 'the README container to enforce', 60_000, 250);
    expect(JSON.parse(await podman.ok(['inspect', '-f', '{{json .Config.Healthcheck.Test}}', 'wcf-agent']))).toEqual(['CMD', '/usr/bin/wcf-agent', 'status', '--probe']);
    const health = await podman.run(['healthcheck', 'run', 'wcf-agent'], { netns: lab.host.name });
    expect(health.exitCode, health.stdout + health.stderr).toBe(0);
    await podman.ok(['stop', '-t', '20', 'wcf-agent']);
    await podman.ok(['rm', 'wcf-agent']);
  });

  it('down keeps the rules; flush from the image with the compose volume leaves the namespace as it was', async () => {
    const down = await compose(['down']);
    expect(down.exitCode, String(down.stderr)).toBe(0);
    expect(await kernelEntries(lab.host, 'ipset')).toHaveLength(100);
    const flushed = await podman.run([
      'run', '--rm', '--network', `ns:/run/netns/${lab.host.name}`, '--cap-drop', 'ALL', '--cap-add', 'NET_ADMIN,NET_RAW',
      '-v', `${project}_state:/var/lib/wcf-agent`, '-v', `${join(dir, 'config.json')}:/etc/wcf-agent/config.json:ro`, '-v', `${join(dir, 'token')}:${TOKEN_PATH}:ro`,
      IMAGE, 'flush',
    ]);
    expect(flushed.exitCode, flushed.stderr).toBe(0);
    expect(await snapshot(lab.host)).toEqual(original);
  });
});
