import { execa } from 'execa';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { CLI, runCli, writeConfig } from '../../helpers/cli.js';

let sim: Simulator;
let path: string;
beforeAll(async () => {
  // Many small pages: the pull reports progress page by page.
  sim = await startSimulator({ indicators: 40_000, seed: 17 });
  path = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token, page_size: 100 }).path;
});
afterAll(async () => {
  await sim?.close();
});
afterEach(() => sim.setFault(null));

/**
 * The line appears once a pull has lasted 300 ms: the first feed page is held back longer than
 * that, so the line is due however fast this machine pulls (and a test that expects none proves
 * something).
 */
const slowFirstPage = () => sim.setFault('slow', { routes: ['GET /ips'], filter: 0, count: 1, delayMs: 500 });

/** Run the CLI with stdout and stderr on a pseudo-terminal (util-linux `script`); returns what the terminal got. */
async function onTty(args: string[]): Promise<{ exitCode: number; output: string }> {
  const cmd = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
  const r = await execa('script', ['-qefc', cmd, '/dev/null'], { reject: false, env: { WCF_LOG_LEVEL: 'warn' }, timeout: 120_000 });
  return { exitCode: r.exitCode ?? -1, output: String(r.stdout) };
}


describe('progress line for long pulls', () => {
  it('is never printed when stderr is not a TTY (systemd, pipes)', async () => {
    slowFirstPage();
    const r = await runCli(['plan', '--limit', '1', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/pulling/);
    expect(r.stderr).not.toContain('\r');
    slowFirstPage();
    const s = await runCli(['sync', '--once', '--dry-run', '--config', path]);
    expect(s.exitCode, s.stderr).toBe(0);
    expect(s.stderr).not.toMatch(/pulling/);
  });

  it('is drawn in place on a TTY and cleared at the end', async () => {
    slowFirstPage();
    const r = await onTty(['plan', '--limit', '1', '--config', path]);
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).toMatch(/\rpulling feed: \d+ pages, [\d,]+ items\x1b\[K\r/);
    expect(r.output).toContain('\r\x1b[K');
    // The table itself still follows.
    expect(r.output).toMatch(/reason\s+ip\s+score now\s+expires in/);
  });

  it('is never printed with --json, even on a TTY', async () => {
    slowFirstPage();
    const r = await onTty(['plan', '--json', '--config', path]);
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).not.toMatch(/pulling/);
  });
});

describe('connecting line', () => {
  it('on a TTY, says where it connects while the API has not answered', async () => {
    // The first call (the agent's stored configuration) answers after 1.5 s: the line ticks each second.
    sim.setFault('slow', { routes: ['GET /feedback'], count: 1, delayMs: 1500 });
    const r = await onTty(['plan', '--limit', '1', '--config', path]);
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).toMatch(new RegExp(`\\rconnecting to ${new URL(sim.url).host.replace(/\./g, '\\.')}: 1s\\x1b\\[K\\r`));
    expect(r.output).toMatch(/reason\s+ip\s+score now\s+expires in/);
  });

  it('on a TTY, counts the failed attempts and says where the last one failed', async () => {
    const down = writeConfig({ agid: 'a', base_url: 'http://127.0.0.1:9/api/v1', token: 't', retries: 2 }).path;
    const r = await onTty(['plan', '--config', down]);
    expect(r.exitCode).toBe(3);
    expect(r.output).toMatch(/\rconnecting to 127\.0\.0\.1:9: \d+s; \d+ attempts? failed, the last: GET \/\w+: TCP connect to 127\.0\.0\.1:9 failed: connect ECONNREFUSED/);
    // The line is cleared before the error is printed.
    expect(r.output).toMatch(/\r\x1b\[Kwcf-agent: WCF_ERR_API_UNREACHABLE: GET \/\w+: TCP connect to 127\.0\.0\.1:9 failed/);
  });

  it('is never printed off a TTY', async () => {
    sim.setFault('slow', { routes: ['GET /feedback'], count: 1, delayMs: 1500 });
    const r = await runCli(['plan', '--limit', '1', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stderr).not.toMatch(/connecting to/);
  });
});

