import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { confDirFiles, confLines, dnsmasqFilesOf, readCommandLine } from '../../../src/dns/dnsmasq/running.js';
import { dnsmasqReadsCheck, dnsmasqReloadCheck, pidFileReloadUnchecked } from '../../../src/cli/doctor/dnsmasq-check.js';
import { parseConfig } from '../../../src/config/load.js';

/** A file system of configuration files for dnsmasqFilesOf. */
function fs(files: Record<string, string>) {
  return {
    read: (p: string) => files[p],
    list: (d: string) => {
      const names = Object.keys(files).filter((p) => p.startsWith(`${d}/`)).map((p) => p.slice(d.length + 1));
      if (names.length === 0) throw new Error('ENOENT');
      return names;
    },
  };
}

describe('which servers-file a dnsmasq reads', () => {
  it('reads the options of a command line in every spelling getopt takes', () => {
    expect(readCommandLine(['dnsmasq', '--servers-file=/a', '--servers-file', '/b', '-C', '/c.conf', '-C/d.conf', '-7', '/e,.bak', '-7/f', '--conf-dir=/g', '-x', '/run/d.pid'])).toEqual({
      servers: ['/a', '/b'],
      confFiles: ['/c.conf', '/d.conf'],
      confDirs: ['/e,.bak', '/f', '/g'],
      namedConf: true,
    });
    // `--conf-file` without a value is the default file.
    expect(readCommandLine(['dnsmasq', '--conf-file']).confFiles).toEqual(['/etc/dnsmasq.conf']);
    expect(readCommandLine(['dnsmasq', '-k']).namedConf).toBe(false);
  });

  it('configuration lines: comments skipped, a # inside a value kept, quotes removed', () => {
    expect(confLines('# servers-file=/no\n  servers-file = "/x y" # the agent\nserver=10.0.0.1#5353\nbogus\n')).toEqual([
      { key: 'servers-file', value: '/x y' },
      { key: 'server', value: '10.0.0.1#5353' },
    ]);
  });

  it('a conf-dir as dnsmasq reads it: hidden, backup and #...# files skipped; extensions excluded, or only *.ext', () => {
    const list = () => ['b.conf', 'a.conf', '.hidden', 'x~', '#tmp#', 'c.dpkg-old', 'readme'];
    expect(confDirFiles('/etc/dnsmasq.d,.dpkg-dist,.dpkg-old', list)).toEqual(['/etc/dnsmasq.d/a.conf', '/etc/dnsmasq.d/b.conf', '/etc/dnsmasq.d/readme']);
    expect(confDirFiles('/etc/dnsmasq.d,*.conf', list)).toEqual(['/etc/dnsmasq.d/a.conf', '/etc/dnsmasq.d/b.conf']);
    expect(confDirFiles('/missing', () => { throw new Error('ENOENT'); })).toEqual([]);
  });

  it("Debian's dnsmasq (no -C: /etc/dnsmasq.conf, and -7 /etc/dnsmasq.d): the hook install.sh writes is found", () => {
    const f = fs({
      '/etc/dnsmasq.conf': '#conf-dir=/etc/dnsmasq.d/,*.conf\n',
      '/etc/dnsmasq.d/wcf-agent.conf': '# wcf-agent\nservers-file=/var/lib/wcf-agent-dnsmasq/servers.conf\n',
      '/etc/dnsmasq.d/wcf-agent.conf.dpkg-old': 'servers-file=/old\n',
    });
    const argv = ['/usr/sbin/dnsmasq', '-x', '/run/dnsmasq/dnsmasq.pid', '-u', 'dnsmasq', '-7', '/etc/dnsmasq.d,.dpkg-dist,.dpkg-old,.dpkg-new', '--local-service'];
    expect(dnsmasqFilesOf(argv, f.read, f.list)).toEqual({ serversFiles: ['/var/lib/wcf-agent-dnsmasq/servers.conf'], confFiles: ['/etc/dnsmasq.conf', '/etc/dnsmasq.d/wcf-agent.conf'] });
  });

  it("NetworkManager's dnsmasq (--conf-file=/dev/null, --conf-dir): the default file is not read; nested conf-file lines are followed, a loop once", () => {
    const f = fs({
      '/etc/dnsmasq.conf': 'servers-file=/not-read\n',
      '/etc/NetworkManager/dnsmasq.d/wcf.conf': 'conf-file=/etc/wcf-more.conf\n',
      '/etc/wcf-more.conf': 'servers-file=/srv/servers.conf\nconf-file=/etc/wcf-more.conf\n',
    });
    const argv = ['/usr/sbin/dnsmasq', '--no-resolv', '--conf-file=/dev/null', '--conf-dir=/etc/NetworkManager/dnsmasq.d'];
    expect(dnsmasqFilesOf(argv, f.read, f.list).serversFiles).toEqual(['/srv/servers.conf']);
  });

  it('paths compare with their links resolved', () => {
    const d = mkdtempSync(join(tmpdir(), 'wcf-dnsmasq-paths-'));
    writeFileSync(join(d, 'real.conf'), '');
    symlinkSync(join(d, 'real.conf'), join(d, 'link.conf'));
    try {
      expect(dnsmasqFilesOf(['dnsmasq', `--servers-file=${d}/link.conf`, '-C', '/dev/null']).serversFiles).toEqual([join(d, 'real.conf')]);
    } finally {
      rmSync(d, { recursive: true, force: true });
    }
  });
});

describe("doctor's dnsmasq check", () => {
  const config = parseConfig(JSON.stringify({ agid: 'a', base_url: 'https://threat-intel.internal/api/v1', token: 't', url_feed: true, dns_plugin: 'dnsmasq', dnsmasq_reload: ['true'], dnsmasq_file: '/var/lib/wcf-agent-dnsmasq/servers.conf' }), '/etc/wcf-agent/config.json');
  const FILE = '/var/lib/wcf-agent-dnsmasq/servers.conf';

  it('ok when a running dnsmasq reads the file; fail when none runs, or none reads it (naming what it reads)', () => {
    expect(dnsmasqReadsCheck(config, [{ pid: 7, serversFiles: ['/x', FILE], confFiles: [] }])).toMatchObject({ status: 'ok', message: expect.stringContaining('pid 7') });
    expect(dnsmasqReadsCheck(config, [])).toMatchObject({ status: 'fail', message: expect.stringContaining('no dnsmasq process') });
    const other = dnsmasqReadsCheck(config, [{ pid: 8, serversFiles: ['/etc/other.conf'], confFiles: [] }]);
    expect(other).toMatchObject({ status: 'fail', message: expect.stringContaining('its servers-file is /etc/other.conf') });
    expect(other.hint).toContain(`servers-file=${FILE}`);
  });

  it('warns when dnsmasq also reads the file as configuration (in its conf-dir): those lines stay until a restart', () => {
    expect(dnsmasqReadsCheck(config, [{ pid: 9, serversFiles: [FILE], confFiles: [FILE] }])).toMatchObject({ status: 'warn', message: expect.stringContaining('configuration file too') });
  });
});

describe("doctor's check of a dnsmasq_reload that signals a pid file's process", () => {
  const unchecked = [
    ['pkill', '-HUP', '-F', '/run/dnsmasq/dnsmasq.pid'],
    ['/usr/bin/pkill', '-HUP', '--pidfile=/run/dnsmasq/dnsmasq.pid'],
    ['pkill', '-HUP', '-F', '/run/dnsmasq/dnsmasq.pid', 'dnsmasq'],
    ['pkill', '-HUP', '-x', '-F', '/run/dnsmasq/dnsmasq.pid'],
    ['pkill', '-HUP', '-x', '-F', '/run/dnsmasq/dnsmasq.pid', '-u', 'dnsmasq'],
  ];
  const checked = [
    ['pkill', '-HUP', '-x', '-F', '/run/dnsmasq/dnsmasq.pid', 'dnsmasq'],
    ['pkill', '--signal', 'HUP', '--exact', '-F/run/dnsmasq/dnsmasq.pid', 'pihole-FTL'],
    ['pkill', '-HUP', '-x', 'dnsmasq'],
    ['systemctl', 'kill', '-s', 'HUP', 'dnsmasq'],
  ];
  const config = (reload: string[]) =>
    parseConfig(JSON.stringify({ agid: 'a', base_url: 'https://ti.vendor.lan/api/v1', token: 't', url_feed: true, dns_plugin: 'dnsmasq', dnsmasq_reload: reload }), '/etc/wcf-agent/config.json');

  it.each(unchecked)('warns about %s ... (no exact process name): it would signal whatever PID the file holds', (...argv) => {
    expect(pidFileReloadUnchecked(argv)).toBe(true);
    expect(dnsmasqReloadCheck(config(argv))).toMatchObject({ status: 'warn', name: 'dnsmasq_reload', hint: expect.stringContaining('"-x"') });
  });

  it.each(checked)('no warning for %s ...', (...argv) => {
    expect(pidFileReloadUnchecked(argv)).toBe(false);
    expect(dnsmasqReloadCheck(config(argv))).toBeUndefined();
  });
});
