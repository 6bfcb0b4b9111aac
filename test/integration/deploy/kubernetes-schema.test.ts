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
const find = (kind: string, name?: string): Manifest['doc'] => {
  const m = manifests.find((x) => x.doc.kind === kind && (name === undefined || x.doc.metadata.name === name));
  if (!m) throw new Error(`no ${kind} ${name ?? ''} in deploy/kubernetes`);
  return m.doc;
};
// The pod template, typed loosely: the schema checks above vouch for its shape.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Any = any;

describe('deploy/kubernetes against the Kubernetes API schema', () => {
  it('has the DaemonSet, its Namespace, PriorityClass, Secret, ConfigMap, the metrics RBAC and the PodMonitor example', () => {
    expect(manifests.map((m) => `${m.file}: ${m.doc.kind} ${m.doc.metadata.name}`).sort()).toEqual([
      'configmap.example.yaml: ConfigMap wcf-agent-config',
      'daemonset.yaml: DaemonSet wcf-agent',
      'metrics-rbac.yaml: ClusterRole wcf-agent-kube-rbac-proxy',
      'metrics-rbac.yaml: ClusterRole wcf-agent-metrics-reader',
      'metrics-rbac.yaml: ClusterRoleBinding wcf-agent-kube-rbac-proxy',
      'metrics-rbac.yaml: ServiceAccount wcf-agent',
      'namespace.yaml: Namespace wcf-agent',
      'podmonitor.example.yaml: ClusterRoleBinding wcf-agent-scraper',
      'podmonitor.example.yaml: PodMonitor wcf-agent',
      'podmonitor.example.yaml: Secret wcf-agent-scraper-token',
      'podmonitor.example.yaml: ServiceAccount wcf-agent-scraper',
      'priorityclass.yaml: PriorityClass wcf-agent-node',
      'secret.example.yaml: Secret wcf-agent-token',
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
  const container = pod.containers.find((c: Any) => c.name === 'wcf-agent');
  const mount = (name: string) => container.volumeMounts.find((v: Any) => v.name === name);
  const volume = (name: string) => pod.volumes.find((v: Any) => v.name === name);

  it('runs in the node network namespace as root with NET_ADMIN only (its nftables backend needs no NET_RAW), on a read-only root', () => {
    expect(pod.hostNetwork).toBe(true);
    expect(JSON.parse((find('ConfigMap') as Any).data['config.json']).plugin).toBe('nftables');
    expect(container.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'], add: ['NET_ADMIN'] },
    });
  });

  it('keeps the state dir on the node and shares its xtables lock', () => {
    expect(mount('state').mountPath).toBe('/var/lib/wcf-agent');
    // A host path of its own, not the .deb's state_dir: two agents on one node stay two agents.
    expect(volume('state').hostPath).toEqual({ path: '/var/lib/wcf-agent-daemonset', type: 'DirectoryOrCreate' });
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
    const secret = find('Secret', 'wcf-agent-token') as Any;
    expect(volume('config').configMap.name).toBe(cm.metadata.name);
    expect(volume('token').secret).toMatchObject({ secretName: secret.metadata.name, defaultMode: 0o400 });
    const config = JSON.parse(cm.data['config.json']);
    expect(config.token_file).toBe(`${mount('token').mountPath}/${Object.keys(secret.stringData)[0]}`);
    expect(`${mount('config').mountPath}/config.json`).toBe(container.args[container.args.indexOf('--config') + 1]);
    const clusterWide = ['Namespace', 'PriorityClass', 'ClusterRole', 'ClusterRoleBinding'];
    for (const m of manifests.filter((x) => !clusterWide.includes(x.doc.kind))) {
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

describe('the scrape path: kube-rbac-proxy on the node, the agent on its loopback', () => {
  const ds = find('DaemonSet') as Any;
  const pod = ds.spec.template.spec;
  const agent = pod.containers.find((c: Any) => c.name === 'wcf-agent');
  const proxy = pod.containers.find((c: Any) => c.name === 'kube-rbac-proxy');
  const arg = (name: string) => proxy.args.find((a: string) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
  const monitor = find('PodMonitor') as Any;
  const config = JSON.parse((find('ConfigMap') as Any).data['config.json']);

  it("the agent listens on the node's loopback and opens no port; the proxy forwards there, /metrics only", () => {
    expect(config.metrics_listen).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(agent.ports).toBeUndefined();
    expect(arg('upstream')).toBe(`http://${config.metrics_listen}/`);
    expect(arg('allow-paths')).toBe('/metrics');
  });

  it("the proxy listens with TLS on the node's own address, at the port the PodMonitor scrapes", () => {
    expect(arg('secure-listen-address')).toBe('[$(NODE_IP)]:9443');
    expect(proxy.env).toContainEqual({ name: 'NODE_IP', valueFrom: { fieldRef: { fieldPath: 'status.hostIP' } } });
    const [endpoint] = monitor.spec.podMetricsEndpoints;
    const port = proxy.ports.find((p: Any) => p.name === endpoint.port);
    expect(port).toMatchObject({ containerPort: 9443, hostPort: 9443 });
    expect(endpoint).toMatchObject({ scheme: 'https', path: '/metrics', authorization: { type: 'Bearer', credentials: { name: 'wcf-agent-scraper-token', key: 'token' } } });
  });

  it('only the proxy holds a token, and it is a non-root process with no capability', () => {
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.serviceAccountName).toBe((find('ServiceAccount', 'wcf-agent') as Any).metadata.name);
    expect(agent.volumeMounts.map((m: Any) => m.name)).not.toContain('kube-api-access');
    expect(proxy.volumeMounts).toEqual([{ name: 'kube-api-access', mountPath: '/var/run/secrets/kubernetes.io/serviceaccount', readOnly: true }]);
    expect(pod.volumes.find((v: Any) => v.name === 'kube-api-access').projected.sources[0].serviceAccountToken.path).toBe('token');
    expect(proxy.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
    expect(proxy.securityContext.capabilities.add).toBeUndefined();
  });

  it('RBAC: the proxy may only ask the API who a caller is and what it may do; the scraper may only get /metrics', () => {
    const proxyRole = find('ClusterRole', 'wcf-agent-kube-rbac-proxy') as Any;
    expect(proxyRole.rules).toEqual([
      { apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create'] },
      { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
    ]);
    expect((find('ClusterRoleBinding', 'wcf-agent-kube-rbac-proxy') as Any).subjects).toEqual([{ kind: 'ServiceAccount', name: pod.serviceAccountName, namespace: 'wcf-agent' }]);
    expect((find('ClusterRole', 'wcf-agent-metrics-reader') as Any).rules).toEqual([{ nonResourceURLs: ['/metrics'], verbs: ['get'] }]);
    const scraper = find('ClusterRoleBinding', 'wcf-agent-scraper') as Any;
    expect(scraper.roleRef.name).toBe('wcf-agent-metrics-reader');
    expect((find('Secret', 'wcf-agent-scraper-token') as Any).metadata.annotations['kubernetes.io/service-account.name']).toBe(scraper.subjects[0].name);
  });

  it('the PodMonitor selects the DaemonSet\'s pods and names the job the rules select', () => {
    expect(monitor.spec.selector.matchLabels).toEqual(ds.spec.template.metadata.labels);
    expect(monitor.spec.namespaceSelector.matchNames).toEqual([ds.metadata.namespace]);
    // jobLabel: the job is that pod label's value.
    expect(ds.spec.template.metadata.labels[monitor.spec.jobLabel]).toBe('wcf-agent');
  });
});
