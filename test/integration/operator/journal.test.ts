// Logs under systemd: when stderr is the journal (JOURNAL_STREAM names it), one readable line per
// event with the <N> priority prefix journald reads, fields as key=value; a failed cycle is one
// line at warning or above. stderr is a file here, and JOURNAL_STREAM its device:inode, which is
// how systemd announces the journal stream to a service.
import { spawn } from 'node:child_process';
import { closeSync, openSync, readFileSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { CLI, fastFailConfig, runCli, waitFor, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
const dirs: string[] = [];
const STORED = { maximum_rules: '300', score_threshold: '4', sync_time: '5', running: 'true' };

beforeAll(async () => {
  sim = await startSimulator({ indicators: 800, seed: 3, agentConfig: STORED });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** Runs the CLI with stderr on a file that JOURNAL_STREAM names, as systemd does. */
function underJournal(dir: string, args: string[], env: Record<string, string> = {}) {
  const log = join(dir, 'journal.log');
  const fd = openSync(log, 'w');
  const st = statSync(log);
  // The file itself as the child's fd 2 (not a pipe in between), as systemd hands over its stream.
  const child = spawn(process.execPath, [CLI, ...args], {
    stdio: ['ignore', 'ignore', fd],
    env: { ...process.env, JOURNAL_STREAM: `${st.dev}:${st.ino}`, WCF_RETRY_MIN_DELAY_MS: '20', ...env },
  });
  closeSync(fd);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, exited, lines: () => readFileSync(log, 'utf8').split('\n').filter(Boolean) };
}

const atWarningOrAbove = (lines: string[]) => lines.filter((l) => /^<[0-4]>/.test(l));

describe('journal logging', () => {
  it('a failed cycle (API unreachable, retries spent, report failing too) is ONE line at warning or above', async () => {
    const { dir, path } = writeConfig({ agid: 'a1', base_url: 'http://127.0.0.1:9/api/v1', token: 't', retries: 3, connect_timeout_ms: 500 });
    dirs.push(dir);
    const run = underJournal(dir, ['sync', '--config', path], { WCF_LOG_LEVEL: 'debug' });
    expect(await run.exited).toBe(3);
    const lines = run.lines();
    expect(lines.every((l) => /^<[0-7]>/.test(l)), lines.join('\n')).toBe(true);
    const severe = atWarningOrAbove(lines);
    expect(severe.length, lines.join('\n')).toBe(1);
    expect(severe[0]).toMatch(/^<3>sync failed, previous firewall state kept: .* code=WCF_ERR_API_UNREACHABLE$/);
    // The retries are still there for whoever asks for debug, one line each, at debug.
    expect(lines.filter((l) => l.startsWith('<7>API call failed, retrying')).length).toBe(3);
    expect(lines.some((l) => /^<7>state report failed/.test(l))).toBe(true);
  });

  it('the daemon writes <6> info and <4> warning lines, readable, fields as key=value', async () => {
    const cfg = fastFailConfig(sim);
    dirs.push(cfg.dir);
    const run = underJournal(cfg.dir, ['run', '--config', cfg.path], { WCF_AGENT_MINUTE_MS: '100', WCF_LOG_LEVEL: 'info' });
    try {
      await waitFor(() => run.lines().some((l) => l.startsWith('<6>cycle done ')), 'first cycle');
      expect(run.lines().find((l) => l.startsWith('<6>cycle done '))).toMatch(/^<6>cycle done applied=\d+ manual=\d+ score=\d+ code=0 ms=\d+ configGeneration=0$/);
      sim.deleteAgent(sim.agid);
      const warning = await waitFor(() => run.lines().find((l) => l.startsWith('<4>')), 'a warning line');
      expect(warning).toBe(`<4>agent record not found on the server (deleted?); keeping the last known configuration agid=${sim.agid}`);
    } finally {
      sim.setAgentConfig(sim.agid, STORED);
      run.child.kill('SIGTERM');
      await run.exited;
    }
  });

  it('JOURNAL_STREAM naming another stream: JSON lines; log_format forces a format', async () => {
    const { path, dir } = writeConfig({ agid: 'a1', base_url: 'http://127.0.0.1:9/api/v1', token: 't', retries: 0, connect_timeout_ms: 500 });
    dirs.push(dir);
    let r = await runCli(['sync', '--config', path], { JOURNAL_STREAM: '1:1' });
    expect(r.exitCode).toBe(3);
    expect(JSON.parse(r.stderr.split('\n')[0]!)).toMatchObject({ level: 50 });
    const forced = writeConfig({ agid: 'a1', base_url: 'http://127.0.0.1:9/api/v1', token: 't', retries: 0, connect_timeout_ms: 500, log_format: 'journal' });
    dirs.push(forced.dir);
    r = await runCli(['sync', '--config', forced.path]);
    expect(r.exitCode).toBe(3);
    expect(r.stderr.split('\n')[0]).toMatch(/^<3>sync failed, previous firewall state kept: /);
  });
});
