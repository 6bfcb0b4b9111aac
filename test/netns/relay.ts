import { rmSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResultPromise } from 'execa';
import type { Netns } from './netns.js';

/**
 * Servers at addresses inside a test namespace, for tests that need the API
 * (or a proxy) on a real, non-loopback address the agent's own rules can
 * block. The simulator stays in the test process on loopback; a relay inside
 * the namespace carries each TCP connection to it through a Unix socket
 * (a path, which network namespaces do not separate).
 */

const RELAY = `
const net = require('node:net');
const [addr, port, sock] = process.argv.slice(1);
const srv = net.createServer((c) => {
  const up = net.connect(sock);
  c.pipe(up).pipe(c);
  c.on('error', () => up.destroy());
  up.on('error', () => c.destroy());
});
srv.listen(Number(port), addr, () => console.log('ready'));
`;

const PROXY = `
const http = require('node:http');
const net = require('node:net');
const [addr, port] = process.argv.slice(1);
const srv = http.createServer((req, res) => {
  console.log('seen ' + req.method + ' ' + req.url);
  const t = new URL(req.url);
  const up = http.request({ host: t.hostname, port: t.port, method: req.method, path: t.pathname + t.search, headers: req.headers }, (ur) => {
    res.writeHead(ur.statusCode, ur.headers);
    ur.pipe(res);
  });
  up.on('error', () => res.destroy());
  req.pipe(up);
});
srv.on('connect', (req, c, head) => {
  console.log('seen CONNECT ' + req.url);
  const i = req.url.lastIndexOf(':');
  const up = net.connect(Number(req.url.slice(i + 1)), req.url.slice(0, i), () => {
    c.write('HTTP/1.1 200 Connection Established\\r\\n\\r\\n');
    if (head.length) up.write(head);
    up.pipe(c).pipe(up);
  });
  up.on('error', () => c.destroy());
  c.on('error', () => up.destroy());
});
srv.listen(Number(port), addr, () => console.log('ready'));
`;

export interface InNamespace {
  readonly url: string;
  /** Lines the process printed after `ready` (the proxy prints `seen <request>` per request). */
  readonly lines: string[];
  close(): Promise<void>;
}

let counter = 0;

async function startScript(ns: Netns, script: string, args: string[]): Promise<{ child: ResultPromise; lines: string[] }> {
  const child = ns.spawn(process.execPath, ['-e', script, ...args]);
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${args.join(' ')}: did not start`)), 10_000);
    let ready = false;
    child.stdout!.on('data', (d: Buffer) => {
      for (const l of d.toString().split('\n').filter(Boolean)) {
        if (!ready && l === 'ready') {
          ready = true;
          clearTimeout(timer);
          resolve();
        } else lines.push(l);
      }
    });
    void child.then((r) => reject(new Error(`${args.join(' ')} exited: ${String(r.stderr)}`)));
  });
  return { child, lines };
}

/** Serve the loopback server at `target` (host:port in the test's namespace) at `address:port` inside `ns`. */
export async function relayInto(ns: Netns, address: string, port: number, target: { host: string; port: number }): Promise<InNamespace> {
  const path = join(tmpdir(), `wcf-relay-${process.pid}-${++counter}.sock`);
  rmSync(path, { force: true });
  const sockets = new Set<Socket>();
  const server: Server = createServer((c) => {
    sockets.add(c);
    const up = connect(target.port, target.host);
    sockets.add(up);
    c.pipe(up).pipe(c);
    c.on('error', () => up.destroy());
    up.on('error', () => c.destroy());
    c.on('close', () => sockets.delete(c));
    up.on('close', () => sockets.delete(up));
  });
  await new Promise<void>((r) => server.listen(path, r));
  const { child, lines } = await startScript(ns, RELAY, [address, String(port), path]);
  return {
    url: `http://${address}:${port}`,
    lines,
    async close() {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      rmSync(path, { force: true });
    },
  };
}

/** A forward HTTP proxy (CONNECT and absolute-form) at `address:port` inside `ns`. */
export async function proxyIn(ns: Netns, address: string, port: number): Promise<InNamespace> {
  const { child, lines } = await startScript(ns, PROXY, [address, String(port)]);
  return {
    url: `http://${address}:${port}`,
    lines,
    async close() {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
    },
  };
}

/** The agent's set as the kernel holds it inside `ns` (sorted CIDR text). */
export async function kernelSet(ns: Netns, plugin: 'ipset' | 'nftables', setName = 'wcf-blocklist'): Promise<string[]> {
  if (plugin === 'ipset') {
    const out = await ns.exec('ipset', ['save', setName]);
    return out.split('\n').filter((l) => l.startsWith('add ')).map((l) => l.split(' ')[2]!).sort();
  }
  const out = JSON.parse(await ns.exec('nft', ['-j', 'list', 'set', 'inet', 'wcf_agent', setName])) as { nftables: { set?: { elem?: unknown[] } }[] };
  const elems = out.nftables.find((o) => o.set)?.set?.elem ?? [];
  const text = (e: unknown): string => {
    const v = (e as { elem?: { val: unknown } }).elem?.val ?? e;
    if (typeof v === 'string') return v;
    const p = (v as { prefix?: { addr: string; len: number } }).prefix;
    if (p) return p.len === 32 ? p.addr : `${p.addr}/${p.len}`;
    return JSON.stringify(v);
  };
  return elems.map(text).sort();
}
