import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { ROOT } from '../../helpers/packaging.js';
import { typeErrors } from '../../helpers/tsc-check.js';

/**
 * The Kubernetes manifests in deploy/kubernetes/, and their check against the
 * Kubernetes API schema, offline, from the kubernetes-models package (models and
 * validators generated from Kubernetes' own OpenAPI document; the PodMonitor's from the
 * Prometheus Operator's CRD, @kubernetes-models/prometheus-operator):
 *  - its validators (ajv, compiled from the schema): types, required fields, formats;
 *  - strict field names, as `kubectl apply` (server-side field validation) and
 *    kubeconform -strict refuse unknown ones: each manifest is written as a TypeScript
 *    object literal of the package's type for its kind, and tsc's excess-property check
 *    names any field the API does not have, at any depth.
 */

export const KUBE_DIR = join(ROOT, 'deploy', 'kubernetes');

export interface Manifest {
  readonly file: string;
  readonly doc: Record<string, unknown> & { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
}

/** YAML 1.1, as Kubernetes reads it (0400 is octal there, 400 in YAML 1.2). */
export function parseManifests(text: string, file: string): Manifest[] {
  return parseAllDocuments(text, { version: '1.1' })
    .filter((d) => d.contents !== null)
    .map((d) => {
      if (d.errors.length) throw new Error(`${file}: ${d.errors[0]!.message}`);
      return { file, doc: d.toJS() as Manifest['doc'] };
    });
}

export function loadManifests(): Manifest[] {
  return readdirSync(KUBE_DIR)
    .filter((f) => f.endsWith('.yaml'))
    .sort()
    .flatMap((f) => parseManifests(readFileSync(join(KUBE_DIR, f), 'utf8'), f));
}

/** The kubernetes-models module and type of each kind used here. */
const MODELS: Record<string, { module: string; name: string }> = {
  'apps/v1 DaemonSet': { module: 'kubernetes-models/apps/v1/DaemonSet', name: 'DaemonSet' },
  'v1 Namespace': { module: 'kubernetes-models/v1/Namespace', name: 'Namespace' },
  'v1 Secret': { module: 'kubernetes-models/v1/Secret', name: 'Secret' },
  'v1 ConfigMap': { module: 'kubernetes-models/v1/ConfigMap', name: 'ConfigMap' },
  'v1 Pod': { module: 'kubernetes-models/v1/Pod', name: 'Pod' },
  'scheduling.k8s.io/v1 PriorityClass': { module: 'kubernetes-models/scheduling.k8s.io/v1/PriorityClass', name: 'PriorityClass' },
  'v1 ServiceAccount': { module: 'kubernetes-models/v1/ServiceAccount', name: 'ServiceAccount' },
  'rbac.authorization.k8s.io/v1 ClusterRole': { module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRole', name: 'ClusterRole' },
  'rbac.authorization.k8s.io/v1 ClusterRoleBinding': { module: 'kubernetes-models/rbac.authorization.k8s.io/v1/ClusterRoleBinding', name: 'ClusterRoleBinding' },
  // The Prometheus Operator's custom resource, from its CRD (@kubernetes-models/prometheus-operator).
  'monitoring.coreos.com/v1 PodMonitor': { module: '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/PodMonitor', name: 'PodMonitor' },
};

function modelOf(m: Manifest): { module: string; name: string } {
  const model = MODELS[`${m.doc.apiVersion} ${m.doc.kind}`];
  if (!model) throw new Error(`${m.file}: no schema here for ${m.doc.apiVersion} ${m.doc.kind}`);
  return model;
}

/** The schema validators' problems with `m` (`/path: message`), none when valid. */
export async function schemaProblems(m: Manifest): Promise<string[]> {
  const { module, name } = modelOf(m);
  const Model = (await import(module))[name] as new (data: unknown) => { validate(): void };
  try {
    new Model(m.doc).validate();
    return [];
  } catch (err) {
    const details = (err as { errors?: { instancePath: string; message?: string }[] }).errors;
    return details?.length ? details.map((e) => `${e.instancePath || '/'}: ${e.message ?? 'invalid'}`) : [(err as Error).message];
  }
}

/** Fields the API does not know, per manifest (tsc's messages), for all of `manifests` in one tsc run. */
export async function unknownFields(manifests: readonly Manifest[]): Promise<Map<number, string[]>> {
  const sources = manifests.map((m) => {
    const { module, name } = modelOf(m);
    return `import type { I${name} } from '${module}';\nexport const m: I${name} = ${JSON.stringify(m.doc, null, 2)};\n`;
  });
  const errors = await typeErrors(sources, 'k8s-strict');
  return new Map(errors.map((e, i) => [i, e]));
}
