/**
 * What the truth and flood benchmarks share: a daemon started on a prepared state dir (an applied
 * set of N entries restored at start, no server needed) with its log lines timed, and the CPU and
 * event source of a running daemon.
 */
import { mkdtempSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa, type ResultPromise } from 'execa';
import { onExit } from '../netns.js';
import { benchNetns, CLI } from './common.js';

const NODE = process.execPath;

export const netns = () => benchNetns('wcfbt');

const dotted = (n: number) => `${n >>> 24}.${(n >>> 16) & 255}.${(n >>> 8) & 255}.${n & 255}`;
/** The i-th address and network of the prepared set (45.0.0.0/8 addresses, 46.0.0.0/8 and up /24 networks). */
export const host = (i: number) => dotted((45 << 24) + i);
export const network = (i: number) => `${dotted((46 << 24) + i * 256)}/24`;

/** A config and a state dir holding an applied set of `size` entries. */
export function prepare(size: number, ns: string, extra: Record<string, unknown> = {}): { config: string; hosts: number; nets: number } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-truth-'));
  mkdirSync(join(dir, 'state'), { mode: 0o700 });
  const now = Math.floor(Date.now() / 1000);
  const nets = Math.round(size * 0.15);
  const hosts = size - nets;
  const entries: Array<{ cidr: string; reason: string; expiresAt: number }> = [];
  for (let i = 0; i < hosts; i++) entries.push({ cidr: host(i), reason: 'score', expiresAt: now + 86_400 });
  for (let i = 0; i < nets; i++) entries.push({ cidr: network(i), reason: 'score', expiresAt: now + 86_400 });
  writeFileSync(join(dir, 'state', 'applied-nftables.json'), JSON.stringify({ ts: now, plugin: 'nftables', entries }));
  const config = {
    agid: 'bench', token: 'bench-token', base_url: 'http://127.0.0.1:9/api/v1', state_dir: join(dir, 'state'), plugin: 'nftables', netns: ns,
    retries: 0, jitter_seconds: 0, maximum_rules: Math.max(size, 1000), watch_interval_seconds: 5, log_format: 'json', ...extra,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config), { mode: 0o600 });
  return { config: join(dir, 'config.json'), hosts, nets };
}

export interface Line {
  at: number;
  rec: Record<string, unknown>;
}

export interface Daemon {
  child: ResultPromise;
  lines: Line[];
  next(re: RegExp, after: number, ms?: number): Promise<Line>;
  stop(): Promise<void>;
}

/** `cli`: another build of the agent (an older one, for a before/after in one run). */
export function startDaemon(configPath: string, env: Record<string, string> = {}, cli = CLI): Daemon {
  const child = execa(NODE, [cli, 'run', '--config', configPath], { reject: false, buffer: false, env: { WCF_AGENT_MINUTE_MS: '60000', WCF_LOG_LEVEL: 'debug', ...env } });
  onExit(() => child.kill('SIGKILL'));
  const lines: Line[] = [];
  let buf = '';
  let exited = false;
  void child.then(() => (exited = true));
  child.stderr!.on('data', (d: Buffer) => {
    buf += d.toString();
    let nl;
    while ((nl = buf.indexOf('\n')) !== -1) {
      const text = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      try {
        lines.push({ at: performance.now(), rec: JSON.parse(text) as Record<string, unknown> });
      } catch {
        // not a log line
      }
    }
  });
  return {
    child,
    lines,
    async next(re, after, ms = 600_000) {
      const deadline = Date.now() + ms;
      for (;;) {
        const hit = lines.find((l) => l.at >= after && re.test(String(l.rec.msg)));
        if (hit) return hit;
        if (exited || Date.now() > deadline) throw new Error(`timed out waiting for ${re}:\n${lines.slice(-10).map((l) => JSON.stringify(l.rec).slice(0, 300)).join('\n')}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async stop() {
      child.kill('SIGTERM');
      await child;
    },
  };
}

/** CPU seconds of `pid` and its waited-for children so far (utime + stime + cutime + cstime). */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
}

/** The daemon's event source child (xtables-monitor or nft monitor), by its parent. */
export async function monitorPid(parent: number): Promise<number> {
  const { stdout } = await execa('pgrep', ['-P', String(parent), '-f', 'xtables-monitor -e|nft monitor'], { reject: false });
  const pid = Number(stdout.split('\n')[0]);
  if (!pid) throw new Error('no event source running');
  return pid;
}

