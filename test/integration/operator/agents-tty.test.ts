import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { CLI, runCli, writeConfig } from '../../helpers/cli.js';

/**
 * `agents delete` without --yes on a terminal asks y/N. Run under a
 * pseudo-terminal (util-linux `script`), the answer typed on its stdin.
 */

let sim: Simulator;
let path: string;
beforeAll(async () => {
  sim = await startSimulator({ indicators: 50, seed: 9 });
  path = writeConfig({ agid: sim.agid, base_url: sim.url, token: sim.token }).path;
});
afterAll(async () => {
  await sim?.close();
});

/** The CLI on a pty; `answer` is what the operator types. Returns what the terminal showed. */
async function onTty(args: string[], answer: string): Promise<{ exitCode: number; output: string }> {
  const cmd = [process.execPath, CLI, ...args].map((a) => `'${a}'`).join(' ');
  const r = await execa('script', ['-qefc', cmd, '/dev/null'], { reject: false, input: answer, env: { WCF_LOG_LEVEL: 'warn' }, timeout: 60_000 });
  return { exitCode: r.exitCode ?? -1, output: String(r.stdout) };
}

const deletes = (from: number) => sim.requests.slice(from).filter((q) => q.method === 'DELETE');

describe('agents delete asks on a terminal', () => {
  const agid = 'agent-tty';

  beforeAll(async () => {
    const r = await runCli(['agents', 'configure', '--agid', agid, '--running', 'on', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it.each([
    ['n', 'n\n'],
    ['just Enter (the default is No)', '\n'],
  ])('answering %s: nothing deleted, exit 1', async (_what, answer) => {
    const mark = sim.requests.length;
    const r = await onTty(['agents', 'delete', '--agid', agid, '--config', path], answer);
    expect(r.output).toMatch(new RegExp(`Delete the record of agent ${agid} \\(-\\) on ${sim.url.replace(/[.]/g, '\\.')}\\? It is still enforcing \\(running on\\)\\. \\[y/N\\]`));
    expect(r.output).toMatch(/not deleted/);
    expect(r.output).not.toMatch(/deleted the record/);
    expect(r.exitCode).toBe(1);
    expect(deletes(mark)).toEqual([]);
    expect(sim.getAgent(agid)).toBeDefined();
  });

  it('answering y: the record is deleted, exit 0, with the reminder', async () => {
    const mark = sim.requests.length;
    const r = await onTty(['agents', 'delete', '--agid', agid, '--config', path], 'y\n');
    expect(r.exitCode, r.output).toBe(0);
    expect(r.output).toMatch(/\[y\/N\]/);
    expect(r.output).toMatch(`deleted the record of agent ${agid}`);
    expect(r.output).toMatch(/does not stop the agent/);
    expect(deletes(mark)).toHaveLength(1);
    expect(deletes(mark)[0]!.query.agid).toBe(agid);
    expect(sim.getAgent(agid)).toBeUndefined();
  });
});
