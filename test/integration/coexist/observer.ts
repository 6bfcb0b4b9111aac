import { createInterface } from 'node:readline';
import type { ResultPromise } from 'execa';
import type { Netns } from '../../netns/netns.js';

export interface Transaction {
  /** The tables its events named, as "family name". */
  readonly tables: Set<string>;
  /** The program that made it, as the kernel names it (15 characters at most). */
  readonly by: string;
}

const EVENT = /^(?:add|delete|replace|flush|update|destroy|reset) \w+ (ip6?|inet|arp|bridge|netdev) (\S+)/;
const GENERATION = /^# new generation \d+ by process \d+ \(([^)]*)\)/;

/**
 * `nft monitor` in a namespace, an observer outside the agent and the firewall manager:
 * every nf_tables transaction (iptables-nft's included) with the tables it touched and
 * the program that made it.
 */
export class NftObserver {
  readonly transactions: Transaction[] = [];
  private pending = new Set<string>();

  private constructor(private readonly child: ResultPromise) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const ev = EVENT.exec(line);
      if (ev) this.pending.add(`${ev[1]} ${ev[2]}`);
      const gen = GENERATION.exec(line);
      if (gen) {
        this.transactions.push({ tables: this.pending, by: gen[1]! });
        this.pending = new Set();
      }
    });
  }

  static async start(ns: Netns): Promise<NftObserver> {
    const child = ns.spawn('nft', ['monitor']);
    const observer = new NftObserver(child);
    // Listening once a change of ours is heard. Each try adds and deletes the table in one
    // transaction: a bare `add table` of a table that exists is no change and no event, so one
    // made before the monitor subscribed (a loaded machine) would never be heard.
    for (let i = 0; !observer.transactions.some((t) => t.tables.has('inet wcft_observer')); i++) {
      if (i > 100) throw new Error('nft monitor heard nothing within 10 s');
      if (i % 10 === 0) await ns.exec('nft', ['-f', '-'], 'add table inet wcft_observer\ndelete table inet wcft_observer\n');
      await new Promise((r) => setTimeout(r, 100));
    }
    return observer;
  }

  async stop(): Promise<void> {
    this.child.kill('SIGTERM');
    await this.child;
  }
}
