/**
 * docs/daemon.md's "Running as a non-root user" recipe, exercised: the built CLI runs as
 * an unprivileged user whose only capability is CAP_NET_ADMIN (what the systemd
 * drop-in's AmbientCapabilities= gives it), reading a config.json that is
 * root:GROUP 0640, writing a state dir the user owns (StateDirectory=).
 *
 * It all happens inside a throwaway network namespace: the simulator is started
 * in there (the namespace has only its own loopback), and `ip netns exec` enters
 * it as root before setpriv drops to the user, so the agent's firewall commands
 * change the namespace's ruleset, never the machine's. The user is `nobody`
 * (65534): the test creates no account on this machine.
 */
import { execa, type ResultPromise } from 'execa';
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT } from '../../helpers/cli.js';
import { Netns, destroyAll, isRoot } from '../../netns/netns.js';

const NOBODY = 65534;
const NOGROUP = 65534;

interface Api {
  url: string;
  token: string;
  agid: string;
}

/** The simulator as a process inside `ns` (its own loopback); resolves with its URL once it listens. */
async function simulatorIn(ns: Netns): Promise<Api> {
  // Node with tsx's loader (what `--import tsx` resolves to), one process: killing it closes its pipes.
  const loader = pathToFileURL(join(ROOT, 'node_modules/tsx/dist/loader.mjs')).href;
  const child: ResultPromise = ns.spawn(process.execPath, ['--import', loader, join(ROOT, 'test/simulator/main.ts'), '--host', '127.0.0.1', '--port', '0', '--indicators', '300', '--seed', '4']);
  return new Promise<Api>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error('simulator did not start in the namespace')), 30_000);
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString('utf8');
      const nl = out.indexOf('\n');
      if (nl !== -1) {
        clearTimeout(timer);
        resolve(JSON.parse(out.slice(0, nl)) as Api);
      }
    });
    void child.then((r) => reject(new Error(`simulator exited: ${String(r.stderr)}`)));
  });
}

/** A config dir laid out as the recipe leaves /etc/wcf-agent and /var/lib/wcf-agent. */
function layout(api: Api, plugin: string, configMode = 0o640, configGroup = NOGROUP): { path: string; state: string; dir: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-nonroot-'));
  chmodSync(dir, 0o755);
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify({ agid: api.agid, base_url: api.url, token: api.token, plugin, state_dir: join(dir, 'state'), retries: 0 }));
  chownSync(path, 0, configGroup); // chgrp wcf-agent /etc/wcf-agent/config.json
  chmodSync(path, configMode); //     chmod 0640 ...
  const state = join(dir, 'state');
  mkdirSync(state, { mode: 0o700 });
  chownSync(state, NOBODY, NOGROUP); // what StateDirectory= does for User=
  return { path, state, dir };
}

/** `ip netns exec NS setpriv --reuid=nobody ... node dist/cli.js ARGS`, with only `caps` (ambient). */
async function asUser(ns: Netns, caps: string[], args: string[]) {
  const capArgs = caps.length ? [`--inh-caps=${caps.map((c) => `+${c}`).join(',')}`, `--ambient-caps=${caps.map((c) => `+${c}`).join(',')}`] : [];
  const r = await execa(
    'ip',
    ['netns', 'exec', ns.name, 'setpriv', `--reuid=${NOBODY}`, `--regid=${NOGROUP}`, '--clear-groups', ...capArgs, process.execPath, CLI, ...args],
    { reject: false, env: { WCF_LOG_LEVEL: 'warn' }, extendEnv: true, timeout: 120_000 },
  );
  return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** Elements of the agent's two nftables sets: single addresses and networks. */
async function nftSet(ns: Netns): Promise<number> {
  let n = 0;
  for (const set of ['wcf-blocklist', 'wcf-blocklist-nets']) {
    const j = JSON.parse(await ns.exec('nft', ['-j', 'list', 'set', 'inet', 'wcf_agent', set])) as { nftables: { set?: { elem?: unknown[] } }[] };
    n += j.nftables.find((o) => o.set)?.set?.elem?.length ?? 0;
  }
  return n;
}

async function ipsetSize(ns: Netns): Promise<number> {
  return (await ns.exec('ipset', ['save', 'wcf-blocklist'])).split('\n').filter((l) => l.startsWith('add ') && !l.includes(' nomatch ')).length; // not the ownership marker
}

const dirs: string[] = [];
beforeAll(() => {
  if (!isRoot) throw new Error('this test needs root: it creates a network namespace and switches to an unprivileged user');
});
afterAll(async () => {
  await destroyAll();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('non-root with CAP_NET_ADMIN only, nftables backend', () => {
  let ns: Netns;
  let api: Api;
  beforeAll(async () => {
    ns = await Netns.create();
    api = await simulatorIn(ns);
  });

  it('sync --once applies the set, and the state it writes belongs to the user', async () => {
    const { path, state, dir } = layout(api, 'nftables');
    dirs.push(dir);
    const r = await asUser(ns, ['net_admin'], ['sync', '--once', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { plugin: string; applied: number };
    expect(out.plugin).toBe('nftables');
    expect(out.applied).toBeGreaterThan(0);
    expect(await nftSet(ns)).toBe(out.applied);
    const files = readdirSync(state);
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(statSync(join(state, f)).uid, f).toBe(NOBODY);
  });

  it('the same user without the capability is refused (exit 4), before anything, naming what it needs: the capability is what grants it', async () => {
    const { path, dir } = layout(api, 'nftables');
    dirs.push(dir);
    const r = await asUser(ns, [], ['sync', '--once', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(4);
    expect(r.stderr).toMatch(/needs root or CAP_NET_ADMIN/);
    expect(r.stderr).not.toMatch(/Operation not permitted/);
  });

  it('config.json as installed (root 0600) cannot be read by the user: exit 2, which is why the recipe makes it 0640 for its group', async () => {
    const { path, dir } = layout(api, 'nftables', 0o600, 0);
    dirs.push(dir);
    const r = await asUser(ns, ['net_admin'], ['sync', '--once', '--config', path]);
    expect(r.exitCode).toBe(2);
    expect(r.stderr).toMatch(/cannot read config file .*config\.json: permission denied/);
  });
});

describe('non-root, ipset backend', () => {
  let ns: Netns;
  let api: Api;
  beforeAll(async () => {
    ns = await Netns.create();
    api = await simulatorIn(ns);
  });

  it('needs CAP_NET_RAW as well (iptables\' set match opens a raw socket to ipset), as docs/daemon.md says', async () => {
    const { path, dir } = layout(api, 'ipset');
    dirs.push(dir);
    const admin = await asUser(ns, ['net_admin'], ['sync', '--once', '--config', path]);
    expect(admin.exitCode, admin.stderr).toBe(4);
    // Said before the pull, rather than the kernel's "Can't open socket to ipset" after it.
    expect(admin.stderr).toMatch(/needs root or CAP_NET_ADMIN and CAP_NET_RAW \(the ipset backend/);

    const r = await asUser(ns, ['net_admin', 'net_raw'], ['sync', '--once', '--json', '--config', path]);
    expect(r.exitCode, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { plugin: string; applied: number };
    expect(out.plugin).toBe('ipset');
    expect(await ipsetSize(ns)).toBe(out.applied);
    expect(await ns.exec('iptables', ['-S', 'WCF-AGENT'])).toMatch(/-m set --match-set wcf-blocklist src -j DROP/);
  });
});

/**
 * Which backend needs CAP_NET_RAW, as the DaemonSet (NET_ADMIN only, with nftables) and
 * docs/deployment.md say: root in a namespace with the bounding set cut down (what a
 * container's `capabilities.add` leaves), `sync --once` with each backend, with and without
 * NET_RAW. iptables-legacy comes first on PATH for its case, as in the image's
 * /usr/lib/wcf-agent/iptables-legacy.
 */
describe('CAP_NET_RAW: which backend needs it', () => {
  let ns: Netns;
  let api: Api;
  let legacyBin: string;
  beforeAll(async () => {
    ns = await Netns.create();
    api = await simulatorIn(ns);
    legacyBin = mkdtempSync(join(tmpdir(), 'wcf-legacy-bin-'));
    dirs.push(legacyBin);
    for (const [tool, legacy] of [['iptables', 'iptables-legacy'], ['iptables-save', 'iptables-legacy-save'], ['iptables-restore', 'iptables-legacy-restore']]) symlinkSync(`/usr/sbin/${legacy}`, join(legacyBin, tool!));
  });

  async function asRoot(caps: string[], plugin: string, legacy = false) {
    const { path, dir } = layout(api, plugin, 0o600, 0);
    dirs.push(dir);
    chownSync(join(dir, 'state'), 0, 0);
    const r = await execa(
      'ip',
      ['netns', 'exec', ns.name, 'setpriv', `--bounding-set=-all,${caps.map((c) => `+${c}`).join(',')}`, process.execPath, CLI, 'sync', '--once', '--json', '--config', path],
      { reject: false, env: { WCF_LOG_LEVEL: 'warn', ...(legacy ? { PATH: `${legacyBin}:${process.env.PATH}` } : {}) }, extendEnv: true, timeout: 120_000 },
    );
    return { exitCode: r.exitCode ?? -1, stdout: String(r.stdout), stderr: String(r.stderr) };
  }

  it.each(['nftables', 'iptables'])('%s (iptables-nft for iptables): NET_ADMIN alone applies the set', async (plugin) => {
    const r = await asRoot(['net_admin'], plugin);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ plugin, applied: expect.any(Number) });
    expect((JSON.parse(r.stdout) as { applied: number }).applied).toBeGreaterThan(0);
    await runFlush(plugin);
  });

  it('ipset: refused without NET_RAW (the set match), applied with it', async () => {
    const without = await asRoot(['net_admin'], 'ipset');
    expect(without.exitCode).toBe(4);
    // Said before anything is tried (the ipset backend's set match needs a raw socket).
    expect(without.stderr).toMatch(/needs root or CAP_NET_ADMIN and CAP_NET_RAW \(the ipset backend/);
    const r = await asRoot(['net_admin', 'net_raw'], 'ipset');
    expect(r.exitCode, r.stderr).toBe(0);
    await runFlush('ipset');
  });

  it('iptables-legacy: refused without NET_RAW (its raw socket to the kernel), applied with it', async () => {
    const without = await asRoot(['net_admin'], 'iptables', true);
    expect(without.exitCode).toBe(4);
    expect(without.stderr).toMatch(/legacy.*Permission denied|Permission denied.*legacy/s);
    const r = await asRoot(['net_admin', 'net_raw'], 'iptables', true);
    expect(r.exitCode, r.stderr).toBe(0);
    expect(await ns.exec('iptables-legacy', ['-S', 'WCF-AGENT'])).toMatch(/-j DROP/);
    expect(await ns.exec('iptables-nft', ['-S'])).not.toMatch(/WCF-AGENT/);
  });

  /** The namespace clean for the next backend (flush with every capability, as root). */
  async function runFlush(plugin: string) {
    const { path, dir } = layout(api, plugin, 0o600, 0);
    dirs.push(dir);
    await execa('ip', ['netns', 'exec', ns.name, 'iptables-nft', '-F'], { reject: false });
    await execa('ip', ['netns', 'exec', ns.name, process.execPath, CLI, 'flush', '--config', path], { reject: false });
    await execa('ip', ['netns', 'exec', ns.name, 'nft', 'flush', 'ruleset'], { reject: false });
  }
});
