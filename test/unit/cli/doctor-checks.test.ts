import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { clockCheck } from '../../../src/cli/doctor/api-checks.js';
import { check, doctorExitCode } from '../../../src/cli/doctor/check.js';
import { objectsCheck, toolsCheck } from '../../../src/cli/doctor/firewall-checks.js';
import { resolveApiHost } from '../../../src/host/protected-set.js';
import { allowlistCheck, capabilityCheck, hasNetAdmin, netnsCheck, stateDirCheck } from '../../../src/cli/doctor/host-checks.js';
import type { AgentConfig } from '../../../src/config/load.js';
import { FirewallError } from '../../../src/errors.js';
import pino from 'pino';
import { createPlugin, type Tool } from '../../../src/firewall/index.js';
import type { PluginName } from '../../../src/firewall/plugin.js';
import type { CommandRunner } from '../../../src/exec/runner.js';
import { callAsNobody, NOBODY } from '../../helpers/unprivileged.js';

const NAMES = { setName: 'wcf-blocklist', chainName: 'WCF-AGENT', tableName: 'wcf_agent' };

type Answer = string | Error | ((input: string) => string | Error);

function runner(answers: Record<string, Answer>): CommandRunner & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    async run(file, args, o) {
      const cmd = [file, ...args].join(' ');
      calls.push(cmd);
      const given = answers[cmd];
      if (given === undefined) throw new Error(`unexpected command ${cmd}`);
      const a = typeof given === 'function' ? given(String(o?.input ?? '')) : given;
      if (a instanceof Error) throw a;
      return { stdout: a, stderr: '' };
    },
  };
}

/**
 * nft's answers to the quick check (see src/firewall/nft/table/probe.ts) for a table (`table`)
 * holding the sets `sets` (as the agent defines them), and the chains listing: its chains `chains`.
 */
function nftTable(sets: readonly string[], chains: ReadonlyArray<Record<string, unknown>>, table = true): Record<string, Answer> {
  const check = (input: string) => {
    const said = input
      .trimEnd()
      .split('\n')
      .flatMap((line, i) => {
        const exists = (table && line === 'create table inet wcf_agent') || sets.some((set) => line.startsWith(`create set inet wcf_agent ${set} `));
        if (exists) return [`/dev/stdin:${i + 1}:1-1: Error: Could not process rule: File exists`];
        if (line.startsWith('delete ')) return [`/dev/stdin:${i + 1}:1-1: Error: Could not process rule: No such file or directory`];
        return [];
      });
    return said.length ? absent(said.join('\n')) : '';
  };
  return { 'nft -c -f -': check, 'nft -j list chains': JSON.stringify({ nftables: chains.map((c) => ({ chain: { family: 'inet', table: 'wcf_agent', ...c } })) }) };
}
const absent = (stderr: string) => new FirewallError('command failed', { stderr });
/** The backend `name` running its commands through `r` (which answers only what the test allows). */
const plugin = (name: PluginName, r: CommandRunner) =>
  createPlugin(name, { names: NAMES, hookChains: ['INPUT'], action: 'DROP', logBlocked: false, logger: pino({ level: 'silent' }), runner: r });

describe('doctor checks', () => {
  it('clock: ok within 30 s, warn above, fail above 300 s', () => {
    const server = Date.parse('Sun, 01 Nov 2026 10:00:00 GMT');
    expect(clockCheck('Sun, 01 Nov 2026 10:00:00 GMT', server + 700)).toMatchObject({ status: 'ok', message: expect.stringMatching(/in step/) });
    expect(clockCheck('Sun, 01 Nov 2026 10:00:00 GMT', server + 45_500)).toMatchObject({ status: 'warn', message: expect.stringMatching(/45 s ahead/) });
    expect(clockCheck('Sun, 01 Nov 2026 10:00:00 GMT', server - 400_000)).toMatchObject({ status: 'fail', message: expect.stringMatching(/behind/) });
    expect(clockCheck(undefined, server)).toMatchObject({ status: 'warn' });
  });

  it('CAP_NET_ADMIN is bit 12 of CapEff', () => {
    expect(hasNetAdmin('Name:\tx\nCapEff:\t000001ffffffffff\n')).toBe(true);
    expect(hasNetAdmin('CapEff:\t0000000000001000\n')).toBe(true);
    expect(hasNetAdmin('CapEff:\t0000000000000fff\n')).toBe(false);
    expect(hasNetAdmin('nothing')).toBeUndefined();
    expect(capabilityCheck('auto', 'CapEff:\t0000000000000000\n')).toMatchObject({ status: 'fail', kind: 'firewall' });
    expect(capabilityCheck('dry-run', 'CapEff:\t0000000000000000\n')).toMatchObject({ status: 'ok' });
  });

  it('exit code: the most basic failure wins; warnings alone are 0', () => {
    const ok = check('api', 'a', 'ok', '');
    expect(doctorExitCode([ok, check('firewall', 'b', 'warn', '')])).toBe(0);
    expect(doctorExitCode([ok, check('other', 'clock', 'fail', '')])).toBe(1);
    expect(doctorExitCode([check('firewall', 'f', 'fail', ''), check('api', 't', 'fail', '')])).toBe(3);
    expect(doctorExitCode([check('state', 's', 'fail', ''), check('config', 'c', 'fail', '')])).toBe(2);
    expect(doctorExitCode([check('state', 's', 'fail', '')])).toBe(4);
  });

  it('firewall tools: what the configured plugin needs', () => {
    const tools = (present: Tool[]) => new Map<Tool, string | null>((['nft', 'ipset', 'iptables', 'iptables-restore'] as Tool[]).map((t) => [t, present.includes(t) ? `${t} v1` : null]));
    expect(toolsCheck('auto', tools(['nft']))).toMatchObject({ status: 'ok' });
    expect(toolsCheck('auto', tools([]))).toMatchObject({ status: 'fail', kind: 'firewall' });
    expect(toolsCheck('ipset', tools(['ipset', 'iptables']))).toMatchObject({ status: 'fail', message: expect.stringMatching(/needs iptables-restore/) });
    expect(toolsCheck('iptables', tools(['iptables', 'iptables-restore']))).toMatchObject({ status: 'ok' });
    expect(toolsCheck('dry-run', tools([]))).toMatchObject({ status: 'ok' });
  });

  it('firewall objects: present ok, absent warn, unreadable warn, not the agent\'s fail; read-only commands', async () => {
    const nftList = 'nft -j -t list table inet wcf_agent';
    const nftText = 'nft -t list table inet wcf_agent';
    const hitsIn = 'nft -j list set inet wcf_agent wcf-blocklist-in';
    const marked = JSON.stringify({
      nftables: [
        { table: { family: 'inet', name: 'wcf_agent' } },
        { set: { family: 'inet', table: 'wcf_agent', name: 'wcf-blocklist', type: 'ipv4_addr', flags: ['interval', 'timeout'], comment: 'wcf-agent' } },
        { chain: { family: 'inet', table: 'wcf_agent', name: 'input', type: 'filter', hook: 'input', prio: -5, policy: 'accept' } },
      ],
    });
    // Marked as the agent's: its own table (not a failure), though a table without its rules and
    // forward chain blocks nothing yet, so each missing part is named.
    const probe = nftTable(['wcf-blocklist'], [{ name: 'input', handle: 1, type: 'filter', hook: 'input', prio: -5, policy: 'accept' }]);
    expect(await objectsCheck(plugin('nftables', runner({ ...probe, [hitsIn]: absent('Error: No such file or directory'), [nftList]: marked })))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/^nft table inet wcf_agent present, nft set inet wcf_agent wcf-blocklist present, nft set inet wcf_agent wcf-blocklist-nets absent, nft set inet wcf_agent wcf-blocklist-drops absent, nft set inet wcf_agent wcf-blocklist-in absent, .*absent.*: incomplete$/),
    });
    // An admin's table of that name (no marker, other contents): a failure naming it.
    const foreign = JSON.stringify({ nftables: [{ table: { family: 'inet', name: 'wcf_agent' } }, { set: { family: 'inet', table: 'wcf_agent', name: 'admins', type: 'ipv4_addr' } }] });
    expect(await objectsCheck(plugin('nftables', runner({ ...probe, [hitsIn]: absent('Error: No such file or directory'), [nftList]: foreign, [nftText]: 'table inet wcf_agent {\n\tset admins {\n' })))).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/^nft table inet wcf_agent is not the agent's \(and \d+ of its parts\): no "wcf-agent" comment/),
    });
    expect(await objectsCheck(plugin('nftables', runner(nftTable([], [], false))))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/not created yet \(the first sync creates it\)/),
    });
    const ipsetN = 'ipset list -n';
    const iptS = 'iptables -w 10 -t filter -S';
    const ipsetT = 'ipset list -t wcf-blocklist';
    const header = 'Name: wcf-blocklist\nType: hash:net\nHeader: family inet hashsize 1024 maxelem 65536 timeout 0 comment bucketsize 12\n';
    const filter = '-P INPUT ACCEPT\n-N WCF-AGENT\n-A INPUT -m comment --comment wcf-agent -j WCF-AGENT\n-A WCF-AGENT -m comment --comment wcf-agent\n';
    expect(await objectsCheck(plugin('ipset', runner({ [ipsetN]: 'other\nwcf-blocklist\nwcf-blocklist-in\nwcf-blocklist-out\n', [ipsetT]: header, [iptS]: filter })))).toMatchObject({
      status: 'ok',
      message: 'ipset wcf-blocklist present, ipset wcf-blocklist-in present, ipset wcf-blocklist-out present, iptables chain WCF-AGENT present, iptables hook INPUT -> WCF-AGENT present',
    });
    // The hits set its rule names is missing: incomplete, and named.
    expect(await objectsCheck(plugin('ipset', runner({ [ipsetN]: 'other\nwcf-blocklist\nwcf-blocklist-out\n', [ipsetT]: header, [iptS]: filter })))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/ipset wcf-blocklist-in absent, ipset wcf-blocklist-out present/),
    });
    expect(await objectsCheck(plugin('ipset', runner({ [ipsetN]: 'wcf-blocklist\n', [ipsetT]: header.replace(' timeout 0 comment', ''), [iptS]: filter })))).toMatchObject({
      status: 'fail',
      message: expect.stringMatching(/ipset wcf-blocklist/),
    });
    expect(await objectsCheck(plugin('ipset', runner({ [ipsetN]: 'other\n', [iptS]: '-P INPUT ACCEPT\n-N WCF-AGENT-OTHER\n' })))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/absent/),
    });
    expect(await objectsCheck(plugin('ipset', runner({ [ipsetN]: 'wcf-blocklist\n', [ipsetT]: header, [iptS]: '-P INPUT ACCEPT\n' })))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/incomplete/),
    });
    expect(await objectsCheck(plugin('iptables', runner({ [iptS]: absent('Permission denied (you must be root)') })))).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/cannot read/),
    });
  });

  it('state dir: writable ok (temp file removed), missing dir warn, not writable fail', () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-doc-'));
    expect(stateDirCheck(dir)).toMatchObject({ status: 'ok' });
    expect(readdirSync(dir)).toEqual([]);
    expect(stateDirCheck(join(dir, 'not', 'yet'))).toMatchObject({ status: 'warn' });
    writeFileSync(join(dir, 'file'), '');
    expect(stateDirCheck(join(dir, 'file'))).toMatchObject({ status: 'fail', kind: 'state' });
  });

  it('state dir the agent user cannot write: fail (checked as an unprivileged user: root writes anywhere)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'wcf-doc-'));
    chmodSync(dir, 0o755);
    const ro = join(dir, 'ro');
    mkdirSync(ro);
    chmodSync(ro, 0o555);
    const rw = join(dir, 'rw');
    mkdirSync(rw);
    chownSync(rw, NOBODY, NOBODY);
    const asNobody = (d: string) => callAsNobody<{ status: string; kind?: string; message: string }>('src/cli/doctor/host-checks.ts', 'stateDirCheck', [d]);
    expect(await asNobody(ro)).toMatchObject({ status: 'fail', kind: 'state', message: expect.stringMatching(/not writable: EACCES/) });
    // The same call passes where that user may write: the failure above is the permission.
    expect(await asNobody(rw)).toMatchObject({ status: 'ok' });
    expect(readdirSync(rw)).toEqual([]);
  });

  it('netns: ok with the namespace addresses (read through the namespaced runner), fail with a hint when it cannot be entered', async () => {
    const json = JSON.stringify([{ addr_info: [{ local: '127.0.0.1' }] }, { addr_info: [{ local: '198.18.0.1' }, { local: 'fe80::1' }] }]);
    const ok = await netnsCheck('lab', runner({ 'ip -j -4 addr show': json }));
    expect(ok.addresses).toEqual(['127.0.0.1', '198.18.0.1']);
    expect(ok.result).toMatchObject({ status: 'ok', message: expect.stringContaining('network namespace lab (127.0.0.1, 198.18.0.1)') });
    const gone = await netnsCheck('gone', runner({ 'ip -j -4 addr show': absent('Cannot open network namespace "gone": No such file or directory') }));
    expect(gone.addresses).toBeUndefined();
    expect(gone.result).toMatchObject({ status: 'fail', kind: 'firewall', hint: expect.stringMatching(/ip netns add gone/) });
  });

  it('allowlist: names the namespace addresses; an API host that does not resolve is a warning with a hint', async () => {
    const cfg = (base_url: string, allowlist: string[] = ['203.0.113.10']) => ({ base_url, allowlist }) as AgentConfig;
    const ok = await allowlistCheck(cfg('http://192.0.2.7:8080/api/v1'), { name: 'lab', addresses: ['198.18.0.1'] });
    expect(ok).toMatchObject({ status: 'ok', message: expect.stringMatching(/namespace lab addresses 198\.18\.0\.1, API 192\.0\.2\.7$/) });

    expect(await resolveApiHost('https://api.example.invalid/api/v1')).toMatchObject({ host: 'api.example.invalid', addresses: [], error: expect.any(String) });
    const unresolved = await allowlistCheck(cfg('https://api.example.invalid/api/v1'));
    expect(unresolved).toMatchObject({
      status: 'warn',
      message: expect.stringMatching(/^the API host api\.example\.invalid does not resolve to an IPv4 address here .*; allowlist has 1 entry; always protected/),
      hint: expect.stringMatching(/getent ahostsv4 api\.example\.invalid/),
    });
    // Both problems at once: both hints.
    const both = await allowlistCheck(cfg('https://api.example.invalid/api/v1', []));
    expect(both.hint).toMatch(/getent.*; add your admin\/bastion hosts/);
  });
});
