// A user without CAP_NET_ADMIN: every command that writes the kernel says "needs root or
// CAP_NET_ADMIN" once, before any network call and before anything is stored; status and doctor
// say the kernel was not read instead of repeating the firewall tool's refusal for every object.
// As `nobody` with no capability (setpriv), so the kernel refuses whatever slips through: nothing
// here can change the machine's ruleset.
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { runCli } from '../../helpers/cli.js';
import { AS_NOBODY, NOBODY } from '../../helpers/unprivileged.js';
import { Netns, isRoot } from '../../netns/netns.js';

let sim: Simulator;
const dirs: string[] = [];

/** A config nobody can read, and a state dir nobody owns (what the recipe for a non-root service user lays out). */
function layout(plugin: string): { path: string; state: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-rights-'));
  dirs.push(dir);
  chmodSync(dir, 0o755);
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOBODY);
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify({ agid: sim.agid, base_url: sim.url, token_file: join(dir, 'token'), plugin, state_dir: state, retries: 0 }), { mode: 0o644 });
  writeFileSync(join(dir, 'token'), sim.token, { mode: 0o600 });
  chownSync(join(dir, 'token'), NOBODY, NOBODY);
  return { path, state };
}

const asNobody = (args: string[]) => runCli(args, { WCF_LOG_LEVEL: 'warn' }, AS_NOBODY);
const count = (text: string, re: RegExp) => (text.match(new RegExp(re.source, 'g')) ?? []).length;

beforeAll(async () => {
  if (!isRoot) throw new Error('this test needs root: it switches to an unprivileged user (setpriv)');
  sim = await startSimulator({ indicators: 300, seed: 9 });
});
afterAll(async () => {
  await sim?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('without CAP_NET_ADMIN', () => {
  it.each([
    ['sync', ['sync', '--once']],
    ['sync --json', ['sync', '--json']],
    ['run', ['run']],
    ['flush', ['flush']],
    ['allow', ['allow', '198.51.100.7']],
    ['block', ['block', '198.51.100.8']],
  ])('%s: exit 4, "needs root or CAP_NET_ADMIN" once, no API call, nothing stored', async (_what, args) => {
    const { path, state } = layout('nftables');
    const before = sim.stats().requests;
    const r = await asNobody([...args, '--config', path]);
    expect(r.exitCode, r.stderr).toBe(4);
    expect(count(r.stderr, /needs root or CAP_NET_ADMIN/), r.stderr).toBe(1);
    expect(r.stderr).not.toMatch(/Operation not permitted|cache initialization/);
    expect(sim.stats().requests - before).toBe(0);
    expect(existsSync(join(state, 'overrides.json'))).toBe(false);
    if (args.includes('--json')) expect(JSON.parse(r.stdout)).toMatchObject({ ok: false, error: 'WCF_ERR_FIREWALL', message: expect.stringMatching(/needs root or CAP_NET_ADMIN/) });
  });

  it('overrides remove (no daemon to apply it): refused the same way', async () => {
    const { path } = layout('nftables');
    const r = await asNobody(['overrides', 'remove', '198.51.100.7', '--config', path]);
    expect(r.exitCode).toBe(4);
    expect(count(r.stderr, /needs root or CAP_NET_ADMIN/)).toBe(1);
  });

  it('the dry run needs nothing: sync --dry-run works', async () => {
    const { path } = layout('nftables');
    const r = await asNobody(['sync', '--dry-run', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
  });

  it('status says the firewall was not read, once, and never the tool\'s refusal per object', async () => {
    const { path } = layout('nftables');
    const r = await asNobody(['status', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^firewall\s+not read: needs root or CAP_NET_ADMIN/m);
    expect(r.stdout).toMatch(/^enforcing\s+unknown \(cannot read the firewall: needs root or CAP_NET_ADMIN/m);
    expect(r.stdout + r.stderr).not.toMatch(/Operation not permitted|cache initialization|unreadable/);
    const json = JSON.parse((await asNobody(['status', '--json', '--config', path])).stdout) as { enforcing: unknown; firewall: { plugin: string; error: string } };
    expect(json.enforcing).toBeNull();
    expect(json.firewall).toMatchObject({ plugin: 'nftables', error: expect.stringMatching(/^needs root or CAP_NET_ADMIN/) });
  });

  it("doctor fails CAP_NET_ADMIN and does not repeat the firewall tool's refusal", async () => {
    for (const plugin of ['nftables', 'auto']) {
      const { path } = layout(plugin);
      const r = await asNobody(['doctor', '--config', path]);
      expect(r.exitCode, plugin).not.toBe(0);
      expect(r.stdout, plugin).toMatch(/^FAIL\s+CAP_NET_ADMIN/m);
      expect(r.stdout, plugin).toMatch(/^WARN\s+firewall objects\s+not read: needs root or CAP_NET_ADMIN/m);
      expect(r.stdout + r.stderr, plugin).not.toMatch(/Operation not permitted|cache initialization|you must be root/);
    }
  });
});

describe('with CAP_NET_ADMIN but not CAP_NET_RAW, the ipset backend', () => {
  it('says before the pull that it needs CAP_NET_RAW as well', async () => {
    // In a namespace of its own: with CAP_NET_ADMIN the user could write a ruleset, never the machine's.
    const ns = await Netns.create();
    try {
      const { path } = layout('ipset');
      const before = sim.stats().requests;
      const r = await runCli(['sync', '--config', path], { WCF_LOG_LEVEL: 'warn' }, ['ip', 'netns', 'exec', ns.name, ...AS_NOBODY, '--inh-caps=+net_admin', '--ambient-caps=+net_admin']);
      expect(r.exitCode, r.stderr).toBe(4);
      expect(r.stderr).toMatch(/needs root or CAP_NET_ADMIN and CAP_NET_RAW \(the ipset backend/);
      expect(sim.stats().requests - before).toBe(0);
    } finally {
      await ns.destroy();
    }
  });
});
