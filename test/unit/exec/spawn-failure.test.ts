import { execa } from 'execa';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CommandFailure, runCommand } from '../../../src/exec/run.js';
import { ROOT } from '../../helpers/cli.js';

/**
 * A command that cannot be started is a failed command, never a crash: out of descriptors
 * Node leaves the child without pipes and reports the failure as an 'error' event one tick
 * later (fatal when nobody listens yet); for some other failures it throws from spawn().
 */

interface Outcome {
  name: string;
  code?: string;
  reason?: string;
  message: string;
}

/**
 * A Node process limited to 64 descriptors (prlimit) that opens /dev/null until EMFILE, then runs
 * a command through runCommand and through the firewall backends' runner, then frees ten
 * descriptors and runs one again. Prints what each gave; exits 0 unless it crashed.
 */
const script = (runUrl: string, firewallUrl: string) => `
  import { openSync, closeSync } from 'node:fs';
  import { runCommand } from ${JSON.stringify(runUrl)};
  import { createRunner } from ${JSON.stringify(firewallUrl)};
  const opts = { timeoutMs: 10_000, maxBuffer: 1 << 20 };
  const show = (e) => ({ name: e.name, code: e.code, reason: e.reason, message: e.message });
  const held = [];
  try { for (;;) held.push(openSync('/dev/null', 'r')); } catch (e) { if (e.code !== 'EMFILE') throw e; }
  const out = { held: held.length };
  out.run = await runCommand(['true'], opts).then(() => ({ name: 'ok', message: '' }), show);
  out.firewall = await createRunner().run('nft', ['--version']).then(() => ({ name: 'ok', message: '' }), show);
  for (const fd of held.splice(0, 10)) closeSync(fd);
  out.after = await runCommand(['echo', 'back'], opts).then((r) => r.stdout, show);
  console.log(JSON.stringify(out));
`;

describe('runCommand when the child cannot be started', () => {
  it('out of descriptors (EMFILE): a CommandFailure and a FirewallError naming the cause, no crash; commands run again once descriptors are back', async () => {
    const url = (p: string) => pathToFileURL(join(ROOT, p)).href;
    const r = await execa('prlimit', ['--nofile=64:64', process.execPath, '--import', 'tsx', '--input-type=module', '-e', script(url('src/exec/run.ts'), url('src/firewall/exec.ts'))], {
      cwd: ROOT,
      reject: false,
    });
    expect(r.exitCode, `the process crashed:\n${r.stderr}`).toBe(0);
    const out = JSON.parse(r.stdout) as { held: number; run: Outcome; firewall: Outcome; after: string | Outcome };
    expect(out.held).toBeGreaterThan(0);
    expect(out.run).toEqual({ name: 'CommandFailure', reason: 'spawn', message: 'true: could not be started: the agent has too many open files (EMFILE)' });
    expect(out.firewall).toMatchObject({ name: 'FirewallError', code: 'WCF_ERR_FIREWALL' });
    expect(out.firewall.message).toBe('command failed: nft --version: nft: could not be started: the agent has too many open files (EMFILE)');
    expect(out.after).toBe('back\n');
  });

  it('a start Node refuses by throwing (E2BIG: an argument past the kernel’s limit) is a CommandFailure too', async () => {
    const err = await runCommand(['true', 'x'.repeat(256 * 1024)], { timeoutMs: 10_000, maxBuffer: 1 << 20 }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(CommandFailure);
    expect(err).toMatchObject({ reason: 'spawn', message: 'true: could not be started: its arguments are too long (E2BIG)' });
  });
});
