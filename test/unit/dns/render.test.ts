import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { DnsError } from '../../../src/errors.js';
import { createDnsDryRun } from '../../../src/dns/dry-run.js';
import { createRpzPlugin } from '../../../src/dns/rpz/plugin.js';
import { nextSerial, parseRpzNames, parseUnboundInclude, renderRpzZone, renderUnboundInclude } from '../../../src/dns/render.js';
import { createUnboundPlugin } from '../../../src/dns/unbound/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';

const logger = pino({ level: 'silent' });

describe('resolver file rendering', () => {
  it('unbound include: one local-zone per name (and the sinkhole data), read back as the same names', () => {
    const text = renderUnboundInclude(['a.example', 'b.example'], { action: 'sinkhole', address: '192.0.2.1' });
    expect(text).toContain('local-zone: "a.example." redirect');
    expect(text).toContain('local-data: "a.example. 60 IN A 192.0.2.1"');
    expect(parseUnboundInclude(text)).toEqual(['a.example', 'b.example']);
    expect(renderUnboundInclude(['a.example'], { action: 'nxdomain' })).toContain('local-zone: "a.example." always_nxdomain');
  });

  it('rpz: name and wildcard per blocked name, AAAA for an IPv6 sinkhole; serial always grows', () => {
    const z = renderRpzZone(['a.example'], { action: 'sinkhole', address: '2001:db8::1' }, 7);
    expect(z).toContain('a.example AAAA 2001:db8::1');
    expect(z).toContain('*.a.example AAAA 2001:db8::1');
    expect(parseRpzNames(z)).toEqual(['a.example']);
    expect(nextSerial(undefined, 1000)).toBe(1000);
    expect(nextSerial(5000, 1000)).toBe(5001);
  });
});

describe('resolver plugins never overwrite a file that is not theirs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-dns-unit-'));
  const noRun: CommandRunner = { run: async () => ({ stdout: '', stderr: '' }) };

  it('rpz and unbound refuse a foreign file, leaving it byte-for-byte', async () => {
    const foreign = join(dir, 'foreign.zone');
    writeFileSync(foreign, '$TTL 60\n@ IN SOA ns. h. 1 1 1 1 1\n');
    const rpz = createRpzPlugin({ zoneFile: foreign, reload: undefined, answer: { action: 'nxdomain' }, runner: noRun, logger, now: () => 1 });
    await expect(rpz.apply(['x.example'])).rejects.toBeInstanceOf(DnsError);
    const ub = createUnboundPlugin({ control: ['unbound-control'], confFile: foreign, answer: { action: 'nxdomain' }, runner: noRun, logger });
    await expect(ub.apply(['x.example'])).rejects.toThrow(/not written by wcf-agent/);
    expect(readFileSync(foreign, 'utf8')).toBe('$TTL 60\n@ IN SOA ns. h. 1 1 1 1 1\n');
  });

  it('unbound: only names of its own include file are ever removed; additions go before removals, recorded before either', async () => {
    const conf = join(dir, 'own.conf');
    writeFileSync(conf, renderUnboundInclude(['old.example', 'keep.example'], { action: 'nxdomain' }));
    const calls: string[] = [];
    const recorded: string[] = [];
    const runner: CommandRunner = {
      async run(_file, args, options) {
        calls.push(`${args.at(-1)}:${String(options?.input ?? '').trim().split('\n').join(',')}`);
        // The include file when unbound is told to add a name: it must already name it.
        if (args.at(-1) === 'local_zones') recorded.push(...parseUnboundInclude(readFileSync(conf, 'utf8')));
        return { stdout: args.at(-1) === 'list_local_zones' ? 'old.example. always_nxdomain\nkeep.example. always_nxdomain\nadmin.example. static\n' : 'ok', stderr: '' };
      },
    };
    const ub = createUnboundPlugin({ control: ['unbound-control'], confFile: conf, answer: { action: 'nxdomain' }, runner, logger });
    const r = await ub.apply(['keep.example', 'new.example', 'admin.example']);
    expect(calls).toEqual(['list_local_zones:', 'list_local_data:', 'local_zones:new.example always_nxdomain', 'local_zones_remove:old.example']);
    expect(recorded).toEqual(expect.arrayContaining(['new.example', 'keep.example', 'old.example']));
    expect(r).toMatchObject({ added: 1, removed: 1, total: 2, foreign: ['admin.example'] });
    expect(parseUnboundInclude(readFileSync(conf, 'utf8'))).toEqual(['keep.example', 'new.example']);
  });

  it('resolver files are readable by the resolver (0644) even under the unit\'s UMask=0077', async () => {
    const conf = join(dir, 'umask.conf');
    const old = process.umask(0o077);
    try {
      const ub = createUnboundPlugin({ control: ['unbound-control'], confFile: conf, answer: { action: 'nxdomain' }, runner: noRun, logger });
      await ub.apply(['x.example']);
    } finally {
      process.umask(old);
    }
    expect(statSync(conf).mode & 0o777).toBe(0o644);
  });

  it('dry-run renders the zone to its file', async () => {
    const out = join(dir, 'dry.zone');
    const p = createDnsDryRun({ output: out, answer: { action: 'nxdomain' }, now: () => 42 });
    await p.apply(['b.example', 'a.example']);
    expect(parseRpzNames(readFileSync(out, 'utf8'))).toEqual(['a.example', 'b.example']);
    expect(await p.list()).toEqual(['a.example', 'b.example']);
  });
});
