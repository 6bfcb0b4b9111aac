/**
 * Resident cost of each runtime dependency: a bare Node process (with the agent's Node flags)
 * that loads one library, bundled and minified by esbuild as the daemon would be, then reports
 * its RSS. Also the lighter forms the issue weighs (zod/mini, node:http with a keep-alive Agent,
 * node:child_process). Median of `--runs` processes each.
 *
 *   npx tsx scripts/bench/standalone/deps.ts [--runs 5]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { agentNodeFlags } from '../sync.js';
import { median } from '../stats.js';

const ROOT = join(import.meta.dirname, '../../..');

/** What each entry loads and touches (loading alone can leave lazy parts out). */
const CASES: Record<string, string> = {
  'bare node': '',
  undici: "import { Agent, request } from 'undici'; keep(new Agent({ keepAliveTimeout: 4000 }), request);",
  'node:http keep-alive Agent (no TLS)': "import http from 'node:http'; keep(new http.Agent({ keepAlive: true }), http.request);",
  'node:tls alone': "import tls from 'node:tls'; keep(tls.connect);",
  'node:http + https keep-alive Agent': "import http from 'node:http'; import https from 'node:https'; keep(new https.Agent({ keepAlive: true }), http.request);",
  execa: "import { execa } from 'execa'; keep(execa);",
  'node:child_process': "import { spawn } from 'node:child_process'; keep(spawn);",
  zod: "import { z } from 'zod'; keep(z.object({ a: z.string(), b: z.number().int() }).safeParse({ a: 'x', b: 1 }));",
  'zod/mini': "import * as z from 'zod/mini'; keep(z.safeParse(z.object({ a: z.string(), b: z.int() }), { a: 'x', b: 1 }));",
  pino: "import pino from 'pino'; keep(pino({ base: undefined }, pino.destination({ fd: 2, sync: true })));",
  commander: "import { Command } from 'commander'; keep(new Command('x').option('--a <v>'));",
  'prom-client': "import { Registry, Counter } from 'prom-client'; const r = new Registry(); keep(new Counter({ name: 'x', help: 'x', registers: [r] }));",
  'p-retry': "import pRetry from 'p-retry'; keep(pRetry);",
  'ipaddr.js': "import ipaddr from 'ipaddr.js'; keep(ipaddr.parse('1.2.3.4'));",
  'undici + zod + pino + commander + execa': "import { Agent } from 'undici'; import { z } from 'zod'; import pino from 'pino'; import { Command } from 'commander'; import { execa } from 'execa'; keep(new Agent({}), z.string().parse('x'), pino({}, pino.destination({ fd: 2, sync: true })), new Command('x'), execa);",
};

const REPORT = "await new Promise((r) => setImmediate(r)); process.stdout.write(String(process.memoryUsage.rss()));";

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { runs: { type: 'string', default: '5' } } });
  const runs = Number(values.runs);
  const dir = mkdtempSync(join(tmpdir(), 'wcf-bench-deps-'));
  try {
    const rows: [string, number][] = [];
    for (const [name, code] of Object.entries(CASES)) {
      const entry = join(dir, 'entry.mjs');
      writeFileSync(entry, `const kept = []; const keep = (...x) => kept.push(...x); globalThis.kept = kept;\n${code}\n${REPORT}\n`);
      const out = join(dir, 'bundle.mjs');
      // The stub the single binary uses for pino's worker transport is not needed: nothing here starts a transport.
      await build({ entryPoints: [entry], bundle: true, minify: true, platform: 'node', format: 'esm', target: 'node24', outfile: out, absWorkingDir: ROOT, nodePaths: [join(ROOT, 'node_modules')], logLevel: 'error', banner: { js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);" } });
      const rss = median(Array.from({ length: runs }, () => Number(execFileSync(process.execPath, [...agentNodeFlags(), out], { encoding: 'utf8' }))));
      rows.push([name, rss / 1e6]);
    }
    const base = rows[0]![1];
    console.log('| loaded (bundled, minified) | RSS | above bare node |\n|---|---|---|');
    for (const [name, mb] of rows) console.log(`| ${name} | ${mb.toFixed(1)} MB | ${name === 'bare node' ? '' : `+${(mb - base).toFixed(1)} MB`} |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
