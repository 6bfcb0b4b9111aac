/**
 * SLOW (about two minutes of building on an idle 2-core machine): `npm run build:verify`
 * builds this commit twice, in two fresh clones at different paths, one after the other,
 * under another umask, time zone, locale and host name, and compares every artifact byte for
 * byte. Here for x64 only (the binary, the .deb, the RPM, the image archive and their SBOMs)
 * and with gzip instead of xz, to keep the suite's time down; the same command covers arm64
 * and xz (docs/deployment.md, Reproducible builds, has that run's figures).
 *
 * The two builds share node_modules (what `npm ci` installed, which the lock pins): what is not
 * under test. Each makes its own Debian root file systems for the image.
 */
import { copyFileSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { VERSION, run, runScript, tempDir } from '../../helpers/packaging.js';

const PKG_VERSION = VERSION.replace('-', '~');
let work: string;

beforeAll(() => {
  work = tempDir('reproducible');
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm run build:verify', () => {
  it('builds the same bytes twice: the x64 binary, the .deb, the RPM, the image archive and every SBOM', async () => {
    const r = await runScript('build-verify.sh', ['--arch', 'x64', '--work', join(work, 'builds')], { DEB_COMPRESSION: 'gzip', RPM_COMPRESSION: 'w1.gzdio' }, 1_500_000);
    expect(r.exitCode, r.stderr).toBe(0);
    const identical = [...r.stderr.matchAll(/^ {2}[0-9a-f]{64} {2}(\S+)$/gm)].map((m) => m[1]).sort();
    const artifacts = ['wcf-agent-linux-x64', `wcf-agent_${PKG_VERSION}_amd64.deb`, `wcf-agent-${PKG_VERSION}-1.x86_64.rpm`, `wcf-agent-${VERSION}-image.tar`];
    expect(identical).toEqual(artifacts.flatMap((a) => [a, `${a}.cdx.json`]).sort());
    expect(r.stderr).toMatch(/^build-verify: 8 files identical in both builds of [0-9a-f]{12}:$/m);
  }, 1_500_000);

  it('--compare names the first file inside two differing packages, and says when two are the same bytes', async () => {
    // Two .debs and two RPMs that differ in the binary only (stand-ins: /bin/true and /bin/false).
    const packages: Record<'deb' | 'rpm', string[]> = { deb: [], rpm: [] };
    for (const [name, program] of [
      ['a', '/bin/true'],
      ['b', '/bin/false'],
    ] as const) {
      const dir = join(work, name);
      mkdirSync(dir);
      copyFileSync(program, join(dir, 'wcf-agent-linux-x64'));
      writeFileSync(join(dir, 'wcf-agent-linux-x64.cdx.json'), '{"comment":"stand-in"}\n');
      const deb = await runScript('build-deb.sh', ['--binary', join(dir, 'wcf-agent-linux-x64'), '--out', dir], { DEB_COMPRESSION: 'gzip' });
      expect(deb.exitCode, deb.stderr).toBe(0);
      const rpm = await runScript('build-rpm.sh', ['--arch', 'x86_64', '--binary', join(dir, 'wcf-agent-linux-x64'), '--out', dir], { RPM_COMPRESSION: 'w1.gzdio' });
      expect(rpm.exitCode, rpm.stderr).toBe(0);
      packages.deb.push(join(dir, `wcf-agent_${PKG_VERSION}_amd64.deb`));
      packages.rpm.push(join(dir, `wcf-agent-${PKG_VERSION}-1.x86_64.rpm`));
    }
    for (const [a, b] of Object.values(packages)) {
      const differ = await runScript('build-verify.sh', ['--compare', a!, b!]);
      expect(differ.exitCode, a).toBe(1);
      expect(differ.stderr).toMatch(/^build-verify: {3}first difference: (\.\/)?usr\/bin\/wcf-agent$/m);
      const same = await runScript('build-verify.sh', ['--compare', a!, a!]);
      expect(same.exitCode, same.stderr).toBe(0);
      expect(same.stderr).toContain(`the same bytes: ${(await run('sha256sum', [a!])).stdout.slice(0, 64)}`);
    }
  });
});
