// Times `wcf-agent plan --json` (full pull, validation, decay, selection, JSON
// output) against the simulator; median of N runs. Not a test.
//   npx tsx scripts/bench/standalone/plan.ts [--indicators 100000] [--runs 5]
import { execFile } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../../../test/simulator/index.js';
import { agentNodeFlags } from '../sync.js';

const { values } = parseArgs({ options: { indicators: { type: 'string', default: '100000' }, runs: { type: 'string', default: '5' } } });
const n = Number(values.indicators);
const sim = await startSimulator({ indicators: n, seed: 1, agentConfig: { maximum_rules: String(n), score_threshold: '3' } });
const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-plan-'));
const config = join(dir, 'config.json');
writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: 'state' }));
const cli = join(import.meta.dirname, '../../../dist/cli.js');
const times: number[] = [];
let selected = 0;
for (let i = 0; i < Number(values.runs); i++) {
  const t0 = process.hrtime.bigint();
  // Asynchronous: the simulator runs in this process and must keep answering.
  const out = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [...agentNodeFlags(), cli, 'plan', '--json', '--config', config], { maxBuffer: 1 << 30, env: { ...process.env, WCF_LOG_LEVEL: 'warn' } }, (err, stdout) =>
      err ? reject(err) : resolve(stdout),
    );
  });
  times.push(Number(process.hrtime.bigint() - t0) / 1e6);
  selected = (JSON.parse(out) as { entries: unknown[] }).entries.length;
}
times.sort((a, b) => a - b);
const median = times[Math.floor(times.length / 2)]!;
console.log(JSON.stringify({ indicators: n, selected, runs: times.map((t) => Math.round(t)), medianMs: Math.round(median) }));
await sim.close();
