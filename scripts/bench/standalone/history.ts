// The change history at scale: a month of cycles of a host with N entries, 1% of them changing
// an hour (a cycle every 15 minutes, each changing a quarter of that: most leave when their
// kernel timeout runs out, the rest fall below the threshold, as many new ones come), written as
// the agent writes it (the diff's blocks through the same writer, within --max-mb); then what
// one write costs at N (diff of two applied sets of N, encode, append), the bytes per day, and
// how long `history` and `explain --at` take on the full history, in process and as the CLI
// (node dist/cli.js, start-up included; `npm run build` first). Not a test.
//   npx tsx scripts/bench/standalone/history.ts [--entries 10000] [--days 30] [--max-mb 16] [--runs 5]
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import pino from 'pino';
import { historyOf, verdictAt } from '../../../src/agent/inspect/history.js';
import { AppliedColumns } from '../../../src/agent/state/applied-columns.js';
import { encodeBlock } from '../../../src/agent/state/history/block.js';
import { EventColumns } from '../../../src/agent/state/history/events.js';
import { AppliedSnapshot } from '../../../src/agent/state/history/diff.js';
import { historyStats, HistoryWriter } from '../../../src/agent/state/history/files.js';
import { History, MIB } from '../../../src/agent/state/history/journal.js';
import { fromNumber } from '../../../src/net/ipv4.js';
import { encodeAppliedRecord } from '../../../src/agent/state/applied-record.js';
import { writeFileAtomic } from '../../../src/util/atomic-file.js';

const { values } = parseArgs({
  options: { entries: { type: 'string', default: '10000' }, days: { type: 'string', default: '30' }, 'max-mb': { type: 'string', default: '16' }, runs: { type: 'string', default: '5' } },
});
const N = Number(values.entries);
const DAYS = Number(values.days);
const MAX = Math.floor(Number(values['max-mb']) * MIB);
const RUNS = Number(values.runs);
const CYCLE_S = 900;
const PER_CYCLE = Math.max(1, Math.round(N * 0.01 * (CYCLE_S / 3600)));
// The month ends an hour ago: `explain --at` refuses a time in the future.
const t0 = Math.floor(Date.now() / 1000) - DAYS * 86_400 - 3600;

let seed = 2024;
const rand = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 2 ** 32);
const address = () => (Math.floor(rand() * 0xdf000000) + 0x01000000) >>> 0;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.floor(s.length / 2)]! * 10) / 10;
}
function timed<T>(f: () => T): { ms: number; value: T } {
  const t = process.hrtime.bigint();
  const value = f();
  return { ms: Number(process.hrtime.bigint() - t) / 1e6, value };
}

const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-history-'));
try {
  // 1. One write at N: two applied sets of N differing by a cycle's changes, through History (diff, encode, append, log).
  const cols = (starts: Uint32Array) => {
    const c = new AppliedColumns(starts.length);
    for (let i = 0; i < starts.length; i++) c.push(starts[i]!, 32, 'score', t0 + 86_400 + (i % 5000), 3 + (i % 700) / 100);
    return c;
  };
  const before = new Uint32Array(N).map(() => address());
  const after = before.slice();
  for (let k = 0; k < PER_CYCLE; k++) after[Math.floor(rand() * N)] = address();
  const prevSet = cols(before);
  const nextSet = cols(after);
  const writeDir = mkdtempSync(join(tmpdir(), 'wcf-bench-history-write-'));
  const history = new History(writeDir, pino({ level: 'warn' }), MAX);
  const leave = () => ({ reason: 'below_threshold' as const, score: 2.5, rank: null });
  const writeMs = median(Array.from({ length: RUNS }, (_, r) => timed(() => history.addresses('nftables', prevSet, nextSet, { cause: 'cycle', ctx: { now: t0 + r, leave } })).ms));
  rmSync(writeDir, { recursive: true, force: true });
  // What a write keeps of the set for the next one (StateStore: the record is not read back).
  const snapshotMs = median(Array.from({ length: RUNS }, () => timed(() => AppliedSnapshot.of(nextSet)).ms));

  // 2. A month of cycles, as the writes of the agent leave them on disk.
  const live = new Uint32Array(N).map(() => address());
  const expiresOf = new Uint32Array(N).map(() => t0 + Math.floor(rand() * 7 * 86_400));
  const writer = new HistoryWriter(dir, MAX);
  let written = 0;
  let blocks = 0;
  const cycles = Math.round((DAYS * 86_400) / CYCLE_S);
  let probeRecent = 0;
  const fillStart = process.hrtime.bigint();
  for (let c = 0; c < cycles; c++) {
    const now = t0 + c * CYCLE_S;
    // One block per write, as History.addresses makes it: the expiries first, then the changes.
    const expired = new EventColumns('addresses');
    const changed = new EventColumns('addresses');
    for (let k = 0; k < PER_CYCLE; k++) {
      const i = Math.floor(rand() * N);
      const target = { start: live[i]!, prefix: 32 };
      const prev = { prev: 'score' as const, prevExpires: expiresOf[i]! };
      if (rand() < 0.8) expired.push(target, { ts: now - Math.floor(rand() * CYCLE_S), change: 'removed', reason: 'expired', cause: 'expiry', ...prev });
      else changed.push(target, { ts: now, change: 'removed', reason: rand() < 0.9 ? 'below_threshold' : 'whitelisted', score: 2 + rand(), ...prev });
      live[i] = address();
      expiresOf[i] = now + Math.floor(rand() * 7 * 86_400);
      changed.push({ start: live[i]!, prefix: 32 }, { ts: now, change: 'added', reason: 'score', score: 3 + rand() * 7, rank: 1 + Math.floor(rand() * N), expires: expiresOf[i]! });
    }
    probeRecent = live[Math.floor(rand() * N)]!;
    for (let i = 0; i < changed.length; i++) expired.copyFrom(changed, i);
    const b = encodeBlock({ kind: 'addresses', cause: 'cycle', ts: now, plugin: 'nftables' }, expired);
    writer.append(b);
    written += b.length;
    blocks++;
  }
  const fillS = Number(process.hrtime.bigint() - fillStart) / 1e9;
  const stats = historyStats(dir);
  const keptDays = (t0 + cycles * CYCLE_S - stats.oldest!) / 86_400;

  // 3. Reading it back: an address changed in the last cycle, one never there, a /16.
  const asCidr = (start: number, prefix: number) => ({ kind: 'addresses' as const, cidr: fromNumber(start, prefix) });
  const targets = { recent: asCidr(probeRecent, 32), absent: asCidr(0x00000001, 32), net16: asCidr(probeRecent, 16) };
  const query: Record<string, { ms: number; events: number }> = {};
  for (const [name, t] of Object.entries(targets)) {
    let events = 0;
    const ms = median(Array.from({ length: RUNS }, () => timed(() => (events = historyOf(dir, t).events.length)).ms));
    query[name] = { ms, events };
  }
  const at = t0 + cycles * CYCLE_S - 3600;
  // One after the other (all at once, each would be timed with the others' work).
  const atTimes: number[] = [];
  for (let r = 0; r < RUNS; r++) {
    const t = process.hrtime.bigint();
    await verdictAt(dir, targets.recent, at, async () => []);
    atTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  const atMs = median(atTimes);

  // The applied record of the N entries in force at the end: `explain --at` reads it for the
  // entries the history holds no change of.
  const record = new AppliedColumns(N);
  for (let i = 0; i < N; i++) record.push(live[i]!, 32, 'score', expiresOf[i]!);
  writeFileAtomic(join(dir, 'applied-nftables.json'), encodeAppliedRecord(t0 + cycles * CYCLE_S, 'nftables', record));

  // The CLI as an operator runs it (config pointing at this state dir), wall time and peak RSS.
  const config = join(dir, 'config.json');
  writeFileSync(config, JSON.stringify({ agid: 'bench', base_url: 'http://127.0.0.1:9/api/v1', token: 'bench', plugin: 'dry-run', state_dir: dir }), { mode: 0o600 });
  const cli = join(import.meta.dirname, '../../../dist/cli.js');
  const cliRun = (args: string[]) => {
    const t = process.hrtime.bigint();
    const r = spawnSync('/usr/bin/time', ['-f', '%M', process.execPath, cli, ...args, '--config', config], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
    if (r.status !== 0) throw new Error(`${args.join(' ')}: exit ${r.status}: ${r.stderr}`);
    // GNU time's last line: the peak RSS in KiB.
    return { ms: Number(process.hrtime.bigint() - t) / 1e6, rssMb: Math.round(Number(/(\d+)\s*$/.exec(r.stderr)?.[1] ?? 0) / 102.4) / 10 };
  };
  let cli1: { ms: number; rssMb: number } | undefined;
  let cli2: { ms: number; rssMb: number } | undefined;
  try {
    const h = Array.from({ length: RUNS }, () => cliRun(['history', targets.recent.cidr.text, '--json']));
    const e = Array.from({ length: RUNS }, () => cliRun(['explain', targets.recent.cidr.text, '--at', String(at), '--json']));
    cli1 = { ms: median(h.map((x) => x.ms)), rssMb: Math.max(...h.map((x) => x.rssMb)) };
    cli2 = { ms: median(e.map((x) => x.ms)), rssMb: Math.max(...e.map((x) => x.rssMb)) };
  } catch (err) {
    console.error(`CLI not measured (npm run build first?): ${(err as Error).message.split('\n')[0]}`);
  }

  console.log(
    JSON.stringify(
      {
        entries: N,
        changesPerHour: 2 * PER_CYCLE * (3600 / CYCLE_S),
        days: DAYS,
        maxMb: MAX / MIB,
        writeAtNMedianMs: writeMs,
        snapshotAtNMedianMs: snapshotMs,
        bytesPerDay: Math.round(written / DAYS),
        bytesPerChange: Math.round((written / (cycles * PER_CYCLE * 2)) * 10) / 10,
        blocks,
        fillSeconds: Math.round(fillS),
        historyBytes: stats.bytes,
        historyFiles: stats.files,
        daysKept: Math.round(keptDays * 10) / 10,
        historyInProcessMs: query,
        explainAtInProcessMs: atMs,
        cliHistory: cli1,
        cliExplainAt: cli2,
      },
      null,
      1,
    ),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
