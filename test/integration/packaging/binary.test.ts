/**
 * The single executable (scripts/build-binary.sh): built once for this file into a
 * temp dir, then copied ALONE into an empty folder and run with an EMPTY
 * environment (no PATH, no HOME, no NODE_*), against the in-process simulator.
 */
import { copyFileSync, existsSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { ROOT, VERSION, run, runScript, tempDir } from '../../helpers/packaging.js';

const BUILD_TIMEOUT_MS = 300_000;

let sim: Simulator;
let buildDir: string;
/** Folder holding only the binary (and what the tests write next to it). */
let home: string;
let bin: string;

beforeAll(async () => {
  buildDir = tempDir('sea-build');
  const built = join(buildDir, 'wcf-agent-linux-x64');
  const r = await runScript('build-binary.sh', ['--out', built, '--work', join(buildDir, 'work')], {}, BUILD_TIMEOUT_MS);
  expect(r.exitCode, r.stderr).toBe(0);
  home = tempDir('sea-run');
  bin = join(home, 'wcf-agent');
  copyFileSync(built, bin);
  sim = await startSimulator({ indicators: 3000, seed: 11 });
}, BUILD_TIMEOUT_MS + 30_000);

afterAll(async () => {
  await sim?.close();
  // Two copies of a ~110 MB binary: do not leave them in /tmp.
  for (const dir of [buildDir, home]) if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The binary, cwd = its folder, nothing in the environment. */
function agent(args: string[]) {
  return run(bin, args, { cwd: home, env: {} });
}

function writeAgentConfig(name: string, values: Record<string, unknown> = {}): string {
  const path = join(home, name);
  writeFileSync(
    path,
    JSON.stringify({
      agid: sim.agid,
      base_url: sim.url,
      token: sim.token,
      plugin: 'dry-run',
      state_dir: join(home, 'state'),
      retries: 0,
      ...values,
    }),
  );
  return path;
}

describe('single executable', () => {
  it('is one executable ELF file, alone in its folder', () => {
    expect(readdirSync(home)).toEqual(['wcf-agent']);
    const st = statSync(bin);
    expect(st.mode & 0o111).not.toBe(0);
    expect(readFileSync(bin).subarray(0, 4)).toEqual(Buffer.from([0x7f, 0x45, 0x4c, 0x46]));
  });

  it('--version prints the package.json version (the agent, and the Node inside it) with an empty environment', async () => {
    const r = await agent(['--version']);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(new RegExp(`^wcf-agent ${VERSION.replaceAll('.', '\\.')} \\(commit [0-9a-f]{12}, Node v24\\.`));
    // No SEA experimental warning, nothing else on stderr.
    expect(r.stderr).toBe('');
  });

  it('embeds the agent’s Node flags, those of the dist/cli.js shebang', () => {
    const shebang = readFileSync(join(ROOT, 'dist/cli.js'), 'utf8').split('\n')[0]!;
    const flags = /^#!\/usr\/bin\/env -S node (.+)$/.exec(shebang)?.[1]?.split(' ');
    expect(flags).toContain('--max-semi-space-size=2');
    const sea = JSON.parse(readFileSync(join(buildDir, 'work', 'sea-config.json'), 'utf8')) as { execArgv?: string[] };
    expect(sea.execArgv).toEqual(flags);
  });

  it('carries its source as Latin-1 text, which V8 keeps at one byte a character (two-byte text doubled it)', () => {
    const source = readFileSync(join(buildDir, 'work', 'wcf-agent.cjs'), 'latin1');
    expect(source.length).toBeGreaterThan(100_000);
    const wide = readFileSync(join(buildDir, 'work', 'wcf-agent.cjs'), 'utf8').match(/[^\u0000-\u00ff]/g) ?? [];
    expect(wide).toEqual([]);
  });

  it('ignores NODE_OPTIONS (no code injection through the environment)', async () => {
    const r = await run(bin, ['--version'], { cwd: home, env: { NODE_OPTIONS: `--require=${join(home, 'nope.js')}` } });
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(new RegExp(`^wcf-agent ${VERSION.replaceAll('.', '\\.')} `));
  });

  it('plan --json selects from the simulator feed', async () => {
    const config = writeAgentConfig('plan.json');
    const r = await agent(['plan', '--json', '--config', config]);
    expect(r.exitCode, r.stderr).toBe(0);
    const plan = JSON.parse(r.stdout) as {
      agid: string;
      counts: { selected: number };
      entries: { ip: string; reason: string }[];
    };
    expect(plan.agid).toBe(sim.agid);
    expect(plan.entries.length).toBeGreaterThan(0);
    expect(plan.entries.length).toBe(plan.counts.selected);
    // plan touches no state.
    expect(existsSync(join(home, 'state', 'state.json'))).toBe(false);
  });

  it('sync --once --dry-run --json applies to the dry-run backend and reports', async () => {
    const config = writeAgentConfig('sync.json');
    const r = await agent(['sync', '--once', '--dry-run', '--json', '--config', config]);
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { ok: boolean; code: number; plugin: string; applied: number; reported: boolean };
    expect(out).toMatchObject({ ok: true, code: 0, plugin: 'dry-run', reported: true });
    expect(out.applied).toBeGreaterThan(0);
    const state = join(home, 'state');
    expect(existsSync(join(state, 'state.json'))).toBe(true);
    const rendered = readFileSync(join(state, 'dry-run.ipset'), 'utf8');
    expect(rendered.split('\n').filter((l) => l.startsWith('add ')).length).toBe(out.applied);
    expect(sim.reports.length).toBeGreaterThan(0);
  });

  it('keeps the documented exit codes: 2 for a bad config, 3 for an unreachable API', async () => {
    const bad = join(home, 'bad.json');
    writeFileSync(bad, '{ "agid": ');
    expect((await agent(['plan', '--config', bad])).exitCode).toBe(2);
    const unreachable = writeAgentConfig('down.json', { base_url: 'http://127.0.0.1:9/api/v1', connect_timeout_ms: 2000 });
    const r = await agent(['plan', '--json', '--config', unreachable]);
    expect(r.exitCode, r.stderr).toBe(3);
  });
});
