import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { waitFor } from '../../helpers/cli.js';
import { ROOT, VERSION } from '../../helpers/packaging.js';
import { ADDR, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../../netns/netns.js';
import { relayInto, type InNamespace } from '../../netns/relay.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { API_PORT, kernelEntries, seedSimulator, TOKEN_PATH } from './agent-image.js';
import { IMAGE, Podman, uniqueName } from './podman.js';

/**
 * deploy/compose.yaml as a user runs it: copied next to a config.json and a token file,
 * `podman-compose up -d` (Debian 12's podman 4.3 has no `podman compose` subcommand; it
 * came with 4.7 and runs this same podman-compose), with podman under nsenter in a
 * test namespace so `network_mode: host` is that namespace, never the machine's.
 *
 * Debian 12's podman-compose 1.0.3 adds the project's default network to a service
 * with `network_mode: host`, which podman refuses ("cannot set multiple networks
 * without bridge network mode"; containers/podman-compose issues 397 and 1186). The
 * test runs it with --podman-path naming a wrapper that drops that one `--net NAME
 * --network-alias SERVICE` pair when `--network host` is there, and nothing else.
 */

const HOST_NET_WRAPPER = `#!/usr/bin/env bash
args=("$@")
if [[ " $* " == *" --network host "* ]]; then
  out=()
  for ((i = 0; i < \${#args[@]}; i++)); do
    if [ "\${args[i]}" = --net ] && [ "\${args[i+2]:-}" = --network-alias ]; then i=$((i + 3)); continue; fi
    out+=("\${args[i]}")
  done
  args=("\${out[@]}")
fi
exec podman "\${args[@]}"
`;

describe('deploy/compose.yaml under podman-compose', () => {
  let podman: Podman;
  let sim: Simulator;
  let lab: Lab;
  let relay: InNamespace;
  let original: RulesetSnapshot;
  let dir: string;
  const project = uniqueName('compose').replace(/-/g, '_');
  const compose = (args: string[]) =>
    podman.run(['--podman-path', join(dir, 'podman'), '-p', project, '-f', join(dir, 'compose.yaml'), ...args], { netns: lab.host.name, file: 'podman-compose', timeoutMs: 180_000 });

  beforeAll(async () => {
    if (!isRoot) throw new Error('the deployment tests need root (network namespaces, podman)');
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
    writeFileSync(join(dir, 'podman'), HOST_NET_WRAPPER, { mode: 0o755 });
  }, 600_000);

  afterAll(async () => {
    if (dir && lab) await compose(['down']).catch(() => undefined);
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

  it('up: the namespace holds exactly what plan selects, and the health check passes', async () => {
    const up = await compose(['up', '-d']);
    expect(up.exitCode, up.stderr).toBe(0);
    const container = `${project}_wcf-agent_1`;
    const plan = (JSON.parse(await podman.ok(['exec', container, 'wcf-agent', 'plan', '--json'], { netns: lab.host.name })) as { entries: { ip: string }[] }).entries
      .map((e) => e.ip)
      .sort();
    expect(plan).toHaveLength(100);
    await waitFor(async () => JSON.stringify(await kernelEntries(lab.host, 'ipset')) === JSON.stringify(plan), 'the kernel set to equal plan', 60_000, 250).catch(async (err: Error) => {
      throw new Error(`${err.message}; logs:\n${(await podman.run(['logs', container])).stderr}`);
    });
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    // The health check: podman runs it from systemd timers, which this machine has not, and
    // podman-compose 1.0.3 wraps a CMD check in /bin/sh -c, which the image (no shell) has
    // not either. So: the check's command is the one the compose file names, run here.
    const check = (parse(readFileSync(join(dir, 'compose.yaml'), 'utf8')) as { services: Record<string, { healthcheck: { test: string[] } }> }).services['wcf-agent']!.healthcheck.test;
    expect(check[0]).toBe('CMD');
    expect(await podman.ok(['inspect', '-f', '{{json .Config.Healthcheck.Test}}', container])).toContain(check.slice(1).join("' '"));
    const health = await podman.run(['exec', container, ...check.slice(1)], { netns: lab.host.name });
    expect(health.exitCode, health.stdout + health.stderr).toBe(0);
  });

  it('down keeps the rules; flush from the image with the compose volume leaves the namespace as it was', async () => {
    const down = await compose(['down']);
    expect(down.exitCode, down.stderr).toBe(0);
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
