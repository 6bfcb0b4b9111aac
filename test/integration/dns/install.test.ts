/**
 * The resolver side of packaging: `install.sh --dns` (staged with DESTDIR, nothing on this
 * host touched) and the unit's write access, which must cover the DNS plugins' files and
 * nothing else of the resolver.
 */
import { chmodSync, existsSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { configSchema } from '../../../src/config/schema.js';
import { renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { renderRpzZone } from '../../../src/dns/render.js';
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
  it('the unit lets the agent write only its own resolver directories, and the default unbound and dnsmasq files lie in them', () => {
    expect(writable).toEqual(['/etc/unbound/wcf-agent', '/var/lib/wcf-agent-rpz', '/var/lib/wcf-agent-dnsmasq']);
    const defaults = configSchema.parse({ agid: 'a', base_url: 'https://x.example/api/v1', token: 't' });
    expect(dirname(defaults.unbound_conf_file)).toBe('/etc/unbound/wcf-agent');
    expect(dirname(defaults.dnsmasq_file)).toBe('/var/lib/wcf-agent-dnsmasq');
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

  it('install.sh --dns rpz creates only the rpz directory, with the empty zone the agent writes (kept on reinstall); a bad --dns value is refused', async () => {
    const dest = join(work, 'rpz');
    const r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'rpz'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    const zone = join(dest, 'var/lib/wcf-agent-rpz/rpz.wcf.zone');
    // Exactly what the agent writes for no names (serial 1): a valid zone, and the agent's own.
    expect(readFileSync(zone, 'utf8')).toBe(renderRpzZone([], { action: 'nxdomain' }, 1));
    expect(statSync(zone).mode & 0o777).toBe(0o644);
    writeFileSync(zone, renderRpzZone(['kept.example'], { action: 'nxdomain' }, 9));
    expect((await runScript('install.sh', ['--binary', fakeBin, '--dns', 'rpz'], { DESTDIR: dest })).exitCode).toBe(0);
    expect(readFileSync(zone, 'utf8')).toContain('kept.example');
    expect(existsSync(join(dest, 'etc/unbound'))).toBe(false);
    const bad = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'bind'], { DESTDIR: join(work, 'bad') });
    expect(bad.exitCode).not.toBe(0);
    expect(bad.stderr).toContain('--dns');
  });

  it('install.sh --dns dnsmasq creates the directory, the agent\'s empty servers-file and the hook naming it (kept on reinstall); --purge removes them', async () => {
    const dest = join(work, 'dnsmasq');
    let r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'dnsmasq'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(statSync(join(dest, 'var/lib/wcf-agent-dnsmasq')).mode & 0o777).toBe(0o755);
    const file = join(dest, 'var/lib/wcf-agent-dnsmasq/servers.conf');
    expect(readFileSync(file, 'utf8')).toBe(renderServersFile([]));
    const hook = join(dest, 'etc/dnsmasq.d/wcf-agent.conf');
    // The hook names the default dnsmasq_file, and lies in the conf-dir while the file does not.
    const defaults = configSchema.parse({ agid: 'a', base_url: 'https://x.example/api/v1', token: 't' });
    expect(readFileSync(hook, 'utf8')).toContain(`\nservers-file=${defaults.dnsmasq_file}\n`);
    expect(r.stdout).toContain('"dnsmasq_reload": ["systemctl", "kill", "-s", "HUP", "dnsmasq"]');
    writeFileSync(hook, '# wcf-agent: edited by the admin\nservers-file=/var/lib/wcf-agent-dnsmasq/servers.conf\n');
    writeFileSync(file, renderServersFile(['kept.example']));
    r = await runScript('install.sh', ['--binary', fakeBin, '--dns', 'dnsmasq'], { DESTDIR: dest });
    expect(readFileSync(hook, 'utf8')).toContain('edited by the admin');
    expect(readFileSync(file, 'utf8')).toBe(renderServersFile(['kept.example']));
    r = await runScript('install.sh', ['--purge'], { DESTDIR: dest });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(existsSync(join(dest, 'var/lib/wcf-agent-dnsmasq'))).toBe(false);
    expect(existsSync(hook)).toBe(false);
  });
});
