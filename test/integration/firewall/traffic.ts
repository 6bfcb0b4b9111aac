import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ResultPromise } from 'execa';
import { ADDR, type Lab, type Netns } from '../../netns/netns.js';

/**
 * Traffic both ways over the lab's veth pair, for the direction tests: a TCP
 * echo server and a UDP listener in the peer namespace (on all its addresses),
 * a UDP listener in the host namespace, and clients in either namespace.
 */

export const PEER_TCP_PORT = 9090;
export const UDP_PORT = 9091;

/** TCP echo server; UDP listener that prints `udp <source address> <local address port>` for each datagram. */
const SERVERS = `
const net = require('node:net');
const dgram = require('node:dgram');
const [tcpPort, udpPort] = process.argv.slice(1).map(Number);
if (tcpPort) net.createServer((s) => { s.on('error', () => {}); s.pipe(s); }).listen(tcpPort, '0.0.0.0');
const u = dgram.createSocket('udp4');
u.on('message', (m, r) => console.log('udp ' + r.address + ' ' + m.toString()));
u.bind(udpPort, '0.0.0.0', () => console.log('ready'));
`;

/** Connect to host:port, print `connected`, `timeout` or `error:CODE`. */
const TCP_CLIENT = `
const net = require('node:net');
const [host, port, ms] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
const t = setTimeout(() => { console.log('timeout'); process.exit(0); }, Number(ms));
s.on('connect', () => { clearTimeout(t); console.log('connected'); s.destroy(); process.exit(0); });
s.on('error', (e) => { clearTimeout(t); console.log('error:' + e.code); process.exit(0); });
`;

/** Send one datagram `tag` from localAddress (optional) to host:port; print `sent` or `error:CODE` (a connected socket sees ICMP errors). */
const UDP_CLIENT = `
const dgram = require('node:dgram');
const [host, port, tag, localAddress, ms] = process.argv.slice(1);
const u = dgram.createSocket('udp4');
const done = (w) => { console.log(w); process.exit(0); };
u.on('error', (e) => done('error:' + e.code));
u.bind({ address: localAddress || undefined }, () => u.connect(Number(port), host, () => {
  u.send(tag, (err) => { if (err) done('error:' + err.code); });
  // An ICMP error for the datagram arrives as a socket error; send again so it surfaces.
  setTimeout(() => u.send(tag, () => {}), 100);
  setTimeout(() => done('sent'), Number(ms));
}));
`;

/**
 * Send datagrams on a connected socket to host:port and print what came back:
 * `send:CODE` when the kernel refused a send (a local DROP or REJECT both make
 * it EPERM), `icmp:CODE` when an ICMP error reached the socket (only a REJECT
 * sends one: admin-prohibited is EHOSTUNREACH). Ends at the first ICMP error,
 * or after ms with none.
 */
const UDP_PROBE = `
const dgram = require('node:dgram');
const [host, port, tag, ms] = process.argv.slice(1);
const u = dgram.createSocket('udp4');
const seen = [];
const done = () => { console.log(seen.join(' ')); process.exit(0); };
u.on('error', (e) => { seen.push('icmp:' + e.code); done(); });
u.connect(Number(port), host, () => {
  const send = () => u.send(tag, (err) => { if (err) seen.push('send:' + err.code); });
  send();
  const again = setInterval(send, 100);
  setTimeout(() => { clearInterval(again); done(); }, Number(ms));
});
`;

/**
 * An open TCP connection: connect, echo 'a', print `first`; then, once the
 * file named by the third argument exists, write 'b' and print `second` when
 * it comes back or `lost` when it has not within ms.
 */
const LONG_CLIENT = `
const net = require('node:net');
const fs = require('node:fs');
const [host, port, flag, ms] = process.argv.slice(1);
const s = net.connect({ host, port: Number(port) });
let stage = 0;
s.on('error', (e) => { console.log('error:' + e.code); process.exit(0); });
s.on('data', () => {
  if (stage === 0) {
    stage = 1;
    console.log('first');
    const poll = setInterval(() => {
      if (!fs.existsSync(flag)) return;
      clearInterval(poll);
      s.write('b');
      setTimeout(() => { console.log('lost'); process.exit(0); }, Number(ms));
    }, 20);
  } else { console.log('second'); process.exit(0); }
});
s.on('connect', () => s.write('a'));
`;

export interface Listener {
  /** Lines printed so far. */
  readonly lines: string[];
}

function listen(ns: Netns, tcpPort: number): Promise<Listener> {
  const child: ResultPromise = ns.spawn(process.execPath, ['-e', SERVERS, String(tcpPort), String(UDP_PORT)]);
  const lines: string[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('test listener did not start')), 10_000);
    child.stdout!.on('data', (d: Buffer) => {
      for (const l of d.toString().split('\n')) {
        if (l === 'ready') {
          clearTimeout(timer);
          resolve({ lines });
        } else if (l) lines.push(l);
      }
    });
  });
}

export interface Traffic {
  /** What the host's UDP listener received: `udp <source> <tag>` lines. */
  readonly hostUdp: Listener;
  /** What the peer's UDP listener received. */
  readonly peerUdp: Listener;
  /** TCP from the host to a peer address (its echo server). */
  connectOut(target: string, ms?: number): Promise<string>;
  /** One datagram from the host to a peer address. */
  udpOut(target: string, tag: string, ms?: number): Promise<string>;
  /** Datagrams from the host to a peer address on a connected socket: the send and ICMP errors seen, each once, sorted (UDP_PROBE). */
  udpOutErrors(target: string, tag: string, ms: number): Promise<string[]>;
  /** One datagram from a peer address to the host. */
  udpIn(source: string, tag: string, ms?: number): Promise<string>;
  /**
   * Open a TCP connection from the host to `target`, check it echoes, run
   * `between` (e.g. block the target), then write once more: `second` when
   * the echo came back, `lost` when it did not within ms.
   */
  openConnection(target: string, between: () => Promise<void>, ms?: number): Promise<{ first: boolean; after: string }>;
}

/** Start the listeners of both namespaces of `lab`. */
export async function startTraffic(lab: Lab): Promise<Traffic> {
  const [hostUdp, peerUdp] = await Promise.all([listen(lab.host, 0), listen(lab.peer, PEER_TCP_PORT)]);
  const node = (ns: Netns, script: string, args: string[]) => ns.exec(process.execPath, ['-e', script, ...args]).then((o) => o.trim());
  return {
    hostUdp,
    peerUdp,
    connectOut: (target, ms = 1500) => node(lab.host, TCP_CLIENT, [target, String(PEER_TCP_PORT), String(ms)]),
    udpOut: (target, tag, ms = 300) => node(lab.host, UDP_CLIENT, [target, String(UDP_PORT), tag, '', String(ms)]),
    udpOutErrors: (target, tag, ms) => node(lab.host, UDP_PROBE, [target, String(UDP_PORT), tag, String(ms)]).then((o) => [...new Set(o.split(' ').filter(Boolean))].sort()),
    udpIn: (source, tag, ms = 300) => node(lab.peer, UDP_CLIENT, [ADDR.host, String(UDP_PORT), tag, source, String(ms)]),
    async openConnection(target, between, ms = 1500) {
      const flag = join(mkdtempSync(join(tmpdir(), 'wcf-conn-')), 'go');
      const child = lab.host.spawn(process.execPath, ['-e', LONG_CLIENT, target, String(PEER_TCP_PORT), flag, String(ms)]);
      let out = '';
      const first = await new Promise<boolean>((resolve) => {
        child.stdout!.on('data', (d: Buffer) => {
          out += d.toString();
          if (out.includes('first')) resolve(true);
        });
        void child.then(() => resolve(false));
      });
      if (first) {
        await between();
        writeFileSync(flag, '');
      }
      await child;
      return { first, after: out.split('\n').filter(Boolean).at(-1) ?? '' };
    },
  };
}

/** Wait until a listener has printed a line containing `text`, or `ms` passed (then false). */
export async function received(l: Listener, text: string, ms = 1000): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (l.lines.some((x) => x.includes(text))) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return l.lines.some((x) => x.includes(text));
}
