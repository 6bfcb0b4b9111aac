// What one host's calls cost the API, for before/after comparisons of two builds: runs a built
// agent (`run`, dry-run backend, decision polls every second) against the simulator, which counts
// the bytes of every call (headers included), and prints the bytes of an idle decision poll (both
// feeds), of the first cycle by kind, and of the state report. Real time, one process; the fleet
// benchmark (npm run bench -- --only fleet) gives the per-day and fleet figures.
//   npx tsx scripts/bench-fleet-probe.ts [--entry dist/cli.js] [--size 10000] [--manual 1000] [--white 200] [--seconds 8]
//     [--conditional etag|last-modified|both] [--compression]   (what the server offers)
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator, type CallEntry, type ConditionalMode } from '../test/simulator/index.js';

const { values } = parseArgs({
  options: {
    entry: { type: 'string', default: join(import.meta.dirname, '../dist/cli.js') },
    size: { type: 'string', default: '10000' },
    manual: { type: 'string', default: '1000' },
    white: { type: 'string', default: '200' },
    seconds: { type: 'string', default: '8' },
    // Milliseconds in the agent's minute: sync_time 15 runs a cycle every 15 x this (the steady cycle's bytes).
    'minute-ms': { type: 'string', default: '60000' },
    conditional: { type: 'string' },
    compression: { type: 'boolean', default: false },
  },
});
const size = Number(values.size);
const sim = await startSimulator({ indicators: 0, agentConfig: { maximum_rules: String(size), score_threshold: '1', sync_time: '15', running: 'true' }, requestLogSize: 100_000, conditional: (values.conditional as ConditionalMode | undefined) ?? null, compression: values.compression });
const now = sim.clock.now();
// N fresh indicators (all selected), stamped over the last hour; the decisions a few seconds ago.
for (let i = 0; i < size; i++) sim.upsertIndicator({ ip: `11.${(i >>> 16) & 255}.${(i >>> 8) & 255}.${i & 255}`, score: 10, ts: now - 3600 + Math.floor((i * 3590) / size) });
// A decision re-stamps its record: the ts set after it spreads them over the last hour too.
const decisions = Number(values.manual) + Number(values.white);
const decide = (ip: string, decision: 0 | 1, k: number) => {
  sim.setDecision(ip, decision);
  sim.upsertIndicator({ ip, ts: now - 3600 + Math.floor((k * 3590) / Math.max(1, decisions)) });
};
for (let i = 0; i < Number(values.manual); i++) decide(`45.${10 + (i >>> 16)}.${(i >>> 8) & 255}.${i & 255}`, 1, i);
for (let i = 0; i < Number(values.white); i++) decide(`45.20.${(i >>> 8) & 255}.${i & 255}`, 0, Number(values.manual) + i);

const dir = mkdtempSync(join(tmpdir(), 'wcf-probe-'));
const config = join(dir, 'config.json');
// Only keys every build knows (an older one refuses unknown keys).
writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state'), jitter_seconds: 0, decision_poll_seconds: 1, watch_interval_seconds: 0 }), { mode: 0o600 });
const agent = spawn(process.execPath, [resolve(values.entry), 'run', '--config', config], { env: { ...process.env, WCF_AGENT_MINUTE_MS: values['minute-ms'], WCF_LOG_LEVEL: 'warn' }, stdio: ['ignore', 'ignore', 'inherit'] });

const isReport = (c: CallEntry) => c.method === 'POST' && c.path.endsWith('/feedback');
while (!sim.calls.some(isReport)) await new Promise((r) => setTimeout(r, 100));
const cycle = sim.calls.slice(0, sim.calls.findIndex(isReport) + 1);
await new Promise((r) => setTimeout(r, Number(values.seconds) * 1000));
agent.kill('SIGTERM');
await new Promise((r) => agent.once('exit', r));

const kind = (c: CallEntry) => (c.path.endsWith('/ips') ? (c.query.filter === '0' ? 'score feed' : 'decision feeds') : c.method === 'GET' ? 'agent record' : 'state report');
const byKind: Record<string, number> = {};
for (const c of cycle) byKind[kind(c)] = (byKind[kind(c)] ?? 0) + c.bytesIn + c.bytesOut;
// Polls after the first few seconds (the server's clock past the newest decision): the steady cost.
const polls = sim.calls.slice(cycle.length).filter((c) => c.path.endsWith('/ips') && (c.query.filter === '2' || c.query.filter === '3'));
const late = polls.slice(Math.min(6, Math.floor(polls.length / 2)));
const perPoll = late.reduce((n, c) => n + c.bytesIn + c.bytesOut, 0) / Math.max(1, late.length / 2);
const report = cycle.find(isReport)!;
// A later cycle (incremental), by kind: the calls after the first report up to the next one, polls left out.
const reportsAt = sim.calls.map((c, i) => (isReport(c) ? i : -1)).filter((i) => i >= 0);
const steady: Record<string, number> = {};
if (reportsAt.length >= 3) {
  for (const c of sim.calls.slice(reportsAt[1]! + 1, reportsAt[2]! + 1)) {
    const k = kind(c);
    if (k === 'decision feeds' && c.query.ts !== '0' && !sim.calls.slice(reportsAt[1]! + 1, reportsAt[2]! + 1).some((x) => x.method === 'GET' && x.path.endsWith('/feedback') && x.at === c.at)) continue;
    steady[k] = (steady[k] ?? 0) + c.bytesIn + c.bytesOut;
  }
}
console.log(
  JSON.stringify({
    entry: values.entry,
    size,
    idle_poll_bytes_both_feeds: Math.round(perPoll),
    polls_per_day_at_30s: 2880,
    idle_poll_bytes_per_day_at_30s: Math.round(perPoll * 2880),
    first_cycle_bytes: byKind,
    ...(reportsAt.length >= 3 ? { later_cycle_bytes: steady } : {}),
    report_bytes: report.bytesIn,
    report_status: report.status,
  }),
);
await sim.close();
rmSync(dir, { recursive: true, force: true });
