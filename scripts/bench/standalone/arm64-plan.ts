// Times `wcf-agent plan --json` of the two single binaries against the simulator: the
// x86_64 one natively and the arm64 one under qemu-aarch64-static (user-mode emulation,
// the way the tests run it; an arm64 host runs it natively, far faster). Median of N runs
// each, alternating. Not a test. Needs dist/wcf-agent-linux-x64 and -arm64
// (`npm run build:binary`, `npm run build:binary -- --arch arm64`) and root (the arm64
// root file system for qemu comes from deploy/image/rootfs.sh, cached).
//   npx tsx scripts/bench/standalone/arm64-plan.ts [--indicators 3000,100000] [--runs 5]
import { execFile, execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startSimulator } from '../../../test/simulator/index.js';
import { median } from '../stats.js';

const ROOT = join(import.meta.dirname, '../../..');
const { values } = parseArgs({ options: { indicators: { type: 'string', default: '3000,100000' }, runs: { type: 'string', default: '5' } } });

const tar = execFileSync('bash', [join(ROOT, 'deploy/image/rootfs.sh'), '--variant', 'extract', '--include', 'libstdc++6', '--arch', 'arm64'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-arm64-'));
const sysroot = join(dir, 'root');
execFileSync('mkdir', [sysroot]);
execFileSync('tar', ['-C', sysroot, '-xf', tar]);

const commands = {
  x64: (config: string) => [join(ROOT, 'dist/wcf-agent-linux-x64'), 'plan', '--json', '--config', config],
  'arm64 under qemu': (config: string) => ['qemu-aarch64-static', '-L', sysroot, join(ROOT, 'dist/wcf-agent-linux-arm64'), 'plan', '--json', '--config', config],
};

for (const n of values.indicators.split(',').map(Number)) {
  const sim = await startSimulator({ indicators: n, seed: 1, agentConfig: { maximum_rules: String(n), score_threshold: '3' } });
  const config = join(dir, `config-${n}.json`);
  writeFileSync(config, JSON.stringify({ agid: sim.agid, base_url: sim.url, token: sim.token, plugin: 'dry-run', state_dir: join(dir, 'state') }), { mode: 0o600 });
  const times: Record<string, number[]> = { x64: [], 'arm64 under qemu': [] };
  let selected = 0;
  for (let i = 0; i < Number(values.runs); i++) {
    for (const [name, argv] of Object.entries(commands)) {
      const [file, ...args] = argv(config);
      const t0 = process.hrtime.bigint();
      // Asynchronous: the simulator runs in this process and must keep answering.
      const out = await new Promise<string>((resolve, reject) => {
        execFile(file!, args, { maxBuffer: 1 << 30, env: {}, cwd: dir }, (err, stdout) => (err ? reject(err) : resolve(stdout)));
      });
      times[name]!.push(Number(process.hrtime.bigint() - t0) / 1e6);
      selected = (JSON.parse(out) as { entries: unknown[] }).entries.length;
    }
  }
  const result = Object.fromEntries(Object.entries(times).map(([name, ts]) => [name, { medianMs: Math.round(median(ts)), runs: ts.map(Math.round) }]));
  console.log(JSON.stringify({ indicators: n, selected, ...result }));
  await sim.close();
}
rmSync(dir, { recursive: true, force: true });
