/**
 * scripts/build-rpm.sh (`npm run build:rpm`) with the real single binaries, both
 * architectures: the package's metadata, dependencies and scriptlets as rpm reads them
 * (`rpm -qp`), then real `rpm --root` installs, an upgrade and an erase in throwaway roots.
 *
 * The roots hold what the scriptlets run (sh, grep, stat and their libraries, copied from
 * this machine, and /dev/null), so the scriptlets run for real, chrooted by rpm as on any
 * host. They are installed with --nodeps: a root's RPM database is empty, and the
 * dependencies (glibc, nftables...) are not RPMs on this Debian machine to put in it.
 */
import { copyFileSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { versionLine } from '../../helpers/packaging.js';
import { ROOT, VERSION, modeOf, octal, run, runScript, tempDir } from '../../helpers/packaging.js';
import type { Shell } from '../../../src/cli/completion/index.js';
import { EM_AARCH64, EM_X86_64, arm64Sysroot, elfMachine, requireQemu, runArm64 } from '../../helpers/arm64.js';

const BUILD_TIMEOUT_MS = 600_000;
/**
 * Where each shell loads a completion on demand on RPM distributions: bash-completion's and
 * fish's directories are Debian's too, zsh's vendor functions are in site-functions there.
 */
const RPM_COMPLETION_FILES: Record<Shell, string> = {
  bash: '/usr/share/bash-completion/completions/wcf-agent',
  zsh: '/usr/share/zsh/site-functions/_wcf-agent',
  fish: '/usr/share/fish/vendor_completions.d/wcf-agent.fish',
};
const RPM_VERSION = VERSION.replace('-', '~');
let work: string;
const rpmFile = (arch: string, release = 1) => join(work, `wcf-agent-${RPM_VERSION}-${release}.${arch}.rpm`);

beforeAll(async () => {
  await requireQemu();
  work = tempDir('rpm');
  for (const [arch, nodeArch] of [['x86_64', 'x64'], ['aarch64', 'arm64']] as const) {
    const bin = join(work, `wcf-agent-linux-${nodeArch}`);
    const b = await runScript('build-binary.sh', ['--arch', nodeArch, '--out', bin, '--work', join(work, `sea-${nodeArch}`)], {}, BUILD_TIMEOUT_MS);
    expect(b.exitCode, b.stderr).toBe(0);
    const r = await runScript('build-rpm.sh', ['--arch', arch, '--binary', bin, '--out', work], { RPM_COMPRESSION: 'w1.gzdio' }, BUILD_TIMEOUT_MS);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(rpmFile(arch)), r.stderr).toBe(true);
  }
  // The same package one release later, for the upgrade.
  const r = await runScript('build-rpm.sh', ['--arch', 'x86_64', '--binary', join(work, 'wcf-agent-linux-x64'), '--release', '2', '--out', work], { RPM_COMPRESSION: 'w1.gzdio' });
  expect(r.exitCode, r.stderr).toBe(0);
}, BUILD_TIMEOUT_MS * 2);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

const query = async (rpm: string, ...args: string[]) => {
  const r = await run('rpm', ['-qp', ...args, rpm]);
  expect(r.exitCode, r.stderr).toBe(0);
  return r.stdout;
};

describe('build-rpm.sh', () => {
  it.each([
    ['x86_64', 'x86-64'],
    ['aarch64', 'aarch64'],
  ])('%s: named and labelled by name, version, release and architecture', async (arch) => {
    expect(await query(rpmFile(arch), '--qf', '%{NAME} %{VERSION} %{RELEASE} %{ARCH} %{LICENSE}')).toBe(`wcf-agent ${RPM_VERSION} 1 ${arch} Apache-2.0 AND MIT`);
  });

  it.each([
    ['x86_64', 'ld-linux-x86-64.so.2()(64bit)'],
    ['aarch64', 'ld-linux-aarch64.so.1()(64bit)'],
  ])('%s: requires nftables, or iptables with ipset (as RHEL 9 names them), and the libraries rpm read off the binary', async (arch, loader) => {
    const requires = (await query(rpmFile(arch), '--requires')).split('\n');
    expect(requires).toContain('(nftables or (iptables and ipset))');
    expect(requires).toEqual(expect.arrayContaining([loader, 'libc.so.6(GLIBC_2.28)(64bit)', 'libstdc++.so.6()(64bit)', 'libgcc_s.so.1()(64bit)']));
    // Nothing of the build host's architecture in the other one's package.
    expect(requires.filter((q) => /ld-linux/.test(q) && !q.startsWith(loader.slice(0, 12)))).toEqual([]);
    // No glibc newer than RHEL 8's (2.28).
    const glibc = requires.flatMap((q) => /^libc\.so\.6\(GLIBC_([0-9.]+)\)/.exec(q)?.[1] ?? []);
    expect(glibc.filter((v) => v.localeCompare('2.28', undefined, { numeric: true }) > 0)).toEqual([]);
  });

  it('lists its files with their modes, all root-owned; config.json is a %config(noreplace) file', async () => {
    const files = new Map<string, string>();
    for (const line of (await query(rpmFile('x86_64'), '-lv')).trim().split('\n')) {
      const [perms, , owner, group, , , , , path] = line.split(/\s+/);
      expect(`${owner}:${group}`, path).toBe('root:root');
      files.set(path!, perms!);
    }
    expect(Object.fromEntries(files)).toEqual({
      '/etc/wcf-agent': 'drwxr-xr-x',
      '/etc/wcf-agent/config.json': '-rw-------',
      '/usr/bin/wcf-agent': '-rwxr-xr-x',
      '/usr/lib/systemd/system/wcf-agent.service': '-rw-r--r--',
      '/usr/lib/tmpfiles.d/wcf-agent.conf': '-rw-r--r--',
      '/usr/share/doc/wcf-agent': 'drwxr-xr-x',
      '/usr/share/doc/wcf-agent/README.md': '-rw-r--r--',
      '/usr/share/doc/wcf-agent/sbom.cdx.json': '-rw-r--r--',
      '/usr/share/licenses/wcf-agent': 'drwxr-xr-x',
      '/usr/share/licenses/wcf-agent/NOTICE': '-rw-r--r--',
      '/usr/share/man/man5/wcf-agent.json.5.gz': '-rw-r--r--',
      '/usr/share/man/man8/wcf-agent.8.gz': '-rw-r--r--',
      ...Object.fromEntries(Object.values(RPM_COMPLETION_FILES).map((f) => [f, '-rw-r--r--'])),
      '/var/lib/wcf-agent': 'drwx------',
    });
    expect((await query(rpmFile('x86_64'), '--configfiles')).trim()).toBe('/etc/wcf-agent/config.json');
    expect(await query(rpmFile('x86_64'), '--qf', '[%{FILENAMES} %{FILEFLAGS:fflags}\n]')).toMatch(/^\/etc\/wcf-agent\/config\.json cn$/m);
  });

  it('has the .deb’s scriptlets, the RPM way (rpm -qp --scripts)', async () => {
    const scripts = await query(rpmFile('x86_64'), '--scripts');
    const part = (name: string) => {
      const m = new RegExp(`^${name} scriptlet \\(using /bin/sh\\):\\n([\\s\\S]*?)(?=^\\w+ scriptlet|$(?![\\s\\S]))`, 'm').exec(scripts);
      expect(m, `${name} scriptlet in:\n${scripts}`).not.toBeNull();
      return m![1]!;
    };
    const post = part('postinstall');
    const preun = part('preuninstall');
    const postun = part('postuninstall');
    // systemd is told where it runs; presets (not an enable) on a first install; never a start.
    expect(post).toMatch(/\[ -d \/run\/systemd\/system \]/);
    expect(post).toMatch(/systemctl daemon-reload/);
    expect(post).toMatch(/if \[ "\$1" -eq 1 \]; then\s+systemctl --no-reload preset wcf-agent\.service/);
    expect(post).toMatch(/systemd-tmpfiles --create wcf-agent\.conf/);
    const commands = scripts.split('\n').filter((l) => !/^\s*(echo|#)/.test(l));
    expect(commands.filter((l) => /systemctl (--\S+ )*(start|restart|enable)\b/.test(l))).toEqual([]);
    // On erase only: stop, disable, flush from the live system with a used config.
    expect(preun).toMatch(/if \[ "\$1" -eq 0 \]; then/);
    expect(preun).toMatch(/systemctl --no-reload disable --now wcf-agent\.service/);
    expect(preun).toMatch(/\/proc\/1\/root/);
    expect(preun).toMatch(/wcf-agent flush --config \/etc\/wcf-agent\/config\.json/);
    // After an upgrade, a running daemon restarts on the new binary.
    expect(postun).toMatch(/systemctl daemon-reload/);
    expect(postun).toMatch(/if \[ "\$1" -ge 1 \]; then\s+systemctl try-restart wcf-agent\.service/);
    for (const [name, text] of Object.entries({ post, preun, postun })) {
      const f = join(work, `${name}.sh`);
      writeFileSync(f, text);
      expect((await run('sh', ['-n', f])).exitCode, name).toBe(0);
    }
  });
});

/** A throwaway root with what the scriptlets run, and an empty RPM database. */
async function throwawayRoot(name: string): Promise<string> {
  const root = join(work, name);
  for (const program of ['/bin/sh', '/bin/grep', '/usr/bin/stat']) {
    const libs = (await run('ldd', [program])).stdout.match(/\/\S+/g) ?? [];
    for (const file of [program, ...libs]) {
      mkdirSync(dirname(join(root, file)), { recursive: true });
      copyFileSync(file, join(root, file));
    }
  }
  mkdirSync(join(root, 'dev'));
  expect((await run('mknod', ['-m', '666', join(root, 'dev/null'), 'c', '1', '3'])).exitCode).toBe(0);
  expect((await rpmIn(root, '--initdb')).exitCode).toBe(0);
  return root;
}

function rpmIn(root: string, ...args: string[]) {
  return run('rpm', ['--root', root, '--dbpath', '/var/lib/rpm', ...args]);
}

describe('rpm --root install, upgrade and erase', () => {
  let root: string;
  const at = (p: string) => join(root, p);

  beforeAll(async () => {
    root = await throwawayRoot('root-x86_64');
  });

  it('installs: the files in place, the post scriptlet says what to do and starts nothing; rpm -V finds nothing changed', async () => {
    const r = await rpmIn(root, '-i', '--nodeps', rpmFile('x86_64'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/wcf-agent: installed, NOT started: edit \/etc\/wcf-agent\/config\.json/);
    expect(r.stdout).toMatch(/then: systemctl enable --now wcf-agent/);
    expect(octal(modeOf(at('usr/bin/wcf-agent')))).toBe('0755');
    expect(octal(modeOf(at('etc/wcf-agent/config.json')))).toBe('0600');
    expect(octal(modeOf(at('var/lib/wcf-agent')))).toBe('0700');
    expect(existsSync(at('usr/lib/systemd/system/wcf-agent.service'))).toBe(true);
    expect(existsSync(at('etc/systemd'))).toBe(false); // no enablement outside presets
    expect(elfMachine(at('usr/bin/wcf-agent'))).toBe(EM_X86_64);
    const verify = await rpmIn(root, '-V', '--nodeps', 'wcf-agent');
    expect(verify.exitCode, verify.stdout).toBe(0);
    expect((await rpmIn(root, '-q', 'wcf-agent')).stdout.trim()).toBe(`wcf-agent-${RPM_VERSION}-1.x86_64`);
  });

  it('installs the binary’s SBOM, and a licence notice naming exactly the npm packages the SBOM lists', () => {
    const sbom = JSON.parse(readFileSync(at('usr/share/doc/wcf-agent/sbom.cdx.json'), 'utf8')) as { components: { name: string; group?: string; version: string; purl: string }[] };
    expect(readFileSync(`${rpmFile('x86_64')}.cdx.json`, 'utf8')).toBe(readFileSync(at('usr/share/doc/wcf-agent/sbom.cdx.json'), 'utf8'));
    const npm = sbom.components.filter((c) => c.purl.startsWith('pkg:npm/') && c.name !== 'node').map((c) => `${c.group ? `${c.group}/` : ''}${c.name} ${c.version}`);
    expect(npm.length).toBeGreaterThan(10);
    const listed = readFileSync(at('usr/share/licenses/wcf-agent/NOTICE'), 'utf8')
      .split('\n')
      .flatMap((l) => /^ (\S+ \S+): /.exec(l)?.[1] ?? []);
    expect(listed.sort()).toEqual(npm.sort());
  });

  it('installs the shell completions the program writes, where bash, zsh and fish load them on RPM distributions', async () => {
    for (const [shell, file] of Object.entries(RPM_COMPLETION_FILES)) {
      const program = await run(process.execPath, [join(ROOT, 'dist/cli.js'), 'completion', shell]);
      expect(program.exitCode, program.stderr).toBe(0);
      expect(readFileSync(at(file), 'utf8'), file).toBe(program.stdout + '\n');
    }
  });

  it('the installed binary answers --version, and check-config names the example’s placeholders until a real config is in place', async () => {
    const v = await run(at('usr/bin/wcf-agent'), ['--version'], { env: {} });
    expect(v.stdout.trim()).toMatch(versionLine(VERSION));
    const example = await run(at('usr/bin/wcf-agent'), ['check-config', '--config', at('etc/wcf-agent/config.json')], { env: {} });
    expect(example.exitCode).toBe(2);
    expect(example.stderr).toMatch(/agid: still the example's placeholder/);
    expect(example.stderr).toMatch(/token: still the example's placeholder/);
    writeFileSync(
      at('etc/wcf-agent/config.json'),
      JSON.stringify({ agid: 'web-1', base_url: 'https://intel.acme-corp.net/api/v1', token: 'a-real-token', plugin: 'dry-run', state_dir: at('var/lib/wcf-agent') }),
    );
    const real = await run(at('usr/bin/wcf-agent'), ['check-config', '--config', at('etc/wcf-agent/config.json')], { env: {} });
    expect(real.exitCode, real.stderr).toBe(0);
  });

  it('upgrades to the next release keeping the edited config and the state', async () => {
    const edited = readFileSync(at('etc/wcf-agent/config.json'), 'utf8');
    writeFileSync(at('var/lib/wcf-agent/state.json'), '{}');
    const r = await rpmIn(root, '-U', '--nodeps', rpmFile('x86_64', 2));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).not.toMatch(/NOT started/); // the first-install message only
    expect(readFileSync(at('etc/wcf-agent/config.json'), 'utf8')).toBe(edited);
    expect(existsSync(at('var/lib/wcf-agent/state.json'))).toBe(true);
    expect((await rpmIn(root, '-q', 'wcf-agent')).stdout.trim()).toBe(`wcf-agent-${RPM_VERSION}-2.x86_64`);
  });

  it('erase: the files go, the edited config is saved as .rpmsave, the state stays, and nothing is flushed from a chroot', async () => {
    const r = await rpmIn(root, '-e', 'wcf-agent');
    expect(r.exitCode, r.stderr).toBe(0);
    // The config is in use (no placeholders) and the binary is there: only the live-system
    // check keeps the scriptlet from flushing this machine's firewall from inside the root.
    expect(r.stdout + r.stderr).not.toMatch(/removing the agent's firewall objects|flush failed/);
    expect(existsSync(at('usr/bin/wcf-agent'))).toBe(false);
    expect(existsSync(at('usr/lib/systemd/system/wcf-agent.service'))).toBe(false);
    expect(existsSync(at('usr/share/doc/wcf-agent'))).toBe(false);
    expect(existsSync(at('etc/wcf-agent/config.json'))).toBe(false);
    expect(existsSync(at('etc/wcf-agent/config.json.rpmsave'))).toBe(true);
    expect(existsSync(at('var/lib/wcf-agent/state.json'))).toBe(true);
    expect((await rpmIn(root, '-q', 'wcf-agent')).exitCode).not.toBe(0);
  });

  it('aarch64: installs the same way, and its binary answers --version under qemu', async () => {
    const armRoot = await throwawayRoot('root-aarch64');
    const r = await rpmIn(armRoot, '-i', '--nodeps', '--ignorearch', rpmFile('aarch64'));
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/NOT started/);
    const bin = join(armRoot, 'usr/bin/wcf-agent');
    expect(elfMachine(bin)).toBe(EM_AARCH64);
    const sysroot = await arm64Sysroot();
    try {
      const v = await runArm64(sysroot, bin, ['--version']);
      expect(v.stdout.trim(), v.stderr).toMatch(versionLine(VERSION));
    } finally {
      rmSync(sysroot, { recursive: true, force: true });
    }
  });
});
