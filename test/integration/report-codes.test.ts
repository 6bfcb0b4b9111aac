// The `code` reported to the API (and the exit code) for each class of failure, as documented in
// docs/commands.md "Exit codes and reported codes" (src/errors.ts). Faults are limited to GET /ips so that the
// report call itself gets through.
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ERROR_CODES } from '../../src/errors.js';
import { startSimulator, type Simulator } from '../simulator/index.js';
import { runCli, writeConfig } from '../helpers/cli.js';

interface SyncJson {
  ok: boolean;
  code: number;
  error: string | null;
  message: string | null;
  applied: number;
}
interface Report {
  code: number;
  blacklist: string[];
  plugin: string;
}

let sim: Simulator;
const dirs: string[] = [];

beforeAll(async () => {
  sim = await startSimulator({
    indicators: 600,
    seed: 21,
    agentConfig: { maximum_rules: '300', score_threshold: '3', sync_time: '5', running: 'true' },
  });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
beforeEach(() => sim.setFault(null));

function config(extra: Record<string, unknown> = {}) {
  const c = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, ...extra });
  dirs.push(c.dir);
  return c;
}

async function sync(path: string): Promise<{ exitCode: number; stderr: string; out: SyncJson }> {
  const r = await runCli(['sync', '--once', '--dry-run', '--json', '--config', path]);
  return { exitCode: r.exitCode, stderr: r.stderr, out: JSON.parse(r.stdout) as SyncJson };
}

const lastReport = () => sim.reports.at(-1)!.body as Report;

/** The documented numbers, checked against the table in docs/commands.md so code and docs cannot drift apart. */
const COMMANDS_PAGE = readFileSync(join(import.meta.dirname, '../../docs/commands.md'), 'utf8');
function documented(code: number, meaning: RegExp): number {
  expect(COMMANDS_PAGE).toMatch(new RegExp(`^\\| ${code} \\| ${meaning.source}`, 'm'));
  return code;
}

describe('reported code on failure', () => {
  it('HTTP 500 from the feed: exit 3, code 22 reported, the previous set kept and reported', async () => {
    const { path } = config();
    const good = await sync(path);
    expect(good.exitCode, good.stderr).toBe(0);
    const before = [...lastReport().blacklist].sort();
    expect(before.length).toBeGreaterThan(0);

    const reports = sim.reports.length;
    sim.setFault('http500', { routes: ['GET /ips'] });
    const r = await sync(path);
    expect(r.exitCode).toBe(ERROR_CODES.WCF_ERR_API_STATUS.exit);
    expect(r.exitCode).toBe(3);
    const code = documented(22, /API answered with an error status/);
    expect(ERROR_CODES.WCF_ERR_API_STATUS.report).toBe(code);
    expect(r.out).toMatchObject({ ok: false, code, error: 'WCF_ERR_API_STATUS' });
    expect(r.out.message).toMatch(/HTTP 500/);
    expect(sim.reports.length).toBe(reports + 1);
    expect(lastReport().code).toBe(code);
    expect([...lastReport().blacklist].sort()).toEqual(before);

    const st = await runCli(['status', '--json', '--config', path]);
    expect(JSON.parse(st.stdout)).toMatchObject({ ok: false, code });
  });

  it('wrong field types in the feed: exit 3, code 23 reported, the message names the field path, nothing applied', async () => {
    const { path, dir } = config();
    sim.setFault('wrongTypes', { routes: ['GET /ips'] });
    const r = await sync(path);
    expect(r.exitCode).toBe(3);
    const code = documented(23, /API answer unusable/);
    expect(r.out).toMatchObject({ ok: false, code, error: 'WCF_ERR_API_RESPONSE', applied: 0 });
    expect(r.out.message).toMatch(/body\.0\.score/);
    expect(r.stderr).toMatch(/body\.0\.score/);
    expect(lastReport()).toMatchObject({ code, blacklist: [] });
    expect(existsSync(join(dir, 'state', 'dry-run.ipset'))).toBe(false);
  });

  it('a feed answer over max_response_mb: exit 3, code 23, the message names max_response_mb', async () => {
    const { path } = config({ max_response_mb: 1 });
    sim.setFault('oversized', { oversize: 'bytes', sizeBytes: 4 * 1024 * 1024, routes: ['GET /ips'] });
    const r = await sync(path);
    expect(r.exitCode).toBe(3);
    expect(r.out).toMatchObject({ ok: false, code: 23, error: 'WCF_ERR_API_RESPONSE' });
    expect(r.out.message).toMatch(/max_response_mb/);
    expect(lastReport().code).toBe(23);
  });

  it('the apply fails (dry-run output under a file): exit 4, code 30 reported', async () => {
    // A config.json is a regular file, so nothing can be written "inside" it.
    const { dir: other } = config();
    const { path } = config({ dry_run_output: join(other, 'config.json', 'rules.ipset') });
    const r = await sync(path);
    expect(r.exitCode).toBe(ERROR_CODES.WCF_ERR_FIREWALL.exit);
    expect(r.exitCode).toBe(4);
    const code = documented(30, /firewall command failed/);
    expect(r.out).toMatchObject({ ok: false, code, error: 'WCF_ERR_FIREWALL' });
    expect(r.out.message).toMatch(/dry-run output/);
    expect(lastReport()).toMatchObject({ code, plugin: 'dry-run' });
  });

  it('after a failure, the next good sync reports code 0 again', async () => {
    const { path } = config();
    sim.setFault('http500', { routes: ['GET /ips'] });
    expect((await sync(path)).exitCode).toBe(3);
    expect(lastReport().code).toBe(22);
    sim.setFault(null);
    const r = await sync(path);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.out).toMatchObject({ ok: true, code: 0 });
    expect(lastReport().code).toBe(0);
  });
});
