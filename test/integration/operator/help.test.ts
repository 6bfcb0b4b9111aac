import { describe, expect, it } from 'vitest';
import { runCli } from '../../helpers/cli.js';

describe('operator commands: help and usage', () => {
  it.each([['doctor'], ['check-config'], ['agents', 'list'], ['agents', 'configure'], ['agents', 'delete'], ['report'], ['explain']])('%s --help', async (...cmd) => {
    const r = await runCli([...cmd, '--help']);
    expect(r.exitCode).toBe(0);
    expect(r.stdout).toMatch(/--config/);
  });

  it('the top-level help lists them; --version before a command still prints the version', async () => {
    const r = await runCli(['--help']);
    for (const c of ['doctor', 'check-config', 'agents', 'report', 'explain']) expect(r.stdout).toMatch(new RegExp(`^\\s+${c}\\b`, 'm'));
    expect((await runCli(['--version'])).stdout).toMatch(/^\d+\.\d+\.\d+/);
  });

  it('an unknown agents subcommand is bad usage (exit 2)', async () => {
    const r = await runCli(['agents', 'frobnicate']);
    expect(r.exitCode).toBe(2);
  });
});
