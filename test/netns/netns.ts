import { execa, execaSync, type ResultPromise } from 'execa';
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { createRunner } from '../../src/firewall/exec.js';
import type { CommandRunner } from '../../src/exec/runner.js';

/**
 * Network namespaces for tests on real netfilter. Every namespace is named
 * `wcft-<pid>-<n>` and is deleted by `destroyAll()` (call it in afterAll) and,
 * as a last resort, when the process exits. Nothing here touches the root
 * namespace's ruleset: every firewall command runs through `ip netns exec`.
 */

export const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

let counter = 0;
const live = new Set<Netns>();

process.once('exit', () => {
  // Synchronous last resort (an afterAll that never ran, a crash).
  for (const ns of live) {
    for (const child of ns.children) child.kill('SIGKILL');
    try {
      execaSync('ip', ['netns', 'del', ns.name], { reject: false });
    } catch {
      // nothing more we can do
    }
  }
});

export class Netns {
  readonly children = new Set<ResultPromise>();
  private constructor(readonly name: string) {}

  static async create(): Promise<Netns> {
    // Fail loudly, never skip: a green run must mean the netfilter tests ran.
    if (!isRoot) throw new Error('the netfilter tests need root (CAP_NET_ADMIN) to create network namespaces; run npm test as root');
    const name = `wcft-${process.pid}-${++counter}`;
    await execa('ip', ['netns', 'add', name]);
    const ns = new Netns(name);
    live.add(ns);
    await ns.exec('ip', ['link', 'set', 'lo', 'up']);
    return ns;
  }

  /** Run a command inside the namespace; rejects on failure. */
  async exec(file: string, args: readonly string[], input?: string): Promise<string> {
    const r = await execa('ip', ['netns', 'exec', this.name, file, ...args], { input: input ?? '', env: { LC_ALL: 'C' } });
    return r.stdout;
  }

  /** The runner the plugins use in tests: every command prefixed with `ip netns exec NS`. */
  runner(): CommandRunner {
    return createRunner(['ip', 'netns', 'exec', this.name]);
  }

  /** Start a long-running process inside the namespace (killed by destroy()). */
  spawn(file: string, args: readonly string[]): ResultPromise {
    const child = execa('ip', ['netns', 'exec', this.name, file, ...args], { reject: false, stdin: 'ignore' });
    this.children.add(child);
    void child.finally(() => this.children.delete(child));
    return child;
  }

  async destroy(): Promise<void> {
    for (const child of this.children) {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
    }
    this.children.clear();
    await execa('ip', ['netns', 'del', this.name], { reject: false });
    live.delete(this);
  }
}

export async function destroyAll(): Promise<void> {
  for (const ns of [...live]) await ns.destroy();
}

/** Addresses (198.18.0.0/15, the benchmarking range: never routed on the machine's own networks). */
export const ADDR = {
  host: '198.18.0.1',
  /** A single address to block. */
  blocked: '198.18.1.10',
  /** An address nobody blocks. */
  allowed: '198.18.1.11',
  /** Inside NET24. */
  inNet: '198.18.2.5',
  net24: '198.18.2.0/24',
  /** Another allowed address, in a different /24. */
  other: '198.18.3.7',
} as const;
export const PEER_ADDRS = [ADDR.blocked, ADDR.allowed, ADDR.inNet, ADDR.other];

export interface Lab {
  readonly host: Netns;
  readonly peer: Netns;
  readonly port: number;
  /** TCP connect from `source` (a peer address) to the host's server: did it connect within `timeoutMs`? */
  connect(source: string, timeoutMs?: number): Promise<'connected' | 'timeout' | string>;
  destroy(): Promise<void>;
}

const SERVER = `
const net = require('node:net');
const srv = net.createServer((s) => { s.on('error', () => {}); s.end('ok'); });
srv.listen(Number(process.argv[1]), '0.0.0.0', () => console.log('ready'));
`;

const CLIENT = `
const net = require('node:net');
const [host, port, localAddress, ms] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port), localAddress });
const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, Number(ms));
s.on('connect', () => { clearTimeout(t); console.log('connected'); s.destroy(); process.exit(0); });
s.on('error', (e) => { clearTimeout(t); console.log('error:' + e.code); process.exit(0); });
`;

/**
 * Two namespaces joined by a veth pair: "host" (198.18.0.1/16, runs a TCP
 * server) and "peer" (several addresses, so one source can be blocked while
 * another is allowed).
 */
export async function createLab(port = 8080): Promise<Lab> {
  const host = await Netns.create();
  const peer = await Netns.create();
  try {
    await host.exec('ip', ['link', 'add', 'wcfh0', 'type', 'veth', 'peer', 'name', 'wcfp0', 'netns', peer.name]);
    await host.exec('ip', ['addr', 'add', `${ADDR.host}/16`, 'dev', 'wcfh0']);
    await host.exec('ip', ['link', 'set', 'wcfh0', 'up']);
    for (const a of PEER_ADDRS) await peer.exec('ip', ['addr', 'add', `${a}/16`, 'dev', 'wcfp0', 'nodad']);
    await peer.exec('ip', ['link', 'set', 'wcfp0', 'up']);

    const server = host.spawn(process.execPath, ['-e', SERVER, String(port)]);
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('test TCP server did not start')), 10_000);
      server.stdout!.on('data', (d: Buffer) => {
        if (d.toString().includes('ready')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void server.then((r) => reject(new Error(`test TCP server exited: ${String(r.stderr)}`)));
    });
  } catch (err) {
    await host.destroy();
    await peer.destroy();
    throw err;
  }
  return {
    host,
    peer,
    port,
    async connect(source, timeoutMs = 1500) {
      const out = await peer.exec(process.execPath, ['-e', CLIENT, ADDR.host, String(port), source, String(timeoutMs)]);
      return out.trim();
    },
    async destroy() {
      await host.destroy();
      await peer.destroy();
    },
  };
}

export interface RulesetSnapshot {
  readonly iptables: string;
  readonly ipset: string;
  readonly nft: string;
}

/**
 * `iptables-save`, `ipset save` and `nft list ruleset` inside a namespace.
 * iptables-save's comment lines carry timestamps, and its chain counters
 * change with traffic: those (only those) are normalised.
 */
export async function snapshot(ns: Netns): Promise<RulesetSnapshot> {
  const iptables = (await ns.exec('iptables-save', []))
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .map((l) => l.replace(/\[\d+:\d+\]$/, '[0:0]'))
    .join('\n');
  return { iptables, ipset: await ns.exec('ipset', ['save']), nft: await ns.exec('nft', ['list', 'ruleset']) };
}

export interface CapturedLog {
  readonly logger: Logger;
  readonly lines: Array<Record<string, unknown>>;
}

/** A pino logger whose records land in `lines` (parsed). */
export function captureLogger(): CapturedLog {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n')) if (l) lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, stream), lines };
}

/** Poll `check` until it returns true or the deadline passes. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, intervalMs = 200): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** A runner wrapper for fault injection: `hook` may rewrite a call or throw. */
export function wrapRunner(
  inner: CommandRunner,
  hook: (call: { file: string; args: readonly string[]; input?: string; index: number }) => { input?: string } | void,
): CommandRunner {
  let index = 0;
  return {
    async run(file, args, options) {
      // Scripts come as bytes from the plugins; the hooks read and rewrite them as text.
      const given = options?.input;
      const change = hook({ file, args, input: given === undefined ? undefined : given.toString(), index: index++ });
      const input = change?.input ?? given;
      return inner.run(file, args, input === undefined ? undefined : { input });
    },
  };
}
