/**
 * scripts/install.sh, always staged with DESTDIR into a temp dir (nothing on this
 * host is touched: no systemctl, no flush). A small fake binary stands in for the
 * single executable.
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT, modeOf, octal, run, runScript, tempDir } from '../../helpers/packaging.js';
import { brokenLinksIn } from '../../helpers/doc-links.js';
import { COMPLETION_FILES } from '../../../src/cli/completion/index.js';
import { DOC_FILES } from './doc-files.js';

let work: string;
let fakeBin: string;

beforeAll(() => {
  work = tempDir('install');
  fakeBin = join(work, 'fake-wcf-agent');
  writeFileSync(fakeBin, '#!/bin/sh\necho "fake wcf-agent $*"\n');
  chmodSync(fakeBin, 0o755);
});

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

function install(destdir: string, ...args: string[]) {
  return runScript('install.sh', args, { DESTDIR: destdir });
}

/** Every path under root (relative) with its mode, files with their content. */
function snapshot(root: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      const st = statSync(p);
      const key = relative(root, p);
      if (st.isDirectory()) {
        out[key + '/'] = octal(st.mode & 0o7777);
        walk(p);
      } else {
        out[key] = `${octal(st.mode & 0o7777)} ${readFileSync(p, 'utf8')}`;
      }
    }
  };
  walk(root);
  return out;
}

function files(root: string): string[] {
  return Object.keys(snapshot(root)).filter((k) => !k.endsWith('/'));
}

const example = readFileSync(join(ROOT, 'config.json.example'), 'utf8');
const unitSource = readFileSync(join(ROOT, 'systemd/wcf-agent.service'), 'utf8');

describe('install.sh (DESTDIR)', () => {
  it('lays out binary, config, unit, tmpfiles entry and state dir with the right modes', async () => {
    const dest = join(work, 'fresh');
    const r = await install(dest, '--binary', fakeBin);
    expect(r.exitCode, r.stderr).toBe(0);

    expect(readFileSync(join(dest, 'usr/bin/wcf-agent'), 'utf8')).toBe(readFileSync(fakeBin, 'utf8'));
    expect(octal(modeOf(join(dest, 'usr/bin/wcf-agent')))).toBe('0755');
    expect(readFileSync(join(dest, 'etc/wcf-agent/config.json'), 'utf8')).toBe(example);
    expect(octal(modeOf(join(dest, 'etc/wcf-agent/config.json')))).toBe('0600');
    expect(octal(modeOf(join(dest, 'etc/wcf-agent')))).toBe('0755');
    expect(readFileSync(join(dest, 'lib/systemd/system/wcf-agent.service'), 'utf8')).toBe(unitSource);
    expect(octal(modeOf(join(dest, 'lib/systemd/system/wcf-agent.service')))).toBe('0644');
    expect(octal(modeOf(join(dest, 'usr/lib/tmpfiles.d/wcf-agent.conf')))).toBe('0644');
    expect(octal(modeOf(join(dest, 'var/lib/wcf-agent')))).toBe('0700');
    expect(readdirSync(join(dest, 'var/lib/wcf-agent'))).toEqual([]);
    expect(files(dest).sort()).toEqual(
      [
        'etc/wcf-agent/config.json',
        'lib/systemd/system/wcf-agent.service',
        'usr/bin/wcf-agent',
        'usr/lib/tmpfiles.d/wcf-agent.conf',
        ...DOC_FILES.map((f) => `usr/share/doc/wcf-agent/${f}`),
        'usr/share/man/man5/wcf-agent.json.5.gz',
        'usr/share/man/man8/wcf-agent.8.gz',
        ...Object.values(COMPLETION_FILES),
      ].sort(),
    );
    expect(octal(modeOf(join(dest, 'usr/share/doc/wcf-agent/README.md')))).toBe('0644');
    for (const page of ['usr/share/man/man8/wcf-agent.8.gz', 'usr/share/man/man5/wcf-agent.json.5.gz']) {
      expect(octal(modeOf(join(dest, page))), page).toBe('0644');
    }

    // Next steps name what to edit and what to run (the README's three checks, in its order); nothing was started.
    expect(r.stdout).toMatch(/agid, base_url and token/);
    expect(r.stdout).toMatch(/\/usr\/bin\/wcf-agent check-config && \/usr\/bin\/wcf-agent doctor && \/usr\/bin\/wcf-agent plan/);
    expect(readFileSync(join(ROOT, 'README.md'), 'utf8')).toMatch(/wcf-agent check-config[^\n]*\n[^\n]*wcf-agent doctor[^\n]*\n[^\n]*wcf-agent plan/);
    expect(r.stdout).toMatch(/systemctl enable --now wcf-agent/);
    expect(r.stdout).toMatch(/nothing was reloaded or started/);
  });

  it('is idempotent and never overwrites an existing config', async () => {
    const dest = join(work, 'twice');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    const config = join(dest, 'etc/wcf-agent/config.json');
    const mine = example.replace('REPLACE-WITH-AGENT-ID', 'agent-42');
    writeFileSync(config, mine);
    const before = snapshot(dest);

    const r = await install(dest, '--binary', fakeBin);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/kept existing .*config\.json/);
    expect(snapshot(dest)).toEqual(before);
    expect(readFileSync(config, 'utf8')).toBe(mine);
  });

  it('upgrades the binary in place, still keeping the config', async () => {
    const dest = join(work, 'upgrade');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    writeFileSync(join(dest, 'etc/wcf-agent/config.json'), '{"agid":"mine"}');
    const v2 = join(work, 'fake-v2');
    writeFileSync(v2, '#!/bin/sh\necho v2\n');
    const r = await install(dest, '--binary', v2);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(join(dest, 'usr/bin/wcf-agent'), 'utf8')).toBe('#!/bin/sh\necho v2\n');
    expect(octal(modeOf(join(dest, 'usr/bin/wcf-agent')))).toBe('0755');
    expect(readFileSync(join(dest, 'etc/wcf-agent/config.json'), 'utf8')).toBe('{"agid":"mine"}');
    // No temp files left next to what was replaced.
    expect(readdirSync(join(dest, 'usr/bin'))).toEqual(['wcf-agent']);
  });

  it('--prefix puts the binary under it and points ExecStart at it', async () => {
    const dest = join(work, 'prefix');
    const r = await install(dest, '--binary', fakeBin, '--prefix', '/opt/wcf');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dest, 'opt/wcf/bin/wcf-agent'))).toBe(true);
    expect(existsSync(join(dest, 'usr/bin/wcf-agent'))).toBe(false);
    const unit = readFileSync(join(dest, 'lib/systemd/system/wcf-agent.service'), 'utf8');
    expect(unit).toMatch(/^ExecStart=\/opt\/wcf\/bin\/wcf-agent run --config \/etc\/wcf-agent\/config\.json$/m);
    expect(unit).not.toMatch(/\/usr\/bin\/wcf-agent/);
    // Only the binary path changed.
    expect(unit.replaceAll('/opt/wcf/bin/wcf-agent', '/usr/bin/wcf-agent')).toBe(unitSource);
    expect(r.stdout).toMatch(/\/opt\/wcf\/bin\/wcf-agent plan/);
  });

  it('--uninstall removes binary, unit and tmpfiles entry, keeps config and state, hints at flush', async () => {
    const dest = join(work, 'uninstall');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    writeFileSync(join(dest, 'etc/wcf-agent/config.json'), '{"agid":"keep-me"}');
    writeFileSync(join(dest, 'var/lib/wcf-agent/state.json'), '{}');

    const r = await install(dest, '--uninstall');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dest, 'usr/bin/wcf-agent'))).toBe(false);
    expect(existsSync(join(dest, 'lib/systemd/system/wcf-agent.service'))).toBe(false);
    expect(existsSync(join(dest, 'usr/lib/tmpfiles.d/wcf-agent.conf'))).toBe(false);
    expect(existsSync(join(dest, 'usr/share/doc/wcf-agent'))).toBe(false);
    expect(existsSync(join(dest, 'usr/share/man/man8/wcf-agent.8.gz'))).toBe(false);
    expect(existsSync(join(dest, 'usr/share/man/man5/wcf-agent.json.5.gz'))).toBe(false);
    expect(readFileSync(join(dest, 'etc/wcf-agent/config.json'), 'utf8')).toBe('{"agid":"keep-me"}');
    expect(existsSync(join(dest, 'var/lib/wcf-agent/state.json'))).toBe(true);
    expect(r.stdout).toMatch(/wcf-agent flush --config \/etc\/wcf-agent\/config\.json/);
    expect(r.stdout).toMatch(/--flush/);

    // Again: nothing left to remove, still fine.
    const again = await install(dest, '--uninstall');
    expect(again.exitCode, again.stderr).toBe(0);
  });

  it('--uninstall --flush under DESTDIR does not run flush against this host', async () => {
    const dest = join(work, 'flush');
    const marker = join(work, 'flush-ran');
    const spy = join(work, 'spy-wcf-agent');
    writeFileSync(spy, `#!/bin/sh\necho "$@" > ${marker}\n`);
    chmodSync(spy, 0o755);
    expect((await install(dest, '--binary', spy)).exitCode).toBe(0);
    const r = await install(dest, '--uninstall', '--flush');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/not flushing: DESTDIR/);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(dest, 'usr/bin/wcf-agent'))).toBe(false);
  });

  it('--purge removes config and state as well', async () => {
    const dest = join(work, 'purge');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    writeFileSync(join(dest, 'var/lib/wcf-agent/state.json'), '{}');
    writeFileSync(join(dest, 'etc/wcf-agent/token'), 'secret');
    const r = await install(dest, '--purge');
    expect(r.exitCode, r.stderr).toBe(0);
    expect(files(dest)).toEqual([]);
    expect(existsSync(join(dest, 'etc/wcf-agent'))).toBe(false);
    expect(existsSync(join(dest, 'var/lib/wcf-agent'))).toBe(false);
  });

  it('fails clearly on a missing binary or a bad argument, installing nothing', async () => {
    const dest = join(work, 'errors');
    mkdirSync(dest);
    const missing = await install(dest, '--binary', join(work, 'nope'));
    expect(missing.exitCode).not.toBe(0);
    expect(missing.stderr).toMatch(/not found/);
    const bad = await install(dest, '--frobnicate');
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toMatch(/unknown argument/);
    const rel = await install(dest, '--binary', fakeBin, '--prefix', 'usr');
    expect(rel.exitCode).not.toBe(0);
    expect(readdirSync(dest)).toEqual([]);
  });

  it('installs the man pages gzipped as Debian ships them, and man reads them', async () => {
    const dest = join(work, 'man');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    for (const [page, header] of [
      ['usr/share/man/man8/wcf-agent.8.gz', /^WCF-AGENT\(8\) +System Administration/m],
      ['usr/share/man/man5/wcf-agent.json.5.gz', /^WCF-AGENT\.JSON\(5\) +File Formats/m],
    ] as const) {
      const file = join(dest, page);
      // gzip -9n: no file name and no time stamp in the header, so the same page is the same bytes.
      expect((await run('gzip', ['-t', file])).exitCode, page).toBe(0);
      expect(readFileSync(file).subarray(3, 8)).toEqual(Buffer.from([0, 0, 0, 0, 0]));
      const r = await run('man', ['--warnings=w', '-l', file], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', MANWIDTH: '80', MANPAGER: 'cat', LC_ALL: 'C.UTF-8' } });
      expect(r.stderr, page).toBe('');
      expect(r.stdout, page).toMatch(header);
    }
  });

  it("every file the unit's Documentation= names is installed", async () => {
    const dest = join(work, 'docs');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    const unit = readFileSync(join(dest, 'lib/systemd/system/wcf-agent.service'), 'utf8');
    const docs = [...unit.matchAll(/^Documentation=(.*)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/));
    const files = docs.filter((d) => d.startsWith('file://')).map((d) => new URL(d).pathname);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(existsSync(join(dest, f)), `${f} (Documentation=) not installed`).toBe(true);
    const pages = docs.filter((d) => d.startsWith('man:')).map((d) => /^man:(.+)\((\d)\)$/.exec(d)!);
    expect(pages.length).toBe(2);
    for (const [ref, name, section] of pages) {
      expect(existsSync(join(dest, `usr/share/man/man${section}/${name}.${section}.gz`)), `${ref} (Documentation=) not installed`).toBe(true);
    }
    expect(readFileSync(join(dest, 'usr/share/doc/wcf-agent/README.md'), 'utf8')).toBe(readFileSync(join(ROOT, 'README.md'), 'utf8'));
  });

  it('installs what README.md links to: every link of the installed pages resolves on the host', async () => {
    const dest = join(work, 'doc-links');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    const doc = join(dest, 'usr/share/doc/wcf-agent');
    const pages = DOC_FILES.filter((f) => f.endsWith('.md'));
    expect(pages).toContain('docs/configuration.md');
    expect(brokenLinksIn(pages, doc)).toEqual([]);
  });

  it('installs the shell completions the program writes (wcf-agent completion SHELL)', async () => {
    const dest = join(work, 'completions');
    expect((await install(dest, '--binary', fakeBin)).exitCode).toBe(0);
    for (const [shell, file] of Object.entries(COMPLETION_FILES)) {
      expect(octal(modeOf(join(dest, file))), file).toBe('0644');
      expect(readFileSync(join(dest, file), 'utf8'), file).toBe((await run(process.execPath, [join(ROOT, 'dist/cli.js'), 'completion', shell])).stdout + '\n');
    }
  });
});

/**
 * `--uninstall --flush` on a live system really runs `wcf-agent flush` before
 * removing anything. The "live system" is this one seen through a private mount
 * namespace (unshare): /etc, /usr and /var are overlays whose writes land in a
 * tmpfs, and /run is an empty tmpfs (so no systemd is seen and systemctl is never
 * called). Nothing of this host is changed; the installed binary is a spy.
 */
describe('install.sh --uninstall --flush on the live system (private mount namespace)', () => {
  /** Run `steps` (bash) as root in a private mount namespace whose /etc, /usr, /var and /run are throwaway. */
  async function sandboxed(steps: string) {
    if (process.getuid?.() !== 0) throw new Error('this test needs root (unshare --mount)');
    const scratch = tempDir('sandbox');
    try {
      const script = [
        'set -euo pipefail',
        `mount -t tmpfs tmpfs ${scratch}`,
        'for d in etc usr var; do',
        `  mkdir -p ${scratch}/$d/upper ${scratch}/$d/work`,
        `  mount -t overlay overlay -o lowerdir=/$d,upperdir=${scratch}/$d/upper,workdir=${scratch}/$d/work /$d`,
        'done',
        'mount -t tmpfs tmpfs /run',
        steps,
      ].join('\n');
      return await run('unshare', ['--mount', '--propagation', 'private', 'bash', '-c', script]);
    } finally {
      rmSync(scratch, { recursive: true, force: true });
    }
  }

  const state = [
    'for f in /usr/bin/wcf-agent /lib/systemd/system/wcf-agent.service /usr/lib/tmpfiles.d/wcf-agent.conf /usr/share/doc/wcf-agent/README.md /usr/share/man/man8/wcf-agent.8.gz /etc/wcf-agent/config.json; do',
    '  if [ -e "$f" ]; then echo "present $f"; else echo "absent $f"; fi',
    'done',
  ].join('\n');

  /** The operator's edit of the installed example (the agent refuses the placeholders). */
  const edit = "sed -i 's/REPLACE-WITH-/edited-/g' /etc/wcf-agent/config.json";

  function spy(name: string, exitCode: number): { bin: string; calls: string } {
    const calls = join(work, `${name}.calls`);
    const bin = join(work, name);
    writeFileSync(bin, `#!/bin/sh\necho "$@" >> ${calls}\nexit ${exitCode}\n`);
    chmodSync(bin, 0o755);
    return { bin, calls };
  }

  it('runs the installed binary\'s flush with the installed config, then removes binary, unit, tmpfiles entry, README and man pages', async () => {
    const { bin, calls } = spy('spy-flush-ok', 0);
    const script = join(ROOT, 'scripts/install.sh');
    const hostBefore = ['/etc/wcf-agent', '/usr/bin/wcf-agent', '/usr/share/doc/wcf-agent'].map((p) => existsSync(p));
    const r = await sandboxed(`bash ${script} --binary ${bin} >/dev/null\n${edit}\nbash ${script} --uninstall --flush\n${state}`);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(calls, 'utf8')).toBe('flush --config /etc/wcf-agent/config.json\n');
    expect(r.stdout).toMatch(/removing the agent's firewall objects: \/usr\/bin\/wcf-agent flush --config \/etc\/wcf-agent\/config\.json/);
    for (const f of ['/usr/bin/wcf-agent', '/lib/systemd/system/wcf-agent.service', '/usr/lib/tmpfiles.d/wcf-agent.conf', '/usr/share/doc/wcf-agent/README.md', '/usr/share/man/man8/wcf-agent.8.gz']) {
      expect(r.stdout).toContain(`absent ${f}`);
    }
    expect(r.stdout).toContain('present /etc/wcf-agent/config.json');
    // The host itself never saw any of it.
    expect(['/etc/wcf-agent', '/usr/bin/wcf-agent', '/usr/share/doc/wcf-agent'].map((p) => existsSync(p))).toEqual(hostBefore);
  });

  it('a failing flush stops the uninstall: exit non-zero, everything still installed', async () => {
    const { bin, calls } = spy('spy-flush-fails', 1);
    const script = join(ROOT, 'scripts/install.sh');
    const r = await sandboxed(`bash ${script} --binary ${bin} >/dev/null\n${edit}\nrc=0; bash ${script} --uninstall --flush || rc=$?\necho "rc=$rc"\n${state}`);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(calls, 'utf8')).toBe('flush --config /etc/wcf-agent/config.json\n');
    expect(r.stdout).toMatch(/^rc=[1-9]/m);
    expect(r.stderr).toMatch(/flush failed .*nothing removed/);
    for (const f of ['/usr/bin/wcf-agent', '/lib/systemd/system/wcf-agent.service', '/usr/share/doc/wcf-agent/README.md', '/usr/share/man/man8/wcf-agent.8.gz', '/etc/wcf-agent/config.json']) {
      expect(r.stdout).toContain(`present ${f}`);
    }
  });

  it('an unedited config (placeholders): no flush is run, the uninstall goes on and says why', async () => {
    const { bin, calls } = spy('spy-flush-unedited', 1);
    const script = join(ROOT, 'scripts/install.sh');
    const r = await sandboxed(`bash ${script} --binary ${bin} >/dev/null\nbash ${script} --uninstall --flush\n${state}`);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(calls)).toBe(false);
    expect(r.stdout).toMatch(/not flushing: \/etc\/wcf-agent\/config\.json still holds the example's placeholders/);
    expect(r.stdout).toContain('absent /usr/bin/wcf-agent');
  });
});
