import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { waitFor } from '../../helpers/cli.js';
import { ADDR, createLab, isRoot, snapshot, type Lab, type RulesetSnapshot } from '../../netns/netns.js';
import { relayInto, type InNamespace } from '../../netns/relay.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { API_PORT, kernelEntries, seedSimulator, TOKEN_PATH } from './agent-image.js';
import { loadManifests } from './manifests.js';
import { IMAGE, Podman, uniqueName } from './podman.js';

/**
 * The DaemonSet's pod template, as it is in deploy/kubernetes/daemonset.yaml, run by
 * `podman kube play` (Debian 12's podman 4.3 plays Pods, not DaemonSets: the template
 * becomes a Pod) with the example ConfigMap and Secret, in a test namespace: podman
 * runs under nsenter there, so `hostNetwork: true` is that namespace, never the
 * machine's. Changed for the test, and only these: the two hostPath paths point into a
 * temp dir (the machine's /var/lib/wcf-agent and /run/xtables.lock stay untouched), the
 * ConfigMap's agid and base_url name the simulator, the Secret holds its token, and the
 * kube-rbac-proxy container is left out with its token volume: its image cannot be pulled
 * here (no registry), and what it checks callers against is a Kubernetes API server (its
 * arguments and RBAC are checked in kubernetes-schema.test.ts).
 */

const CAP_NET_ADMIN = 1n << 12n;

describe('the DaemonSet pod under podman kube play', () => {
  let podman: Podman;
  let sim: Simulator;
  let lab: Lab;
  let relay: InNamespace;
  let original: RulesetSnapshot;
  let dir: string;
  let container: string;
  const podName = uniqueName('pod');

  beforeAll(async () => {
    if (!isRoot) throw new Error('the deployment tests need root (network namespaces, podman)');
    podman = Podman.create();
    await podman.loadImage();
    // podman 4.3 writes a Secret's `data` to the file without decoding it and ignores
    // `stringData`, so the test's token is a valid base64 text that stands for itself.
    sim = await startSimulator({ indicators: 0, token: 'd2NmLWFnZW50LWt1YmUtcGxheQ==', agentConfig: { maximum_rules: '100', score_threshold: '4', running: 'true' } });
    seedSimulator(sim);
    lab = await createLab();
    original = await snapshot(lab.host);
    relay = await relayInto(lab.host, '127.0.0.1', API_PORT, { host: '127.0.0.1', port: Number(new URL(sim.url).port) });

    dir = mkdtempSync(join(tmpdir(), 'wcf-kube-play-'));
    const docs = loadManifests();
    const doc = (kind: string, name?: string) => structuredClone(docs.find((m) => m.doc.kind === kind && (!name || m.doc.metadata.name === name))!.doc) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
    const ds = doc('DaemonSet');
    const spec = ds.spec.template.spec;
    spec.containers = spec.containers.filter((c: { name: string }) => c.name !== 'kube-rbac-proxy');
    spec.volumes = spec.volumes.filter((v: { name: string }) => v.name !== 'kube-api-access');
    for (const v of spec.volumes) if (v.hostPath) v.hostPath.path = join(dir, v.name === 'state' ? 'state' : 'xtables.lock');
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: podName, labels: ds.spec.template.metadata.labels }, spec };
    const cm = doc('ConfigMap');
    const config = JSON.parse(cm.data['config.json']);
    cm.data['config.json'] = JSON.stringify({ ...config, agid: sim.agid, base_url: `http://127.0.0.1:${API_PORT}${new URL(sim.url).pathname}` }, null, 2);
    const secret = doc('Secret', 'wcf-agent-token');
    secret.data = { [Object.keys(secret.stringData)[0]!]: sim.token };
    delete secret.stringData;
    writeFileSync(join(dir, 'config.json'), cm.data['config.json']);
    writeFileSync(join(dir, 'token'), sim.token, { mode: 0o600 });
    writeFileSync(join(dir, 'pod.yaml'), stringify(pod));
    writeFileSync(join(dir, 'configmap.yaml'), stringify(cm));
    writeFileSync(join(dir, 'secret.yaml'), stringify(secret));
    await podman.ok(['secret', 'create', secret.metadata.name, join(dir, 'secret.yaml')]);
    await podman.ok(['kube', 'play', '--configmap', join(dir, 'configmap.yaml'), join(dir, 'pod.yaml')], { netns: lab.host.name });
    container = `${podName}-${spec.containers[0].name}`;
  }, 600_000);

  afterAll(async () => {
    await podman?.destroy();
    await relay?.close();
    await lab?.destroy();
    await sim?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('enforces in the namespace exactly what plan selects, with the state on the node', async () => {
    // `podman exec` into a host-network container stays in the caller's network namespace:
    // under nsenter, that is the test namespace, as for the pod.
    const plan = (JSON.parse(await podman.ok(['exec', container, 'wcf-agent', 'plan', '--json'], { netns: lab.host.name })) as { entries: { ip: string }[] }).entries.map((e) => e.ip).sort();
    expect(plan).toHaveLength(100);
    await waitFor(async () => JSON.stringify(await kernelEntries(lab.host, 'nftables')) === JSON.stringify(plan), 'the kernel set to equal plan', 60_000, 250).catch(async (err: Error) => {
      const kernel = await kernelEntries(lab.host, 'nftables');
      const diff = [...plan.filter((ip) => !kernel.includes(ip)).map((ip) => `-${ip}`), ...kernel.filter((ip) => !plan.includes(ip)).map((ip) => `+${ip}`)];
      throw new Error(`${err.message}; kernel against plan: ${diff.join(' ')}; logs:\n${(await podman.run(['logs', container])).stderr.slice(-3000)}`);
    });
    expect(await lab.connect(ADDR.blocked)).toBe('timeout');
    expect(await lab.connect(ADDR.allowed)).toBe('connected');
    // The probes the DaemonSet names, where it names them (metrics_listen 127.0.0.1:9464 on the node's network).
    const probe = async (path: string) =>
      JSON.parse(
        await lab.host.exec(process.execPath, ['-e', `fetch('http://127.0.0.1:9464${path}').then(async (r) => console.log(JSON.stringify({ status: r.status, text: (await r.text()).trim() })))`]),
      ) as { status: number; text: string };
    expect(await probe('/healthz')).toMatchObject({ status: 200, text: expect.stringMatching(/^alive: /) });
    expect(await probe('/readyz')).toMatchObject({ status: 200, text: expect.stringMatching(/^ready: nftables enforcing the last applied set \(100 entries\); last look /) });
    // Off the node nothing reaches the agent's listener: a peer connecting to the node's
    // address at that port is refused (the scrape path is the proxy's TLS port instead).
    const offNode = await lab.peer.exec(process.execPath, ['-e', `require('node:net').connect({ host: '${ADDR.host}', port: 9464, localAddress: '${ADDR.allowed}' }).on('connect', () => { console.log('connected'); process.exit(0); }).on('error', (e) => { console.log(e.code); process.exit(0); })`]);
    expect(offNode.trim()).toBe('ECONNREFUSED');
    expect((await probe('/metrics')).text).toMatch(/^# HELP wcf_agent_/m);
    // The hostPath state dir holds the set a restarted pod re-applies.
    expect(existsSync(join(dir, 'state', 'applied-nftables.json'))).toBe(true);
    expect(JSON.parse(readFileSync(join(dir, 'state', 'applied-nftables.json'), 'utf8')).entries).toHaveLength(100);
  }, 120_000);

  it('runs with NET_ADMIN only (nftables needs no NET_RAW), no privilege escalation, seccomp, and a read-only root', async () => {
    const pid = (await podman.ok(['inspect', '-f', '{{.State.Pid}}', container])).trim();
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const field = (name: string) => new RegExp(`^${name}:\\s*(\\S+)`, 'm').exec(status)![1]!;
    expect(BigInt(`0x${field('CapEff')}`)).toBe(CAP_NET_ADMIN);
    expect(BigInt(`0x${field('CapBnd')}`)).toBe(CAP_NET_ADMIN);
    expect(field('NoNewPrivs')).toBe('1');
    expect(field('Seccomp')).toBe('2');
    expect((await podman.ok(['inspect', '-f', '{{.HostConfig.ReadonlyRootfs}}', container])).trim()).toBe('true');
    // The token came through the Secret volume, the config through the ConfigMap's.
    expect(readFileSync(`/proc/${pid}/root/run/secrets/wcf-agent/token`, 'utf8').trim()).toBe(sim.token);
    expect(JSON.parse(readFileSync(`/proc/${pid}/root/etc/wcf-agent/config.json`, 'utf8')).agid).toBe(sim.agid);
  });

  it('taken down, then flushed from the image: the namespace is as it was', async () => {
    await podman.ok(['kube', 'down', join(dir, 'pod.yaml')], { netns: lab.host.name });
    // The rules stay when the pod goes (on_stop keep): a rolling update never opens a gap.
    expect(await kernelEntries(lab.host, 'nftables')).toHaveLength(100);
    const flushed = await podman.run([
      'run', '--rm', '--network', `ns:/run/netns/${lab.host.name}`, '--cap-drop', 'ALL', '--cap-add', 'NET_ADMIN',
      '-v', `${join(dir, 'state')}:/var/lib/wcf-agent`, '-v', `${join(dir, 'config.json')}:/etc/wcf-agent/config.json:ro`,
      '-v', `${join(dir, 'token')}:${TOKEN_PATH}:ro`,
      IMAGE, 'flush',
    ]);
    expect(flushed.exitCode, flushed.stderr).toBe(0);
    expect(await snapshot(lab.host)).toEqual(original);
  });
});
