import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../simulator/index.js';
import { CLI, fastFailConfig } from '../../helpers/cli.js';
import { DaemonProcess } from '../../helpers/daemon.js';
import { NOBODY } from '../../helpers/unprivileged.js';

/**
 * A root agent takes its commands (unbound_control, rpz_reload), its API and its token from
 * config.json: a config, its directory, token_file or ca_file another user can change is a way
 * to root. Run as root, every command refuses it with the same lines: check-config, status,
 * sync, run at start and run's SIGHUP reload (which keeps the running configuration).
 * Root required (the checks are root's); every file lives in a temp dir of the test.
 */

const BASE = { agid: 'a1', base_url: 'http://127.0.0.1:9/api/v1', token: 't', state_dir: 'state', plugin: 'dry-run', retries: 0 };
const isRoot = process.getuid?.() === 0;
const dirs: string[] = [];

beforeAll(() => {
  if (!isRoot) throw new Error('the config permission tests need root: the agent refuses an untrusted config only when it runs as root');
});
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A root-owned temp dir (0700) holding a 0600 config.json with `extra`. */
function tempConfig(extra: Record<string, unknown> = {}): { dir: string; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'wcf-trust-'));
  dirs.push(dir);
  const path = join(dir, 'config.json');
  writeFileSync(path, JSON.stringify({ ...BASE, ...extra }), { mode: 0o600 });
  return { dir, path };
}

/** The CLI with a time limit: a `run` that is not refused would otherwise never end. */
async function cli(args: string[]) {
  const r = await execa(process.execPath, [CLI, ...args], { reject: false, timeout: 20_000, env: { WCF_LOG_LEVEL: 'info' } });
  return { exitCode: r.timedOut ? 'still running after 20 s' : r.exitCode, stdout: String(r.stdout), stderr: String(r.stderr) };
}

/** Every command refuses `path` with exit 2 and the same stderr, holding `line`. */
async function refusedEverywhere(path: string, line: string): Promise<void> {
  const outputs: string[] = [];
  for (const args of [['check-config'], ['status'], ['sync', '--once'], ['run']]) {
    const r = await cli([...args, '--config', path]);
    expect(r.exitCode, `${args.join(' ')}: ${r.stderr}`).toBe(2);
    expect(r.stderr, args.join(' ')).toContain(line);
    outputs.push(r.stderr);
  }
  expect(new Set(outputs).size, 'the same message from every command').toBe(1);
}

describe('as root, a config another user can change is refused by every command', () => {
  it('config.json writable by every user, or by its group', async () => {
    const { path } = tempConfig();
    chmodSync(path, 0o666);
    await refusedEverywhere(path, `config: ${path} is writable by every user (mode 0666)`);
    chmodSync(path, 0o620);
    await refusedEverywhere(path, `config: ${path} is writable by its group (mode 0620)`);
    chmodSync(path, 0o600);
    expect((await cli(['check-config', '--config', path])).exitCode).toBe(0);
  });

  it('config.json owned by another user, even unwritable by others', async () => {
    const { path } = tempConfig();
    chownSync(path, NOBODY, 0);
    await refusedEverywhere(path, `config: ${path} is owned by uid ${NOBODY}, not root`);
  });

  it('its directory writable by its group, or owned by another user', async () => {
    const { dir, path } = tempConfig();
    chmodSync(dir, 0o770);
    await refusedEverywhere(path, `config: ${dir} (its directory) is writable by its group (mode 0770)`);
    chmodSync(dir, 0o700);
    chownSync(dir, NOBODY, 0);
    await refusedEverywhere(path, `config: ${dir} (its directory) is owned by uid ${NOBODY}, not root`);
  });

  it('a config reached through a symlink in a directory every user can write', async () => {
    const { path } = tempConfig();
    const open = mkdtempSync(join(tmpdir(), 'wcf-trust-open-'));
    dirs.push(open);
    chmodSync(open, 0o777);
    const link = join(open, 'config.json');
    symlinkSync(path, link);
    await refusedEverywhere(link, `config: ${open} (its directory) is writable by every user (mode 0777)`);
  });

  it('token_file and ca_file writable by others or owned by another user', async () => {
    const { dir, path } = tempConfig({ token: undefined, token_file: 'token' });
    const token = join(dir, 'token');
    writeFileSync(token, 'secret\n', { mode: 0o600 });
    expect((await cli(['check-config', '--config', path])).exitCode).toBe(0);
    chmodSync(token, 0o666);
    await refusedEverywhere(path, `token_file: ${token} is writable by every user (mode 0666)`);
    chmodSync(token, 0o600);
    chownSync(token, NOBODY, 0);
    await refusedEverywhere(path, `token_file: ${token} is owned by uid ${NOBODY}, not root`);

    const ca = tempConfig({ ca_file: 'ca.pem' });
    writeFileSync(join(ca.dir, 'ca.pem'), 'not read before the check\n', { mode: 0o644 });
    chmodSync(join(ca.dir, 'ca.pem'), 0o646);
    await refusedEverywhere(ca.path, `ca_file: ${join(ca.dir, 'ca.pem')} is writable by every user (mode 0646)`);
  });
});

describe('SIGHUP with a config another user can now change', () => {
  let sim: Simulator;
  beforeAll(async () => {
    sim = await startSimulator({ indicators: 50, seed: 53 });
  });
  afterAll(async () => {
    await sim?.close();
  });

  it('the reload is refused with the same lines, the running configuration kept, the daemon still syncing', async () => {
    const cfg = fastFailConfig(sim);
    dirs.push(cfg.dir);
    const d = new DaemonProcess(cfg.path);
    try {
      await d.waitForLog(/^cycle done/);
      chmodSync(cfg.path, 0o666);
      const refusal = await cli(['check-config', '--config', cfg.path]);
      d.signal('SIGHUP');
      const line = await d.waitForLog(/^config reload refused, keeping the running configuration/);
      expect(line.msg).toContain(`config: ${cfg.path} is writable by every user (mode 0666)`);
      expect(refusal.stderr).toBe(`wcf-agent: WCF_ERR_CONFIG: ${line.msg.replace(/^config reload refused, keeping the running configuration: /, '')}`);
      expect(d.count(/^configuration reloaded/)).toBe(0);
      const cycles = d.count(/^cycle done/);
      await d.waitForLog(/^cycle done/, cycles + 1);
      expect(await d.stop()).toBe(0);
    } finally {
      await d.stop();
    }
  });
});

describe('a config on a read-only mount (a container bind mount, a Kubernetes ConfigMap)', () => {
  it('is accepted whatever its modes and owner say: nobody can change it through that mount', async () => {
    const { dir, path } = tempConfig();
    // What `docker run -v ./config.json:...:ro` by a user shows: that user's file, and a
    // ConfigMap's directory (mode 0777) mounted read-only.
    chownSync(path, NOBODY, NOBODY);
    chmodSync(path, 0o666);
    chmodSync(dir, 0o777);
    mkdirSync(join(dir, 'state'), { mode: 0o700 }); // status reads it (it cannot create it on a read-only mount)
    // A read-only bind mount in a private mount namespace of its own (gone with the process).
    const inNs = async (args: string[]) =>
      execa('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" "$0" && exec "$@"`, dir, process.execPath, CLI, ...args], {
        reject: false,
        timeout: 20_000,
      });
    for (const args of [['check-config'], ['status']]) {
      const r = await inNs([...args, '--config', path]);
      expect(r.exitCode, `${args.join(' ')}: ${String(r.stderr)}`).toBe(0);
    }
    // The same files, writable: refused.
    await refusedEverywhere(path, `config: ${path} is writable by every user (mode 0666)`);
  });
});

// The directory used by the symlink case must not be sticky to count: /tmp is, and stays accepted above a config.
describe('a sticky directory above the config (as /tmp is) is not a problem', () => {
  it('a config in a root-owned 0700 dir inside a sticky world-writable dir is accepted', async () => {
    const sticky = mkdtempSync(join(tmpdir(), 'wcf-trust-sticky-'));
    dirs.push(sticky);
    chmodSync(sticky, 0o1777);
    const inner = join(sticky, 'etc');
    mkdirSync(inner, { mode: 0o700 });
    writeFileSync(join(inner, 'config.json'), JSON.stringify(BASE), { mode: 0o600 });
    const r = await cli(['check-config', '--config', join(inner, 'config.json')]);
    expect(r.exitCode, r.stderr).toBe(0);
  });
});
