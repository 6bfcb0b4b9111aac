// `--json` on every command: one JSON object on stdout (for a script, whatever happened), and every
// time in it a whole number of epoch seconds. Each command runs as a user runs it, against the
// simulator with the dry-run backends (firewall and resolver), so nothing touches the machine.
import type { Command } from 'commander';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/main.js';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli, writeConfig, type CliResult } from '../../helpers/cli.js';
import { fractionalTimes } from '../../helpers/json-times.js';

/**
 * The commands without --json, and why: `run` is the daemon (its output is its log, JSON lines with
 * log_format json) and `completion` prints a shell script. Group commands without an action of
 * their own (agents, urls) are named through their subcommands.
 */
const WITHOUT_JSON = ['run', 'completion'];

function runnable(cmd: Command, prefix: string[] = []): { name: string; json: boolean }[] {
  return cmd.commands.flatMap((c) => {
    const path = [...prefix, c.name()];
    // commander keeps a command's action as a private field; a command with no action only groups others.
    const acts = (c as unknown as { _actionHandler: unknown })._actionHandler !== null;
    return [...(acts ? [{ name: path.join(' '), json: c.options.some((o) => o.long === '--json') }] : []), ...runnable(c, path)];
  });
}

let sim: Simulator;
let cfg: { path: string; dir: string };
const cli = (args: string[]) => runCli([...args, '--json']);

/** The whole of stdout is one JSON object. */
function oneObject(r: CliResult, what: string): Record<string, unknown> {
  let value: unknown;
  expect(() => (value = JSON.parse(r.stdout)), `${what}: stdout is one JSON document:\n${r.stdout}\n${r.stderr}`).not.toThrow();
  expect(value, what).toBeTypeOf('object');
  expect(Array.isArray(value), what).toBe(false);
  expect(fractionalTimes(value), `${what}: times that are not whole epoch seconds`).toEqual([]);
  return value as Record<string, unknown>;
}

beforeAll(async () => {
  sim = await startSimulator({ indicators: 400, urls: 300, seed: 5, agentConfig: { maximum_rules: '200', score_threshold: '3', running: 'true' } });
  cfg = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, retries: 0, url_feed: true, dns_plugin: 'dry-run' });
});
afterAll(async () => {
  await sim?.close();
});

describe('--json on every command', () => {
  it('every command that runs has --json, but the daemon and the completion script', () => {
    const all = runnable(buildProgram());
    expect(all.length).toBeGreaterThan(20);
    expect(all.filter((c) => !c.json).map((c) => c.name)).toEqual(WITHOUT_JSON);
  });

  it('each prints one JSON object on stdout, every time in whole epoch seconds', async () => {
    const c = ['--config', cfg.path];
    const manual = `${sim.agid}-json`;
    const runs: [string, string[]][] = [
      ['sync', ['sync', ...c]],
      ['plan', ['plan', ...c]],
      ['status', ['status', ...c]],
      ['hits', ['hits', ...c]],
      ['explain address', ['explain', '198.51.100.20', ...c]],
      ['explain name', ['explain', 'example.com', ...c]],
      ['check-config', ['check-config', ...c]],
      ['allow', ['allow', '198.51.100.7', '--note', 'json', ...c]],
      ['block', ['block', '198.51.100.8', '--for', '1h', ...c]],
      ['overrides', ['overrides', ...c]],
      ['overrides remove', ['overrides', 'remove', '198.51.100.7', ...c]],
      ['flush', ['flush', '--dry-run', ...c]],
      ['agents list', ['agents', 'list', ...c]],
      ['agents configure', ['agents', 'configure', '--agid', manual, '--sync-time', '10', ...c]],
      ['agents delete', ['agents', 'delete', '--agid', manual, '--yes', ...c]],
      ['report', ['report', '198.51.100.9', '--confidence', '0.5', ...c]],
      ['urls list', ['urls', 'list', ...c]],
      ['urls decide', ['urls', 'decide', 'https://evil.example.net/x', 'block', ...c]],
      ['file', ['file', 'a'.repeat(64), ...c]],
      ['version', ['version']],
    ];
    for (const [what, args] of runs) {
      const r = await cli(args);
      expect(r.exitCode, `${what}: ${r.stderr}`).toBe(0);
      oneObject(r, what);
    }
    // A name the URL feed blocks until a (solved, so fractional) time: its expiry in whole seconds too.
    const plan = oneObject(await cli(['plan', ...c]), 'plan') as { domains: { name: string; expires: number | null }[] };
    const expiring = plan.domains.find((d) => d.expires !== null);
    expect(expiring, 'a score-blocked name in the plan').toBeDefined();
    expect(oneObject(await cli(['explain', expiring!.name, ...c]), 'explain a blocked name')).toMatchObject({ blocked: true, expires: expiring!.expires });
    // doctor's exit code says how the checks went; its answer is JSON whatever it is.
    oneObject(await cli(['doctor', ...c]), 'doctor');
  }, 120_000);

  it('the new answers say what happened', async () => {
    const c = ['--config', cfg.path];
    expect(oneObject(await cli(['check-config', ...c]), 'check-config')).toMatchObject({ ok: true, path: cfg.path, problems: [] });
    const allow = oneObject(await cli(['allow', '198.51.100.30', '--for', '2h', ...c]), 'allow');
    expect(allow).toMatchObject({ address: '198.51.100.30', action: 'allow', note: null, applied: { by: 'command' } });
    expect(allow.expires).toBe((allow.created as number) + 7200);
    expect(oneObject(await cli(['overrides', 'remove', '198.51.100.30', ...c]), 'remove')).toMatchObject({ address: '198.51.100.30', removed: true, applied: { by: 'command' } });
    expect(oneObject(await cli(['flush', '--dry-run', ...c]), 'flush')).toMatchObject({ ok: true, plugin: 'dry-run' });
  });

  it('a failure is one object too: {ok: false, error, message, exit}, and the exit code', async () => {
    const usage = await cli(['hits', '--top', 'x', '--config', cfg.path]);
    expect(usage.exitCode).toBe(2);
    expect(oneObject(usage, 'bad --top')).toMatchObject({ ok: false, error: 'WCF_ERR_USAGE', exit: 2, message: expect.stringMatching(/--top/) });
    const unknown = await cli(['plan', '--bogus', '--config', cfg.path]);
    expect(unknown.exitCode).toBe(2);
    expect(oneObject(unknown, 'unknown option')).toMatchObject({ ok: false, error: 'WCF_ERR_USAGE', message: expect.stringMatching(/--bogus/) });
    const bad = writeConfig({ base_url: sim.url, token: sim.token });
    const invalid = await cli(['check-config', '--config', bad.path]);
    expect(invalid.exitCode).toBe(2);
    expect(oneObject(invalid, 'invalid config')).toMatchObject({ ok: false, error: 'WCF_ERR_CONFIG', problems: [expect.stringMatching(/^agid: /)] });
    const down = writeConfig({ agid: 'a', base_url: 'http://127.0.0.1:9/api/v1', token: 't', retries: 0 });
    const api = await cli(['agents', 'list', '--config', down.path]);
    expect(api.exitCode).toBe(3);
    expect(oneObject(api, 'API down')).toMatchObject({ ok: false, error: 'WCF_ERR_API_UNREACHABLE', exit: 3 });
  });
});
