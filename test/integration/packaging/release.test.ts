/**
 * `npm run release` (scripts/release.sh) with keys made here and thrown away (no key is in the
 * repository), then the administrator's verification exactly as docs/deployment.md ("Verifying
 * a release") writes it: its shell blocks, command by command, without `sudo` and with the
 * example repository address replaced by this release's own `file:` one, as root in a sandbox
 * (./sandbox.ts) where apt, rpm and gpg write into a throwaway overlay of this machine's root.
 * A genuine release passes; each changed file fails at the command the docs say.
 *
 * The release is of x64 only (binary, .deb, RPM; gzip, not xz): the signing and checking are
 * the same for every artifact, and the image archive is one more line of SHA256SUMS.
 */
import { cpSync, mkdirSync, openSync, readFileSync, readSync, rmSync, writeFileSync, writeSync, closeSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, VERSION, run, runScript, tempDir } from '../../helpers/packaging.js';
import { runAsAdmin, type Step } from './sandbox.js';

const PKG_VERSION = VERSION.replace('-', '~');
const EXAMPLE_REPOSITORY = `https://downloads.example.net/wcf-agent/${VERSION}/apt`;
const RELEASE_DIR = `wcf-agent-${VERSION}`;
const BIN = 'wcf-agent-linux-x64';
const DEB = `wcf-agent_${PKG_VERSION}_amd64.deb`;
const RPM = `wcf-agent-${PKG_VERSION}-1.x86_64.rpm`;

/** The shell blocks of docs/deployment.md's "Verifying a release", by what they check. */
function verificationBlocks(): Record<'openpgp' | 'minisign' | 'rpm' | 'apt', string[]> {
  const page = readFileSync(join(ROOT, 'docs/deployment.md'), 'utf8');
  const start = page.indexOf('### Verifying a release');
  const section = page.slice(start, page.indexOf('\n##', start + 10));
  const blocks = [...section.matchAll(/^```sh\n([\s\S]*?)^```/gm)].map((m) =>
    m[1]!
      .split('\n')
      .filter((l) => l.trim() && !l.trim().startsWith('#'))
      .map((l) => l.replace(/^sudo /, '').replace(/\| sudo /, '| ')),
  );
  const find = (what: string) => {
    const b = blocks.find((lines) => lines.some((l) => l.includes(what)));
    expect(b, `a block with ${what} in docs/deployment.md, Verifying a release`).toBeDefined();
    return b!;
  };
  return { openpgp: find('gpgv '), minisign: find('minisign -V'), rpm: find('rpm --checksig'), apt: find('apt-get install') };
}

let work: string;
let gpgHome: string;
/** The parent of each release directory, where the docs' `cd wcf-agent-VERSION` starts. */
let signed: string;
let minisigned: string;
let fingerprint: string;
const blocks = verificationBlocks();

/** Runs a docs block in `parent` (the apt block with this release's repository). */
function admin(parent: string, lines: string[]): Promise<Step[]> {
  const repository = `file:${join(parent, RELEASE_DIR, 'apt')}`;
  return runAsAdmin(parent, lines.map((l) => l.replace(EXAMPLE_REPOSITORY, repository)));
}

/** Flips one byte of `file` in the middle (or at `offset`), runs `body`, then puts it back. */
async function tampered<T>(file: string, body: () => Promise<T>, offset?: number): Promise<T> {
  const fd = openSync(file, 'r+');
  try {
    const size = readFileSync(file).length;
    const at = offset ?? Math.floor(size / 2);
    const b = Buffer.alloc(1);
    readSync(fd, b, 0, 1, at);
    writeSync(fd, Buffer.from([b[0]! ^ 0xff]), 0, 1, at);
    try {
      return await body();
    } finally {
      writeSync(fd, b, 0, 1, at);
    }
  } finally {
    closeSync(fd);
  }
}

const last = (steps: Step[]) => steps.at(-1)!;

beforeAll(async () => {
  work = tempDir('release');
  gpgHome = join(work, 'gnupg');
  mkdirSync(gpgHome, { mode: 0o700 });
  signed = join(work, 'openpgp');
  minisigned = join(work, 'minisign');
  const dist = join(signed, RELEASE_DIR);
  mkdirSync(dist, { recursive: true });
  const gz = { DEB_COMPRESSION: 'gzip', RPM_COMPRESSION: 'w1.gzdio' };
  for (const [script, args] of [
    ['build-binary.sh', ['--out', join(dist, BIN), '--work', join(work, 'sea')]],
    ['build-deb.sh', ['--binary', join(dist, BIN), '--out', dist]],
    ['build-rpm.sh', ['--arch', 'x86_64', '--binary', join(dist, BIN), '--out', dist]],
  ] as const) {
    const r = await runScript(script, [...args], gz, 300_000);
    expect(r.exitCode, `${script}: ${r.stderr}`).toBe(0);
  }
  rmSync(join(work, 'sea'), { recursive: true });
  // The same artifacts, unsigned, for the minisign release (rpmsign rewrites the RPM).
  mkdirSync(join(minisigned, RELEASE_DIR), { recursive: true });
  cpSync(dist, join(minisigned, RELEASE_DIR), { recursive: true });

  // Throwaway keys: an OpenPGP one with a passphrase, a minisign one without.
  const gpg = (args: string[]) => run('gpg', ['--batch', '--homedir', gpgHome, ...args]);
  writeFileSync(join(work, 'passphrase'), 'correct horse battery staple\n');
  expect((await gpg(['--passphrase-file', join(work, 'passphrase'), '--pinentry-mode', 'loopback', '--quick-gen-key', 'wcf-agent release test <release-test@example.net>', 'rsa3072', 'sign', '1d'])).exitCode).toBe(0);
  fingerprint = (await gpg(['--with-colons', '--list-secret-keys'])).stdout.split('\n').find((l) => l.startsWith('fpr:'))!.split(':')[9]!;
  const exported = await gpg(['--passphrase-file', join(work, 'passphrase'), '--pinentry-mode', 'loopback', '--armor', '--export-secret-keys', fingerprint]);
  writeFileSync(join(work, 'release.key'), exported.stdout);
  await run('gpgconf', ['--homedir', gpgHome, '--kill', 'gpg-agent']);
  expect((await run('minisign', ['-G', '-W', '-p', join(work, 'minisign.pub'), '-s', join(work, 'minisign.key')])).exitCode).toBe(0);

  // The registry's advisory service does not answer here (docs/deployment.md, npm audit).
  const openpgp = await runScript('release.sh', ['--no-build', '--skip-audit', '--dist', dist, '--sign-key', join(work, 'release.key'), '--passphrase-file', join(work, 'passphrase')]);
  expect(openpgp.exitCode, openpgp.stderr).toBe(0);
  const minisign = await runScript('release.sh', ['--no-build', '--skip-audit', '--dist', join(minisigned, RELEASE_DIR), '--sign-key', join(work, 'minisign.key')]);
  expect(minisign.exitCode, minisign.stderr).toBe(0);
}, 600_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('npm run release', () => {
  it('writes SHA256SUMS over every artifact and SBOM, its signature, the public key and the signed apt repository', () => {
    const dist = join(signed, RELEASE_DIR);
    const sums = readFileSync(join(dist, 'SHA256SUMS'), 'utf8').trim().split('\n').map((l) => l.split(/\s+/)[1]);
    expect(sums).toEqual([RPM, `${RPM}.cdx.json`, BIN, `${BIN}.cdx.json`, DEB, `${DEB}.cdx.json`]);
    expect(readFileSync(join(dist, 'SHA256SUMS.asc'), 'utf8')).toMatch(/^-----BEGIN PGP SIGNATURE-----/);
    expect(readFileSync(join(dist, 'apt/InRelease'), 'utf8')).toMatch(/^-----BEGIN PGP SIGNED MESSAGE-----/);
    expect(readFileSync(join(dist, 'apt/Packages'), 'utf8')).toMatch(new RegExp(`^Filename: \\./${DEB.replace(/[.~]/g, '\\$&')}$`, 'm'));
    expect(readFileSync(join(minisigned, RELEASE_DIR, 'SHA256SUMS.minisig'), 'utf8')).toMatch(/^untrusted comment: /);
  });

  it('refuses a file that is no signing key, before building anything', async () => {
    writeFileSync(join(work, 'not-a-key'), 'hello\n');
    const r = await runScript('release.sh', ['--skip-audit', '--dist', join(work, 'nothing'), '--sign-key', join(work, 'not-a-key')]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toContain('is neither a minisign secret key nor an OpenPGP secret key');
  });
});

describe('the verification docs/deployment.md shows, on a genuine release', () => {
  it('OpenPGP: the key shows its fingerprint, gpgv finds a good signature, every file checks OK', async () => {
    const steps = await admin(signed, blocks.openpgp);
    expect(steps.map((s) => s.exitCode), JSON.stringify(steps, null, 1)).toEqual(blocks.openpgp.map(() => 0));
    expect(steps.find((s) => s.command.startsWith('gpg --show-keys'))!.output.replace(/\s/g, '')).toContain(fingerprint);
    expect(steps.find((s) => s.command.startsWith('gpgv'))!.output).toMatch(/Good signature from "wcf-agent release test/);
    const checked = last(steps).output.trim().split('\n').sort();
    expect(checked).toEqual([`${BIN}.cdx.json: OK`, `${BIN}: OK`, `${DEB}.cdx.json: OK`, `${DEB}: OK`, `${RPM}.cdx.json: OK`, `${RPM}: OK`].sort());
  });

  it('minisign: the signature verifies and every file checks OK', async () => {
    const steps = await admin(minisigned, blocks.minisign);
    expect(steps.map((s) => s.exitCode), JSON.stringify(steps, null, 1)).toEqual(blocks.minisign.map(() => 0));
    expect(steps.find((s) => s.command.startsWith('minisign'))!.output).toMatch(/Signature and comment signature verified/);
  });

  it('RPM: after the key is imported, rpm --checksig finds the digests and the signature OK', async () => {
    const steps = await admin(signed, blocks.rpm);
    expect(steps.map((s) => s.exitCode), JSON.stringify(steps, null, 1)).toEqual(blocks.rpm.map(() => 0));
    expect(last(steps).output.trim()).toBe(`${RPM}: digests signatures OK`);
  });

  it('apt: the repository is trusted, the package installs, and the installed binary names its SBOM', async () => {
    const steps = await admin(signed, blocks.apt);
    expect(steps.map((s) => s.exitCode), JSON.stringify(steps, null, 1)).toEqual(blocks.apt.map(() => 0));
    expect(steps.find((s) => s.command.includes('apt-get install'))!.output).toMatch(/Setting up wcf-agent \(/);
    const version = JSON.parse(last(steps).output) as { sbom: { path: string; matches: boolean; sha256: string } };
    expect(version.sbom).toMatchObject({ path: '/usr/share/doc/wcf-agent/sbom.cdx.json', matches: true });
  });
});

describe('a changed file fails the documented verification', () => {
  const dist = () => join(signed, RELEASE_DIR);

  it('a changed artifact: sha256sum says FAILED and exits non-zero', async () => {
    const steps = await tampered(join(dist(), BIN), () => admin(signed, blocks.openpgp));
    expect(last(steps).command).toMatch(/^sha256sum --check/);
    expect(last(steps).exitCode).not.toBe(0);
    expect(last(steps).output).toContain(`${BIN}: FAILED`);
  });

  it('a SHA256SUMS rewritten to match a changed artifact: gpgv refuses it, and nothing after runs', async () => {
    const sums = join(dist(), 'SHA256SUMS');
    const original = readFileSync(sums);
    try {
      writeFileSync(sums, original.toString().replace(/^[0-9a-f]{64}(?=  wcf-agent-linux-x64$)/m, '0'.repeat(64)));
      const steps = await admin(signed, blocks.openpgp);
      expect(last(steps).command).toMatch(/^gpgv /);
      expect(last(steps).exitCode).not.toBe(0);
      expect(last(steps).output).toMatch(/BAD signature/);
      expect(steps).toHaveLength(blocks.openpgp.findIndex((l) => l.startsWith('gpgv')) + 1);
    } finally {
      writeFileSync(sums, original);
    }
  });

  it('minisign: a rewritten SHA256SUMS fails minisign -V', async () => {
    const sums = join(minisigned, RELEASE_DIR, 'SHA256SUMS');
    const original = readFileSync(sums);
    try {
      writeFileSync(sums, original.toString().replace(/^[0-9a-f]{64}/, '0'.repeat(64)));
      const steps = await admin(minisigned, blocks.minisign);
      expect(last(steps).command).toMatch(/^minisign -V/);
      expect(last(steps).exitCode).not.toBe(0);
      expect(last(steps).output).toMatch(/Signature verification failed/);
    } finally {
      writeFileSync(sums, original);
    }
  });

  it('a changed RPM: rpm --checksig says NOT OK and exits non-zero', async () => {
    const steps = await tampered(join(dist(), RPM), () => admin(signed, blocks.rpm));
    expect(last(steps).command).toMatch(/^rpm --checksig/);
    expect(last(steps).exitCode).not.toBe(0);
    expect(last(steps).output).toMatch(/NOT OK/);
  });

  it('a changed .deb in the repository: apt-get install refuses it (hash mismatch) and installs nothing', async () => {
    const steps = await tampered(join(dist(), 'apt', DEB), () => admin(signed, blocks.apt));
    expect(last(steps).command).toMatch(/apt-get install/);
    expect(last(steps).exitCode).not.toBe(0);
    expect(last(steps).output).toMatch(/Hash Sum mismatch|hashes do not match/i);
    expect(last(steps).output).not.toMatch(/Setting up wcf-agent/);
  });

  it('a Packages index rewritten to name a changed .deb: apt-get update refuses the repository', async () => {
    const [packages, gz] = [join(dist(), 'apt', 'Packages'), join(dist(), 'apt', 'Packages.gz')];
    const original = [readFileSync(packages), readFileSync(gz)] as const;
    try {
      const rewritten = original[0].toString().replace(/^SHA256: [0-9a-f]{64}$/m, `SHA256: ${'0'.repeat(64)}`);
      writeFileSync(packages, rewritten);
      writeFileSync(gz, gzipSync(rewritten));
      const steps = await admin(signed, blocks.apt);
      expect(last(steps).command).toMatch(/apt-get update/);
      expect(last(steps).exitCode).not.toBe(0);
      expect(last(steps).output).toMatch(/Hash Sum mismatch|hashes do not match/i);
    } finally {
      writeFileSync(packages, original[0]);
      writeFileSync(gz, original[1]);
    }
  });
});
