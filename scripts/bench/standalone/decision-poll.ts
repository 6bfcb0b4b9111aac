// Load the daemon's decision polling adds to the API: requests per host per hour and bytes per
// request, against the simulator's default data. Runs the built daemon (dry-run backend) with a
// one-second poll for a while, counts the polls the simulator saw between cycles, then replays
// one poll request of each feed to measure its answer. Not a test: figures belong here.
//   npx tsx scripts/bench/standalone/decision-poll.ts [--seconds 10] [--manual N]
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../../../test/simulator/index.js';

const { values } = parseArgs({ options: { seconds: { type: 'string', default: '10' }, manual: { type: 'string', default: '0' } } });
const seconds = Number(values.seconds);
const sim = await startSimulator();
// Extra manual blocks on top of the default data, to see how the answer grows.
for (let i = 0; i < Number(values.manual); i++) sim.setDecision(`198.51.${(i >> 8) & 255}.${i & 255}`, 1);
const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-poll-'));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state'), jitter_seconds: 0, decision_poll_seconds: 1 }), { mode: 0o600 });

const daemon = spawn(process.execPath, [join(import.meta.dirname, '../../../dist/cli.js'), 'run', '--config', config], {
  env: { ...process.env, WCF_AGENT_MINUTE_MS: '60000', WCF_LOG_LEVEL: 'warn' },
  stdio: ['ignore', 'ignore', 'inherit'],
});
// The first cycle pulls everything; polls start a second after it.
const firstCycle = () => sim.requests.some((r) => r.method === 'POST' && r.path.endsWith('/feedback'));
while (!firstCycle()) await new Promise((r) => setTimeout(r, 100));
const from = sim.requests.length;
const started = Date.now();
await new Promise((r) => setTimeout(r, seconds * 1000));
const elapsed = (Date.now() - started) / 1000;
const polls = sim.requests.slice(from).filter((r) => r.path.endsWith('/ips'));
daemon.kill('SIGTERM');
await new Promise((r) => daemon.once('exit', r));

const sizes: Record<string, number> = {};
for (const filter of ['2', '3']) {
  const q = polls.find((r) => r.query.filter === filter)?.query;
  if (!q) continue;
  const res = await fetch(`${sim.url}/ips?${new URLSearchParams(q)}`, { headers: { authorization: `Bearer ${sim.token}` } });
  const body = Buffer.from(await res.arrayBuffer());
  const headers = [...res.headers].reduce((n, [k, v]) => n + k.length + v.length + 4, 0);
  sizes[`filter=${filter}`] = body.length + headers;
}
const perPoll = polls.length / Math.max(1, Math.round(elapsed));
console.log(JSON.stringify({ seconds: Math.round(elapsed), requests: polls.length, requests_per_poll: perPoll, answer_bytes: sizes, per_hour_at_30s: Math.round((perPoll * 3600) / 30), bytes_per_hour_at_30s: Math.round(((sizes['filter=2'] ?? 0) + (sizes['filter=3'] ?? 0)) * (3600 / 30)) }));
await sim.close();
rmSync(dir, { recursive: true, force: true });
