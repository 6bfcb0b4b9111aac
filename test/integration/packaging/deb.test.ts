/**
 * scripts/build-deb.sh with a stand-in binary (a copy of /bin/true: a small real
 * ELF, so the dpkg-shlibdeps path runs too), then dpkg-deb inspection and a real
 * `dpkg --root` install / reinstall / remove / purge in a throwaway root. The
 * maintainer scripts run chrootless with DPKG_ROOT set, as on a host where
 * systemd is not PID 1: they must neither fail nor touch this host.
 */
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, VERSION, modeOf, octal, run, runScript, tempDir } from '../../helpers/packaging.js';
import { brokenLinksIn } from '../../helpers/doc-links.js';
import { COMPLETION_FILES } from '../../../src/cli/completion/index.js';
import { DOC_FILES } from './doc-files.js';

const DEB_VERSION = VERSION.replace('-', '~');
const STAND_IN_SBOM = '{"bomFormat":"CycloneDX","specVersion":"1.6","comment":"stand-in"}\n';
let work: string;
let deb: string;

beforeAll(async () => {
  work = tempDir('deb');
  const bin = join(work, 'wcf-agent-linux-x64');
  copyFileSync('/bin/true', bin);
  // The SBOM build-binary.sh writes beside a binary (a stand-in's: sbom.test.ts checks real ones).
  writeFileSync(`${bin}.cdx.json`, STAND_IN_SBOM);
  // No maintainer given: the package's default (the source's last commit author) is what is tested.
  const r = await runScript('build-deb.sh', ['--binary', bin, '--out', work], { DEB_MAINTAINER: '', DEBFULLNAME: '', DEBEMAIL: '' });
  expect(r.exitCode, r.stderr).toBe(0);
  deb = join(work, `wcf-agent_${DEB_VERSION}_amd64.deb`);
  expect(existsSync(deb), r.stderr).toBe(true);
}, 120_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

async function ok(file: string, args: string[]) {
  const r = await run(file, args, { cwd: work });
  expect(r.exitCode, `${file} ${args.join(' ')}\n${r.stderr}`).toBe(0);
  return r;
}

function field(name: string, control: string): string | undefined {
  return new RegExp(`^${name}: (.*)$`, 'm').exec(control)?.[1];
}

describe('build-deb.sh', () => {
  it('writes sane metadata (dpkg-deb -I)', async () => {
    const { stdout: info } = await ok('dpkg-deb', ['-I', deb]);
    const control = info
      .split('\n')
      .map((l) => l.replace(/^ /, ''))
      .join('\n');
    expect(field('Package', control)).toBe('wcf-agent');
    expect(field('Version', control)).toBe(DEB_VERSION);
    expect(field('Architecture', control)).toBe('amd64');
    expect(field('Section', control)).toBe('net');
    expect(field('Priority', control)).toBe('optional');
    expect(field('Recommends', control)).toBe('ipset');
    // A real person or team by default (who made the source), not a placeholder address.
    expect(field('Maintainer', control)).toBe((await run('git', ['-C', ROOT, 'log', '-1', '--format=%an <%ae>'])).stdout.trim());
    expect(field('Maintainer', control)).not.toMatch(/example\.org/);
    expect(Number(field('Installed-Size', control))).toBeGreaterThan(0);
    const depends = field('Depends', control)!;
    expect(depends).toMatch(/(^|, )iptables \| nftables(,|$)/);
    expect(depends).toMatch(/(^|, )libc6( \(>= [0-9.]+\))?(,|$)/);
    expect(field('Description', control)).toMatch(/firewall/);
    // The maintainer scripts and conffiles are in the control archive.
    for (const f of ['postinst', 'prerm', 'postrm', 'conffiles', 'md5sums']) expect(info).toMatch(new RegExp(`\\b${f}\\b`));
  });

  it('lists the files with the right modes, all root-owned (dpkg-deb -c)', async () => {
    const { stdout } = await ok('dpkg-deb', ['-c', deb]);
    const entries = new Map<string, { perms: string; owner: string }>();
    for (const line of stdout.trim().split('\n')) {
      const [perms, owner, , , , path] = line.split(/\s+/);
      entries.set(path!.replace(/^\.\//, '/'), { perms: perms!, owner: owner! });
    }
    const files = [...entries].filter(([, e]) => !e.perms.startsWith('d'));
    expect(Object.fromEntries(files.map(([p, e]) => [p, e.perms]))).toEqual({
      '/usr/bin/wcf-agent': '-rwxr-xr-x',
      '/lib/systemd/system/wcf-agent.service': '-rw-r--r--',
      '/usr/lib/tmpfiles.d/wcf-agent.conf': '-rw-r--r--',
      '/etc/wcf-agent/config.json': '-rw-------',
      ...Object.fromEntries(DOC_FILES.map((f) => [`/usr/share/doc/wcf-agent/${f}`, '-rw-r--r--'])),
      ...Object.fromEntries(Object.values(COMPLETION_FILES).map((f) => [`/${f}`, '-rw-r--r--'])),
      '/usr/share/doc/wcf-agent/copyright': '-rw-r--r--',
      '/usr/share/doc/wcf-agent/changelog.gz': '-rw-r--r--',
      '/usr/share/doc/wcf-agent/sbom.cdx.json': '-rw-r--r--',
      '/usr/share/lintian/overrides/wcf-agent': '-rw-r--r--',
      '/usr/share/man/man8/wcf-agent.8.gz': '-rw-r--r--',
      '/usr/share/man/man5/wcf-agent.json.5.gz': '-rw-r--r--',
    });
    for (const [path, e] of entries) expect(e.owner, path).toBe('root/root');
    expect(entries.get('/etc/wcf-agent/')?.perms).toBe('drwxr-xr-x');
  });

  it('ships both man pages, gzipped without name or time stamp (gzip -9n), dated by SOURCE_DATE_EPOCH, readable by man', async () => {
    const x = join(work, 'extracted-man');
    await ok('dpkg-deb', ['-x', deb, x]);
    // build-deb.sh's SOURCE_DATE_EPOCH: the caller's, else the last commit's time.
    const epoch = process.env.SOURCE_DATE_EPOCH || (await run('git', ['-C', ROOT, 'log', '-1', '--format=%ct'])).stdout.trim();
    const date = new Date(Number(epoch) * 1000).toISOString().slice(0, 10);
    for (const [page, header] of [
      ['usr/share/man/man8/wcf-agent.8.gz', /^WCF-AGENT\(8\) +System Administration +WCF-AGENT\(8\)$/m],
      ['usr/share/man/man5/wcf-agent.json.5.gz', /^WCF-AGENT\.JSON\(5\) +File Formats +WCF-AGENT\.JSON\(5\)$/m],
    ] as const) {
      const file = join(x, page);
      expect(readFileSync(file).subarray(3, 8)).toEqual(Buffer.from([0, 0, 0, 0, 0]));
      const r = await run('man', ['--warnings=w', '-l', file], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MANWIDTH: '80', MANPAGER: 'cat', LC_ALL: 'C.UTF-8' } });
      expect(r.stderr, page).toBe('');
      expect(r.stdout, page).toMatch(header);
      expect(r.stdout, page).toMatch(new RegExp(`^wcf-agent ${VERSION.replaceAll('.', '\\.')} +${date} +`, 'm'));
    }
  });

  it('ships the unit, the example config as the one conffile, and md5sums that match', async () => {
    const x = join(work, 'extracted');
    await ok('dpkg-deb', ['-R', deb, x]);
    expect(readFileSync(join(x, 'DEBIAN/conffiles'), 'utf8')).toBe('/etc/wcf-agent/config.json\n');
    expect(readFileSync(join(x, 'etc/wcf-agent/config.json'), 'utf8')).toBe(readFileSync(join(ROOT, 'config.json.example'), 'utf8'));
    expect(readFileSync(join(x, 'lib/systemd/system/wcf-agent.service'), 'utf8')).toBe(
      readFileSync(join(ROOT, 'systemd/wcf-agent.service'), 'utf8'),
    );
    expect(readFileSync(join(x, 'usr/share/doc/wcf-agent/copyright'), 'utf8')).toMatch(/License: Apache-2\.0/);
    for (const s of ['postinst', 'prerm', 'postrm']) {
      expect(octal(modeOf(join(x, 'DEBIAN', s))), s).toBe('0755');
      await ok('sh', ['-n', join(x, 'DEBIAN', s)]);
    }
    const sums = readFileSync(join(x, 'DEBIAN/md5sums'), 'utf8').trim().split('\n');
    // Every file but the conffile: binary, unit, tmpfiles, copyright, changelog, SBOM, lintian, 2 man pages, the docs, the completions.
    expect(sums.length).toBe(9 + DOC_FILES.length + Object.keys(COMPLETION_FILES).length);
    for (const line of sums) {
      const [sum, path] = line.split(/\s+/);
      expect(createHash('md5').update(readFileSync(join(x, path!))).digest('hex'), path).toBe(sum);
    }
  });
});

describe('what the package documents', () => {
  it('installs what README.md links to: every link of the installed pages resolves on the host', async () => {
    const x = join(work, 'extracted-docs');
    await ok('dpkg-deb', ['-x', deb, x]);
    const doc = join(x, 'usr/share/doc/wcf-agent');
    const pages = DOC_FILES.filter((f) => f.endsWith('.md'));
    expect(pages.length).toBeGreaterThan(5);
    expect(brokenLinksIn(pages, doc)).toEqual([]);
  });

  it('installs the binary’s SBOM where `wcf-agent version` looks for it, and leaves a copy beside the .deb', async () => {
    const x = join(work, 'extracted-sbom');
    await ok('dpkg-deb', ['-x', deb, x]);
    expect(readFileSync(join(x, 'usr/share/doc/wcf-agent/sbom.cdx.json'), 'utf8')).toBe(STAND_IN_SBOM);
    expect(readFileSync(`${deb}.cdx.json`, 'utf8')).toBe(STAND_IN_SBOM);
  });

  it('refuses a binary without its SBOM beside it, naming the file to make', async () => {
    const bin = join(work, 'no-sbom', 'wcf-agent-linux-x64');
    mkdirSync(join(work, 'no-sbom'));
    copyFileSync('/bin/true', bin);
    const r = await runScript('build-deb.sh', ['--binary', bin, '--out', join(work, 'no-sbom')], { DEB_COMPRESSION: 'gzip' });
    expect(r.exitCode).not.toBe(0);
    expect(r.stderr).toContain(`no SBOM ${bin}.cdx.json`);
    expect(readdirSync(join(work, 'no-sbom'))).toEqual(['wcf-agent-linux-x64']);
  });

  it('installs the shell completions the program writes, where each shell loads them', async () => {
    const x = join(work, 'extracted-completions');
    await ok('dpkg-deb', ['-x', deb, x]);
    for (const [shell, file] of Object.entries(COMPLETION_FILES)) {
      expect(readFileSync(join(x, file), 'utf8'), file).toBe((await run(process.execPath, [join(ROOT, 'dist/cli.js'), 'completion', shell])).stdout + '\n');
    }
  });

  it('postinst tells to check the config as the README does: check-config, doctor, plan', () => {
    const postinst = readFileSync(join(ROOT, 'packaging/deb/postinst'), 'utf8');
    expect(postinst).toMatch(/wcf-agent check-config && wcf-agent doctor && wcf-agent plan/);
    expect(postinst).not.toMatch(/echo "  wcf-agent plan --config/);
  });
});

describe('dpkg --root install, reinstall, remove, purge', () => {
  let root: string;

  function dpkg(...args: string[]) {
    return run('dpkg', [
      `--root=${root}`,
      '--force-script-chrootless',
      '--force-not-root',
      '--force-depends',
      '--force-confold',
      '--log=/dev/null',
      ...args,
    ]);
  }
  const at = (p: string) => join(root, p);
  const isLink = (p: string) => {
    try {
      return lstatSync(at(p)).isSymbolicLink();
    } catch {
      return false;
    }
  };

  beforeAll(() => {
    root = join(work, 'root');
    mkdirSync(join(root, 'var/lib/dpkg/updates'), { recursive: true });
    mkdirSync(join(root, 'var/lib/dpkg/info'), { recursive: true });
    writeFileSync(join(root, 'var/lib/dpkg/status'), '');
  });

  it('installs: files laid out, state dir 0700, unit enabled inside the root only', async () => {
    const r = await dpkg('-i', deb);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(octal(modeOf(at('usr/bin/wcf-agent')))).toBe('0755');
    expect(octal(modeOf(at('etc/wcf-agent/config.json')))).toBe('0600');
    expect(octal(modeOf(at('lib/systemd/system/wcf-agent.service')))).toBe('0644');
    expect(existsSync(at('usr/lib/tmpfiles.d/wcf-agent.conf'))).toBe(true);
    expect(existsSync(at('usr/share/doc/wcf-agent/README.md'))).toBe(true);
    expect(octal(modeOf(at('usr/share/man/man8/wcf-agent.8.gz')))).toBe('0644');
    expect(octal(modeOf(at('usr/share/man/man5/wcf-agent.json.5.gz')))).toBe('0644');
    expect(octal(modeOf(at('var/lib/wcf-agent')))).toBe('0700');
    const status = await run('dpkg-query', [`--admindir=${at('var/lib/dpkg')}`, '-W', '-f=${Status} ${Version}', 'wcf-agent']);
    expect(status.stdout).toBe(`install ok installed ${DEB_VERSION}`);
    // The enablement is made by deb-systemd-helper (init-system-helpers, on every Debian host):
    // without it this check must fail, not pass by checking nothing.
    expect((await run('sh', ['-c', 'command -v deb-systemd-helper'])).exitCode, 'deb-systemd-helper (init-system-helpers) is installed').toBe(0);
    const wants = 'etc/systemd/system/multi-user.target.wants/wcf-agent.service';
    expect(isLink(wants)).toBe(true);
    expect(readlinkSync(at(wants))).toBe('/lib/systemd/system/wcf-agent.service');
  });

  it('reinstalls (upgrade path: prerm upgrade, postinst configure <old>) keeping an edited config', async () => {
    const edited = '{ "agid": "agent-7" }\n';
    writeFileSync(at('etc/wcf-agent/config.json'), edited);
    writeFileSync(at('var/lib/wcf-agent/state.json'), '{}');
    const r = await dpkg('-i', deb);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(at('etc/wcf-agent/config.json'), 'utf8')).toBe(edited);
    expect(existsSync(at('var/lib/wcf-agent/state.json'))).toBe(true);
  });

  it('remove keeps config and state; purge removes them and the enablement', async () => {
    const removed = await dpkg('-r', 'wcf-agent');
    expect(removed.exitCode, removed.stderr).toBe(0);
    expect(existsSync(at('usr/bin/wcf-agent'))).toBe(false);
    expect(existsSync(at('lib/systemd/system/wcf-agent.service'))).toBe(false);
    expect(existsSync(at('etc/wcf-agent/config.json'))).toBe(true);
    expect(existsSync(at('var/lib/wcf-agent/state.json'))).toBe(true);

    const purged = await dpkg('-P', 'wcf-agent');
    expect(purged.exitCode, purged.stderr).toBe(0);
    expect(existsSync(at('etc/wcf-agent'))).toBe(false);
    expect(existsSync(at('var/lib/wcf-agent'))).toBe(false);
    expect(isLink('etc/systemd/system/multi-user.target.wants/wcf-agent.service')).toBe(false);
    expect(isLink('etc/systemd/system/wcf-agent.service')).toBe(false);
    const left = readdirSync(at('var/lib/dpkg/info')).filter((f) => f.startsWith('wcf-agent.'));
    expect(left).toEqual([]);
  });
});
