import { execa } from 'execa';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../helpers/cli.js';
import { isRoot, Netns } from '../../netns/netns.js';

/**
 * The firewall event source when its child cannot be started: out of descriptors Node leaves
 * the child without pipes and reports the failure one tick later. The source must count that
 * as a death (down, restart later), not crash the process, and start once descriptors are back.
 */

let ns: Netns;
beforeAll(async () => {
  if (!isRoot) throw new Error('the event source test needs root (a network namespace to listen in)');
  ns = await Netns.create();
});
afterAll(async () => {
  await ns?.destroy();
});

/**
 * A Node process (limited to 64 descriptors) that makes starting a child fail (`emfile`: opens
 * /dev/null until EMFILE; `e2big`: an environment variable past the kernel's limit for one,
 * which Node reports by throwing), starts the event source, waits for it to report itself down,
 * undoes the cause, and waits for it to come up. Prints its states and log lines.
 */
const script = (monitorUrl: string, netns: string, cause: 'emfile' | 'e2big') => `
  import { openSync, closeSync } from 'node:fs';
  import pino from 'pino';
  import { NftMonitor } from ${JSON.stringify(monitorUrl)};
  const logged = [];
  const logger = pino({ level: 'info' }, { write: (l) => logged.push(JSON.parse(l)) });
  const states = [];
  const until = async (ok, what) => {
    for (const end = Date.now() + 10_000; !ok(); await new Promise((r) => setTimeout(r, 20))) {
      if (Date.now() > end) throw new Error('timed out waiting for ' + what + ': ' + JSON.stringify({ states, logged }));
    }
  };
  const held = [];
  if (${JSON.stringify(cause)} === 'e2big') process.env.WCF_TEST_BIG = 'x'.repeat(256 * 1024);
  else try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (e) { if (e.code !== 'EMFILE') throw e; }
  const m = new NftMonitor({
    plugin: 'nftables', names: { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' }, netns: ${JSON.stringify(netns)},
    logger, onChange: () => undefined, onState: (up) => states.push(up),
  });
  m.start();
  await until(() => states.includes(false), 'the source to be down');
  for (const fd of held) closeSync(fd);
  delete process.env.WCF_TEST_BIG;
  await until(() => states.at(-1) === true, 'the source to start');
  m.stop();
  console.log(JSON.stringify({ states, logged: logged.map((l) => ({ level: l.level, msg: l.msg })) }));
  process.exit(0);
`;

async function run(cause: 'emfile' | 'e2big'): Promise<{ states: boolean[]; logged: { level: number; msg: string }[] }> {
  const code = script(pathToFileURL(join(ROOT, 'src/firewall/monitor.ts')).href, ns.name, cause);
  const r = await execa('prlimit', ['--nofile=64:64', process.execPath, '--import', 'tsx', '--input-type=module', '-e', code], { cwd: ROOT, reject: false });
  expect(r.exitCode, `the process crashed:\n${r.stderr}`).toBe(0);
  return JSON.parse(r.stdout) as { states: boolean[]; logged: { level: number; msg: string }[] };
}

describe('the firewall event source when its child cannot be started', () => {
  it('out of descriptors: reports itself down and logs why, without crashing, then starts once descriptors are back', async () => {
    const out = await run('emfile');
    expect(out.states).toEqual([false, true]);
    expect(out.logged).toEqual([{ level: 40, msg: expect.stringMatching(/^nft monitor stopped \(spawn \S+ EMFILE\); restarting it, periodic checks cover the gap$/) }]);
  });

  it('a start Node refuses by throwing (E2BIG): the same, down, logged, started again later', async () => {
    const out = await run('e2big');
    expect(out.states).toEqual([false, true]);
    expect(out.logged).toEqual([{ level: 40, msg: 'nft monitor could not be started (spawn E2BIG); restarting it, periodic checks cover the gap' }]);
  });
});
