import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';
import { loadManifests, parseManifests, schemaProblems, unknownFields, type Manifest } from './manifests.js';

/**
 * deploy/kubernetes/ against the Kubernetes API schema (offline, from the
 * kubernetes-models package), and what the issue asks of the DaemonSet, read from the
 * manifests themselves.
 */

const manifests = loadManifests();
const find = (kind: string): Manifest['doc'] => {
  const m = manifests.find((x) => x.doc.kind === kind);
  if (!m) throw new Error(`no ${kind} in deploy/kubernetes`);
  return m.doc;
};
// The pod template, typed loosely: the schema checks above vouch for its shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('deploy/kubernetes against the Kubernetes API schema', () => {
  it('has the DaemonSet, its Namespace, PriorityClass, Secret and ConfigMap', () => {
    expect(manifests.map((m) => `${m.file}: ${m.doc.kind}`).sort()).toEqual([
      'configmap.example.yaml: ConfigMap',
      'daemonset.yaml: DaemonSet',
      'namespace.yaml: Namespace',
      'priorityclass.yaml: PriorityClass',
      'secret.example.yaml: Secret',
    ]);
  });

  it('every manifest passes the schema validators and names no field the API lacks', async () => {
    for (const m of manifests) expect(await schemaProblems(m), m.file).toEqual([]);
    const unknown = await unknownFields(manifests);
    manifests.forEach((m, i) => expect(unknown.get(i), m.file).toEqual([]));
  }, 120_000);

  it('the checks can fail: a wrong type and a misspelled field are both caught, with their path', async () => {
    const [ds] = parseManifests(
      `apiVersion: apps/v1
kind: DaemonSet
metadata: {name: x}
spec:
  selector: {matchLabels: {a: b}}
  template:
    metadata: {labels: {a: b}}
    spec:
      hostNetwork: "yes"
      containers:
        - name: c
          image: i
          securityContext: {readOnlyRootFileSystem: true}
`,
      'bad.yaml',
    );
    expect((await schemaProblems(ds!)).join('\n')).toMatch(/\/spec\/template\/spec\/hostNetwork: must be boolean/);
    const unknown = (await unknownFields([ds!])).get(0)!.join('\n');
    expect(unknown).toMatch(/readOnlyRootFileSystem/);
  }, 120_000);
});

describe('the DaemonSet', () => {
  const ds = find('DaemonSet') as Any;
  const pod = ds.spec.template.spec;
  const [container] = pod.containers;
  const mount = (name: string) => container.volumeMounts.find((v: Any) => v.name === name);
  const volume = (name: string) => pod.volumes.find((v: Any) => v.name === name);

  it('runs in the node network namespace as root with NET_ADMIN and NET_RAW only, on a read-only root', () => {
    expect(pod.hostNetwork).toBe(true);
    expect(container.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'], add: ['NET_ADMIN', 'NET_RAW'] },
    });
  });

  it('keeps the state dir on the node and shares its xtables lock', () => {
    expect(mount('state').mountPath).toBe('/var/lib/wcf-agent');
    expect(volume('state').hostPath).toEqual({ path: '/var/lib/wcf-agent', type: 'DirectoryOrCreate' });
    expect(mount('xtables-lock').mountPath).toBe('/run/xtables.lock');
    expect(volume('xtables-lock').hostPath).toEqual({ path: '/run/xtables.lock', type: 'FileOrCreate' });
  });

  it('covers every node, ahead of ordinary workloads, and updates one node at a time', () => {
    expect(pod.tolerations).toContainEqual({ operator: 'Exists' });
    expect(pod.priorityClassName).toBe((find('PriorityClass') as Any).metadata.name);
    expect(ds.spec.updateStrategy).toEqual({ type: 'RollingUpdate', rollingUpdate: { maxUnavailable: 1, maxSurge: 0 } });
  });

  it('has memory requests and limits, and probes on the address the ConfigMap makes the metrics listener use', () => {
    expect(container.resources.requests.memory).toMatch(/^\d+Mi$/);
    expect(container.resources.limits.memory).toMatch(/^\d+Mi$/);
    const config = JSON.parse((find('ConfigMap') as Any).data['config.json']);
    const [host, port] = config.metrics_listen.split(':');
    for (const [probe, path] of [['startupProbe', '/healthz'], ['livenessProbe', '/healthz'], ['readinessProbe', '/readyz']] as const) {
      expect(container[probe].httpGet, probe).toEqual({ host, port: Number(port), path });
    }
  });

  it('reads the config from the ConfigMap and the token from the Secret, where config.json says it is', () => {
    const cm = find('ConfigMap') as Any;
    const secret = find('Secret') as Any;
    expect(volume('config').configMap.name).toBe(cm.metadata.name);
    expect(volume('token').secret).toMatchObject({ secretName: secret.metadata.name, defaultMode: 0o400 });
    const config = JSON.parse(cm.data['config.json']);
    expect(config.token_file).toBe(`${mount('token').mountPath}/${Object.keys(secret.stringData)[0]}`);
    expect(`${mount('config').mountPath}/config.json`).toBe(container.args[container.args.indexOf('--config') + 1]);
    for (const m of manifests.filter((x) => x.doc.kind !== 'Namespace' && x.doc.kind !== 'PriorityClass')) {
      expect(m.doc.metadata.namespace, m.file).toBe((find('Namespace') as Any).metadata.name);
    }
  });

  it("the ConfigMap's config.json passes check-config once its placeholders are filled in", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-k8s-config-'));
    try {
      const config = JSON.parse((find('ConfigMap') as Any).data['config.json']);
      writeFileSync(join(dir, 'token'), 'a-real-token\n', { mode: 0o600 });
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, agid: 'node-fleet', base_url: 'https://intel.internal.test/api/v1', token_file: join(dir, 'token') }), { mode: 0o644 });
      const r = await runCli(['check-config', '--config', join(dir, 'config.json')]);
      expect(r.exitCode, r.stderr).toBe(0);
      // As shipped, the placeholders are refused, naming the field.
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...config, token_file: join(dir, 'token') }));
      const shipped = await runCli(['check-config', '--config', join(dir, 'config.json')]);
      expect(shipped.exitCode).toBe(2);
      expect(shipped.stderr).toMatch(/agid: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
