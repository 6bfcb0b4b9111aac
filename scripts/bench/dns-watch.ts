/**
 * Timing when a resolver's answer changes, to the millisecond: a small Node process inside the
 * resolver's namespace asks 127.0.0.1:53 for a name every 2 ms until the answer is the one
 * wanted, and prints the wall-clock time (epoch ms) it first saw it. The caller takes its own
 * Date.now() before the agent's write; both clocks are the same machine's. A `dig` per poll
 * (ip netns exec + dig, 20-30 ms each) would be too coarse for the resolvers that change in
 * tens of milliseconds.
 */
import { createInterface } from 'node:readline';
import { execa, type ResultPromise } from 'execa';

const POLLER = `
import { Resolver } from 'node:dns/promises';
import { createInterface } from 'node:readline';
const r = new Resolver({ timeout: 500, tries: 1 });
r.setServers(['127.0.0.1']);
const status = async (name) => {
  try { await r.resolve4(name); return 'NOERROR'; }
  catch (e) { return e.code === 'ENOTFOUND' ? 'NXDOMAIN' : e.code; }
};
for await (const line of createInterface({ input: process.stdin })) {
  if (line.startsWith('time ')) {
    const [, name, count] = line.split(' ');
    const took = [];
    for (let i = 0; i < Number(count); i++) {
      const t = process.hrtime.bigint();
      await status(name);
      took.push(Number(process.hrtime.bigint() - t) / 1000);
    }
    took.sort((a, b) => a - b);
    console.log('us ' + Math.round(took[Math.floor(took.length / 2)]) + ' ' + Math.round(took[Math.floor(took.length * 0.99)]));
    continue;
  }
  const [name, want, timeoutMs] = line.split(' ');
  const deadline = Date.now() + Number(timeoutMs);
  let queries = 0;
  let seen;
  for (;;) {
    queries++;
    seen = await status(name);
    if (seen === want || Date.now() > deadline) break;
    await new Promise((res) => setTimeout(res, 2));
  }
  console.log(seen === want ? 'at ' + Date.now() + ' ' + queries : 'timeout ' + seen);
}
`;

export interface AnswerWatch {
  /** The epoch ms at which `name` first answered `want`; rejects after `timeoutMs`. */
  until(name: string, want: 'NXDOMAIN' | 'NOERROR', timeoutMs: number): Promise<number>;
  /** Median and 99th percentile of `count` lookups of `name` one after the other, in microseconds. */
  latency(name: string, count: number): Promise<{ medianUs: number; p99Us: number }>;
  close(): Promise<void>;
}

export function watchAnswers(netns: string): AnswerWatch {
  const child: ResultPromise = execa('ip', ['netns', 'exec', netns, process.execPath, '--input-type=module', '-e', POLLER], { stdin: 'pipe', stdout: 'pipe', reject: false });
  const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]();
  return {
    async until(name, want, timeoutMs) {
      child.stdin!.write(`${name} ${want} ${timeoutMs}\n`);
      const { value } = await lines.next();
      const m = /^at (\d+)/.exec(String(value));
      if (!m) throw new Error(`${name} did not answer ${want} within ${timeoutMs} ms (${String(value)})`);
      return Number(m[1]);
    },
    async latency(name, count) {
      child.stdin!.write(`time ${name} ${count}\n`);
      const { value } = await lines.next();
      const m = /^us (\d+) (\d+)/.exec(String(value));
      if (!m) throw new Error(`no timing for ${name}: ${String(value)}`);
      return { medianUs: Number(m[1]), p99Us: Number(m[2]) };
    },
    async close() {
      child.stdin!.end();
      await child;
    },
  };
}
