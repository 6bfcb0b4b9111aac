import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/**
 * How the proxy answers each new CONNECT (a connection already tunnelled keeps going):
 * - tunnel: an honest proxy, `200` and then bytes piped to 127.0.0.1:`port`;
 * - silent: reads the CONNECT and never says anything;
 * - answer: writes `head` (a status line and headers) and keeps the connection open;
 * - trickle: writes `first`, then one byte every `everyMs`, for ever;
 * - flood: writes a status line and `bytes` of header text that never ends.
 */
export type ProxyMode =
  | { kind: 'tunnel'; port: number }
  | { kind: 'silent' }
  | { kind: 'answer'; head: string }
  | { kind: 'trickle'; first: string; everyMs: number }
  | { kind: 'flood'; bytes: number };

/** A forward proxy on 127.0.0.1 (a real TCP server) that misbehaves as told. */
export class HostileProxy {
  mode: ProxyMode;
  /** The request head of each CONNECT received, in order. */
  readonly requests: string[] = [];
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private server!: Server;
  private port = 0;

  private constructor(mode: ProxyMode) {
    this.mode = mode;
  }

  static async start(mode: ProxyMode): Promise<HostileProxy> {
    const p = new HostileProxy(mode);
    p.server = createServer((s) => p.accept(s));
    await new Promise<void>((r) => p.server.listen(0, '127.0.0.1', r));
    p.port = (p.server.address() as AddressInfo).port;
    return p;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  /** Client connections the proxy holds open right now (a client that leaks its sockets keeps this up). */
  get open(): number {
    return this.sockets.size;
  }

  /** Connections accepted so far. */
  accepted = 0;

  /** Ends every connection it holds, tunnels included (the next call has to CONNECT again). */
  dropAll(): void {
    for (const s of this.sockets) s.destroy();
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.dropAll();
    await new Promise<void>((r) => this.server.close(() => r()));
  }

  private accept(s: Socket): void {
    this.accepted++;
    this.sockets.add(s);
    s.on('close', () => this.sockets.delete(s));
    s.on('error', () => undefined);
    let head = '';
    const onData = (d: Buffer) => {
      head += d.toString('latin1');
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > 65_536) s.destroy();
        return;
      }
      s.off('data', onData);
      this.requests.push(head.slice(0, end));
      this.act(s, Buffer.from(head.slice(end + 4), 'latin1'));
    };
    s.on('data', onData);
  }

  private act(s: Socket, rest: Buffer): void {
    const m = this.mode;
    switch (m.kind) {
      case 'silent':
        s.resume(); // reads whatever comes, answers nothing
        return;
      case 'answer':
        s.write(m.head);
        s.resume();
        return;
      case 'flood':
        s.write(`HTTP/1.1 200 Connection Established\r\nX-Pad: ${'a'.repeat(m.bytes)}`);
        s.resume();
        return;
      case 'trickle': {
        s.write(m.first);
        const t = setInterval(() => (s.destroyed ? (clearInterval(t), this.timers.delete(t)) : s.write('x')), m.everyMs);
        this.timers.add(t);
        s.resume();
        return;
      }
      case 'tunnel': {
        const up = connect(m.port, '127.0.0.1', () => {
          s.write('HTTP/1.1 200 Connection Established\r\n\r\n');
          if (rest.length) up.write(rest);
          up.pipe(s).pipe(up);
        });
        up.on('error', () => s.destroy());
        s.on('close', () => up.destroy());
        return;
      }
    }
  }
}
