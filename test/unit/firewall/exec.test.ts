import { describe, expect, it } from 'vitest';
import { FirewallError } from '../../../src/errors.js';
import { Serial, createRunner, withFailingLine } from '../../../src/firewall/exec.js';
import { formatCommand } from '../../../src/exec/runner.js';

const node = process.execPath;

describe('createRunner', () => {
  it('runs argument arrays with stdin, no shell', async () => {
    const r = await createRunner().run(node, ['-e', 'process.stdin.pipe(process.stdout)'], { input: 'a; $(echo no) `x`\n' });
    expect(r.stdout).toBe('a; $(echo no) `x`\n');
  });

  it('prefixes every command', async () => {
    const r = await createRunner(['env', 'WCF_PREFIX_TEST=yes']).run(node, ['-e', 'console.log(process.env.WCF_PREFIX_TEST)']);
    expect(r.stdout).toBe('yes\n');
  });

  it('wraps a failure in FirewallError with the command line and its stderr', async () => {
    const err = await createRunner()
      .run(node, ['-e', 'console.error("ipset v7: The set with the given name does not exist"); process.exit(1)'], { input: 'a\nb\n' })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(FirewallError);
    const fe = err as FirewallError;
    expect(fe.code).toBe('WCF_ERR_FIREWALL');
    expect(fe.message).toMatch(/^command failed: .*node -e .*\(stdin: 2 lines\): exit code 1: ipset v7: The set with the given name does not exist$/);
    expect(fe.stderr).toBe('ipset v7: The set with the given name does not exist');
    expect(fe.command).toContain('-e');
  });

  it('reports a missing binary', async () => {
    await expect(createRunner().run('wcf-no-such-binary', [])).rejects.toThrow(/wcf-no-such-binary not found/);
  });

  it('kills a command that runs too long', async () => {
    await expect(createRunner([], { timeoutMs: 300 }).run(node, ['-e', 'setTimeout(() => {}, 10000)'])).rejects.toThrow(/timed out after 300 ms/);
  });

  it('quotes arguments for messages', () => {
    expect(formatCommand('nft', ['-f', '-'])).toBe('nft -f -');
    expect(formatCommand('iptables', ['--log-prefix', "wcf-agent: it's"])).toBe(`iptables --log-prefix 'wcf-agent: it'\\''s'`);
  });
});

describe('withFailingLine', () => {
  it('names the input line a restore tool complained about', () => {
    const err = new FirewallError('command failed: iptables-restore', { stderr: 'iptables-restore: line 3 failed\nError occurred at line: 3', command: 'iptables-restore' });
    const out = withFailingLine(err, '*filter\n:C - [0:0]\n-A C -s 1.2.3.4 -j BOGUS\nCOMMIT\n', /Error occurred at line: (\d+)/) as FirewallError;
    expect(out).toBeInstanceOf(FirewallError);
    expect(out.message).toBe('command failed: iptables-restore (input line 3: "-A C -s 1.2.3.4 -j BOGUS")');
    expect(out.stderr).toBe(err.stderr);
    expect(withFailingLine(err, 'one line', /Error occurred at line: (\d+)/)).toBe(err);
    expect(withFailingLine(new Error('x'), 'a', /(\d+)/)).toBeInstanceOf(Error);
  });
});

describe('Serial', () => {
  it('runs one operation at a time, in order, even when one fails', async () => {
    const s = new Serial();
    const log: string[] = [];
    const op = (name: string, ms: number, fail = false) => () =>
      new Promise<string>((resolve, reject) => {
        log.push(`start ${name}`);
        setTimeout(() => {
          log.push(`end ${name}`);
          if (fail) reject(new Error(name));
          else resolve(name);
        }, ms);
      });
    const results = await Promise.allSettled([s.run(op('a', 30, true)), s.run(op('b', 1)), s.run(op('c', 1))]);
    expect(results.map((r) => r.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c']);
  });
});
