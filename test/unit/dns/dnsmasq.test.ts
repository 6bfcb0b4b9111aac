import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { createDnsmasqPlugin } from '../../../src/dns/dnsmasq/plugin.js';
import { parseServersFile, renderServersFile } from '../../../src/dns/dnsmasq/servers-file.js';
import { isOwnedText } from '../../../src/dns/owned-file.js';
import { DnsError } from '../../../src/errors.js';
import type { CommandRunner } from '../../../src/exec/runner.js';

const logger = pino({ level: 'silent' });
const dir = mkdtempSync(join(tmpdir(), 'wcf-dnsmasq-unit-'));
let n = 0;
const fresh = () => join(dir, `servers-${++n}.conf`);
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A runner that records the commands and what the file held when each ran; `fail` makes each call fail. */
function recorder(file: string, fail = false) {
  const calls: { argv: string; file: string[] }[] = [];
  const runner: CommandRunner = {
    async run(cmd, args) {
      calls.push({ argv: [cmd, ...args].join(' '), file: existsSync(file) ? parseServersFile(readFileSync(file, 'utf8')) : [] });
      if (fail) throw new DnsError(`${cmd} failed: Failed to kill unit dnsmasq.service: Unit dnsmasq.service not loaded.`);
      return { stdout: '', stderr: '' };
    },
  };
  return { calls, runner };
}

const RELOAD = ['systemctl', 'kill', '-s', 'HUP', 'dnsmasq'];

describe('the dnsmasq servers-file', () => {
  it('one server=/name/ line per name after the agent\'s marker line, read back as the same names', () => {
    const text = renderServersFile(['a.example', 'b_c.example']);
    expect(text.split('\n')).toEqual([expect.stringContaining('managed by wcf-agent'), 'server=/a.example/', 'server=/b_c.example/', '']);
    expect(isOwnedText(text)).toBe(true);
    expect(parseServersFile(text)).toEqual(['a.example', 'b_c.example']);
    // Lines of any other shape are not the agent's names.
    expect(parseServersFile('server=/x.example/10.0.0.1\n#server=/y.example/\nserver=/z.example/\n')).toEqual(['z.example']);
    expect(isOwnedText(renderServersFile([]))).toBe(true);
  });
});

describe('the dnsmasq plugin', () => {
  it('writes the file, then signals; the same names again change nothing and send no signal', async () => {
    const file = fresh();
    const { calls, runner } = recorder(file);
    const p = createDnsmasqPlugin({ file, reload: RELOAD, runner, logger });
    expect(await p.apply(['b.example', 'a.example', 'a.example'])).toEqual({ added: 2, removed: 0, total: 2, foreign: [], leftAlone: [] });
    // The file held the new names when dnsmasq was told to read it.
    expect(calls).toEqual([{ argv: RELOAD.join(' '), file: ['a.example', 'b.example'] }]);
    expect(statSync(file).mode & 0o777).toBe(0o644);
    const mtime = statSync(file).mtimeMs;
    expect(await p.apply(['a.example', 'b.example'])).toMatchObject({ added: 0, removed: 0, total: 2 });
    expect(calls).toHaveLength(1);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(await p.apply(['a.example'])).toMatchObject({ added: 0, removed: 1, total: 1 });
    expect(calls).toHaveLength(2);
    expect(await p.list()).toEqual(['a.example']);
  });

  it('flush of a missing file creates it valid and empty without a signal; of a full one, empties it and signals', async () => {
    const file = fresh();
    const { calls, runner } = recorder(file);
    const p = createDnsmasqPlugin({ file, reload: RELOAD, runner, logger });
    await p.flush();
    expect(readFileSync(file, 'utf8')).toBe(renderServersFile([]));
    expect(calls).toEqual([]);
    await p.apply(['a.example']);
    await p.flush();
    expect(parseServersFile(readFileSync(file, 'utf8'))).toEqual([]);
    expect(calls.map((c) => c.file)).toEqual([['a.example'], []]);
  });

  it('a signal that fails puts the previous file back, signals again, and throws (the last good names stay)', async () => {
    const file = fresh();
    writeFileSync(file, renderServersFile(['old.example']));
    const { calls, runner } = recorder(file, true);
    const p = createDnsmasqPlugin({ file, reload: RELOAD, runner, logger });
    await expect(p.apply(['new.example'])).rejects.toBeInstanceOf(DnsError);
    expect(readFileSync(file, 'utf8')).toBe(renderServersFile(['old.example']));
    expect(calls.map((c) => c.file)).toEqual([['new.example'], ['old.example']]);
  });

  it('a file the agent did not write is refused and left byte-for-byte, whatever the call', async () => {
    const file = fresh();
    writeFileSync(file, 'server=/corp.example/10.0.0.53\n');
    const { calls, runner } = recorder(file);
    const p = createDnsmasqPlugin({ file, reload: RELOAD, runner, logger });
    await expect(p.apply(['a.example'])).rejects.toThrow(/not written by wcf-agent/);
    await expect(p.flush()).rejects.toThrow(/not written by wcf-agent/);
    await expect(p.list()).rejects.toThrow(/not written by wcf-agent/);
    expect(readFileSync(file, 'utf8')).toBe('server=/corp.example/10.0.0.53\n');
    expect(calls).toEqual([]);
  });
});
