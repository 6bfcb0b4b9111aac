/**
 * CrowdSec's local API and firewall bouncer, from Debian's packages, run for the peer benchmark.
 *
 * The packages are NOT installed: crowdsec's postinst registers with CrowdSec's central API,
 * fails offline and leaves dpkg broken for every later install. `apt-get download` fetches the
 * two .deb files into a directory of the benchmark's own (.bench-cache/crowdsec, ignored by
 * git) and `dpkg -x` unpacks each there. Every run copies the package's etc/crowdsec into a
 * temp dir with its paths rewritten to that dir, no `online_client` (no central API), no
 * Prometheus listener, and runs everything inside one network namespace of its own: the
 * LAPI on that namespace's loopback, `cscli` against it, and the bouncer (nftables mode).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { execa } from 'execa';
import { join } from 'node:path';
import { onExit } from './netns.js';

const CACHE = join(import.meta.dirname, '../../.bench-cache/crowdsec');
const PACKAGES = ['crowdsec', 'crowdsec-firewall-bouncer'] as const;
/** The LAPI's address inside the run's own namespace (nothing else listens there). */
const LAPI = '127.0.0.1:18080';

export interface CrowdsecPackages {
  lapi: string;
  cscli: string;
  bouncer: string;
  /** The unpacked crowdsec package (etc/crowdsec, usr/lib/crowdsec/plugins). */
  root: string;
  bouncerRoot: string;
  versions: { crowdsec: string; bouncer: string };
}

/** The two packages, downloaded and unpacked once into the benchmark's cache. */
export function crowdsecPackages(): CrowdsecPackages {
  mkdirSync(CACHE, { recursive: true });
  const deb = (name: string) => readdirSync(CACHE).find((f) => f.startsWith(`${name}_`) && f.endsWith('.deb'));
  const missing = PACKAGES.filter((p) => !deb(p));
  if (missing.length) {
    try {
      execFileSync('apt-get', ['download', ...missing], { cwd: CACHE, stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (err) {
      throw new Error(`apt-get download ${missing.join(' ')} failed (run apt-get update first): ${String((err as { stderr?: Buffer }).stderr ?? err)}`);
    }
  }
  const unpack = (name: string): { dir: string; version: string } => {
    const file = deb(name)!;
    const dir = join(CACHE, name);
    if (!existsSync(join(dir, 'usr/bin'))) execFileSync('dpkg', ['-x', join(CACHE, file), dir]);
    return { dir, version: decodeURIComponent(file.split('_')[1]!) };
  };
  const cs = unpack('crowdsec');
  const fb = unpack('crowdsec-firewall-bouncer');
  return {
    lapi: join(cs.dir, 'usr/bin/crowdsec'),
    cscli: join(cs.dir, 'usr/bin/cscli'),
    bouncer: join(fb.dir, 'usr/bin/crowdsec-firewall-bouncer'),
    root: cs.dir,
    bouncerRoot: fb.dir,
    versions: { crowdsec: cs.version, bouncer: fb.version },
  };
}

/** The package's config.yaml with every path in `dir`, no central API, no metrics listener, logs on stdout. */
function lapiConfig(pkg: CrowdsecPackages, dir: string): string {
  const text = readFileSync(join(pkg.root, 'etc/crowdsec/config.yaml'), 'utf8')
    .replaceAll('/etc/crowdsec/', `${dir}/etc/`)
    .replaceAll('/var/lib/crowdsec/data/', `${dir}/data/`)
    .replaceAll('/var/lib/crowdsec/hub/', `${dir}/hub/`)
    .replaceAll('/usr/lib/crowdsec/plugins/', `${pkg.root}/usr/lib/crowdsec/plugins/`)
    .replaceAll('/var/log/', `${dir}/log/`)
    .replace('daemonize: true', 'daemonize: false')
    .replace('log_media: file', 'log_media: stdout')
    .replace(/listen_uri: \S+/, `listen_uri: ${LAPI}`)
    .replace(/prometheus:\n {2}enabled: true/, 'prometheus:\n  enabled: false')
    // online_client and its credentials_path line: without them the LAPI never calls the central API.
    .replace(/\n {4}online_client:.*\n {6}credentials_path:.*/, '');
  if (text.includes('online_client') || !text.includes(`${dir}/data/crowdsec.db`)) throw new Error('crowdsec config.yaml: unexpected layout, paths not rewritten');
  return text;
}

/** The bouncer's yaml: nftables, IPv4 only, this LAPI and key, logs on stdout, no metrics listener. */
function bouncerConfig(pkg: CrowdsecPackages, dir: string, apiKey: string): string {
  const text = readFileSync(join(pkg.bouncerRoot, 'etc/crowdsec/bouncers/crowdsec-firewall-bouncer.yaml'), 'utf8')
    .replace('${BACKEND}', 'nftables')
    .replace('${API_KEY}', apiKey)
    .replace(/api_url: \S+/, `api_url: http://${LAPI}/`)
    .replace('pid_dir: /var/run/', `pid_dir: ${dir}/`)
    .replace('log_dir: /var/log/', `log_dir: ${dir}/log/`)
    .replace('log_mode: file', 'log_mode: stdout')
    .replace('daemonize: true', 'daemonize: false')
    .replace('disable_ipv6: false', 'disable_ipv6: true')
    .replace(/prometheus:\n {2}enabled: true/, 'prometheus:\n  enabled: false');
  if (text.includes('${') || !text.includes('mode: nftables')) throw new Error('crowdsec-firewall-bouncer.yaml: unexpected layout');
  return text;
}

export interface CrowdsecRun {
  /** The bouncer process (its pid is the bouncer's own: `ip netns exec` execs it). */
  bouncer: ChildProcess;
  ns: string;
  close(): Promise<void>;
}

/** Asynchronous: the LAPI's log pipe must keep being read while cscli talks to it. */
async function netnsExec(ns: string, file: string, args: readonly string[]): Promise<string> {
  return (await execa('ip', ['netns', 'exec', ns, file, ...args])).stdout;
}

function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  child.kill('SIGTERM');
  return exited;
}

/**
 * LAPI up in a new namespace, a machine and a bouncer registered, `cidrs` imported as ban
 * decisions; then the bouncer is started (the caller times it from here).
 */
export async function startCrowdsec(pkg: CrowdsecPackages, cidrs: readonly string[], deadlineMs: number): Promise<CrowdsecRun> {
  const ns = `wcfpeer-cs-${process.pid}`;
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-crowdsec-'));
  execFileSync('ip', ['netns', 'add', ns]);
  const children: ChildProcess[] = [];
  const cleanup = () => {
    for (const c of children) c.kill('SIGKILL');
    execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
    rmSync(dir, { recursive: true, force: true });
  };
  const forget = onExit(cleanup);
  try {
    await netnsExec(ns, 'ip', ['link', 'set', 'lo', 'up']);
    cpSync(join(pkg.root, 'etc/crowdsec'), join(dir, 'etc'), { recursive: true });
    for (const d of ['data', 'hub', 'log']) mkdirSync(join(dir, d));
    const config = join(dir, 'etc/config.yaml');
    writeFileSync(config, lapiConfig(pkg, dir));

    const lapi = spawn('ip', ['netns', 'exec', ns, pkg.lapi, '-c', config, '-no-cs', '-no-capi'], { stdio: ['ignore', 'ignore', 'pipe'] });
    children.push(lapi);
    let lapiLog = '';
    // The LAPI logs this line once it listens; `decisions import` needs it up.
    const listening = new Promise<void>((resolve, reject) => {
      lapi.stderr!.on('data', (d: Buffer) => {
        lapiLog = (lapiLog + d.toString()).slice(-4000);
        if (lapiLog.includes('Local API listening on')) resolve();
      });
      lapi.once('exit', (code) => reject(new Error(`crowdsec LAPI exited ${code}: ${lapiLog}`)));
      setTimeout(() => reject(new Error(`crowdsec LAPI not listening after ${deadlineMs} ms: ${lapiLog}`)), deadlineMs).unref();
    });
    await listening;
    await netnsExec(ns, pkg.cscli, ['-c', config, 'machines', 'add', '--auto']);
    const apiKey = (await netnsExec(ns, pkg.cscli, ['-c', config, 'bouncers', 'add', 'wcf-bench', '-o', 'raw'])).trim();
    // Ranges stay ranges (scope range); the 0.0.25 bouncer's set has no interval flag and holds only their first address.
    const csv = join(dir, 'decisions.csv');
    const rows = cidrs.map((c) => `240h,${c.includes('/') ? 'range' : 'ip'},${c},wcf-bench,ban,wcf-bench`);
    writeFileSync(csv, `duration,scope,value,reason,type,origin\n${rows.join('\n')}\n`);
    await netnsExec(ns, pkg.cscli, ['-c', config, 'decisions', 'import', '-i', csv]);
    const bouncerYaml = join(dir, 'bouncer.yaml');
    writeFileSync(bouncerYaml, bouncerConfig(pkg, dir, apiKey));

    const bouncer = spawn('ip', ['netns', 'exec', ns, pkg.bouncer, '-c', bouncerYaml], { stdio: ['ignore', 'ignore', 'ignore'] });
    children.push(bouncer);
    return {
      bouncer,
      ns,
      async close() {
        await stopChild(bouncer);
        await stopChild(lapi);
        forget();
        cleanup();
      },
    };
  } catch (err) {
    forget();
    cleanup();
    throw err;
  }
}
