// `npm run demo`: the main job on an embedded default. Starts the bundled API
// simulator on loopback, runs one `sync --once --dry-run` against it, then prints
// the plan as a table and where the rendered rules went. Touches no firewall. Its temp
// dir (a config holding the simulator's token) is removed on the way out.
// `npm run demo -- --enforce` (as root) is scripts/demo-enforce.mjs: the same, enforced in a
// throwaway network namespace.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startDemoSimulator } from './demo-sim.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
if (process.argv.includes('--enforce')) {
  const { enforceDemo } = await import('./demo-enforce.mjs');
  process.exit(await enforceDemo(root));
}

const indicators = process.env.DEMO_INDICATORS ?? '20000';
const { url, token, agid, stop: stopSim } = await startDemoSimulator(root, indicators);

const dir = mkdtempSync(join(tmpdir(), 'wcf-demo-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
const configPath = join(dir, 'config.json');
writeFileSync(configPath, JSON.stringify({ agid, base_url: url, token, plugin: 'dry-run', state_dir: 'state' }, null, 2));

const cli = (...args) => spawnSync(process.execPath, [join(root, 'dist/cli.js'), ...args, '--config', configPath], { stdio: ['ignore', 'inherit', 'inherit'] });

console.log(`\n== simulator: ${url} (${indicators} indicators), config: ${configPath} (removed at the end)\n`);
console.log('== wcf-agent sync --once --dry-run');
const sync = cli('sync', '--once', '--dry-run');
console.log('\n== wcf-agent plan (first 25 rows)');
const plan = cli('plan', '--limit', '25');
const rules = join(dir, 'state', 'dry-run.ipset');
let head = '';
try {
  // The rules and hooks (comments), then the first few entries.
  const lines = readFileSync(rules, 'utf8').split('\n');
  const firstAdd = lines.findIndex((l) => l.startsWith('add '));
  head = lines.slice(0, firstAdd === -1 ? 12 : firstAdd + 6).join('\n');
} catch {
  head = '(no rules file written)';
}
console.log(`\n== rendered rules (dry run, nothing applied): ${rules}\n${head}\n...`);
console.log('\n== wcf-agent status');
cli('status');
stopSim();
console.log('\nNext: see it enforce, in a throwaway network namespace (as root; the host\'s own ruleset is not touched):\n  sudo npm run demo -- --enforce');
process.exit(sync.status || plan.status || 0);
