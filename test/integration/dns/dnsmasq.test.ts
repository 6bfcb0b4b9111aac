import { spawn } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseServersFile, renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig } from '../../helpers/cli.js';
import { isRoot } from '../../netns/netns.js';
import { dnsmasq } from './labs/dnsmasq.js';
import { createRealResolverLab, type RealResolverLab } from './labs/real-resolver.js';
import { describeResolver, RECORDS, seedUrls } from './labs/rpz-suite.js';

/** The dnsmasq backend on a real dnsmasq, configured from the snippets of docs/url-feed.md. */
describeResolver(dnsmasq, { fileName: 'servers.conf', holds: (text, name) => parseServersFile(text).includes(name) });

describe('dnsmasq: what is its own', () => {
  let sim: Simulator;
  let lab: RealResolverLab;
  let cfg: { path: string; dir: string };
  /** SIGHUPs dnsmasq took so far (it logs "cleared cache" for each, and once at its start). */
  const cleared = () => lab.output().split('cleared cache').length - 1;
  const config = (extra: Record<string, unknown> = {}) => writeConfig({ ...(JSON.parse(readFileSync(cfg.path, 'utf8')) as object), state_dir: join(cfg.dir, 'state'), ...extra }).path;
  const doctorCheck = async (path: string) => {
    const r = await runCli(['doctor', '--json', '--config', path]);
    return (JSON.parse(r.stdout) as { checks: { name: string; status: string; message: string }[] }).checks.find((c) => c.name === 'dnsmasq reads the file');
  };

  beforeAll(async () => {
    if (!isRoot) throw new Error('the resolver tests need root to create network namespaces');
    sim = await startSimulator({ indicators: 20, urls: 0, seed: 5, agentConfig: { score_threshold: '4' } });
    seedUrls(sim);
    lab = await createRealResolverLab(dnsmasq, { records: RECORDS, file: 'servers.conf' });
    cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'nftables', netns: lab.ns.name, retries: 0, connect_timeout_ms: 500, ...lab.agent });
  });

  afterAll(async () => {
    await lab?.destroy();
    await sim?.close();
  });

  it('flush creates the missing file, valid and empty, without signalling (dnsmasq may not run yet)', async () => {
    expect(existsSync(lab.file)).toBe(false);
    // A reload that would fail: flush succeeds only because it sends no signal.
    const r = await runCli(['flush', '--config', config({ dnsmasq_reload: lab.failingReload })]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(readFileSync(lab.file, 'utf8')).toBe(renderServersFile([]));
    await lab.stop();
    await lab.start();
    expect(await lab.answers('evil-site.example')).toEqual([RECORDS['evil-site.example']]);
  });

  it('signals dnsmasq when the names change, and only then (SIGHUP empties its whole cache)', async () => {
    const start = cleared();
    expect((await runCli(['sync', '--once', '--config', cfg.path])).exitCode).toBe(0);
    expect(await lab.status('www.evil-site.example')).toBe('NXDOMAIN');
    expect(cleared()).toBe(start + 1);
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(cleared()).toBe(start + 1);
  });

  it('the documented reload without systemd signals only a dnsmasq: another PID in the pid file is left alone and the reload fails (exit 4)', async () => {
    const pidFile = join(lab.dir, 'dnsmasq.pid');
    const real = readFileSync(pidFile, 'utf8');
    // A process that is no dnsmasq holds the PID the file names (a stale file, or one dnsmasq's user
    // wrote): SIGHUP would end it.
    const other = spawn('sleep', ['600'], { stdio: 'ignore' });
    const alive = () => other.exitCode === null && other.signalCode === null && !/^\S+ \(.*\) Z/.test(readFileSync(`/proc/${other.pid}/stat`, 'utf8'));
    try {
      writeFileSync(pidFile, `${other.pid}\n`);
      sim.upsertUrl('https://pid-file.example/x', { score: 9 });
      const r = await runCli(['sync', '--once', '--config', cfg.path]);
      expect(r.exitCode, r.stderr).toBe(4);
      expect(r.stderr).toContain('pkill');
      expect(alive()).toBe(true);
      expect(readFileSync(lab.file, 'utf8')).not.toContain('pid-file.example');
    } finally {
      writeFileSync(pidFile, real);
      other.kill('SIGKILL');
    }
    // The real dnsmasq's PID back: the same command signals it.
    const r = await runCli(['sync', '--once', '--config', cfg.path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await lab.status('pid-file.example')).toBe('NXDOMAIN');
  });

  it('doctor: the running dnsmasq reads the file; a dnsmasq_file it does not read fails', async () => {
    const ok = await doctorCheck(cfg.path);
    expect(ok?.status, ok?.message).toBe('ok');
    expect(ok?.message).toContain(lab.file);
    const elsewhere = join(cfg.dir, 'not-read.conf');
    const bad = await doctorCheck(config({ dnsmasq_file: elsewhere }));
    expect(bad?.status).toBe('fail');
    expect(bad?.message).toContain(`does not read ${elsewhere}`);
  });

  it('explain NAME shows the line dnsmasq has for the name; plan names the backend and its file', async () => {
    const e = await runCli(['explain', 'www.evil-site.example', '--config', cfg.path]);
    expect(e.exitCode, e.stderr).toBe(0);
    expect(e.stdout).toContain(`at the resolver: dnsmasq, server=/evil-site.example/ in ${lab.file}`);
    const p = await runCli(['plan', '--json', '--config', cfg.path]);
    expect(p.exitCode, p.stderr).toBe(0);
    expect((JSON.parse(p.stdout) as { dns: { plugin: string; files: string[] } }).dns).toMatchObject({ plugin: 'dnsmasq', files: [lab.file] });
  });

  it('a file at dnsmasq_file that the agent did not write is refused and left as it is (exit 4)', async () => {
    const foreign = join(cfg.dir, 'admin-servers.conf');
    writeFileSync(foreign, 'server=/corp.example/10.0.0.53\n');
    const r = await runCli(['sync', '--once', '--config', config({ dnsmasq_file: foreign })]);
    expect(r.exitCode).toBe(4);
    expect(r.stderr).toContain('not written by wcf-agent');
    expect(readFileSync(foreign, 'utf8')).toBe('server=/corp.example/10.0.0.53\n');
  });
});
