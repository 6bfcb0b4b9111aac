import { execa, type ResultPromise } from 'execa';
import { ADDR, type Lab, type Netns } from '../netns/netns.js';

/**
 * A steady stream of UDP datagrams from many source addresses of the lab's peer namespace to its
 * host, counted by source at the host: the proof, with packets, that a change of the agent's
 * objects let nothing through from a blocked source (and that allowed sources kept arriving, so
 * the stream itself was flowing). Each source address is put on the peer's interface; the host
 * accepts datagrams from addresses it has no route back to (rp_filter off in its namespace).
 */

export const DATAGRAM_PORT = 9999;

const RECEIVER = `
const dgram = require('node:dgram');
const s = dgram.createSocket('udp4');
let counts = new Map();
s.on('message', (m, r) => counts.set(r.address, (counts.get(r.address) || 0) + 1));
s.bind(Number(process.argv[1]), '0.0.0.0', () => console.log('ready'));
let buf = '';
process.stdin.on('data', (d) => {
  buf += d.toString();
  let nl;
  while ((nl = buf.indexOf('\\n')) !== -1) {
    const id = buf.slice(0, nl);
    buf = buf.slice(nl + 1);
    console.log(JSON.stringify({ id, counts: [...counts] }));
    counts = new Map();
  }
});
`;

const SENDER = `
const dgram = require('node:dgram');
const [host, port, every, list] = process.argv.slice(1);
const payload = Buffer.alloc(16);
const sockets = JSON.parse(list).map((a) => {
  const s = dgram.createSocket('udp4');
  s.on('error', () => {});
  s.bind({ address: a });
  return s;
});
let ready = 0;
for (const s of sockets) s.once('listening', () => { if (++ready === sockets.length) console.log('ready'); });
setInterval(() => { for (const s of sockets) s.send(payload, Number(port), host); }, Number(every));
`;

/** Node in `ns`, its stdin a pipe (the receiver takes its marks there); killed by stop() or with the namespace. */
function spawnIn(ns: Netns, args: string[]): ResultPromise {
  const child = execa('ip', ['netns', 'exec', ns.name, process.execPath, ...args], { reject: false, stdin: 'pipe' });
  ns.children.add(child);
  void child.finally(() => ns.children.delete(child));
  return child;
}

/** Reads the JSON lines a child prints, one at a time. */
class Lines {
  private buf = '';
  private readonly waiting: Array<(line: string) => void> = [];
  private readonly queued: string[] = [];

  constructor(child: ResultPromise) {
    child.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      let nl: number;
      while ((nl = this.buf.indexOf('\n')) !== -1) {
        const line = this.buf.slice(0, nl);
        this.buf = this.buf.slice(nl + 1);
        const w = this.waiting.shift();
        if (w) w(line);
        else this.queued.push(line);
      }
    });
  }

  next(timeoutMs = 10_000): Promise<string> {
    const q = this.queued.shift();
    if (q !== undefined) return Promise.resolve(q);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no line from the datagram child in time')), timeoutMs);
      this.waiting.push((line) => {
        clearTimeout(timer);
        resolve(line);
      });
    });
  }
}

export interface WindowCount {
  /** Datagrams that arrived, per blocked source, while the window was open (sources with none left out). */
  readonly through: ReadonlyMap<string, number>;
  /** Datagrams from the allowed sources while the window was open: more than zero shows the stream flowed. */
  readonly allowed: number;
  readonly ms: number;
}

export class DatagramStream {
  private constructor(
    private readonly receiver: ResultPromise,
    private readonly replies: Lines,
    private readonly sender: ResultPromise,
    private readonly blocked: ReadonlySet<string>,
    private readonly allowedSources: ReadonlySet<string>,
  ) {}

  /**
   * Starts the stream: every `everyMs`, one datagram from each of `blocked` (addresses the agent
   * blocks, inside listed networks too) and `allowed` (addresses it does not).
   */
  static async start(lab: Lab, blocked: readonly string[], allowed: readonly string[], everyMs = 10): Promise<DatagramStream> {
    for (const sysctl of ['net.ipv4.conf.all.rp_filter=0', 'net.ipv4.conf.default.rp_filter=0', 'net.ipv4.conf.wcfh0.rp_filter=0']) await lab.host.exec('sysctl', ['-qw', sysctl]);
    const sources = [...new Set([...blocked, ...allowed])];
    // One `ip -batch` for hundreds of addresses.
    await lab.peer.exec('ip', ['-batch', '-'], sources.map((a) => `addr add ${a}/32 dev wcfp0 nodad`).join('\n') + '\n');
    const receiver = spawnIn(lab.host, ['-e', RECEIVER, String(DATAGRAM_PORT)]);
    const replies = new Lines(receiver);
    if ((await replies.next()) !== 'ready') throw new Error('the datagram receiver did not start');
    const sender = spawnIn(lab.peer, ['-e', SENDER, ADDR.host, String(DATAGRAM_PORT), String(everyMs), JSON.stringify(sources)]);
    const sent = new Lines(sender);
    if ((await sent.next()) !== 'ready') throw new Error('the datagram sender did not start');
    return new DatagramStream(receiver, replies, sender, new Set(blocked), new Set(allowed));
  }

  private async mark(id: string): Promise<Map<string, number>> {
    this.receiver.stdin!.write(`${id}\n`);
    const reply = JSON.parse(await this.replies.next()) as { id: string; counts: Array<[string, number]> };
    if (reply.id !== id) throw new Error(`datagram receiver answered ${reply.id} for ${id}`);
    return new Map(reply.counts);
  }

  /**
   * What arrived while `fn` ran and for `settleMs` after: per blocked source, and from the allowed
   * ones. Counting starts from a clean mark: what arrived before is dropped.
   */
  async during(fn: () => Promise<unknown>, settleMs = 300): Promise<WindowCount> {
    await this.mark('before');
    const started = Date.now();
    await fn();
    await new Promise((r) => setTimeout(r, settleMs));
    const counts = await this.mark('after');
    const through = new Map([...counts].filter(([a]) => this.blocked.has(a)));
    const allowed = [...counts].filter(([a]) => this.allowedSources.has(a)).reduce((n, [, c]) => n + c, 0);
    return { through, allowed, ms: Date.now() - started };
  }

  async stop(): Promise<void> {
    for (const child of [this.sender, this.receiver]) {
      child.kill('SIGKILL');
      await child.catch(() => undefined);
    }
  }
}
