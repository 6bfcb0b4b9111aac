/**
 * The resolver side of packaging: `install.sh --dns` (staged with DESTDIR, nothing on this
 * host touched) and the unit's write access, which must cover the DNS plugins' files and
 * nothing else of the resolver.
 */
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.js';
import { ROOT, runScript, tempDir } from '../../helpers/packaging.js';

let work: string;
let fakeBin: string;
beforeAll(() => {
  work = tempDir('install-dns');
  fakeBin = join(work, 'fake-wcf-agent');
  writeFileSync(fakeBin, '#!/bin/sh\n');
  chmodSync(fakeBin, 0o755);
});
afterAll(() => rmSync(work, { recursive: true, force: true }));

const unit = readFileSync(join(ROOT, 'systemd/wcf-agent.service'), 'utf8');
const writable = [...unit.matchAll(/^ReadWritePaths=(.*)$/gm)].flatMap((m) => m[1]!.trim().split(/\s+/)).map((p) => p.replace(/^-/, ''));

describe('resolver files and the unit', () => {
  it('the unit lets the agent write only its own resolver directories, and the default unbound file lies in one', () => {
    expect(writable).toEqual(['/etc/unbound/wcf-agent', '/var/lib/wcf-agent-rpz']);
    const defaults = configSchema.parse({ agid: 'a', base_url: 'https://x.example/api/v1', token: 't' });
    expect(dirname(defaults.unbound_conf_file)).toBe('/etc/unbound/wcf-agent');
    expect(unit).not.toMatch(/ReadWritePaths=.*\/etc\/unbound(\s|$)/);
  });

  it('install.sh --dns unbound creates the directory and the include hook (kept on reinstall); --purge removes them', async () => {
    const dest = join(work, 'unbound');
    let r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'unbound'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(statSync(join(dest, 'etc/unbound/wcf-agent')).mode & 0o777).toBe(0o755);
    const hook = join(dest, 'etc/unbound/unbound.conf.d/wcf-agent.conf');
    expect(readFileSync(hook, 'utf8')).toContain('include: "/etc/unbound/wcf-agent/*.conf"');
    writeFileSync(hook, '# wcf-agent: edited by the admin\ninclude: "/etc/unbound/wcf-agent/*.conf"\n');
    r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'unbound'], { DESTDIR: dest });
    expect(readFileSync(hook, 'utf8')).toContain('edited by the admin');
    r = await runScript('install.sh', ['--purge'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dest, 'etc/unbound/wcf-agent'))).toBe(false);
    expect(existsSync(hook)).toBe(false);
  });

  it('install.sh --dns rpz creates only the rpz directory; a bad --dns value is refused', async () => {
    const dest = join(work, 'rpz');
    const r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'rpz'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dest, 'var/lib/wcf-agent-rpz'))).toBe(true);
    expect(existsSync(join(dest, 'etc/unbound'))).toBe(false);
    const bad = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'bind'], { DESTDIR: join(work, 'bad') });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('--dns');
  });
});
