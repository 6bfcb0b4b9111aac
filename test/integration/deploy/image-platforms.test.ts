/**
 * The image archive (`npm run build:image`) for its two platforms, read as a registry or
 * a container engine reads it: the OCI index, each platform's config and layer. The arm64
 * layer's programs are run here under qemu-aarch64-static with that layer as their root
 * (`-L`), as no arm64 container can run on this machine (no binfmt_misc registration).
 */
import { existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { versionLine } from '../../helpers/packaging.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { VERSION, run, tempDir } from '../../helpers/packaging.js';
import { EM_AARCH64, EM_X86_64, elfMachine, expectSamePlan, requireQemu, runArm64 } from '../../helpers/arm64.js';
import { ensureImage } from './podman.js';

interface Descriptor {
  mediaType: string;
  digest: string;
  platform?: { architecture: string; os: string; variant?: string };
  annotations?: Record<string, string>;
}

let dir: string;
const blob = (d: Descriptor) => join(dir, 'oci', 'blobs', 'sha256', d.digest.slice('sha256:'.length));
const json = <T>(d: Descriptor) => JSON.parse(readFileSync(blob(d), 'utf8')) as T;
let platforms: Descriptor[];
/** Each platform's layer, unpacked. */
const roots: Record<string, string> = {};
let sim: Simulator;

beforeAll(async () => {
  await requireQemu();
  const archive = await ensureImage();
  dir = tempDir('image-platforms');
  mkdirSync(join(dir, 'oci'));
  expect((await run('tar', ['-C', join(dir, 'oci'), '-xf', archive])).exitCode).toBe(0);
  const index = JSON.parse(readFileSync(join(dir, 'oci', 'index.json'), 'utf8')) as { manifests: Descriptor[] };
  expect(index.manifests).toHaveLength(1);
  platforms = json<{ manifests: Descriptor[] }>(index.manifests[0]!).manifests;
  for (const p of platforms) {
    const manifest = json<{ layers: Descriptor[] }>(p);
    const root = join(dir, `root-${p.platform!.architecture}`);
    mkdirSync(root);
    expect(manifest.layers).toHaveLength(1);
    expect((await run('tar', ['-C', root, '-xzf', blob(manifest.layers[0]!)])).exitCode).toBe(0);
    roots[p.platform!.architecture] = root;
  }
  sim = await startSimulator({ indicators: 3000, seed: 11 });
}, 900_000);

afterAll(async () => {
  await sim?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the image archive', () => {
  it('names one image, wcf-agent:VERSION, an index of two platforms: linux/amd64 and linux/arm64 (v8)', () => {
    const index = JSON.parse(readFileSync(join(dir, 'oci', 'index.json'), 'utf8')) as { manifests: Descriptor[] };
    expect(index.manifests[0]).toMatchObject({
      mediaType: 'application/vnd.oci.image.index.v1+json',
      annotations: { 'org.opencontainers.image.ref.name': `wcf-agent:${VERSION}` },
    });
    expect(platforms.map((p) => p.platform)).toEqual([
      { architecture: 'amd64', os: 'linux' },
      { architecture: 'arm64', os: 'linux', variant: 'v8' },
    ]);
    for (const p of platforms) {
      const config = json<{ architecture: string; os: string; config: { Entrypoint: string[] } }>(json<{ config: Descriptor }>(p).config);
      expect(config).toMatchObject({ architecture: p.platform!.architecture, os: 'linux', config: { Entrypoint: ['/usr/bin/wcf-agent'] } });
    }
  });

  it.each([
    ['amd64', EM_X86_64, 'x86_64-linux-gnu'],
    ['arm64', EM_AARCH64, 'aarch64-linux-gnu'],
  ])('%s: its binary, firewall tools and every Debian package are of that architecture', (arch, machine, triplet) => {
    const root = roots[arch]!;
    for (const program of ['usr/bin/wcf-agent', 'usr/sbin/nft', 'usr/sbin/ipset', 'usr/sbin/xtables-nft-multi', 'usr/bin/stdbuf']) expect(elfMachine(join(root, program)), program).toBe(machine);
    expect(existsSync(join(root, 'usr/lib', triplet, 'libc.so.6'))).toBe(true);
    const records = readdirSync(join(root, 'var/lib/dpkg/status.d')).filter((f) => !f.endsWith('.md5sums'));
    expect(records).toEqual(expect.arrayContaining(['nftables', 'ipset', 'iptables', 'libstdc++6', 'coreutils']));
    for (const pkg of records) {
      const a = /^Architecture: (.*)$/m.exec(readFileSync(join(root, 'var/lib/dpkg/status.d', pkg), 'utf8'))?.[1];
      expect([arch, 'all'], pkg).toContain(a);
    }
  });

  it.each(['amd64', 'arm64'])('%s: has stdbuf with its libstdbuf.so for xtables-monitor, and no other program of coreutils', (arch) => {
    const root = roots[arch]!;
    expect(existsSync(join(root, 'usr/bin/stdbuf'))).toBe(true);
    expect(existsSync(join(root, 'usr/libexec/coreutils/libstdbuf.so'))).toBe(true);
    expect(existsSync(join(root, 'usr/sbin/xtables-monitor'))).toBe(true);
    for (const gone of ['usr/bin/ls', 'usr/bin/cat', 'usr/bin/env', 'usr/bin/rm', 'bin/sh']) expect(existsSync(join(root, gone)), gone).toBe(false);
    // Nor a link left pointing at one of them.
    for (const dir of ['usr/bin', 'usr/sbin']) {
      const dangling = readdirSync(join(root, dir)).filter((f) => {
        const target = lstatSync(join(root, dir, f)).isSymbolicLink() ? readlinkSync(join(root, dir, f)) : undefined;
        return target !== undefined && !existsSync(target.startsWith('/') ? join(root, target) : join(root, dir, target));
      });
      expect(dangling, dir).toEqual([]);
    }
    // The package's file list names what is left of it (image scanners read it).
    const list = readFileSync(join(root, 'var/lib/dpkg/status.d/coreutils.md5sums'), 'utf8').trim().split('\n').map((l) => l.split(/\s+/)[1]);
    expect(list.sort()).toEqual(['usr/bin/stdbuf', 'usr/libexec/coreutils/libstdbuf.so', 'usr/share/doc/coreutils/copyright']);
  });
});

describe('the arm64 image’s programs under qemu', () => {
  const root = () => roots.arm64!;

  it('wcf-agent --version, with an empty environment', async () => {
    const r = await runArm64(root(), join(root(), 'usr/bin/wcf-agent'), ['--version']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(versionLine(VERSION));
  });

  it('wcf-agent plan --json against the simulator says what the amd64 image’s binary says', async () => {
    const work = tempDir('image-plan');
    try {
      const config = join(work, 'config.json');
      writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(work, 'state'), retries: 0 }), { mode: 0o600 });
      const onArm = await runArm64(root(), join(root(), 'usr/bin/wcf-agent'), ['plan', '--json', '--config', config], { cwd: work });
      expect(onArm.exitCode, onArm.stderr).toBe(0);
      const onAmd = await run(join(roots.amd64!, 'usr/bin/wcf-agent'), ['plan', '--json', '--config', config], { cwd: work, env: {} });
      expect(onAmd.exitCode, onAmd.stderr).toBe(0);
      expectSamePlan(onArm.stdout, onAmd.stdout);
    } finally {
      rmSync(work, { recursive: true, force: true });
    }
  });

  it('ipset and iptables-legacy print their versions; iptables-nft and nft start and reach for the kernel', async () => {
    const ipset = await runArm64(root(), join(root(), 'usr/sbin/ipset'), ['--version']);
    expect(ipset.stdout).toMatch(/^ipset v7\.\d+, protocol version: 7$/m);
    const legacy = await runArm64(root(), join(root(), 'usr/sbin/xtables-legacy-multi'), ['iptables', '-V']);
    expect(legacy.exitCode, legacy.stderr).toBe(0);
    expect(legacy.stdout.trim()).toMatch(/^iptables v1\.8\.\d+ \(legacy\)$/);
    // nft (even for --version) and iptables-nft open a netfilter netlink socket first, which
    // qemu-user refuses (it emulates route, audit and uevent netlink only): they loaded, ran,
    // and stopped there. On an arm64 host they run natively.
    const nft = await runArm64(root(), join(root(), 'usr/sbin/nft'), ['--version']);
    expect(nft.stderr).toMatch(/Unable to initialize Netlink socket: Protocol not supported/);
    const nftables = await runArm64(root(), join(root(), 'usr/sbin/xtables-nft-multi'), ['iptables', '-V']);
    expect(nftables.stderr).toMatch(/Failed to initialize nft: Protocol not supported/);
  });

  it.each(['usr/sbin/nft', 'usr/sbin/ipset', 'usr/sbin/xtables-nft-multi', 'usr/bin/stdbuf', 'usr/libexec/coreutils/libstdbuf.so'])(
    '%s: every library it needs is in the image (the arm64 dynamic loader resolves them)',
    async (program) => {
      const r = await runArm64(root(), join(root(), 'lib/ld-linux-aarch64.so.1'), ['--list', join(root(), program)]);
      expect(r.exitCode, r.stderr + r.stdout).toBe(0);
      expect(r.stdout).not.toMatch(/not found/);
      expect(r.stdout).toMatch(/libc\.so\.6 => \/lib\/aarch64-linux-gnu\/libc\.so\.6/);
    },
  );
});
